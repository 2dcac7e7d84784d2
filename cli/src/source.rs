//! Loading IR text: bytes → UTF-8 → parse → verify, every failure as
//! `FILE:LINE:COL: error: ...`. Input is read in bounded chunks: a NUL byte
//! (not text: `/dev/zero`, a binary) fails at once, and so does input larger
//! than [`MAX_SOURCE_BYTES`] (`/dev/urandom`, a runaway pipe).

use guardlift_ir::{parse_module, Verified};
use std::io::Read;

/// The largest IR text any command reads.
pub const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// A user-facing failure that ends the command with exit status 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    /// A failure whose text is already presented (`FILE:LINE:COL: error: ...` lines).
    pub fn new(msg: impl Into<String>) -> Self {
        CliError(msg.into())
    }

    /// `guardlift: error: MSG`: a failure that belongs to no input file.
    pub fn tool(msg: impl std::fmt::Display) -> Self {
        Self::at("guardlift", msg)
    }

    /// `PLACE: error: MSG`: a failure at a file or at `FILE:LINE:COL`.
    pub fn at(place: impl std::fmt::Display, msg: impl std::fmt::Display) -> Self {
        CliError(format!("{place}: error: {msg}"))
    }
}

impl From<guardlift_session::RunError> for CliError {
    fn from(e: guardlift_session::RunError) -> Self {
        CliError(e.0)
    }
}

/// Line and column (1-based, in characters) of byte offset `off` in `bytes`.
fn line_col(bytes: &[u8], off: usize) -> (usize, usize) {
    let before = &bytes[..off.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
    (line, col)
}

/// Reads `path` in chunks, stopping at the first NUL byte or past
/// [`MAX_SOURCE_BYTES`] (never holding more than that in memory).
fn read_text(path: &str) -> Result<Vec<u8>, CliError> {
    let cannot = |e: std::io::Error| CliError::at(path, format!("cannot read: {e}"));
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    // A regular file's size (capped) sizes the buffer once: growing it by
    // doubling would hold up to twice the text at the parse's peak.
    let hint = f.metadata().map_or(0, |m| m.len().min(MAX_SOURCE_BYTES));
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(cannot(e)),
        };
        let got = &chunk[..n];
        if let Some(i) = got.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&got[..i]);
            let (l, c) = line_col(&bytes, bytes.len());
            return Err(CliError::at(
                format!("{path}:{l}:{c}"),
                "NUL byte in input (not IR text)",
            ));
        }
        if bytes.len() as u64 + n as u64 > MAX_SOURCE_BYTES {
            return Err(CliError::at(
                path,
                format!(
                    "input larger than {} MiB (not IR text?)",
                    MAX_SOURCE_BYTES >> 20
                ),
            ));
        }
        bytes.extend_from_slice(got);
    }
}

/// Reads, parses and verifies `path`.
pub fn load(path: &str) -> Result<Verified, CliError> {
    let bytes = read_text(path)?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let (l, c) = line_col(&bytes, e.valid_up_to());
            return Err(CliError::at(
                format!("{path}:{l}:{c}"),
                "invalid UTF-8 in input",
            ));
        }
    };
    let m = parse_module(text).map_err(|d| CliError::new(d.with_file(path)))?;
    // The module owns its names: the text goes before verification's
    // tables are built.
    drop(bytes);
    Verified::new(m).map_err(|e| CliError::new(e.with_file(path)))
}
