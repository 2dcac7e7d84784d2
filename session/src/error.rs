//! The one error of a session: a failure before or outside the program's
//! own execution, already presented for the user.

/// A presented failure (`FILE:LINE:COL: error: ...` or `guardlift: error:
/// ...` lines): the command line prints it and exits with status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError(pub String);

impl RunError {
    /// A failure whose text is already presented.
    pub fn new(msg: impl Into<String>) -> Self {
        RunError(msg.into())
    }

    /// `guardlift: error: MSG`: a failure that belongs to no input file.
    pub fn tool(msg: impl std::fmt::Display) -> Self {
        Self::at("guardlift", msg)
    }

    /// `PLACE: error: MSG`: a failure at a file or at `FILE:LINE:COL`.
    pub fn at(place: impl std::fmt::Display, msg: impl std::fmt::Display) -> Self {
        RunError(format!("{place}: error: {msg}"))
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// A failure before or outside the program's own execution, with a source position.
pub(crate) enum ExecError {
    Diag(guardlift_ir::Diagnostic),
    Plain(String),
    Jit(guardlift_jit::JitError),
}

impl ExecError {
    pub(crate) fn with_file(&self, file: &str) -> String {
        match self {
            ExecError::Diag(d) => d.with_file(file),
            ExecError::Plain(s) => format!("{file}: error: {s}"),
            ExecError::Jit(e) => e.with_file(file),
        }
    }
}
