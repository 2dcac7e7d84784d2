//! The underflow-check elision analysis (`guardlift_ir::elide`) proved
//! against the interpreter (issue 13): every program of `tests/programs/`
//! and a few thousand generated modules run on the interpreter with
//! `set_verify_elision`, so a check the analysis claimed cannot fail that
//! fails ends the run with `InterpError::Internal`. The analysis must also
//! claim something on them (else nothing would be proved), and the
//! verification must catch a false claim.

use arbitrary::Unstructured;
use guardlift_fuzz::exec::{with_checks, CHECK_SETS};
use guardlift_fuzz::gen::{generate, GenConfig, ENTRY};
use guardlift_fuzz::{cases, random_inputs};
use guardlift_interp::{InterpError, Interpreter};
use guardlift_ir::analysis::adstack_capacities;
use guardlift_ir::elide::redundant_adstack_checks;
use guardlift_ir::literal::parse_arg;
use guardlift_ir::Module;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::{HashMap, HashSet};

/// The check sets that guard adstack ops: none (hand-written guards only),
/// adstack alone, all.
const SETS: [usize; 3] = [0, 2, 5];

/// How many underflow checks of `m` the analysis claims cannot fail.
fn claims(m: &Module) -> usize {
    m.functions
        .iter()
        .map(|f| redundant_adstack_checks(f, &adstack_capacities(f).expect("caps")).len())
        .sum()
}

/// Runs `@main` on the interpreter in recover mode, verifying the claims
/// (or `claims`, when given, instead of the analysis').
fn run_verified(
    m: &Module,
    args: &[u64],
    claims: Option<Vec<HashSet<(u32, u32)>>>,
) -> Result<Option<u64>, InterpError> {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let mut it = Interpreter::new(m, rt, &HashMap::new())?;
    it.set_verify_elision(true);
    if let Some(c) = claims {
        it.set_elision_claims(c);
    }
    it.call(ENTRY, args)
}

#[test]
fn no_elided_check_fails_on_the_corpus() {
    let mut claimed = 0;
    let progs = guardlift_tests::corpus();
    assert!(progs.len() >= 50, "corpus has {} programs", progs.len());
    for p in &progs {
        let m = guardlift_tests::load(p);
        let f = m.func(m.func_by_name(ENTRY).expect("@main"));
        let args: Vec<u64> = f
            .param_types()
            .into_iter()
            .zip(&p.args)
            .map(|(t, a)| parse_arg(t, a).expect("argument"))
            .collect();
        for k in SETS {
            let mi = with_checks(&m, CHECK_SETS[k]);
            claimed += claims(&mi);
            let r = run_verified(&mi, &args, None);
            assert!(
                !matches!(r, Err(InterpError::Internal { .. })),
                "{} [{}]: {r:?}",
                p.path.display(),
                CHECK_SETS[k]
            );
        }
    }
    eprintln!("{} programs, {claimed} elided checks verified", progs.len());
    assert!(
        claimed >= 20,
        "the analysis elides only {claimed} checks in the corpus"
    );
}

#[test]
fn no_elided_check_fails_on_generated_modules() {
    let n = cases(3000);
    let (mut claimed, mut runs, mut realloc) = (0, 0, 0);
    for data in random_inputs(0xe11de, n, 1536) {
        let g = generate(&mut Unstructured::new(&data), &GenConfig::default());
        realloc += g
            .events
            .iter()
            .filter(|e| e.contains("adstack.realloc_loop"))
            .count();
        for k in SETS {
            if !g.needs.allows(CHECK_SETS[k]) {
                continue;
            }
            let m = with_checks(&g.module, CHECK_SETS[k]);
            claimed += claims(&m);
            runs += 1;
            let r = run_verified(&m, &g.args, None);
            assert!(
                !matches!(r, Err(InterpError::Internal { .. })),
                "[{}]: {r:?}\n{}",
                CHECK_SETS[k],
                guardlift_ir::print_module(&m)
            );
        }
    }
    eprintln!(
        "{n} modules, {runs} runs, {claimed} elided checks verified, {realloc} re-allocating loops"
    );
    assert!(
        claimed >= n / 10,
        "only {claimed} elided checks in {n} modules"
    );
    assert!(
        realloc >= n / 50,
        "only {realloc} re-allocating loops in {n} modules"
    );
}

/// The verification is live: a false claim (the first pop of an empty
/// stack "cannot fail") is an internal error, a true one is not.
#[test]
fn a_false_claim_is_an_internal_error() {
    let m = guardlift_ir::parse_and_verify(
        "fn @main() -> i64 {
entry:
    %s = adstack.alloc.i64 2
    guard.adstack.pop %s
    %n = adstack.len %s
    return %n
}",
    )
    .expect("valid");
    assert_eq!(claims(&m), 0);
    let r = run_verified(&m, &[], Some(vec![HashSet::from([(0, 1)])]));
    assert!(matches!(r, Err(InterpError::Internal { .. })), "{r:?}");
    let r = run_verified(&m, &[], Some(vec![HashSet::from([(0, 2)])]));
    assert_eq!(r, Ok(Some(0)));
}
