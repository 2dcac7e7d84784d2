//! guardlift runtime: the contract between generated code and its host.
//!
//! It has no dependency on the IR. It owns
//! - [`layout`]: managed-dict slot offsets and tag bits (the one definition);
//! - [`adstack`]: the adstack buffer layout (the one definition);
//! - [`heap`]: the model heap behind the built-in host functions;
//! - [`report`]: report types and the deduplicating sink;
//! - [`runtime`]: the [`Runtime`] that ties them together per mode;
//! - [`abi`]: the C entry points generated code calls;
//! - [`trap`]: trap mode's scratch area, trap-site registry and signal handler.

pub mod abi;
pub mod adstack;
pub mod heap;
pub mod layout;
pub mod options;
pub mod report;
pub mod runtime;
pub mod trap;

pub use heap::{FreeOutcome, HostFault, HostObjectError, ObjectRecord};
pub use options::Options;
pub use report::{
    HumanReport, LastWrite, ObjectNote, Observed, Report, ReportKind, SiteInfo, TrapNote,
};
pub use runtime::{
    format_f32, format_f64, Mode, ReportHandler, Runtime, RuntimeConfig, Verdict,
    TRAP_SCRATCH_OFFSET, UNWATCH_EPOCH_OFFSET,
};
pub use trap::{TrapRegistration, TrapScratch, TrapSite};
