//! The host's attribute slow paths of `differential` (`exec::HostSlowPaths`)
//! on a directed shape: a loop that clears an object's dict word and then
//! stores an attribute (the host's slow path, which frees the object on its
//! `FREE_EVERY`th store) and loads another. Checked (the binding makes
//! every attribute op a possible host call), both engines report the use
//! after free the same way; a loop analysis that ignored the binding
//! would run the loop's clean copy, whose lifetime test sits at the entry,
//! and miss it (mutant `jit-ignores-slow-path-binding`).

use guardlift_fuzz::exec::{comparable, run_raw_bound, with_checks, Engine, SlowPathBinding};
use guardlift_instrument::CheckSet;
use guardlift_jit::CompileOptions;
use guardlift_runtime::Mode;

const CLEAR_THEN_STORE: &str = "extern fn @obj_new(i64) -> ptr

fn @main(%n: i64) -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    %r = call @obj_new(%two)
    %z = iconst.i64 0
    jump head(%z)
head(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body, out
body:
    %zero = iconst.i64 0
    dict_slot.store %o, %zero
    store_attr %o, 0, %i
    %v = load_attr %o, 1
    %old = load_attr %r, 0
    %s = iadd %old, %v
    store_attr %r, 0, %s
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump head(%i2)
out:
    %res = load_attr %r, 0
    return %res
}
";

#[test]
fn a_slow_path_that_frees_is_seen_by_both_engines() {
    let m = guardlift_ir::parse_and_verify(CLEAR_THEN_STORE).expect("valid");
    let m = with_checks(&m, CheckSet::ALL);
    let jit = CompileOptions::default();
    let run = |engine| {
        let raw = run_raw_bound(
            &m,
            "main",
            &[10],
            engine,
            Mode::Recover,
            &jit,
            SlowPathBinding::HostDictFreeing,
        );
        comparable(&m, "main", raw).expect("runs")
    };
    let (interp, jit) = (run(Engine::Interp), run(Engine::Jit));
    assert_eq!(interp, jit, "the interpreter and the JIT disagree");
    let text = format!("{interp:?}");
    assert!(
        text.contains("use_after_free") || text.contains("UseAfterFree"),
        "{text}"
    );
}

/// The directed shape is what the mutant needs: a loop the analysis
/// versions without a binding and keeps checked with one.
#[test]
fn the_loop_is_clean_only_without_a_binding() {
    let m = guardlift_ir::parse_and_verify(CLEAR_THEN_STORE).expect("valid");
    let m = with_checks(&m, CheckSet::ALL);
    let f = &m.functions[0];
    let clean = |host_slow_paths| {
        let host = guardlift_ir::hoist::HostModel { host_slow_paths };
        guardlift_ir::hoist::clean_loops_for(&m, f, host).len()
    };
    assert_eq!((clean(false), clean(true)), (1, 0));
}
