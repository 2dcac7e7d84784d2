//! Writing a run's output to stdout without panicking (spec §6.3): a
//! failed write (a full disk, a closed pipe) is a [`RunError`] — one line
//! on stderr and a non-zero exit — never the panic of `println!`.

use crate::RunError;
use std::io::Write;

/// The error of a failed write of the output.
pub fn write_error(e: &std::io::Error) -> RunError {
    RunError::tool(format!("cannot write output: {e}"))
}

/// Writes `args` to stdout and flushes.
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> Result<(), RunError> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(&e))
}

/// Where a run ends the process itself: writes `args` to stdout, or says
/// on stderr why it could not (the exit status is already non-zero).
pub fn write_or_note(args: std::fmt::Arguments<'_>) {
    if let Err(RunError(msg)) = write_fmt(args) {
        eprintln!("{msg}");
    }
}
