//! Errors of the Cranelift backend.
//!
//! `Display` is the message alone: no `error:` and no file name (a caller
//! presents it, e.g. [`JitError::with_file`] or the CLI). Errors from
//! Cranelift and the runtime stay reachable as [`std::error::Error::source`];
//! a broken invariant of guardlift's own is [`JitError::Internal`].

use cranelift_codegen::CodegenError;
use cranelift_module::ModuleError;
use guardlift_ir::{SrcLoc, VerifyErrors};
use std::error::Error;

/// Everything that can go wrong between a verified-or-not IR module and
/// callable code.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The module did not verify (the JIT verifies before lowering).
    #[error(transparent)]
    Verify(VerifyErrors),
    /// An extern nothing provides, or one whose signature does not match
    /// the built-in of that name; a symbol clash in an object file.
    #[error("{loc}: {msg}")]
    Link {
        /// Where the extern or function is declared.
        loc: SrcLoc,
        /// What is wrong with it.
        msg: String,
    },
    /// The lowering cannot express the code (known by its message only).
    #[error("code generation failed: {0}")]
    Codegen(String),
    /// Cranelift refused to compile a function (a backend bug or a limit).
    #[error("code generation failed: {context}")]
    Cranelift {
        /// What was being compiled (`@f`, a stub, an ISA).
        context: String,
        /// Cranelift's error (boxed: it is large).
        #[source]
        source: Box<CodegenError>,
    },
    /// cranelift-module (JIT or object) refused a declaration or definition.
    #[error("code generation failed: {context}")]
    Module {
        /// What was being declared or defined.
        context: String,
        /// cranelift-module's error (boxed: it is large).
        #[source]
        source: Box<ModuleError>,
    },
    /// The runtime could not install what the code needs (a signal handler).
    #[error("{context}")]
    Runtime {
        /// What was being installed.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An invariant of guardlift's own does not hold (a bug in guardlift).
    #[error("internal error: {0}")]
    Internal(String),
    /// No IR function of that name in the compiled module.
    #[error("no function named @{0}")]
    NoSuchFunction(String),
    /// The Rust-side signature (or dynamic argument count) does not match
    /// the IR function's.
    #[error(
        "signature mismatch for @{name}: the function is {expected}, the caller asked for {got}"
    )]
    Signature {
        /// The IR function.
        name: String,
        /// Its IR signature.
        expected: String,
        /// What the caller asked for.
        got: String,
    },
    /// A safe call ([`crate::CompiledModule::safe_func`]) of a function that
    /// is not provably memory-safe (see [`crate::safety`]).
    #[error("@{name} cannot be called safely: {reason}")]
    NotMemorySafe {
        /// The IR function.
        name: String,
        /// `LINE:COL: ...` of the first instruction that makes it unsafe.
        reason: String,
    },
    /// The requested target is not one this backend emits code for.
    #[error("unsupported target `{0}` (expected host, x86_64 or aarch64)")]
    Target(String),
    /// Writing the object file failed.
    #[error("object emission failed")]
    Object(#[source] Box<dyn Error + Send + Sync>),
}

impl JitError {
    /// A [`JitError::Module`] error about `context`.
    pub fn module(context: impl Into<String>, source: ModuleError) -> Self {
        JitError::Module {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// A [`JitError::Cranelift`] error about `context`.
    pub fn cranelift(context: impl Into<String>, source: CodegenError) -> Self {
        JitError::Cranelift {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// The source position of the error, if it has one.
    pub fn loc(&self) -> Option<SrcLoc> {
        match self {
            JitError::Link { loc, .. } => Some(*loc),
            JitError::Verify(v) => v.0.first().map(|d| d.loc),
            _ => None,
        }
    }

    /// `FILE:LINE:COL: error: ...` (one line per error), or `FILE: error: ...`
    /// with the chain of sources when the error has no position.
    pub fn with_file(&self, file: &str) -> String {
        self.present(Some(file))
    }

    /// As [`Self::with_file`], without the `FILE:` part when `file` is `None`.
    pub fn present(&self, file: Option<&str>) -> String {
        let at = file.map(|f| format!("{f}:")).unwrap_or_default();
        match self {
            JitError::Verify(v) => v.render(file),
            JitError::Link { loc, msg } => format!("{at}{loc}: error: {msg}"),
            other => match file {
                Some(f) => format!("{f}: error: {}", chain(other)),
                None => format!("error: {}", chain(other)),
            },
        }
    }
}

/// `e`'s message followed by those of its sources, `: `-separated; a
/// source whose text the message already shows is not repeated.
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

impl From<VerifyErrors> for JitError {
    fn from(v: VerifyErrors) -> Self {
        JitError::Verify(v)
    }
}
