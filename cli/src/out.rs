//! Writing the commands' output to stdout without panicking (spec §6.3),
//! through the run-session layer's writer: a failed write (a full disk, a
//! closed pipe) is a [`CliError`] — one line on stderr and a non-zero exit
//! — never the panic of `println!`.

use crate::source::CliError;

/// Writes `args` to stdout and flushes.
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    Ok(guardlift_session::out::write_fmt(args)?)
}

/// `println!` that returns the failed write as a [`CliError`] (`?`).
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::out::write_fmt(format_args!("{}\n", format_args!($($t)*)))?
    };
}
