//! C entry points on modules (`gl_module_*`): parse, instrument, layout,
//! print, free.

use super::*;

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
