//! The `extern "C"` entry points. Every one runs inside [`ffi`]: no panic
//! crosses into C, the status is returned, and the message is left for
//! `gl_last_error`. Out pointers are set to NULL/0 first, so a failed call
//! never leaves garbage behind.
//!
//! A file per handle kind, as wasmtime's C API: [`module`], [`runtime`],
//! [`report`], [`code`] (code and functions); the shared helpers, handle
//! types and constants are here.

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

mod code;
mod module;
mod report;
mod runtime;

pub use code::*;
pub use module::*;
pub use report::*;
pub use runtime::*;
