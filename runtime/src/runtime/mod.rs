//! The [`Runtime`]: one model heap, one report sink, one site table, and the
//! mode that decides what a failed check does. Engines (interpreter, JIT)
//! call into it; generated code reaches it through [`crate::abi`].

use crate::heap::{Heap, HostFault, HostObjectError, ObjectRecord};
use crate::host_stack::{HostCaller, HostStack};
use crate::layout::DictLayout;
pub use crate::mode::Mode;
use crate::options::{JitDebug, Options};
use crate::output::LogFile;
use crate::report::{ObjectNote, Observed, Report, ReportKind, ReportSink, SiteInfo, NO_SITE};
use crate::sites::{ModuleSites, SiteSpaceFull, SiteTable};
use crate::slow_path::{BindError, SlowPaths};
use crate::trap::scratch::TrapScratch;
use crate::watch::{self, WatchSpec, WatchStatus};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

mod engine_api;
pub use engine_api::RuntimeInternals;

/// Offset of the trap-mode scratch area ([`TrapScratch`]) from the runtime
/// pointer (`Arc::as_ptr`) that generated code embeds.
pub const TRAP_SCRATCH_OFFSET: i32 = std::mem::offset_of!(Runtime, trap) as i32;
const _: () = assert!(TRAP_SCRATCH_OFFSET == 0);
/// Offset of the unwatch epoch (an `AtomicU64`) from the runtime pointer.
pub const UNWATCH_EPOCH_OFFSET: i32 = std::mem::offset_of!(Runtime, unwatch_epoch) as i32;
/// Offset of the values epoch (an `AtomicU64`) from the runtime pointer.
pub const VALUES_EPOCH_OFFSET: i32 = std::mem::offset_of!(Runtime, values_epoch) as i32;
/// Offset of the `attr_fixed` memo's address (a `u64`) from the runtime pointer.
pub const FIXED_MEMO_OFFSET: i32 = std::mem::offset_of!(Runtime, fixed_memo) as i32;

/// A user-installed report handler: called for each occurrence of a
/// violation (up to the per-site limit), after it was recorded, outside any
/// runtime lock. It must not free objects or write a managed-dict word or
/// a values array: the JIT's clean loops make the lifetime, watch and
/// bounds tests of their objects once per entry, on the proof that nothing
/// in the loop, a report included, changes them (docs/EMBEDDING.md).
pub type ReportHandler = Arc<dyn Fn(&Report) + Send + Sync>;

/// Where and how reports are written (from the API or `GUARDLIFT_OPTIONS`).
#[derive(Default)]
struct Settings {
    handler: Option<ReportHandler>,
    /// Per (site, kind): handler calls beyond this many occurrences are
    /// skipped (counts stay exact). 0 = no limit.
    report_limit: u64,
    /// Write reports here instead of stderr (falling back to stderr when it fails).
    log: Option<Arc<LogFile>>,
    /// Write reports as JSON lines instead of human text.
    json: bool,
    /// What the JIT tells profilers and debuggers about its code.
    jit_debug: JitDebug,
}

/// What the caller of a check must do next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Apply the recover-mode effect and continue.
    Recover,
    /// Stop: the run aborted (only returned when the runtime does not exit the process).
    Abort,
}

/// Called before the process aborts on a violation (e.g. to print JSON).
pub type AbortHook = Box<dyn Fn(&Runtime) + Send + Sync>;

/// Runtime settings.
pub struct RuntimeConfig {
    /// The managed-dict layout of the objects.
    pub layout: DictLayout,
    /// What a failed check does.
    pub mode: Mode,
    /// In abort/trap mode, end the process on a violation (default). When
    /// false, checks return [`Verdict::Abort`] instead (the interpreter stops;
    /// used by tests and hosts that unwind themselves).
    pub abort_process: bool,
    /// Collect `print_*` output instead of writing it to stdout.
    pub capture_output: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            layout: DictLayout::default(),
            mode: Mode::default(),
            abort_process: true,
            capture_output: false,
        }
    }
}

/// The host side of a guardlift program. Shared (`Arc`) by every engine
/// and compiled module that uses it; all methods take `&self` and are
/// thread-safe.
///
/// `#[repr(C)]` with the trap-mode scratch area first, so generated code
/// reaches it at [`TRAP_SCRATCH_OFFSET`] from the runtime pointer it
/// already embeds (see [`crate::trap`]).
#[repr(C)]
pub struct Runtime {
    trap: TrapScratch,
    /// Bumped whenever a dict slot leaves the watch list (at
    /// [`UNWATCH_EPOCH_OFFSET`]): generated code that remembers "this site
    /// already watched this object" trusts the memory only while the epoch
    /// is unchanged (see `Runtime::unwatch_epoch`).
    pub(crate) unwatch_epoch: AtomicU64,
    /// Bumped whenever an object stops being live or its values array is
    /// released (every free and `obj_dictify`, at [`VALUES_EPOCH_OFFSET`]):
    /// generated code that remembers "[`Runtime::attr_fixed`] held for these
    /// objects and words" trusts it only while the epoch is unchanged.
    pub(crate) values_epoch: AtomicU64,
    /// The address of [`Runtime::fixed_cache`]'s entries (at
    /// [`FIXED_MEMO_OFFSET`]): a loop's entry test probes the memo inline
    /// before it calls `attr_fixed`.
    fixed_memo: u64,
    layout: DictLayout,
    mode: Mode,
    abort_process: bool,
    capture_output: bool,
    pub(crate) heap: Mutex<Heap>,
    sink: Mutex<ReportSink>,
    sites: RwLock<SiteTable>,
    fault: Mutex<Option<crate::fault::HostCallFault>>,
    /// A host fault is recorded (what the interpreter polls after a host call).
    faulted: AtomicBool,
    /// A report was recorded while no report handler was installed: the
    /// drop flushes the pending reports (else the handler had them all).
    unhandled: AtomicBool,
    /// A host fault ends the process ([`Runtime::set_host_faults_fatal`]).
    host_faults_fatal: AtomicBool,
    output: Mutex<String>,
    abort_hook: Mutex<Option<AbortHook>>,
    /// [`crate::fault::FatalEnding::stdout_json_members`], read by the
    /// signal handlers (set once, before the run; never locked).
    pub(crate) stdout_json_members: std::sync::OnceLock<String>,
    settings: RwLock<Settings>,
    /// The host's attribute slow paths ([`crate::slow_path`]), once bound.
    slow_paths: std::sync::OnceLock<SlowPaths>,
    /// Record host objects' native stacks ([`Runtime::set_host_stacks`]).
    host_stacks: AtomicBool,
    /// Calls of `attr_fixed` (`RuntimeInternals::attr_fixed_calls`).
    attr_fixed_calls: AtomicU64,
    /// `attr_fixed`'s successes, answered again without the heap's lock.
    pub(crate) fixed_cache: crate::fixed_cache::FixedCache,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    /// A runtime with `config`, whose layout may come from input: an
    /// invalid `DictLayout::Custom` offset (not a multiple of 8, or beyond
    /// `MAX_CUSTOM_DICT_SLOT_OFFSET`) is an error, never a heap that
    /// writes words outside its objects.
    ///
    /// ```
    /// use guardlift_runtime::{layout::DictLayout, Runtime, RuntimeConfig};
    ///
    /// let bad = RuntimeConfig { layout: DictLayout::Custom(3), ..Default::default() };
    /// assert!(Runtime::try_new(bad).is_err());
    /// let ok = RuntimeConfig { layout: DictLayout::custom(-32)?, ..Default::default() };
    /// assert_eq!(Runtime::try_new(ok)?.layout().dict_slot_offset(), -32);
    /// # Ok::<(), guardlift_runtime::layout::LayoutError>(())
    /// ```
    pub fn try_new(config: RuntimeConfig) -> Result<Arc<Runtime>, crate::layout::LayoutError> {
        if let DictLayout::Custom(o) = config.layout {
            DictLayout::custom(o as i64)?;
        }
        Ok(Runtime::new_unchecked(config))
    }

    /// A runtime with `config`; share it (`Arc`) with every engine using it.
    ///
    /// # Panics
    /// If `config.layout` is an invalid `DictLayout::Custom` offset (build
    /// custom layouts with `DictLayout::custom`, or call
    /// [`Runtime::try_new`] for a layout from input).
    pub fn new(config: RuntimeConfig) -> Arc<Runtime> {
        match Runtime::try_new(config) {
            Ok(rt) => rt,
            Err(e) => panic!("Runtime::new: {e} (use DictLayout::custom or Runtime::try_new)"),
        }
    }

    /// [`Runtime::new`] once the layout is known to be valid.
    fn new_unchecked(config: RuntimeConfig) -> Arc<Runtime> {
        Arc::new(Runtime::value(config))
    }

    /// A runtime with `config` built in place at `at`, for code that uses
    /// a fixed address as its runtime pointer: object code linked with the
    /// target library (`aot/rt`) uses the *address* of its
    /// `guardlift_runtime` symbol, a cell of `Runtime`'s size and
    /// alignment, so the trap scratch area and the epochs are at
    /// [`TRAP_SCRATCH_OFFSET`], [`UNWATCH_EPOCH_OFFSET`] and
    /// [`VALUES_EPOCH_OFFSET`] from it. The layout is checked as
    /// [`Runtime::try_new`] does; on an error nothing is written.
    ///
    /// What such a runtime cannot do yet (docs/TARGETS.md, "One runtime"):
    /// register code or trap sites (those take an `Arc<Runtime>`).
    ///
    /// ```
    /// use guardlift_runtime::{Runtime, RuntimeConfig};
    /// use std::mem::MaybeUninit;
    ///
    /// let mut cell = Box::new(MaybeUninit::<Runtime>::uninit());
    /// // SAFETY: the cell is writable, aligned and holds no runtime.
    /// unsafe { Runtime::init_at(RuntimeConfig::default(), cell.as_mut_ptr())? };
    /// // SAFETY: initialised above; dropped once, before the cell goes.
    /// unsafe { std::ptr::drop_in_place(cell.as_mut_ptr()) };
    /// # Ok::<(), guardlift_runtime::layout::LayoutError>(())
    /// ```
    ///
    /// # Safety
    /// `at` must be valid for writes of a `Runtime` and aligned for it, and
    /// must not hold a live runtime (it is overwritten, never dropped).
    /// The runtime must stay at `at` (never moved) while anything uses it;
    /// dropping it (`std::ptr::drop_in_place`) is the caller's business,
    /// as is that nothing uses it afterwards.
    pub unsafe fn init_at(
        config: RuntimeConfig,
        at: *mut Runtime,
    ) -> Result<(), crate::layout::LayoutError> {
        if let DictLayout::Custom(o) = config.layout {
            DictLayout::custom(o as i64)?;
        }
        // SAFETY: `at` is valid for writes and aligned (the caller's contract).
        unsafe { at.write(Runtime::value(config)) };
        Ok(())
    }

    /// The runtime value itself (the layout already checked).
    fn value(config: RuntimeConfig) -> Runtime {
        let fixed_cache = crate::fixed_cache::FixedCache::default();
        Runtime {
            trap: TrapScratch::new(),
            unwatch_epoch: AtomicU64::new(0),
            values_epoch: AtomicU64::new(0),
            fixed_memo: fixed_cache.base(),
            layout: config.layout,
            mode: config.mode,
            abort_process: config.abort_process,
            capture_output: config.capture_output,
            heap: Mutex::new(Heap::new(config.layout)),
            sink: Mutex::new(ReportSink::default()),
            sites: RwLock::new(SiteTable::default()),
            fault: Mutex::new(None),
            faulted: AtomicBool::new(false),
            unhandled: AtomicBool::new(false),
            host_faults_fatal: AtomicBool::new(
                config.abort_process && config.mode != Mode::Recover,
            ),
            output: Mutex::new(String::new()),
            abort_hook: Mutex::new(None),
            stdout_json_members: std::sync::OnceLock::new(),
            settings: RwLock::new(Settings::default()),
            slow_paths: std::sync::OnceLock::new(),
            host_stacks: AtomicBool::new(false),
            attr_fixed_calls: AtomicU64::new(0),
            fixed_cache,
        }
    }

    /// Counts one [`Runtime::attr_fixed`] call.
    pub(crate) fn note_attr_fixed_call(&self) {
        // A load and a store, not a read-modify-write: the count is a
        // statistic (tests read it single-threaded), and the locked add
        // cost a loop entry's `attr_fixed` call as much as its mutex.
        let n = self.attr_fixed_calls.load(Ordering::Relaxed);
        self.attr_fixed_calls.store(n + 1, Ordering::Relaxed);
    }

    /// The managed-dict layout.
    pub fn layout(&self) -> DictLayout {
        self.layout
    }
    /// The check mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Applies report settings (log path, JSON, per-site limit) and starts
    /// watchpoints for `options.watch` (printing the one
    /// `guardlift: watchpoints unavailable: REASON` line if they cannot be
    /// had). The mode is fixed at construction: pass `options.mode` in
    /// [`RuntimeConfig`].
    pub fn configure(&self, options: &Options) -> std::io::Result<()> {
        let log = match &options.log_path {
            Some(p) => Some(Arc::new(LogFile::open(p)?)),
            None => None,
        };
        #[cfg(unix)]
        let fd = log.as_ref().map(|f| f.raw_fd());
        #[cfg(not(unix))]
        let fd = None;
        // The trap handler cannot lock: it gets the raw fd (set before the
        // previous log file, if any, is closed below).
        self.trap.set_output(fd, options.json);
        crate::backtrace::set_enabled(options.backtrace.unwrap_or(true));
        if let Some(on) = options.host_stacks {
            self.set_host_stacks(on);
        }
        let mut s = self.settings.write().unwrap_or_else(|e| e.into_inner());
        s.log = log;
        s.json = options.json;
        s.report_limit = options.report_limit;
        s.jit_debug = options.jit_debug;
        drop(s);
        if let Some(spec) = &options.watch {
            match self.enable_watch(spec.clone()) {
                WatchStatus::Unavailable { reason } => {
                    eprintln!("{}", WatchStatus::unavailable_line(&reason))
                }
                // `sample:K` without `@P`: the phase drawn, to repeat the run.
                status => {
                    if let Some(line) = status.phase_line() {
                        eprintln!("{line}");
                    }
                }
            }
        }
        if let Some(mb) = options.quarantine_mb {
            lock(&self.heap).set_quarantine_mb(mb);
        }
        Ok(())
    }

    /// Closes the log file (`log_path`) at the end of a run that goes on
    /// to exit: a log the runtime created and nothing was written to is
    /// removed (it is created only when something is reported). Reports
    /// written after this go to stderr.
    pub fn close_log(&self) {
        self.trap.set_output(None, self.trap.output().1);
        let log = self
            .settings
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .log
            .take();
        drop(log);
    }

    /// What the JIT publishes about code compiled against this runtime for
    /// profilers and debuggers (`perfmap`, `jitdump`, `gdb` of
    /// [`Options`]; all off by default).
    pub fn jit_debug(&self) -> JitDebug {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .jit_debug
    }

    /// Sets [`Runtime::jit_debug`] (what [`Runtime::configure`] sets from
    /// `options.jit_debug`); it applies to modules compiled afterwards.
    pub fn set_jit_debug(&self, d: JitDebug) {
        self.settings
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .jit_debug = d;
    }

    /// Installs a handler called on each violation (see [`ReportHandler`]).
    ///
    /// ```
    /// use guardlift_runtime::{Mode, Report, Runtime, RuntimeConfig, SiteInfo};
    /// // What generated code and the model heap do (not the embedder API):
    /// use guardlift_runtime::internals::{ObjectBuiltins, RuntimeInternals};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let rt = Runtime::new(RuntimeConfig { mode: Mode::Recover, ..Default::default() });
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// rt.set_report_handler(Some(Arc::new(move |r: &Report| {
    ///     s.lock().unwrap().push(r.kind.name()); // record; never free objects here
    /// })));
    /// // A site, as a compiled module registers its own.
    /// let info = SiteInfo { function: "get".into(), line: 3, col: 5, op: "load_attr".into() };
    /// let base = rt.register_sites([(0, info)].into()).unwrap();
    /// let obj = rt.obj_new(1);
    /// rt.obj_free(obj);
    /// // What instrumented code's lifetime check does at that site:
    /// assert!(rt.check_live(obj, base).is_err());
    /// assert_eq!(*seen.lock().unwrap(), ["use_after_free"]);
    /// ```
    pub fn set_report_handler(&self, handler: Option<ReportHandler>) {
        self.settings
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .handler = handler;
    }

    fn site_info(&self, site: u32) -> SiteInfo {
        let t = self.sites.read().unwrap_or_else(|e| e.into_inner());
        t.get(site).cloned().unwrap_or(SiteInfo {
            function: "?".into(),
            line: 0,
            col: 0,
            op: "?".into(),
        })
    }

    fn note(&self, r: ObjectRecord) -> ObjectNote {
        ObjectNote {
            id: r.id,
            alloc_site: r.alloc_site.map(|s| self.site_info(s)),
            free_site: r.free_site.map(|s| self.site_info(s)),
            freed: r.freed,
            stacks: r.stacks,
            site_ids: [r.alloc_site, r.free_site],
        }
    }

    /// Writes and removes every pending report (see [`Runtime::write_reports`]).
    pub fn flush_reports(&self) {
        let reports = self.take_reports();
        self.write_reports(&reports);
    }

    /// Takes the recorded reports; asking again finds none until new ones come.
    pub fn take_reports(&self) -> Vec<Report> {
        self.drain_watch();
        lock(&self.sink).take()
    }

    /// Runs `f` on the recorded reports if the sink is not locked right
    /// now (never blocks, never allocates: the fault handler's way in).
    pub(crate) fn try_with_reports<R>(&self, f: impl FnOnce(&[Report]) -> R) -> Option<R> {
        let g = match self.sink.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(f(g.reports()))
    }

    /// Runs `f` on the captured `print_*` output without waiting for its
    /// lock (`None` when it is held): what a signal handler can read.
    pub(crate) fn try_with_output<R>(&self, f: impl FnOnce(&str) -> R) -> Option<R> {
        let g = match self.output.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(f(&g))
    }

    /// A copy of the recorded reports, leaving them in place.
    pub fn peek_reports(&self) -> Vec<Report> {
        self.drain_watch();
        lock(&self.sink).reports().to_vec()
    }

    /// The result of a host function of the model heap called about `obj`
    /// (0: none): on a fault, what the host sees instead (`T::default()`),
    /// the fault recorded (the first one). A real interpreter would crash
    /// here: when host faults are fatal ([`Runtime::set_host_faults_fatal`])
    /// and compiled code on this thread called, the fault is reported at that IR call
    /// as `host_fault` (with the reports recorded before) and the process
    /// aborts (spec §6.2); the interpreter stops at the call instead
    /// ([`Runtime::host_fault_ends_run`]).
    pub(crate) fn host<T: Default>(&self, r: Result<T, HostFault>, obj: u64) -> T {
        let e = match r {
            Ok(v) => return v,
            Err(e) => e,
        };
        let object = (obj != 0).then(|| (obj, self.object_record(obj).map(|r| self.note(r))));
        let fault = crate::fault::HostCallFault { fault: e, object };
        if self.host_faults_fatal.load(Ordering::Relaxed) {
            crate::fault::host_call_fault(self, &fault);
        }
        let mut f = lock(&self.fault);
        if f.is_none() {
            *f = Some(fault);
            self.faulted.store(true, Ordering::SeqCst);
        }
        T::default()
    }

    // ---- host objects (the embedding API) ----

    /// The host made an object at `obj` (laid out as this runtime's layout
    /// says, spec §4): returns its allocation id. The caller's native stack
    /// is recorded as the object's allocation stack ([`crate::host_stack`]).
    ///
    /// ```
    /// use guardlift_runtime::{Runtime, RuntimeConfig};
    ///
    /// let rt = Runtime::new(RuntimeConfig::default());
    /// // A host object of the default layout (cpython312: the managed-dict
    /// // word 24 bytes before the object), with no values and no dict yet.
    /// let mem = vec![0u64; 8];
    /// let obj = mem.as_ptr() as u64 + 32;
    /// let id = rt.register_object(obj)?;
    /// assert!(id >= 1);
    /// rt.object_freed(obj)?; // as the host's tp_dealloc would say
    /// assert!(rt.object_freed(obj).is_err(), "freed twice: an error, not a crash");
    /// # Ok::<(), guardlift_runtime::HostObjectError>(())
    /// ```
    #[inline(never)]
    pub fn register_object(&self, obj: u64) -> Result<u64, HostObjectError> {
        self.register_object_from(obj, HostCaller::here())
    }

    /// [`Runtime::register_object`] for an entry point of its own (the C
    /// API): `caller` ([`HostCaller::here`] in that entry point) tells
    /// where the host's frames begin.
    pub fn register_object_from(
        &self,
        obj: u64,
        caller: HostCaller,
    ) -> Result<u64, HostObjectError> {
        let stack = self.capture_host_stack(caller);
        let id = lock(&self.heap).register_host_object_at(obj, stack)?;
        self.object_created(obj, true);
        Ok(id)
    }

    /// The host freed the object at `obj` (as a `tp_dealloc` hook would
    /// say): it is never watched again, and instrumented code using it is
    /// a `use_after_free` until the host registers a new object there.
    /// The caller's native stack is recorded as its free stack.
    #[inline(never)]
    pub fn object_freed(&self, obj: u64) -> Result<(), HostObjectError> {
        self.object_freed_from(obj, HostCaller::here())
    }

    /// [`Runtime::object_freed`] for an entry point of its own (as
    /// [`Runtime::register_object_from`]).
    pub fn object_freed_from(&self, obj: u64, caller: HostCaller) -> Result<(), HostObjectError> {
        if self.object_record(obj).is_some_and(|r| !r.freed) {
            self.object_going(obj);
        }
        let stack = self.capture_host_stack(caller);
        let r = lock(&self.heap).host_object_freed_at(obj, stack);
        if r.is_ok() {
            self.unwatch_epoch.fetch_add(1, Ordering::SeqCst);
            self.values_epoch.fetch_add(1, Ordering::SeqCst);
        }
        r
    }

    /// Records host objects' allocation and free stacks from now on
    /// (`host_stacks=1`) or not (the default: capture costs microseconds
    /// per registration, [`crate::host_stack`]).
    pub fn set_host_stacks(&self, on: bool) {
        self.host_stacks.store(on, Ordering::Relaxed);
    }

    fn capture_host_stack(&self, caller: HostCaller) -> Option<Arc<HostStack>> {
        if self.host_stacks.load(Ordering::Relaxed) {
            HostStack::capture(caller)
        } else {
            None
        }
    }

    /// What the runtime knows of the object at `obj` (live or in quarantine).
    pub fn object_record(&self, obj: u64) -> Option<ObjectRecord> {
        lock(&self.heap).object_record(obj)
    }

    /// Binds the host's own attribute slow paths for every object, once,
    /// before any module is live ([`crate::slow_path`]). Under the sites
    /// lock: a compile registers its sites before it reads
    /// [`Runtime::attr_slow_paths_bound`].
    pub fn bind_attr_slow_paths(&self, paths: SlowPaths) -> Result<(), BindError> {
        let sites = self.sites.write().unwrap_or_else(|e| e.into_inner());
        if sites.modules() > 0 {
            return Err(BindError::ModulesLive(sites.modules()));
        }
        self.slow_paths
            .set(paths)
            .map_err(|_| BindError::AlreadyBound)
    }

    /// Captured `print_*` output (taken).
    pub fn take_output(&self) -> String {
        std::mem::take(&mut lock(&self.output))
    }

    // ---- watchpoints (spec §6.1, `crate::watch`) ----

    /// Starts hardware watchpoints on the dict words of the objects `spec`
    /// picks, from now on. Say it before the objects are created; the
    /// status says why not when watchpoints cannot be had (the run goes on).
    pub fn enable_watch(&self, spec: WatchSpec) -> WatchStatus {
        watch::start(self.watch_owner(), spec, self.layout)
    }

    /// The watch session's status and counts (`None`: not enabled).
    pub fn watch_status(&self) -> Option<WatchStatus> {
        watch::status(self.watch_owner())
    }

    pub(crate) fn watch_owner(&self) -> usize {
        self as *const Runtime as usize
    }

    // ---- instrumentation entry points ----
}

impl RuntimeInternals for Runtime {
    fn aborts_process(&self) -> bool {
        self.abort_process
    }

    fn trap_scratch(&self) -> &TrapScratch {
        &self.trap
    }

    fn set_fatal_ending(&self, ending: crate::fault::FatalEnding) {
        if let Some(members) = ending.stdout_json_members {
            let _ = self.stdout_json_members.set(members);
        }
        *lock(&self.abort_hook) = ending.on_abort;
    }

    fn register_sites(&self, sites: ModuleSites) -> Result<u32, SiteSpaceFull> {
        self.sites
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register(sites)
    }

    fn unregister_sites(&self, base: u32) {
        self.sites
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .unregister(base)
    }

    fn site_count(&self) -> usize {
        self.sites.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn report(&self, kind: ReportKind, site: u32, observed: Observed) -> Verdict {
        // A watched writer is reported before what its write caused.
        self.drain_watch();
        let info = self.site_info(site);
        let (last_write, record) = {
            let heap = lock(&self.heap);
            let last_write = match observed {
                Observed::Dict { object, .. } if crate::report::observes_the_slot(&info.op) => {
                    heap.last_write(self.layout.slot_addr(object))
                }
                _ => None,
            };
            let freed_mem = match observed {
                Observed::Lifetime { address, width, .. } if width > 0 => {
                    heap.freed_memory_record(address, width as u64)
                }
                _ => None,
            };
            let obj = match observed {
                Observed::Clobber { address, width, .. } => heap.watched_owner(address, width),
                Observed::Overflow { address, width, .. } => heap
                    .redzone_owner(address, width as u64)
                    .filter(|&o| o != 0),
                o => o.object(),
            };
            let record = freed_mem.or_else(|| obj.and_then(|o| heap.object_record(o)));
            (last_write, record)
        };
        let object = record.map(|r| self.note(r));
        let (handler, limit) = {
            let s = self.settings.read().unwrap_or_else(|e| e.into_inner());
            (s.handler.clone(), s.report_limit)
        };
        let snapshot = {
            let mut sink = lock(&self.sink);
            let (count, r) = sink.record(kind, site, &info, observed, last_write, object);
            (handler.is_some() && (limit == 0 || count <= limit)).then(|| {
                let mut r = r.clone();
                // The occurrence being handled, with its own observation.
                r.observed = observed;
                r
            })
        };
        match (handler, snapshot) {
            (Some(h), Some(r)) => h(&r),
            (None, _) => self.unhandled.store(true, Ordering::Relaxed),
            _ => {}
        }
        match self.mode {
            Mode::Recover => Verdict::Recover,
            Mode::Abort | Mode::Trap => {
                if self.abort_process {
                    self.die()
                }
                Verdict::Abort
            }
        }
    }

    fn die(&self) -> ! {
        if !crate::output::claim_final_report() {
            crate::output::wait_for_exit()
        }
        if let Some(h) = lock(&self.abort_hook).as_ref() {
            h(self)
        }
        self.flush_reports();
        let _ = std::io::stdout().flush();
        std::process::abort()
    }

    fn write_reports(&self, reports: &[Report]) {
        if reports.is_empty() {
            return;
        }
        let (log, json) = {
            let s = self.settings.read().unwrap_or_else(|e| e.into_inner());
            (s.log.clone(), s.json)
        };
        let mut text = String::new();
        for r in reports {
            if json {
                text.push_str(&r.to_json().to_string());
                text.push('\n');
            } else {
                text.push_str(&r.to_human());
            }
        }
        crate::output::write_report_text(log.as_deref(), text.as_bytes());
    }

    fn write_log_text(&self, text: &str) {
        let log = self
            .settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .log
            .clone();
        crate::output::write_report_text(log.as_deref(), text.as_bytes());
    }

    fn note_slot_write(&self, site: u32, obj: u64, word: u64) {
        self.object_used(obj);
        let info = self.site_info(site);
        let by = format!(
            "{} at @{} {}:{} (site {site})",
            info.op, info.function, info.line, info.col
        );
        lock(&self.heap).note_write(obj, &by, Some(site), word);
    }

    fn take_host_fault(&self) -> Option<HostFault> {
        self.take_host_call_fault().map(|f| f.fault)
    }

    fn take_host_call_fault(&self) -> Option<crate::fault::HostCallFault> {
        self.faulted.store(false, Ordering::SeqCst);
        lock(&self.fault).take()
    }

    #[inline]
    fn host_fault_ends_run(&self) -> bool {
        self.faulted.load(Ordering::Relaxed) && self.host_faults_fatal.load(Ordering::Relaxed)
    }

    fn set_host_faults_fatal(&self, fatal: bool) {
        self.host_faults_fatal.store(fatal, Ordering::SeqCst);
    }

    fn with_heap<R>(&self, f: impl FnOnce(&mut Heap) -> R) -> R {
        f(&mut lock(&self.heap))
    }

    fn try_reports<R>(&self, f: impl FnOnce(&[Report]) -> R) -> Option<R> {
        self.try_with_reports(f)
    }

    fn unwatch_epoch(&self) -> u64 {
        self.unwatch_epoch.load(Ordering::SeqCst)
    }

    fn attr_fixed_calls(&self) -> u64 {
        self.attr_fixed_calls.load(Ordering::Relaxed)
    }

    fn shadow_watch_id(&self) -> u8 {
        lock(&self.heap).watch_id()
    }

    fn fault_clear_lsb(&self, obj: u64) {
        let r = lock(&self.heap).fault_clear_lsb(obj);
        self.host(r, obj)
    }

    fn attr_slow_paths_bound(&self) -> bool {
        self.slow_paths.get().is_some()
    }

    fn load_attr_slow(&self, obj: u64, i: u32) -> i64 {
        self.object_used(obj);
        if let Some(p) = self.slow_paths.get() {
            return p.load_attr(obj, i);
        }
        let r = lock(&self.heap).load_attr_slow(obj, i);
        self.host(r, obj)
    }

    fn store_attr_slow(&self, obj: u64, i: u32, v: i64) {
        self.object_used(obj);
        if let Some(p) = self.slow_paths.get() {
            return p.store_attr(obj, i, v);
        }
        let r = lock(&self.heap).store_attr_slow(obj, i, v);
        self.host(r, obj)
    }

    fn print_line(&self, line: &str) {
        if self.capture_output {
            let mut o = lock(&self.output);
            o.push_str(line);
            o.push('\n');
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
        }
    }

    fn print_i64(&self, v: i64) {
        self.print_line(&v.to_string())
    }

    fn print_f64(&self, v: f64) {
        self.print_line(&format_f64(v))
    }

    fn drain_watch(&self) {
        let writes = crate::report::foreign_writes();
        if writes.is_empty() {
            return;
        }
        let (handler, limit) = {
            let s = self.settings.read().unwrap_or_else(|e| e.into_inner());
            (s.handler.clone(), s.report_limit)
        };
        // The objects written, by the allocation id captured when the write
        // trapped (the address may hold another object by now), looked up
        // before the sink is locked.
        let notes: Vec<Option<ObjectNote>> = writes
            .iter()
            .map(|(_, observed)| {
                let Observed::Write { object, writer, .. } = *observed else {
                    return None;
                };
                let id = writer.get()?.object_id;
                let heap = lock(&self.heap);
                let r = heap
                    .object_record(object)
                    .filter(|r| r.id == id)
                    .or_else(|| heap.object_record_by_id(id).map(|(_, r)| r));
                drop(heap);
                Some(match r {
                    Some(r) => self.note(r),
                    // Out of quarantine: only its id is known.
                    None => ObjectNote {
                        id,
                        alloc_site: None,
                        free_site: None,
                        freed: true,
                        stacks: Default::default(),
                        site_ids: [None; 2],
                    },
                })
            })
            .collect();
        let mut handled = Vec::new();
        {
            let mut sink = lock(&self.sink);
            for ((info, observed), note) in writes.into_iter().zip(notes) {
                let (count, r) = sink.record(
                    ReportKind::ForeignWrite,
                    NO_SITE,
                    &info,
                    observed,
                    None,
                    note,
                );
                if handler.is_some() && (limit == 0 || count <= limit) {
                    let mut r = r.clone();
                    r.observed = observed;
                    handled.push(r);
                }
            }
        }
        match handler {
            Some(h) => handled.iter().for_each(|r| h(r)),
            None => self.unhandled.store(true, Ordering::Relaxed),
        }
    }

    fn watch(&self, obj: u64) {
        self.object_used(obj);
        lock(&self.heap).watch(obj)
    }

    fn clobber_overlaps(&self, addr: u64, width: u32) -> bool {
        lock(&self.heap).overlaps_watched(addr, width)
    }

    fn clobber_check(&self, site: u32, addr: u64, width: u32, value: u64) -> bool {
        if !lock(&self.heap).overlaps_watched(addr, width) {
            return false;
        }
        self.report(
            ReportKind::SlotClobber,
            site,
            Observed::Clobber {
                address: addr,
                width,
                value,
            },
        );
        true
    }
}

impl Drop for Runtime {
    /// Pending reports are flushed to stderr, unless a report handler had
    /// each when it was recorded; never panics.
    fn drop(&mut self) {
        self.drain_watch();
        watch::stop(self.watch_owner());
        let pending = !lock(&self.sink).is_empty();
        if pending && self.unhandled.load(Ordering::Relaxed) {
            self.flush_reports();
        }
    }
}

/// Unregisters a module's sites from its runtime when dropped (for an
/// owner that has nothing else to do on drop).
pub struct SiteRegistration {
    rt: Arc<Runtime>,
    base: u32,
}

impl SiteRegistration {
    /// Takes over the registration at `base` (from [`Runtime::register_sites`]).
    pub fn new(rt: Arc<Runtime>, base: u32) -> Self {
        SiteRegistration { rt, base }
    }
    /// The module's base site id.
    pub fn base(&self) -> u32 {
        self.base
    }
}

impl Drop for SiteRegistration {
    fn drop(&mut self) {
        self.rt.unregister_sites(self.base);
    }
}

pub(crate) fn lifetime_at(object: u64, address: u64, width: u32) -> Observed {
    Observed::Lifetime {
        object,
        address,
        width,
    }
}

pub use guardlift_abi::{format_f32, format_f64};
