//! guardlift runtime: the contract between generated code and its host.
//!
//! It has no dependency on the IR. It owns
//! - [`layout`], [`adstack`]: re-exported from `guardlift-abi`, which holds
//!   the one definition of every layout constant, report kind and entry point;
//! - [`mode`]: the check mode (re-exported from `guardlift-abi`);
//! - [`heap`]: the model heap behind the built-in host functions;
//! - [`report`]: report types, their human and JSON forms, the deduplicating sink;
//! - [`runtime`]: the `Runtime` that ties them together per mode;
//! - [`internals`]: the split of `Runtime`'s methods: the embedder API
//!   (inherent) and the traits guardlift's own engines use;
//! - `objects`: the model heap's object built-ins and the object checks
//!   (an `impl Runtime` block);
//! - [`shadow`]: one shadow byte per 8-byte granule (freed memory, freed
//!   objects, watched slots) for the checks' inline hot paths;
//! - [`options`]: the `GUARDLIFT_OPTIONS` environment variable;
//! - [`output`]: where report text goes (log with stderr fallback), the final report latch;
//! - [`sites`]: the guard-site table, sparse, per registered module;
//! - [`slow_path`]: the host's own attribute slow paths, when it binds them;
//! - [`abi`]: the C entry points generated code calls;
//! - [`backtrace`]: backtraces of reports (IR frames, the host's native frame);
//! - [`host_stack`]: the host's native stacks at a host object's registration and free;
//! - [`codemap`]: the one code registry: compiled code ranges and their PC → IR-site map;
//! - [`sigchain`]: installs guardlift's signal handlers and chains the signals that are not ours;
//! - [`fault`]: the fatal-signal handler (`host_fault`, `stack_overflow`);
//! - [`sigtable`]: the lock-free table signal handlers read;
//! - [`sigstack`]: alternate signal stacks for threads that run guardlift code;
//! - [`trap`]: trap mode: its scratch area ([`trap::scratch`]), trap-site registry and signal handler;
//! - [`watch`]: hardware watchpoints on dict words (`--watch`, `foreign_write`).
//!
//! # The module graph is a DAG
//!
//! Each module uses only modules listed before it here (`A: B, C` — `A`
//! uses `B` and `C`); a test would be the place to enforce it, the layering
//! is the rule:
//!
//! 1. leaves: `layout`, `adstack`, `mode`, `sigtable`, `sigstack`,
//!    `sigchain`, `output`;
//! 2. `codemap`: sigtable, sigstack — it keeps each registrant (the
//!    runtime) as an opaque `Arc<dyn Any>`, so it sits below `runtime`;
//! 3. `backtrace`: codemap; `host_stack`: backtrace;
//! 4. `watch`: layout, codemap, backtrace, sigchain;
//! 5. `report`: layout, backtrace, host_stack, watch, output;
//! 6. `options`: mode, watch (not `runtime`: `Mode` has its own module);
//!    `sites`: report; `heap`: layout, report, watch, host_stack; `slow_path`: none;
//!    `trap::scratch`: report, watch;
//! 7. `runtime`: everything above (it embeds `trap::scratch` only);
//! 8. `objects`, `abi`, `fault` (codemap, sigchain, runtime), `trap`'s registry and
//!    handler (runtime, fault, sigchain) — above `runtime`: they add the
//!    methods that register code and trap sites (`impl Runtime` blocks in
//!    their own files) and find the runtime of a faulting PC by
//!    downcasting the code registry's owner;
//! 9. `internals`: runtime, objects, fault (it only re-exports their traits).
//!
//! Before, `options` took `Mode` from `runtime`, `runtime` took the scratch
//! area from `trap` while `trap` named `Runtime`, `sites` named `Runtime`,
//! and `watch` and `report` used each other: each cycle was cut by moving
//! the shared piece down (`mode`, `trap::scratch`, `SiteRegistration` into
//! `runtime`, the `foreign_write` conversion into `report`).

pub mod abi;
pub mod backtrace;
pub mod codemap;
pub mod fault;
mod fixed_cache;
pub mod heap;
pub mod host_stack;
pub mod internals;
pub mod mode;
mod objects;
pub mod options;
pub mod output;
pub mod report;
pub mod runtime;
pub mod shadow;
pub mod sigchain;
pub mod sigstack;
pub mod sigtable;
pub mod sites;
pub mod slow_path;
pub mod trap;
pub mod watch;

/// The one definitions of the object and adstack layouts live in the
/// contract crate; these paths keep working.
pub use guardlift_abi::{adstack, layout};
pub use heap::{FreeOutcome, HostFault, HostObjectError, ObjectRecord};
pub use host_stack::{HostCaller, HostStack, HostStacks};
pub use options::{JitDebug, Options};
pub use report::{
    HumanReport, LastWrite, ObjectCount, ObjectNote, Observed, Report, ReportKind, SiteInfo,
    TrapNote,
};
pub use runtime::{
    format_f32, format_f64, Mode, ReportHandler, Runtime, RuntimeConfig, SiteRegistration, Verdict,
    FIXED_MEMO_OFFSET, TRAP_SCRATCH_OFFSET, UNWATCH_EPOCH_OFFSET, VALUES_EPOCH_OFFSET,
};
pub use sites::{ModuleSites, SiteSpaceFull};
pub use slow_path::{AttrSlowPaths, BindError, SlowPaths};
pub use trap::{TrapRegistration, TrapScratch, TrapSite};
