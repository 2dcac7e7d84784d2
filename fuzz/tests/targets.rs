//! Every fuzz target on stable: the committed corpus in `fuzz/corpus/<target>/`,
//! the reproducers of fixed bugs in `fuzz/corpus/<target>/regressions/`, and
//! fresh random cases from a seeded RNG (about 7,700 in a release build, a
//! few seconds), so every CI run fuzzes a little.
//! `GUARDLIFT_FUZZ_SCALE=10 cargo test -p guardlift-fuzz --release` runs more.

use guardlift_fuzz::rng::SplitMix64;
use guardlift_fuzz::{cases, corpus, random_inputs, regressions, targets};
use std::time::Instant;

/// Replays the committed corpus of `target` and its `regressions/`; returns
/// how many files of each it ran. The corpus is committed, so an empty one
/// means it went missing: that fails instead of silently replaying nothing.
fn replay(target: &str, f: fn(&[u8])) -> (usize, usize) {
    let files = corpus(target);
    assert!(
        !files.is_empty(),
        "fuzz/corpus/{target}/ is empty or missing: the committed seed corpus must be replayed"
    );
    let regs = regressions(target);
    for (path, data) in files.iter().chain(&regs) {
        let r = std::panic::catch_unwind(|| f(data));
        if let Err(e) = r {
            eprintln!("corpus file {} fails", path.display());
            std::panic::resume_unwind(e);
        }
    }
    (files.len(), regs.len())
}

fn fresh(target: &str, f: fn(&[u8]), seed: u64, n: usize, len: usize) {
    for (i, data) in random_inputs(seed, n, len).iter().enumerate() {
        let r = std::panic::catch_unwind(|| f(data));
        if let Err(e) = r {
            let dir = std::env::temp_dir().join(format!("guardlift-fuzz-{target}"));
            let _ = std::fs::create_dir_all(&dir);
            let path = dir.join(format!("seed{seed}-case{i}"));
            let _ = std::fs::write(&path, data);
            eprintln!(
                "{target}: random case {i} of seed {seed} fails; input saved to {} \
                 (replay: cargo fuzz run {target} --features fuzzing {})",
                path.display(),
                path.display()
            );
            std::panic::resume_unwind(e);
        }
    }
}

fn timed(target: &str, f: impl FnOnce() -> String) {
    let t = Instant::now();
    let what = f();
    eprintln!("{target}: {what} in {:.1} s", t.elapsed().as_secs_f64());
}

/// IR texts: the repository's programs and shared examples.
fn seed_texts() -> Vec<String> {
    let mut v: Vec<String> = guardlift_tests::corpus()
        .into_iter()
        .map(|p| p.text)
        .collect();
    let ex = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    if let Ok(rd) = std::fs::read_dir(ex) {
        for e in rd.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path()) {
                v.push(t);
            }
        }
    }
    v
}

const DICT: &[&str] = &[
    "iconst.i64 ",
    "iconst.i8 -129",
    "fconst.f32 nan",
    "%v0",
    "%x, ",
    "jump b(%v0)",
    "brif %c, a, b",
    "blk(%p: i64):",
    "entry:",
    "}",
    "{",
    "fn @f(%a: i64) -> i64 {",
    "guard.",
    " !site(0, 1:1)",
    "adstack.alloc.f32 4",
    "adstack.push %s, %v",
    "-9223372036854775808",
    "0xffffffffffffffffff",
    "1e309",
    "layout phoenix",
    "layout dict_slot_offset = -24",
    "extern fn @obj_new(i64) -> ptr",
    "return",
    "call @f(",
    "load_attr %o, 16777216",
    ";",
    "\n",
];

/// 1 to 4 line- and token-level mutations of an IR text.
fn mutate(r: &mut SplitMix64, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for _ in 0..1 + r.below(4) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let n = lines.len() as u64;
        let i = r.below(n) as usize;
        match r.below(7) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(r.below(n) as usize, l);
            }
            2 => lines.swap(i, r.below(n) as usize),
            3 | 4 => {
                let tok = DICT[r.below(DICT.len() as u64) as usize];
                let l = &mut lines[i];
                let at = r.below(l.len() as u64 + 1) as usize;
                let at = (0..=at).rev().find(|&k| l.is_char_boundary(k)).unwrap_or(0);
                l.insert_str(at, tok);
            }
            5 => {
                const CH: &[u8] = b"%@:(),=->{}.0123456789abxyz_ ;";
                let l = &mut lines[i];
                if !l.is_empty() && l.is_ascii() {
                    let at = r.below(l.len() as u64) as usize;
                    let c = CH[r.below(CH.len() as u64) as usize] as char;
                    l.replace_range(at..at + 1, &c.to_string());
                }
            }
            _ => lines.truncate(i),
        }
    }
    lines.join("\n")
}

#[test]
fn parse_corpus_seeds_mutants_and_random_bytes() {
    timed("parse", || {
        let replayed = replay("parse", targets::parse);
        let seeds = seed_texts();
        for t in &seeds {
            targets::parse(t.as_bytes());
        }
        let mut r = SplitMix64::new(0x9a75e);
        let n = cases(4000);
        for _ in 0..n {
            let t = &seeds[r.below(seeds.len() as u64) as usize];
            let m = mutate(&mut r, t);
            let res = std::panic::catch_unwind(|| targets::parse(m.as_bytes()));
            if let Err(e) = res {
                eprintln!("parse: failing mutant:\n{m}");
                std::panic::resume_unwind(e);
            }
        }
        fresh("parse", targets::parse, 1, cases(500), 200);
        format!(
            "{} corpus files, {} regressions, {} seed texts, {n} mutants, {} random byte strings",
            replayed.0,
            replayed.1,
            seeds.len(),
            cases(500)
        )
    });
}

#[test]
fn differential_corpus_and_random() {
    timed("differential", || {
        let replayed = replay("differential", targets::differential);
        let n = cases(800);
        fresh("differential", targets::differential, 2, n, 1536);
        format!(
            "{} corpus files, {} regressions, {n} random modules",
            replayed.0, replayed.1
        )
    });
}

#[test]
fn guards_corpus_and_random() {
    timed("guards", || {
        let replayed = replay("guards", targets::guards);
        let n = cases(2000);
        fresh("guards", targets::guards, 3, n, 256);
        format!(
            "{} corpus files, {} regressions, {n} random inputs",
            replayed.0, replayed.1
        )
    });
}

#[test]
fn compile_aarch64_corpus_and_random() {
    timed("compile_aarch64", || {
        let replayed = replay("compile_aarch64", targets::compile_aarch64);
        let n = cases(400);
        fresh("compile_aarch64", targets::compile_aarch64, 4, n, 1536);
        format!(
            "{} corpus files, {} regressions, {n} random modules",
            replayed.0, replayed.1
        )
    });
}
