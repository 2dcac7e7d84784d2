//! Unit tests of loop versioning: which loops get copies, what each copy
//! drops, and what the clean copy's CLIF looks like.

use super::super::{Calls, LowerConfig, Names, RtRef, ShadowRef};
use super::*;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::isa::CallConv;
use guardlift_instrument::{instrument, CheckSet};
use guardlift_runtime::Mode;

/// A shadow that tests watches, as the JIT's.
pub(in crate::lower) const WATCHING: ShadowRef = ShadowRef {
    base: 1 << 40,
    watch_id: Some(1),
    own_values: true,
};

/// The JIT's lowering in `mode` (far calls) with `shadow`.
fn config(mode: Mode, shadow: Option<ShadowRef>) -> LowerConfig {
    LowerConfig {
        rt: RtRef::Const(0),
        mode,
        site_base: 0,
        calls: Calls::Far,
        names: Names::Anonymous,
        shadow,
        host: Default::default(),
    }
}

/// The clean variant of each function of `text` (instrumented with
/// `checks`) as the JIT with a shadow plans it, by name.
fn plan(text: &str, checks: CheckSet) -> Vec<(String, Option<VariantDrops>)> {
    let m = instrument(
        &guardlift_ir::parse_and_verify(text).expect("valid"),
        checks,
    );
    let cfg = config(Mode::Abort, Some(WATCHING));
    let mut lw = Lowerer::new(&m, &cfg, CallConv::SystemV, Vec::new(), Vec::new());
    lw.plan_clean_variants();
    (m.functions.iter().enumerate())
        .map(|(i, f)| (f.name.clone(), lw.variant_drops(FuncId(i as u32)).cloned()))
        .collect()
}

const LEAVES: &str =
    "fn @enter(%cm: ptr, %d: i64) {\nentry:\n    store_attr %cm, 0, %d\n    return\n}\n\
    fn @exit(%cm: ptr) -> i64 {\nentry:\n    %d = load_attr %cm, 1\n    return %d\n}\n";

/// `@main`'s loop, with `extra` in its body.
fn caller(name: &str, extra: &str) -> String {
    format!(
        "fn @{name}(%a: ptr, %b: ptr, %n: i64) -> i64 {{\nentry:\n    %z = iconst.i64 0\n    jump loop(%z)\n\
         loop(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, exit, body\n\
         body:\n    call @enter(%a, %i)\n    %x = call @exit(%b)\n{extra}    %one = iconst.i64 1\n    %i2 = iadd %i, %one\n    jump loop(%i2)\n\
         exit:\n    return %n\n}}\n"
    )
}

/// `@f` of `ir/tests/hoist/NAME.glir` with every check, lowered for a
/// JIT with `shadow` (recover mode, the built-ins bound), verified by
/// Cranelift.
fn lower_hoist_case(name: &str, shadow: Option<ShadowRef>) -> cranelift_codegen::ir::Function {
    let path = format!(
        "{}/../ir/tests/hoist/{name}.glir",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("the hoist case");
    lower_first(&text, CheckSet::ALL, shadow)
}

/// The first function of `text` with `checks`, lowered for a JIT with
/// `shadow` (recover mode, the built-ins bound), verified by Cranelift.
pub(in crate::lower) fn lower_first(
    text: &str,
    checks: CheckSet,
    shadow: Option<ShadowRef>,
) -> cranelift_codegen::ir::Function {
    use cranelift_codegen::ir::{Function, UserFuncName};
    use cranelift_frontend::FunctionBuilderContext;
    use cranelift_module::{Linkage, Module};
    let m = instrument(
        &guardlift_ir::parse_and_verify(text).expect("valid"),
        checks,
    );
    let mut om = crate::target::test_object_module();
    let sig = lower_sig(&m, &om);
    let id = (om.declare_function("f", Linkage::Export, &sig)).expect("declare");
    let cfg = config(Mode::Recover, shadow);
    let externs = super::super::abi::resolve_externs(&m, |_| None).expect("built-ins");
    let mut lw = Lowerer::new(&m, &cfg, CallConv::SystemV, vec![id], externs);
    let mut f = Function::new();
    let mut fctx = FunctionBuilderContext::new();
    (lw.lower_function(
        &mut om,
        FuncId(0),
        UserFuncName::default(),
        &mut f,
        &mut fctx,
    ))
    .expect("lowered");
    cranelift_codegen::verify_function(&f, om.isa().flags()).expect("verifies");
    f
}

/// How many instructions of `f` satisfy `pred`.
fn count_insts(
    f: &cranelift_codegen::ir::Function,
    pred: impl Fn(&cranelift_codegen::ir::InstructionData) -> bool,
) -> usize {
    (f.layout.blocks())
        .flat_map(|b| f.layout.block_insts(b))
        .filter(|&i| pred(&f.dfg.insts[i]))
        .count()
}

/// A `br_table` in a versioned loop (it dispatches to the body and
/// exits through its default, `ir/tests/hoist`'s case): lowered in both
/// copies, the exit through a block of its own, and Cranelift's
/// verifier accepts the function.
#[test]
fn a_br_table_in_a_versioned_loop_is_lowered_in_both_copies() {
    use cranelift_codegen::ir::InstructionData;
    let count = |shadow| {
        let f = lower_hoist_case("a_br_table_loop_is_clean", shadow);
        count_insts(&f, |i| matches!(i, InstructionData::BranchTable { .. }))
    };
    assert_eq!(count(None), 1, "one copy without a shadow");
    assert_eq!(count(Some(WATCHING)), 2, "checked and clean copies");
}

/// Issue 33: a loop with a free on a cold branch is versioned (its
/// header lowered in both copies) while the free's block is lowered
/// once, in the checked copy, where the clean copy's side exit goes;
/// Cranelift's verifier accepts the merges (`ir/tests/hoist`'s case).
#[test]
fn a_cold_call_is_lowered_once_and_the_loop_twice() {
    use cranelift_codegen::ir::{InstructionData, Opcode};
    let count = |shadow| {
        let f = lower_hoist_case("a_cold_call_is_a_side_exit", shadow);
        let headers = count_insts(&f, |i| {
            matches!(i, InstructionData::IntCompare { cond, .. }
                if *cond == IntCC::SignedGreaterThanOrEqual)
        });
        // The cold block's own `imul` (a square: the entry test's
        // memo probe multiplies by a constant).
        let colds = count_insts(&f, |i| {
            matches!(i, InstructionData::Binary { opcode: Opcode::Imul, args }
                if args[0] == args[1])
        });
        (headers, colds)
    };
    assert_eq!(count(None), (1, 1), "one copy without a shadow");
    assert_eq!(
        count(Some(WATCHING)),
        (2, 1),
        "checked and clean copies of the header, the cold block once"
    );
}

/// Issue 33: a loop without calls whose own attribute ops have bounds
/// or dict tests on fixed attributes is versioned for them (the store
/// loop: the entry's inline cache of `gl_attr_fixed` is a data object,
/// read through `symbol_value`), with or without a watch to drop; a
/// loop with nothing to drop (`--checks lifetime`) is not.
#[test]
fn a_loop_without_calls_tests_its_fixed_attributes_at_the_entry() {
    use cranelift_codegen::ir::{Function, Opcode, UserFuncName};
    use cranelift_frontend::FunctionBuilderContext;
    use cranelift_module::{Linkage, Module};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/programs/attrs_store_loop.glir"
    );
    let text = std::fs::read_to_string(path).expect("the store loop");
    let m0 = guardlift_ir::parse_and_verify(&text).expect("valid");
    let stores = m0.func_by_name("stores").expect("@stores");
    let caches = |checks: &str, shadow: Option<ShadowRef>| {
        let checks = match checks {
            "all" => CheckSet::ALL,
            l => CheckSet::parse(l).expect("checks"),
        };
        let m = instrument(&m0, checks);
        let mut om = crate::target::test_object_module();
        let f0 = &m.functions[stores.0 as usize];
        let sig = super::super::abi::ir_signature(
            om.isa().default_call_conv(),
            &f0.param_types(),
            f0.ret,
        );
        let declare = |f: &guardlift_ir::Function| {
            (om.declare_function(&f.name, Linkage::Local, &sig)).expect("declare")
        };
        let ids: Vec<_> = m.functions.iter().map(declare).collect();
        let cfg = config(Mode::Recover, shadow);
        let mut lw = Lowerer::new(&m, &cfg, CallConv::SystemV, ids, Vec::new());
        lw.plan_clean_variants();
        let mut f = Function::new();
        let mut fctx = FunctionBuilderContext::new();
        let name = UserFuncName::default();
        (lw.lower_function(&mut om, stores, name, &mut f, &mut fctx)).expect("lowered");
        cranelift_codegen::verify_function(&f, om.isa().flags()).expect("verifies");
        (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter(|&i| f.dfg.insts[i].opcode() == Opcode::SymbolValue)
            .count()
    };
    for checks in ["all", "lifetime,bounds", "bounds", "dict,bounds", "dict"] {
        assert_eq!(caches(checks, Some(WATCHING)), 1, "[{checks}]: versioned");
        assert_eq!(caches(checks, None), 0, "[{checks}]: no shadow, one copy");
    }
    assert_eq!(caches("lifetime", Some(WATCHING)), 0, "nothing to drop");
}

/// Issue 33: the clean copy of the method loop's `@accumulate`
/// addresses `self`'s values array from the word its entry tested (a
/// param of the clean header): its three loads and two stores of
/// attributes take that param as their address — no load of the word,
/// no tag test — with every check and with the dict check alone (whose
/// loops are versioned for their fixed attributes since then), and no
/// access does without a shadow (one copy).
#[test]
fn the_clean_copy_addresses_fixed_attributes_from_the_entry_word() {
    use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
    let dict = CheckSet {
        dict: true,
        ..CheckSet::NONE
    };
    let from_param = |checks, shadow| {
        let f =
            super::super::looprange::tests::lowered(("method_loop", "accumulate"), checks, shadow);
        // An attribute's offset from the word: 1 + 8·index.
        let attr = |off: i32| off % 8 == 1;
        let at_param = |i| {
            let (d, addr) = match f.dfg.insts[i] {
                InstructionData::Load { offset, arg, .. } if attr(offset.into()) => {
                    (Opcode::Load, arg)
                }
                InstructionData::Store { offset, args, .. } if attr(offset.into()) => {
                    (Opcode::Store, args[1])
                }
                _ => return None,
            };
            matches!(f.dfg.value_def(addr), ValueDef::Param(..)).then_some(d)
        };
        let ops: Vec<Opcode> = (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter_map(at_param)
            .collect();
        let n = |o| ops.iter().filter(|&&x| x == o).count();
        (n(Opcode::Load), n(Opcode::Store))
    };
    for checks in [CheckSet::ALL, dict] {
        let with = from_param(checks, Some(WATCHING));
        assert_eq!(with, (3, 2), "[{checks:?}] the clean copy's ops");
        let without = from_param(checks, None);
        assert_eq!(without, (0, 0), "[{checks:?}] no clean copy");
    }
}

fn lower_sig(m: &guardlift_ir::Module, om: &cranelift_object::ObjectModule) -> cl::Signature {
    use cranelift_module::Module;
    let f = &m.functions[0];
    super::super::abi::ir_signature(om.isa().default_call_conv(), &f.param_types(), f.ret)
}

#[test]
fn variants_drop_the_bounds_tests_of_fixed_attributes() {
    let text = format!("{LEAVES}{}", caller("main", ""));
    let p = plan(&text, CheckSet::ALL);
    let drops = |n: &str| p.iter().find(|(f, _)| f == n).and_then(|(_, d)| d.clone());
    let enter = drops("enter").expect("@enter has a clean variant");
    assert_eq!(
        (enter.life, enter.watch, enter.bounds),
        (vec![0], vec![0], vec![0])
    );
    assert_eq!(drops("exit").expect("@exit").bounds, vec![0]);
    assert_eq!(drops("main"), None);
    // Without the bounds check there is nothing to drop.
    let p = plan(
        &text,
        CheckSet::parse("dict,lifetime,clobber").expect("checks"),
    );
    let enter = p[0].1.clone().expect("@enter");
    assert_eq!((enter.life, enter.bounds), (vec![0], Vec::<usize>::new()));
}

#[test]
fn one_caller_that_writes_a_word_keeps_every_bounds_test() {
    // A second clean loop calls @enter and rewrites a word: its objects
    // are not fixed, and the one variant of @enter serves both loops.
    let text = format!(
        "{LEAVES}{}{}",
        caller("main", ""),
        caller(
            "other",
            "    %w = iconst.i64 0\n    dict_slot.store %b, %w\n"
        )
    );
    let p = plan(&text, CheckSet::ALL);
    let enter = p[0].1.clone().expect("@enter");
    assert_eq!((enter.life, enter.bounds), (vec![0], Vec::<usize>::new()));
    // @exit is only called by @main's loop... and @other's: neither fixed.
    assert_eq!(p[1].1.clone().expect("@exit").bounds, Vec::<usize>::new());
}

/// Issue 33: where the loop's fixed attributes cover every object whose
/// lifetime test or `guard.watch` the clean copy drops, the dispatch makes
/// the fixed-attributes test alone (`attr_fixed` implies the shadow tests
/// of its objects): the method loop's `@accumulate` (`self` fixed) has no
/// dispatch shadow test — the only code that masks an object with
/// `INDEX_MASK << 3` (`shadow_load_alt`) —, where a loop whose dropped
/// tests concern an object without fixed attributes (`%d`, whose word the
/// loop only reads with `dict_slot.load`) keeps them, one per test.
#[test]
fn a_covered_dispatch_makes_no_shadow_test() {
    use cranelift_codegen::ir::{Function, InstructionData, Opcode};
    let mask =
        (guardlift_runtime::shadow::INDEX_MASK << guardlift_runtime::shadow::GRANULE_SHIFT) as i64;
    let tests = |f: &Function| {
        (f.layout.blocks())
            .flat_map(|b| f.layout.block_insts(b))
            .filter(|&i| {
                let konst = |v| match f.dfg.value_def(v).inst().map(|k| &f.dfg.insts[k]) {
                    Some(InstructionData::UnaryImm { imm, .. }) => Some(imm.bits()),
                    _ => None,
                };
                f.dfg.insts[i].opcode() == Opcode::Band
                    && (f.dfg.inst_args(i).iter()).any(|&a| konst(a) == Some(mask))
            })
            .count()
    };
    let f = super::super::looprange::tests::lowered(
        ("method_loop", "accumulate"),
        CheckSet::ALL,
        Some(WATCHING),
    );
    assert_eq!(tests(&f), 0, "covered: no shadow test\n{}", f.display());
    let text = "fn @f(%p: ptr, %d: ptr, %k: i64) -> i64 {\nentry:\n    %z = iconst.i64 0\n    %one = iconst.i64 1\n    jump loop(%z)\n\
        loop(%i: i64):\n    %c = icmp.sge %i, %k\n    brif %c, out, body\n\
        body:\n    %x = load_attr %p, 0\n    %w = dict_slot.load %d\n    %s = iadd %x, %w\n    store_attr %p, 1, %s\n    %i2 = iadd %i, %one\n    jump loop(%i2)\n\
        out:\n    %r = load_attr %p, 1\n    return %r\n}\n";
    let f = lower_first(text, CheckSet::ALL, Some(WATCHING));
    assert!(
        tests(&f) > 0,
        "not covered: the shadow tests\n{}",
        f.display()
    );
}
