//! Type inference of the results that depend on an operand (`iadd`,
//! `select`, `adstack.top`, ...), walking the blocks in reverse postorder
//! of the CFG ([`crate::analysis::dominator_tree::reverse_postorder`]).

use super::*;

/// Block order for type inference: reverse postorder of the CFG from the
/// entry, then unreachable blocks in layout order.
fn inference_order(func: &Function) -> Vec<usize> {
    let cfg = ControlFlowGraph::with_function(func);
    let rpo = reverse_postorder(&cfg);
    let mut seen = vec![false; func.blocks.len()];
    for b in &rpo {
        seen[b.index()] = true;
    }
    let unreachable = (0..func.blocks.len()).filter(|&b| !seen[b]);
    rpo.iter().map(|b| b.index()).chain(unreachable).collect()
}

/// The operand whose type gives `kind`'s result type, for the forms whose
/// result type depends on an operand.
pub(super) fn type_source(kind: &InstKind) -> Option<Value> {
    match kind {
        InstKind::Binary { a, .. } | InstKind::Unary { a, .. } | InstKind::Select { a, .. } => {
            Some(*a)
        }
        InstKind::AdTop { stack } | InstKind::AdTopAdj { stack } => Some(*stack),
        _ => None,
    }
}

/// `kind`'s result type when its [`type_source`] operand has type `st`:
/// `None` when `st` gives none (an `adstack.top` of a value that is no
/// adstack handle).
pub(super) fn derived_type(kind: &InstKind, st: Type) -> Option<Type> {
    match kind {
        InstKind::AdTop { .. } | InstKind::AdTopAdj { .. } => st.adstack_elem().map(Type::of_elem),
        InstKind::Binary { op, .. } if op.is_overflow_test() => Some(Type::I8),
        _ => Some(st),
    }
}

/// Fills in the result types that depend on an operand, in reverse postorder.
pub(super) fn infer_types(func: &Function, known: &mut [Option<Type>]) -> PResult<()> {
    let name = |v: Value| func.values.get(v.index()).map_or("?", |d| d.name.as_str());
    for b in inference_order(func) {
        let Some(block) = func.blocks.get(b) else {
            continue;
        };
        for inst in &block.insts {
            let Some(r) = inst.result else { continue };
            if known.get(r.index()).copied().flatten().is_some() {
                continue;
            }
            let Some(src) = type_source(&inst.kind) else {
                return err(
                    inst.loc,
                    format!("cannot determine the type of %{}", name(r)),
                );
            };
            let Some(st) = known.get(src.index()).copied().flatten() else {
                return err(
                    inst.loc,
                    format!(
                        "cannot determine the type of %{}: operand %{} is not defined before use",
                        name(r),
                        name(src)
                    ),
                );
            };
            let Some(t) = derived_type(&inst.kind, st) else {
                return err(
                    inst.loc,
                    format!(
                        "cannot determine the type of %{}: operand %{} is {st}, not an adstack handle",
                        name(r),
                        name(src)
                    ),
                );
            };
            if let Some(k) = known.get_mut(r.index()) {
                *k = Some(t);
            }
        }
    }
    Ok(())
}
