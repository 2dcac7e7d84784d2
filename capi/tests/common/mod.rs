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

/// Cargo's runner variable for the target these tests were built for.
const TARGET_RUNNER_VAR: &str = if cfg!(target_arch = "aarch64") {
    "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER"
} else {
    "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"
};

/// A command that runs `program`, an executable built for the same target
/// as this test binary (the test binary itself, `guardlift`, an example),
/// the way cargo ran this test binary: through cargo's runner for the
/// target when one is set (`scripts/qemu-aarch64-runner` when the aarch64
/// tests run under qemu-user, which cannot execve an aarch64 binary by
/// itself: docs/TARGETS.md), directly otherwise.
pub fn target_command(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let runner = std::env::var(TARGET_RUNNER_VAR).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(first) => {
            let mut c = std::process::Command::new(first);
            c.args(words).arg(program);
            c
        }
        None => std::process::Command::new(program),
    }
}

/// The target directory and, for a cross build (`--target TRIPLE`: this
/// test binary is in target/TRIPLE/<profile>/deps), the triple, of the
/// profile directory `dir` (target/<profile> or target/TRIPLE/<profile>):
/// what a `cargo build` from a test needs to reuse this build.
pub fn target_dir_of(dir: &std::path::Path) -> (std::path::PathBuf, Option<String>) {
    let parent = dir.parent().expect("target dir");
    let name = parent.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with(std::env::consts::ARCH) && name.contains("-linux") {
        let top = parent.parent().expect("target dir");
        (top.to_path_buf(), Some(name.to_string()))
    } else {
        (parent.to_path_buf(), None)
    }
}
