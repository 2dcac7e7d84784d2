//! How well the generator covers the IR: over 2000 generated modules, the
//! fraction of generated functions that contain each op family. Every
//! family must appear in at least 1 % of them. Run with `--nocapture` to
//! see the table.

use arbitrary::Unstructured;
use guardlift_fuzz::coverage::{families, FAMILIES};
use guardlift_fuzz::exec::CHECK_SETS;
use guardlift_fuzz::gen::{generate, GenConfig};
use guardlift_fuzz::random_inputs;
use std::collections::BTreeMap;

#[test]
fn every_op_family_appears_in_at_least_one_percent_of_functions() {
    const MODULES: usize = 2000;
    let mut counts: BTreeMap<&str, usize> = FAMILIES.iter().map(|&f| (f, 0)).collect();
    let mut functions = 0usize;
    let mut insts = 0usize;
    let mut runnable_uninstrumented = 0usize;
    for data in random_inputs(0xc0_ffee, MODULES, 1536) {
        let g = generate(&mut Unstructured::new(&data), &GenConfig::default());
        insts += g.module.inst_count();
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
    let mut table = format!(
        "{MODULES} modules, {functions} functions, {:.1} instructions per module, \
         {:.1} % of modules also run uninstrumented\n{:<28} {:>9} {:>8}\n",
        insts as f64 / MODULES as f64,
        100.0 * runnable_uninstrumented as f64 / MODULES as f64,
        "family",
        "functions",
        "percent"
    );
    for (f, &n) in &counts {
        table.push_str(&format!("{f:<28} {n:>9} {:>7.1}%\n", pct(n)));
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
}
