//! The event letters of the line protocol an object target writes to the
//! host (`guardlift_aot::protocol` parses the lines; the target runtime,
//! `aot/rt`, writes them). One definition for both ends, hashed into
//! [`crate::ABI_STAMP`] so a library that writes other letters is refused.

/// `print_i64` / `print_f64`.
pub const PRINT: u8 = b'P';
/// A host fault of the model heap.
pub const FAULT: u8 = b'F';
/// One deduplicated report.
pub const REPORT: u8 = b'R';
/// A trap instruction fired.
pub const TRAP: u8 = b'T';
/// Dying of a signal outside IR code and IR calls.
pub const SIGNAL: u8 = b'S';
/// A fatal signal in IR code or a host function it called.
pub const CRASH: u8 = b'C';
/// A fatal division fault.
pub const ARITH: u8 = b'D';
/// The entry's result.
pub const RESULT: u8 = b'V';
/// Abort or trap mode ended the run.
pub const ABORT: u8 = b'A';
/// The run ended normally.
pub const END: u8 = b'E';

/// Every event: (name, letter), as `ABI_STAMP` hashes them.
pub const EVENTS: [(&str, u8); 10] = [
    ("PRINT", PRINT),
    ("FAULT", FAULT),
    ("REPORT", REPORT),
    ("TRAP", TRAP),
    ("SIGNAL", SIGNAL),
    ("CRASH", CRASH),
    ("ARITH", ARITH),
    ("RESULT", RESULT),
    ("ABORT", ABORT),
    ("END", END),
];
