//! Errors of the Cranelift backend.

use guardlift_ir::{SrcLoc, VerifyErrors};

/// Everything that can go wrong between a verified-or-not IR module and
/// callable code. `Display` is `LINE:COL: error: ...` where the error has a
/// source position, `error: ...` otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JitError {
    /// The module did not verify (the JIT verifies before lowering).
    #[error("{}", .0.render(None))]
    Verify(VerifyErrors),
    /// An extern nothing provides, or one whose signature does not match
    /// the built-in of that name; a symbol clash in an object file.
    #[error("{loc}: error: {msg}")]
    Link { loc: SrcLoc, msg: String },
    /// Cranelift refused the lowered code (a backend bug or a limit).
    #[error("error: code generation failed: {0}")]
    Codegen(String),
    /// No IR function of that name in the compiled module.
    #[error("error: no function named @{0}")]
    NoSuchFunction(String),
    /// The Rust-side signature (or dynamic argument count) does not match
    /// the IR function's.
    #[error("error: signature mismatch for @{name}: the function is {expected}, the caller asked for {got}")]
    Signature {
        name: String,
        expected: String,
        got: String,
    },
    /// The requested target is not one this backend emits code for.
    #[error("error: unsupported target `{0}` (expected host, x86_64, aarch64 or riscv64)")]
    Target(String),
    /// Writing the object file failed.
    #[error("error: object emission failed: {0}")]
    Object(String),
}

impl JitError {
    /// The source position of the error, if it has one.
    pub fn loc(&self) -> Option<SrcLoc> {
        match self {
            JitError::Link { loc, .. } => Some(*loc),
            JitError::Verify(v) => v.0.first().map(|d| d.loc),
            _ => None,
        }
    }

    /// `FILE:LINE:COL: error: ...` (one line per error), or `FILE: error: ...`
    /// when the error has no position.
    pub fn with_file(&self, file: &str) -> String {
        match self {
            JitError::Verify(v) => v.with_file(file),
            JitError::Link { loc, msg } => format!("{file}:{}:{}: error: {msg}", loc.line, loc.col),
            other => format!("{file}: {other}"),
        }
    }
}

impl From<VerifyErrors> for JitError {
    fn from(v: VerifyErrors) -> Self {
        JitError::Verify(v)
    }
}
