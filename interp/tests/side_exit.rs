//! The interpreter verifies the side-exit claims (issue 33,
//! `guardlift_ir::hoist`): a clean loop's claims are about its hot blocks,
//! so a free in a cold block is no refutation, while the same free inside
//! a block claimed hot is; and a side exit ends the activation whose fixed
//! attributes the interpreter tracks, as the JIT leaves its clean copy
//! there.

use guardlift_instrument::{instrument, CheckSet};
use guardlift_interp::{InterpError, Interpreter};
use guardlift_ir::hoist::{clean_loops, CleanLoop};
use guardlift_ir::{parse_and_verify, Module};
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;

/// `tests/programs/hoist_loop_side_exit.glir`: a loop whose third
/// iteration frees the loop's object on a cold branch.
fn program() -> Module {
    compile(&source())
}

fn source() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/programs/hoist_loop_side_exit.glir"
    );
    std::fs::read_to_string(path).expect("the side-exit program")
}

fn compile(text: &str) -> Module {
    instrument(&parse_and_verify(text).expect("valid"), CheckSet::ALL)
}

/// Runs `@main(5)` in recover mode with the elision claims verified,
/// after `claim` adjusts them.
fn run(m: &Module, claim: impl FnOnce(&mut Interpreter)) -> Result<Option<u64>, InterpError> {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let mut it = Interpreter::new(m, rt, &HashMap::new()).expect("link");
    it.set_verify_elision(true);
    claim(&mut it);
    it.call("main", &[5])
}

/// `@main`'s clean loop, as the analysis finds it.
fn the_loop(m: &Module) -> CleanLoop {
    let f = m.func(m.func_by_name("main").expect("@main"));
    let loops = clean_loops(m, f);
    assert_eq!(loops.len(), 1, "{loops:?}");
    let kill = f
        .blocks
        .iter()
        .position(|b| b.name == "kill")
        .expect("kill") as u32;
    assert_eq!(loops[0].cold, vec![kill], "the free's block is cold");
    loops[0].clone()
}

#[test]
fn a_free_in_a_cold_block_refutes_nothing() {
    let m = program();
    the_loop(&m);
    assert_eq!(run(&m, |_| {}).expect("no internal error"), Some(5));
}

#[test]
fn a_free_in_a_block_claimed_hot_is_an_internal_error() {
    let m = program();
    let lp = the_loop(&m);
    let main = m.func_by_name("main").expect("@main").0 as usize;
    let blocks = m.func(m.func_by_name("main").expect("@main")).blocks.len();
    // The whole loop claimed, cold block included (what a clean copy that
    // kept its cold blocks would rely on).
    let mut claims = vec![Vec::new(); m.functions.len()];
    claims[main] = (0..blocks as u32).map(|b| lp.contains(b)).collect();
    match run(&m, |it| it.set_loop_claims(claims)) {
        Err(InterpError::Internal { msg, .. }) => assert!(msg.contains("freed"), "{msg}"),
        other => panic!("expected an internal error, got {other:?}"),
    }
}

#[test]
fn a_side_exit_ends_the_fixed_attributes_activation() {
    // The same loop whose cold block, instead of the free, dictifies %o
    // and writes its old word back: later attribute ops reach the released
    // values array (no lifetime checks here, so the bounds test decides).
    let text = source()
        .replace(
            "call @obj_free(%o)",
            "%w = dict_slot.load %o\n    call @obj_dictify(%o)\n    dict_slot.store %o, %w",
        )
        .replace("extern fn @obj_free(ptr)", "extern fn @obj_dictify(ptr)");
    assert!(text.contains("call @obj_dictify(%o)"));
    let checks = CheckSet::parse("dict,bounds").expect("checks");
    let m = instrument(&parse_and_verify(&text).expect("valid"), checks);
    let lp = the_loop(&m);
    assert!(!lp.attrs.is_empty(), "%o's attribute is fixed: {lp:?}");
    // As analysed: the side exit forgets %o, whose later accesses the
    // checked copy tests. Claimed hot through the cold block, the tracking
    // would go on past the dictify and find the released array's capacity
    // too small.
    let mut forged = lp.clone();
    forged.hot = lp.blocks.clone();
    forged.cold.clear();
    forged.side.clear();
    let main = m.func_by_name("main").expect("@main").0 as usize;
    let claims = |l: &CleanLoop| {
        let mut c = vec![Vec::new(); m.functions.len()];
        c[main] = vec![l.clone()];
        c
    };
    assert_eq!(
        run(&m, |it| it.set_attr_claims(claims(&lp))).expect("no internal error"),
        Some(5)
    );
    match run(&m, |it| it.set_attr_claims(claims(&forged))) {
        Err(InterpError::Internal { msg, .. }) => assert!(msg.contains("capacity"), "{msg}"),
        other => panic!("expected an internal error, got {other:?}"),
    }
}
