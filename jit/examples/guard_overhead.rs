//! What the guards cost, measured in one run: the time per loop iteration
//! of a `store_attr` loop and of an adstack push/top/acc_adj/top_adj/pop
//! loop, uninstrumented and instrumented in each mode (abort, recover,
//! trap; no violation occurs, so abort and trap run to the end), as the
//! median of several repeats, and the instrumented/uninstrumented ratio.
//!
//! ```text
//! cargo run --release -p guardlift-jit --example guard_overhead [-- ITERS REPEATS]
//! ```
//!
//! Defaults: 2 000 000 iterations per run, 15 repeats (a few seconds).
//! The repeats interleave the configurations, so drift hits all alike.

#[path = "../benches/programs.rs"]
mod programs;

use guardlift_instrument::CheckSet;
use programs::{adstack_checks, build, dict_checks, Bench, Config, ADSTACK, MODES, STORE_ATTR};
use std::hint::black_box;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Row {
    label: String,
    plain: Bench,
    guarded: Vec<Bench>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: i64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);

    let rows_spec: [(&str, &str, CheckSet); 3] = [
        ("store_attr  (dict check)", STORE_ATTR, dict_checks()),
        (
            "store_attr  (all checks: + guard.watch/block)",
            STORE_ATTR,
            CheckSet::ALL,
        ),
        ("adstack 5 ops (adstack check)", ADSTACK, adstack_checks()),
    ];
    let rows: Vec<Row> = rows_spec
        .iter()
        .map(|&(label, text, checks)| Row {
            label: label.to_string(),
            plain: build(text, Config::Plain),
            guarded: MODES
                .iter()
                .map(|&m| build(text, Config::Guarded(checks, m)))
                .collect(),
        })
        .collect();

    // Warm up, then time: every repeat runs every configuration once.
    let time = |b: &Bench| {
        let t = Instant::now();
        black_box(b.run(black_box(iters)));
        t.elapsed().as_nanos() as f64 / iters as f64
    };
    for r in &rows {
        time(&r.plain);
        r.guarded.iter().for_each(|b| {
            time(b);
        });
    }
    let mut samples: Vec<Vec<Vec<f64>>> = rows
        .iter()
        .map(|r| vec![Vec::new(); 1 + r.guarded.len()])
        .collect();
    for _ in 0..repeats {
        for (r, s) in rows.iter().zip(&mut samples) {
            s[0].push(time(&r.plain));
            for (i, b) in r.guarded.iter().enumerate() {
                s[1 + i].push(time(b));
            }
        }
    }
    for r in &rows {
        for b in std::iter::once(&r.plain).chain(&r.guarded) {
            assert!(b.rt.take_reports().is_empty(), "no violation in the loops");
        }
    }

    println!(
        "guard overhead: ns per loop iteration, median of {repeats} runs of {iters} iterations ({} {})",
        std::env::consts::ARCH,
        if cfg!(debug_assertions) { "debug build: use --release" } else { "release" }
    );
    println!();
    println!(
        "{:<46} {:>9}   {:>15}   {:>15}   {:>15}",
        "loop", "plain", "abort", "recover", "trap"
    );
    for (r, s) in rows.iter().zip(samples) {
        let meds: Vec<f64> = s.into_iter().map(median).collect();
        let plain = meds[0];
        let mut line = format!("{:<46} {:>9.3}", r.label, plain);
        for &m in &meds[1..] {
            line.push_str(&format!("   {:>6.3} ({:>4.2}x)", m, m / plain));
        }
        println!("{line}");
    }
}
