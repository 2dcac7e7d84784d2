//! Writing the commands' output to stdout without panicking (spec §6.3): a
//! failed write (a full disk, a closed pipe) is a [`CliError`] — one line
//! on stderr and a non-zero exit — never the panic of `println!`.

use crate::source::CliError;
use std::io::Write;

/// The error of a failed write of the output.
pub fn write_error(e: &std::io::Error) -> CliError {
    CliError::tool(format!("cannot write output: {e}"))
}

/// Writes `args` to stdout and flushes.
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(|e| write_error(&e))
}

/// Where a command ends the process itself: writes `args` to stdout, or
/// says on stderr why it could not (the exit status is already non-zero).
pub fn write_or_note(args: std::fmt::Arguments<'_>) {
    if let Err(CliError(msg)) = write_fmt(args) {
        eprintln!("{msg}");
    }
}

/// `println!` that returns the failed write as a [`CliError`] (`?`).
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::out::write_fmt(format_args!("{}\n", format_args!($($t)*)))?
    };
}
