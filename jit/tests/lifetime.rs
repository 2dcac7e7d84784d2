//! The lifetime and bounds checks as the JIT lowers them (recover mode):
//! use after free through every op the check guards, the per-frame
//! `(object, epoch)` cache of `gl_check_live`, the `epoch == 0` fast path
//! of raw accesses, double and invalid frees, and attribute indices past
//! the values array's capacity with a canary object beside it. Every
//! test runs twice: with the runtime's shadow (the inline hot paths of
//! `jit/src/lower/shadow.rs`) and, in a child process of this test binary
//! with `GUARDLIFT_NO_SHADOW=1`, on the call form with the epoch fast path
//! and the frame cache.

mod common;
use common::*;
use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{CompileOptions, CompiledModule, Jit, Ptr};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Observed, Report, ReportKind};

const PRELUDE: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
extern fn @obj_dictify(ptr)
"#;

/// `text` (after [`PRELUDE`]) instrumented with `checks`, compiled against
/// a fresh recover-mode runtime.
fn checked(text: &str, checks: &str) -> CompiledModule {
    checked_with(text, checks, CompileOptions::default())
}

fn checked_with(text: &str, checks: &str, opts: CompileOptions) -> CompiledModule {
    let m = parse(&format!("{PRELUDE}{text}"));
    let m = instrument(&m, CheckSet::parse(checks).unwrap());
    Jit::compile(&m, recover_rt(), &opts).unwrap()
}

fn summary(reports: &[Report]) -> Vec<(ReportKind, u32, u64, Option<u64>)> {
    reports
        .iter()
        .map(|r| {
            (
                r.kind,
                r.info.line,
                r.count,
                r.object.as_ref().map(|o| o.id),
            )
        })
        .collect()
}

/// Runs `@main(args)` of `m`, asserts that it returns `want` and that its
/// reports are `expected` (as [`summary`] gives them; `what` names the case
/// in a failure), and returns the reports.
///
/// # Safety
/// As [`call_raw`]: every memory access of the call is to memory valid for
/// it, or skipped by a guard.
unsafe fn assert_reports(
    m: &CompiledModule,
    args: &[u64],
    want: Option<u64>,
    expected: &[(ReportKind, u32, u64, Option<u64>)],
    what: &str,
) -> Vec<Report> {
    // SAFETY: forwarded to the caller.
    let got = unsafe { call_raw(m, "main", args) };
    assert_eq!(got, want, "{what}");
    let r = m.runtime().take_reports();
    assert_eq!(summary(&r), expected, "{what}: {r:?}");
    r
}

const OBJ: &str = r#"
fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}
fn @free(%o: ptr) {
entry:
    call @obj_free(%o)
    return
}
"#;

/// A guarded op as the very first instruction of a function: the cold
/// recover block must not become the function's entry (regression: the
/// function compiled to a bare `return`).
#[test]
fn a_checked_op_can_open_a_function() {
    let m = checked(
        &format!(
            "{OBJ}
fn @get(%o: ptr) -> i64 {{
entry:
    %v = load_attr %o, 0
    return %v
}}
fn @set(%o: ptr, %v: i64) {{
entry:
    store_attr %o, 0, %v
    return
}}
"
        ),
        "lifetime",
    );
    let rt = m.runtime().clone();
    let new = m.safe_func::<i64, Ptr>("new").unwrap();
    let free = m.safe_func::<Ptr, ()>("free").unwrap();
    let get = m.func::<Ptr, i64>("get").unwrap();
    let set = m.func::<(Ptr, i64), ()>("set").unwrap();
    let o = new.call(1);
    // SAFETY: `o` is a live object with one attribute, which `get` and
    // `set` use.
    unsafe {
        set.call((o, 41));
        assert_eq!(get.call(o), 41);
    }
    assert!(rt.take_reports().is_empty());
    free.call(o);
    // SAFETY: `o` is freed but in quarantine (its memory is still mapped
    // and not reused), and the lifetime guard skips both accesses.
    unsafe {
        set.call((o, 7));
        assert_eq!(get.call(o), 0, "recover: a load from a freed object is 0");
    }
    let r = rt.take_reports();
    let lines: Vec<u32> = r.iter().map(|r| r.info.line).collect();
    assert_eq!(summary(&r).len(), 2, "{r:?}");
    assert!(
        r.iter().all(|r| r.kind == ReportKind::UseAfterFree),
        "{r:?}"
    );
    assert!(lines[0] > 0 && lines[0] != lines[1]);
    let obj = r[0].object.as_ref().unwrap();
    assert!(obj.freed);
    assert_eq!(obj.id, 1);
}

/// The frame cache skips `gl_check_live` only while no free happened: a
/// loop that frees its object half way reports every later iteration.
#[test]
fn the_live_cache_is_dropped_by_a_free() {
    let m = checked(
        "
fn @main(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %o = call @obj_new(%one)
    %p = call @obj_new(%one)
    %z = iconst.i64 0
    jump head(%z, %z)
head(%i: i64, %acc: i64):
    %more = icmp.slt %i, %n
    brif %more, body, done
body:
    store_attr %o, 0, %i
    %v = load_attr %o, 0
    %w = load_attr %p, 0
    %acc2 = iadd %acc, %v
    %acc3 = iadd %acc2, %w
    %five = iconst.i64 5
    %at5 = icmp.eq %i, %five
    %i2 = iadd %i, %one
    brif %at5, kill, head(%i2, %acc3)
kill:
    call @obj_free(%o)
    jump head(%i2, %acc3)
done:
    return %acc
}
",
        "lifetime",
    );
    // 0+1+...+5 before the free; the load after it gives 0.
    // SAFETY: @main accesses only the objects it makes with @obj_new; its
    // accesses after the free hit quarantined memory and are skipped by the
    // lifetime guard.
    let r = unsafe {
        assert_reports(
            &m,
            &[10],
            Some(15),
            &[
                (ReportKind::UseAfterFree, 17, 4, Some(1)),
                (ReportKind::UseAfterFree, 18, 4, Some(1)),
            ],
            "",
        )
    };
    let obj = r[0].object.as_ref().unwrap();
    assert_eq!(obj.alloc_site.as_ref().unwrap().line, 9);
    assert_eq!(obj.free_site.as_ref().unwrap().line, 27);
}

/// Raw loads and stores into a freed object's memory (a values pointer
/// kept from before the free): skipped, loads give 0, reported with the
/// address and width; nothing is written to freed memory.
#[test]
fn raw_access_through_a_stale_values_pointer() {
    let m = checked(
        "
fn @main() -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    %w = dict_slot.load %o
    %one = iconst.i64 1
    %values = iadd %w, %one
    %x = iconst.i64 77
    store %x, %values, 8
    call @obj_free(%o)
    %y = iconst.i64 99
    store %y, %values, 8
    %r = load.i64 %values, 8
    %b = load.i8 %values, 0
    %bb = sext.i64 %b
    %s = iadd %r, %bb
    return %s
}
",
        "lifetime",
    );
    // SAFETY: the raw accesses are inside the object @main makes (values
    // array of 2 attributes); those after the free hit quarantined memory
    // and are skipped by the lifetime guard.
    let r = unsafe {
        assert_reports(
            &m,
            &[],
            Some(0),
            &[
                (ReportKind::UseAfterFree, 17, 1, Some(1)),
                (ReportKind::UseAfterFree, 18, 1, Some(1)),
                (ReportKind::UseAfterFree, 19, 1, Some(1)),
            ],
            "",
        )
    };
    let Observed::Lifetime {
        object,
        address,
        width,
    } = r[0].observed
    else {
        panic!("{:?}", r[0].observed)
    };
    assert_eq!(width, 8);
    let values = address - 8;
    assert_eq!(
        r[2].observed,
        Observed::Lifetime {
            object,
            address: values,
            width: 1
        }
    );
    // Nothing was written: the quarantined attribute still holds 77.
    // SAFETY: the freed object's values array is held by the quarantine.
    assert_eq!(unsafe { (address as *const u64).read() }, 77);
}

#[test]
fn double_and_invalid_free_are_ignored_and_reported() {
    let m = checked(
        "
fn @main() -> i64 {
entry:
    %one = iconst.i64 1
    %o = call @obj_new(%one)
    %eight = iconst.i64 8
    %inner = iadd %o, %eight
    call @obj_free(%inner)
    store_attr %o, 0, %eight
    call @obj_free(%o)
    call @obj_free(%o)
    %v = load_attr %o, 0
    return %v
}
",
        "lifetime",
    );
    // SAFETY: @main's attribute accesses are to the object it makes, the
    // one after the free skipped by the lifetime guard (`obj_free` checks
    // its argument itself).
    unsafe {
        assert_reports(
            &m,
            &[],
            Some(0),
            &[
                (ReportKind::InvalidFree, 12, 1, None),
                (ReportKind::DoubleFree, 15, 1, Some(1)),
                (ReportKind::UseAfterFree, 16, 1, Some(1)),
            ],
            "",
        )
    };
    assert!(m.runtime().take_host_fault().is_none());
}

/// Indices at and past the capacity: the load gives 0, the store is
/// skipped and the object allocated next to it keeps its attribute; the
/// report names the index and capacity. In dict mode any index is a key.
#[test]
fn attribute_index_past_capacity() {
    for checks in ["bounds", "lifetime,dict,bounds"] {
        let m = checked(
            "
fn @main() -> i64 {
entry:
    %two = iconst.i64 2
    %a = call @obj_new(%two)
    %b = call @obj_new(%two)
    %canary = iconst.i64 4242
    store_attr %b, 0, %canary
    store_attr %b, 1, %canary
    %x = iconst.i64 -1
    store_attr %a, 2, %x
    store_attr %a, 5, %x
    %r = load_attr %a, 3
    %c0 = load_attr %b, 0
    %c1 = load_attr %b, 1
    %s = iadd %c0, %c1
    %t = iadd %s, %r
    call @obj_dictify(%a)
    store_attr %a, 9, %two
    %d = load_attr %a, 9
    %u = iadd %t, %d
    return %u
}
",
            checks,
        );
        // SAFETY: @main accesses only the two objects it makes; the bounds
        // guard skips the out-of-capacity attributes.
        let r = unsafe {
            assert_reports(
                &m,
                &[],
                Some(2 * 4242 + 2),
                &[
                    (ReportKind::AttrOutOfBounds, 15, 1, Some(1)),
                    (ReportKind::AttrOutOfBounds, 16, 1, Some(1)),
                    (ReportKind::AttrOutOfBounds, 17, 1, Some(1)),
                ],
                checks,
            )
        };
        let Observed::Bounds {
            index, capacity, ..
        } = r[1].observed
        else {
            panic!("{:?}", r[1].observed)
        };
        assert_eq!((index, capacity), (5, 2), "{checks}");
        assert!(m.runtime().take_host_fault().is_none());
    }
}

/// A clean loop's entry cache keeps the last four successes of its
/// fixed-attribute test (`jit/src/lower/entrycache.rs`): a method whose
/// loop is entered with up to four receivers in turn asks the runtime
/// (`Runtime::attr_fixed`) once per receiver, not at every entry; five
/// receivers in turn evict each other (round robin) and miss every time,
/// but the runtime's memo of its answers, probed inline, answers without a
/// call; a free (a new values epoch) makes every way miss. Without a shadow
/// no loop is versioned and nothing asks. (The cache sits behind the
/// own-values test, which answers for these receivers first: compiled
/// without it here; with it, no entry asks at all.)
#[test]
fn the_loop_entry_cache_holds_four_receivers() {
    const METHOD: &str = "
fn @new(%s: i64) -> ptr {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    store_attr %o, 0, %s
    return %o
}
fn @bump(%o: ptr, %k: i64) -> i64 {
entry:
    %z = iconst.i64 0
    jump loop(%z)
loop(%i: i64):
    %d = icmp.sge %i, %k
    brif %d, out, body
body:
    %c = load_attr %o, 1
    %s = load_attr %o, 0
    %c2 = iadd %c, %s
    store_attr %o, 1, %c2
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump loop(%i2)
out:
    %r = load_attr %o, 1
    return %r
}
fn @free(%o: ptr) {
entry:
    call @obj_free(%o)
    return
}
extern fn @fault_clear_lsb(ptr)
fn @break(%o: ptr) {
entry:
    call @fault_clear_lsb(%o)
    return
}
";
    // SAFETY: the functions touch only the objects `@new` makes, live
    // until `@free`, which frees one made for it alone; `@break` clears
    // the low bit of a live object's word, which the checks then report
    // before any access through it.
    let run = |m: &CompiledModule, f: &str, args: &[u64]| unsafe { call_raw(m, f, args) };
    let shadow = guardlift_runtime::shadow::base().is_some();
    for receivers in [1u64, 2, 4, 5] {
        // With the own-values test the runtime is never asked.
        let own = checked(METHOD, "lifetime,dict,bounds,clobber");
        let objs: Vec<u64> = (1..=receivers)
            .map(|s| run(&own, "new", &[s]).expect("@new returns"))
            .collect();
        for round in 1..=3 {
            for (s, &o) in (1..).zip(&objs) {
                let r = run(&own, "bump", &[o, 3]).expect("@bump returns");
                assert_eq!(r, 3 * s * round, "own values: receiver {s}, round {round}");
            }
        }
        assert_eq!(own.runtime().attr_fixed_calls(), 0, "own values");
        let m = checked_with(
            METHOD,
            "lifetime,dict,bounds,clobber",
            CompileOptions::default().with_own_values(false),
        );
        let rt = m.runtime().clone();
        let objs: Vec<u64> = (1..=receivers)
            .map(|s| run(&m, "new", &[s]).expect("@new returns"))
            .collect();
        let rounds = 50u64;
        for round in 1..=rounds {
            for (s, &o) in (1..).zip(&objs) {
                let r = run(&m, "bump", &[o, 3]).expect("@bump returns");
                assert_eq!(r, 3 * s * round, "receiver {s}, round {round}");
            }
        }
        let calls = rt.attr_fixed_calls();
        // More receivers than the loop's four ways miss it at every
        // entry, but the runtime's memo answers inline (no call) — unless
        // more of them share a memo set than it has ways.
        let crowded = objs.iter().any(|&o| {
            let set = |x: u64| guardlift_abi::offsets::fixed_memo_set(x);
            let same = objs.iter().filter(|&&x| set(x) == set(o)).count();
            same > guardlift_abi::offsets::FIXED_MEMO_WAYS
        });
        let want = if shadow { receivers } else { 0 };
        match crowded {
            false => assert_eq!(calls, want, "{receivers} receivers in turn"),
            true => assert!(calls >= want, "{receivers} receivers in turn: {calls}"),
        }
        // A free moves the values epoch: every receiver misses once more.
        let extra = run(&m, "new", &[9]).expect("@new returns");
        run(&m, "free", &[extra]);
        for &o in &objs {
            run(&m, "bump", &[o, 3]);
            run(&m, "bump", &[o, 3]);
        }
        let again = rt.attr_fixed_calls() - calls;
        // (the second call of each hits the way the first one filled)
        let want = if shadow { receivers } else { 0 };
        assert_eq!(again, want, "{receivers} receivers after a free");
        assert!(rt.take_reports().is_empty());
        // A receiver whose word breaks while the memo holds its answer:
        // the next entry runs the checked copy, which reports.
        let bad = objs[objs.len() - 1];
        run(&m, "break", &[bad]);
        run(&m, "bump", &[bad, 3]);
        let reports = rt.take_reports();
        assert!(
            reports.iter().any(|r| r.kind == ReportKind::DictSlotTag),
            "{receivers} receivers, a broken word: {:?}",
            summary(&reports)
        );
    }
}

shadow_tests!();
