//! How well the generators cover the IR: over 2000 generated modules, the
//! fraction of generated functions that contain each op family (every
//! family must appear in at least 1 % of them; `adstack.realloc_loop` is
//! an `adstack.alloc` in a loop that may run again while a block param
//! carries the old handle); and how often the `guards` inputs re-run an
//! alloc with a handle carried across iterations. Run with `--nocapture`
//! to see the numbers.

use arbitrary::{Arbitrary, Unstructured};
use guardlift_fuzz::coverage::{families, FAMILIES};
use guardlift_fuzz::exec::CHECK_SETS;
use guardlift_fuzz::gen::{generate, GenConfig};
use guardlift_fuzz::guards::{build, GuardsInput};
use guardlift_fuzz::random_inputs;
use guardlift_ir::hoist::clean_loops;
use std::collections::BTreeMap;

#[test]
fn every_op_family_appears_in_at_least_one_percent_of_functions() {
    const MODULES: usize = 2000;
    let mut counts: BTreeMap<&str, usize> = FAMILIES.iter().map(|&f| (f, 0)).collect();
    let mut functions = 0usize;
    let mut insts = 0usize;
    let mut runnable_uninstrumented = 0usize;
    // Modules with several versioned (clean) loops, over all functions.
    let mut multi_loop_modules = 0usize;
    for data in random_inputs(0xc0_ffee, MODULES, 1536) {
        let g = generate(&mut Unstructured::new(&data), &GenConfig::default());
        insts += g.module.inst_count();
        let loops: usize = (g.module.functions.iter())
            .map(|f| clean_loops(&g.module, f).len())
            .sum();
        if loops >= 2 {
            multi_loop_modules += 1;
        }
        if g.needs.allows(CHECK_SETS[0]) {
            runnable_uninstrumented += 1;
        }
        for fams in families(&g) {
            functions += 1;
            for f in fams {
                *counts.entry(f).or_default() += 1;
            }
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / functions as f64;
    let multi_pct = 100.0 * multi_loop_modules as f64 / MODULES as f64;
    let mut table = format!(
        "{MODULES} modules, {functions} functions, {:.1} instructions per module, \
         {:.1} % of modules also run uninstrumented, {multi_pct:.1} % have two or more \
         clean loops\n{:<32} {:>9} {:>8}\n",
        insts as f64 / MODULES as f64,
        100.0 * runnable_uninstrumented as f64 / MODULES as f64,
        "family",
        "functions",
        "percent"
    );
    for (f, &n) in &counts {
        table.push_str(&format!("{f:<32} {n:>9} {:>7.1}%\n", pct(n)));
    }
    eprintln!("{table}");
    let rare: Vec<String> = FAMILIES
        .iter()
        .filter(|f| pct(counts[*f]) < 1.0)
        .map(|f| format!("{f} ({:.2} %)", pct(counts[f])))
        .collect();
    assert!(
        rare.is_empty(),
        "op families in less than 1 % of generated functions: {rare:?}\n{table}"
    );
    assert!(
        multi_pct >= 1.0,
        "modules with two or more clean loops: {multi_pct:.2} %\n{table}"
    );
}

/// The `guards` inputs (as the replay test draws them) re-run the loop's
/// `adstack.alloc` with ops through the carried `%t`, and the model
/// expects guards to fire in that loop.
#[test]
fn guards_inputs_reexecute_allocs_with_carried_handles() {
    const INPUTS: usize = 2000;
    let (mut decoded, mut stale, mut firing) = (0, 0, 0);
    for data in random_inputs(3, INPUTS, 256) {
        let Ok(input) = GuardsInput::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        decoded += 1;
        if input.loop_trips % 4 >= 2 && input.loop_ops.iter().any(|o| !o.on_new) {
            stale += 1;
        }
        if build(&input).loop_fires() > 0 {
            firing += 1;
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / decoded.max(1) as f64;
    eprintln!(
        "guards: {decoded} inputs, {:.1} % re-run the alloc with ops through the carried handle, \
         {:.1} % expect a guard to fire in the loop",
        pct(stale),
        pct(firing)
    );
    assert!(pct(stale) >= 5.0 && pct(firing) >= 5.0, "too rare");
}

/// The `guards` inputs (as the replay test draws them): the share of
/// inputs whose model expects each report kind (every kind the target
/// checks: dict, adstack, lifetime, bounds), and of inputs with each op
/// family of the lifetime part. Every kind and family must show up in at
/// least 2 % of them.
#[test]
fn guards_inputs_expect_every_check_kind() {
    const INPUTS: usize = 4000;
    let mut kinds: BTreeMap<&str, usize> = GUARDS_KINDS.iter().map(|&k| (k, 0)).collect();
    let mut fams: BTreeMap<&str, usize> = LIFE_FAMILIES.iter().map(|&f| (f, 0)).collect();
    let mut decoded = 0;
    for data in random_inputs(3, INPUTS, 256) {
        let Ok(input) = GuardsInput::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        decoded += 1;
        for k in build(&input).expected_kinds() {
            *kinds.entry(k).or_default() += 1;
        }
        let mut seen: Vec<&str> = input.life_ops.iter().map(|o| o.family()).collect();
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            *fams.entry(f).or_default() += 1;
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / decoded.max(1) as f64;
    let mut table = format!(
        "guards: {decoded} inputs\n{:<24} {:>8}\n",
        "expects / has", "inputs"
    );
    for (k, &n) in kinds.iter().chain(&fams) {
        table.push_str(&format!("{k:<24} {:>7.1}%\n", pct(n)));
    }
    eprintln!("{table}");
    let rare: Vec<&str> = kinds
        .iter()
        .chain(&fams)
        .filter(|&(_, &n)| pct(n) < 2.0)
        .map(|(k, _)| *k)
        .collect();
    assert!(
        rare.is_empty(),
        "too rare in guards inputs: {rare:?}\n{table}"
    );
}

/// Every report kind the `guards` model expects somewhere.
const GUARDS_KINDS: [&str; 8] = [
    "dict_slot_tag",
    "adstack_overflow",
    "adstack_underflow",
    "use_after_free",
    "double_free",
    "invalid_free",
    "attr_out_of_bounds",
    "heap_overflow",
];

/// The op families of the `guards` lifetime part (`LifeOp::family`).
const LIFE_FAMILIES: [&str; 10] = [
    "life.free",
    "life.free_interior",
    "life.load_attr",
    "life.store_attr",
    "life.dict_slot_load",
    "life.raw_load",
    "life.raw_store",
    "life.forge_capacity",
    "life.dictify",
    "life.redzone",
];

/// The host slow paths a `differential` input may bind
/// (`targets::pick_slow_paths`) are reached: generated modules call them
/// (an attribute op on an object whose word is not values-tagged: after
/// `obj_dictify`, a dict word stored by hand).
#[test]
fn generated_modules_reach_the_host_slow_paths() {
    const MODULES: usize = 600;
    let mut calling = 0usize;
    let mut calls = 0u64;
    let mut bound = 0usize;
    let (mut freeing, mut freeing_reported) = (0usize, 0usize);
    for data in random_inputs(0x51_0e, MODULES, 1536) {
        let mut u = Unstructured::new(&data);
        let g = generate(&mut u, &GenConfig::default());
        // As `targets::differential` draws its choices after the module.
        let _ = guardlift_fuzz::targets::pick_differential(&g, &mut u);
        let _ = guardlift_fuzz::targets::pick_placement(&mut u);
        bound += usize::from(guardlift_fuzz::targets::pick_slow_paths(&mut u));
        let m = guardlift_fuzz::exec::with_checks(&g.module, guardlift_instrument::CheckSet::ALL);
        let (n, f, reports) = guardlift_fuzz::exec::slow_path_calls(&m, "main", &g.args);
        calling += usize::from(n > 0);
        calls += n;
        freeing += usize::from(f > 0);
        freeing_reported += usize::from(f > 0 && reports > 0);
    }
    let pct = 100.0 * calling as f64 / MODULES as f64;
    let bound_pct = 100.0 * bound as f64 / MODULES as f64;
    eprintln!(
        "{calling} of {MODULES} modules ({pct:.1} %) call the host slow paths, {calls} calls; \
         {bound_pct:.1} % of the inputs bind them; in {freeing} modules they free an object \
         ({freeing_reported} of them report)"
    );
    assert!(
        pct >= 2.0,
        "only {pct:.1} % of modules reach the host slow paths"
    );
    assert!(
        bound_pct >= 10.0,
        "only {bound_pct:.1} % of inputs bind the host slow paths"
    );
}
