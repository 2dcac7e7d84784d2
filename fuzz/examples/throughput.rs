//! Executions per second of each target's body on its committed corpus,
//! outside libFuzzer (no sanitizer, no coverage instrumentation): what the
//! harness itself costs, and a binary to profile
//! (`valgrind --tool=callgrind target/release/examples/throughput guards 1`).
//!
//! `cargo run --release -p guardlift-fuzz --example throughput -- [TARGET|all] [ROUNDS] [--before]`
//!
//! `--before` runs the targets as they were before the throughput work
//! (default generator sizes, every check set per input, `emit_object` and
//! the verified compile separately per configuration, every guards op),
//! for comparison.

use arbitrary::{Arbitrary, Unstructured};
use guardlift_fuzz::exec::{with_checks, Engine, CHECK_SETS};
use guardlift_fuzz::gen::{generate, GenConfig};
use guardlift_fuzz::guards::{self, GuardsInput};
use guardlift_fuzz::{aarch64, corpus, targets, TARGETS};
use guardlift_instrument::CheckSet;
use guardlift_jit::{emit_object, EmitOptions, OptLevel, Target};
use guardlift_runtime::Mode;
use std::time::Instant;

/// `differential` before: every check set, the JIT at `speed`.
fn differential_before(data: &[u8]) {
    let g = generate(&mut Unstructured::new(data), &GenConfig::default());
    targets::check_generated(&g, &CHECK_SETS);
}

/// `guards` before: every word and op of the input (up to the builder's own caps).
fn guards_before(data: &[u8]) {
    let Ok(input) = GuardsInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let case = guards::build(&input);
    for engine in [Engine::Interp, Engine::Jit] {
        guards::check(&case, engine).expect("guards");
    }
}

/// `compile_aarch64` before: two compiles per configuration.
fn compile_aarch64_before(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let g = generate(&mut u, &GenConfig::default());
    let opt = if u.arbitrary::<bool>().unwrap_or(false) {
        OptLevel::None
    } else {
        OptLevel::Speed
    };
    for (checks, mode) in [
        (CHECK_SETS[0], Mode::Recover),
        (CheckSet::ALL, Mode::Recover),
        (CheckSet::ALL, Mode::Abort),
        (CheckSet::ALL, Mode::Trap),
    ] {
        let m = with_checks(&g.module, checks);
        let opts = EmitOptions {
            mode,
            site_base: 0,
            opt_level: opt,
        };
        emit_object(&m, Target::Aarch64, &opts).expect("emit_object");
        aarch64::compile_verified(&m, Target::Aarch64, mode, opt).expect("verified");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let before = args.iter().any(|a| a == "--before");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--before").collect();
    let only = args.first().filter(|a| a.as_str() != "all");
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    for t in TARGETS {
        if only.is_some_and(|o| o.as_str() != t) {
            continue;
        }
        let body: fn(&[u8]) = match (t, before) {
            ("parse", _) => targets::parse,
            ("differential", false) => targets::differential,
            ("differential", true) => differential_before,
            ("guards", false) => targets::guards,
            ("guards", true) => guards_before,
            (_, false) => targets::compile_aarch64,
            (_, true) => compile_aarch64_before,
        };
        let inputs = corpus(t);
        let start = Instant::now();
        let mut n = 0;
        for _ in 0..rounds {
            for (_, data) in &inputs {
                body(data);
                n += 1;
            }
        }
        let s = start.elapsed().as_secs_f64();
        println!(
            "{t}{}: {n} executions in {s:.2} s, {:.1} exec/s",
            if before { " (before)" } else { "" },
            n as f64 / s
        );
    }
}
