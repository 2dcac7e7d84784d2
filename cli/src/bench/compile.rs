//! The compile rows of `guardlift bench`: time per instruction, by phase,
//! of modules from 10^3 to 10^6 instructions in two shapes (one big
//! function; many functions of ~200 instructions), and the scaling ratio
//! issue 33 names — one big function's CPU time per instruction at 10^6
//! over 10^4 — measured in interleaved rounds, since a single run of each
//! size on a shared machine differs by more than the ratio's margin.

use super::{median, ratio, runtime, thread_cpu_ns};
use crate::source::CliError;
use guardlift_instrument::CheckSet;
use guardlift_jit::{CompileOptions, Jit, Tier};
use guardlift_runtime::Mode;
use serde_json::{json, Value as Json};
use std::time::Instant;

/// One function of about `n` instructions: a straight chain of `2n/5`
/// blocks, each adding one to the value its block parameter carries and
/// passing it on (every other block by a `brif` whose both edges go to the
/// next block) — the shape of the 100 000-block function of issue 18.
fn chain_function(n: usize) -> String {
    let blocks = (n * 2 / 5).max(1);
    let mut s = String::from(
        "fn @main(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %lim = iconst.i64 0x7fffffffffff\n    jump b0(%x)\n",
    );
    for i in 0..blocks {
        let next = if i + 1 == blocks {
            "done".to_string()
        } else {
            format!("b{}", i + 1)
        };
        s += &format!("b{i}(%v{i}: i64):\n    %w{i} = iadd %v{i}, %one\n");
        if i % 2 == 0 {
            s += &format!(
                "    %c{i} = icmp.slt %w{i}, %lim\n    brif %c{i}, {next}(%w{i}), {next}(%v{i})\n"
            );
        } else {
            s += &format!("    jump {next}(%w{i})\n");
        }
    }
    s += "done(%r: i64):\n    return %r\n}\n";
    s
}

/// A module of about `n` instructions in `n/20` blocks.
fn sized_module(n: usize) -> String {
    let mut s = String::from("fn @main(%x: i64) -> i64 {\nentry:\n    jump b0(%x)\n");
    let blocks = (n / 20).max(1);
    for b in 0..blocks {
        s += &format!("b{b}(%a{b}: i64):\n");
        let mut prev = format!("%a{b}");
        for i in 0..9 {
            s += &format!(
                "    %c{b}_{i} = iconst.i64 {}\n    %v{b}_{i} = iadd {prev}, %c{b}_{i}\n",
                i + 1
            );
            prev = format!("%v{b}_{i}");
        }
        let next = if b + 1 == blocks {
            "done".to_string()
        } else {
            format!("b{}", b + 1)
        };
        s += &format!("    jump {next}({prev})\n");
    }
    s += "done(%r: i64):\n    return %r\n}\n";
    s
}

/// The two shapes of the compile rows.
#[derive(Copy, Clone, PartialEq)]
pub(super) enum Shape {
    /// One function of `n` instructions ([`chain_function`]).
    OneFunction,
    /// Functions of ~200 instructions, as a JIT compiles them.
    ManyFunctions,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::OneFunction => "one function",
            Shape::ManyFunctions => "many functions",
        }
    }

    fn text(self, n: usize) -> String {
        match self {
            Shape::OneFunction => chain_function(n),
            Shape::ManyFunctions => {
                let per_fn = 200;
                (0..(n / per_fn).max(1))
                    .map(|f| sized_module(per_fn).replace("@main", &format!("@f{f}")))
                    .collect()
            }
        }
    }
}

/// One compile of a module text, as [`compile_once`] measures it.
struct CompileRun {
    /// Wall seconds of each phase: parse and verify, instrument (every
    /// check), lower, Cranelift.
    phases: [f64; 4],
    /// Thread CPU seconds of the whole compile (the four phases).
    cpu_s: f64,
    /// Instructions, functions and blocks of the parsed module.
    shape: [usize; 3],
    /// How many of its functions were compiled at [`Tier::Big`].
    big: usize,
}

/// Compiles `text` once (parse, instrument with every check, JIT).
fn compile_once(text: &str) -> CompileRun {
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    let m = guardlift_ir::parse_verified(text).expect("bench IR is valid");
    let parse_s = t.elapsed().as_secs_f64();
    let shape = [
        m.inst_count(),
        m.functions.len(),
        m.functions.iter().map(|f| f.blocks.len()).sum(),
    ];
    // As `guardlift run`: the parsed module becomes the instrumented one,
    // which the JIT takes (verified once, cut into pieces in place).
    let t = Instant::now();
    let mi = guardlift_instrument::instrument_verified(m, CheckSet::ALL);
    let inst_s = t.elapsed().as_secs_f64();
    let names: Vec<String> = mi.functions.iter().map(|f| f.name.clone()).collect();
    let t = Instant::now();
    let code = Jit::compile_verified(mi, runtime(Mode::Recover), &CompileOptions::default())
        .expect("compiles");
    let compile_s = t.elapsed().as_secs_f64();
    let times = code.compile_times();
    let big = (names.iter())
        .filter(|name| code.tier(name).ok() == Some(Tier::Big))
        .count();
    let cpu_s = (thread_cpu_ns() - cpu0) / 1e9;
    drop(code);
    let cranelift_s = times.codegen.as_secs_f64();
    // Jit::compile's own verification and setup count as lowering too.
    let lower_s = times.lower.as_secs_f64();
    let lower_s = lower_s + (compile_s - lower_s - cranelift_s).max(0.0);
    CompileRun {
        phases: [parse_s, inst_s, lower_s, cranelift_s],
        cpu_s,
        shape,
        big,
    }
}

fn compile_rows(sizes: &[usize]) -> Vec<Json> {
    let mut out = Vec::new();
    for shape in [Shape::OneFunction, Shape::ManyFunctions] {
        for &n in sizes {
            let text = shape.text(n);
            // Small sizes take milliseconds: the run of median total time
            // out of several.
            let reps = if n <= 10_000 { 5 } else { 1 };
            let mut runs: Vec<CompileRun> = (0..reps).map(|_| compile_once(&text)).collect();
            let cpu_s = median(runs.iter().map(|r| r.cpu_s).collect());
            runs.sort_by(|a, b| {
                let total = |r: &CompileRun| r.phases.iter().sum::<f64>();
                total(a).total_cmp(&total(b))
            });
            let CompileRun {
                phases: [parse_s, inst_s, lower_s, cranelift_s],
                shape: [insts, functions, blocks],
                big,
                ..
            } = runs.swap_remove(reps / 2);
            let total = parse_s + inst_s + lower_s + cranelift_s;
            out.push(json!({
                "shape": shape.name(),
                "instructions": insts,
                "functions": functions,
                "blocks": blocks,
                "big_tier_functions": big,
                "parse_verify_s": parse_s,
                "instrument_s": inst_s,
                "lower_s": lower_s,
                "cranelift_s": cranelift_s,
                "total_s": total,
                "insts_per_s_total": insts as f64 / total,
                "us_per_inst": total * 1e6 / insts as f64,
                "cpu_us_per_inst": cpu_s * 1e6 / insts as f64,
                "lower_and_instrument_share": (inst_s + lower_s) / total,
                "guardlift_share": (parse_s + inst_s + lower_s) / total,
            }));
        }
    }
    out
}

/// Per-instruction compile time (`key`: wall `us_per_inst` or
/// `cpu_us_per_inst`) of the largest size over the smallest, for `shape`.
pub(super) fn compile_scaling(compile: &[Json], shape: Shape, key: &str) -> Option<f64> {
    let rows: Vec<&Json> = compile
        .iter()
        .filter(|c| c["shape"] == shape.name())
        .collect();
    let per = |c: &Json| c[key].as_f64();
    ratio(per(rows.last()?), per(rows.first()?))
}

/// What [`scaling`] measured: `large`'s CPU time per instruction over
/// `small`'s, one function each, per round.
pub(super) struct Scaling {
    /// The two sizes, in instructions (as asked; the chain adds four).
    pub sizes: [usize; 2],
    /// Per round: CPU µs per instruction at each size.
    pub rounds: Vec<[f64; 2]>,
}

impl Scaling {
    /// Each round's ratio, large over small.
    pub fn ratios(&self) -> Vec<f64> {
        self.rounds.iter().map(|[s, l]| l / s).collect()
    }

    /// The median of the rounds' ratios.
    pub fn ratio(&self) -> Option<f64> {
        let r = self.ratios();
        (!r.is_empty()).then(|| median(r))
    }

    pub fn to_json(&self) -> Json {
        json!({
            "shape": Shape::OneFunction.name(),
            "sizes": self.sizes,
            "cpu_us_per_inst": self.rounds,
            "ratios": self.ratios(),
            "ratio": self.ratio(),
        })
    }
}

/// One function of `small` and of `large` instructions compiled in
/// `rounds` interleaved rounds (each round: `small` five times, its
/// median, then `large` once), as [`compile_once`] measures them.
fn scaling(rounds: usize, small: usize, large: usize) -> Scaling {
    let texts = [small, large].map(|n| Shape::OneFunction.text(n));
    let cpu_us_per_inst = |text: &str, reps: usize| {
        let runs: Vec<CompileRun> = (0..reps).map(|_| compile_once(text)).collect();
        let insts = runs[0].shape[0].max(1);
        median(runs.iter().map(|r| r.cpu_s).collect()) * 1e6 / insts as f64
    };
    let rounds = (0..rounds)
        .map(|_| [cpu_us_per_inst(&texts[0], 5), cpu_us_per_inst(&texts[1], 1)])
        .collect();
    Scaling {
        sizes: [small, large],
        rounds,
    }
}

/// The compile rows (sizes from 10^3 to 10^6; `quick`: 10^3 and 2·10^4)
/// and issue 33's row, 10^4 → 10^6, in interleaved rounds (`quick`: one
/// round of the smaller sizes, a smoke test of the measurement).
pub(super) fn measure(quick: bool) -> (Vec<Json>, Option<Scaling>) {
    // 250 000 instructions: the one function of 100 000 blocks.
    let (sizes, (rounds, small, large)): (&[usize], _) = if quick {
        (&[1_000, 20_000], (1, 1_000, 20_000))
    } else {
        (
            &[1_000, 10_000, 100_000, 250_000, 1_000_000],
            (3, 10_000, 1_000_000),
        )
    };
    (compile_rows(sizes), Some(scaling(rounds, small, large)))
}

/// The text output's compile table and scaling line.
pub(super) fn print(compile: &[Json], scaling: Option<&Scaling>) -> Result<(), CliError> {
    crate::outln!(
        "\ncompile (instrumented with every check; one function = a chain of blocks; many = functions of ~200 instructions; big = functions at the big tier; phases and us/inst: wall time, cpu us: thread CPU time per instruction)"
    );
    crate::outln!(
        "  {:<14} {:>8} {:>7} {:>4} {:>12} {:>11} {:>10} {:>11} {:>10} {:>9} {:>9} {:>14}",
        "shape",
        "insts",
        "blocks",
        "big",
        "parse+verify",
        "instrument",
        "lower",
        "cranelift",
        "insts/s",
        "us/inst",
        "cpu us",
        "instr+lower"
    );
    let ms = |c: &Json, k: &str| c[k].as_f64().unwrap_or(0.0) * 1e3;
    for c in compile {
        crate::outln!(
            "  {:<14} {:>8} {:>7} {:>4} {:>10.1}ms {:>9.1}ms {:>8.1}ms {:>9.1}ms {:>10.0} {:>9.2} {:>9.2} {:>13.1}%",
            c["shape"].as_str().unwrap_or(""),
            c["instructions"].as_u64().unwrap_or(0),
            c["blocks"].as_u64().unwrap_or(0),
            c["big_tier_functions"].as_u64().unwrap_or(0),
            ms(c, "parse_verify_s"),
            ms(c, "instrument_s"),
            ms(c, "lower_s"),
            ms(c, "cranelift_s"),
            c["insts_per_s_total"].as_f64().unwrap_or(0.0),
            c["us_per_inst"].as_f64().unwrap_or(0.0),
            c["cpu_us_per_inst"].as_f64().unwrap_or(0.0),
            c["lower_and_instrument_share"].as_f64().unwrap_or(0.0) * 100.0,
        );
    }
    if let Some(s) = scaling {
        let rounds: Vec<String> = (s.rounds.iter())
            .map(|[a, b]| format!("{a:.2} -> {b:.2} us ({:.2}x)", b / a))
            .collect();
        crate::outln!(
            "  one function, CPU per instruction, {} -> {} in interleaved rounds: {} ({})",
            s.sizes[0],
            s.sizes[1],
            s.ratio().map_or("n/a".to_string(), |r| format!("{r:.2}x")),
            rounds.join("; ")
        );
    }
    Ok(())
}
