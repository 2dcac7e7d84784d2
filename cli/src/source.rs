//! Loading IR text: bytes → UTF-8 → parse → verify, every failure as
//! `FILE:LINE:COL: error: ...`.

use guardlift_ir::{parse_module, verify_module, Module};

/// A user-facing failure that ends the command with exit status 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    pub fn new(msg: impl Into<String>) -> Self {
        CliError(msg.into())
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

/// Reads, parses and verifies `path`.
pub fn load(path: &str) -> Result<Module, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::new(format!("{path}: error: cannot read: {e}")))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let (l, c) = line_col(&bytes, e.valid_up_to());
            return Err(CliError::new(format!(
                "{path}:{l}:{c}: error: invalid UTF-8 in input"
            )));
        }
    };
    let m = parse_module(text).map_err(|d| CliError::new(d.with_file(path)))?;
    verify_module(&m).map_err(|e| CliError::new(e.with_file(path)))?;
    Ok(m)
}
