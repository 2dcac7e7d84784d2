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
            let src = match &inst.kind {
                InstKind::Binary { a, .. }
                | InstKind::Unary { a, .. }
                | InstKind::Select { a, .. } => *a,
                InstKind::AdTop { stack } | InstKind::AdTopAdj { stack } => *stack,
                _ => {
                    return err(
                        inst.loc,
                        format!("cannot determine the type of %{}", name(r)),
                    )
                }
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
            let t = match &inst.kind {
                InstKind::AdTop { .. } | InstKind::AdTopAdj { .. } => match st.adstack_elem() {
                    Some(e) => Type::of_elem(e),
                    None => {
                        return err(
                            inst.loc,
                            format!(
                                "cannot determine the type of %{}: operand %{} is {st}, not an adstack handle",
                                name(r),
                                name(src)
                            ),
                        )
                    }
                },
                InstKind::Binary { op, .. } if op.is_overflow_test() => Type::I8,
                _ => st,
            };
            if let Some(k) = known.get_mut(r.index()) {
                *k = Some(t);
            }
        }
    }
    Ok(())
}
