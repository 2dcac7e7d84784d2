//! `guardlift bench --quick --json`: every measurement of issues 8 and 18
//! is there, side by side, with its ratios. (Speed itself is never asserted: numbers
//! are the benchmark's output, not a test's verdict.)

mod common;

use serde_json::Value;

fn bench() -> Value {
    bench_with(&[])
}

fn bench_with(extra: &[&str]) -> Value {
    let out = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
        .args(["bench", "--quick", "--json"])
        .args(extra)
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
        "ctxmgr jit",
        "ctxmgr jit+dict",
        "ctxmgr jit+dict,adstack",
        "ctxmgr jit+instrument",
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
    for checks in ["dict", "dict_adstack", "instrument"] {
        let r = positive(
            &ratios["ctxmgr_instrumented_over_plain"][checks],
            "ctxmgr ratio",
        );
        let want = positive(
            &ns(&format!("ctxmgr jit+{}", checks.replace('_', ","))),
            checks,
        ) / positive(&ns("ctxmgr jit"), "ctxmgr jit");
        assert!((r - want).abs() < 1e-6 * want, "{checks}: {r} vs {want}");
    }
    // Watchpoints: a watched legitimate store traps (needs perf_event
    // breakpoints: on Linux x86_64 it fails, with the reason, where they are
    // unavailable; elsewhere the row says why there is no number).
    let off = positive(&ns("slot store jit"), "slot store, watch off");
    let on = &ns("slot store jit watched");
    let note = &rows
        .iter()
        .find(|r| r["name"] == "slot store jit watched")
        .unwrap()["note"];
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        let on = positive(on, &format!("slot store, watched ({note})"));
        assert!(
            on > off,
            "a trapped store costs more than a plain one: {on} vs {off}"
        );
    } else {
        assert!(on.is_null(), "no watchpoints here, yet a number: {on}");
        let note = note.as_str().expect("the watched row's note");
        assert!(
            note.starts_with("unavailable: hardware watchpoints need Linux on x86_64"),
            "{note}"
        );
    }
    for mode in ["abort", "recover", "trap"] {
        positive(
            &ratios["store_attr_all_checks_over_plain"][mode],
            &format!("every check over plain, {mode}"),
        );
    }
    positive(
        &ratios["store_attr_lifetime_bounds_over_plain"],
        "lifetime and bounds over plain",
    );
    positive(
        &ratios["adstack_all_checks_over_plain"],
        "adstack, every check over plain",
    );
    let interp_over_jit = positive(&ratios["interp_over_jit"], "interp/jit");
    let jit = positive(&ns("store_attr jit"), "jit");
    let interp = positive(&ns("store_attr interp"), "interp");
    assert!((interp / jit - interp_over_jit).abs() < 1e-6 * interp_over_jit);

    let compile = b["compile"].as_array().expect("compile rows");
    assert_eq!(
        compile.len(),
        4,
        "--quick measures 1k and 20k, one function and many: {compile:?}"
    );
    for shape in ["one function", "many functions"] {
        let rows: Vec<&Value> = compile.iter().filter(|c| c["shape"] == shape).collect();
        assert_eq!(rows.len(), 2, "{shape}: {compile:?}");
        let mut sizes = Vec::new();
        let mut per_inst = Vec::new();
        let mut cpu_per_inst = Vec::new();
        for c in &rows {
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
            let insts = c["instructions"].as_u64().expect("instructions");
            let us = positive(&c["us_per_inst"], "us/inst");
            assert!((total * 1e6 / insts as f64 - us).abs() < 1e-6 * us, "{c}");
            sizes.push(insts);
            per_inst.push(us);
            cpu_per_inst.push(positive(&c["cpu_us_per_inst"], "cpu us/inst"));
        }
        assert!(
            sizes[1] >= 19 * sizes[0],
            "sizes grow twentyfold: {sizes:?}"
        );
        let key = shape.replace(' ', "_");
        let scaling = positive(
            &ratios["compile_per_inst_largest_over_smallest"][&key],
            "scaling",
        );
        assert!((scaling - per_inst[1] / per_inst[0]).abs() < 1e-6 * scaling);
        let cpu_scaling = positive(
            &ratios["compile_cpu_per_inst_largest_over_smallest"][&key],
            "cpu scaling",
        );
        assert!((cpu_scaling - cpu_per_inst[1] / cpu_per_inst[0]).abs() < 1e-6 * cpu_scaling);
        // The tier decision (deterministic, unlike the times): only the one
        // function of 20 000 instructions is compiled at the big tier.
        let big: Vec<u64> = rows
            .iter()
            .map(|c| {
                c["big_tier_functions"]
                    .as_u64()
                    .expect("big_tier_functions")
            })
            .collect();
        let want = if shape == "one function" {
            [0, 1]
        } else {
            [0, 0]
        };
        assert_eq!(big, want, "{shape}");
        assert_eq!(
            rows[0]["functions"],
            if shape == "one function" { 1 } else { 5 }
        );
    }
    // Issue 33's scaling row, in interleaved rounds (--quick: one round of
    // 1k and 20k): the ratio is the median of the rounds' ratios, each the
    // large size's CPU per instruction over the small one's.
    let s = &b["compile_scaling"];
    assert_eq!(s["shape"], "one function", "{s}");
    assert_eq!(s["sizes"], serde_json::json!([1000, 20000]), "{s}");
    let rounds = s["cpu_us_per_inst"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 1, "{s}");
    let small = positive(&rounds[0][0], "small cpu us/inst");
    let large = positive(&rounds[0][1], "large cpu us/inst");
    let r = positive(&s["ratio"], "scaling ratio");
    assert!((r - large / small).abs() < 1e-9 * r, "{s}");
    assert_eq!(
        ratios["compile_cpu_per_inst_one_function_interleaved"]["1000_to_20000"],
        s["ratio"]
    );
}

/// Issue 35's compile-time row: one module compiled with the profiler and
/// debugger switches off and each on, and without the unwind registration;
/// the off compile writes no file (the bench checks before any variant that
/// writes one), and the run leaves none behind.
#[test]
fn bench_measures_the_compile_time_of_debuginfo() {
    let dir = std::env::temp_dir().join(format!("guardlift-bench-dbg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
        .args(["bench", "--quick", "--json", "--only", "debuginfo"])
        .env("JITDUMPDIR", &dir)
        .env_remove("GUARDLIFT_OPTIONS")
        .output()
        .expect("guardlift runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let rows = b["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "compile debuginfo off",
            "compile perfmap=1",
            "compile jitdump=1",
            "compile gdb=1",
            "compile unwind off",
        ],
        "--only debuginfo runs that group alone"
    );
    let ns: Vec<f64> = rows
        .iter()
        .map(|r| positive(&r["ns_per_op"], r["name"].as_str().unwrap_or("?")))
        .collect();
    let note = rows[0]["note"].as_str().unwrap_or("");
    assert!(note.contains("no file written"), "{note}");
    let r = &b["ratios"]["compile_debuginfo_over_off"];
    for (i, key) in ["perfmap", "jitdump", "gdb"].iter().enumerate() {
        let x = positive(&r[key], key);
        let want = ns[i + 1] / ns[0];
        assert!((x - want).abs() < 1e-6 * want, "{key}: {x} vs {want}");
    }
    let x = positive(&r["unwind"], "unwind");
    assert!((x - ns[0] / ns[4]).abs() < 1e-6 * x);
    // The jitdump variant wrote into JITDUMPDIR; the bench removed it.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
