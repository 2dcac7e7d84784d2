//! Data-driven tests of the adstack underflow elision
//! (`guardlift_ir::elide`): each `tests/elide/*.glir` holds one function
//! `@f` with hand-written guards and a first line `; elided: B:I ...`
//! (block and instruction indices of the checks claimed redundant, sorted)
//! or `; elided: none`. The other `;` lines say why.

mod common;

use guardlift_ir::analysis::adstack_capacities;
use guardlift_ir::elide::redundant_adstack_checks;
use std::path::Path;

/// The `; elided:` claims a case expects.
fn expected(path: &Path, text: &str) -> Vec<(u32, u32)> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("; elided:"))
        .unwrap_or_else(|| panic!("{}: no `; elided:` line", path.display()));
    let line = line.trim();
    if line == "none" {
        return Vec::new();
    }
    line.split_whitespace()
        .map(|w| {
            let (b, i) = w.split_once(':').expect("B:I");
            (b.parse().expect("block"), i.parse().expect("inst"))
        })
        .collect()
}

#[test]
fn elision_cases() {
    let cases = common::glir_cases("elide");
    let mut wrong = Vec::new();
    for (path, text, m) in &cases {
        let f = &m.functions[0];
        let caps = adstack_capacities(f).expect("one capacity per handle");
        let mut got: Vec<(u32, u32)> = redundant_adstack_checks(f, &caps).into_iter().collect();
        got.sort();
        let want = expected(path, text);
        if got != want {
            wrong.push(format!(
                "{}: claims {got:?}, expected {want:?}",
                path.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let n = cases.len();
    assert!(n >= 11, "only {n} cases in tests/elide");
}
