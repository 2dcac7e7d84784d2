//! `guardlift bench`: one run that measures guardlift side by side with what
//! users would pick instead, and prints ratios (issue "Performance").
//!
//! 1. store_attr loop (values mode): JIT plain, JIT instrumented (dict
//!    check; every check) per mode, lifetime+bounds, the reference
//!    interpreter, and CPython's `o.x = i`.
//! 2. adstack reverse-mode loop (push/top/acc_adj/pop): plain vs
//!    instrumented (adstack check per mode; every check).
//! 3. the same store loop in C, `gcc -O2` and `gcc -O2 -fsanitize=address`.
//! 4. the call-heavy nested-context-manager loop (three objects, `enter` and
//!    `exit` called on each per iteration): plain, `--checks dict`,
//!    `--checks dict,adstack`, `--instrument`.
//! 5. compile time per instruction, by phase, from 10^3 to 10^6
//!    instructions: one big function (a straight chain of blocks, each
//!    passing a block parameter), and many functions of ~200 instructions.
//! 6. watchpoints: a legitimate dict-word store from JIT code with `--watch`
//!    off (zero cost: no trace of it in code or runtime) and on that word.
//! 7. compile time of one module with `perfmap`, `jitdump`, `gdb` off (the
//!    default) and each on, and without the unwind info registration
//!    ([`debuginfo`]).
//! 8. code shaped like a method JIT's output: richards, nbody,
//!    spectral_norm and a loop of leaf calls with a cold host call, plain,
//!    `--checks dict` and `--instrument` ([`jit_shapes`]).
//!
//! `--only` picks row groups ([`GROUPS`]).
//!
//! Every number is the median of several repeats, measured in this process
//! as thread CPU time; the variants a ratio compares run in interleaved
//! rounds.

use crate::source::CliError;
use guardlift_instrument::{instrument, CheckSet};
use guardlift_interp::Interpreter;
use guardlift_ir::Module;
use guardlift_jit::{CompileOptions, Jit, Ptr};

use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::process::Command;

mod compile;
mod debuginfo;
mod jit_shapes;
mod objects;
mod watch_alloc;

use compile::{compile_scaling, Shape};
use objects::{obj_free, obj_new};

/// `@stores(obj, n)`, from the corpus every engine runs.
const STORE_LOOP: &str = include_str!("../../tests/programs/attrs_store_loop.glir");

/// Reverse-mode loop: `rounds` times, push 1024 primals, then walk back with
/// top / acc_adj / top_adj / pop, accumulating a gradient.
const ADSTACK_LOOP: &str = "
fn @grad(%rounds: i64) -> f64 {
entry:
    %s = adstack.alloc.f64 1024
    %g0 = fconst.f64 0.0
    %z = iconst.i64 0
    jump round(%s, %z, %g0)
round(%s1: adstack.f64, %r: i64, %g: f64):
    %done = icmp.sge %r, %rounds
    brif %done, exit(%g), fwd(%s1, %z, %r, %g)
fwd(%s2: adstack.f64, %i: i64, %r2: i64, %g2: f64):
    %cap = iconst.i64 1024
    %full = icmp.sge %i, %cap
    brif %full, rev(%s2, %r2, %g2), push(%s2, %i, %r2, %g2)
push(%s3: adstack.f64, %j: i64, %r3: i64, %g3: f64):
    %x = fcvt_from_sint.f64 %j
    adstack.push %s3, %x
    %one = iconst.i64 1
    %j2 = iadd %j, %one
    jump fwd(%s3, %j2, %r3, %g3)
rev(%s4: adstack.f64, %r4: i64, %g4: f64):
    %n = adstack.len %s4
    %empty = icmp.eq %n, %z
    brif %empty, next(%s4, %r4, %g4), pop(%s4, %r4, %g4)
pop(%s5: adstack.f64, %r5: i64, %g5: f64):
    %v = adstack.top %s5
    %h = fconst.f64 0.5
    adstack.acc_adj %s5, %h
    %a = adstack.top_adj %s5
    %va = fmul %v, %a
    %g6 = fadd %g5, %va
    adstack.pop %s5
    jump rev(%s5, %r5, %g6)
next(%s6: adstack.f64, %r6: i64, %g7: f64):
    %one2 = iconst.i64 1
    %r7 = iadd %r6, %one2
    jump round(%s6, %r7, %g7)
exit(%gr: f64):
    return %gr
}
";

/// The call-heavy workload of the README's tag-flip demo
/// (examples/ctxmgr_tagflip.glir) without the rogue call, with three
/// managers: each iteration enters and exits all three (six calls, each
/// storing or loading its object's attributes).
const CTXMGR_LOOP: &str = "
fn @enter(%cm: ptr, %depth: i64) {
entry:
    store_attr %cm, 0, %depth
    %one = iconst.i64 1
    store_attr %cm, 1, %one
    return
}

fn @exit(%cm: ptr) -> i64 {
entry:
    %zero = iconst.i64 0
    store_attr %cm, 1, %zero
    %d = load_attr %cm, 0
    return %d
}

fn @main(%outer: ptr, %middle: ptr, %inner: ptr, %n: i64) -> i64 {
entry:
    %zero = iconst.i64 0
    jump loop(%zero, %zero)
loop(%i: i64, %acc: i64):
    %done = icmp.sge %i, %n
    brif %done, finish(%acc), work(%i, %acc)
work(%k: i64, %a: i64):
    %d1 = iconst.i64 1
    call @enter(%outer, %d1)
    %d2 = iconst.i64 2
    call @enter(%middle, %d2)
    %d3 = iconst.i64 3
    call @enter(%inner, %d3)
    %x3 = call @exit(%inner)
    %x2 = call @exit(%middle)
    %x1 = call @exit(%outer)
    %s = iadd %x1, %x2
    %s2 = iadd %s, %x3
    %a2 = iadd %a, %s2
    %one = iconst.i64 1
    %k2 = iadd %k, %one
    jump loop(%k2, %a2)
finish(%r: i64):
    return %r
}
";

/// The check sets of the context-manager rows: row suffix and checks.
const CTXMGR_CHECKS: [(&str, &str); 3] = [
    ("dict", "dict"),
    ("dict,adstack", "dict,adstack"),
    ("instrument", "all"),
];

const C_STORE_LOOP: &str = r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* CPython 3.12's managed-dict word at obj - 24; values-tagged (values - 1). */
__attribute__((noinline)) static void slow(char *o, int64_t i, int64_t v) { (void)o; (void)i; (void)v; abort(); }
__attribute__((noinline)) static void stores(char *o, int64_t n) {
    for (int64_t k = 0; k < n; k++) {
        uint64_t w = *(volatile uint64_t *)(o - 24);
        if (w & 1) ((int64_t *)(w + 1))[1] = k; else slow(o, 1, k);
    }
}
int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
    char *block = calloc(1, 64);
    int64_t *values = aligned_alloc(16, 64);
    char *o = block + 24;
    *(uint64_t *)(o - 24) = (uint64_t)values - 1;
    stores(o, 1000);
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    stores(o, n);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    printf("%.4f %lld\n", ns / n, (long long)values[1]);
    free(values); free(block);
    return 0;
}
"#;

const PY_STORE_LOOP: &str = "
import sys, time
class O: pass
def stores(o, n):
    for i in range(n):
        o.x = i
o = O(); n = int(sys.argv[1])
stores(o, 1000)
t = time.process_time_ns(); stores(o, n); t = time.process_time_ns() - t
print(t / n)
";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median over `reps` of `f()`'s seconds, divided by `per`: ns per unit.
fn ns_per(reps: usize, per: u64, f: impl FnMut()) -> f64 {
    let mut fs: [Box<dyn FnMut() + '_>; 1] = [Box::new(f)];
    interleaved(reps, per, &mut fs)[0]
}

/// Times variants that are compared with each other in interleaved
/// rounds (every round runs each variant once, in turn), so that a slow
/// phase of the machine — frequency changes, a neighbour on a shared
/// core — falls on all of them alike; returns each variant's median ns
/// per unit. Every variant runs once first to warm up.
fn interleaved(reps: usize, per: u64, fs: &mut [Box<dyn FnMut() + '_>]) -> Vec<f64> {
    for f in fs.iter_mut() {
        f();
    }
    let mut samples = vec![Vec::with_capacity(reps); fs.len()];
    for _ in 0..reps {
        for (f, s) in fs.iter_mut().zip(&mut samples) {
            let t = thread_cpu_ns();
            f();
            s.push((thread_cpu_ns() - t) / per as f64);
        }
    }
    samples.into_iter().map(median).collect()
}

/// This thread's CPU time in ns: on a shared machine the time other
/// processes hold the core does not count (wall time did, and swamped the
/// ratios under load).
fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn parse(text: &str) -> Module {
    guardlift_ir::parse_and_verify(text).expect("bench IR is valid")
}

fn runtime(mode: Mode) -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode,
        ..Default::default()
    })
}

struct Row {
    name: String,
    ns: Option<f64>,
    note: String,
}

fn row(name: &str, ns: Option<f64>, note: impl Into<String>) -> Row {
    Row {
        name: name.into(),
        ns,
        note: note.into(),
    }
}

/// A measured variant: row name, module, runtime mode, row note.
type Variant<'m> = (String, &'m Module, Mode, &'static str);

/// The uninstrumented module `m` (as `plain`: name and note), then the
/// instrumented `mi` in each mode ([`each_mode`]).
fn mode_variants<'m>(
    plain: (&str, &'static str),
    instrumented: &str,
    m: &'m Module,
    mi: &'m Module,
) -> Vec<Variant<'m>> {
    std::iter::once((plain.0.to_string(), m, Mode::Abort, plain.1))
        .chain(each_mode(instrumented, mi))
        .collect()
}

/// The instrumented `mi` in each mode, named `"{instrumented} {mode}"`.
fn each_mode<'m>(instrumented: &str, mi: &'m Module) -> Vec<Variant<'m>> {
    [Mode::Abort, Mode::Recover, Mode::Trap]
        .map(|mode| {
            (
                format!("{instrumented} {}", mode.name()),
                mi,
                mode,
                "instrumented",
            )
        })
        .into()
}

/// Compiles every variant with `make` (a closure that runs it once;
/// its `TypedFunc` keeps the compiled code alive), times them in
/// interleaved rounds, and gives one row per variant (ns per `per`).
fn time_variants(
    variants: &[Variant<'_>],
    reps: usize,
    per: u64,
    make: impl Fn(&Module, Mode) -> Box<dyn FnMut()>,
) -> Vec<Row> {
    let mut fs: Vec<Box<dyn FnMut()>> = variants
        .iter()
        .map(|(_, mm, mode, _)| make(mm, *mode))
        .collect();
    let ns = interleaved(reps, per, &mut fs);
    variants
        .iter()
        .zip(ns)
        .map(|((name, _, _, note), ns)| row(name, Some(ns), *note))
        .collect()
}

fn store_attr_rows(reps: usize, n: u64) -> Vec<Row> {
    let m = parse(STORE_LOOP);
    let dict = CheckSet {
        dict: true,
        ..Default::default()
    };
    // The uninstrumented loop and the instrumented one in each mode,
    // compiled first, then timed in interleaved rounds.
    let mi = instrument(&m, dict);
    let mut variants = mode_variants(
        ("store_attr jit", "uninstrumented"),
        "store_attr jit+dict",
        &m,
        &mi,
    );
    // Every check (lifetime, dict, bounds, clobber: `--instrument`) on
    // the same loop, in each mode; and the two object-memory checks alone.
    let mall = instrument(&m, CheckSet::ALL);
    variants.extend(each_mode("store_attr jit+all", &mall));
    let mlb = instrument(
        &m,
        CheckSet::parse("lifetime,bounds").expect("bench check lists are valid"),
    );
    variants.push((
        "store_attr jit+lifetime,bounds recover".into(),
        &mlb,
        Mode::Recover,
        "instrumented",
    ));
    let mut rows = time_variants(&variants, reps, n, |mm, mode| {
        let rt = runtime(mode);
        // Something was freed (every variant): no check may count on
        // "nothing was ever freed".
        let junk = obj_new(&rt, 1);
        obj_free(&rt, junk);
        let o = obj_new(&rt, 2);
        let code = Jit::compile(mm, rt, &CompileOptions::default()).expect("compiles");
        let f = code.func::<(Ptr, i64), i64>("stores").expect("signature");
        Box::new(move || {
            // SAFETY: `o` is a live object of the runtime (2 attributes).
            std::hint::black_box(unsafe { f.call((Ptr(o), n as i64)) });
        })
    });
    let rt = runtime(Mode::Abort);
    let o = obj_new(&rt, 2);
    let it = Interpreter::new(&m, rt, &HashMap::new()).expect("links");
    let ni = (n / 50).max(1000);
    rows.push(row(
        "store_attr interp",
        Some(ns_per(reps.min(5), ni, || {
            it.call("stores", &[o, ni]).expect("runs");
        })),
        "reference interpreter",
    ));
    rows.push(python_row(n));
    rows.extend(c_rows(n));
    rows
}

/// JIT code storing well-formed words into a dict slot, twice per iteration.
const SLOT_STORE_LOOP: &str = "
fn @slot_stores(%o: ptr, %n: i64) -> i64 {
entry:
    %w = dict_slot.load %o
    %e = iconst.i64 0
    %z = iconst.i64 0
    jump loop(%z)
loop(%i: i64):
    %done = icmp.sge %i, %n
    brif %done, exit, body(%i)
body(%k: i64):
    dict_slot.store %o, %e
    dict_slot.store %o, %w
    %one = iconst.i64 1
    %k2 = iadd %k, %one
    jump loop(%k2)
exit:
    %r = dict_slot.load %o
    return %r
}
";

/// The watch group: watched stores, then the host allocation rows
/// ([`watch_alloc`]).
fn watch_rows(reps: usize, n: u64) -> Vec<Row> {
    let mut rows = watch_store_rows(reps, n);
    rows.extend(watch_alloc::rows(reps, n));
    rows
}

/// The cost of a watched legitimate write (each one traps: the kernel
/// delivers SIGTRAP, the handler counts it) next to the same store with
/// watchpoints off, in ns per store.
fn watch_store_rows(reps: usize, n: u64) -> Vec<Row> {
    use guardlift_runtime::watch::{WatchSpec, WatchStatus};
    // Instrumented (dict check): only an instrumented module's stores are
    // guardlift's own, legitimate writes (spec §6.1); both rows run it.
    let dict = CheckSet {
        dict: true,
        ..Default::default()
    };
    let m = instrument(&parse(SLOT_STORE_LOOP), dict);
    let make = |rt: std::sync::Arc<Runtime>, o: u64| {
        let code = Jit::compile(&m, rt, &CompileOptions::default()).expect("compiles");
        let f = code
            .func::<(Ptr, i64), i64>("slot_stores")
            .expect("signature");
        move || {
            // SAFETY: `o` is a live object of the runtime.
            std::hint::black_box(unsafe { f.call((Ptr(o), n as i64)) });
        }
    };
    let off_rt = runtime(Mode::Abort);
    let off = make(off_rt.clone(), obj_new(&off_rt, 1));
    let on_rt = runtime(Mode::Abort);
    let status = on_rt.enable_watch(WatchSpec::Objects(vec![1]));
    let on = make(on_rt.clone(), obj_new(&on_rt, 1));
    let off_note = "watchpoints off: the same code, no handler, no syscall";
    match status {
        WatchStatus::Unavailable { reason } => vec![
            row("slot store jit", Some(ns_per(reps, 2 * n, off)), off_note),
            row(
                "slot store jit watched",
                None,
                format!("unavailable: {reason}"),
            ),
        ],
        WatchStatus::Active { .. } => {
            let mut fs: [Box<dyn FnMut() + '_>; 2] = [Box::new(off), Box::new(on)];
            let ns = interleaved(reps, 2 * n, &mut fs);
            let note = "hardware watchpoint on the word: each store traps (SIGTRAP), counted as legitimate";
            // Traps the kernel could not attribute (a KVM guest loses the
            // debug status now and then): said, when there were any.
            let note = match on_rt.watch_status() {
                Some(WatchStatus::Active { counts, .. }) if counts.unattributed > 0 => format!(
                    "{note}; {} traps the kernel could not attribute (no cause in the debug status), taken by the word that changed",
                    counts.unattributed
                ),
                _ => note.to_string(),
            };
            vec![
                row("slot store jit", Some(ns[0]), off_note),
                row("slot store jit watched", Some(ns[1]), note),
            ]
        }
    }
}

fn python_row(n: u64) -> Row {
    let out = Command::new("python3")
        .args(["-c", PY_STORE_LOOP, &(n / 10).to_string()])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let ns = String::from_utf8_lossy(&o.stdout).trim().parse().ok();
            let v = Command::new("python3").arg("--version").output().ok();
            let ver = v
                .map(|v| String::from_utf8_lossy(&v.stdout).trim().to_string())
                .unwrap_or_default();
            row("store_attr cpython", ns, format!("{ver}: `o.x = i`"))
        }
        _ => row("store_attr cpython", None, "python3 not available"),
    }
}

fn c_rows(n: u64) -> Vec<Row> {
    let dir = std::env::temp_dir().join(format!("guardlift-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let src = dir.join("stores.c");
    let _ = std::fs::write(&src, C_STORE_LOOP);
    let mut rows = Vec::new();
    for (name, flags) in [
        ("store_attr gcc -O2", &["-O2"][..]),
        ("store_attr gcc -O2 asan", &["-O2", "-fsanitize=address"]),
    ] {
        let exe = dir.join(if flags.len() > 1 {
            "stores_asan"
        } else {
            "stores"
        });
        let built = Command::new("gcc")
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status();
        let ns = match built {
            Ok(s) if s.success() => {
                let runs: Vec<f64> = (0..5)
                    .filter_map(|_| Command::new(&exe).arg(n.to_string()).output().ok())
                    .filter_map(|o| {
                        String::from_utf8_lossy(&o.stdout)
                            .split_whitespace()
                            .next()?
                            .parse()
                            .ok()
                    })
                    .collect();
                (!runs.is_empty()).then(|| median(runs))
            }
            _ => None,
        };
        rows.push(row(
            name,
            ns,
            if ns.is_some() {
                "C, same loop"
            } else {
                "gcc not available"
            },
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    rows
}

fn adstack_rows(reps: usize, rounds: u64) -> Vec<Row> {
    let m = parse(ADSTACK_LOOP);
    let ops = rounds * 1024 * 5; // push, top, acc_adj, top_adj, pop
    let mi = instrument(
        &m,
        CheckSet {
            adstack: true,
            ..Default::default()
        },
    );
    let mall = instrument(&m, CheckSet::ALL);
    let mut variants = mode_variants(
        ("adstack jit", "uninstrumented, ns per op"),
        "adstack jit+adstack",
        &m,
        &mi,
    );
    variants.push((
        "adstack jit+all abort".into(),
        &mall,
        Mode::Abort,
        "every check (`--instrument`)",
    ));
    time_variants(&variants, reps, ops, |mm, mode| {
        let code = Jit::compile(mm, runtime(mode), &CompileOptions::default()).expect("compiles");
        let f = code.func::<(i64,), f64>("grad").expect("signature");
        Box::new(move || {
            // SAFETY: @grad stays within the adstack buffers it allocates.
            std::hint::black_box(unsafe { f.call((rounds as i64,)) });
        })
    })
}

fn ctxmgr_rows(reps: usize, n: u64) -> Vec<Row> {
    let m = parse(CTXMGR_LOOP);
    let instrumented: Vec<(String, Module)> = CTXMGR_CHECKS
        .iter()
        .map(|&(name, list)| {
            let checks = match list {
                "all" => CheckSet::ALL,
                l => CheckSet::parse(l).expect("bench check lists are valid"),
            };
            (format!("ctxmgr jit+{name}"), instrument(&m, checks))
        })
        .collect();
    let variants: Vec<Variant<'_>> = std::iter::once((
        "ctxmgr jit".to_string(),
        &m,
        Mode::Abort,
        "uninstrumented, ns per iteration",
    ))
    .chain(
        instrumented
            .iter()
            .map(|(name, mi)| (name.clone(), mi, Mode::Abort, "instrumented")),
    )
    .collect();
    time_variants(&variants, reps, n, |mm, mode| {
        let rt = runtime(mode);
        let objs = [obj_new(&rt, 2), obj_new(&rt, 2), obj_new(&rt, 2)];
        let code = Jit::compile(mm, rt, &CompileOptions::default()).expect("compiles");
        let f = code
            .func::<(Ptr, Ptr, Ptr, i64), i64>("main")
            .expect("signature");
        Box::new(move || {
            let args = (Ptr(objs[0]), Ptr(objs[1]), Ptr(objs[2]), n as i64);
            // SAFETY: `objs` are live objects of the runtime (2 attributes).
            std::hint::black_box(unsafe { f.call(args) });
        })
    })
}

fn find(rows: &[Row], name: &str) -> Option<f64> {
    rows.iter().find(|r| r.name == name).and_then(|r| r.ns)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? / b?)
}

/// The row groups of `guardlift bench --only`.
pub const GROUPS: [&str; 7] = [
    "store_attr",
    "adstack",
    "ctxmgr",
    "watch",
    "compile",
    "debuginfo",
    "jitshapes",
];

pub fn bench(json_out: bool, quick: bool, only: &[String]) -> Result<u8, CliError> {
    if let Some(bad) = only.iter().find(|g| !GROUPS.contains(&g.as_str())) {
        return Err(CliError::new(format!(
            "error: unknown bench group `{bad}` (expected one of: {})",
            GROUPS.join(", ")
        )));
    }
    let on = |g: &str| only.is_empty() || only.iter().any(|o| o == g);
    let (reps, n, rounds) = if quick {
        (3, 1_000_000, 20)
    } else {
        (21, 20_000_000, 400)
    };
    let mut rows = Vec::new();
    if on("store_attr") {
        rows.extend(store_attr_rows(reps, n));
    }
    if on("adstack") {
        rows.extend(adstack_rows(reps, rounds));
    }
    if on("ctxmgr") {
        rows.extend(ctxmgr_rows(reps, n / 10));
    }
    if on("watch") {
        rows.extend(watch_rows(reps.min(7), if quick { 2_000 } else { 20_000 }));
    }
    if on("debuginfo") {
        rows.extend(debuginfo::rows(reps.min(11)));
    }
    if on("jitshapes") {
        rows.extend(jit_shapes::rows(reps, quick));
    }
    let (compile, scaling) = if on("compile") {
        compile::measure(quick)
    } else {
        (Vec::new(), None)
    };
    let jit = find(&rows, "store_attr jit");
    let ctx = |checks: &str| {
        ratio(
            find(&rows, &format!("ctxmgr jit+{checks}")),
            find(&rows, "ctxmgr jit"),
        )
    };
    let ratios = json!({
        "ctxmgr_instrumented_over_plain": {
            "dict": ctx("dict"),
            "dict_adstack": ctx("dict,adstack"),
            "instrument": ctx("instrument"),
        },
        "compile_cpu_per_inst_one_function_interleaved": scaling.as_ref().map(|s| {
            json!({ format!("{}_to_{}", s.sizes[0], s.sizes[1]): s.ratio() })
        }),
        "compile_per_inst_largest_over_smallest": {
            "one_function": compile_scaling(&compile, Shape::OneFunction, "us_per_inst"),
            "many_functions": compile_scaling(&compile, Shape::ManyFunctions, "us_per_inst"),
        },
        "compile_cpu_per_inst_largest_over_smallest": {
            "one_function": compile_scaling(&compile, Shape::OneFunction, "cpu_us_per_inst"),
            "many_functions": compile_scaling(&compile, Shape::ManyFunctions, "cpu_us_per_inst"),
        },
        "store_attr_instrumented_over_plain": {
            "abort": ratio(find(&rows, "store_attr jit+dict abort"), jit),
            "recover": ratio(find(&rows, "store_attr jit+dict recover"), jit),
            "trap": ratio(find(&rows, "store_attr jit+dict trap"), jit),
        },
        "adstack_instrumented_over_plain": {
            "abort": ratio(find(&rows, "adstack jit+adstack abort"), find(&rows, "adstack jit")),
            "recover": ratio(find(&rows, "adstack jit+adstack recover"), find(&rows, "adstack jit")),
            "trap": ratio(find(&rows, "adstack jit+adstack trap"), find(&rows, "adstack jit")),
        },
        "store_attr_all_checks_over_plain": {
            "abort": ratio(find(&rows, "store_attr jit+all abort"), jit),
            "recover": ratio(find(&rows, "store_attr jit+all recover"), jit),
            "trap": ratio(find(&rows, "store_attr jit+all trap"), jit),
        },
        "store_attr_lifetime_bounds_over_plain": ratio(find(&rows, "store_attr jit+lifetime,bounds recover"), jit),
        "adstack_all_checks_over_plain": ratio(find(&rows, "adstack jit+all abort"), find(&rows, "adstack jit")),
        "interp_over_jit": ratio(find(&rows, "store_attr interp"), jit),
        "cpython_over_jit": ratio(find(&rows, "store_attr cpython"), jit),
        "asan_over_gcc": ratio(find(&rows, "store_attr gcc -O2 asan"), find(&rows, "store_attr gcc -O2")),
        "jit_instrumented_over_gcc": ratio(find(&rows, "store_attr jit+dict abort"), find(&rows, "store_attr gcc -O2")),
        "compile_debuginfo_over_off": debuginfo::rows_ratios(&rows),
        "jitshapes_over_plain": jit_shapes::ratios(&rows),
    });
    if json_out {
        let j = json!({
            "rows": rows.iter().map(|r| json!({"name": r.name, "ns_per_op": r.ns, "note": r.note})).collect::<Vec<_>>(),
            "ratios": ratios,
            "compile": compile,
            "compile_scaling": scaling.as_ref().map(compile::Scaling::to_json),
            "machine": machine(),
        });
        crate::outln!("{j}");
        return Ok(0);
    }
    crate::outln!("guardlift bench — {} (median of {reps} runs)", machine());
    crate::outln!("\n{:<32} {:>12}  note", "measurement", "ns/op");
    for r in &rows {
        let ns = r.ns.map_or("n/a".to_string(), |v| format!("{v:.3}"));
        crate::outln!("{:<32} {:>12}  {}", r.name, ns, r.note);
    }
    print_ratios(&ratios)?;
    compile::print(&compile, scaling.as_ref())?;
    Ok(0)
}

/// The ratios of the text output, one line per key (per program for the
/// jitshapes rows).
fn print_ratios(ratios: &Json) -> Result<(), CliError> {
    crate::outln!("\nratios");
    let fmt = |v: &Json| v.as_f64().map_or("n/a".to_string(), |x| format!("{x:.2}"));
    let line = |k: &str, v: &Json| match v.as_object() {
        Some(o) => {
            let parts: Vec<String> = o.iter().map(|(m, x)| format!("{m} {}", fmt(x))).collect();
            format!("  {k:<36} {}", parts.join(", "))
        }
        None => format!("  {k:<36} {}", fmt(v)),
    };
    for (k, v) in ratios.as_object().into_iter().flatten() {
        match v.as_object() {
            // One line per program (the jitshapes rows).
            Some(o) if o.values().any(Json::is_object) => {
                for (m, x) in o {
                    crate::outln!("{}", line(&format!("{k} {m}"), x));
                }
            }
            _ => crate::outln!("{}", line(k, v)),
        }
    }
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!(
        "{cpu}, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    )
}
