//! What the watchpoint handler shares with the rest, lock-free: the armed
//! hardware slots, the counters, and the ring of raw foreign writes the
//! handler fills ([`on_hit`]) and [`super::drain`] empties.

use super::{IR_FRAMES, MAX_SLOTS, RUNTIME_WRITE};
use crate::layout;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

/// One armed hardware slot as the handler sees it.
pub(super) struct Armed {
    /// Address of the watched word (0: free).
    pub slot: AtomicU64,
    /// The watched object.
    pub object: AtomicU64,
    /// Its allocation id.
    pub id: AtomicU64,
    /// The word after the last trapped write (or at arming).
    pub last: AtomicU64,
    /// The arming's generation (0: none); its traps carry it.
    pub gen: AtomicU64,
    /// A host object still being initialised (see `on_object_created`).
    pub init: AtomicBool,
    /// Writes trapped after the initialisation.
    pub writes: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ARMED_INIT: Armed = Armed {
    slot: AtomicU64::new(0),
    object: AtomicU64::new(0),
    id: AtomicU64::new(0),
    last: AtomicU64::new(0),
    gen: AtomicU64::new(0),
    init: AtomicBool::new(false),
    writes: AtomicU64::new(0),
};
pub(super) static ARMED: [Armed; MAX_SLOTS] = [ARMED_INIT; MAX_SLOTS];
pub(super) static HITS: AtomicU64 = AtomicU64::new(0);
pub(super) static LEGIT: AtomicU64 = AtomicU64::new(0);
pub(super) static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Traps of ours whose arming was gone when they arrived (discarded).
pub(super) static DISCARDED: AtomicU64 = AtomicU64::new(0);
/// Debug exceptions the kernel could not attribute (see [`on_unattributed`]).
pub(super) static UNATTRIBUTED: AtomicU64 = AtomicU64::new(0);
static GEN: AtomicU64 = AtomicU64::new(0);

/// Bits of an arming's generation carried in a trap's `sig_data`.
pub(super) const GEN_BITS: u32 = 24;

/// The next arming's generation: non-zero, [`GEN_BITS`] wide.
pub(super) fn next_gen() -> u64 {
    loop {
        let g = GEN.fetch_add(1, SeqCst).wrapping_add(1) & ((1 << GEN_BITS) - 1);
        if g != 0 {
            return g;
        }
    }
}

const BT_FRAMES: usize = 48;
const CODE_WINDOW: usize = 32;
pub(super) const IR_MAX: usize = 16;
const NAME_BYTES: usize = 64;
const OP_BYTES: usize = 24;
const RING_LEN: usize = 32;

#[derive(Copy, Clone)]
pub(super) struct RawIr {
    pub function: [u8; NAME_BYTES],
    pub flen: u8,
    pub op: [u8; OP_BYTES],
    pub oplen: u8,
    pub line: u32,
    pub col: u32,
}

/// A trapped write as the handler recorded it.
#[derive(Copy, Clone)]
pub(super) struct RawHit {
    pub seq: u64,
    pub pc: u64,
    pub old: u64,
    pub new: u64,
    pub object: u64,
    pub id: u64,
    /// The bytes at `[pc - ncode, pc)`.
    pub code: [u8; CODE_WINDOW],
    pub ncode: usize,
    pub ips: [u64; BT_FRAMES],
    pub nips: usize,
    pub ir: [RawIr; IR_MAX],
    pub nir: usize,
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

/// What the handler does with a debug exception at `pc` that the kernel
/// could not attribute to a breakpoint while a session runs: a `SIGTRAP`
/// with `si_code` `TRAP_BRKPT` (the debug status register read empty,
/// which the kernel takes for an `icebp`) or `TRAP_HWBKPT` (a breakpoint
/// bit no perf event claimed), not `TRAP_PERF` with our tag. A KVM guest
/// delivers such traps for writes to a watched word now and then (seen in
/// about one `guardlift bench --only watch` run in ten, each run killed by
/// the signal before this handler took them). Each armed word that
/// differs from its last known value takes it as a trap of its arming
/// (so a foreign write is still reported); a write that left its word as
/// it was cannot be told apart, and is only counted.
/// (Async-signal-safe, as [`on_hit`]; only the x86_64 Linux handler,
/// `perf.rs`, takes such traps.)
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(super) fn on_unattributed(pc: u64) {
    UNATTRIBUTED.fetch_add(1, SeqCst);
    for (i, a) in ARMED.iter().enumerate() {
        let slot = a.slot.load(SeqCst);
        if slot == 0 {
            continue;
        }
        // SAFETY: armed slots belong to live objects (disarmed before the
        // free), as in `on_hit`.
        let now = unsafe { (slot as *const u64).read_volatile() };
        if now != a.last.load(SeqCst) {
            on_hit(i, a.gen.load(SeqCst), pc);
        }
    }
}

/// What the handler does with a trap of arming `gen` on hardware slot `i`
/// at `pc` (async-signal-safe: loads, stores, the unwinder).
pub(super) fn on_hit(i: usize, gen: u64, pc: u64) {
    let a = &ARMED[i];
    let slot = a.slot.load(SeqCst);
    if slot == 0 || a.gen.load(SeqCst) != gen {
        // Disarmed meanwhile (its object freed): discarded, counted.
        DISCARDED.fetch_add(1, SeqCst);
        return;
    }
    // SAFETY: armed slots belong to live objects (disarmed before the free).
    let new = unsafe { (slot as *const u64).read_volatile() };
    let old = a.last.swap(new, SeqCst);
    HITS.fetch_add(1, SeqCst);
    // Guardlift's own writers: the runtime, and JIT code of an
    // instrumented module (uninstrumented IR code is foreign, spec §6.1).
    let ours =
        RUNTIME_WRITE.with(|c| c.load(SeqCst)) || crate::codemap::is_instrumented_code(pc as usize);
    if layout::tag_ok(new) && a.init.load(SeqCst) {
        // A host initialising its object before IR code used it; a write
        // of ours means IR code has it now.
        if ours {
            a.init.store(false, SeqCst);
        }
        LEGIT.fetch_add(1, SeqCst);
        return;
    }
    a.writes.fetch_add(1, SeqCst);
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

/// Is a recorded foreign write waiting to be drained? Async-signal-safe
/// (the signal handlers ask before they print what was recorded).
pub fn pending() -> bool {
    RING.0.iter().any(|r| r.state.load(SeqCst) == READY)
}

/// Takes every recorded write out of the ring, oldest first.
pub(super) fn take() -> Vec<RawHit> {
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
    raw
}
