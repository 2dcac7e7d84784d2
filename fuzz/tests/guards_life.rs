//! The `guards` target's lifetime and bounds part on one fixed input:
//! every lifetime and bounds kind is expected and observed on both
//! engines, by hand-written guards and by the pass, at both optimization
//! levels; and the model catches a guard that is missing.

use guardlift_fuzz::exec::Engine;
use guardlift_fuzz::guards::{build, check, GuardsInput, LifeOp};
use guardlift_ir::InstKind;
use std::collections::BTreeSet;

fn input(instrument: bool, opt_none: bool) -> GuardsInput {
    use LifeOp::*;
    GuardsInput {
        layout: 0,
        nattrs: 1,
        words: Vec::new(),
        elem: 0,
        cap: 1,
        ops: Vec::new(),
        instrument,
        loop_trips: 0,
        loop_init: 0,
        loop_pre: 0,
        loop_ops: Vec::new(),
        // Two attributes per object (1 + 1 % 4).
        life_nattrs: 1,
        life_ops: vec![
            StoreAttr(0, 1),
            RawStore(1, 0),
            Free(0),
            LoadAttr(0, 0),  // use_after_free
            Free(0),         // double_free
            RawStore(0, 1),  // use_after_free (raw, 8 bytes)
            SlotLoad(0),     // use_after_free
            FreeInterior(1), // invalid_free; object 1 stays live
            LoadAttr(1, 3),  // attr_out_of_bounds (index 3, capacity 2)
            StoreAttr(2, 2), // attr_out_of_bounds
            RawLoad(1, 0),   // the raw store's value
            LoadAttr(2, 1),  // in bounds
        ],
        opt_none,
    }
}

#[test]
fn every_lifetime_and_bounds_kind_fires_as_modelled() {
    let want: BTreeSet<&str> = [
        "use_after_free",
        "double_free",
        "invalid_free",
        "attr_out_of_bounds",
    ]
    .into();
    for instrument in [false, true] {
        for opt_none in [false, true] {
            let case = build(&input(instrument, opt_none));
            assert_eq!(case.expected_kinds(), want, "instrument {instrument}");
            for engine in [Engine::Interp, Engine::Jit] {
                if let Err(e) = check(&case, engine) {
                    panic!("instrument {instrument}, opt_none {opt_none}: {e}");
                }
            }
        }
    }
}

/// Without the hand-written guards on the frees, the double and the
/// interior free reach the heap unchecked: the run fails and `check` says so.
#[test]
fn a_missing_free_guard_is_a_finding() {
    let mut case = build(&input(false, false));
    for b in &mut case.module.functions[0].blocks {
        for inst in &mut b.insts {
            if matches!(inst.kind, InstKind::Call { .. }) {
                inst.site = None;
            }
        }
    }
    for engine in [Engine::Interp, Engine::Jit] {
        assert!(
            check(&case, engine).is_err(),
            "{engine:?}: unguarded double free not caught"
        );
    }
}

/// The read-back compares every canary: one canary stored wrong — here
/// the first object word's fill constant with one bit flipped — is a
/// finding on both engines.
#[test]
fn a_clobbered_canary_is_a_finding() {
    let mut case = build(&input(true, false));
    let fill = case.module.functions[0]
        .blocks
        .iter_mut()
        .flat_map(|b| b.insts.iter_mut())
        .find_map(|inst| match &mut inst.kind {
            InstKind::Iconst { imm, .. } if (*imm as u64) >> 48 == 0x5a5a => Some(imm),
            _ => None,
        })
        .expect("a canary fill constant");
    *fill ^= 1 << 7;
    for engine in [Engine::Interp, Engine::Jit] {
        let e = check(&case, engine).expect_err("a wrong canary must be caught");
        assert!(e.contains("output"), "{engine:?}: {e}");
    }
}

/// The adstack part's observations (top, top_adj, len) are printed and
/// compared with the model's: a pushed value that differs from the
/// model's is a finding on both engines.
#[test]
fn a_wrong_adstack_value_is_a_finding() {
    use guardlift_fuzz::guards::AdOp;
    let mut inp = input(true, false);
    inp.elem = 2; // i64 elements: the pushed value is an iconst
    inp.cap = 3;
    inp.ops = vec![AdOp::Push(0x1234_5678), AdOp::Top, AdOp::Len];
    let case = build(&inp);
    for engine in [Engine::Interp, Engine::Jit] {
        check(&case, engine).unwrap_or_else(|e| panic!("{engine:?}: {e}"));
    }
    let mut case = case;
    let pushed = case.module.functions[0]
        .blocks
        .iter_mut()
        .flat_map(|b| b.insts.iter_mut())
        .find_map(|inst| match &mut inst.kind {
            InstKind::Iconst { imm, .. } if *imm == 0x1234_5678 => Some(imm),
            _ => None,
        })
        .expect("the pushed constant");
    *pushed += 1;
    for engine in [Engine::Interp, Engine::Jit] {
        let e = check(&case, engine).expect_err("a wrong top must be caught");
        assert!(e.contains("output"), "{engine:?}: {e}");
    }
}

/// The trust shapes of issue 28 on one fixed input (every layout, hand
/// guards and the pass, both optimization levels, both engines): a forged
/// capacity word is read back raw but the attribute ops past the recorded
/// capacity are still `attr_out_of_bounds` (capacity 2); after
/// `obj_dictify` the kept values pointer is a use of the released array
/// (also a forging store through it) while the attribute ops go to the
/// dict (any index a key); raw accesses touching each redzone are
/// `heap_overflow`.
#[test]
fn forged_capacities_dictified_arrays_and_redzones_fire_as_modelled() {
    use LifeOp::*;
    let ops = vec![
        ForgeCapacity(0, 5), // capacity word 2 + 2 + 5, read back
        StoreAttr(0, 3),     // attr_out_of_bounds (index 3, recorded 2)
        LoadAttr(0, 2),      // attr_out_of_bounds
        StoreAttr(1, 0),
        Dictify(1),              // the values array released
        RawLoad(1, 0),           // use_after_free (raw)
        RawStore(1, 1),          // use_after_free (raw)
        ForgeCapacity(1, 0),     // use_after_free (raw, the header)
        StoreAttr(1, 3),         // the dict: index 3 is a key
        LoadAttr(1, 3),          // reads it back
        LoadAttr(1, 0),          // the attribute kept by dictify
        SlotLoad(1),             // a dict word: low bits 0
        Redzone(2, 0, 2, true),  // past the values array, 8 bytes
        Redzone(2, 1, 0, false), // the end of its redzone, 1 byte
        Redzone(2, 2, 1, true),  // before the capacity word, 4 bytes
        Redzone(2, 3, 2, false), // the start of the redzone before
        Redzone(2, 4, 1, false), // past the object's block
        Redzone(2, 5, 2, true),  // before it
        Redzone(1, 0, 2, false), // dictified: the object's block instead
        Free(2),
        Redzone(2, 0, 2, false), // freed: not emitted
    ];
    let want: BTreeSet<&str> = ["use_after_free", "attr_out_of_bounds", "heap_overflow"].into();
    for layout in 0..6 {
        for instrument in [false, true] {
            for opt_none in [false, true] {
                let mut inp = input(instrument, opt_none);
                inp.layout = layout;
                inp.life_ops = ops.clone();
                let case = build(&inp);
                assert_eq!(case.expected_kinds(), want);
                for engine in [Engine::Interp, Engine::Jit] {
                    if let Err(e) = check(&case, engine) {
                        panic!(
                            "layout {layout}, instrument {instrument}, opt_none {opt_none}: {e}"
                        );
                    }
                }
            }
        }
    }
}
