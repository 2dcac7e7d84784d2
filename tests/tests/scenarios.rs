//! Scenario tests: the IR programs in `tests/programs/scenarios/`, each run
//! on both engines (the interpreter and the JIT), which must agree on the
//! result, the output and the reports. Abort and trap mode of the same
//! scenarios run through the `guardlift` binary in `cli/tests/scenarios.rs`.

use guardlift_instrument::CheckSet;
use guardlift_runtime::{Mode, Observed, Report, ReportKind};
use guardlift_tests::{
    load, program, run_with_reports, scenario, with_checks, Engine, Outcome, Program,
};

const STACK: usize = 64 << 20;

fn dict_only() -> CheckSet {
    CheckSet {
        dict: true,
        ..Default::default()
    }
}

fn adstack_only() -> CheckSet {
    CheckSet {
        adstack: true,
        ..Default::default()
    }
}

fn clobber_only() -> CheckSet {
    CheckSet {
        clobber: true,
        ..Default::default()
    }
}

/// Runs scenario `name` with `args` (its header's when `None`) under
/// `checks` in recover mode on both engines; asserts they agree and
/// returns the JIT's outcome and full reports.
fn both(name: &str, args: Option<&[&str]>, checks: CheckSet) -> (Outcome, Vec<Report>) {
    both_of(scenario(name), args, checks)
}

/// As [`both`], for program `p`.
fn both_of(p: Program, args: Option<&[&str]>, checks: CheckSet) -> (Outcome, Vec<Report>) {
    let name = p.path.display().to_string();
    let args: Vec<String> = match args {
        Some(a) => a.iter().map(|s| s.to_string()).collect(),
        None => p.args.clone(),
    };
    let m = with_checks(&load(&p), checks);
    let (a, ra) = run_with_reports(&m, &args, Engine::Interp, Mode::Recover, STACK);
    let (b, rb) = run_with_reports(&m, &args, Engine::Jit, Mode::Recover, STACK);
    assert_eq!(a, b, "{name} {args:?} [{checks}]: interp vs jit");
    assert!(a.result.is_ok(), "{name}: {:?}", a.result);
    assert_eq!(ra.len(), rb.len());
    // Observations agree beyond what CmpReport keeps (addresses aside).
    for (x, y) in ra.iter().zip(&rb) {
        match (x.observed, y.observed) {
            (Observed::Dict { value: v1, .. }, Observed::Dict { value: v2, .. }) => {
                assert_eq!(v1 & 7, v2 & 7)
            }
            (o1 @ Observed::Adstack { .. }, o2) => assert_eq!(o1, o2),
            (Observed::Clobber { width: w1, .. }, Observed::Clobber { width: w2, .. }) => {
                assert_eq!(w1, w2)
            }
            (o1, o2) => panic!("{name}: {o1:?} vs {o2:?}"),
        }
    }
    (b, rb)
}

fn result_bits(o: &Outcome) -> u64 {
    o.result
        .clone()
        .expect("a result")
        .expect("the function returns a value")
}

fn f64_result(o: &Outcome) -> f64 {
    f64::from_bits(result_bits(o))
}

fn f32_result(o: &Outcome) -> f32 {
    f32::from_bits(result_bits(o) as u32)
}

fn i64_result(o: &Outcome) -> i64 {
    result_bits(o) as i64
}

// ---- the tag flip ----------------------------------------------------------

const TAGFLIP: &str = "ctxmgr_nested_tagflip";

#[test]
fn tagflip_nested_managers_recover_reports_every_bad_access() {
    for checks in [CheckSet::ALL, dict_only()] {
        let (o, reports) = both(TAGFLIP, None, checks);
        // 3 per iteration before the flip, 1 (the outer depth) after it;
        // 10^9: the outer manager still references the inner one.
        assert_eq!(i64_result(&o), 1_000_000_000 + 3 * 25_000 + 25_000);
        assert!(!o.host_fault, "nothing corrupted reached the host");
        let got: Vec<(&str, u32, &str, u64)> = reports
            .iter()
            .map(|r| {
                (
                    r.info.function.as_str(),
                    r.info.line,
                    r.info.op.as_str(),
                    r.count,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("enter", 24, "store_attr", 25_000),
                ("enter", 26, "store_attr", 25_000),
                ("exit", 33, "store_attr", 25_000),
                ("exit", 34, "load_attr", 25_000),
            ],
            "[{checks}]"
        );
        let object = match reports[0].observed {
            Observed::Dict { object, .. } => object,
            o => panic!("{o:?}"),
        };
        for r in &reports {
            assert_eq!(r.kind, ReportKind::DictSlotTag);
            let Observed::Dict { object: obj, value } = r.observed else {
                panic!("{r:?}")
            };
            assert_eq!(obj, object, "only the inner manager is corrupted");
            assert_eq!(value & 7, 0b110, "the LSB was cleared");
            let w = r.last_write.as_ref().expect("the heap's last write");
            assert_eq!(w.by, "obj_new");
            assert_eq!(w.value, value | 1, "the word changed behind the JIT's back");
        }
    }
}

#[test]
fn tagflip_without_instrumentation_reaches_the_host_as_a_fault() {
    // The corrupted word is taken for a dict pointer and handed to the
    // host's slow path: a host fault (where native code would crash) on
    // both engines, and no report.
    let (o, reports) = both(TAGFLIP, Some(&["1000", "500"]), CheckSet::default());
    assert!(o.host_fault);
    assert!(reports.is_empty());
}

#[test]
fn tagflip_before_the_flip_is_clean() {
    // k >= n: the rogue writer never runs.
    let (o, reports) = both(TAGFLIP, Some(&["50000", "50000"]), CheckSet::ALL);
    assert_eq!(i64_result(&o), 1_000_000_000 + 3 * 50_000);
    assert!(reports.is_empty());
}

// ---- dict slots: skipped stores write nothing ------------------------------

#[test]
fn one_byte_store_clearing_the_lsb_is_a_width_1_clobber_and_is_skipped() {
    for checks in [CheckSet::ALL, clobber_only()] {
        let (o, reports) = both("clobber_byte_lsb", None, checks);
        // 1: the word and every neighbouring object word are unchanged;
        // 330: both attributes still reachable through the word.
        assert_eq!(i64_result(&o), 331, "[{checks}]");
        assert_eq!(reports.len(), 1);
        let r = &reports[0];
        assert_eq!(r.kind, ReportKind::SlotClobber);
        assert_eq!((r.info.line, r.info.op.as_str()), (31, "store"));
        assert_eq!(r.count, 1);
        let Observed::Clobber {
            width,
            value,
            address,
        } = r.observed
        else {
            panic!("{r:?}")
        };
        assert_eq!(width, 1);
        assert_eq!(value & 1, 0, "the byte with its LSB cleared");
        assert_eq!(
            value & 7,
            0b110,
            "the low byte of a values-tagged word, LSB cleared"
        );
        assert_eq!(address % 8, 0, "the slot's first byte");
    }
}

#[test]
fn one_byte_clobber_uninstrumented_corrupts_the_word() {
    // Without the check the byte store lands: the tag is broken (the
    // program's own canary flag is 0) and the attributes go through the
    // host's slow path, which refuses the corrupted word.
    let (o, _) = both("clobber_byte_lsb", None, CheckSet::default());
    assert!(o.host_fault);
    assert_ne!(i64_result(&o), 331);
}

#[test]
fn skipped_dict_stores_leave_slot_and_attributes_unchanged() {
    let (o, reports) = both("dict_skipped_stores_canaries", None, CheckSet::ALL);
    // attrs 1, 2, 3 (not 99); 1000: the slot holds the repaired word;
    // 10000: the object words beside the slot are unchanged.
    assert_eq!(i64_result(&o), 11_321);
    let got: Vec<(u32, &str, u64)> = reports
        .iter()
        .map(|r| (r.info.line, r.info.op.as_str(), r.count))
        .collect();
    assert_eq!(
        got,
        [
            (30, "store_attr", 1),
            (31, "dict_slot.load", 1),
            (33, "dict_slot.store", 1)
        ]
    );
}

// ---- adstack ---------------------------------------------------------------

/// 0.95^n as the reverse pass computes it: one rounding per step.
fn decay_grad_f64(n: u32) -> f64 {
    (0..n).fold(1.0f64, |g, _| g * 0.95)
}

fn decay_grad_f32(n: u32) -> f32 {
    (0..n).fold(1.0f32, |g, _| g * 0.95f32)
}

#[test]
fn decay_gradient_is_095_to_the_n_in_f64_and_f32() {
    for n in [10u32, 100] {
        let a = n.to_string();
        for checks in [CheckSet::default(), adstack_only(), CheckSet::ALL] {
            let (o, reports) = both_of(program("grad_decay_f64"), Some(&[&a]), checks);
            assert!(reports.is_empty());
            let g = f64_result(&o);
            assert_eq!(g.to_bits(), decay_grad_f64(n).to_bits(), "n={n} [{checks}]");
            assert!(
                (g - 0.95f64.powi(n as i32)).abs() <= 1e-13 * g,
                "n={n}: {g}"
            );

            let (o, reports) = both_of(program("grad_decay_f32"), Some(&[&a]), checks);
            assert!(reports.is_empty());
            let g = f32_result(&o);
            assert_eq!(g.to_bits(), decay_grad_f32(n).to_bits(), "n={n} [{checks}]");
            let exact = 0.95f64.powi(n as i32);
            assert!(((g as f64) - exact).abs() <= 1e-5 * exact, "n={n}: {g}");
        }
    }
}

#[test]
fn sums_with_fixed_and_varying_coefficients() {
    for n in [1i64, 10, 100, 127] {
        let a = n.to_string();
        for checks in [CheckSet::default(), CheckSet::ALL] {
            let (o, r) = both("grad_sum", Some(&["2.0", &a, "0"]), checks);
            assert!(r.is_empty());
            assert_eq!(f64_result(&o), 0.5 * n as f64, "fixed, n={n}");
            let (o, r) = both("grad_sum", Some(&["-3.5", &a, "1"]), checks);
            assert!(r.is_empty());
            assert_eq!(f64_result(&o), (n * (n + 1) / 2) as f64, "varying, n={n}");
        }
    }
}

#[test]
fn a_large_capacity_gives_the_exact_gradient() {
    let n: i64 = 99_999;
    let a = n.to_string();
    let (o, r) = both("grad_sum_large", Some(&["2.0", &a, "1"]), CheckSet::ALL);
    assert!(r.is_empty());
    assert_eq!(f64_result(&o), 4_999_950_000.0);
    let (o, r) = both("grad_sum_large", Some(&["2.0", &a, "0"]), CheckSet::ALL);
    assert!(r.is_empty());
    assert_eq!(f64_result(&o), 49_999.5);
}

#[test]
fn overflow_in_recover_mode_is_reported_and_the_gradient_uses_what_fit() {
    let (o, reports) = both("grad_overflow_recover", None, CheckSet::ALL);
    assert_eq!(f64_result(&o).to_bits(), decay_grad_f64(31).to_bits());
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.kind, ReportKind::AdstackOverflow);
    assert_eq!((r.info.line, r.info.op.as_str()), (23, "adstack.push"));
    assert_eq!(r.count, 34, "66 pushes, 32 fit");
    assert_eq!(
        r.observed,
        Observed::Adstack {
            capacity: 32,
            len: 32
        }
    );
}

#[test]
fn overflowing_one_adstack_leaves_its_neighbours_intact() {
    let (o, reports) = both("adstack_neighbours_canary", None, CheckSet::ALL);
    // len(lo)=3 len(hi)=3 | hi 9 8 7 adj 5 | lo 3 2 1 adj 6 | top(a)=103 len(a)=4
    assert_eq!(i64_result(&o), 33_987_532_161_034);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].count, 6);
    assert_eq!(
        reports[0].observed,
        Observed::Adstack {
            capacity: 4,
            len: 4
        }
    );
}
