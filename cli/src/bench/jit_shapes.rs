//! `guardlift bench --only jitshapes`: what the checks cost on code shaped
//! like a real method JIT's output (issue 33), not on the loops they were
//! tuned on. Six programs of `tests/programs/jitshapes/` (every engine
//! runs them there too, so the interpreter pins their results):
//!
//! - `richards`: pyperformance's richards hot paths — the scheduler loop
//!   over task objects, method calls, a packet's data list filled by raw
//!   stores, a raw load from the task table, packet-link walks;
//! - `nbody`: pyperformance's nbody `advance` — float attributes, each
//!   body's velocity a list of unboxed floats (raw loads and stores);
//! - `spectral_norm`: pyperformance's spectral_norm — int/float
//!   arithmetic, nested loops, raw list loads and stores;
//! - `cold call loop`: the context-manager loop of leaf calls with a host
//!   call on a branch that is never taken;
//! - `method loop`: a method whose short loop works on its receiver's
//!   attributes, called on three receivers in turn (its entry test's
//!   cache must hold several receivers);
//! - `megamorphic method loop`: the same method called on eight receivers
//!   in turn, more than the entry cache's ways (every entry misses and
//!   asks the runtime).
//!
//! Each is timed plain, with `--checks dict` and with `--instrument`
//! (abort mode), in interleaved rounds, ns per step of its `@main(n)`.

use super::{parse, ratio, runtime, time_variants, Row, Variant};
use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::Mode;
use serde_json::{json, Value as Json};

/// How `@main`'s result comes back (the signature `func` checks).
#[derive(Copy, Clone)]
enum Ret {
    I64,
    F64,
}

/// A program: row name, text, result type, steps per timed call (full run),
/// and what one step is.
struct Program {
    name: &'static str,
    text: &'static str,
    ret: Ret,
    steps: u64,
    step: &'static str,
}

const PROGRAMS: [Program; 6] = [
    Program {
        name: "richards",
        text: include_str!("../../../tests/programs/jitshapes/richards.glir"),
        ret: Ret::I64,
        steps: 400_000,
        step: "scheduler step",
    },
    Program {
        name: "nbody",
        text: include_str!("../../../tests/programs/jitshapes/nbody.glir"),
        ret: Ret::F64,
        steps: 100_000,
        step: "advance step (10 pairs, 5 bodies)",
    },
    Program {
        name: "spectral_norm",
        text: include_str!("../../../tests/programs/jitshapes/spectral_norm.glir"),
        ret: Ret::F64,
        steps: 4_000,
        step: "round (4 products, 12x12)",
    },
    Program {
        name: "cold call loop",
        text: include_str!("../../../tests/programs/jitshapes/cold_call_loop.glir"),
        ret: Ret::I64,
        steps: 2_000_000,
        step: "iteration (6 leaf calls)",
    },
    Program {
        name: "method loop",
        text: include_str!("../../../tests/programs/jitshapes/method_loop.glir"),
        ret: Ret::I64,
        steps: 1_000_000,
        step: "round (3 receivers, a 4-iteration loop each)",
    },
    Program {
        name: "megamorphic method loop",
        text: include_str!("../../../tests/programs/jitshapes/method_loop_megamorphic.glir"),
        ret: Ret::I64,
        steps: 300_000,
        step: "round (8 receivers, a 4-iteration loop each)",
    },
];

/// The check sets timed against plain: row suffix and checks.
const CHECKS: [(&str, CheckSet); 2] = [
    (
        "dict",
        CheckSet {
            dict: true,
            adstack: false,
            clobber: false,
            bounds: false,
            lifetime: false,
        },
    ),
    ("instrument", CheckSet::ALL),
];

/// The rows of every program (quick: a tenth of the steps).
pub(super) fn rows(reps: usize, quick: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for p in &PROGRAMS {
        let n = if quick { p.steps / 10 } else { p.steps };
        let m = parse(p.text);
        let checked: Vec<_> = CHECKS
            .iter()
            .map(|(name, c)| (format!("{} jit+{name}", p.name), instrument(&m, *c)))
            .collect();
        let mut variants: Vec<Variant<'_>> =
            vec![(format!("{} jit", p.name), &m, Mode::Abort, p.step)];
        variants.extend(
            (checked.iter()).map(|(name, mi)| (name.clone(), mi, Mode::Abort, "instrumented")),
        );
        let ret = p.ret;
        rows.extend(time_variants(&variants, reps, n, |mm, mode| {
            let code =
                Jit::compile(mm, runtime(mode), &CompileOptions::default()).expect("compiles");
            match ret {
                Ret::I64 => {
                    let f = code.func::<(i64,), i64>("main").expect("signature");
                    Box::new(move || {
                        // SAFETY: the program allocates, uses and frees its own
                        // objects; every engine runs it (tests/programs/jitshapes).
                        std::hint::black_box(unsafe { f.call((n as i64,)) });
                    })
                }
                Ret::F64 => {
                    let f = code.func::<(i64,), f64>("main").expect("signature");
                    Box::new(move || {
                        // SAFETY: as above.
                        std::hint::black_box(unsafe { f.call((n as i64,)) });
                    })
                }
            }
        }));
    }
    rows
}

/// Each program's `--checks dict` and `--instrument` time over plain.
pub(super) fn ratios(rows: &[Row]) -> Json {
    let find = |name: String| super::find(rows, &name);
    let mut out = serde_json::Map::new();
    for p in &PROGRAMS {
        let plain = find(format!("{} jit", p.name));
        let r = |c: &str| ratio(find(format!("{} jit+{c}", p.name)), plain);
        out.insert(
            p.name.replace(' ', "_"),
            json!({"dict": r("dict"), "instrument": r("instrument")}),
        );
    }
    Json::Object(out)
}
