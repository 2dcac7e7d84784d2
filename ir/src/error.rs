//! Errors with a source position: parse and verify errors.

use crate::inst::SrcLoc;
use std::fmt;

/// One error at a source position; printed as `LINE:COL: error: MSG`, and as
/// `FILE:LINE:COL: error: MSG` through [`Diagnostic::with_file`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostic {
    pub loc: SrcLoc,
    pub msg: String,
}

impl Diagnostic {
    pub fn new(loc: SrcLoc, msg: impl Into<String>) -> Self {
        Diagnostic {
            loc,
            msg: msg.into(),
        }
    }
    /// `FILE:LINE:COL: error: MSG`.
    pub fn with_file(&self, file: &str) -> String {
        format!(
            "{file}:{}:{}: error: {}",
            self.loc.line, self.loc.col, self.msg
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: error: {}", self.loc.line, self.loc.col, self.msg)
    }
}

/// A text that did not parse.
pub type ParseError = Diagnostic;

/// All verifier errors for a module, in source order (never empty).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct VerifyErrors(pub Vec<Diagnostic>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl VerifyErrors {
    /// Every error as `FILE:LINE:COL: error: MSG`, one per line.
    pub fn with_file(&self, file: &str) -> String {
        self.0
            .iter()
            .map(|d| d.with_file(file))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
