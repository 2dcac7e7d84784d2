//! Data-driven tests of the loop-versioning analysis
//! (`guardlift_ir::hoist`): each `tests/hoist/*.glir` holds a function
//! `@f` and a first line `; clean: BLOCK,BLOCK objects %V %V attrs %V:N`
//! (the blocks of one clean loop, by name in any order, its invariant
//! objects in first-use order, and its fixed-attribute objects with their
//! highest index, or `attrs none`, then optionally `cold BLOCK,BLOCK`, its
//! cold blocks; loops separated by ` | `) or `; clean: none`. The other
//! `;` lines say why.

mod common;

use guardlift_ir::hoist::clean_loops;
use std::path::Path;

/// One expected loop: its block names (sorted), object names,
/// `name:max` of its fixed-attribute objects and its cold blocks (sorted).
type Expected = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

/// Block names of a comma-separated list, sorted.
fn block_names(list: &str) -> Vec<String> {
    let mut b: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
    b.sort();
    b
}

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
            let (blocks, rest) = l.split_once(" objects ").expect("BLOCKS objects OBJS");
            let (objs, attrs) = rest
                .split_once(" attrs ")
                .expect("objects OBJS attrs ATTRS");
            let (attrs, cold) = match attrs.split_once(" cold ") {
                Some((a, c)) => (a, block_names(c)),
                None => (attrs, Vec::new()),
            };
            let attrs = match attrs.trim() {
                "none" => Vec::new(),
                a => a
                    .split_whitespace()
                    .map(|s| s.trim_start_matches('%').to_string())
                    .collect(),
            };
            let o = objs
                .split_whitespace()
                .map(|s| s.trim_start_matches('%').to_string())
                .collect();
            (block_names(blocks), o, attrs, cold)
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
                    .map(|&b| f.blocks[b as usize].name.to_string())
                    .collect();
                b.sort();
                let o = l
                    .objects
                    .iter()
                    .map(|v| f.values[v.0 as usize].name.to_string())
                    .collect();
                let a = (l.attrs.iter())
                    .map(|&(v, m)| format!("{}:{m}", f.values[v.0 as usize].name))
                    .collect();
                let mut c: Vec<String> = (l.cold.iter())
                    .map(|&b| f.blocks[b as usize].name.to_string())
                    .collect();
                c.sort();
                (b, o, a, c)
            })
            .collect();
        assert_eq!(got, expected(path, text), "{}", path.display());
    }
    let n = cases.len();
    assert!(n >= 12, "only {n} cases in tests/hoist");
}
