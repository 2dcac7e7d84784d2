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
//! # Re-arming
//!
//! A hardware slot's events are opened once, at its first arming, and kept
//! open for the session: arming moves them to the new word and enables
//! them (`PERF_EVENT_IOC_MODIFY_ATTRIBUTES`, which also carries the new
//! arming's tag in `sig_data`, and reaches the events threads inherited),
//! disarming disables them (`PERF_EVENT_IOC_DISABLE`, synchronous on every
//! thread, so a freed object's word is unwatched before
//! [`on_object_freed`] returns). Where the kernel refuses the move
//! (`ENOTTY`, `EINVAL`), the session falls back to opening the events at
//! each arming and closing them at each disarming, and its status says so
//! ([`Rearm`]). Either way a slot's events cover the threads of
//! `/proc/self/task` when they were opened and, through `inherit`, every
//! thread started after.
//!
//! One race differs between the two: the kernel reads `sig_data` when it
//! sends the trap's signal, on the trapping thread's way back to user
//! mode. A write trapped on another thread in the instant before a
//! retarget of its slot is therefore delivered with the *new* arming's tag
//! (a closed event's pending trap keeps the old tag and is discarded):
//! the handler takes it for the new arming and reads the new word. No user
//! instruction runs on the trapping thread in that window; a write racing
//! a free on another thread is the host's own use-after-free race.
//!
//! # The handler
//!
//! Registered with [`crate::sigchain`] for `SIGTRAP` when the first session
//! starts (never when `--watch` is off: zero cost). A `SIGTRAP` that is not
//! a perf trap with our tag is left to the next handler or the action
//! installed before guardlift's. Ours: it reads
//! the new word, swaps it with the slot's last known word (the old one),
//! and counts the hit. A well-formed word written by guardlift's runtime
//! (announced with [`runtime_write`]) or by JIT code (a PC in the code
//! registry, [`crate::codemap::is_code`]) is
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
//! ([`with_ir_frames`]), and JIT code is resolved by PC through the code
//! registry's PC → IR-site map ([`crate::codemap::site_of_pc`]): `@fn L:C`
//! (`@fn +0xOFF` for the few instructions Cranelift kept no location for).
//!
//! # Modules
//!
//! - `ring`: what the handler records, lock-free, and the handler itself;
//! - `writer`: turning a recorded write into a [`Writer`] (symbols, width,
//!   backtrace) after the handler;
//! - `perf` (Linux x86_64): the `perf_event_open` breakpoints and the
//!   instruction decoder.

use crate::layout::DictLayout;
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};

mod ring;
mod writer;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod perf;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
use perf as imp;

pub use crate::backtrace::IrFrame;
pub use ring::pending;
use ring::{ARMED, DISCARDED, DROPPED, HITS, LEGIT, UNATTRIBUTED};
pub use writer::{decode_width, drain, write_human, ForeignWrite, WriterId};

/// Most words watched at once (x86_64 has four debug address registers).
pub const MAX_SLOTS: usize = 4;

/// What to watch (spec §6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchSpec {
    /// `object:N[+M…]`: these allocation ids.
    Objects(Vec<u64>),
    /// `sample:K[@P]`: one allocation in K, the ids ≡ P (mod K); without
    /// `@P` the phase is drawn at random when the session starts.
    Sample {
        /// K.
        k: u64,
        /// P (`< K`), if given.
        phase: Option<u64>,
    },
    /// `recent`: the most recently allocated objects.
    Recent,
}

/// A malformed `--watch` SPEC.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("watch spec `{spec}`: {msg} (expected object:N[+M...], sample:K[@P] or recent)")]
pub struct WatchSpecError {
    /// The SPEC as given.
    pub spec: String,
    /// What is wrong with it.
    pub msg: String,
}

impl WatchSpec {
    /// Parses `object:N[+M…]`, `sample:K[@P]` or `recent`.
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
            Some(("sample", rest)) => {
                let (k, phase) = match rest.split_once('@') {
                    Some((k, p)) => (count(k)?, Some(p)),
                    None => (count(rest)?, None),
                };
                let phase = match phase {
                    None => None,
                    Some(p) => match p.trim().parse::<u64>() {
                        Ok(p) if p < k => Some(p),
                        _ => return Err(err(&format!("phase `{p}` is not a number below {k}"))),
                    },
                };
                Ok(WatchSpec::Sample { k, phase })
            }
            _ => Err(err("unknown form")),
        }
    }

    /// Does this spec pick allocation `id` when it is created?
    fn picks(&self, id: u64) -> bool {
        match self {
            WatchSpec::Objects(ids) => ids.contains(&id),
            WatchSpec::Sample { k, phase } => id % k == phase.unwrap_or(1 % k),
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
            WatchSpec::Sample { k, phase: None } => write!(f, "sample:{k}"),
            WatchSpec::Sample { k, phase: Some(p) } => write!(f, "sample:{k}@{p}"),
            WatchSpec::Recent => f.write_str("recent"),
        }
    }
}

/// How a session moves its breakpoints from object to object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rearm {
    /// Each hardware slot's events stay open for the session: arming
    /// retargets them (`PERF_EVENT_IOC_MODIFY_ATTRIBUTES`), disarming
    /// disables them (`PERF_EVENT_IOC_DISABLE`).
    Retarget,
    /// A perf event opened per arming and closed per disarming (per
    /// thread): the kernel refused the retarget, or [`force_reopen`] asked
    /// for it. Why, in words.
    Reopen(String),
}

impl Rearm {
    /// `"retarget"` or `"reopen"` (JSON `"rearm"`).
    pub fn name(&self) -> &'static str {
        match self {
            Rearm::Retarget => "retarget",
            Rearm::Reopen(_) => "reopen",
        }
    }
}

/// Whether watchpoints are on, and what they saw (the `"watch"` JSON object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStatus {
    /// Watching.
    Active {
        /// The SPEC, as given.
        spec: String,
        /// `sample:K`'s phase P (given, or drawn at random): the spec that
        /// repeats the run is `sample:K@P`.
        phase: Option<u64>,
        /// What the session saw so far.
        counts: WatchCounts,
        /// How its breakpoints are re-armed.
        rearm: Rearm,
    },
    /// Watchpoints cannot be had here.
    Unavailable {
        /// Why not (one line).
        reason: String,
    },
}

impl WatchStatus {
    /// `{"active": true, "spec", "phase" (sample:K), "watched",
    /// "allocations", "freed_unwritten", "armed", "hits", "legitimate",
    /// "foreign", "dropped", "rearm" ("retarget" or "reopen"), and
    /// "rearm_reason" when it reopens}` or `{"active": false, "reason"}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            WatchStatus::Active {
                spec,
                phase,
                counts,
                rearm,
            } => {
                let mut j = serde_json::json!({
                "active": true,
                "spec": spec,
                "phase": phase,
                "watched": counts.armed,
                "allocations": counts.allocations,
                "freed_unwritten": counts.freed_unwritten,
                "armed": counts.armed,
                "not_armed": counts.not_armed,
                "hits": counts.hits,
                "legitimate": counts.legitimate,
                "foreign": counts.foreign,
                "dropped": counts.dropped,
                "rearm": rearm.name(),
                });
                if let Rearm::Reopen(why) = rearm {
                    j["rearm_reason"] = why.as_str().into();
                }
                j
            }
            WatchStatus::Unavailable { reason } => {
                serde_json::json!({"active": false, "reason": reason})
            }
        }
    }

    /// The stderr line of an unavailable session.
    pub fn unavailable_line(reason: &str) -> String {
        format!("guardlift: watchpoints unavailable: {reason}")
    }

    /// The stderr line that makes a `sample:K` run repeatable: the phase
    /// drawn (`None` for other specs, and when `@P` was given).
    pub fn phase_line(&self) -> Option<String> {
        match self {
            WatchStatus::Active {
                spec,
                phase: Some(p),
                ..
            } if !spec.contains('@') => {
                let k = spec.trim().trim_start_matches("sample:");
                Some(format!(
                    "guardlift: watch {spec}: phase {p} (drawn at random; repeat with --watch sample:{k}@{p})"
                ))
            }
            _ => None,
        }
    }

    /// The end-of-run summary line (stderr): how many objects were watched
    /// and how many of them were freed with no write trapped, and how the
    /// breakpoints were re-armed.
    pub fn summary_line(&self) -> Option<String> {
        match self {
            WatchStatus::Active {
                spec,
                counts,
                rearm,
                ..
            } => Some(format!(
                "guardlift: watch {spec}: {} of {} allocations watched, {} freed unwritten, {} write(s) trapped ({} legitimate, {} foreign{}); re-armed by {}",
                counts.armed,
                counts.allocations,
                counts.freed_unwritten,
                counts.hits,
                counts.legitimate,
                counts.foreign,
                if counts.not_armed > 0 {
                    format!(", {} picked but not armed: all slots busy", counts.not_armed)
                } else {
                    String::new()
                },
                match rearm {
                    Rearm::Retarget => "retargeting open perf events".to_string(),
                    Rearm::Reopen(why) => format!("a perf event open and close per object ({why})"),
                }
            )),
            WatchStatus::Unavailable { .. } => None,
        }
    }
}

/// Counters of a session.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// Objects created while the session ran (the ones a spec can pick).
    pub allocations: u64,
    /// Objects that were armed (over the whole run).
    pub armed: u64,
    /// Armed objects freed (while armed) with no write trapped after their
    /// initialisation.
    pub freed_unwritten: u64,
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
    /// Traps that arrived after their arming was gone (its object freed, or
    /// its slot given to another object), discarded: a breakpoint that
    /// fired on a word no longer watched. Zero unless a write races the
    /// disarming on another thread (not in `hits`, not in the JSON).
    pub discarded: u64,
    /// Debug exceptions the kernel could not attribute to a breakpoint
    /// (`SIGTRAP` with `TRAP_BRKPT` or `TRAP_HWBKPT`, not a perf trap with
    /// guardlift's tag) while the session ran: taken as traps of the armed
    /// words that changed (those are in `hits`). Zero on bare metal so far;
    /// a KVM guest delivers some (not in the JSON).
    pub unattributed: u64,
}

/// An IR position: the writer's site, or one IR frame of a backtrace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IrSite {
    /// The IR function.
    pub function: String,
    /// 0 when only the function is known (no source location at the PC).
    pub line: u32,
    /// Column of the IR instruction.
    pub col: u32,
    /// Its opcode.
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

impl IrSite {
    /// The IR site of `pc` if it is in registered code (the code registry,
    /// [`crate::codemap`]).
    pub fn of_pc(pc: u64) -> Option<IrSite> {
        crate::codemap::site_of_pc(pc as usize, |s| IrSite {
            function: s.frame.function.to_string(),
            line: s.frame.line,
            col: s.frame.col,
            op: s.frame.op.to_string(),
            offset: s.offset as u64,
        })
    }
}

/// Who wrote a watched word, as the `foreign_write` report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// Allocation id of the watched object.
    pub object_id: u64,
    /// `symbol+0xOFF` of the writing instruction (`?` if unknown).
    pub symbol: String,
    /// Address of the writing instruction's end (where the trap stopped).
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Sessions.

/// A running session: which objects are armed, for which runtime.
struct Session {
    owner: usize,
    /// The SPEC as given (`sample:K` without its drawn phase).
    given: String,
    /// The SPEC with `sample:K`'s phase resolved.
    spec: WatchSpec,
    layout: DictLayout,
    /// Per hardware slot: the object armed and the arming order (for
    /// `recent`).
    slots: [Option<ArmedSlot>; MAX_SLOTS],
    /// Per hardware slot: the fds of its events (one per thread at their
    /// opening; threads started later inherit them). With
    /// [`Rearm::Retarget`] they stay open (disabled while the slot is
    /// free) until the session stops; with [`Rearm::Reopen`] they are
    /// empty while the slot is free.
    events: [Vec<i32>; MAX_SLOTS],
    rearm: Rearm,
    arm_seq: u64,
    counts: WatchCounts,
}

struct ArmedSlot {
    object: u64,
    seq: u64,
}

/// Sessions started from now on re-arm by a perf event open and close per
/// object ([`Rearm::Reopen`]) even where the kernel can retarget: the path
/// kept for kernels that refuse `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`, for
/// comparing the two (`guardlift bench`) and testing the fallback.
pub fn force_reopen(on: bool) {
    FORCE_REOPEN.store(on, SeqCst);
}

static FORCE_REOPEN: AtomicBool = AtomicBool::new(false);

/// A phase in `0..k` that differs from run to run (clock and pid mixed):
/// printed, so that a run can be repeated with `sample:K@P`.
fn random_phase(k: u64) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) % k
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
        for c in [&HITS, &LEGIT, &DROPPED, &DISCARDED, &UNATTRIBUTED] {
            c.store(0, SeqCst);
        }
    }
    let given = spec.to_string();
    let spec = match spec {
        WatchSpec::Sample { k, phase: None } => WatchSpec::Sample {
            k,
            phase: Some(random_phase(k)),
        },
        other => other,
    };
    let phase = match spec {
        WatchSpec::Sample { phase, .. } => phase,
        _ => None,
    };
    let rearm = if FORCE_REOPEN.load(SeqCst) {
        Rearm::Reopen("asked for: watch::force_reopen".into())
    } else {
        Rearm::Retarget
    };
    let status = WatchStatus::Active {
        spec: given.clone(),
        phase,
        counts: WatchCounts::default(),
        rearm: rearm.clone(),
    };
    if let Some(old) = s.as_mut() {
        // The same runtime starting again: its breakpoints go first.
        close_session(old);
    }
    *s = Some(Session {
        owner,
        given,
        spec,
        layout,
        slots: Default::default(),
        events: Default::default(),
        rearm,
        arm_seq: 0,
        counts: WatchCounts::default(),
    });
    ACTIVE.store(true, SeqCst);
    status
}

/// Ends `owner`'s session: every breakpoint is disarmed and every event
/// closed. Pending writes stay in the ring until [`drain`]ed (or the next
/// session starts).
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
            close_session(&mut cur);
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
    counts.discarded = DISCARDED.load(SeqCst);
    counts.unattributed = UNATTRIBUTED.load(SeqCst);
    counts.foreign = counts.hits - counts.legitimate;
    Some(WatchStatus::Active {
        spec: cur.given.clone(),
        phase: match cur.spec {
            WatchSpec::Sample { phase, .. } => phase,
            _ => None,
        },
        counts,
        rearm: cur.rearm.clone(),
    })
}

/// The heap created object `id` at `obj` (its dict word is in place), or
/// the host registered one (`host`: its word may not be initialised yet —
/// a host may register in its allocation hook — so the slot starts in the
/// *initialising* state: well-formed writes to it are the host's
/// initialisation, not foreign, until IR code first uses the object,
/// [`on_object_used`], or guardlift's own code writes it).
pub fn on_object_created(owner: usize, id: u64, obj: u64, host: bool) {
    let mut s = lock(&SESSION);
    let Some(cur) = s.as_mut().filter(|c| c.owner == owner) else {
        return;
    };
    cur.counts.allocations += 1;
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
    let gen = ring::next_gen();
    a.last.store(word, SeqCst);
    a.object.store(obj, SeqCst);
    a.id.store(id, SeqCst);
    a.init.store(host, SeqCst);
    a.writes.store(0, SeqCst);
    a.gen.store(gen, SeqCst);
    a.slot.store(slot, SeqCst);
    if arm(cur, i, slot, gen) {
        cur.arm_seq += 1;
        cur.slots[i] = Some(ArmedSlot {
            object: obj,
            seq: cur.arm_seq,
        });
        cur.counts.armed += 1;
    } else {
        a.slot.store(0, SeqCst);
        a.gen.store(0, SeqCst);
        cur.counts.not_armed += 1;
    }
}

/// Points hardware slot `i`'s breakpoint at `addr` with the arming `gen`
/// and enables it: retargets its open events, or opens them (its first
/// arming, or the [`Rearm::Reopen`] path). A retarget the kernel refuses
/// (`ENOTTY`, `EINVAL`) falls back to closing and reopening, and, when the
/// reopening works, the session reopens from then on.
fn arm(cur: &mut Session, i: usize, addr: u64, gen: u64) -> bool {
    if !cur.events[i].is_empty() {
        match imp::retarget(&cur.events[i], addr, i, gen) {
            Ok(()) => return true,
            Err(e) => {
                imp::close_all(&cur.events[i]);
                cur.events[i].clear();
                let opened = open_events(cur, i, addr, gen);
                if opened && imp::refused(e) {
                    cur.rearm = Rearm::Reopen(imp::describe(e));
                }
                return opened;
            }
        }
    }
    open_events(cur, i, addr, gen)
}

fn open_events(cur: &mut Session, i: usize, addr: u64, gen: u64) -> bool {
    match imp::arm(addr, i, gen) {
        Ok(fds) if !fds.is_empty() => {
            cur.events[i] = fds;
            true
        }
        _ => false,
    }
}

/// The heap is about to free `obj`: its breakpoint (if any) goes, on every
/// thread, before this returns (disabling a perf event, or closing it,
/// removes it and the events its threads inherited synchronously). A trap
/// of that arming still on its way (raised before, delivered after)
/// carries the arming's generation and is discarded by the handler;
/// writes already in the ring keep the object id they trapped with.
pub fn on_object_freed(owner: usize, obj: u64) {
    let mut s = lock(&SESSION);
    let Some(cur) = s.as_mut().filter(|c| c.owner == owner) else {
        return;
    };
    if let Some(i) =
        (0..MAX_SLOTS).find(|&i| cur.slots[i].as_ref().is_some_and(|a| a.object == obj))
    {
        if ARMED[i].writes.load(SeqCst) == 0 {
            cur.counts.freed_unwritten += 1;
        }
        disarm(cur, i);
    }
}

/// IR code uses `obj` (the runtime was asked about it by instrumented
/// code or the interpreter): a host object's initialisation is over, its
/// well-formed writes by other code are foreign from now on. Lock-free.
pub fn on_object_used(obj: u64) {
    for a in &ARMED {
        if a.init.load(SeqCst) && a.object.load(SeqCst) == obj && a.slot.load(SeqCst) != 0 {
            a.init.store(false, SeqCst);
        }
    }
}

/// Takes hardware slot `i`'s breakpoint off its word on every thread:
/// disabled (kept open for the next arming) when the session retargets,
/// else — or if disabling fails — closed.
fn disarm(cur: &mut Session, i: usize) {
    if cur.slots[i].take().is_some() {
        // A late trap of this arming no longer matches.
        ARMED[i].gen.store(0, SeqCst);
        ARMED[i].slot.store(0, SeqCst);
        let kept = cur.rearm == Rearm::Retarget && imp::disable(&cur.events[i]).is_ok();
        if !kept {
            imp::close_all(&cur.events[i]);
            cur.events[i].clear();
        }
    }
}

/// Disarms every slot and closes every event of the session.
fn close_session(cur: &mut Session) {
    for i in 0..MAX_SLOTS {
        disarm(cur, i);
        imp::close_all(&cur.events[i]);
        cur.events[i].clear();
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
    pub fn arm(_addr: u64, _hw: usize, _gen: u64) -> Result<Vec<i32>, i32> {
        Err(0)
    }
    pub fn retarget(_fds: &[i32], _addr: u64, _hw: usize, _gen: u64) -> Result<(), i32> {
        Err(0)
    }
    pub fn disable(_fds: &[i32]) -> Result<(), i32> {
        Err(0)
    }
    pub fn refused(_e: i32) -> bool {
        false
    }
    pub fn describe(_e: i32) -> String {
        String::new()
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
        super::ring::on_hit(0, 0, 0)
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
        assert_eq!(
            WatchSpec::parse("sample:4").unwrap(),
            WatchSpec::Sample { k: 4, phase: None }
        );
        assert_eq!(
            WatchSpec::parse("sample:4@3").unwrap(),
            WatchSpec::Sample {
                k: 4,
                phase: Some(3)
            }
        );
        assert_eq!(
            WatchSpec::parse("sample:4@0").unwrap().to_string(),
            "sample:4@0"
        );
        assert_eq!(WatchSpec::parse("recent").unwrap(), WatchSpec::Recent);
        for bad in [
            "",
            "object:",
            "object:0",
            "object:x",
            "sample:0",
            "all",
            "recent:1",
            "sample:3@3",
            "sample:3@",
            "sample:3@x",
            "sample:@1",
        ] {
            assert!(WatchSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(WatchSpec::Objects(vec![2, 7]).to_string(), "object:2+7");
        let s = |p| WatchSpec::Sample { k: 3, phase: p };
        assert!(s(Some(1)).picks(1) && s(Some(1)).picks(4) && !s(Some(1)).picks(2));
        assert!(s(Some(0)).picks(3) && s(Some(0)).picks(6) && !s(Some(0)).picks(1));
        for _ in 0..20 {
            assert!(random_phase(3) < 3);
        }
    }
}
