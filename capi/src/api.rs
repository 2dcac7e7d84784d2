//! The `extern "C"` entry points. Every one runs inside [`ffi`]: no panic
//! crosses into C, the status is returned, and the message is left for
//! `gl_last_error`. Out pointers are set to NULL/0 first, so a failed call
//! never leaves garbage behind.
//!
//! tidy: long because every C entry point is here; a file per handle kind (issue 31) is the next clean-up.

use crate::error::*;
use crate::handles::{self, Kind, Object};
use crate::state::*;
use guardlift_instrument::CheckSet;
use guardlift_ir::Type;
use guardlift_jit::{CompileOptions, Jit, JitError};
use guardlift_runtime::internals::*;
use guardlift_runtime::layout::DictLayout;
use guardlift_runtime::{HostCaller, Mode, Options, Report, Runtime, RuntimeConfig};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

/// Opaque handle types (never dereferenced: the value encodes a table entry).
macro_rules! opaque {
    ($($name:ident),*) => {$(
        /// An opaque handle of the C API (see guardlift.h).
        #[repr(C)]
        #[allow(non_camel_case_types)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(gl_module, gl_runtime, gl_code, gl_func, gl_reports);

/// A host function as C passes it; cast to the extern's real signature by the
/// compiled code.
pub type GlHostFn = Option<unsafe extern "C" fn()>;
/// A report callback.
pub type GlReportFn =
    Option<unsafe extern "C" fn(report: *const gl_report, user_data: *mut c_void)>;

/// Mode: report, then end the process.
pub const GL_MODE_ABORT: u32 = 0;
/// Mode: record, apply the recover effect, go on.
pub const GL_MODE_RECOVER: u32 = 1;
/// Mode: the check is a trapping instruction.
pub const GL_MODE_TRAP: u32 = 2;

/// Check bit: the managed-dict word's tag.
pub const GL_CHECK_DICT: u32 = 1;
/// Check bit: adstack capacity and emptiness.
pub const GL_CHECK_ADSTACK: u32 = 2;
/// Check bit: raw stores over watched dict slots.
pub const GL_CHECK_CLOBBER: u32 = 4;
/// Check bit: attribute index against the values capacity.
pub const GL_CHECK_BOUNDS: u32 = 8;
/// Check bit: use after free, double and invalid free.
pub const GL_CHECK_LIFETIME: u32 = 16;
/// Every check bit.
pub const GL_CHECK_ALL: u32 = 31;

/// Bumped when the header's types or functions change incompatibly.
pub const GL_ABI_VERSION: u32 = 2;

fn h<T>(p: *mut T) -> u64 {
    p as usize as u64
}

fn ptr<T>(handle: u64) -> *mut T {
    handle as usize as *mut T
}

/// The object behind a handle argument, or why there is none.
fn get(p: u64, kind: Kind, func: &str, arg: &str) -> Result<Object> {
    if p == 0 {
        return Err(Error::new(
            GL_ERR_NULL,
            format!("{func}: `{arg}` must not be NULL"),
        ));
    }
    handles::get(p, kind).map_err(|e| Error::new(e.code, format!("{func}: `{arg}`: {}", e.msg)))
}

macro_rules! get_as {
    ($variant:ident, $p:expr, $kind:expr, $func:expr, $arg:expr) => {
        match get(h($p), $kind, $func, $arg)? {
            Object::$variant(x) => x,
            _ => unreachable!("the table checked the handle's kind"),
        }
    };
}

/// Frees a handle of `kind` (NULL is a no-op, as for `free`).
fn free_handle(p: u64, kind: Kind, func: &str) -> c_int {
    ffi(|| {
        if p == 0 {
            return Ok(());
        }
        let obj = handles::remove(p, kind)
            .map_err(|e| Error::new(e.code, format!("{func}: {}", e.msg)))?;
        if let Object::Runtime(rt) = &obj {
            // After gl_runtime_free returns, the callback is never called again
            // (code compiled against the runtime may live on and keep running).
            rt.rt.set_report_handler(None);
        }
        drop(obj);
        Ok(())
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn jit_error(e: JitError, file: &Option<String>) -> Error {
    let code = match &e {
        JitError::Verify(_) => GL_ERR_VERIFY,
        JitError::Link { .. } => GL_ERR_LINK,
        JitError::NoSuchFunction(_) => GL_ERR_NO_FUNCTION,
        JitError::Signature { .. } => GL_ERR_SIGNATURE,
        _ => GL_ERR_CODEGEN,
    };
    Error::new(code, e.present(file.as_deref()))
}

fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => body.parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// `cpython312`, `phoenix`, or `dict_slot_offset = N` (as after `layout` in IR).
fn parse_layout(s: &str, func: &str) -> Result<DictLayout> {
    let t = s.trim();
    let bad = |m: String| Error::new(GL_ERR_ARGUMENT, format!("{func}: {m}"));
    if let Some(rest) = t.strip_prefix("dict_slot_offset") {
        let n = rest
            .trim_start()
            .strip_prefix('=')
            .map(str::trim)
            .and_then(parse_int)
            .ok_or_else(|| bad(format!("bad layout `{t}` (expected dict_slot_offset = N)")))?;
        DictLayout::custom(n).map_err(|e| bad(e.to_string()))
    } else {
        DictLayout::preset(t).map_err(|e| bad(e.to_string()))
    }
}

fn mode_of(m: u32) -> Option<Mode> {
    Some(match m {
        GL_MODE_ABORT => Mode::Abort,
        GL_MODE_RECOVER => Mode::Recover,
        GL_MODE_TRAP => Mode::Trap,
        _ => return None,
    })
}

fn signature_text(params: &[Type], ret: Option<Type>) -> String {
    let p: Vec<String> = params.iter().map(|t| t.to_string()).collect();
    match ret {
        Some(r) => format!("({}) -> {r}", p.join(", ")),
        None => format!("({})", p.join(", ")),
    }
}

// ---- misc ------------------------------------------------------------------------

/// The message of the last call on this thread ("" if it succeeded).
#[no_mangle]
pub extern "C" fn gl_last_error() -> *const c_char {
    last_error_ptr()
}

/// The name of a status code.
#[no_mangle]
pub extern "C" fn gl_status_name(status: c_int) -> *const c_char {
    status_name(status).as_ptr()
}

/// [`GL_ABI_VERSION`] of the library.
#[no_mangle]
pub extern "C" fn gl_abi_version() -> u32 {
    GL_ABI_VERSION
}

/// `sizeof(gl_report)` as the library sees it (the header's must match).
#[no_mangle]
pub extern "C" fn gl_report_struct_size() -> usize {
    std::mem::size_of::<gl_report>()
}

// ---- modules -----------------------------------------------------------------------

/// Parses and verifies IR text into a new module.
///
/// # Safety
/// `text` and `filename` (nullable) are NUL-terminated; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_module_parse(
    text: *const c_char,
    filename: *const c_char,
    out: *mut *mut gl_module,
) -> c_int {
    const F: &str = "gl_module_parse";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: NUL-terminated by contract.
        let text = unsafe { str_arg(text, F, "text") }?;
        let file = if filename.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated by contract.
            Some(unsafe { str_arg(filename, F, "filename") }?.to_string())
        };
        let module = guardlift_ir::parse_module(text)
            .map_err(|d| Error::new(GL_ERR_PARSE, d.render(file.as_deref())))?;
        guardlift_ir::verify_module(&module)
            .map_err(|v| Error::new(GL_ERR_VERIFY, v.render(file.as_deref())))?;
        let handle = handles::insert(Object::Module(Arc::new(Mutex::new(ModuleState {
            module,
            file,
        }))))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// Runs the instrumentation pass on the module, in place.
///
/// # Safety
/// `m` is a handle value (checked).
#[no_mangle]
pub unsafe extern "C" fn gl_module_instrument(m: *mut gl_module, checks: u32) -> c_int {
    const F: &str = "gl_module_instrument";
    ffi(|| {
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        if checks & !GL_CHECK_ALL != 0 {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: unknown check bits {:#x} (expected GL_CHECK_DICT | GL_CHECK_ADSTACK | GL_CHECK_CLOBBER | GL_CHECK_BOUNDS | GL_CHECK_LIFETIME)", checks & !GL_CHECK_ALL),
            ));
        }
        let set = CheckSet {
            dict: checks & GL_CHECK_DICT != 0,
            adstack: checks & GL_CHECK_ADSTACK != 0,
            clobber: checks & GL_CHECK_CLOBBER != 0,
            bounds: checks & GL_CHECK_BOUNDS != 0,
            lifetime: checks & GL_CHECK_LIFETIME != 0,
        };
        let mut st = lock(&ms);
        st.module = guardlift_instrument::instrument(&st.module, set);
        Ok(())
    })
}

/// Overrides the module's `layout` line.
///
/// # Safety
/// `layout` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gl_module_set_layout(m: *mut gl_module, layout: *const c_char) -> c_int {
    const F: &str = "gl_module_set_layout";
    ffi(|| {
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        // SAFETY: NUL-terminated by contract.
        let l = parse_layout(unsafe { str_arg(layout, F, "layout") }?, F)?;
        let mut st = lock(&ms);
        st.module.layout = l;
        guardlift_ir::verify_module(&st.module)
            .map_err(|v| Error::new(GL_ERR_VERIFY, v.render(st.file.as_deref())))?;
        Ok(())
    })
}

/// The module's dict slot offset (−24 for cpython312).
///
/// # Safety
/// `out_offset` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_module_get_layout(m: *mut gl_module, out_offset: *mut i32) -> c_int {
    const F: &str = "gl_module_get_layout";
    ffi(|| {
        // SAFETY: `out_offset` is NULL or valid for a write by contract.
        unsafe { clear_out(out_offset, 0, F, "out_offset") }?;
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        let off = lock(&ms).module.layout.dict_slot_offset();
        // SAFETY: checked non-null.
        unsafe { put(out_offset, off) };
        Ok(())
    })
}

/// The module's canonical text (instrumented IR shows its guards).
///
/// # Safety
/// `out_text` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_module_print(m: *mut gl_module, out_text: *mut *const c_char) -> c_int {
    const F: &str = "gl_module_print";
    ffi(|| {
        // SAFETY: `out_text` is NULL or valid for a write by contract.
        unsafe { clear_out(out_text, std::ptr::null(), F, "out_text") }?;
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        let text = guardlift_ir::print_module(&lock(&ms).module);
        // SAFETY: checked non-null.
        unsafe { put(out_text, thread_text(&text)) };
        Ok(())
    })
}

/// Frees a module (NULL: no-op).
#[no_mangle]
pub extern "C" fn gl_module_free(m: *mut gl_module) -> c_int {
    free_handle(h(m), Kind::Module, "gl_module_free")
}

// ---- runtimes ---------------------------------------------------------------------

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

// ---- reports ----------------------------------------------------------------------

/// The items of a report list.
///
/// # Safety
/// `out_items` and `out_count` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_reports_get(
    list: *mut gl_reports,
    out_items: *mut *const gl_report,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_reports_get";
    ffi(|| {
        non_null(out_items, F, "out_items")?;
        non_null(out_count, F, "out_count")?;
        // SAFETY: checked non-null.
        unsafe {
            put(out_items, std::ptr::null());
            put(out_count, 0);
        }
        let l = get_as!(Reports, list, Kind::Reports, F, "list");
        // SAFETY: checked non-null; the array lives as long as the list handle.
        unsafe {
            put(out_items, l.items.as_ptr());
            put(out_count, l.items.len());
        }
        Ok(())
    })
}

/// Object `index` of a report's `objects` (spec §6): its allocation id and
/// how many of the report's occurrences were about it.
///
/// # Safety
/// `report` is NULL or a report from a live list or callback;
/// `out_id` and `out_count` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_report_get_object(
    report: *const gl_report,
    index: usize,
    out_id: *mut u64,
    out_count: *mut u64,
) -> c_int {
    const F: &str = "gl_report_get_object";
    ffi(|| {
        non_null(report, F, "report")?;
        non_null(out_id, F, "out_id")?;
        non_null(out_count, F, "out_count")?;
        // SAFETY: checked non-null; the caller vouches that it is a live report.
        let r = unsafe { &*report };
        if index as u64 >= r.object_count || r.objects.is_null() {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!(
                    "{F}: index {index} out of range (the report lists {} object(s))",
                    r.object_count
                ),
            ));
        }
        // SAFETY: `objects` holds `object_count` entries owned with the report.
        let o = unsafe { *r.objects.add(index) };
        // SAFETY: checked non-null.
        unsafe {
            put(out_id, o.object_id);
            put(out_count, o.count);
        }
        Ok(())
    })
}

/// `gl_report_get_object_stack`'s `which`: the allocation stack.
pub const GL_STACK_ALLOC: u32 = 0;
/// `gl_report_get_object_stack`'s `which`: the free stack.
pub const GL_STACK_FREE: u32 = 1;

/// The host's native stack recorded when the report's object was
/// registered (`GL_STACK_ALLOC`) or reported freed (`GL_STACK_FREE`):
/// `*out_count` frames, and frame `index` (innermost first) in `*out_frame`
/// (NULL when `index >= *out_count`), as the report's text prints it. The
/// string lives as long as the report's strings.
///
/// # Safety
/// `report` is a live report guardlift gave (a callback's, or an item of a
/// list not yet freed); the out pointers are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_report_get_object_stack(
    report: *const gl_report,
    which: u32,
    index: usize,
    out_frame: *mut *const c_char,
    out_count: *mut usize,
) -> c_int {
    const F: &str = "gl_report_get_object_stack";
    ffi(|| {
        // SAFETY: NULL or valid for writes by contract.
        unsafe { clear_out(out_frame, std::ptr::null(), F, "out_frame") }?;
        // SAFETY: as above.
        unsafe { clear_out(out_count, 0, F, "out_count") }?;
        non_null(report, F, "report")?;
        if which != GL_STACK_ALLOC && which != GL_STACK_FREE {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: which must be GL_STACK_ALLOC (0) or GL_STACK_FREE (1), got {which}"),
            ));
        }
        // SAFETY: checked non-null; the caller vouches that it is a live report.
        let r = unsafe { &*report };
        let Some(st) = crate::state::stacks_of(r.json) else {
            return Ok(());
        };
        let frames = if which == GL_STACK_ALLOC {
            &st.alloc
        } else {
            &st.free
        };
        // The strings stay owned by the report's entry (`st` is a second
        // reference to them), which lives as long as the report.
        let frame = frames.get(index).map_or(std::ptr::null(), |f| f.as_ptr());
        // SAFETY: checked non-null.
        unsafe {
            put(out_count, frames.len());
            put(out_frame, frame);
        }
        Ok(())
    })
}

/// Frees a report list and every string its reports point to (NULL: no-op).
#[no_mangle]
pub extern "C" fn gl_reports_free(list: *mut gl_reports) -> c_int {
    free_handle(h(list), Kind::Reports, "gl_reports_free")
}

// ---- compiling and calling -------------------------------------------------------------

/// Compiles a module against a runtime.
///
/// # Safety
/// `out` is valid for a write. Compiled code runs with the full privileges of
/// native code (it dereferences whatever the IR computes).
#[no_mangle]
pub unsafe extern "C" fn gl_compile(
    rt: *mut gl_runtime,
    m: *mut gl_module,
    out: *mut *mut gl_code,
) -> c_int {
    const F: &str = "gl_compile";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        let st = get_as!(Runtime, rt, Kind::Runtime, F, "rt");
        let ms = get_as!(Module, m, Kind::Module, F, "module");
        let ms = lock(&ms);
        if ms.module.layout != st.rt.layout() {
            return Err(Error::new(
                GL_ERR_LAYOUT,
                format!(
                    "{F}: the module's layout ({}) is not the runtime's ({}): objects would be read at another slot offset than the host wrote them; fix the module's `layout` line or override it with gl_module_set_layout",
                    ms.module.layout,
                    st.rt.layout()
                ),
            ));
        }
        let opts = lock(&st.symbols)
            .iter()
            .fold(CompileOptions::default(), |o, (n, a)| {
                // SAFETY: gl_runtime_add_symbol's contract (guardlift.h): the
                // C caller registered a function of the extern's signature
                // that stays callable while code compiled with it lives;
                // what it touches is on that caller's word, as for any C
                // function it hands out.
                unsafe { o.symbol(n.clone(), *a as *const u8) }
            });
        let code =
            Jit::compile(&ms.module, st.rt.clone(), &opts).map_err(|e| jit_error(e, &ms.file))?;
        let handle = handles::insert(Object::Code(Arc::new(CodeState {
            code,
            file: ms.file.clone(),
        })))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// A function's signature as type codes.
///
/// # Safety
/// `name` is NUL-terminated; `params` is NULL (with `cap` 0) or valid for
/// `cap` writes; `out_nparams` and `out_ret` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn gl_code_signature(
    code: *mut gl_code,
    name: *const c_char,
    params: *mut u32,
    cap: usize,
    out_nparams: *mut usize,
    out_ret: *mut u32,
) -> c_int {
    const F: &str = "gl_code_signature";
    ffi(|| {
        non_null(out_nparams, F, "out_nparams")?;
        non_null(out_ret, F, "out_ret")?;
        if cap > 0 {
            non_null(params, F, "params")?;
        }
        // `cap` is only an upper bound of what is written (the function's
        // arity); it must still describe memory that can exist.
        if cap
            .checked_mul(std::mem::size_of::<u32>())
            .filter(|&b| b <= isize::MAX as usize)
            .and_then(|b| (params as usize).checked_add(b))
            .is_none()
        {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{F}: `params` with capacity {cap} does not fit in the address space"),
            ));
        }
        // SAFETY: checked non-null.
        unsafe {
            put(out_nparams, 0);
            put(out_ret, GL_TYPE_VOID);
        }
        let c = get_as!(Code, code, Kind::Code, F, "code");
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { str_arg(name, F, "name") }?;
        let (ps, ret) = c.code.signature(name).map_err(|e| jit_error(e, &None))?;
        for (i, t) in ps.iter().take(cap).enumerate() {
            // SAFETY: i < cap, and params is valid for cap writes.
            unsafe { params.add(i).write(code_of_type(Some(*t))) };
        }
        // SAFETY: checked non-null.
        unsafe {
            put(out_nparams, ps.len());
            put(out_ret, code_of_type(ret));
        }
        Ok(())
    })
}

/// Looks a function up by name, checking the caller's idea of its signature.
///
/// # Safety
/// `name` is NUL-terminated; `params` is valid for `nparams` reads (NULL if
/// 0); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_code_get_func(
    code: *mut gl_code,
    name: *const c_char,
    params: *const u32,
    nparams: usize,
    ret: u32,
    out: *mut *mut gl_func,
) -> c_int {
    const F: &str = "gl_code_get_func";
    ffi(|| {
        // SAFETY: `out` is NULL or valid for a write by contract.
        unsafe { clear_out(out, std::ptr::null_mut(), F, "out") }?;
        let c = get_as!(Code, code, Kind::Code, F, "code");
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { str_arg(name, F, "name") }?;
        let name = name.strip_prefix('@').unwrap_or(name);
        // The function's real arity bounds what is read from `params`.
        let (ps, r) = c.code.signature(name).map_err(|e| jit_error(e, &c.file))?;
        if nparams != ps.len() {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: signature mismatch for @{name}: the function is {}, the caller asked for {nparams} parameter(s)",
                    signature_text(&ps, r),
                ),
            ));
        }
        // SAFETY: checked by array_arg; valid for nparams reads by contract.
        let codes = unsafe { array_arg(params, nparams, Some(ps.len()), F, "params") }?;
        let mut want_p = Vec::with_capacity(codes.len());
        for (i, &t) in codes.iter().enumerate() {
            want_p.push(type_of_code(t).ok_or_else(|| {
                Error::new(
                    GL_ERR_ARGUMENT,
                    format!("{F}: params[{i}] = {t} is not a GL_TYPE_* value type"),
                )
            })?);
        }
        let want_r = match ret {
            GL_TYPE_VOID => None,
            t => Some(type_of_code(t).ok_or_else(|| {
                Error::new(
                    GL_ERR_ARGUMENT,
                    format!("{F}: ret = {t} is not a GL_TYPE_* code"),
                )
            })?),
        };
        if ps != want_p || r != want_r {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: signature mismatch for @{name}: the function is {}, the caller asked for {}",
                    signature_text(&ps, r),
                    signature_text(&want_p, want_r)
                ),
            ));
        }
        let handle = handles::insert(Object::Func(Arc::new(FuncState {
            code: c.code.clone(),
            name: name.to_string(),
            params: ps,
            ret: r,
        })))?;
        // SAFETY: checked non-null.
        unsafe { put(out, ptr(handle)) };
        Ok(())
    })
}

/// Frees compiled code (NULL: no-op). Functions looked up from it keep it alive.
#[no_mangle]
pub extern "C" fn gl_code_free(code: *mut gl_code) -> c_int {
    free_handle(h(code), Kind::Code, "gl_code_free")
}

/// A wrong argument count says which function and how many it takes.
fn arity_error(f: &FuncState, nargs: usize, e: Error, func: &str) -> Error {
    if nargs == f.params.len() {
        return e;
    }
    Error::new(
        GL_ERR_ARGUMENT,
        format!(
            "{func}: @{} takes {} argument(s), got {nargs}",
            f.name,
            f.params.len()
        ),
    )
}

fn call_bits(f: &FuncState, args: &[u64], func: &str) -> Result<Option<u64>> {
    if args.len() != f.params.len() {
        return Err(Error::new(
            GL_ERR_ARGUMENT,
            format!(
                "{func}: @{} takes {} argument(s), got {}",
                f.name,
                f.params.len(),
                args.len()
            ),
        ));
    }
    // SAFETY: the C API is the boundary where Rust's checks end: compiled
    // code "runs with the full privileges of native code" (guardlift.h,
    // gl_compile) and the C caller of gl_func_call vouches for the memory it
    // touches (objects passed as `ptr`, raw accesses, host symbols), as for
    // any C function it calls.
    unsafe { f.code.call_dynamic(&f.name, args) }.map_err(|e| jit_error(e, &None))
}

/// Calls a function with raw argument bits.
///
/// # Safety
/// `args` is valid for `nargs` reads (NULL if 0); `out_result` is NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_func_call(
    f: *mut gl_func,
    args: *const u64,
    nargs: usize,
    out_result: *mut u64,
) -> c_int {
    const F: &str = "gl_func_call";
    ffi(|| {
        aligned_or_null(out_result, F, "out_result")?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, 0) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        // SAFETY: checked by array_arg; valid for nargs reads by contract.
        let a = unsafe { array_arg(args, nargs, Some(fs.params.len()), F, "args") }
            .map_err(|e| arity_error(&fs, nargs, e, F))?;
        let r = call_bits(&fs, a, F)?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, r.unwrap_or(0)) };
        Ok(())
    })
}

/// The native address of a function.
///
/// # Safety
/// `out_addr` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gl_func_addr(f: *mut gl_func, out_addr: *mut *const c_void) -> c_int {
    const F: &str = "gl_func_addr";
    ffi(|| {
        non_null(out_addr, F, "out_addr")?;
        // SAFETY: checked non-null; valid for a write by contract.
        unsafe { put(out_addr, std::ptr::null()) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        let nf = fs
            .code
            .native_func(&fs.name)
            .map_err(|e| jit_error(e, &None))?;
        // SAFETY: checked non-null; valid for a write by contract.
        unsafe { put(out_addr, nf.addr().cast()) };
        Ok(())
    })
}

/// Calls a function whose params and result are all `i64`/`ptr` (or no result).
///
/// # Safety
/// As [`gl_func_call`].
#[no_mangle]
pub unsafe extern "C" fn gl_func_call_i64(
    f: *mut gl_func,
    args: *const i64,
    nargs: usize,
    out_result: *mut i64,
) -> c_int {
    const F: &str = "gl_func_call_i64";
    ffi(|| {
        aligned_or_null(out_result, F, "out_result")?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, 0) };
        let fs = get_as!(Func, f, Kind::Func, F, "func");
        if !fs.params.iter().all(|t| t.is_word()) || !fs.ret.is_none_or(|t| t.is_word()) {
            return Err(Error::new(
                GL_ERR_SIGNATURE,
                format!(
                    "{F}: @{} is {}; gl_func_call_i64 needs i64/ptr params and an i64/ptr result or none (use gl_func_call)",
                    fs.name,
                    signature_text(&fs.params, fs.ret)
                ),
            ));
        }
        // SAFETY: checked by array_arg (the count first: nothing is copied
        // for a wrong one); valid for nargs reads by contract.
        let a: Vec<u64> = unsafe { array_arg(args, nargs, Some(fs.params.len()), F, "args") }
            .map_err(|e| arity_error(&fs, nargs, e, F))?
            .iter()
            .map(|&x| x as u64)
            .collect();
        let r = call_bits(&fs, &a, F)?;
        // SAFETY: NULL or valid.
        unsafe { put(out_result, r.unwrap_or(0) as i64) };
        Ok(())
    })
}

/// Frees a function handle (NULL: no-op).
#[no_mangle]
pub extern "C" fn gl_func_free(f: *mut gl_func) -> c_int {
    free_handle(h(f), Kind::Func, "gl_func_free")
}
