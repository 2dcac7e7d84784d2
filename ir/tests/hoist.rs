//! Data-driven tests of the loop-versioning analysis
//! (`guardlift_ir::hoist`): each `tests/hoist/*.glir` holds a function
//! `@f` and a first line `; clean: BLOCK,BLOCK objects %V %V` (the blocks
//! of one clean loop, by name in any order, and its invariant objects in
//! first-use order; loops separated by ` | `) or `; clean: none`. The
//! other `;` lines say why.

mod common;

use guardlift_ir::hoist::clean_loops;
use std::path::Path;

/// One expected loop: its block names (sorted) and object names.
type Expected = (Vec<String>, Vec<String>);

fn expected(path: &Path, text: &str) -> Vec<Expected> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("; clean:"))
        .unwrap_or_else(|| panic!("{}: no `; clean:` line", path.display()))
        .trim();
    if line == "none" {
        return Vec::new();
    }
    line.split(" | ")
        .map(|l| {
            let (blocks, objs) = l.split_once(" objects ").expect("BLOCKS objects OBJS");
            let mut b: Vec<String> = blocks.split(',').map(|s| s.trim().to_string()).collect();
            b.sort();
            let o = objs
                .split_whitespace()
                .map(|s| s.trim_start_matches('%').to_string())
                .collect();
            (b, o)
        })
        .collect()
}

#[test]
fn versioning_cases() {
    let cases = common::glir_cases("hoist");
    for (path, text, m) in &cases {
        let f = m.func(m.func_by_name("f").expect("@f"));
        let got: Vec<Expected> = clean_loops(m, f)
            .iter()
            .map(|l| {
                let mut b: Vec<String> = l
                    .blocks
                    .iter()
                    .map(|&b| f.blocks[b as usize].name.clone())
                    .collect();
                b.sort();
                let o = l
                    .objects
                    .iter()
                    .map(|v| f.values[v.0 as usize].name.clone())
                    .collect();
                (b, o)
            })
            .collect();
        assert_eq!(got, expected(path, text), "{}", path.display());
    }
    let n = cases.len();
    assert!(n >= 7, "only {n} cases in tests/hoist");
}
