//! The runtime's two faces: the embedder API and the internals.
//!
//! An interpreter embedding guardlift needs a handful of [`Runtime`]
//! methods, all inherent: make one ([`Runtime::new`], [`Runtime::try_new`],
//! [`Runtime::configure`]), register and free its own objects
//! ([`Runtime::register_object`], [`Runtime::object_freed`]), receive
//! reports ([`Runtime::set_report_handler`], [`Runtime::take_reports`],
//! [`Runtime::flush_reports`]), bind its slow paths
//! ([`Runtime::bind_attr_slow_paths`]), watch ([`Runtime::enable_watch`]).
//!
//! Everything guardlift's own engines and generated code need besides —
//! registering sites and code, recording a report, the model heap's
//! built-ins, the checks the interpreter calls, host faults — is in the
//! traits re-exported here, each declared and implemented next to its state:
//! - [`RuntimeInternals`] (`runtime.rs`): sites, reports, host faults,
//!   output, watch internals, slow-path dispatch;
//! - [`ObjectBuiltins`] (`objects.rs`): `obj_new`/`obj_dictify`/`obj_free`
//!   and the lifetime, bounds, redzone and stack-area checks;
//! - [`CodeFaults`] (`fault.rs`): code registration for the fault handler,
//!   a fault report written without a signal.
//!
//! They are public because the engines are other crates (and tests call
//! them), not because an embedder should: `use
//! guardlift_runtime::internals::*` brings them in scope, and nothing in
//! them is covered by the embedder API's compatibility promise.

#[allow(unused_imports)] // the docs link to it
use crate::Runtime;

pub use crate::fault::CodeFaults;
pub use crate::objects::ObjectBuiltins;
pub use crate::runtime::RuntimeInternals;
pub use crate::trap::TrapSites;
