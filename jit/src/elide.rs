//! Adstack underflow checks that cannot fail, found before lowering
//! (bounds-check elimination, as compilers do for array indices).
//!
//! A guarded `adstack.top`, `top_adj`, `acc_adj` or `pop` checks that the
//! count is at least 1. When the code already established that — typically
//! a reverse-mode loop that tests `adstack.len` before it pops — the check
//! can never fire, in any mode, and the lowering emits none. The site stays
//! in the module (it prints, and the interpreter checks it; its verdict is
//! always "ok"), so results and reports are unchanged.
//!
//! The analysis is deliberately small and conservative. It tracks a lower
//! bound of the count of each handle value through one block and along an
//! edge into a block that has no other predecessor:
//! - a branch on `icmp` of `%n = adstack.len %h` against a constant bounds
//!   `%h` on each edge (and a block param receiving `%h` inherits it);
//! - `push` raises the bound of its handle (to at most the capacity: a
//!   recovered overflow leaves the count at the capacity);
//! - `pop` lowers the bound of *every* handle by one (two handle values may
//!   name one buffer), whether or not its own check was elided;
//! - nothing else changes a count: handles cannot be passed to calls (the
//!   verifier rejects it; a call passing one would still forget every
//!   bound), and raw memory ops cannot reach an adstack, whose buffer is a
//!   frame slot that only adstack ops address.
//!
//! Overflow checks are never elided (that needs an upper bound).

use guardlift_ir::{Block, Function, InstKind, IntCC, Value, ValueDef};
use std::collections::{HashMap, HashSet};

/// (block index, instruction index) of every guarded underflow check that
/// cannot fail. `rpo`: the reachable blocks in reverse postorder;
/// `caps`: the capacity behind each handle value.
pub fn redundant_underflow_checks(
    f: &Function,
    rpo: &[u32],
    caps: &HashMap<Value, u32>,
) -> HashSet<(u32, u32)> {
    let mut out = HashSet::new();
    // Incoming edges from reachable blocks (the entry also has the call).
    let mut preds: HashMap<u32, usize> = HashMap::new();
    preds.insert(0, 1);
    for &bi in rpo {
        if let Some(t) = f.blocks[bi as usize].insts.last() {
            for dest in t.kind.successors() {
                *preds.entry(dest.block.0).or_default() += 1;
            }
        }
    }
    let single_pred = |b: Block| preds.get(&b.0) == Some(&1);
    let mut incoming: HashMap<u32, HashMap<Value, u64>> = HashMap::new();
    for &bi in rpo {
        let mut lb = incoming.remove(&bi).unwrap_or_default();
        // %n -> %h for `%n = adstack.len %h` while the count is unchanged.
        let mut lens: HashMap<Value, Value> = HashMap::new();
        // %c -> (%n, cc, k) for `%c = icmp cc %n, k` (normalized: %n on the left).
        let mut conds: HashMap<Value, (Value, IntCC, i64)> = HashMap::new();
        for (ii, inst) in f.blocks[bi as usize].insts.iter().enumerate() {
            use InstKind::*;
            match &inst.kind {
                AdTop { stack } | AdTopAdj { stack } | AdAccAdj { stack, .. }
                    if inst.site.is_some() && lb.get(stack).is_some_and(|&n| n >= 1) =>
                {
                    out.insert((bi, ii as u32));
                }
                AdPop { stack } => {
                    if inst.site.is_some() && lb.get(stack).is_some_and(|&n| n >= 1) {
                        out.insert((bi, ii as u32));
                    }
                    lb.values_mut().for_each(|n| *n = n.saturating_sub(1));
                    lens.clear();
                }
                AdPush { stack, .. } => {
                    let cap = caps.get(stack).copied().unwrap_or(0) as u64;
                    let n = lb.entry(*stack).or_insert(0);
                    *n = (*n + 1).min(cap);
                    lens.clear();
                }
                AdLen { stack } => {
                    if let Some(r) = inst.result {
                        lens.insert(r, *stack);
                    }
                }
                Icmp { cc, a, b } => {
                    if let Some(r) = inst.result {
                        if let (true, Some(k)) = (lens.contains_key(a), iconst(f, *b)) {
                            conds.insert(r, (*a, *cc, k));
                        } else if let (true, Some(k)) = (lens.contains_key(b), iconst(f, *a)) {
                            conds.insert(r, (*b, swap(*cc), k));
                        }
                    }
                }
                Call { args, .. } if args.iter().any(|&a| f.ty(a).is_adstack()) => {
                    lb.clear();
                    lens.clear();
                }
                Jump { dest } if single_pred(dest.block) => {
                    incoming.insert(dest.block.0, along(f, &lb, None, &dest.args, dest.block));
                }
                Brif {
                    cond,
                    then_dest,
                    else_dest,
                } => {
                    // The bound a taken edge implies, if the count is still %n's.
                    let fact = conds.get(cond).and_then(|&(n, cc, k)| {
                        let h = *lens.get(&n)?;
                        Some((h, implied(cc, k, true), implied(cc, k, false)))
                    });
                    for (dest, taken) in [(then_dest, true), (else_dest, false)] {
                        if !single_pred(dest.block) {
                            continue;
                        }
                        let extra = fact.and_then(|(h, t, e)| {
                            let cap = caps.get(&h).copied().unwrap_or(0) as u64;
                            Some((h, (if taken { t } else { e })?.min(cap)))
                        });
                        incoming.insert(dest.block.0, along(f, &lb, extra, &dest.args, dest.block));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The bounds entering `target` along an edge: what holds now, plus `extra`,
/// with each block param receiving a handle inheriting its bound.
fn along(
    f: &Function,
    lb: &HashMap<Value, u64>,
    extra: Option<(Value, u64)>,
    args: &[Value],
    target: Block,
) -> HashMap<Value, u64> {
    let mut m = lb.clone();
    if let Some((h, n)) = extra {
        let e = m.entry(h).or_insert(0);
        *e = (*e).max(n);
    }
    for (a, p) in args.iter().zip(&f.block(target).params) {
        if let Some(&n) = m.get(a) {
            m.insert(*p, n);
        }
    }
    m
}

/// The value of `v` if an `iconst` defines it.
fn iconst(f: &Function, v: Value) -> Option<i64> {
    match f.value(v).def {
        ValueDef::Inst(b, i) => match f.blocks.get(b.0 as usize)?.insts.get(i as usize)?.kind {
            InstKind::Iconst { imm, .. } => Some(imm),
            _ => None,
        },
        _ => None,
    }
}

/// `k cc n` rewritten as `n cc' k`.
fn swap(cc: IntCC) -> IntCC {
    use IntCC::*;
    match cc {
        Eq | Ne => cc,
        Slt => Sgt,
        Sle => Sge,
        Sgt => Slt,
        Sge => Sle,
        Ult => Ugt,
        Ule => Uge,
        Ugt => Ult,
        Uge => Ule,
    }
}

/// A lower bound of the count `n` when `n cc k` is `holds`. (A count is
/// below 2^63, so signed and unsigned comparisons agree on it.)
fn implied(cc: IntCC, k: i64, holds: bool) -> Option<u64> {
    use IntCC::*;
    let at_least = |m: i64| u64::try_from(m).ok();
    match (cc, holds) {
        (Eq, true) | (Ne, false) => at_least(k),
        (Ne, true) | (Eq, false) if k == 0 => Some(1),
        (Sgt | Ugt, true) | (Sle | Ule, false) => at_least(k.checked_add(1)?),
        (Sge | Uge, true) | (Slt | Ult, false) => at_least(k),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elided(text: &str, func: usize) -> Vec<(u32, u32)> {
        let m = guardlift_ir::parse_and_verify(text).expect("valid");
        let m = guardlift_instrument::instrument(&m, guardlift_instrument::CheckSet::ALL);
        let f = &m.functions[func];
        let caps = guardlift_ir::analysis::adstack_capacities(f).expect("caps");
        let rpo: Vec<u32> = (0..f.blocks.len() as u32).collect();
        let mut v: Vec<_> = redundant_underflow_checks(f, &rpo, &caps)
            .into_iter()
            .collect();
        v.sort();
        v
    }

    #[test]
    fn len_test_before_pop_elides_the_block_s_checks() {
        let v = elided(
            "fn @f(%x: f64) -> f64 {
entry:
    %s = adstack.alloc.f64 4
    adstack.push %s, %x
    jump rev(%s)
rev(%t: adstack.f64):
    %n = adstack.len %t
    %z = iconst.i64 0
    %e = icmp.eq %n, %z
    brif %e, out, pop(%t)
pop(%u: adstack.f64):
    %v = adstack.top %u
    adstack.acc_adj %u, %v
    adstack.pop %u
    %w = adstack.top %u
    jump out
out:
    %r = fconst.f64 0.0
    return %r
}",
            0,
        );
        // top, acc_adj and pop of `pop` (block 2), not the top after the pop.
        assert_eq!(v, vec![(2, 0), (2, 1), (2, 2)]);
    }

    #[test]
    fn push_bounds_stop_at_capacity() {
        let v = elided(
            "fn @f(%x: f64) -> f64 {
entry:
    %s = adstack.alloc.f64 1
    adstack.push %s, %x
    adstack.push %s, %x
    %a = adstack.top %s
    adstack.pop %s
    %b = adstack.top %s
    return %a
}",
            0,
        );
        // The top after the pushes is safe, and so is the pop; the top after
        // the pop is not: with capacity 1 the second push overflows (in
        // recover mode the count stays 1), so one pop may empty the stack.
        assert_eq!(v, vec![(0, 3), (0, 4)]);
    }

    #[test]
    fn comparisons_imply_count_bounds() {
        assert_eq!(implied(IntCC::Sgt, 0, true), Some(1));
        assert_eq!(implied(IntCC::Sgt, -5, true), None);
        assert_eq!(implied(IntCC::Ult, 3, false), Some(3));
        assert_eq!(implied(IntCC::Eq, 0, false), Some(1));
        assert_eq!(implied(IntCC::Eq, 2, false), None);
        assert_eq!(implied(IntCC::Ne, 0, true), Some(1));
    }
}
