//! Adstack underflow checks that cannot fail: an IR analysis
//! (bounds-check elimination, as compilers do for array indices).
//!
//! A guarded `adstack.top`, `top_adj`, `acc_adj` or `pop` checks that the
//! count is at least 1. When the code already established that — typically
//! a reverse-mode loop that tests `adstack.len` before it pops — the check
//! can never fire, in any mode, and the lowering emits none. The site stays
//! in the module (it prints, and the interpreter checks it; its verdict is
//! always "ok"), so results and reports are unchanged. The interpreter can
//! verify every claim while it runs (`Interpreter::set_verify_elision`).
//!
//! The analysis is a forward dataflow over the CFG whose facts are lower
//! bounds `count(%h) ≥ n` (n ≥ 1) of handle values; "nothing known" is
//! bound 0. Facts meet by intersection (the smaller bound) where edges
//! merge, and the blocks are iterated in reverse postorder to a fixpoint;
//! after the first round a bound that still drops is widened to "nothing
//! known", so each fact of each block changes at most twice.
//!
//! Which handles may name one buffer: a handle value is an `adstack.alloc`
//! result or a block param receiving handles, so the handles connected
//! through branch arguments form one **buffer class** (union–find), and
//! two handles of different classes never name one buffer (buffers are per
//! alloc instruction and per frame; handles never leave their frame). The
//! transfer functions:
//! - `adstack.alloc` resets its buffer (re-executing it in a loop empties
//!   the buffer an older handle may still name), so it forgets every fact
//!   of its class;
//! - `push` raises the bound of its handle (to at most the capacity: a
//!   recovered overflow leaves the count at the capacity);
//! - `pop` lowers the bound of every handle of its class by one, whether
//!   or not its own check was elided;
//! - a branch on `icmp` of `%n = adstack.len %h` against a constant bounds
//!   `%h` on each edge, if no op of `%h`'s class ran between the `len` and
//!   the branch;
//! - an edge binds the target's params in parallel: each gets the fact of
//!   its argument and no older fact of a param survives;
//! - nothing else changes a count: handles cannot be passed to calls (the
//!   verifier rejects it; a call passing one would still forget every
//!   fact), and raw memory ops cannot reach an adstack, whose buffer is a
//!   frame slot that only adstack ops address.
//!
//! At most [`MAX_FACTS`] facts are kept per program point (dropping one is
//! always sound), so hostile input costs time and memory linear in its
//! size per round. Overflow checks are never elided (that needs an upper
//! bound).

use super::dominator_tree::reverse_postorder;
use super::flowgraph::ControlFlowGraph;
use crate::inst::{BlockCall, InstKind, IntCC, Value};
use crate::module::Function;
use cranelift_entity::EntityRef;
use cranelift_entity::SecondaryMap;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most facts kept at one program point.
pub const MAX_FACTS: usize = 256;

/// `count(%h) ≥ n` for each key; every `n` is at least 1.
type Facts = BTreeMap<Value, u64>;

/// (block index, instruction index) of every guarded underflow check that
/// cannot fail. `caps`: the capacity behind each handle value
/// ([`crate::analysis::adstack_capacities`]).
pub fn redundant_underflow_checks(f: &Function, caps: &HashMap<Value, u32>) -> HashSet<(u32, u32)> {
    if f.blocks.is_empty() {
        return HashSet::new();
    }
    let cx = Cx {
        f,
        caps,
        class: buffer_classes(f),
        consts: iconsts(f),
    };
    let rpo = reverse_postorder(&ControlFlowGraph::with_function(f));
    let mut at_entry: Vec<Option<Facts>> = vec![None; f.blocks.len()];
    at_entry[0] = Some(Facts::new());
    let mut first_round = true;
    loop {
        let mut out = HashSet::new();
        let mut changed = false;
        for b in rpo.iter().map(|b| b.0) {
            let Some(facts) = at_entry[b as usize].clone() else {
                continue;
            };
            for (dest, edge) in cx.block(b, facts, &mut out) {
                if let Some(slot) = at_entry.get_mut(dest) {
                    changed |= meet(slot, edge, first_round);
                }
            }
        }
        // A round that changed nothing ran on the fixpoint: its claims hold.
        if !changed {
            return out;
        }
        first_round = false;
    }
}

/// Meets the facts of a new edge into a block's entry facts; true if they
/// changed. `precise`: a dropping bound takes the smaller value (first
/// round), else it is widened to "nothing known" (termination).
fn meet(slot: &mut Option<Facts>, edge: Facts, precise: bool) -> bool {
    let Some(old) = slot else {
        *slot = Some(edge);
        return true;
    };
    let mut changed = false;
    old.retain(|v, n| match edge.get(v) {
        Some(&m) if m >= *n => true,
        Some(&m) if precise => {
            *n = m;
            changed = true;
            true
        }
        _ => {
            changed = true;
            false
        }
    });
    changed
}

/// The buffer class of every value (union–find over branch arguments that
/// are handles): handles of different classes never name one buffer.
fn buffer_classes(f: &Function) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..f.values.len() as u32).collect();
    fn find(parent: &mut [u32], mut v: u32) -> u32 {
        while parent[v as usize] != v {
            let up = parent[parent[v as usize] as usize];
            parent[v as usize] = up;
            v = up;
        }
        v
    }
    for b in &f.blocks {
        let Some(term) = b.insts.last() else { continue };
        for dest in term.kind.successors() {
            let Some(target) = f.blocks.get(dest.block.index()) else {
                continue;
            };
            for (a, p) in dest.args.iter().zip(&target.params) {
                let handle = f.values.get(a.index()).is_some_and(|d| d.ty.is_adstack());
                if handle && (p.index()) < parent.len() {
                    let (ra, rp) = (find(&mut parent, a.0), find(&mut parent, p.0));
                    parent[ra as usize] = rp;
                }
            }
        }
    }
    (0..parent.len() as u32)
        .map(|v| find(&mut parent, v))
        .collect()
}

/// The immediate of every value an `iconst` defines.
fn iconsts(f: &Function) -> SecondaryMap<Value, Option<i64>> {
    let mut m = SecondaryMap::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        if let (InstKind::Iconst { imm, .. }, Some(r)) = (&inst.kind, inst.result) {
            m[r] = Some(*imm);
        }
    }
    m
}

/// What the transfer functions need of the function.
struct Cx<'f> {
    f: &'f Function,
    caps: &'f HashMap<Value, u32>,
    class: Vec<u32>,
    /// The immediate of every value an `iconst` defines.
    consts: SecondaryMap<Value, Option<i64>>,
}

impl Cx<'_> {
    fn same_buffer_class(&self, a: Value, b: Value) -> bool {
        self.class.get(a.index()) == self.class.get(b.index())
    }

    fn cap(&self, h: Value) -> u64 {
        self.caps.get(&h).copied().unwrap_or(0) as u64
    }

    /// Runs block `b` from its entry facts: records the checks that cannot
    /// fail in `out`, returns the facts along each outgoing edge.
    fn block(
        &self,
        b: u32,
        mut facts: Facts,
        out: &mut HashSet<(u32, u32)>,
    ) -> Vec<(usize, Facts)> {
        // %n -> %h for `%n = adstack.len %h` while %h's class is untouched.
        let mut lens: HashMap<Value, Value> = HashMap::new();
        // %c -> (%n, cc, k) for `%c = icmp cc %n, k` (normalized: %n on the left).
        let mut conds: HashMap<Value, (Value, IntCC, i64)> = HashMap::new();
        let nonempty = |facts: &Facts, h: &Value| facts.contains_key(h);
        for (ii, inst) in self.f.blocks[b as usize].insts.iter().enumerate() {
            use InstKind::*;
            let at = (b, ii as u32);
            match &inst.kind {
                AdTop { stack } | AdTopAdj { stack } | AdAccAdj { stack, .. }
                    if inst.site.is_some() && nonempty(&facts, stack) =>
                {
                    out.insert(at);
                }
                AdPop { stack } => {
                    if inst.site.is_some() && nonempty(&facts, stack) {
                        out.insert(at);
                    }
                    facts.retain(|v, n| {
                        if self.same_buffer_class(*v, *stack) {
                            *n -= 1;
                        }
                        *n > 0
                    });
                    lens.retain(|_, h| !self.same_buffer_class(*h, *stack));
                }
                AdPush { stack, .. } => {
                    let n = facts.get(stack).map_or(1, |n| n + 1).min(self.cap(*stack));
                    if n > 0 {
                        facts.insert(*stack, n);
                    }
                    lens.retain(|_, h| !self.same_buffer_class(*h, *stack));
                }
                AdAlloc { .. } => {
                    if let Some(r) = inst.result {
                        facts.retain(|v, _| !self.same_buffer_class(*v, r));
                        lens.retain(|_, h| !self.same_buffer_class(*h, r));
                    }
                }
                AdLen { stack } => {
                    if let Some(r) = inst.result {
                        lens.insert(r, *stack);
                    }
                }
                Icmp { cc, a, b } => {
                    if let Some(r) = inst.result {
                        if let (true, Some(k)) = (lens.contains_key(a), self.iconst(*b)) {
                            conds.insert(r, (*a, *cc, k));
                        } else if let (true, Some(k)) = (lens.contains_key(b), self.iconst(*a)) {
                            conds.insert(r, (*b, swap(*cc), k));
                        }
                    }
                }
                Call { args, .. } if args.iter().any(|&a| self.f.ty(a).is_adstack()) => {
                    facts.clear();
                    lens.clear();
                }
                Jump { dest } => return vec![(dest.block.index(), self.along(&facts, None, dest))],
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
                    return [(then_dest, true), (else_dest, false)]
                        .into_iter()
                        .map(|(dest, taken)| {
                            let extra = fact.and_then(|(h, t, e)| {
                                Some((h, (if taken { t } else { e })?.min(self.cap(h))))
                            });
                            (dest.block.index(), self.along(&facts, extra, dest))
                        })
                        .collect();
                }
                _ => {}
            }
        }
        Vec::new()
    }

    /// The facts entering `dest`'s block along an edge: what holds now,
    /// plus `extra`, with the block's params bound in parallel to the
    /// facts of their arguments (an older fact of a param never survives).
    fn along(&self, facts: &Facts, extra: Option<(Value, u64)>, dest: &BlockCall) -> Facts {
        let mut m = facts.clone();
        if let Some((h, n)) = extra.filter(|&(_, n)| n > 0) {
            let e = m.entry(h).or_insert(n);
            *e = (*e).max(n);
        }
        let params = self
            .f
            .blocks
            .get(dest.block.index())
            .map_or(&[][..], |b| b.params.as_slice());
        let bound: Vec<Option<u64>> = dest.args.iter().map(|a| m.get(a).copied()).collect();
        for p in params {
            m.remove(p);
        }
        for (p, n) in params.iter().zip(bound) {
            if let Some(n) = n {
                m.insert(*p, n);
            }
        }
        while m.len() > MAX_FACTS {
            m.pop_first();
        }
        m
    }

    /// The value of `v` if an `iconst` defines it.
    fn iconst(&self, v: Value) -> Option<i64> {
        self.consts.get(v).copied().flatten()
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
/// at most a capacity, a u32, so signed and unsigned comparisons agree on
/// it.)
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

    /// The claims for `@f` of `text` (hand-written guards), sorted.
    fn elided(text: &str) -> Vec<(u32, u32)> {
        let m = crate::parse_and_verify(text).expect("valid");
        let f = &m.functions[0];
        let caps = crate::analysis::adstack_capacities(f).expect("caps");
        let mut v: Vec<_> = redundant_underflow_checks(f, &caps).into_iter().collect();
        v.sort();
        v
    }

    #[test]
    fn len_test_before_pop_elides_the_block_s_checks() {
        let v = elided(
            "fn @f(%x: f64) -> f64 {
entry:
    %s = adstack.alloc.f64 4
    guard.adstack.push %s, %x
    jump rev(%s)
rev(%t: adstack.f64):
    %n = adstack.len %t
    %z = iconst.i64 0
    %e = icmp.eq %n, %z
    brif %e, out, pop(%t)
pop(%u: adstack.f64):
    %v = guard.adstack.top %u
    guard.adstack.acc_adj %u, %v
    guard.adstack.pop %u
    %w = guard.adstack.top %u
    jump rev(%u)
out:
    %r = fconst.f64 0.0
    return %r
}",
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
    guard.adstack.push %s, %x
    guard.adstack.push %s, %x
    %a = guard.adstack.top %s
    guard.adstack.pop %s
    %b = guard.adstack.top %s
    return %a
}",
        );
        // The top after the pushes is safe, and so is the pop; the top after
        // the pop is not: with capacity 1 the second push overflows (in
        // recover mode the count stays 1), so one pop may empty the stack.
        assert_eq!(v, vec![(0, 3), (0, 4)]);
    }

    /// Issue 13 (1): the alloc re-runs while %t still names its buffer.
    #[test]
    fn alloc_in_a_loop_forgets_the_param_carrying_the_old_handle() {
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    jump loop(%a)
loop(%t: adstack.i64):
    guard.adstack.push %t, %x
    %s = adstack.alloc.i64 4
    %v = guard.adstack.top %t
    guard.adstack.pop %t
    %c = icmp.slt %v, %x
    brif %c, loop(%s), done
done:
    return %x
}",
        );
        assert_eq!(v, vec![]);
    }

    #[test]
    fn alloc_between_len_and_branch_voids_the_test() {
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    guard.adstack.push %a, %x
    jump loop(%a)
loop(%t: adstack.i64):
    %n = adstack.len %t
    %s = adstack.alloc.i64 4
    %z = iconst.i64 0
    %e = icmp.eq %n, %z
    brif %e, done, body(%t)
body(%u: adstack.i64):
    %v = guard.adstack.top %u
    guard.adstack.pop %u
    guard.adstack.push %s, %v
    jump loop(%s)
done:
    return %x
}",
        );
        assert_eq!(v, vec![]);
    }

    #[test]
    fn facts_meet_at_merges() {
        let text = |other_arm: &str| {
            format!(
                "fn @f(%x: i64) -> i64 {{
entry:
    %s = adstack.alloc.i64 4
    %c = icmp.slt %x, %x
    brif %c, a, b
a:
    guard.adstack.push %s, %x
    guard.adstack.push %s, %x
    jump m
b:
{other_arm}
    jump m
m:
    %v = guard.adstack.top %s
    guard.adstack.pop %s
    %w = guard.adstack.top %s
    return %v
}}"
            )
        };
        // One push on the other arm: top and pop are safe, the second top not.
        assert_eq!(
            elided(&text("    guard.adstack.push %s, %x")),
            vec![(3, 0), (3, 1)]
        );
        // No push on the other arm: nothing is safe at the merge.
        assert_eq!(elided(&text("")), vec![]);
    }

    #[test]
    fn a_pop_in_a_loop_is_not_covered_by_the_push_before_it() {
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 4
    guard.adstack.push %s, %x
    guard.adstack.push %s, %x
    jump loop
loop:
    guard.adstack.pop %s
    %c = icmp.slt %x, %x
    brif %c, loop, done
done:
    return %x
}",
        );
        assert_eq!(v, vec![]);
    }

    #[test]
    fn params_are_bound_in_parallel() {
        // Each iteration pops %q, pushes %p and swaps them: the new %q is
        // the pushed stack (never empty at the pop), the new %p the popped
        // one (empty in the second iteration). Binding the params one after
        // the other would give %p the fact of the old %p.
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    %b = adstack.alloc.i64 4
    guard.adstack.push %a, %x
    guard.adstack.push %b, %x
    jump loop(%a, %b)
loop(%p: adstack.i64, %q: adstack.i64):
    %v = guard.adstack.top %p
    guard.adstack.pop %q
    guard.adstack.push %p, %x
    %c = icmp.slt %x, %x
    brif %c, loop(%q, %p), done
done:
    return %x
}",
        );
        assert_eq!(v, vec![(1, 1)]);
    }

    #[test]
    fn a_handle_on_two_params_is_one_buffer() {
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    jump two(%a, %a)
two(%p: adstack.i64, %q: adstack.i64):
    guard.adstack.push %p, %x
    guard.adstack.pop %q
    %v = guard.adstack.top %p
    guard.adstack.push %q, %x
    %w = guard.adstack.top %p
    return %x
}",
        );
        // Nothing is known of %q at the pop, which takes %p's bound with
        // it; the push through %q raises only %q's bound.
        assert_eq!(v, vec![]);
    }

    #[test]
    fn an_alloc_forgets_every_handle_that_may_name_its_buffer() {
        // %p names the buffer of %a or of %b; re-running %b's alloc may
        // empty it, re-running %a's does not touch %b's facts.
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    %c = icmp.slt %x, %x
    brif %c, one(%a), two
two:
    %b = adstack.alloc.i64 4
    jump one(%b)
one(%p: adstack.i64):
    guard.adstack.push %p, %x
    %d = adstack.alloc.i64 4
    guard.adstack.push %d, %x
    %u = guard.adstack.top %p
    %t = guard.adstack.top %d
    brif %c, two, end
end:
    return %x
}",
        );
        // %d is its own class: its alloc leaves %p's fact; both tops are safe.
        assert_eq!(v, vec![(2, 3), (2, 4)]);
        let v = elided(
            "fn @f(%x: i64) -> i64 {
entry:
    %a = adstack.alloc.i64 4
    %c = icmp.slt %x, %x
    brif %c, one(%a), two
two:
    %b = adstack.alloc.i64 4
    jump one(%b)
one(%p: adstack.i64):
    guard.adstack.push %p, %x
    %b2 = adstack.alloc.i64 4
    %u = guard.adstack.top %p
    brif %c, two2(%b2), end
two2(%r: adstack.i64):
    jump one(%r)
end:
    return %x
}",
        );
        // %b2 flows into %p: its alloc may empty %p's buffer.
        assert_eq!(v, vec![]);
    }

    #[test]
    fn facts_are_bounded_per_program_point() {
        let mut text = String::from("fn @f(%x: i64) -> i64 {\nentry:\n");
        let n = MAX_FACTS + 10;
        for i in 0..n {
            text.push_str(&format!(
                "    %s{i} = adstack.alloc.i64 2\n    guard.adstack.push %s{i}, %x\n"
            ));
        }
        text.push_str("    jump next\nnext:\n");
        for i in 0..n {
            text.push_str(&format!("    %t{i} = guard.adstack.top %s{i}\n"));
        }
        text.push_str("    return %x\n}\n");
        // Facts survive the edge for the most recent MAX_FACTS handles only.
        assert_eq!(elided(&text).len(), MAX_FACTS);
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
