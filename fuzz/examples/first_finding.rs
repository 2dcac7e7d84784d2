//! How long the fuzz targets take to find a bug from fresh random inputs
//! alone (no committed corpus): runs `TARGET` on the inputs the stable
//! tests draw (`random_inputs(seed, n, len)`, the seed and length of
//! `tests/targets.rs`) until the first one panics, and prints how many
//! inputs and seconds that took. Used by `fuzz/mutants/run`.
//!
//! `cargo run --release -p guardlift-fuzz --example first_finding -- TARGET [MAX_CASES]`
//! (exit 0: a finding; 1: none within MAX_CASES, default 10,000;
//! `FIRST_FINDING_SHOW=1` prints the panics, the finding's included).

use guardlift_fuzz::{random_inputs, targets};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let target = args.next().unwrap_or_default();
    let max: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    // (body, seed, input length) as tests/targets.rs draws them.
    let (f, seed, len): (fn(&[u8]), u64, usize) = match target.as_str() {
        "differential" => (targets::differential, 2, 1536),
        "guards" => (targets::guards, 3, 256),
        "compile_aarch64" => (targets::compile_aarch64, 4, 1536),
        _ => {
            eprintln!("usage: first_finding differential|guards|compile_aarch64 [MAX_CASES]");
            std::process::exit(2);
        }
    };
    // Quiet panics: the first one is the answer (its message too with
    // FIRST_FINDING_SHOW=1).
    if std::env::var_os("FIRST_FINDING_SHOW").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let t = Instant::now();
    for (i, data) in random_inputs(seed, max, len).iter().enumerate() {
        if std::panic::catch_unwind(|| f(data)).is_err() {
            println!(
                "{target}: fresh case {i} of seed {seed} fails after {:.1} s ({} cases)",
                t.elapsed().as_secs_f64(),
                i + 1
            );
            return;
        }
    }
    println!(
        "{target}: no finding in {max} fresh cases ({:.1} s)",
        t.elapsed().as_secs_f64()
    );
    std::process::exit(1);
}
