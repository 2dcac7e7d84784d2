//! Watchpoints (spec §6.1, `--watch SPEC`): hardware write-breakpoints on
//! managed-dict words, so that a write from *any* code — host C, the
//! runtime, another thread — is caught at the writing instruction.
//!
//! This module owns the whole feature: the SPEC ([`WatchSpec`]), choosing
//! which objects to watch as the heap reports them ([`on_object_created`],
//! [`on_object_freed`]), the `perf_event_open` breakpoints, the `SIGTRAP`
//! handler, and turning a trapped write into a [`Writer`] (symbol, width,
//! backtrace) that the runtime records as a `foreign_write` report.
//!
//! # How a write is caught
//!
//! Each watched word gets one `PERF_TYPE_BREAKPOINT` / `HW_BREAKPOINT_W`
//! event of 8 bytes per thread of the process (every task in
//! `/proc/self/task`, opened with `inherit` + `inherit_thread`, so threads
//! created later inherit it), with `sigtrap` (a synchronous `SIGTRAP` on the
//! writing thread, `si_code == TRAP_PERF`, `si_perf_data` = our tag and the
//! hardware slot). At most [`MAX_SLOTS`] words are watched at once (x86's
//! DR0–DR3); freeing a watched object disarms its slot (and `recent` /
//! `sample:K` re-arm it on the next allocation they pick).
//!
//! # The handler
//!
//! Installed once, when the first session starts (never when `--watch` is
//! off: zero cost). A `SIGTRAP` that is not a perf trap with our tag is
//! chained to the action installed before ours (trap mode's handler in
//! `trap.rs` chains to us in turn when it installs after us). Ours: it reads
//! the new word, swaps it with the slot's last known word (the old one),
//! and counts the hit. A well-formed word written by guardlift's runtime
//! (announced with [`runtime_write`]) or by JIT code ([`register_code`]) is
//! a legitimate write: counted, nothing else. Anything else is recorded raw
//! in a fixed ring (PC, old/new word, the code bytes before the PC, the
//! return addresses, the interpreter's IR frames): only loads, stores and
//! `backtrace::trace_unsynchronized` (libgcc's unwinder walks the stack of
//! the writing thread, interrupted at a store, never inside the loader).
//! Symbolizing (the `backtrace` crate: gimli/addr2line) and decoding the
//! width (capstone) happen later, in [`drain`], which the runtime calls
//! before it records or hands out any report — so the writer is reported
//! before whatever the corrupted word does next.
//!
//! # IR sites
//!
//! The writer's IR site and IR frames come from two sources: the
//! interpreter publishes its IR frames around host calls and stores
//! ([`with_ir_frames`]), and JIT code is resolved by PC through
//! [`set_site_resolver`] (by default: the IR function of a registered code
//! range, `@fn +0xOFF`).

use crate::layout::{self, DictLayout};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

/// Most words watched at once (x86_64 has four debug address registers).
pub const MAX_SLOTS: usize = 4;

/// What to watch (spec §6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchSpec {
    /// `object:N[+M…]`: these allocation ids.
    Objects(Vec<u64>),
    /// `sample:K`: one allocation in K (ids 1, K+1, 2K+1, …).
    Sample(u64),
    /// `recent`: the most recently allocated objects.
    Recent,
}

/// A malformed `--watch` SPEC.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("watch spec `{spec}`: {msg} (expected object:N[+M...], sample:K or recent)")]
pub struct WatchSpecError {
    pub spec: String,
    pub msg: String,
}

impl WatchSpec {
    /// Parses `object:N[+M…]`, `sample:K` or `recent`.
    pub fn parse(text: &str) -> Result<WatchSpec, WatchSpecError> {
        let err = |msg: &str| WatchSpecError {
            spec: text.to_string(),
            msg: msg.to_string(),
        };
        let count = |s: &str| -> Result<u64, WatchSpecError> {
            match s.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(err(&format!("`{s}` is not a positive number"))),
            }
        };
        match text.trim().split_once(':') {
            None if text.trim() == "recent" => Ok(WatchSpec::Recent),
            Some(("object", ids)) => {
                let ids = ids.split('+').map(count).collect::<Result<Vec<_>, _>>()?;
                Ok(WatchSpec::Objects(ids))
            }
            Some(("sample", k)) => Ok(WatchSpec::Sample(count(k)?)),
            _ => Err(err("unknown form")),
        }
    }

    /// Does this spec pick allocation `id` when it is created?
    fn picks(&self, id: u64) -> bool {
        match self {
            WatchSpec::Objects(ids) => ids.contains(&id),
            WatchSpec::Sample(k) => (id - 1).is_multiple_of(*k),
            WatchSpec::Recent => true,
        }
    }
}

impl fmt::Display for WatchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchSpec::Objects(ids) => {
                f.write_str("object:")?;
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        f.write_str("+")?;
                    }
                    write!(f, "{id}")?;
                }
                Ok(())
            }
            WatchSpec::Sample(k) => write!(f, "sample:{k}"),
            WatchSpec::Recent => f.write_str("recent"),
        }
    }
}

/// Whether watchpoints are on, and what they saw (the `"watch"` JSON object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStatus {
    Active { spec: String, counts: WatchCounts },
    Unavailable { reason: String },
}

impl WatchStatus {
    /// `{"active": true, "spec", "armed", "hits", "legitimate", "foreign",
    /// "dropped"}` or `{"active": false, "reason"}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            WatchStatus::Active { spec, counts } => serde_json::json!({
                "active": true,
                "spec": spec,
                "armed": counts.armed,
                "not_armed": counts.not_armed,
                "hits": counts.hits,
                "legitimate": counts.legitimate,
                "foreign": counts.foreign,
                "dropped": counts.dropped,
            }),
            WatchStatus::Unavailable { reason } => {
                serde_json::json!({"active": false, "reason": reason})
            }
        }
    }

    /// The stderr line of an unavailable session.
    pub fn unavailable_line(reason: &str) -> String {
        format!("guardlift: watchpoints unavailable: {reason}")
    }
}

/// Counters of a session.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// Objects that were armed (over the whole run).
    pub armed: u64,
    /// Objects the spec picked that could not be armed (all slots busy).
    pub not_armed: u64,
    /// Trapped writes.
    pub hits: u64,
    /// Well-formed writes by guardlift's runtime or JIT code (counted only).
    pub legitimate: u64,
    /// Writes recorded for a `foreign_write` report.
    pub foreign: u64,
    /// Foreign writes lost because the ring was full.
    pub dropped: u64,
}

/// An IR position: the writer's site, or one IR frame of a backtrace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IrSite {
    pub function: String,
    /// 0 when only the function is known (see [`set_site_resolver`]).
    pub line: u32,
    pub col: u32,
    pub op: String,
    /// Offset of the PC in the function's code when `line` is 0.
    pub offset: u64,
}

impl fmt::Display for IrSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "@{} +{:#x}", self.function, self.offset)
        } else {
            write!(f, "@{} {}:{}", self.function, self.line, self.col)
        }
    }
}

/// Maps a PC inside JIT code to its IR site. The default names the IR
/// function of the code range ([`register_code`]) with the offset; the
/// fault-reporting PC map replaces it (one call at startup).
pub type SiteResolver = fn(pc: u64) -> Option<IrSite>;

/// Who wrote a watched word, as the `foreign_write` report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// Allocation id of the watched object.
    pub object_id: u64,
    /// `symbol+0xOFF` of the writing instruction (`?` if unknown).
    pub symbol: String,
    pub pc: u64,
    /// The IR site when the writer is IR code (JIT code, or the interpreter
    /// executing a store).
    pub site: Option<IrSite>,
    /// The innermost IR frame below the writer (the IR call that entered
    /// the host code that wrote), if any.
    pub ir_caller: Option<IrSite>,
    /// Bytes the writing instruction stored (0: could not decode).
    pub width: u32,
    /// Innermost first; IR frames as `@fn L:C`.
    pub backtrace: Vec<String>,
}

// ---------------------------------------------------------------------------
// What the rest of guardlift tells this module.

/// Is a session running? One relaxed load: the only cost when `--watch` is off.
#[inline]
pub fn active() -> bool {
    ACTIVE.load(std::sync::atomic::Ordering::Relaxed)
}

static ACTIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while guardlift's runtime writes a dict word on this thread.
    static RUNTIME_WRITE: AtomicBool = const { AtomicBool::new(false) };
    /// The interpreter's IR frames on this thread, innermost first.
    static IR_FRAMES: Cell<(*const IrFrame<'static>, usize)> =
        const { Cell::new((std::ptr::null(), 0)) };
}

/// Runs `f` (a write of a dict word by guardlift's runtime: the heap, the
/// interpreter's `dict_slot.store`) marked as legitimate for the handler.
#[inline]
pub fn runtime_write<R>(f: impl FnOnce() -> R) -> R {
    if !active() {
        return f();
    }
    // The handler reads the flag on this thread: the fences keep the
    // compiler from moving (or dropping) the flag's stores around the write.
    let prev = RUNTIME_WRITE.with(|c| c.swap(true, SeqCst));
    compiler_fence(SeqCst);
    let r = f();
    compiler_fence(SeqCst);
    RUNTIME_WRITE.with(|c| c.store(prev, SeqCst));
    r
}

/// One IR frame of the interpreter: function, source position, opcode.
#[derive(Copy, Clone, Debug)]
pub struct IrFrame<'a> {
    pub function: &'a str,
    pub line: u32,
    pub col: u32,
    pub op: &'a str,
}

/// Runs `f` with `frames` (innermost first: the executing op, then its
/// callers' calls) published for the handler on this thread.
pub fn with_ir_frames<R>(frames: &[IrFrame<'_>], f: impl FnOnce() -> R) -> R {
    let p = (frames.as_ptr().cast::<IrFrame<'static>>(), frames.len());
    let prev = IR_FRAMES.with(|c| c.replace(p));
    compiler_fence(SeqCst);
    let r = f();
    compiler_fence(SeqCst);
    IR_FRAMES.with(|c| c.set(prev));
    r
}

/// A range of JIT code and its IR function.
#[derive(Clone, Debug)]
pub struct CodeRange {
    pub start: u64,
    pub len: u64,
    pub function: String,
}

/// Keeps code ranges registered; dropping it removes them (before the code is freed).
#[derive(Debug)]
pub struct CodeRegistration {
    slots: Vec<usize>,
}

impl Drop for CodeRegistration {
    fn drop(&mut self) {
        let mut names = lock(&CODE_NAMES);
        for &i in &self.slots {
            CODE[i].start.store(0, SeqCst);
            CODE[i].end.store(0, SeqCst);
            names.remove(&i);
        }
    }
}

/// Registers JIT code: writes from it are IR code's (legitimate when the
/// word is well-formed), and its PCs resolve to IR functions.
pub fn register_code(ranges: Vec<CodeRange>) -> CodeRegistration {
    let mut names = lock(&CODE_NAMES);
    let mut slots = Vec::new();
    for r in ranges {
        let Some(i) = (0..CODE.len()).find(|&i| !names.contains_key(&i)) else {
            break; // full: these PCs count as foreign code (documented).
        };
        CODE[i].end.store(r.start + r.len, SeqCst);
        CODE[i].start.store(r.start, SeqCst);
        names.insert(i, r);
        slots.push(i);
    }
    CodeRegistration { slots }
}

/// Replaces how JIT PCs map to IR sites (see [`SiteResolver`]).
pub fn set_site_resolver(f: SiteResolver) {
    *lock(&RESOLVER) = f;
}

/// The default resolver: the IR function of the code range holding `pc`.
pub fn function_of_pc(pc: u64) -> Option<IrSite> {
    let names = lock(&CODE_NAMES);
    names
        .values()
        .find(|r| (r.start..r.start + r.len).contains(&pc))
        .map(|r| IrSite {
            function: r.function.clone(),
            line: 0,
            col: 0,
            op: "?".into(),
            offset: pc - r.start,
        })
}

struct CodeSlot {
    start: AtomicU64,
    end: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const CODE_SLOT: CodeSlot = CodeSlot {
    start: AtomicU64::new(0),
    end: AtomicU64::new(0),
};
/// JIT code ranges the handler checks without locking.
static CODE: [CodeSlot; 1024] = [CODE_SLOT; 1024];
static CODE_NAMES: Mutex<BTreeMap<usize, CodeRange>> = Mutex::new(BTreeMap::new());
static RESOLVER: Mutex<SiteResolver> = Mutex::new(function_of_pc);

fn in_jit_code(pc: u64) -> bool {
    CODE.iter().any(|c| {
        let s = c.start.load(SeqCst);
        s != 0 && s <= pc && pc < c.end.load(SeqCst)
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Sessions.

/// A running session: which objects are armed, for which runtime.
struct Session {
    owner: usize,
    spec: WatchSpec,
    layout: DictLayout,
    /// Per hardware slot: the fds of its events (one per thread), the
    /// object and the arming order (for `recent`).
    slots: [Option<ArmedSlot>; MAX_SLOTS],
    arm_seq: u64,
    counts: WatchCounts,
}

struct ArmedSlot {
    fds: Vec<i32>,
    object: u64,
    seq: u64,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);
/// The runtime whose last [`start`] failed, and why.
static UNAVAILABLE: Mutex<Option<(usize, String)>> = Mutex::new(None);

/// Starts watching for the runtime `owner` (its address), or says why not.
/// One session per process at a time.
pub fn start(owner: usize, spec: WatchSpec, layout: DictLayout) -> WatchStatus {
    let mut s = lock(&SESSION);
    if let Some(cur) = s.as_ref() {
        if cur.owner != owner {
            return WatchStatus::Unavailable {
                reason: "another runtime in this process is already watching".into(),
            };
        }
    }
    if let Err(reason) = imp::probe().and_then(|()| imp::install()) {
        *lock(&UNAVAILABLE) = Some((owner, reason.clone()));
        return WatchStatus::Unavailable { reason };
    }
    // Walk the stack once now: the unwinder's first use binds symbols
    // lazily (`_dl_find_object` through the dynamic linker's resolver,
    // which needs kilobytes of stack) — not something to do first inside a
    // signal handler on a small alternate stack.
    backtrace::trace(|_| true);
    if s.is_none() {
        // A new session counts from zero.
        for c in [&HITS, &LEGIT, &DROPPED] {
            c.store(0, SeqCst);
        }
    }
    let status = WatchStatus::Active {
        spec: spec.to_string(),
        counts: WatchCounts::default(),
    };
    *s = Some(Session {
        owner,
        spec,
        layout,
        slots: Default::default(),
        arm_seq: 0,
        counts: WatchCounts::default(),
    });
    ACTIVE.store(true, SeqCst);
    status
}

/// Ends `owner`'s session: every breakpoint is closed. Pending writes
/// stay in the ring until [`drain`]ed (or the next session starts).
pub fn stop(owner: usize) {
    {
        let mut u = lock(&UNAVAILABLE);
        if u.as_ref().is_some_and(|(o, _)| *o == owner) {
            *u = None;
        }
    }
    let mut s = lock(&SESSION);
    if s.as_ref().is_some_and(|c| c.owner == owner) {
        if let Some(mut cur) = s.take() {
            for i in 0..MAX_SLOTS {
                disarm(&mut cur, i);
            }
        }
        ACTIVE.store(false, SeqCst);
    }
}

/// The status of `owner`'s session (`None`: it never asked for one).
pub fn status(owner: usize) -> Option<WatchStatus> {
    let s = lock(&SESSION);
    let Some(cur) = s.as_ref().filter(|c| c.owner == owner) else {
        let u = lock(&UNAVAILABLE);
        return u.as_ref().filter(|(o, _)| *o == owner).map(|(_, reason)| {
            WatchStatus::Unavailable {
                reason: reason.clone(),
            }
        });
    };
    let mut counts = cur.counts;
    counts.hits = HITS.load(SeqCst);
    counts.legitimate = LEGIT.load(SeqCst);
    counts.dropped = DROPPED.load(SeqCst);
    counts.foreign = counts.hits - counts.legitimate;
    Some(WatchStatus::Active {
        spec: cur.spec.to_string(),
        counts,
    })
}

/// The heap created object `id` at `obj` (its dict word is in place).
pub fn on_object_created(owner: usize, id: u64, obj: u64) {
    let mut s = lock(&SESSION);
    let Some(cur) = s.as_mut().filter(|c| c.owner == owner) else {
        return;
    };
    if !cur.spec.picks(id) {
        return;
    }
    let free = (0..MAX_SLOTS).find(|&i| cur.slots[i].is_none());
    let i = match (free, &cur.spec) {
        (Some(i), _) => i,
        // `recent`: the oldest armed object makes room.
        (None, WatchSpec::Recent) => {
            let oldest = (0..MAX_SLOTS)
                .min_by_key(|&i| cur.slots[i].as_ref().map_or(0, |a| a.seq))
                .unwrap_or(0);
            disarm(cur, oldest);
            oldest
        }
        (None, _) => {
            cur.counts.not_armed += 1;
            return;
        }
    };
    let slot = cur.layout.slot_addr(obj);
    // SAFETY: the heap just wrote the word of this live object.
    let word = unsafe { (slot as *const u64).read_volatile() };
    let a = &ARMED[i];
    a.last.store(word, SeqCst);
    a.object.store(obj, SeqCst);
    a.id.store(id, SeqCst);
    a.slot.store(slot, SeqCst);
    match imp::arm(slot, i) {
        Ok(fds) if !fds.is_empty() => {
            cur.arm_seq += 1;
            cur.slots[i] = Some(ArmedSlot {
                fds,
                object: obj,
                seq: cur.arm_seq,
            });
            cur.counts.armed += 1;
        }
        _ => {
            a.slot.store(0, SeqCst);
            cur.counts.not_armed += 1;
        }
    }
}

/// The heap is about to free `obj`: its breakpoint (if any) goes.
pub fn on_object_freed(owner: usize, obj: u64) {
    let mut s = lock(&SESSION);
    let Some(cur) = s.as_mut().filter(|c| c.owner == owner) else {
        return;
    };
    if let Some(i) =
        (0..MAX_SLOTS).find(|&i| cur.slots[i].as_ref().is_some_and(|a| a.object == obj))
    {
        disarm(cur, i);
    }
}

fn disarm(cur: &mut Session, i: usize) {
    if let Some(a) = cur.slots[i].take() {
        imp::close_all(&a.fds);
        ARMED[i].slot.store(0, SeqCst);
    }
}

/// The object ids currently armed (for tests and diagnostics).
pub fn armed_ids() -> Vec<u64> {
    let s = lock(&SESSION);
    let Some(cur) = s.as_ref() else {
        return Vec::new();
    };
    (0..MAX_SLOTS)
        .filter(|&i| cur.slots[i].is_some())
        .map(|i| ARMED[i].id.load(SeqCst))
        .collect()
}

// ---------------------------------------------------------------------------
// What the handler shares with the rest (lock-free).

/// One armed hardware slot as the handler sees it.
struct Armed {
    /// Address of the watched word (0: free).
    slot: AtomicU64,
    object: AtomicU64,
    id: AtomicU64,
    /// The word after the last trapped write (or at arming).
    last: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ARMED_INIT: Armed = Armed {
    slot: AtomicU64::new(0),
    object: AtomicU64::new(0),
    id: AtomicU64::new(0),
    last: AtomicU64::new(0),
};
static ARMED: [Armed; MAX_SLOTS] = [ARMED_INIT; MAX_SLOTS];
static HITS: AtomicU64 = AtomicU64::new(0);
static LEGIT: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

const BT_FRAMES: usize = 48;
const CODE_WINDOW: usize = 32;
const IR_MAX: usize = 16;
const NAME_BYTES: usize = 64;
const OP_BYTES: usize = 24;
const RING_LEN: usize = 32;

#[derive(Copy, Clone)]
struct RawIr {
    function: [u8; NAME_BYTES],
    flen: u8,
    op: [u8; OP_BYTES],
    oplen: u8,
    line: u32,
    col: u32,
}

/// A trapped write as the handler recorded it.
#[derive(Copy, Clone)]
struct RawHit {
    seq: u64,
    pc: u64,
    old: u64,
    new: u64,
    object: u64,
    id: u64,
    /// The bytes at `[pc - ncode, pc)`.
    code: [u8; CODE_WINDOW],
    ncode: usize,
    ips: [u64; BT_FRAMES],
    nips: usize,
    ir: [RawIr; IR_MAX],
    nir: usize,
}

const RAW_IR0: RawIr = RawIr {
    function: [0; NAME_BYTES],
    flen: 0,
    op: [0; OP_BYTES],
    oplen: 0,
    line: 0,
    col: 0,
};
const RAW_HIT0: RawHit = RawHit {
    seq: 0,
    pc: 0,
    old: 0,
    new: 0,
    object: 0,
    id: 0,
    code: [0; CODE_WINDOW],
    ncode: 0,
    ips: [0; BT_FRAMES],
    nips: 0,
    ir: [RAW_IR0; IR_MAX],
    nir: 0,
};

const FREE: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

struct RingSlot {
    state: std::sync::atomic::AtomicU8,
    hit: std::cell::UnsafeCell<RawHit>,
}

struct Ring([RingSlot; RING_LEN]);
// SAFETY: a slot's `hit` is written only by the thread that moved its state
// FREE→WRITING and read only by the drainer that moved it READY→WRITING.
unsafe impl Sync for Ring {}

#[allow(clippy::declare_interior_mutable_const)]
const RING_SLOT: RingSlot = RingSlot {
    state: std::sync::atomic::AtomicU8::new(FREE),
    hit: std::cell::UnsafeCell::new(RAW_HIT0),
};
static RING: Ring = Ring([RING_SLOT; RING_LEN]);
static SEQ: AtomicU64 = AtomicU64::new(0);

/// What the handler does with a trap on hardware slot `i` at `pc`
/// (async-signal-safe: loads, stores, the unwinder).
fn on_hit(i: usize, pc: u64) {
    let a = &ARMED[i];
    let slot = a.slot.load(SeqCst);
    if slot == 0 {
        return; // disarmed meanwhile
    }
    // SAFETY: armed slots belong to live objects (disarmed before the free).
    let new = unsafe { (slot as *const u64).read_volatile() };
    let old = a.last.swap(new, SeqCst);
    HITS.fetch_add(1, SeqCst);
    let ours = RUNTIME_WRITE.with(|c| c.load(SeqCst)) || in_jit_code(pc);
    if layout::tag_ok(new) && ours {
        LEGIT.fetch_add(1, SeqCst);
        return;
    }
    let Some(r) = RING.0.iter().find(|r| {
        r.state
            .compare_exchange(FREE, WRITING, SeqCst, SeqCst)
            .is_ok()
    }) else {
        DROPPED.fetch_add(1, SeqCst);
        return;
    };
    // SAFETY: this thread owns the slot (state WRITING).
    let h = unsafe { &mut *r.hit.get() };
    h.seq = SEQ.fetch_add(1, SeqCst);
    h.pc = pc;
    h.old = old;
    h.new = new;
    h.object = a.object.load(SeqCst);
    h.id = a.id.load(SeqCst);
    copy_code(h, pc);
    h.nips = 0;
    let mut seen_pc = false;
    // SAFETY: trace_unsynchronized: no other unwinding can run on this thread now.
    unsafe {
        backtrace::trace_unsynchronized(|f| {
            let ip = f.ip() as u64;
            if !seen_pc {
                seen_pc = ip == pc;
                if !seen_pc {
                    return true; // the handler's own frames
                }
            }
            h.ips[h.nips] = ip;
            h.nips += 1;
            h.nips < BT_FRAMES
        });
    }
    if h.nips == 0 {
        h.ips[0] = pc;
        h.nips = 1;
    }
    copy_ir_frames(h);
    r.state.store(READY, SeqCst);
}

/// Copies the code bytes before `pc` (within its page, which is mapped).
fn copy_code(h: &mut RawHit, pc: u64) {
    let page_start = pc & !0xfff;
    let n = (pc - page_start).min(CODE_WINDOW as u64) as usize;
    // SAFETY: `[pc - n, pc)` lies in the page of the instruction that just ran.
    unsafe {
        std::ptr::copy_nonoverlapping((pc as usize - n) as *const u8, h.code.as_mut_ptr(), n)
    };
    h.ncode = n;
}

fn copy_ir_frames(h: &mut RawHit) {
    let (p, n) = IR_FRAMES.with(|c| c.get());
    h.nir = 0;
    if p.is_null() {
        return;
    }
    // SAFETY: published by `with_ir_frames` on this thread, alive while it runs.
    let frames = unsafe { std::slice::from_raw_parts(p, n) };
    for f in frames.iter().take(IR_MAX) {
        let d = &mut h.ir[h.nir];
        d.flen = copy_str(&mut d.function, f.function);
        d.oplen = copy_str(&mut d.op, f.op);
        d.line = f.line;
        d.col = f.col;
        h.nir += 1;
    }
}

fn copy_str(dst: &mut [u8], s: &str) -> u8 {
    let mut n = s.len().min(dst.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
    n as u8
}

// ---------------------------------------------------------------------------
// Writers as reports refer to them.

/// A handle to a [`Writer`] kept for the life of the process (reports are
/// `Copy` values; the writer's strings live here). Equal writers (same PC,
/// same object) share one id, so their reports are deduplicated.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct WriterId(pub u32);

static WRITERS: Mutex<Vec<Arc<Writer>>> = Mutex::new(Vec::new());

impl WriterId {
    /// No writer known.
    pub const NONE: WriterId = WriterId(u32::MAX);

    /// The writer this id stands for.
    pub fn get(self) -> Option<Arc<Writer>> {
        lock(&WRITERS).get(self.0 as usize).cloned()
    }

    fn intern(w: Writer) -> WriterId {
        let mut t = lock(&WRITERS);
        if let Some(i) = t
            .iter()
            .position(|x| x.pc == w.pc && x.object_id == w.object_id)
        {
            return WriterId(i as u32);
        }
        t.push(Arc::new(w));
        WriterId(t.len() as u32 - 1)
    }
}

/// The human lines of a `foreign_write` report (after its first line).
pub fn write_human(
    s: &mut fmt::Formatter<'_>,
    object: u64,
    old: u64,
    new: u64,
    width: u32,
    writer: WriterId,
) -> fmt::Result {
    let w = writer.get();
    let id = w.as_ref().map_or(0, |w| w.object_id);
    let verdict = if layout::tag_ok(new) {
        "well-formed, but written by code outside guardlift's runtime and JIT code"
    } else {
        "malformed (valid: 0b111 values-tagged, 0b000 dict pointer or 0)"
    };
    writeln!(
        s,
        "    object {object:#x} (object_id {id}): managed-dict word {old:#x} -> {new:#x}, low bits 0b{:03b}: {verdict}",
        new & layout::TAG_MASK
    )?;
    let Some(w) = w else { return Ok(()) };
    let width = match width {
        0 => "a store of unknown width".to_string(),
        n => format!("a {n}-byte store"),
    };
    write!(s, "    writer: {} (pc {:#x}), {width}", w.symbol, w.pc)?;
    match &w.site {
        Some(site) => writeln!(s, ", IR code {site} ({})", site.op)?,
        None => writeln!(s)?,
    }
    writeln!(s, "    backtrace (innermost first):")?;
    for (i, f) in w.backtrace.iter().enumerate() {
        writeln!(s, "      #{i} {f}")?;
    }
    Ok(())
}

/// The foreign writes recorded since the last call, as (site, observation)
/// pairs for the report sink: the site is the writer's IR site, else the
/// IR call below it, else the writer's symbol.
pub fn drain_reports() -> Vec<(crate::report::SiteInfo, crate::report::Observed)> {
    if !active() && RING.0.iter().all(|r| r.state.load(SeqCst) != READY) {
        return Vec::new();
    }
    drain()
        .into_iter()
        .map(|fw| {
            let info = match fw.writer.site.as_ref().or(fw.writer.ir_caller.as_ref()) {
                Some(s) => crate::report::SiteInfo {
                    function: s.function.clone(),
                    line: s.line,
                    col: s.col,
                    op: s.op.clone(),
                },
                None => crate::report::SiteInfo {
                    function: fw.writer.symbol.clone(),
                    line: 0,
                    col: 0,
                    op: "?".into(),
                },
            };
            let width = fw.writer.width;
            let observed = crate::report::Observed::Write {
                object: fw.object,
                old: fw.old,
                new: fw.new,
                width,
                writer: WriterId::intern(fw.writer),
            };
            (info, observed)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// After the handler: turning raw hits into writers.

/// A foreign write, ready to be recorded as a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignWrite {
    pub object: u64,
    pub old: u64,
    pub new: u64,
    pub writer: Writer,
}

/// Takes every recorded foreign write, oldest first, symbolized.
/// Cheap when nothing was recorded; never call it from a signal handler.
pub fn drain() -> Vec<ForeignWrite> {
    let mut raw: Vec<RawHit> = Vec::new();
    for r in &RING.0 {
        if r.state
            .compare_exchange(READY, WRITING, SeqCst, SeqCst)
            .is_ok()
        {
            // SAFETY: we own the slot (state WRITING).
            raw.push(unsafe { *r.hit.get() });
            r.state.store(FREE, SeqCst);
        }
    }
    raw.sort_by_key(|h| h.seq);
    let resolver = *lock(&RESOLVER);
    raw.iter().map(|h| describe(h, resolver)).collect()
}

fn describe(h: &RawHit, resolver: SiteResolver) -> ForeignWrite {
    let ir: Vec<IrSite> = h.ir[..h.nir]
        .iter()
        .map(|f| IrSite {
            function: String::from_utf8_lossy(&f.function[..f.flen as usize]).into_owned(),
            line: f.line,
            col: f.col,
            op: String::from_utf8_lossy(&f.op[..f.oplen as usize]).into_owned(),
            offset: 0,
        })
        .collect();
    let frames: Vec<Frame> = h.ips[..h.nips]
        .iter()
        .enumerate()
        // Return addresses point after the call: look up the call itself.
        .map(|(k, &ip)| symbolize(if k == 0 { ip } else { ip - 1 }, ip, resolver))
        .collect();
    let writer_frame = frames.first();
    // The interpreter executing a store is IR code writing; a host call is not.
    let interp_store = ir
        .first()
        .filter(|f| matches!(f.op.as_str(), "store" | "dict_slot.store"));
    let site = writer_frame
        .and_then(|f| f.ir.clone())
        .or_else(|| interp_store.cloned());
    let ir_caller = ir
        .first()
        .cloned()
        .or_else(|| frames.iter().skip(1).find_map(|f| f.ir.clone()));
    ForeignWrite {
        object: h.object,
        old: h.old,
        new: h.new,
        writer: Writer {
            object_id: h.id,
            symbol: writer_frame.map_or_else(|| "?".into(), |f| f.symbol.clone()),
            pc: h.pc,
            site,
            ir_caller,
            width: writer_frame
                .and_then(|f| f.start)
                .and_then(|start| width_from_start(start, h.pc))
                .or_else(|| decode_width(&h.code[..h.ncode]))
                .unwrap_or(0),
            backtrace: backtrace_lines(&frames, &ir),
        },
    }
}

struct Frame {
    ip: u64,
    /// Start of the function (ELF symbol or JIT code range), when known.
    start: Option<u64>,
    /// `symbol+0xOFF` of the real (outermost) function.
    symbol: String,
    /// Inlined function names (innermost first) then the real one, with file:line.
    names: Vec<String>,
    ir: Option<IrSite>,
}

fn symbolize(lookup: u64, ip: u64, resolver: SiteResolver) -> Frame {
    if let Some(site) = resolver(ip).or_else(|| function_of_pc(ip)) {
        let start = function_of_pc(ip).map(|s| ip - s.offset);
        return Frame {
            ip,
            start,
            symbol: site.to_string(),
            names: vec![site.to_string()],
            ir: Some(site),
        };
    }
    let mut names = Vec::new();
    backtrace::resolve(lookup as *mut std::ffi::c_void, |s| {
        let name = s
            .name()
            .map_or_else(|| "?".to_string(), |n| format!("{n:#}"));
        let at = match (s.filename(), s.lineno()) {
            (Some(f), Some(l)) => format!(" at {}:{l}", f.display()),
            _ => String::new(),
        };
        names.push(format!("{name}{at}"));
    });
    let elf = elf_symbol(lookup);
    let symbol = match &elf {
        Some((name, start)) => format!("{name}+{:#x}", ip - start),
        None => names.last().map_or_else(
            || "?".into(),
            |n| n.split(" at ").next().unwrap_or("?").to_string(),
        ),
    };
    Frame {
        ip,
        start: elf.map(|(_, s)| s),
        symbol,
        names,
        ir: None,
    }
}

/// Symbols of one mapped ELF file: (start, size, name), sorted by start.
type SymTab = Vec<(u64, u64, String)>;

static SYMTABS: Mutex<BTreeMap<String, std::sync::Arc<SymTab>>> = Mutex::new(BTreeMap::new());

/// The ELF function symbol containing `pc` (demangled) and its address:
/// `dladdr` finds the mapped file and its base, the `object` crate reads
/// the file's symbol table (Rust executables export almost nothing to
/// `dladdr` itself).
fn elf_symbol(pc: u64) -> Option<(String, u64)> {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated file name.
    let fname = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let base = info.dli_fbase as u64;
    let tab = {
        let mut cache = lock(&SYMTABS);
        match cache.get(&fname) {
            Some(t) => t.clone(),
            None => {
                let t = std::sync::Arc::new(read_symtab(&fname).unwrap_or_default());
                cache.insert(fname.clone(), t.clone());
                t
            }
        }
    };
    let (rel, bias) = match tab.first() {
        // A position-dependent executable has absolute addresses.
        Some(&(first, _, _)) if first >= base && base != 0 && is_exec(&fname) => (pc, 0),
        _ => (pc.wrapping_sub(base), base),
    };
    let i = tab.partition_point(|s| s.0 <= rel).checked_sub(1)?;
    let (start, size, name) = &tab[i];
    (rel < start + size.max(&1)).then(|| {
        let name = format!("{:#}", backtrace::SymbolName::new(name.as_bytes()));
        (name, start + bias)
    })
}

fn is_exec(path: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|d| d.get(16..18).map(|t| u16::from_le_bytes([t[0], t[1]]) == 2))
        .unwrap_or(false)
}

fn read_symtab(path: &str) -> Option<SymTab> {
    use object::read::elf::ElfFile64;
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(path).ok()?;
    let file = ElfFile64::<object::Endianness>::parse(&*data).ok()?;
    let mut t: SymTab = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    t.sort();
    t.dedup_by_key(|s| s.0);
    Some(t)
}

/// The width of the instruction that ends at `pc`, decoding forward from
/// the start of its function (exact on x86_64, unlike a backward guess).
fn width_from_start(start: u64, pc: u64) -> Option<u32> {
    let len = pc.checked_sub(start)?;
    if len == 0 || len > 1 << 16 {
        return None;
    }
    // SAFETY: `[start, pc)` is code of a live function (the symbol or JIT
    // range that contains the writer, which just executed it).
    let code = unsafe { std::slice::from_raw_parts(start as *const u8, len as usize) };
    imp::width_of_last(code)
}

/// Frames innermost first; the interpreter's IR frames go right after its
/// innermost Rust frame (they are what that Rust code was executing).
fn backtrace_lines(frames: &[Frame], ir: &[IrSite]) -> Vec<String> {
    let mut out = Vec::new();
    let mut ir_done = ir.is_empty();
    for f in frames {
        // Below the thread's or program's entry: the runtime of Rust itself.
        if f.names
            .iter()
            .any(|n| n.contains("__rust_begin_short_backtrace"))
        {
            break;
        }
        let names = if f.names.is_empty() {
            vec!["?".to_string()]
        } else {
            f.names.clone()
        };
        for n in names {
            out.push(format!("{:#x} {n}", f.ip));
        }
        if !ir_done && f.names.iter().any(|n| n.contains("guardlift_interp")) {
            out.extend(ir.iter().map(|s| format!("{s} ({})", s.op)));
            ir_done = true;
        }
    }
    if !ir_done {
        out.extend(ir.iter().map(|s| format!("{s} ({})", s.op)));
    }
    out
}

/// Bytes stored by the instruction that ends where `code` ends (x86_64:
/// the breakpoint traps after the write, so the writer is the instruction
/// just before the PC; the candidate that decodes to exactly the window's
/// tail and writes memory wins, shortest first).
pub fn decode_width(code: &[u8]) -> Option<u32> {
    imp::decode_width(code)
}

// ---------------------------------------------------------------------------
// The platform part.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use super::*;
    use std::mem::MaybeUninit;
    use std::sync::Once;

    /// `si_code` of a perf-event trap (`TRAP_PERF`).
    const TRAP_PERF: i32 = 6;
    /// Offset of `si_perf_data` in `siginfo_t` (after `si_addr`).
    const SI_PERF_DATA_OFFSET: usize = 24;
    /// Our tag in `sig_data` (the low byte is the hardware slot).
    const TAG: u64 = 0x676c_7761_7463_6800;

    const PERF_TYPE_BREAKPOINT: u32 = 5;
    const HW_BREAKPOINT_W: u32 = 2;
    const HW_BREAKPOINT_LEN_8: u64 = 8;
    // perf_event_attr bit flags (word at offset 40).
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    const INHERIT: u64 = 1 << 1;
    const INHERIT_THREAD: u64 = 1 << 35;
    const REMOVE_ON_EXEC: u64 = 1 << 36;
    const SIGTRAP: u64 = 1 << 37;
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

    /// `struct perf_event_attr` (PERF_ATTR_SIZE_VER8, 136 bytes).
    #[repr(C)]
    #[derive(Default)]
    struct PerfEventAttr {
        type_: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        flags: u64,
        wakeup_events: u32,
        bp_type: u32,
        bp_addr: u64,
        bp_len: u64,
        branch_sample_type: u64,
        sample_regs_user: u64,
        sample_stack_user: u32,
        clockid: i32,
        sample_regs_intr: u64,
        aux_watermark: u32,
        sample_max_stack: u16,
        reserved_2: u16,
        aux_sample_size: u32,
        reserved_3: u32,
        sig_data: u64,
        config3: u64,
    }
    const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 136);

    fn open(addr: u64, tid: i32, hw: usize) -> Result<i32, i32> {
        let attr = PerfEventAttr {
            type_: PERF_TYPE_BREAKPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            sample_period: 1,
            flags: EXCLUDE_KERNEL
                | EXCLUDE_HV
                | INHERIT
                | INHERIT_THREAD
                | REMOVE_ON_EXEC
                | SIGTRAP,
            bp_type: HW_BREAKPOINT_W,
            bp_addr: addr,
            bp_len: HW_BREAKPOINT_LEN_8,
            sig_data: TAG | hw as u64,
            ..Default::default()
        };
        // SAFETY: a valid attr; the kernel copies it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                tid,
                -1i32,
                -1i32,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(fd as i32)
        }
    }

    use crate::trap::imp::errno;

    fn threads() -> Vec<i32> {
        match std::fs::read_dir("/proc/self/task") {
            Ok(d) => d
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect(),
            // SAFETY: gettid has no preconditions.
            Err(_) => vec![unsafe { libc::gettid() }],
        }
    }

    /// One breakpoint per thread on `addr`, in hardware slot `hw`.
    pub fn arm(addr: u64, hw: usize) -> Result<Vec<i32>, i32> {
        let mut fds = Vec::new();
        for tid in threads() {
            match open(addr, tid, hw) {
                Ok(fd) => fds.push(fd),
                // The thread ended meanwhile.
                Err(libc::ESRCH) => {}
                Err(e) => {
                    close_all(&fds);
                    return Err(e);
                }
            }
        }
        Ok(fds)
    }

    pub fn close_all(fds: &[i32]) {
        for &fd in fds {
            // SAFETY: fds we opened and own.
            unsafe { libc::close(fd) };
        }
    }

    static PROBE_WORD: AtomicU64 = AtomicU64::new(0);

    /// Can this process have a write breakpoint at all?
    pub fn probe() -> Result<(), String> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        match open(PROBE_WORD.as_ptr() as u64, tid, 0) {
            Ok(fd) => {
                close_all(&[fd]);
                Ok(())
            }
            Err(e) => Err(reason(e)),
        }
    }

    fn reason(e: i32) -> String {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        let what = std::io::Error::from_raw_os_error(e);
        match e {
            libc::EACCES | libc::EPERM => format!(
                "perf_event_open: {what} (kernel.perf_event_paranoid = {paranoid}; needs <= 2 or CAP_PERFMON)"
            ),
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
                format!("perf_event_open: {what} (no hardware breakpoints here: a VM or emulator without debug registers?)")
            }
            libc::ENOSYS => format!("perf_event_open: {what} (qemu-user or a kernel without perf events)"),
            libc::EINVAL => format!("perf_event_open: {what} (kernel too old for synchronous sigtrap: needs Linux 5.13)"),
            _ => format!("perf_event_open: {what}"),
        }
    }

    static INSTALL: Once = Once::new();
    static mut PREV: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();
    static PREV_SET: AtomicBool = AtomicBool::new(false);
    static INSTALL_ERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

    pub fn install() -> Result<(), String> {
        INSTALL.call_once(|| {
            // SAFETY: plain sigaction calls with valid structs; PREV is
            // written once, before our handler (its only reader) exists.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGTRAP, std::ptr::null(), &mut old) != 0 {
                    INSTALL_ERR.store(errno(), SeqCst);
                    return;
                }
                *std::ptr::addr_of_mut!(PREV) = MaybeUninit::new(old);
                PREV_SET.store(true, SeqCst);
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigtrap as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(libc::SIGTRAP, &sa, std::ptr::null_mut()) != 0 {
                    INSTALL_ERR.store(errno(), SeqCst);
                }
            }
        });
        match INSTALL_ERR.load(SeqCst) {
            0 => Ok(()),
            e => Err(format!(
                "sigaction(SIGTRAP): {}",
                std::io::Error::from_raw_os_error(e)
            )),
        }
    }

    extern "C" fn on_sigtrap(
        sig: libc::c_int,
        info: *mut libc::siginfo_t,
        uctx: *mut libc::c_void,
    ) {
        let saved = errno();
        // SAFETY: the kernel passes a valid siginfo and ucontext.
        unsafe {
            let code = (*info).si_code;
            let data = *(info as *const u8).add(SI_PERF_DATA_OFFSET).cast::<u64>();
            if code == TRAP_PERF && data & !0xff == TAG && ((data & 0xff) as usize) < MAX_SLOTS {
                let uc = uctx as *const libc::ucontext_t;
                let pc = (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] as u64;
                on_hit((data & 0xff) as usize, pc);
            } else {
                chain(sig, info, uctx);
            }
            *libc::__errno_location() = saved;
        }
    }

    /// A SIGTRAP that is not ours goes to the action installed before ours.
    ///
    /// # Safety
    /// Called from the signal handler with its arguments.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: PREV was written before our handler was installed.
        let prev = PREV_SET
            .load(SeqCst)
            .then(|| unsafe { (*std::ptr::addr_of!(PREV)).assume_init() });
        // The one chaining rule of guardlift's handlers (an ignored SIGTRAP
        // stays ignored; the default action dies of the signal).
        // SAFETY: per this function's contract.
        unsafe { crate::trap::imp::call_previous(prev, sig, info, uctx) }
    }

    fn capstone() -> Option<capstone::Capstone> {
        use capstone::arch::x86::ArchMode;
        use capstone::arch::BuildsCapstone;
        capstone::Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .detail(true)
            .build()
            .ok()
    }

    /// Bytes written by the last instruction of `code` when decoding from
    /// its first byte lands exactly on its end.
    pub fn width_of_last(code: &[u8]) -> Option<u32> {
        use capstone::arch::x86::X86OperandType;
        use capstone::arch::DetailsArchInsn;
        use capstone::AccessType;
        let cs = capstone()?;
        let insns = cs.disasm_all(code, 0).ok()?;
        let last = insns.iter().last()?;
        if last.address() as usize + last.len() != code.len() {
            return None; // the decode did not land on the PC
        }
        let detail = cs.insn_detail(last).ok()?;
        let arch = detail.arch_detail();
        let x86 = arch.x86()?;
        x86.operands()
            .find(|op| {
                matches!(op.op_type, X86OperandType::Mem(_))
                    && matches!(
                        op.access,
                        Some(AccessType::WriteOnly) | Some(AccessType::ReadWrite)
                    )
            })
            .map(|op| op.size as u32)
    }

    /// Without the function start: the earliest start in the window from
    /// which decoding lands exactly on its end (x86 decoding resynchronizes
    /// within a few instructions).
    pub fn decode_width(code: &[u8]) -> Option<u32> {
        (0..code.len()).find_map(|start| width_of_last(&code[start..]))
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod imp {
    pub fn probe() -> Result<(), String> {
        Err(format!(
            "hardware watchpoints need Linux on x86_64 (this is {} on {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    }
    pub fn install() -> Result<(), String> {
        probe()
    }
    pub fn arm(_addr: u64, _hw: usize) -> Result<Vec<i32>, i32> {
        Err(0)
    }
    pub fn close_all(_fds: &[i32]) {}
    pub fn decode_width(_code: &[u8]) -> Option<u32> {
        None
    }
    pub fn width_of_last(_code: &[u8]) -> Option<u32> {
        None
    }
    #[allow(dead_code)]
    fn unused() {
        super::on_hit(0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        assert_eq!(
            WatchSpec::parse("object:3+5").unwrap(),
            WatchSpec::Objects(vec![3, 5])
        );
        assert_eq!(WatchSpec::parse("sample:4").unwrap(), WatchSpec::Sample(4));
        assert_eq!(WatchSpec::parse("recent").unwrap(), WatchSpec::Recent);
        for bad in [
            "", "object:", "object:0", "object:x", "sample:0", "all", "recent:1",
        ] {
            assert!(WatchSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(WatchSpec::Objects(vec![2, 7]).to_string(), "object:2+7");
        assert!(WatchSpec::Sample(3).picks(1) && WatchSpec::Sample(3).picks(4));
        assert!(!WatchSpec::Sample(3).picks(2));
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn widths_of_stores_decode() {
        // mov byte ptr [rax], cl ; mov qword ptr [rax], rcx ; and byte ptr [rdi], 0xfe
        let pad = [0x90u8; 8];
        let w = |tail: &[u8]| decode_width(&[&pad[..], tail].concat());
        assert_eq!(w(&[0x88, 0x08]), Some(1));
        assert_eq!(w(&[0x48, 0x89, 0x08]), Some(8));
        assert_eq!(w(&[0x80, 0x27, 0xfe]), Some(1));
        assert_eq!(w(&[0x89, 0x08]), Some(4));
        // a load is not a writer
        assert_eq!(w(&[0x48, 0x8b, 0x08]), None);
    }
}
