//! Helpers shared by the C API's tests (driven from Rust): the last error
//! message, status assertions (`ok!`, `fails!`), and the usual handles.
#![allow(dead_code, unused_macros, unused_imports)]

use guardlift::*;
use std::ffi::{c_int, CStr, CString};
use std::ptr::null_mut;

/// `gl_last_error()` as a string.
pub fn last_error() -> String {
    // SAFETY: gl_last_error always returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(gl_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Runs a C API call and asserts it returned `GL_OK`.
macro_rules! ok {
    ($e:expr) => {{
        #[allow(unused_unsafe)]
        // SAFETY: the tests pass the C API live handles (or ones it must
        // reject), NULL, or pointers to live locals of the right types.
        let st = unsafe { $e };
        assert_eq!(
            st,
            GL_OK,
            "{} failed: {}",
            stringify!($e),
            $crate::common::last_error()
        );
    }};
}
pub(crate) use ok;

/// Runs a C API call, asserts it returned `$code` with a message, and
/// gives the message.
macro_rules! fails {
    ($code:expr, $e:expr) => {{
        #[allow(unused_unsafe)]
        // SAFETY: the tests pass the C API live handles (or ones it must
        // reject), NULL, or pointers to live locals of the right types.
        let st = unsafe { $e };
        assert_eq!(
            st,
            $code,
            "{}: {}",
            stringify!($e),
            $crate::common::last_error()
        );
        assert!(
            !$crate::common::last_error().is_empty(),
            "an error leaves a message"
        );
        $crate::common::last_error()
    }};
}
pub(crate) use fails;

/// Asserts that every status is `GL_OK` (frees at the end of a test).
pub fn all_ok(statuses: impl IntoIterator<Item = c_int>) {
    for st in statuses {
        assert_eq!(st, GL_OK, "{}", last_error());
    }
}

pub fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in a test string")
}

/// `text` parsed as `test.glir`.
pub fn parse(text: &str) -> *mut gl_module {
    let mut m = null_mut();
    let t = c(text);
    ok!(gl_module_parse(t.as_ptr(), c"test.glir".as_ptr(), &mut m));
    m
}

/// A runtime with `layout` in `mode`.
pub fn runtime(layout: &str, mode: u32) -> *mut gl_runtime {
    let mut rt = null_mut();
    let l = c(layout);
    ok!(gl_runtime_new(l.as_ptr(), mode, &mut rt));
    rt
}

pub fn compile(rt: *mut gl_runtime, m: *mut gl_module) -> *mut gl_code {
    let mut code = null_mut();
    ok!(gl_compile(rt, m, &mut code));
    code
}

/// Function `name` of `code` with the signature `params -> ret`.
pub fn func(code: *mut gl_code, name: &str, params: &[u32], ret: u32) -> *mut gl_func {
    let mut f = null_mut();
    let n = c(name);
    ok!(gl_code_get_func(
        code,
        n.as_ptr(),
        params.as_ptr(),
        params.len(),
        ret,
        &mut f
    ));
    f
}
