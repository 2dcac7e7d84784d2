//! guardlift's contract crate, the counterpart of `wasmtime-environ`: what
//! the IR, the compilers (JIT, object emission, the object paths' C
//! support) and the runtime must agree on, with no dependency on any of
//! them.
//!
//! - [`layout`]: managed-dict slot offsets and tag bits (the one definition);
//! - [`adstack`]: the adstack buffer layout (the one definition);
//! - [`report`]: report kinds, their codes and trap codes, site descriptions;
//! - [`mode`]: [`Mode`], what a failed check does;
//! - [`offsets`]: the runtime's head and trap scratch area as generated code sees them;
//! - [`entry`]: the one table of every entry point and built-in ([`foreach_entry!`]);
//! - [`program`]: the tables a program's `gl_traps.c` hands the target library;
//! - [`stamp`]: [`ABI_STAMP`], a compile-time hash of all of the above that a
//!   target runtime library carries (`gl_rt_abi`) so a stale one is refused;
//! - `format`: the text form of floats.

pub mod adstack;
pub mod entry;
pub mod format;
pub mod layout;
pub mod mode;
pub mod offsets;
pub mod program;
pub mod protocol;
pub mod report;
pub mod stamp;

/// The stack of the thread a program's entry runs on (the CLI's run
/// thread, an object target's): adstack frames can be large.
pub const RUN_STACK_BYTES: usize = 512 << 20;

/// The source line of the call by which a big function compiled in pieces
/// enters its next piece (the JIT's `pieces`): no line of a real file. A
/// frame whose return address maps to it is the function's own first
/// piece, which backtraces and the fault handler's frame walk leave out
/// (the function shows once). Below bit 31, which the lowering's trap
/// source locations set.
pub const PIECE_CALL_LINE: u32 = (1 << 31) - 1;

pub use entry::{builtin, builtins, AbiTy, Builtin, Entry};
pub use format::{format_f32, format_f64};
pub use mode::Mode;
pub use offsets::{
    trap_token, TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_SCRATCH_OFFSET, TRAP_VALUES_OFFSET,
    TRAP_VALUE_COUNT, UNWATCH_EPOCH_OFFSET, VALUES_EPOCH_OFFSET,
};
pub use report::{ModuleSites, ReportKind, SiteInfo, TRAP_CODE_BASE};
pub use stamp::{ABI_STAMP, PROTOCOL_VERSION, STAMP_SYMBOL};
