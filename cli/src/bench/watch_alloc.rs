//! `guardlift bench --only watch`, the allocation rows (issue 29, "Cost"):
//! a host that allocates three objects per iteration from its own free
//! list — registering each with the runtime, initialising its managed-dict
//! word, reporting it freed — as an interpreter's `tp_alloc`/`tp_dealloc`
//! do, plain and under `--watch sample:3` and `--watch recent`, in
//! interleaved rounds. The ratios are what the targets name
//! (`sample:3` ≤ 1.3×, `recent` ≤ 1.5× plain); the note of each watched row
//! says what a re-arm costs when a target is missed.

use super::{interleaved, row, runtime, Row};
use guardlift_runtime::watch::{WatchSpec, WatchStatus};
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
    /// initialisation write: legitimate), then reported freed.
    fn run(&mut self, rt: &Runtime, n: u64) {
        for _ in 0..n {
            for b in &mut self.bufs {
                let obj = b.as_ptr() as u64 + 32;
                let _ = rt.register_object(obj);
                // The word at obj - 24: values-free, dict-free (0), then a
                // well-formed dict pointer (8-aligned), as an init writes.
                b[1] = std::hint::black_box(b.as_ptr() as u64 & !7);
                b[1] = 0;
                let _ = rt.object_freed(obj);
            }
        }
    }
}

/// Plain against one watched runtime (a watch session is process-wide:
/// one at a time), in interleaved rounds: (plain ns, watched ns) per
/// object, or why the watch is unavailable.
fn against(reps: usize, n: u64, spec: WatchSpec) -> Result<(f64, f64), String> {
    let plain = runtime(Mode::Recover);
    let watched = runtime(Mode::Recover);
    if let WatchStatus::Unavailable { reason } = watched.enable_watch(spec) {
        return Err(reason);
    }
    let (mut p0, mut p1) = (Pool::new(), Pool::new());
    let mut fs: [Box<dyn FnMut() + '_>; 2] = [
        Box::new(|| p0.run(&plain, n)),
        Box::new(|| p1.run(&watched, n)),
    ];
    let ns = interleaved(reps, n * PER_ITER, &mut fs);
    // Dropping the runtime ends its session.
    drop(fs);
    drop(watched);
    Ok((ns[0], ns[1]))
}

/// The rows (ns per object): plain, `sample:3`, `recent`.
pub(super) fn rows(reps: usize, n: u64) -> Vec<Row> {
    let plain_note =
        "host alloc loop: register, init the word, object_freed; 3 objects per iteration";
    let mut out = Vec::new();
    let mut plain = None;
    for (name, spec, target, how) in [
        (
            "host alloc loop watch sample:3",
            WatchSpec::Sample {
                k: 3,
                phase: Some(0),
            },
            1.3,
            "one object in 3 armed on registration and disarmed on free",
        ),
        (
            "host alloc loop watch recent",
            WatchSpec::Recent,
            1.5,
            "every object armed on registration, disarmed on free",
        ),
    ] {
        match against(reps, n, spec) {
            Ok((p, w)) => {
                plain.get_or_insert(p);
                let met = if w / p <= target {
                    "met"
                } else {
                    "missed: a re-arm is a perf_event open and close per object"
                };
                out.push(row(
                    name,
                    Some(w),
                    format!(
                        "{:.2}x plain in the same rounds (target {target}x, {met}); {how}",
                        w / p
                    ),
                ));
            }
            Err(reason) => out.push(row(name, None, format!("unavailable: {reason}"))),
        }
    }
    out.insert(0, row("host alloc loop", plain, plain_note));
    out
}
