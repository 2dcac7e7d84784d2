//! Which compiled functions safe Rust may call: the static proof behind
//! [`crate::CompiledModule::safe_func`] and
//! [`crate::CompiledModule::safe_call_dynamic`].
//!
//! A function is *memory-safe* when neither it nor any IR function it calls
//! (transitively) can touch memory it was not given by the runtime:
//! - no raw `load` / `store`: they access any address the code computes;
//! - no object-model op (`dict_slot.*`, `load_attr`, `store_attr`): they
//!   dereference an object pointer, and a `ptr` argument (or an `i64` used
//!   as one) can be any address (`guard.watch` only hands the address to
//!   the runtime, which records it);
//! - every adstack op that reads or writes an entry (`push`, `pop`, `top`,
//!   `top_adj`, `acc_adj`) carries the `adstack` check: unchecked, a
//!   capacity violation writes outside the buffer (spec §5). A check the
//!   instrument pass elided as unable to fail does not count; the proof is
//!   kept simple rather than clever;
//! - no `call_indirect`: it runs whatever code the pointer names;
//! - every extern it calls is a built-in: the built-ins check their object
//!   arguments against the model heap and report a `host_fault` instead of
//!   following a bad pointer. A host symbol ([`crate::CompileOptions::symbol`])
//!   can do anything.
//!
//! The proof is conservative (a function it rejects may well be sound); the
//! `unsafe` entry points remain for everything else.

use guardlift_ir::{Callee, CheckKind, FuncId, Function, Inst, InstKind, Module};
use guardlift_runtime::abi;

/// For each function of `m` (module order): `None` when it is memory-safe,
/// or why not, as `LINE:COL: reason` of the first offending instruction
/// (in the function itself or, through `calls @g`, in a callee).
pub(crate) fn unsafety(m: &Module) -> Vec<Option<String>> {
    // One pass over each function's instructions: its own reason, and,
    // while it has none, its IR calls in order (the rounds below go over
    // these, not over every instruction again).
    let mut calls: Vec<Vec<(&Inst, FuncId)>> = vec![Vec::new(); m.functions.len()];
    let mut why: Vec<Option<String>> = (m.functions.iter().zip(&mut calls))
        .map(|(f, calls)| {
            insts(f).find_map(|inst| {
                if let InstKind::Call {
                    callee: Callee::Func(g),
                    ..
                } = inst.kind
                {
                    calls.push((inst, g));
                }
                direct(m, inst)
            })
        })
        .collect();
    // Propagate through IR calls until nothing changes (each round marks at
    // least one more function, or stops).
    loop {
        let mut changed = false;
        for (i, calls) in calls.iter().enumerate() {
            if why[i].is_some() {
                continue;
            }
            let bad_callee = (calls.iter())
                .find_map(|&(inst, g)| why[g.0 as usize].as_ref().map(|r| (inst, g, r.clone())));
            if let Some((inst, g, reason)) = bad_callee {
                why[i] = Some(format!(
                    "{}: calls @{}, which is not memory-safe ({reason})",
                    inst.loc,
                    m.func(g).name
                ));
                changed = true;
            }
        }
        if !changed {
            return why;
        }
    }
}

fn insts(f: &Function) -> impl Iterator<Item = &Inst> {
    f.blocks.iter().flat_map(|b| b.insts.iter())
}

/// Why `inst`, one of a function's own instructions, is not memory-safe,
/// if it is not.
fn direct(m: &Module, inst: &Inst) -> Option<String> {
    let why = match &inst.kind {
        InstKind::Load { .. } | InstKind::Store { .. } => "accesses a computed address",
        InstKind::CallIndirect { .. } => "calls through a pointer",
        InstKind::DictSlotLoad { .. }
        | InstKind::DictSlotStore { .. }
        | InstKind::LoadAttr { .. }
        | InstKind::StoreAttr { .. } => "dereferences an object pointer",
        InstKind::AdPush { .. }
        | InstKind::AdPop { .. }
        | InstKind::AdTop { .. }
        | InstKind::AdTopAdj { .. }
        | InstKind::AdAccAdj { .. }
            if !adstack_checked(m, inst) =>
        {
            "has no `adstack` check"
        }
        InstKind::Call {
            callee: Callee::Extern(e),
            ..
        } if abi::builtin(&m.ext(*e).name).is_none() => {
            return Some(format!(
                "{}: calls host function @{}",
                inst.loc,
                m.ext(*e).name
            ))
        }
        _ => return None,
    };
    Some(format!("{}: `{}` {why}", inst.loc, inst.kind.opcode()))
}

fn adstack_checked(m: &Module, inst: &Inst) -> bool {
    inst.site
        .and_then(|s| m.site(s))
        .is_some_and(|s| s.checks.contains(CheckKind::Adstack))
}
