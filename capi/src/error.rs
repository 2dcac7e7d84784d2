//! Status codes, the thread-local last-error message, and the wrapper that
//! keeps every entry point from unwinding into C.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Success.
pub const GL_OK: c_int = 0;
/// A required pointer argument was NULL.
pub const GL_ERR_NULL: c_int = 1;
/// A handle that is not live: freed already (use after free, double free),
/// of another type, or never returned by guardlift.
pub const GL_ERR_HANDLE: c_int = 2;
/// An argument has a bad value (unknown type code, check bit, mode, layout,
/// options string; a string that is not UTF-8; a wrong argument count).
pub const GL_ERR_ARGUMENT: c_int = 3;
/// The IR text did not parse.
pub const GL_ERR_PARSE: c_int = 4;
/// The IR did not verify.
pub const GL_ERR_VERIFY: c_int = 5;
/// The module's layout is not the runtime's.
pub const GL_ERR_LAYOUT: c_int = 6;
/// An extern nothing provides, or a built-in declared with the wrong signature.
pub const GL_ERR_LINK: c_int = 7;
/// Code generation failed.
pub const GL_ERR_CODEGEN: c_int = 8;
/// No function of that name in the compiled code.
pub const GL_ERR_NO_FUNCTION: c_int = 9;
/// The caller's signature does not match the function's.
pub const GL_ERR_SIGNATURE: c_int = 10;
/// guardlift panicked internally (a bug); the call had no effect that can be relied on.
pub const GL_ERR_PANIC: c_int = 11;
/// Opening a log file or similar I/O failed.
pub const GL_ERR_IO: c_int = 12;

/// The name of a status code (`"GL_ERR_PARSE"`), for messages.
pub fn status_name(code: c_int) -> &'static CStr {
    match code {
        GL_OK => c"GL_OK",
        GL_ERR_NULL => c"GL_ERR_NULL",
        GL_ERR_HANDLE => c"GL_ERR_HANDLE",
        GL_ERR_ARGUMENT => c"GL_ERR_ARGUMENT",
        GL_ERR_PARSE => c"GL_ERR_PARSE",
        GL_ERR_VERIFY => c"GL_ERR_VERIFY",
        GL_ERR_LAYOUT => c"GL_ERR_LAYOUT",
        GL_ERR_LINK => c"GL_ERR_LINK",
        GL_ERR_CODEGEN => c"GL_ERR_CODEGEN",
        GL_ERR_NO_FUNCTION => c"GL_ERR_NO_FUNCTION",
        GL_ERR_SIGNATURE => c"GL_ERR_SIGNATURE",
        GL_ERR_PANIC => c"GL_ERR_PANIC",
        GL_ERR_IO => c"GL_ERR_IO",
        _ => c"GL_ERR_UNKNOWN",
    }
}

/// A failed call: its status code and message.
#[derive(Debug)]
pub(crate) struct Error {
    pub code: c_int,
    pub msg: String,
}

impl Error {
    pub fn new(code: c_int, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

thread_local! {
    /// The message of the last call on this thread ("" after a success).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Text handed out by calls that return a string (valid until the next call).
    static TEXT: RefCell<CString> = RefCell::new(CString::default());
}

/// A `CString` from arbitrary text: interior NULs become `\0` escapes.
pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

fn set_last_error(msg: &str) {
    let c = cstring(msg);
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            *e = c;
        }
    });
}

/// The last error message of this thread (see `gl_last_error`).
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|e| match e.try_borrow() {
            Ok(e) => e.as_ptr(),
            Err(_) => c"".as_ptr(),
        })
        .unwrap_or(c"".as_ptr())
}

/// Stores `s` in this thread's text buffer and returns a pointer to it.
pub(crate) fn thread_text(s: &str) -> *const c_char {
    let c = cstring(s);
    TEXT.try_with(|t| match t.try_borrow_mut() {
        Ok(mut t) => {
            *t = c;
            t.as_ptr()
        }
        Err(_) => c"".as_ptr(),
    })
    .unwrap_or(c"".as_ptr())
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// Runs one entry point: no panic escapes, the status is returned and the
/// message (or "" on success) is left for `gl_last_error`.
pub(crate) fn ffi(f: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error("");
            GL_OK
        }
        Ok(Err(e)) => {
            set_last_error(&e.msg);
            e.code
        }
        Err(p) => {
            let msg = format!(
                "guardlift panicked internally (please report this bug): {}",
                panic_message(&*p)
            );
            set_last_error(&msg);
            GL_ERR_PANIC
        }
    }
}

/// Checks that a required pointer argument is not NULL and is aligned for `T`.
pub(crate) fn non_null<T>(p: *const T, func: &str, arg: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::new(
            GL_ERR_NULL,
            format!("{func}: `{arg}` must not be NULL"),
        ))
    } else {
        aligned_or_null(p, func, arg)
    }
}

/// Checks that an optional pointer argument is NULL or aligned for `T`.
pub(crate) fn aligned_or_null<T>(p: *const T, func: &str, arg: &str) -> Result<()> {
    if !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(Error::new(
            GL_ERR_ARGUMENT,
            format!(
                "{func}: `{arg}` ({p:p}) is not aligned to {} bytes",
                std::mem::align_of::<T>()
            ),
        ));
    }
    Ok(())
}

/// Borrows a caller's array of `n` elements after checking, before anything
/// is read, allocated or copied: that `n` is the length the callee expects
/// (`expected`, when the callee knows it: a wrong count is an error even if
/// it is huge), that the pointer is non-NULL when `n > 0` and aligned, and
/// that the `n` elements fit in the address space.
///
/// # Safety
/// When every check passes, `p` is valid for `n` reads of `T` by the
/// caller's contract.
pub(crate) unsafe fn array_arg<'a, T>(
    p: *const T,
    n: usize,
    expected: Option<usize>,
    func: &str,
    arg: &str,
) -> Result<&'a [T]> {
    if let Some(want) = expected {
        if n != want {
            return Err(Error::new(
                GL_ERR_ARGUMENT,
                format!("{func}: expected {want} element(s) in `{arg}`, got {n}"),
            ));
        }
    }
    if n == 0 {
        return Ok(&[]);
    }
    non_null(p, func, arg)?;
    let fits = n
        .checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .and_then(|b| (p as usize).checked_add(b))
        .is_some();
    if !fits {
        return Err(Error::new(
            GL_ERR_ARGUMENT,
            format!("{func}: `{arg}` with {n} element(s) does not fit in the address space"),
        ));
    }
    // SAFETY: non-null, aligned, the length fits, and valid for `n` reads by
    // the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Reads a required NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, func: &str, arg: &str) -> Result<&'a str> {
    non_null(p, func, arg)?;
    // SAFETY: non-null, and NUL-terminated by the caller's contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| Error::new(GL_ERR_ARGUMENT, format!("{func}: `{arg}` is not UTF-8")))
}

/// Checks the out-parameter `out` (argument `arg` of `func`) as
/// [`non_null`] does, then stores `empty` in it, so that it holds no stale
/// value if the call fails.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn clear_out<T>(out: *mut T, empty: T, func: &str, arg: &str) -> Result<()> {
    non_null(out, func, arg)?;
    // SAFETY: checked non-null and aligned; valid for writes by the
    // caller's contract.
    unsafe { out.write(empty) };
    Ok(())
}

/// Writes `v` through an out pointer (checked non-NULL by the caller).
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, v: T) {
    if !out.is_null() {
        // SAFETY: valid for writes by the caller's contract.
        unsafe { out.write(v) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: the pointer is valid until the next call on this thread.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn panics_become_a_status_and_a_message() {
        assert_eq!(ffi(|| panic!("boom")), GL_ERR_PANIC);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(ffi(|| Ok(())), GL_OK);
        assert_eq!(last(), "");
        assert_eq!(
            ffi(|| Err(Error::new(GL_ERR_PARSE, "1:1: error: x\0y"))),
            GL_ERR_PARSE
        );
        assert_eq!(last(), "1:1: error: x\\0y");
    }

    #[test]
    fn arrays_are_checked_before_they_are_read() {
        let xs = [1u64, 2, 3];
        // SAFETY: each call either fails a check or reads `xs`.
        unsafe {
            let e = array_arg(xs.as_ptr(), usize::MAX, Some(3), "f", "args").unwrap_err();
            assert_eq!(e.code, GL_ERR_ARGUMENT);
            assert!(e.msg.contains("expected 3"), "{}", e.msg);
            let e = array_arg(std::ptr::null::<u64>(), 2, None, "f", "args").unwrap_err();
            assert_eq!(e.code, GL_ERR_NULL);
            let e = array_arg(xs.as_ptr(), usize::MAX, None, "f", "args").unwrap_err();
            assert!(e.msg.contains("address space"), "{}", e.msg);
            let odd = (xs.as_ptr() as *const u8).add(1) as *const u64;
            let e = array_arg(odd, 1, None, "f", "args").unwrap_err();
            assert!(e.msg.contains("aligned"), "{}", e.msg);
            assert_eq!(array_arg(xs.as_ptr(), 3, Some(3), "f", "a").unwrap(), &xs);
            assert!(array_arg(std::ptr::null::<u64>(), 0, Some(0), "f", "a")
                .unwrap()
                .is_empty());
        }
    }

    #[test]
    fn non_utf8_strings_are_argument_errors() {
        let bad = [0xffu8, 0xfe, 0];
        // SAFETY: NUL-terminated.
        let e = unsafe { str_arg(bad.as_ptr() as *const c_char, "f", "text") }.unwrap_err();
        assert_eq!(e.code, GL_ERR_ARGUMENT);
        // SAFETY: NULL is allowed.
        let e = unsafe { str_arg(std::ptr::null(), "f", "text") }.unwrap_err();
        assert_eq!(e.code, GL_ERR_NULL);
    }
}
