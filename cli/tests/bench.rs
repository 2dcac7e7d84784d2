//! `guardlift bench --quick --json`: every measurement of issue 8 is there,
//! side by side, with its ratios. (Speed itself is never asserted: numbers
//! are the benchmark's output, not a test's verdict.)

use serde_json::Value;
use std::process::Command;

fn bench() -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_guardlift"))
        .args(["bench", "--quick", "--json"])
        .output()
        .expect("guardlift runs");
    assert!(
        out.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench --json prints one JSON document")
}

fn positive(v: &Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!(x.is_finite() && x > 0.0, "{what} = {x}");
    x
}

#[test]
fn bench_measures_every_engine_mode_and_phase() {
    let b = bench();
    let rows = b["rows"].as_array().expect("rows");
    let ns = |name: &str| {
        let r = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}: {rows:?}"));
        r["ns_per_op"].clone()
    };
    // Our own engines always run.
    for name in [
        "store_attr jit",
        "store_attr jit+dict abort",
        "store_attr jit+dict recover",
        "store_attr jit+dict trap",
        "store_attr jit+all recover",
        "store_attr interp",
        "adstack jit",
        "adstack jit+adstack abort",
        "adstack jit+adstack recover",
        "adstack jit+adstack trap",
    ] {
        positive(&ns(name), name);
    }
    // The comparisons with other tools are rows too (null with a note when
    // the tool is missing on this machine).
    for name in [
        "store_attr cpython",
        "store_attr gcc -O2",
        "store_attr gcc -O2 asan",
    ] {
        let r = rows.iter().find(|r| r["name"] == name).expect(name);
        assert!(
            r["ns_per_op"].is_number() || !r["note"].as_str().unwrap_or("").is_empty(),
            "{r}"
        );
    }
    let ratios = &b["ratios"];
    for mode in ["abort", "recover", "trap"] {
        positive(
            &ratios["store_attr_instrumented_over_plain"][mode],
            "store_attr ratio",
        );
        positive(
            &ratios["adstack_instrumented_over_plain"][mode],
            "adstack ratio",
        );
    }
    positive(
        &ratios["store_attr_all_checks_over_plain"],
        "every check over plain",
    );
    let interp_over_jit = positive(&ratios["interp_over_jit"], "interp/jit");
    let jit = positive(&ns("store_attr jit"), "jit");
    let interp = positive(&ns("store_attr interp"), "interp");
    assert!((interp / jit - interp_over_jit).abs() < 1e-6 * interp_over_jit);

    let compile = b["compile"].as_array().expect("compile rows");
    assert_eq!(compile.len(), 2, "--quick measures 1k and 10k: {compile:?}");
    let mut sizes = Vec::new();
    for c in compile {
        let parse = positive(&c["parse_verify_s"], "parse");
        let inst = positive(&c["instrument_s"], "instrument");
        let lower = positive(&c["lower_s"], "lower");
        let clift = positive(&c["cranelift_s"], "cranelift");
        let share = positive(&c["lower_and_instrument_share"], "share");
        let total = parse + inst + lower + clift;
        assert!(
            ((inst + lower) / total - share).abs() < 1e-9,
            "the share is of the four phases: {c}"
        );
        sizes.push(c["instructions"].as_u64().expect("instructions"));
    }
    assert!(sizes[1] >= 9 * sizes[0], "sizes grow tenfold: {sizes:?}");
}
