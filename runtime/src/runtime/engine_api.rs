//! The [`RuntimeInternals`] trait: what guardlift's engines use of a
//! [`Runtime`] beyond the embedder API (see [`crate::internals`]). Declared
//! here, implemented in the parent module next to the runtime's state.

use super::Verdict;
#[allow(unused_imports)] // the docs link to them
use super::{format_f64, Runtime, RuntimeConfig, TRAP_SCRATCH_OFFSET};
use crate::heap::{Heap, HostFault};
use crate::report::{Observed, Report, ReportKind};
use crate::sites::{ModuleSites, SiteSpaceFull};
use crate::trap::scratch::TrapScratch;

/// What guardlift's own engines (the JIT, the interpreter, the CLI, the C
/// API) and generated code use of a [`Runtime`] beyond the embedder API:
/// site registration, recording reports, the model heap, host faults, the
/// built-ins' output. Not for embedders: its methods may change between
/// minor versions (see [`crate::internals`]).
pub trait RuntimeInternals {
    /// Does a violation in abort/trap mode end the process
    /// ([`RuntimeConfig::abort_process`])?
    fn aborts_process(&self) -> bool;

    /// The trap-mode scratch area (at [`TRAP_SCRATCH_OFFSET`] from `self`).
    fn trap_scratch(&self) -> &TrapScratch;

    /// Hands the runtime the pre-rendered ending of the paths that end the
    /// process inside a run: abort mode's hook and the JSON members the
    /// fault and trap handlers print (the stdout members are set once per
    /// runtime: a second value is ignored).
    fn set_fatal_ending(&self, ending: crate::fault::FatalEnding);

    /// Registers a module's sites (by local id, sparse: see
    /// [`crate::sites`]) and returns the base to add to local ids to get
    /// runtime-global ids. Pair with [`Runtime::unregister_sites`] when the
    /// module goes.
    fn register_sites(&self, sites: ModuleSites) -> Result<u32, SiteSpaceFull>;

    /// Forgets the sites registered at `base` (their module is gone).
    fn unregister_sites(&self, base: u32);

    /// How many sites of live modules the runtime holds.
    fn site_count(&self) -> usize;

    /// Records a violation and decides what happens next. In abort/trap mode
    /// with `abort_process`, prints the report and aborts the process.
    /// The object the report is about (its id and sites) and the slot's
    /// last known write are looked up now, at check time.
    fn report(&self, kind: ReportKind, site: u32, observed: Observed) -> Verdict;

    /// Prints pending reports, runs the abort hook, and aborts. When another
    /// thread is already ending the process with a report, waits for it
    /// instead (the pending reports are printed once).
    fn die(&self) -> !;

    /// Writes reports to the configured log (stderr by default), as human
    /// text or JSON lines. Never panics.
    fn write_reports(&self, reports: &[Report]);

    /// Writes report text as it is to the configured log (stderr by
    /// default; stderr with a note when the log cannot be written).
    fn write_log_text(&self, text: &str);

    /// Records that instrumented code wrote `word` to `obj`'s dict slot at `site`.
    fn note_slot_write(&self, site: u32, obj: u64, word: u64);

    /// The first host fault of the run, if any (taken).
    fn take_host_fault(&self) -> Option<HostFault>;

    /// The first host fault of the run with the object it was about, if
    /// any (taken).
    fn take_host_call_fault(&self) -> Option<crate::fault::HostCallFault>;

    /// Must the run end here: a host fault is recorded and this runtime
    /// ends the process on one ([`Runtime::set_host_faults_fatal`])? The
    /// interpreter asks after every instruction; the JIT's runs never get
    /// here (the fault ended the process at the call).
    fn host_fault_ends_run(&self) -> bool;

    /// Does a host fault of the model heap end the process, reported as
    /// `host_fault` at the IR call (`true`), or is it recorded for
    /// [`Runtime::take_host_fault`] while the run goes on, the operation
    /// doing nothing (`false`)? By default it ends the process in abort
    /// and trap mode with [`RuntimeConfig::abort_process`]; `guardlift run`
    /// makes it end the process in every mode (spec §6.2: where native
    /// code would have crashed).
    fn set_host_faults_fatal(&self, fatal: bool);

    /// Runs `f` on the heap (for engines that need raw access checks).
    fn with_heap<R>(&self, f: impl FnOnce(&mut Heap) -> R) -> R;

    /// Runs `f` on the recorded reports if the sink is not locked right
    /// now (never blocks, never allocates): how a signal handler of an
    /// object target's runtime writes them.
    fn try_reports<R>(&self, f: impl FnOnce(&[Report]) -> R) -> Option<R>;

    /// How many times a dict slot left the watch list (only a free — of a
    /// runtime or host object — removes one). While it is unchanged, every
    /// object watched before is still watched and no object was freed:
    /// code may skip a repeated `guard.watch` or lifetime check of the
    /// same object (the JIT's per-frame watch cache does).
    fn unwatch_epoch(&self) -> u64;

    /// How many times `ObjectBuiltins::attr_fixed` was asked: by
    /// generated code at each entry of a clean loop with fixed attributes
    /// whose inline cache missed (docs/CODEGEN.md, "Loops: the clean
    /// copy"), and by the interpreter verifying the claim. For tests and
    /// benchmarks.
    fn attr_fixed_calls(&self) -> u64;

    /// This runtime's id in the watch field of the shadow bytes
    /// ([`crate::shadow`]): generated code skips `guard.watch` of a slot
    /// whose shadow byte carries it (the slot is on this runtime's watch
    /// list). [`crate::shadow::WATCH_SHARED`]: no id, always call.
    fn shadow_watch_id(&self) -> u8;

    /// `@fault_clear_lsb(obj)`: the rogue writer of the tag-flip scenario
    /// (clears the low bit of `obj`'s dict word, behind the JIT's back).
    fn fault_clear_lsb(&self, obj: u64);

    /// Did the host bind its slow paths? (`guardlift_ir::hoist::HostModel`.)
    fn attr_slow_paths_bound(&self) -> bool;

    /// The slow path of `load_attr`: attribute `i` of `obj`.
    fn load_attr_slow(&self, obj: u64, i: u32) -> i64;

    /// The slow path of `store_attr`: sets attribute `i` of `obj`.
    fn store_attr_slow(&self, obj: u64, i: u32, v: i64);

    /// Prints `line` (or captures it, [`RuntimeConfig::capture_output`]).
    fn print_line(&self, line: &str);

    /// `@print_i64(v)`.
    fn print_i64(&self, v: i64);

    /// `@print_f64(v)`, in the shortest round-trip form ([`format_f64`]).
    fn print_f64(&self, v: f64);

    /// Records the watched writes caught since the last call as
    /// `foreign_write` reports (and calls the report handler for them).
    /// Reports are drained before any is recorded or handed out; engines
    /// also call it before freeing code (its PCs resolve to IR sites only
    /// while it is registered).
    fn drain_watch(&self);

    /// Adds `obj`'s slot to the clobber watch list.
    fn watch(&self, obj: u64);

    /// Does a raw store of `width` bytes at `addr` overlap a watched slot?
    /// (Trap mode's clobber test: the trap reports, not this call.)
    fn clobber_overlaps(&self, addr: u64, width: u32) -> bool;

    /// The clobber check of a raw store: true when the store must be skipped
    /// (it overlaps a watched slot; the violation has been reported).
    fn clobber_check(&self, site: u32, addr: u64, width: u32, value: u64) -> bool;
}
