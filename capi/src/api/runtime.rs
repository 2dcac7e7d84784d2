//! C entry points on runtimes (`gl_runtime_*`): make and configure one,
//! host symbols and slow paths, the report callback and queue, host faults,
//! host objects, free.

use super::*;

/// Creates a runtime with a layout and a mode.
///
/// # Safety
/// `layout` is NULL or NUL-terminated; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_new(
    layout: *const c_char,
    mode: u32,
    out: *mut *mut gl_runtime,
) -> c_int {
    const F: &str = "gl_runtime_new";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        let layout = if layout.is_null() {
            DictLayout::Cpython312
        } else {
            // SAFETY: NUL-terminated by contract.
            parse_layout(unsafe { str_arg(layout, F, "layout") }?, F)?
        };
        let mode = mode_of(mode).ok_or_else(|| {
            Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: unknown mode {mode} (expected GL_MODE_ABORT, GL_MODE_RECOVER or GL_MODE_TRAP)"),
            )
        })?;
        let rt = Runtime::new(RuntimeConfig {
            layout,
            mode,
            ..Default::default()
        });
        let handle = handles::insert(Object::Runtime(Arc::new(RtState {
            rt,
            symbols: Mutex::new(Vec::new()),
        })))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// Applies `GUARDLIFT_OPTIONS`-style settings (`log_path`, `json`, `report_limit`).
///
/// # Safety
/// `options` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_configure(
    rt: *mut gl_runtime,
    options: *const c_char,
) -> c_int {
    const F: &str = "gl_runtime_configure";
    ffi(|| {
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        // SAFETY: NUL-terminated by contract.
        let text = unsafe { str_arg(options, F, "options") }?;
        let o =
            Options::parse(text).map_err(|e| Error::new(GL_ERR_ARGUMENT, format!("{F}: {e}")))?;
        if let Some(m) = o.mode {
            if m != st.rt.mode() {
                return Err(Error::new(
                    GL_ERR_ARGUMENT,
                    format!(
                        "{F}: mode={} differs from the runtime's mode ({}); the mode is fixed by gl_runtime_new",
                        m.name(),
                        st.rt.mode().name()
                    ),
                ));
            }
        }
        st.rt
            .configure(&o)
            .map_err(|e| Error::new(GL_ERR_IO, format!("{F}: {e}")))
    })
}

/// Registers a host function for `extern fn @name(...)` declarations of
/// modules compiled afterwards against this runtime.
///
/// # Safety
/// `name` is NUL-terminated; `f` is a function with the C ABI and the
/// signature the IR declares.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_add_symbol(
    rt: *mut gl_runtime,
    name: *const c_char,
    f: GlHostFn,
) -> c_int {
    const F: &str = "gl_runtime_add_symbol";
    ffi(|| {
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { str_arg(name, F, "name") }?;
        let name = name.strip_prefix('@').unwrap_or(name);
        let Some(f) = f else {
            return Err(Error::new(
                GL_ERR_NULL,
                format!("{F}: `fn` must not be NULL"),
            ));
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !valid {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: `{name}` is not an IR function name"),
            ));
        }
        if guardlift_runtime::abi::builtin(name).is_some() {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!(
                    "{F}: @{name} is a built-in host function; built-ins are always bound to the runtime's model heap and cannot be replaced (declare your own extern under another name)"
                ),
            ));
        }
        let mut syms = lock(&st.symbols);
        syms.retain(|(n, _)| n != name);
        syms.push((name.to_string(), f as usize));
        Ok(())
    })
}

/// `gl_load_attr_slow_fn`: the host's `load_attr` slow path.
pub type GlLoadAttrSlowFn = unsafe extern "C" fn(*mut c_void, u64, u32) -> u64;
/// `gl_store_attr_slow_fn`: the host's `store_attr` slow path.
pub type GlStoreAttrSlowFn = unsafe extern "C" fn(*mut c_void, u64, u32, u64);

/// The C host's slow paths and their user data.
struct CSlowPaths {
    load: GlLoadAttrSlowFn,
    store: GlStoreAttrSlowFn,
    user: *mut c_void,
}
// SAFETY: the header requires both functions and the user data to be usable
// from any thread that runs code compiled against the runtime.
unsafe impl Send for CSlowPaths {}
// SAFETY: as for `Send`: several threads may call them at once.
unsafe impl Sync for CSlowPaths {}

impl guardlift_runtime::AttrSlowPaths for CSlowPaths {
    fn load_attr(&self, obj: u64, index: u32) -> i64 {
        // SAFETY: the C caller's contract for the binding.
        unsafe { (self.load)(self.user, obj, index) as i64 }
    }
    fn store_attr(&self, obj: u64, index: u32, value: i64) {
        // SAFETY: the C caller's contract for the binding.
        unsafe { (self.store)(self.user, obj, index, value as u64) }
    }
}

/// Binds the host's own `load_attr`/`store_attr` slow paths.
///
/// # Safety
/// `load` and `store` must be safe to call from any thread running code
/// compiled against `rt`, with `user_data`, until the runtime is freed.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_bind_attr_slow_paths(
    rt: *mut gl_runtime,
    load: Option<GlLoadAttrSlowFn>,
    store: Option<GlStoreAttrSlowFn>,
    user_data: *mut c_void,
) -> c_int {
    const F: &str = "gl_runtime_bind_attr_slow_paths";
    ffi(|| {
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let (Some(load), Some(store)) = (load, store) else {
            return Err(Error::new(
                GL_ERR_NULL,
                format!("{F}: `load` and `store` must both be functions"),
            ));
        };
        let paths = CSlowPaths {
            load,
            store,
            user: user_data,
        };
        (st.rt.bind_attr_slow_paths(Arc::new(paths)))
            .map_err(|e| Error::new(GL_ERR_ARGUMENT, format!("{F}: {e}")))
    })
}

struct CCallback {
    f: unsafe extern "C" fn(*const gl_report, *mut c_void),
    user: *mut c_void,
}
// SAFETY: the header documents that the callback and its user data may be
// used from any thread that runs compiled code; the C caller vouches for it.
unsafe impl Send for CCallback {}
// SAFETY: as for `Send`: the header allows calls from several threads at once.
unsafe impl Sync for CCallback {}

impl CCallback {
    fn call(&self, r: &Report) {
        let o = OwnedReport::new(r);
        // SAFETY: the C caller's contract for the callback.
        unsafe { (self.f)(&o.c, self.user) }
    }
}

/// Installs (or, with NULL, removes) the report callback.
///
/// # Safety
/// `cb` must be safe to call from any thread running code compiled against
/// `rt`, with `user_data`, until it is replaced or the runtime is freed.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_set_report_callback(
    rt: *mut gl_runtime,
    cb: GlReportFn,
    user_data: *mut c_void,
) -> c_int {
    const F: &str = "gl_runtime_set_report_callback";
    ffi(|| {
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let handler = cb.map(|f| {
            let cc = CCallback { f, user: user_data };
            Arc::new(move |r: &Report| {
                // Called from compiled code: nothing may unwind out of here.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cc.call(r)));
            }) as guardlift_runtime::ReportHandler
        });
        st.rt.set_report_handler(handler);
        Ok(())
    })
}

/// Takes the recorded reports into a new list.
///
/// # Safety
/// `out_list` is valid for a write; `out_items` and `out_count` are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_take_reports(
    rt: *mut gl_runtime,
    out_list: *mut *mut gl_reports,
    out_items: *mut *const gl_report,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_runtime_take_reports";
    ffi(|| {
        non_null(out_list, F, "out_list")?;
        aligned_or_null(out_items, F, "out_items")?;
        aligned_or_null(out_count, F, "out_count")?;
        // SAFETY: out_list checked non-null; the others NULL or valid.
        unsafe {
            put(out_list, std::ptr::null_mut());
            put(out_items, std::ptr::null());
            put(out_count, 0);
        }
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let list = Arc::new(ReportList::new(&st.rt.take_reports()));
        let (items, n) = (list.items.as_ptr(), list.items.len());
        let handle = handles::insert(Object::Reports(list))?;
        // SAFETY: as above.
        unsafe {
            put(out_list, ptr(handle));
            put(out_items, items);
            put(out_count, n);
        }
        Ok(())
    })
}

/// How many (site, kind) reports are recorded and not yet taken.
///
/// # Safety
/// `out_count` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_pending_reports(
    rt: *mut gl_runtime,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_runtime_pending_reports";
    ffi(|| {
        // SAFETY: `out_count` is NULL or valid for a write by contract.
        unsafe { clear_out(out_count, 0, F, "out_count") }?;
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        // SAFETY: checked non-null.
        unsafe { put(out_count, st.rt.peek_reports().len()) };
        Ok(())
    })
}

/// The first host fault of the model heap since the last call (taken), or NULL.
///
/// # Safety
/// `out_msg` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_take_host_fault(
    rt: *mut gl_runtime,
    out_msg: *mut *const c_char,
) -> c_int {
    const F: &str = "gl_runtime_take_host_fault";
    ffi(|| {
        // SAFETY: `out_msg` is NULL or valid for a write by contract.
        unsafe { clear_out(out_msg, std::ptr::null(), F, "out_msg") }?;
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        if let Some(fault) = st.rt.take_host_fault() {
            // SAFETY: checked non-null.
            unsafe { put(out_msg, thread_text(&fault.to_string())) };
        }
        Ok(())
    })
}

/// The host made an object at `obj`, laid out as the runtime's layout says
/// (spec §4: dict slot, values-tagged word, capacity word at values − 8):
/// it gets the next allocation id (`*out_id`), which reports about it carry.
///
/// # Safety
/// `out_id` is valid for a write. `obj` is only recorded, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_register_object(
    rt: *mut gl_runtime,
    obj: *const std::ffi::c_void,
    out_id: *mut u64,
) -> c_int {
    const F: &str = "gl_runtime_register_object";
    // The host's frames are the ones above this function's.
    let caller = HostCaller::here();
    ffi(|| {
        // SAFETY: `out_id` is NULL or valid for a write by contract.
        unsafe { clear_out(out_id, 0, F, "out_id") }?;
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let id = st
            .rt
            .register_object_from(obj as u64, caller)
            .map_err(|e| Error::new(GL_ERR_ARGUMENT, format!("{F}: {e}")))?;
        // SAFETY: checked non-null.
        unsafe { put(out_id, id) };
        Ok(())
    })
}

/// The host freed the object at `obj` (call it from the deallocator, before
/// the memory can be reused): guardlift stops watching its dict slot at
/// once, and instrumented code using it afterwards is a `use_after_free`
/// (lifetime check) until an object is registered at that address again.
/// An address that compiled code watched but that was never registered is
/// only taken off the watch list.
///
/// # Safety
/// `obj` is only looked up, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn gl_runtime_object_freed(
    rt: *mut gl_runtime,
    obj: *const std::ffi::c_void,
) -> c_int {
    const F: &str = "gl_runtime_object_freed";
    let caller = HostCaller::here();
    ffi(|| {
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        st.rt
            .object_freed_from(obj as u64, caller)
            .map_err(|e| Error::new(GL_ERR_ARGUMENT, format!("{F}: {e}")))
    })
}

/// Frees a runtime handle (NULL: no-op). Code compiled against it keeps the
/// runtime alive; the report callback is removed now.
#[no_mangle]
pub extern "C" fn gl_runtime_free(rt: *mut gl_runtime) -> c_int {
    free_handle(h(rt), Kind::Runtime, "gl_runtime_free")
}
