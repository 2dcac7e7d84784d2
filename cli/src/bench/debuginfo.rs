//! `guardlift bench --only debuginfo`: what telling profilers, debuggers
//! and the unwinder about JIT code costs at compile time (issue 35). One
//! module — the context-manager loop with every check: three functions and
//! their report and slow-path stubs — compiled with every switch off (the
//! default: unwind info registered, nothing else), with `perfmap=1`,
//! `jitdump=1`, `gdb=1` each alone, and without the unwind registration;
//! ns per compile (thread CPU time, system time of the file writes
//! included), in interleaved rounds. Off means nothing published and no
//! file written: checked before any variant that writes one runs.
//!
//! The jitdump file goes to `$JITDUMPDIR` (a temporary directory when it
//! is not set); the files this run creates are removed at its end.

use super::{interleaved, parse, row, runtime, Row, CTXMGR_LOOP};
use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::{JitDebug, Mode};
use serde_json::{json, Value as Json};

/// Modules compiled per timed sample.
const PER_SAMPLE: u64 = 4;

/// Row names: (row, what is on).
const VARIANTS: [(&str, &str); 5] = [
    ("compile debuginfo off", "off"),
    ("compile perfmap=1", "perfmap"),
    ("compile jitdump=1", "jitdump"),
    ("compile gdb=1", "gdb"),
    ("compile unwind off", "no unwind"),
];

fn options(what: &str) -> CompileOptions {
    let d = |perfmap, jitdump, gdb| JitDebug {
        perfmap,
        jitdump,
        gdb,
    };
    let o = CompileOptions::default();
    match what {
        "perfmap" => o.with_debug(d(true, false, false)),
        "jitdump" => o.with_debug(d(false, true, false)),
        "gdb" => o.with_debug(d(false, false, true)),
        "no unwind" => o.with_unwind(false),
        _ => o,
    }
}

/// Were this process's perf map or jitdump file written?
fn files_written() -> bool {
    let pid = std::process::id();
    std::path::Path::new(&guardlift_jit::debuginfo::perfmap::path(pid)).exists()
        || guardlift_jit::debuginfo::jitdump::current_path().is_some()
}

/// The rows: ns per compile of each variant, the ratio to off in the notes.
pub(super) fn rows(reps: usize) -> Vec<Row> {
    let mi = instrument(&parse(CTXMGR_LOOP), CheckSet::ALL);
    let rt = runtime(Mode::Recover);
    let had_files = files_written();
    let tmp = std::env::temp_dir().join(format!("guardlift-bench-jitdump-{}", std::process::id()));
    if std::env::var_os("JITDUMPDIR").is_none() && std::fs::create_dir_all(&tmp).is_ok() {
        std::env::set_var("JITDUMPDIR", &tmp);
    }
    // Off first, alone: nothing may be written.
    let off = Jit::compile(&mi, rt.clone(), &options("off")).expect("compiles");
    let (units, _) = off.unwind_registered();
    drop(off);
    // `None`: not checked (this process had written them before).
    let off_clean = (!had_files).then(|| !files_written());
    let mut fs: Vec<Box<dyn FnMut() + '_>> = VARIANTS
        .iter()
        .map(|&(_, what)| {
            let (mi, rt, opts) = (&mi, rt.clone(), options(what));
            Box::new(move || {
                for _ in 0..PER_SAMPLE {
                    let m = Jit::compile(mi, rt.clone(), &opts).expect("compiles");
                    std::hint::black_box(&m);
                }
            }) as Box<dyn FnMut() + '_>
        })
        .collect();
    let ns = interleaved(reps, PER_SAMPLE, &mut fs);
    drop(fs);
    if !had_files {
        let _ = std::fs::remove_file(guardlift_jit::debuginfo::perfmap::path(std::process::id()));
        if let Some(p) = guardlift_jit::debuginfo::jitdump::current_path() {
            let _ = std::fs::remove_file(p);
        }
    }
    let _ = std::fs::remove_dir(&tmp);
    VARIANTS
        .iter()
        .zip(&ns)
        .map(|(&(name, what), &v)| {
            let over = v / ns[0];
            let note = match what {
                "off" => format!(
                    "one module (ctxmgr, every check), {units} code units with unwind info; {}",
                    match off_clean {
                        Some(true) => "nothing else published, no file written",
                        Some(false) => "FILES WRITTEN with every switch off",
                        None => "files written earlier: not checked",
                    }
                ),
                "no unwind" => format!(
                    "without the unwind info registration: off is {:.3}x this",
                    1.0 / over
                ),
                _ => format!("{what} on: {over:.3}x off"),
            };
            row(name, Some(v), note)
        })
        .collect()
}

/// Each variant's compile time over off (`unwind`: off over no unwind
/// registration, the cost of registering).
pub(super) fn rows_ratios(rows: &[Row]) -> Json {
    let ns = |name: &str| super::find(rows, name);
    let off = ns(VARIANTS[0].0);
    json!({
        "perfmap": super::ratio(ns(VARIANTS[1].0), off),
        "jitdump": super::ratio(ns(VARIANTS[2].0), off),
        "gdb": super::ratio(ns(VARIANTS[3].0), off),
        "unwind": super::ratio(off, ns(VARIANTS[4].0)),
    })
}
