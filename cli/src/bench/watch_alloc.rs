//! `guardlift bench --only watch`, the allocation rows (issue 29, "Cost"):
//! a host that allocates three objects per iteration from its own free
//! list — registering each with the runtime, initialising its managed-dict
//! word, reporting it freed — as an interpreter's `tp_alloc`/`tp_dealloc`
//! do, plain and under `--watch sample:3` and `--watch recent`, in
//! interleaved rounds. The ratios are what the targets name
//! (`sample:3` ≤ 1.3×, `recent` ≤ 1.5× plain); the note of each watched row
//! says how the session re-armed and what else an armed object costs when a
//! target is missed. Two more rows take the loop apart: `recent` on the
//! fallback path (a perf event open and close per object, what every re-arm
//! cost before events were kept open and retargeted), and `recent` with no
//! write of the word (the re-arm alone, against the same loop plain).

use super::{interleaved, row, runtime, Row};
use guardlift_runtime::watch::{force_reopen, Rearm, WatchSpec, WatchStatus};
use guardlift_runtime::{Mode, Runtime};

/// Objects per iteration.
const PER_ITER: u64 = 3;

/// The host's objects: memory it owns and reuses at once (a free list),
/// the managed-dict word 24 bytes before each object (cpython312).
struct Pool {
    bufs: Vec<[u64; 8]>,
}

impl Pool {
    fn new() -> Pool {
        Pool {
            bufs: (0..PER_ITER).map(|_| [0u64; 8]).collect(),
        }
    }

    /// `n` iterations: each object is registered, its word written (an
    /// initialisation write: legitimate) unless `!writes`, then reported
    /// freed.
    fn run(&mut self, rt: &Runtime, n: u64, writes: bool) {
        for _ in 0..n {
            for b in &mut self.bufs {
                let obj = b.as_ptr() as u64 + 32;
                let _ = rt.register_object(obj);
                if writes {
                    // The word at obj - 24: values-free, dict-free (0), then
                    // a well-formed dict pointer (8-aligned), as an init
                    // writes.
                    b[1] = std::hint::black_box(b.as_ptr() as u64 & !7);
                    b[1] = 0;
                }
                let _ = rt.object_freed(obj);
            }
        }
    }
}

/// One watched variant of the loop.
struct Variant {
    spec: WatchSpec,
    /// The fallback re-arm path (a perf event open and close per object).
    reopen: bool,
    /// The host writes the word after registering (else the loop is the
    /// re-arm alone).
    writes: bool,
}

/// Plain against one watched runtime (a watch session is process-wide:
/// one at a time), in interleaved rounds: (plain ns, watched ns) per
/// object and how the session re-armed, or why the watch is unavailable.
fn against(reps: usize, n: u64, v: Variant) -> Result<(f64, f64, Rearm), String> {
    let plain = runtime(Mode::Recover);
    let watched = runtime(Mode::Recover);
    force_reopen(v.reopen);
    let status = watched.enable_watch(v.spec);
    force_reopen(false);
    if let WatchStatus::Unavailable { reason } = status {
        return Err(reason);
    }
    let (mut p0, mut p1) = (Pool::new(), Pool::new());
    let w = v.writes;
    let mut fs: [Box<dyn FnMut() + '_>; 2] = [
        Box::new(|| p0.run(&plain, n, w)),
        Box::new(|| p1.run(&watched, n, w)),
    ];
    let ns = interleaved(reps, n * PER_ITER, &mut fs);
    drop(fs);
    let rearm = match watched.watch_status() {
        Some(WatchStatus::Active { rearm, .. }) => rearm,
        _ => Rearm::Reopen("no session".into()),
    };
    // Dropping the runtime ends its session.
    drop(watched);
    Ok((ns[0], ns[1], rearm))
}

/// How a session re-armed, for a row's note.
fn rearm_note(r: &Rearm) -> String {
    match r {
        Rearm::Retarget => "re-armed by retargeting open perf events".into(),
        Rearm::Reopen(why) => format!("re-armed by a perf event open and close per object ({why})"),
    }
}

/// The rows (ns per object): plain, `sample:3`, `recent`.
pub(super) fn rows(reps: usize, n: u64) -> Vec<Row> {
    let plain_note =
        "host alloc loop: register, init the word, object_freed; 3 objects per iteration";
    let mut out = Vec::new();
    let mut plain = None;
    let variant = |spec, reopen, writes| Variant {
        spec,
        reopen,
        writes,
    };
    for (name, v, target, how) in [
        (
            "host alloc loop watch sample:3",
            variant(
                WatchSpec::Sample {
                    k: 3,
                    phase: Some(0),
                },
                false,
                true,
            ),
            Some(1.3),
            "one object in 3 armed on registration and disarmed on free",
        ),
        (
            "host alloc loop watch recent",
            variant(WatchSpec::Recent, false, true),
            Some(1.5),
            "every object armed on registration, disarmed on free",
        ),
        (
            "host alloc loop watch recent open/close",
            variant(WatchSpec::Recent, true, true),
            None,
            "the fallback re-arm path (what every re-arm cost before)",
        ),
        (
            "host alloc loop watch recent re-arm only",
            variant(WatchSpec::Recent, false, false),
            None,
            "register and object_freed, no write of the word: the re-arm alone, against that loop plain",
        ),
    ] {
        let writes = v.writes;
        match against(reps, n, v) {
            Ok((p, w, rearm)) => {
                if writes {
                    plain.get_or_insert(p);
                }
                let verdict = match target {
                    Some(t) if w / p <= t => format!(" (target {t}x, met)"),
                    Some(t) => format!(
                        " (target {t}x, missed: an armed object's init write traps, a SIGTRAP round trip as in `slot store jit watched`, and its re-arm is the `re-arm only` row)"
                    ),
                    None => String::new(),
                };
                out.push(row(
                    name,
                    Some(w),
                    format!(
                        "{:.2}x plain in the same rounds{verdict}; {how}; {}; {:.0} ns per object over plain",
                        w / p,
                        rearm_note(&rearm),
                        w - p
                    ),
                ));
            }
            Err(reason) => out.push(row(name, None, format!("unavailable: {reason}"))),
        }
    }
    out.insert(0, row("host alloc loop", plain, plain_note));
    out
}
