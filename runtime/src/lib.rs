//! guardlift runtime: the contract between generated code and its host.
//!
//! It has no dependency on the IR. It owns
//! - [`layout`]: managed-dict slot offsets and tag bits (the one definition);
//! - [`adstack`]: the adstack buffer layout (the one definition);
//! - [`heap`]: the model heap behind the built-in host functions;
//! - [`report`]: report types and the deduplicating sink;
//! - [`runtime`]: the [`Runtime`] that ties them together per mode;
//! - [`shadow`]: one shadow byte per 8-byte granule (freed memory, freed objects, watched slots) for the checks' inline hot paths;
//! - [`output`]: where report text goes (log with stderr fallback), the final report latch;
//! - [`sites`]: the guard-site table, sparse, per registered module;
//! - [`abi`]: the C entry points generated code calls;
//! - [`backtrace`]: backtraces of reports (IR frames, the host's native frame);
//! - [`fault`]: the PC → IR-site map of compiled code and the fatal-signal handler (`host_fault`, `stack_overflow`);
//! - [`sigtable`]: the lock-free table signal handlers read;
//! - [`sigstack`]: alternate signal stacks for threads that run guardlift code;
//! - [`trap`]: trap mode's scratch area, trap-site registry and signal handler;
//! - [`watch`]: hardware watchpoints on dict words (`--watch`, `foreign_write`).

pub mod abi;
pub mod adstack;
pub mod backtrace;
pub mod fault;
pub mod heap;
pub mod layout;
pub mod options;
pub mod output;
pub mod report;
pub mod runtime;
pub mod shadow;
pub mod sigstack;
pub mod sigtable;
pub mod sites;
pub mod trap;
pub mod watch;

pub use heap::{FreeOutcome, HostFault, HostObjectError, ObjectRecord};
pub use options::Options;
pub use report::{
    HumanReport, LastWrite, ObjectNote, Observed, Report, ReportKind, SiteInfo, TrapNote,
};
pub use runtime::{
    format_f32, format_f64, Mode, ReportHandler, Runtime, RuntimeConfig, Verdict,
    TRAP_SCRATCH_OFFSET, UNWATCH_EPOCH_OFFSET,
};
pub use sites::{ModuleSites, SiteRegistration, SiteSpaceFull};
pub use trap::{TrapRegistration, TrapScratch, TrapSite};
