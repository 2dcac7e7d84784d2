//! Which op families a generated function contains: read off its IR, plus
//! the generator's own events for what opcodes do not show (loop shapes,
//! injected faults, handles passed through block params, ...).

use crate::gen::Generated;
use guardlift_ir::hoist::{clean_loops, leaf_object_params};
use guardlift_ir::{BinOp, Callee, ConvOp, Function, InstKind, Module, Type, UnOp};
use std::collections::BTreeSet;

/// Every family the generator must produce (the coverage test asserts each
/// appears in at least 1 % of generated functions).
pub const FAMILIES: &[&str] = &[
    "int.arith",
    "int.shift",
    "int.icmp",
    "float.arith",
    "float.minmax",
    "float.unary",
    "float.fcmp",
    "int.divrem",
    "int.overflows",
    "int.bitcount",
    "float.round",
    "select",
    "const.int",
    "const.float",
    "conv.int",
    "conv.float",
    "conv.bitcast",
    "mem.load",
    "mem.store",
    "mem.dynamic_address",
    "mem.object_body",
    "call.function",
    "call.object_arg",
    "call.math",
    "call.print",
    "call.slow_path",
    "ctl.brif",
    "ctl.if",
    "ctl.while",
    "ctl.do_while",
    "ctl.dynamic_trip_count",
    "ctl.block_params",
    "loop.clean",
    "loop.clean_leaf_call",
    "loop.fixed_attrs_leaf_call",
    "loop.fixed_attrs_no_call",
    "loop.clean_leaf_i64_object",
    "loop.fixed_attrs_leaf_i64_object",
    "loop.leaf_arg_in_loop",
    "loop.clean_multi",
    "loop.host_call",
    "loop.cold_host_call",
    "loop.free",
    "loop.side_exit",
    "loop.side_exit_free",
    "call.object_arg_i64",
    "trust.forged_capacity",
    "trust.forged_in_pool",
    "trust.dictify_kept_values",
    "trust.dictify_then_new",
    "trust.dictify_old_word",
    "trust.redzone",
    "trust.block_edge",
    "trust.unaligned_watch",
    "rawgroup.free_between",
    "rawgroup.dictify_between",
    "rawgroup.past_the_end",
    "rawgroup.past_the_end_straddle",
    "rawgroup.released",
    "attrgroup.free_between",
    "attrgroup.dictify_between",
    "attrgroup.word_between",
    "attrgroup.past_capacity",
    "attrgroup.forged_other_between",
    "attrgroup.forged_other_lifetime_sites",
    "attrgroup.interleaved",
    "looprange.clean",
    "looprange.dirty",
    "looprange.shifted",
    "rawloop.clean",
    "rawloop.forged",
    "rawloop.past_the_end",
    "rawloop.list_freed",
    "entrycache.receivers",
    "entrycache.receiver_too_small",
    "entrycache.receiver_dictified",
    "entrycache.receiver_broken_between",
    "entrycache.two_objects",
    "entrycache.uncovered_object",
    "entrycache.exit_read",
    "entrycache.exit_read_past",
    "entrycache.exit_step",
    "entry.param_slot",
    "entry.vouch_then_free",
    "entry.vouch_param_redefined",
    "entry.own_too_small",
    "entry.own_word_written",
    "jit.cut_in_pieces",
    "obj.new",
    "obj.free",
    "obj.dictify",
    "obj.attr_after_dictify",
    "obj.load_attr",
    "obj.store_attr",
    "obj.dict_slot.load",
    "obj.dict_slot.store",
    "obj.dict_slot.store_zero",
    "obj.dict_cleared_store",
    "obj.watch",
    "adstack.alloc",
    "adstack.push",
    "adstack.pop",
    "adstack.top",
    "adstack.top_adj",
    "adstack.acc_adj",
    "adstack.len",
    "adstack.tape_push",
    "adstack.tape_pop",
    "adstack.tape_counter_le",
    "adstack.handle_param",
    "adstack.realloc_loop",
    "guard.hand_written",
    "fault.clear_lsb",
    "fault.raw_slot_store",
    "fault.bad_dict_store",
    "fault.adstack_overflow",
    "fault.adstack_underflow",
    "fault.use_after_free",
    "fault.use_after_free_raw",
    "fault.double_free",
    "fault.invalid_free",
    "fault.attr_out_of_bounds",
    "ctl.br_table",
    "ctl.br_table_empty",
    "ctl.br_table_wide_index",
    "loop.clean_br_table",
    "mem.stack_alloc",
    "mem.stack_area",
    "mem.stack_pad",
    "call.func_addr",
    "call.indirect",
    "call.indirect_function",
    "call.indirect_builtin",
    "call.indirect_via_memory",
];

/// The families of one function of `m` (IR only).
pub fn ir_families(m: &Module, f: &Function) -> BTreeSet<&'static str> {
    let mut s = BTreeSet::new();
    // Cut into pieces at the smallest size `differential` picks
    // (`targets::pick_pieces`): the JIT then compiles it as several
    // functions joined by tail calls.
    if guardlift_jit::pieces::piece_count(f, crate::targets::PIECES_MIN) > 1 {
        s.insert("jit.cut_in_pieces");
    }
    // Loops the JIT versions (`guardlift_ir::hoist`), those of them that
    // call leaf functions (run as clean variants), and those whose bounds
    // tests the JIT makes once per entry (fixed attributes and a call).
    let loops = clean_loops(m, f);
    if loops.len() >= 2 {
        s.insert("loop.clean_multi");
    }
    for lp in loops {
        s.insert("loop.clean");
        let switches = lp.blocks.iter().any(|&b| {
            (f.blocks[b as usize].insts.last())
                .is_some_and(|i| matches!(i.kind, InstKind::BrTable { .. }))
        });
        if switches {
            s.insert("loop.clean_br_table");
        }
        // A side exit: the clean copy leaves for the checked one at a
        // cold block (issue 33).
        if !lp.cold.is_empty() {
            s.insert("loop.side_exit");
        }
        // The clean copy's calls (leaf functions): its hot blocks'.
        let calls = lp.hot.iter().any(|&b| {
            (f.blocks[b as usize].insts.iter()).any(|i| matches!(i.kind, InstKind::Call { .. }))
        });
        // Fixed attributes used by the loop's own attribute ops, no call
        // (issue 33: the JIT's clean copy drops their bounds tests, the
        // entry testing them once).
        let own_attr_op = lp.hot.iter().any(|&b| {
            (f.blocks[b as usize].insts.iter()).any(|i| match i.kind {
                InstKind::LoadAttr { obj, .. } | InstKind::StoreAttr { obj, .. } => {
                    lp.attrs.iter().any(|&(o, _)| o == obj)
                }
                _ => false,
            })
        });
        if !calls && own_attr_op {
            s.insert("loop.fixed_attrs_no_call");
        }
        if calls {
            s.insert("loop.clean_leaf_call");
            if !lp.attrs.is_empty() {
                s.insert("loop.fixed_attrs_leaf_call");
            }
            // A leaf callee whose object param is typed `i64` (issue 28
            // item 4: as much an object as a `ptr` one).
            if calls_leaf_with_i64_object(m, f, &lp.hot) {
                s.insert("loop.clean_leaf_i64_object");
                if !lp.attrs.is_empty() {
                    s.insert("loop.fixed_attrs_leaf_i64_object");
                }
            }
        }
    }
    for b in &f.blocks {
        if !b.params.is_empty() {
            s.insert("ctl.block_params");
        }
        for inst in &b.insts {
            if inst.site.is_some() {
                s.insert("guard.hand_written");
            }
            let fam = match &inst.kind {
                InstKind::Iconst { .. } => "const.int",
                InstKind::Fconst { .. } => "const.float",
                InstKind::Binary { op, .. } => match op {
                    o if o.is_division() => "int.divrem",
                    o if o.is_overflow_test() => "int.overflows",
                    BinOp::Fcopysign => "float.round",
                    BinOp::Ishl | BinOp::Ushr | BinOp::Sshr => "int.shift",
                    BinOp::Fmin | BinOp::Fmax => "float.minmax",
                    o if o.is_float() => "float.arith",
                    _ => "int.arith",
                },
                InstKind::Unary { op, .. } if op.is_int() => "int.bitcount",
                InstKind::Unary {
                    op: UnOp::Ffloor | UnOp::Fceil | UnOp::Ftrunc | UnOp::Fnearest,
                    ..
                } => "float.round",
                InstKind::Unary { .. } => "float.unary",
                InstKind::Icmp { .. } => "int.icmp",
                InstKind::Fcmp { .. } => "float.fcmp",
                InstKind::Select { .. } => "select",
                InstKind::Conv { op, .. } => match op {
                    ConvOp::Sext | ConvOp::Uext | ConvOp::Ireduce => "conv.int",
                    ConvOp::Bitcast => "conv.bitcast",
                    _ => "conv.float",
                },
                InstKind::Load { .. } => "mem.load",
                InstKind::Store { .. } => "mem.store",
                InstKind::Call { callee, .. } => match callee {
                    Callee::Func(_) => "call.function",
                    Callee::Extern(e) => match m.ext(*e).name.as_str() {
                        "obj_new" => "obj.new",
                        "obj_dictify" => "obj.dictify",
                        "obj_free" => "obj.free",
                        "fault_clear_lsb" => "fault.clear_lsb",
                        "print_i64" | "print_f64" => "call.print",
                        "load_attr_slow" | "store_attr_slow" => "call.slow_path",
                        _ => "call.math",
                    },
                },
                InstKind::StackAlloc { .. } => "mem.stack_alloc",
                InstKind::FuncAddr { .. } => "call.func_addr",
                InstKind::CallIndirect { .. } => "call.indirect",
                InstKind::Jump { .. } | InstKind::Return { .. } => continue,
                InstKind::Brif { .. } => "ctl.brif",
                InstKind::BrTable { .. } => "ctl.br_table",
                InstKind::DictSlotLoad { .. } => "obj.dict_slot.load",
                InstKind::DictSlotStore { .. } => "obj.dict_slot.store",
                InstKind::LoadAttr { .. } => "obj.load_attr",
                InstKind::StoreAttr { .. } => "obj.store_attr",
                InstKind::AdAlloc { .. } => "adstack.alloc",
                InstKind::AdPush { .. } => "adstack.push",
                InstKind::AdPop { .. } => "adstack.pop",
                InstKind::AdTop { .. } => "adstack.top",
                InstKind::AdTopAdj { .. } => "adstack.top_adj",
                InstKind::AdAccAdj { .. } => "adstack.acc_adj",
                InstKind::AdLen { .. } => "adstack.len",
                InstKind::Watch { .. } => "obj.watch",
            };
            s.insert(fam);
        }
    }
    s
}

/// Does a block of `blocks` call a leaf object function with an object
/// param typed `i64`?
fn calls_leaf_with_i64_object(m: &Module, f: &Function, blocks: &[u32]) -> bool {
    blocks
        .iter()
        .flat_map(|&b| &f.blocks[b as usize].insts)
        .any(|i| match &i.kind {
            InstKind::Call {
                callee: Callee::Func(g),
                ..
            } => {
                let g = m.func(*g);
                leaf_object_params(g)
                    .is_some_and(|ps| ps.iter().any(|&p| g.ty(g.params[p]) == Type::I64))
            }
            _ => false,
        })
}

/// The families of every function of a generated module (module order).
pub fn families(g: &Generated) -> Vec<BTreeSet<&'static str>> {
    g.module
        .functions
        .iter()
        .zip(&g.events)
        .map(|(f, ev)| {
            let mut s = ir_families(&g.module, f);
            s.extend(ev.iter().copied());
            s
        })
        .collect()
}
