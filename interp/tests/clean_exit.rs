//! The interpreter verifies the clean-exit claims (issue 33,
//! `guardlift_ir::hoist`, "Clean exits"): after a clean loop's hot part
//! exits into a block's exit prefix, the fixed attributes' bounds tests
//! there are claimed not to fail. The prefix the analysis finds runs
//! under the claim without a refutation; a prefix claimed by hand past an
//! instruction that points the object at a smaller values array (which
//! ends the analysis' prefix) is refuted at the first bounds test.

use guardlift_interp::{InterpError, Interpreter};
use guardlift_ir::hoist::clean_loops;
use guardlift_ir::{parse_and_verify, Module};
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;

/// A loop storing attribute 3 of `%a` (4 attributes), then, in the block
/// it exits to, `rewrite` (may be empty) and a read of attribute 3.
fn program(rewrite: &str) -> Module {
    let text = format!(
        "extern fn @obj_new(i64) -> ptr
fn @main(%n: i64) -> i64 {{
entry:
    %four = iconst.i64 4
    %one = iconst.i64 1
    %a = call @obj_new(%four)
    %s = call @obj_new(%one)
    %ws = dict_slot.load %s
    %z = iconst.i64 0
    jump loop(%z)
loop(%i: i64):
    %done = icmp.sge %i, %n
    brif %done, exit, body
body:
    guard.store_attr %a, 3, %i
    %i2 = iadd %i, %one
    jump loop(%i2)
exit:
{rewrite}    %r = guard.load_attr %a, 3
    return %r
}}
"
    );
    parse_and_verify(&text).expect("valid")
}

/// Runs `@main(4)` in recover mode with the elision claims verified; with
/// `claim_prefix`, the loop's exit prefix is claimed that long by hand.
fn run(m: &Module, claim_prefix: Option<u32>) -> Result<Option<u64>, InterpError> {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let mut it = Interpreter::new(m, rt, &HashMap::new()).expect("link");
    it.set_verify_elision(true);
    if let Some(n) = claim_prefix {
        let main = m.func_by_name("main").expect("@main");
        let f = m.func(main);
        let exit = f
            .blocks
            .iter()
            .position(|b| b.name == "exit")
            .expect("exit") as u32;
        let mut claims = vec![Vec::new(); m.functions.len()];
        let mut lp = clean_loops(m, f).into_iter().next().expect("a clean loop");
        lp.exits = vec![(exit, n)];
        claims[main.0 as usize] = vec![lp];
        it.set_attr_claims(claims);
    }
    it.call("main", &[4])
}

#[test]
fn the_analysis_claims_the_read_after_the_loop() {
    let m = program("");
    let f = m.func(m.func_by_name("main").expect("@main"));
    let loops = clean_loops(&m, f);
    assert_eq!(loops.len(), 1, "{loops:?}");
    let exit = f
        .blocks
        .iter()
        .position(|b| b.name == "exit")
        .expect("exit") as u32;
    assert_eq!(loops[0].exits, vec![(exit, 1)], "the read, not the return");
    assert_eq!(run(&m, None).expect("no refutation"), Some(3));
}

#[test]
fn a_rewrite_ends_the_prefix_and_a_claim_past_it_is_refuted() {
    let m = program("    dict_slot.store %a, %ws\n");
    let f = m.func(m.func_by_name("main").expect("@main"));
    let loops = clean_loops(&m, f);
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert!(loops[0].exits.is_empty(), "{:?}", loops[0].exits);
    // Unclaimed: the read fails its bounds test and recovers (0).
    assert_eq!(run(&m, None).expect("no refutation"), Some(0));
    // Claimed up to the store only: nothing to refute.
    assert_eq!(run(&m, Some(1)).expect("no refutation"), Some(0));
    match run(&m, Some(2)) {
        Err(InterpError::Internal { msg, .. }) => {
            // The rewritten word is refuted before its capacity: the
            // clean copy would address the values array the entry saw.
            assert!(msg.contains("the entry saw"), "{msg}")
        }
        r => panic!("a claim past the rewrite must be refuted: {r:?}"),
    }
}
