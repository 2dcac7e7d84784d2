//! Trap mode (spec §6): "the check is a trapping instruction; a signal
//! handler maps the PC back to the site, reports, aborts".
//!
//! # How generated code traps
//!
//! A guard's inline check and conditional branch are the same in every mode.
//! In trap mode the cold block does not call the runtime: it writes the
//! site's token ([`TrapScratch::token`]: site + 1) to the runtime's
//! [`TrapScratch`] `owner`, fences, stores what the check observed into
//! `values`, publishes `ready = token` (a sequentially consistent store),
//! and executes a trap instruction (`ud2`
//! on x86_64, `udf` on aarch64: SIGILL) whose Cranelift user trap code is
//! the report kind's ([`ReportKind::trap_code`]). No call and no
//! read-modify-write: the cold path puts no constraint on the registers of
//! the hot path (a call there would make values live across it spill, and
//! an atomic compare-and-swap is a loop with fixed registers on aarch64
//! without LSE). What lands in `values`:
//!
//! | kind | `values[0]` | `values[1]` | `values[2]` |
//! |---|---|---|---|
//! | `dict_slot_tag` | object | managed-dict word | 0 |
//! | `adstack_overflow` / `adstack_underflow` | capacity | len | 0 |
//! | `slot_clobber` | address | width | value |
//!
//! The scratch area is the first field of the `#[repr(C)]` [`Runtime`], so
//! its address is the runtime pointer generated code already embeds
//! ([`crate::runtime::TRAP_SCRATCH_OFFSET`] = 0).
//!
//! # How the PC finds its site
//!
//! The JIT reads each compiled function's trap records (offset, code) before
//! the compilation context is cleared, maps each trap with one of our codes
//! to its guard site, and after finalization registers
//! `(absolute pc, site, kind, SiteInfo)` here ([`Runtime::register_trap_sites`]).
//! The registry is a process-global, immutable, sorted snapshot (a
//! [`crate::sigtable::SigTable`]); the signal handler binary-searches it
//! without locks or allocation. Writers (registration, and
//! [`TrapRegistration`]'s drop when the compiled module is freed) swap in a
//! new snapshot and free the old one once no handler can be reading it. A handler copies
//! what it needs (a reference to the site's names, which it never drops:
//! it ends the process) and leaves the reader section before it reports.
//!
//! # The handler
//!
//! Installed once (`sigaction`, `SA_SIGINFO | SA_ONSTACK`) for SIGILL and
//! SIGTRAP the first time trap sites are registered. It reads the PC from
//! the `ucontext` (x86_64: `gregs[REG_RIP]`, aarch64: `pc`). Not ours: it
//! chains to the handler that was installed before (calls its
//! `sa_sigaction`/`sa_handler`; for `SIG_DFL`, restores the default and
//! re-raises, so the process dies of the original signal as it would have
//! without guardlift; an ignored SIGTRAP stays ignored). Ours: it takes
//! the values from the scratch area if they are this site's, formats the
//! same report as the other modes (human, or a JSON line when `json=1`)
//! with `core::fmt` straight to the log through a 512-byte stack buffer
//! (so names of any length print whole), `write(2)`s it to the runtime's
//! log (stderr by default; stderr with a note when the log cannot be
//! written, [`crate::output::write_fd_or_stderr`]) and calls `abort()` (exit status 134). Only
//! async-signal-safe calls are made: `write`, `nanosleep`, `pause`,
//! `sigaction`, `raise`, `abort`.
//!
//! The handler takes the values only if `ready` and `owner` both hold its
//! site's token, and still do 1 ms later (the handler runs on the trapping
//! thread, which wrote them just before the trap; a thread of another site
//! caught mid-write would have changed a tag by then). When several
//! threads trap at once, they share the area: a thread whose values were
//! overwritten leaves the report to the thread that overwrote them (which
//! traps right after) and waits in `pause()` for the abort; one report is
//! printed (the first handler to claim the process-wide final report
//! latch, [`crate::output::claim_final_report`], with valid values). If no thread reports within 200 ms, a handler reports
//! its own site without values rather than show another site's. (Two
//! threads trapping at the same site at the same moment share a token: the
//! values shown are then one of theirs, both real violations of that site.)
//!
//! Not available in trap mode (the handler may not lock): the last known
//! write to the slot, the report handler callback, the abort hook (so
//! `guardlift run --json` prints no JSON object on stdout when it traps).

use crate::report::{HumanReport, Observed, ReportKind, SiteInfo, TrapNote};
use crate::runtime::Runtime;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// How many observed values a trap leaves in [`TrapScratch::values`].
pub const TRAP_VALUE_COUNT: usize = 3;

/// The per-runtime area where a trapping guard leaves what it observed.
/// Generated code writes it at fixed offsets ([`TRAP_OWNER_OFFSET`],
/// [`TRAP_VALUES_OFFSET`], [`TRAP_READY_OFFSET`]) from the runtime pointer.
#[repr(C)]
#[derive(Debug)]
pub struct TrapScratch {
    /// The token of the site whose trap is writing (0: never used).
    pub owner: AtomicU64,
    /// The observed values (see the module docs for each kind).
    pub values: [AtomicU64; TRAP_VALUE_COUNT],
    /// The same token, stored once `values` are written.
    pub ready: AtomicU64,
    /// Where the handler writes reports: an fd, or -1 for stderr.
    log_fd: AtomicI32,
    /// Write reports as JSON lines.
    json: AtomicBool,
}

/// Offset of [`TrapScratch::owner`] in the scratch area.
pub const TRAP_OWNER_OFFSET: i32 = std::mem::offset_of!(TrapScratch, owner) as i32;
/// Offset of [`TrapScratch::values`]`[0]` (the others follow, 8 bytes apart).
pub const TRAP_VALUES_OFFSET: i32 = std::mem::offset_of!(TrapScratch, values) as i32;
/// Offset of [`TrapScratch::ready`].
pub const TRAP_READY_OFFSET: i32 = std::mem::offset_of!(TrapScratch, ready) as i32;

const _: () = assert!(TRAP_OWNER_OFFSET == 0);
const _: () = assert!(TRAP_VALUES_OFFSET == 8);
const _: () = assert!(TRAP_READY_OFFSET == 32);

impl TrapScratch {
    pub(crate) const fn new() -> Self {
        TrapScratch {
            owner: AtomicU64::new(0),
            values: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            ready: AtomicU64::new(0),
            log_fd: AtomicI32::new(-1),
            json: AtomicBool::new(false),
        }
    }

    /// The tag a site's trap writes to `owner` and `ready` (never 0).
    pub const fn token(site: u32) -> u64 {
        site as u64 + 1
    }

    /// Where the signal handlers write: (fd or -1 for stderr, JSON lines?).
    pub(crate) fn output(&self) -> (i32, bool) {
        (self.log_fd.load(SeqCst), self.json.load(SeqCst))
    }

    /// Where the handler writes: `fd` (or stderr when `None`), human or JSON.
    pub(crate) fn set_output(&self, fd: Option<i32>, json: bool) {
        self.log_fd.store(fd.unwrap_or(-1), SeqCst);
        self.json.store(json, SeqCst);
    }
}

/// The observation a kind's trap stored as `values`.
pub fn decode_observed(kind: ReportKind, values: [u64; 3]) -> Observed {
    match kind {
        ReportKind::DictSlotTag => Observed::Dict {
            object: values[0],
            value: values[1],
        },
        ReportKind::AdstackOverflow | ReportKind::AdstackUnderflow => Observed::Adstack {
            capacity: values[0],
            len: values[1],
        },
        ReportKind::SlotClobber => Observed::Clobber {
            address: values[0],
            width: values[1] as u32,
            value: values[2],
        },
        // Not a trap kind (watchpoints report through the sink).
        ReportKind::ForeignWrite => Observed::Write {
            object: values[0],
            old: values[1],
            new: values[2],
            width: 0,
            writer: crate::watch::WriterId::NONE,
        },
        ReportKind::UseAfterFree | ReportKind::DoubleFree | ReportKind::InvalidFree => {
            Observed::Lifetime {
                object: values[0],
                address: values[1],
                width: values[2] as u32,
            }
        }
        ReportKind::AttrOutOfBounds => Observed::Bounds {
            object: values[0],
            index: values[1],
            capacity: values[2],
        },
    }
}

/// One trap instruction of compiled code and the guard it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrapSite {
    /// Absolute address of the trap instruction.
    pub pc: usize,
    /// Runtime-global site id.
    pub site: u32,
    pub kind: ReportKind,
    /// Snapshot of the site's function, line, column and opcode.
    pub info: SiteInfo,
}

/// Keeps trap sites registered; dropping it removes them (do that before
/// the code is unmapped). Holds the runtime whose scratch area the
/// entries point to.
pub struct TrapRegistration {
    id: u64,
    sites: usize,
    _rt: Arc<Runtime>,
}

impl std::fmt::Debug for TrapRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrapRegistration")
            .field("id", &self.id)
            .field("sites", &self.sites)
            .finish()
    }
}

impl TrapRegistration {
    /// How many trap sites this registration holds.
    pub fn len(&self) -> usize {
        self.sites
    }
    pub fn is_empty(&self) -> bool {
        self.sites == 0
    }
}

impl Drop for TrapRegistration {
    fn drop(&mut self) {
        let id = self.id;
        imp::update(|v| v.retain(|e| e.reg != id));
    }
}

/// Is trap mode available on this platform (a handler that can read the PC)?
pub const fn supported() -> bool {
    imp::SUPPORTED
}

/// The PCs registered right now (for tests and diagnostics).
pub fn registered_pcs() -> Vec<usize> {
    imp::snapshot_pcs()
}

impl Runtime {
    /// Registers trap instructions of compiled code (see the module docs),
    /// installing the signal handler the first time. The entries point to
    /// this runtime's scratch area; the registration keeps the runtime
    /// alive. Errors when trap mode is not supported here or `sigaction`
    /// fails.
    pub fn register_trap_sites(
        self: &Arc<Self>,
        sites: Vec<TrapSite>,
    ) -> std::io::Result<TrapRegistration> {
        imp::install()?;
        // The handler runs on the alternate stack of the thread that traps.
        crate::sigstack::ensure_current_thread()?;
        let scratch = self.trap_scratch() as *const TrapScratch;
        let n = sites.len();
        let id = imp::next_id();
        let entries: Vec<imp::Entry> = sites
            .into_iter()
            .map(|s| imp::Entry {
                pc: s.pc,
                site: s.site,
                kind: s.kind,
                scratch,
                info: Arc::new(s.info),
                reg: id,
            })
            .collect();
        imp::update(move |v| v.extend(entries));
        Ok(TrapRegistration {
            id,
            sites: n,
            _rt: self.clone(),
        })
    }
}

/// A JSON string literal, escaped, written without allocating.
pub(crate) struct JsonStr<'a>(pub(crate) &'a str);

impl std::fmt::Display for JsonStr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

/// The JSON line of a trap-mode report (the keys of `Report::to_json`,
/// plus `trap_signal` and `trap_pc`).
pub(crate) struct JsonReport<'a>(pub(crate) &'a HumanReport<'a>);

impl std::fmt::Display for JsonReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.0;
        write!(
            f,
            "{{\"kind\":\"{}\",\"site\":{},\"function\":{},\"line\":{},\"col\":{},\"op\":{},\"count\":{}",
            r.kind.name(),
            r.site,
            JsonStr(r.function),
            r.line,
            r.col,
            JsonStr(r.op),
            r.count
        )?;
        match r.observed {
            Some(Observed::Dict { object, value }) => write!(
                f,
                ",\"object\":\"{object:#x}\",\"value\":\"{value:#x}\",\"value_low_bits\":\"0b{:03b}\"",
                value & crate::layout::TAG_MASK
            )?,
            Some(Observed::Adstack { capacity, len }) => {
                write!(f, ",\"capacity\":{capacity},\"len\":{len}")?
            }
            Some(Observed::Clobber {
                address,
                width,
                value,
            }) => write!(
                f,
                ",\"address\":\"{address:#x}\",\"width\":{width},\"value\":\"{value:#x}\""
            )?,
            Some(Observed::Lifetime {
                object,
                address,
                width,
            }) => {
                write!(f, ",\"object\":\"{object:#x}\"")?;
                if width > 0 {
                    write!(f, ",\"address\":\"{address:#x}\",\"width\":{width}")?;
                }
            }
            Some(Observed::Bounds {
                object,
                index,
                capacity,
            }) => write!(
                f,
                ",\"object\":\"{object:#x}\",\"index\":{index},\"capacity\":{capacity}"
            )?,
            Some(Observed::Write { .. }) | None => {}
        }
        if let Some(t) = r.trap {
            write!(
                f,
                ",\"trap_signal\":\"{}\",\"trap_pc\":\"{:#x}\"",
                t.signal, t.pc
            )?;
        }
        f.write_str("}\n")
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(crate) mod imp {
    use super::*;
    use crate::sigtable::SigTable;
    use std::cell::UnsafeCell;
    use std::mem::MaybeUninit;
    use std::sync::Once;

    pub const SUPPORTED: bool = true;

    /// One registered trap instruction.
    #[derive(Clone)]
    pub struct Entry {
        pub pc: usize,
        pub site: u32,
        pub kind: ReportKind,
        pub scratch: *const TrapScratch,
        pub info: Arc<SiteInfo>,
        pub reg: u64,
    }

    // SAFETY: `scratch` points into a `Runtime` kept alive by the
    // registration that owns the entry; entries are only read through the
    // table (see `crate::sigtable`).
    unsafe impl Send for Entry {}
    unsafe impl Sync for Entry {}

    /// Every registered trap, sorted by pc.
    static TRAPS: SigTable<Entry> = SigTable::new();
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);

    pub fn next_id() -> u64 {
        NEXT_ID.fetch_add(1, SeqCst)
    }

    /// Replaces the table by `f(copy of it)` (see [`SigTable::update`]).
    pub fn update(f: impl FnOnce(&mut Vec<Entry>)) {
        TRAPS.update(|v| {
            f(v);
            v.sort_by_key(|e| e.pc);
        })
    }

    pub fn snapshot_pcs() -> Vec<usize> {
        TRAPS.read(|es| es.iter().map(|e| e.pc).collect())
    }

    /// What the handler needs of one entry. `info` is a new reference to
    /// the entry's names (an atomic increment, no allocation), never
    /// dropped: the handler ends in `abort()` or waits in `pause()`, so the
    /// names stay valid (and whole) while it prints them.
    struct Found {
        site: u32,
        kind: ReportKind,
        scratch: *const TrapScratch,
        info: std::mem::ManuallyDrop<Arc<SiteInfo>>,
    }

    /// Async-signal-safe lookup: no locks, no allocation.
    fn lookup(pc: usize) -> Option<Found> {
        TRAPS.read(|es| {
            es.binary_search_by_key(&pc, |e| e.pc).ok().map(|i| {
                let e = &es[i];
                Found {
                    site: e.site,
                    kind: e.kind,
                    scratch: e.scratch,
                    info: std::mem::ManuallyDrop::new(e.info.clone()),
                }
            })
        })
    }

    const SIGNALS: [libc::c_int; 2] = [libc::SIGILL, libc::SIGTRAP];

    /// The actions installed before ours, written once (inside `INSTALL`)
    /// before our handler is installed, read only by the handler.
    struct Prev(UnsafeCell<[MaybeUninit<libc::sigaction>; 2]>);
    // SAFETY: see above: written before any reader can exist.
    unsafe impl Sync for Prev {}
    static PREV: Prev = Prev(UnsafeCell::new([MaybeUninit::uninit(); 2]));
    static PREV_SET: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

    static INSTALL: Once = Once::new();
    /// errno of a failed installation (0: fine).
    static INSTALL_ERR: AtomicI32 = AtomicI32::new(0);

    pub fn install() -> std::io::Result<()> {
        INSTALL.call_once(|| {
            for (i, &sig) in SIGNALS.iter().enumerate() {
                // SAFETY: plain sigaction calls with valid, initialized structs.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                        INSTALL_ERR.store(errno(), SeqCst);
                        return;
                    }
                    (*PREV.0.get())[i] = MaybeUninit::new(old);
                    PREV_SET[i].store(true, SeqCst);
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = on_signal as *const () as usize;
                    sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut sa.sa_mask);
                    if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                        INSTALL_ERR.store(errno(), SeqCst);
                        return;
                    }
                }
            }
        });
        match INSTALL_ERR.load(SeqCst) {
            0 => Ok(()),
            e => Err(std::io::Error::from_raw_os_error(e)),
        }
    }

    pub(crate) fn errno() -> libc::c_int {
        // SAFETY: the thread's errno location is always valid.
        unsafe { *libc::__errno_location() }
    }

    /// The PC of the interrupted instruction.
    ///
    /// # Safety
    /// `uctx` is the `ucontext_t` the kernel passed to an SA_SIGINFO handler.
    pub(crate) unsafe fn context_pc(uctx: *mut libc::c_void) -> usize {
        let uc = uctx as *const libc::ucontext_t;
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: per the contract.
            unsafe { (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as usize }
        }
        #[cfg(target_arch = "aarch64")]
        {
            // SAFETY: per the contract.
            unsafe { (*uc).uc_mcontext.pc as usize }
        }
    }

    extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid context; errno is per thread.
        let saved_errno = errno();
        let pc = unsafe { context_pc(uctx) };
        match lookup(pc) {
            Some(f) => report_and_abort(sig, pc, &f),
            None => unsafe { chain(sig, info, uctx) },
        }
        // SAFETY: as in `errno`.
        unsafe { *libc::__errno_location() = saved_errno };
    }

    /// Hands a signal that is not ours to the action installed before ours.
    ///
    /// # Safety
    /// Called from the signal handler with its arguments.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
            return;
        };
        let prev = if PREV_SET[i].load(SeqCst) {
            // SAFETY: written before our handler was installed.
            Some(unsafe { (*PREV.0.get())[i].assume_init() })
        } else {
            None
        };
        // SAFETY: per this function's contract.
        unsafe { call_previous(prev, sig, info, uctx) }
    }

    /// Hands a signal to `prev`, the action installed before guardlift's:
    /// its handler, called as it asked to be; for `SIG_DFL` (or an ignored
    /// fatal signal), the default action is restored and the signal
    /// re-raised, so the process dies as it would have without guardlift;
    /// an ignored SIGTRAP stays ignored.
    ///
    /// # Safety
    /// Called from a signal handler with its arguments.
    pub(crate) unsafe fn call_previous(
        prev: Option<libc::sigaction>,
        sig: libc::c_int,
        info: *mut libc::siginfo_t,
        uctx: *mut libc::c_void,
    ) {
        let h = prev.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        if h == libc::SIG_IGN && sig == libc::SIGTRAP {
            return;
        }
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // Die of the original signal, as without guardlift: restore the
            // default action and re-raise (delivered when we return; a
            // faulting instruction would fault again anyway).
            // SAFETY: sigaction and raise are async-signal-safe.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
                libc::raise(sig);
            }
            return;
        }
        let p = prev.expect("a handler address implies a saved action");
        // SAFETY: the previous action's handler, called as it asked to be.
        unsafe {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(h);
                f(sig, info, uctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
                f(sig);
            }
        }
    }

    fn sleep_ms(ms: i64) {
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: ms * 1_000_000,
        };
        // SAFETY: nanosleep is async-signal-safe; `ts` is valid.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }

    /// Waits for the process to end (another thread is reporting).
    fn park() -> ! {
        crate::output::wait_for_exit()
    }

    /// The values in `scratch` if a trap with `token` wrote them.
    fn own_values(scratch: &TrapScratch, token: u64) -> Option<[u64; 3]> {
        let r1 = scratch.ready.load(SeqCst);
        let v = [
            scratch.values[0].load(SeqCst),
            scratch.values[1].load(SeqCst),
            scratch.values[2].load(SeqCst),
        ];
        let r2 = scratch.owner.load(SeqCst);
        (r1 == token && r2 == token).then_some(v)
    }

    fn report_and_abort(sig: libc::c_int, pc: usize, f: &Found) -> ! {
        // SAFETY: the registration keeps the runtime (and its scratch) alive.
        let scratch = unsafe { &*f.scratch };
        let token = TrapScratch::token(f.site);
        let mut observed = None;
        for _ in 0..200 {
            if let Some(v) = own_values(scratch, token) {
                // Still ours a moment later: no other thread was mid-write.
                sleep_ms(1);
                if own_values(scratch, token) == Some(v) {
                    observed = Some(decode_observed(f.kind, v));
                    break;
                }
                continue;
            }
            if scratch.owner.load(SeqCst) == 0 {
                // Nothing was ever stored: not a trap of our sequence.
                break;
            }
            // Another thread's trap overwrote our values; it reports.
            if crate::output::final_report_claimed() {
                park();
            }
            sleep_ms(1);
        }
        if !crate::output::claim_final_report() {
            park();
        }
        let report = HumanReport {
            kind: f.kind,
            site: f.site,
            function: &f.info.function,
            line: f.info.line,
            col: f.info.col,
            op: &f.info.op,
            observed,
            last_write: None,
            object: None,
            count: 1,
            trap: Some(TrapNote {
                signal: if sig == libc::SIGTRAP {
                    "SIGTRAP"
                } else {
                    "SIGILL"
                },
                pc: pc as u64,
            }),
            backtrace: &[],
        };
        // Streamed to the log in small chunks: names of any length print whole.
        let fd = scratch.log_fd.load(SeqCst);
        if scratch.json.load(SeqCst) {
            crate::output::write_display_fd_or_stderr(fd, &JsonReport(&report));
        } else {
            crate::output::write_display_fd_or_stderr(fd, &report);
        }
        // SAFETY: abort is async-signal-safe.
        unsafe { libc::abort() }
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    use super::*;

    pub const SUPPORTED: bool = false;

    pub struct Entry {
        pub pc: usize,
        pub site: u32,
        pub kind: ReportKind,
        pub scratch: *const TrapScratch,
        pub info: Arc<SiteInfo>,
        pub reg: u64,
    }

    pub fn next_id() -> u64 {
        0
    }
    pub fn update(_f: impl FnOnce(&mut Vec<Entry>)) {}
    pub fn snapshot_pcs() -> Vec<usize> {
        Vec::new()
    }
    pub fn install() -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "trap mode needs Linux on x86_64 or aarch64",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trap_codes_round_trip() {
        for k in [
            ReportKind::DictSlotTag,
            ReportKind::AdstackOverflow,
            ReportKind::AdstackUnderflow,
            ReportKind::SlotClobber,
        ] {
            assert!(
                k.trap_code() != 0 && k.trap_code() < 0xfb,
                "a Cranelift user code"
            );
            assert_eq!(ReportKind::from_trap_code(k.trap_code()), Some(k));
        }
        assert_eq!(ReportKind::from_trap_code(0), None);
        assert_eq!(ReportKind::from_trap_code(0xff), None);
    }

    /// The handler's path (streamed through [`crate::output::FdWriter`])
    /// writes exactly `Report::to_human`, names of any length whole.
    #[cfg(target_os = "linux")]
    #[test]
    fn streamed_report_is_the_human_report_whole() {
        for function in ["main".to_string(), format!("f{}", "x".repeat(3000))] {
            let r = crate::Report {
                kind: ReportKind::DictSlotTag,
                site: 3,
                info: SiteInfo {
                    function,
                    line: 27,
                    col: 5,
                    op: "store_attr".into(),
                },
                observed: Observed::Dict {
                    object: 0x1000,
                    value: 0x1236,
                },
                last_write: None,
                object: None,
                count: 1,
                backtrace: Vec::new(),
            };
            let mut fds = [0; 2];
            // SAFETY: a valid two-element array; we own both ends.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            crate::output::write_display_fd_or_stderr(fds[1], &r.human());
            let mut got = String::new();
            // SAFETY: we own the ends; the File takes the read end.
            unsafe {
                libc::close(fds[1]);
                use std::io::Read;
                use std::os::fd::FromRawFd;
                std::fs::File::from_raw_fd(fds[0])
                    .read_to_string(&mut got)
                    .unwrap();
            }
            assert_eq!(got, r.to_human());
            assert!(got.contains(&format!("at @{} 27:5", r.info.function)));
        }
    }

    #[test]
    fn json_line_parses() {
        let h = HumanReport {
            kind: ReportKind::SlotClobber,
            site: 1,
            function: "we\"ird",
            line: 2,
            col: 3,
            op: "store",
            observed: Some(Observed::Clobber {
                address: 0x10,
                width: 1,
                value: 0xfe,
            }),
            last_write: None,
            object: None,
            count: 1,
            trap: Some(TrapNote {
                signal: "SIGILL",
                pc: 0x1234,
            }),
            backtrace: &[],
        };
        let text = JsonReport(&h).to_string();
        let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(j["function"], "we\"ird");
        assert_eq!(j["width"], 1);
        assert_eq!(j["value"], "0xfe");
        assert_eq!(j["trap_pc"], "0x1234");
    }

    #[test]
    fn observed_values_decode_per_kind() {
        assert_eq!(
            decode_observed(ReportKind::SlotClobber, [8, 1, 0xfe]),
            Observed::Clobber {
                address: 8,
                width: 1,
                value: 0xfe
            }
        );
        assert_eq!(
            decode_observed(ReportKind::AdstackUnderflow, [4, 0, 9]),
            Observed::Adstack {
                capacity: 4,
                len: 0
            }
        );
    }
}
