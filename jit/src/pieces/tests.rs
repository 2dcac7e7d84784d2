//! The splitter's unit tests: where it cuts, what crosses a cut, and that
//! every piece is a valid IR function.

use super::*;

/// A chain of `n` blocks (the compile bench's shape): two values of the
/// entry used everywhere, a `brif` every other block.
fn chain(n: usize) -> String {
    let mut s = String::from(
        "fn @main(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %lim = iconst.i64 100\n    jump b0(%x)\n",
    );
    for i in 0..n {
        let next = if i + 1 == n {
            "done".into()
        } else {
            format!("b{}", i + 1)
        };
        s += &format!("b{i}(%v{i}: i64):\n    %w{i} = iadd %v{i}, %one\n");
        if i % 2 == 0 {
            s += &format!(
                "    %c{i} = icmp.slt %w{i}, %lim\n    brif %c{i}, {next}(%w{i}), {next}(%v{i})\n"
            );
        } else {
            s += &format!("    jump {next}(%w{i})\n");
        }
    }
    s += "done(%r: i64):\n    return %r\n}\n";
    s
}

fn parse(text: &str) -> Module {
    guardlift_ir::parse_and_verify(text).expect("valid")
}

/// Verifies a split module, its pieces renamed (a piece has its function's
/// name, which the verifier would call a duplicate) and their blocks
/// labelled.
fn verify(split: &Split<'_>) {
    let mut m = split.module.clone().into_owned();
    for (f, &(_, k)) in m.functions.iter_mut().zip(&split.origin) {
        if k > 0 {
            f.name = format!("{}_piece{k}", f.name);
        }
        // Pieces' copied blocks have no labels.
        for (i, b) in f.blocks.iter_mut().enumerate() {
            if b.name.is_empty() {
                b.name = format!("piece_block{i}").into();
            }
        }
    }
    guardlift_ir::verify_module(&m).expect("every piece verifies");
}

/// The block counts of a split module's functions.
fn shape(split: &Split<'_>) -> Vec<usize> {
    split
        .module
        .functions
        .iter()
        .map(|f| f.blocks.len())
        .collect()
}

#[test]
fn a_chain_is_cut_into_valid_pieces_that_pass_their_live_ins() {
    let m = parse(&chain(200));
    let split = split(Cow::Borrowed(&m), 40);
    let sm = &split.module;
    assert!(sm.functions.len() > 3, "{} functions", sm.functions.len());
    verify(&split);
    assert_eq!(split.origin[0], (0, 0));
    for (i, &(o, k)) in split.origin.iter().enumerate().skip(1) {
        assert_eq!((o, k as usize), (0, i), "pieces follow in order");
        let f = &sm.functions[i];
        assert_eq!(f.name, "main");
        // The cut block's param, then %one and %lim (the last piece has no
        // exit but still takes what it uses).
        assert_eq!(f.params.len(), 3, "piece {k}");
    }
    for f in &sm.functions {
        assert!(f.inst_count() < 200, "a piece of about 40 instructions");
    }
    // Every piece but the last ends in a call of the next one.
    for (i, f) in sm.functions.iter().enumerate() {
        let calls: Vec<_> = (f.blocks.iter().flat_map(|b| &b.insts))
            .filter_map(|i| i.kind.direct_call())
            .collect();
        if i + 1 < sm.functions.len() {
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].0, FuncId(i as u32 + 1));
        } else {
            assert!(calls.is_empty());
        }
    }
    assert!(split.tiers.iter().all(|&t| t == Tier::of(&m.functions[0])));
}

#[test]
fn small_functions_and_size_zero_are_left_whole() {
    let m = parse(&chain(10));
    assert!(matches!(
        split(Cow::Borrowed(&m), 40).module,
        Cow::Borrowed(_)
    ));
    let m = parse(&chain(200));
    assert!(matches!(
        split(Cow::Borrowed(&m), 0).module,
        Cow::Borrowed(_)
    ));
    // The largest size a user can ask for (GUARDLIFT_JIT_PIECES) cuts
    // nothing (twice it does not overflow).
    assert!(matches!(
        split(Cow::Borrowed(&m), usize::MAX).module,
        Cow::Borrowed(_)
    ));
}

/// No cut splits a loop, skips into the middle of a piece, or comes in a
/// function with frame state.
#[test]
fn cuts_respect_loops_skips_and_frame_state() {
    // One loop over all blocks: its back edge goes from the last block to
    // the first, so there is no cut.
    let mut s = chain(60).replace("done(%r: i64):\n    return %r", "done(%r: i64):\n    %more = icmp.slt %r, %lim\n    brif %more, b0(%r), out(%r)\nout(%q: i64):\n    return %q");
    let m = parse(&s);
    let sp = split(Cow::Borrowed(&m), 20);
    // Only after it: the loop's 62 blocks and an exit block, then `out`.
    assert_eq!(shape(&sp), [63, 2], "a loop is never cut");
    verify(&sp);
    // An edge from the entry to the end skips every cut.
    s = chain(60).replace(
        "jump b0(%x)",
        "%c = icmp.slt %x, %lim\n    brif %c, b0(%x), done(%x)",
    );
    let m = parse(&s);
    let sp = split(Cow::Borrowed(&m), 20);
    // Only at the skip's target: the entry, the 60 blocks and an exit
    // block, then `done`.
    assert_eq!(shape(&sp), [62, 2], "no cut is skipped");
    verify(&sp);
    // A stack area lives as long as the frame.
    s = chain(60).replace(
        "%one = iconst.i64 1",
        "%one = iconst.i64 1\n    %area = stack_alloc 16",
    );
    let m = parse(&s);
    assert!(
        matches!(split(Cow::Borrowed(&m), 20).module, Cow::Borrowed(_)),
        "frame state"
    );
}

/// A value of an early piece used only in the last one crosses every cut
/// in between.
#[test]
fn a_value_crosses_every_piece_up_to_its_use() {
    let s = chain(120).replace(
        "done(%r: i64):\n    return %r",
        "done(%r: i64):\n    %s = iadd %r, %w3\n    return %s",
    );
    let m = parse(&s);
    let with = split(Cow::Borrowed(&m), 30);
    verify(&with);
    let plain = parse(&chain(120));
    let without = split(Cow::Borrowed(&plain), 30);
    assert_eq!(shape(&with), shape(&without));
    assert!(with.module.functions.len() >= 3);
    for (a, b) in with.module.functions[1..]
        .iter()
        .zip(&without.module.functions[1..])
    {
        assert_eq!(a.params.len(), b.params.len() + 1, "and %w3");
    }
}

/// A block may use a value of a block after it in the layout (one that
/// dominates it): every definition of a piece is numbered before its
/// instructions are copied (found by the differential fuzzer).
#[test]
fn a_use_before_its_definition_in_the_layout_is_mapped() {
    let m = parse(
        "fn @main(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %a = iadd %x, %one\n    %b = iadd %a, %one\n    %c = iadd %b, %one\n    jump head(%c)\n\
         head(%i: i64):\n    jump step(%i)\n\
         out:\n    %r = iadd %s, %one\n    return %r\n\
         step(%j: i64):\n    %s = iadd %j, %one\n    jump out\n}\n",
    );
    let sp = split(Cow::Borrowed(&m), 2);
    assert_eq!(
        shape(&sp),
        [2, 4],
        "entry and its exit; entry, head, out, step"
    );
    verify(&sp);
}

#[test]
fn a_module_given_by_value_is_cut_in_place_into_the_same_pieces() {
    // Two functions, the second cut: the first is moved as it is, the
    // second's blocks are taken by its pieces.
    let text = chain(200).replace("@main", "@big");
    let m = parse(&format!("{}{text}", chain(3)));
    let borrowed = split(Cow::Borrowed(&m), 40);
    let owned = split(Cow::Owned(m.clone()), 40);
    assert!(borrowed.module.functions.len() > 3);
    assert_eq!(owned.origin, borrowed.origin);
    assert_eq!(owned.tiers, borrowed.tiers);
    assert_eq!(
        *owned.module, *borrowed.module,
        "the same pieces, whether taken or copied"
    );
    verify(&owned);
    // Nothing to cut: the module comes back as it was given.
    let small = parse(&chain(3));
    assert!(
        matches!(split(Cow::Owned(small.clone()), 40).module, Cow::Owned(ref s) if *s == small)
    );
}
