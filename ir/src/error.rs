//! Errors with a source position: parse and verify errors, and the
//! parser's internal errors (broken invariants, not errors in the text).
//!
//! `Display` is the error itself (`LINE:COL: MSG`); the presentation
//! `FILE:LINE:COL: error: MSG` of the command line and the C API is added
//! where an error is shown, by [`Diagnostic::render`] /
//! [`VerifyErrors::render`].

use crate::inst::SrcLoc;
use std::fmt;

/// One error at a source position: `LINE:COL: MSG` (`Display`), shown as
/// `FILE:LINE:COL: error: MSG` through [`Diagnostic::render`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostic {
    /// Where the error is (0:0 for a module built through the API).
    pub loc: SrcLoc,
    /// What is wrong, without position or `error:` prefix.
    pub msg: String,
}

/// Words (runs of non-whitespace) longer than this many characters are
/// shortened in messages, so a huge literal or name is never echoed whole.
pub const MAX_ECHO_CHARS: usize = 64;

/// `msg` with every word longer than [`MAX_ECHO_CHARS`] characters cut to
/// its first [`MAX_ECHO_CHARS`] followed by `…(N more characters)`.
pub fn shorten_long_words(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(1024));
    let mut word_chars = 0usize;
    let mut dropped = 0usize;
    let flush = |out: &mut String, dropped: &mut usize| {
        if *dropped > 0 {
            out.push_str(&format!("…({dropped} more characters)"));
            *dropped = 0;
        }
    };
    for ch in msg.chars() {
        if ch.is_whitespace() {
            flush(&mut out, &mut dropped);
            word_chars = 0;
            out.push(ch);
        } else if word_chars < MAX_ECHO_CHARS {
            word_chars += 1;
            out.push(ch);
        } else {
            dropped += 1;
        }
    }
    flush(&mut out, &mut dropped);
    out
}

impl Diagnostic {
    /// A diagnostic at `loc`; over-long words of `msg` are shortened
    /// ([`shorten_long_words`]).
    pub fn new(loc: SrcLoc, msg: impl Into<String>) -> Self {
        Diagnostic {
            loc,
            msg: shorten_long_words(&msg.into()),
        }
    }
    /// The error as shown to a user: `FILE:LINE:COL: error: MSG`, or
    /// `LINE:COL: error: MSG` without a file name.
    pub fn render(&self, file: Option<&str>) -> String {
        format!("{}: error: {}", position(file, self.loc), self.msg)
    }

    /// `FILE:LINE:COL: error: MSG` ([`Diagnostic::render`] with a file).
    pub fn with_file(&self, file: &str) -> String {
        self.render(Some(file))
    }
}

/// `FILE:LINE:COL`, or `LINE:COL` without a file name.
fn position(file: Option<&str>, loc: SrcLoc) -> String {
    match file {
        Some(file) => format!("{file}:{}:{}", loc.line, loc.col),
        None => format!("{}:{}", loc.line, loc.col),
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.loc.line, self.loc.col, self.msg)
    }
}

/// A text that did not parse: an error in the text ([`Diagnostic`]), or a
/// broken invariant of the parser itself (a bug in guardlift, whatever the
/// text says).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text is not valid IR.
    #[error(transparent)]
    Invalid(#[from] Diagnostic),
    /// The parser reached a state it should never reach, at `loc`.
    #[error("{}:{}: internal error: {what}", loc.line, loc.col)]
    Internal {
        /// Where the parser was.
        loc: SrcLoc,
        /// Which invariant broke.
        what: String,
    },
}

impl ParseError {
    /// An error in the text at `loc` ([`Diagnostic::new`]).
    pub fn new(loc: SrcLoc, msg: impl Into<String>) -> Self {
        ParseError::Invalid(Diagnostic::new(loc, msg))
    }

    /// The error in the text, or `None` for an internal error.
    pub fn diagnostic(&self) -> Option<&Diagnostic> {
        match self {
            ParseError::Invalid(d) => Some(d),
            ParseError::Internal { .. } => None,
        }
    }

    /// The error as shown to a user: [`Diagnostic::render`] for an error in
    /// the text; `FILE:LINE:COL: error: internal error: WHAT (a guardlift
    /// bug)`
    /// for a broken invariant.
    pub fn render(&self, file: Option<&str>) -> String {
        match self {
            ParseError::Invalid(d) => d.render(file),
            ParseError::Internal { loc, what } => format!(
                "{}: error: internal error: {what} (a guardlift bug)",
                position(file, *loc)
            ),
        }
    }

    /// The error with a file name ([`ParseError::render`]).
    pub fn with_file(&self, file: &str) -> String {
        self.render(Some(file))
    }
}

/// A text that did not parse, or a module that did not verify
/// ([`crate::parse_and_verify`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The text did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The module did not verify.
    #[error(transparent)]
    Verify(#[from] VerifyErrors),
}

impl SourceError {
    /// `FILE:LINE:COL: error: MSG` lines, as the CLI prints them.
    pub fn with_file(&self, file: &str) -> String {
        match self {
            SourceError::Parse(e) => e.with_file(file),
            SourceError::Verify(e) => e.with_file(file),
        }
    }
}

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
    /// Every error as shown to a user ([`Diagnostic::render`]), one per line.
    pub fn render(&self, file: Option<&str>) -> String {
        self.0
            .iter()
            .map(|d| d.render(file))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every error as `FILE:LINE:COL: error: MSG`, one per line.
    pub fn with_file(&self, file: &str) -> String {
        self.render(Some(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_cut_with_a_marker() {
        let long = "9".repeat(100_000);
        let d = Diagnostic::new(SrcLoc::new(3, 7), format!("invalid literal `{long}` here"));
        assert!(d.msg.len() < 200, "{}", d.msg);
        assert!(d.msg.contains("…(99938 more characters)"), "{}", d.msg);
        assert!(d.msg.ends_with(" here"));
        assert_eq!(shorten_long_words("short words stay"), "short words stay");
    }

    #[test]
    fn presentation_is_added_by_render_not_display() {
        let d = Diagnostic::new(SrcLoc::new(3, 7), "bad thing");
        assert_eq!(d.to_string(), "3:7: bad thing");
        assert_eq!(d.render(None), "3:7: error: bad thing");
        assert_eq!(d.with_file("a.glir"), "a.glir:3:7: error: bad thing");
        let v = VerifyErrors(vec![d.clone(), Diagnostic::new(SrcLoc::new(4, 1), "other")]);
        assert_eq!(v.to_string(), "3:7: bad thing\n4:1: other");
        assert_eq!(
            v.render(Some("f")),
            "f:3:7: error: bad thing\nf:4:1: error: other"
        );
    }

    #[test]
    fn parse_errors_render_as_diagnostics_and_internal_ones_say_so() {
        let e = ParseError::new(SrcLoc::new(3, 7), "bad thing");
        assert_eq!(e.with_file("a.glir"), "a.glir:3:7: error: bad thing");
        assert_eq!(e.to_string(), "3:7: bad thing");
        assert_eq!(e.diagnostic().map(|d| d.loc), Some(SrcLoc::new(3, 7)));
        let i = ParseError::Internal {
            loc: SrcLoc::new(2, 5),
            what: "no operand reader for Foo".into(),
        };
        assert_eq!(
            i.with_file("a.glir"),
            "a.glir:2:5: error: internal error: no operand reader for Foo (a guardlift bug)"
        );
        assert_eq!(
            i.to_string(),
            "2:5: internal error: no operand reader for Foo"
        );
        assert_eq!(i.diagnostic(), None);
    }
}
