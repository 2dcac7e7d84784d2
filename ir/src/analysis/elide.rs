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
//! size per round. Overflow checks need upper bounds: [`super::adbound`]
//! proves them, and [`redundant_adstack_checks`] answers both.

use super::handle_bindings;
use crate::inst::{BlockCall, InstKind, IntCC, Value};
use crate::module::Function;
use cranelift_entity::EntityRef;
use cranelift_entity::SecondaryMap;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most facts kept at one program point.
pub const MAX_FACTS: usize = 256;

/// `count(%h) ≥ n` for each key; every `n` is at least 1.
type Facts = BTreeMap<Value, u64>;

/// (block index, instruction index) of every guarded adstack check that
/// cannot fail: the underflow checks this module proves and the overflow
/// checks [`super::adbound`] proves. `caps`: the capacity behind each
/// handle value ([`crate::analysis::adstack_capacities`]).
pub fn redundant_adstack_checks(f: &Function, caps: &HashMap<Value, u32>) -> HashSet<(u32, u32)> {
    crate::analysis::context::FuncAnalysis::new(f)
        .redundant_adstack_checks(caps)
        .clone()
}

/// [`redundant_adstack_checks`] with the function's reverse postorder
/// (from its [`crate::analysis::context::FuncAnalysis`]); `f` has blocks.
pub(crate) fn redundant_adstack_checks_in(
    f: &Function,
    rpo: &[crate::inst::Block],
    caps: &HashMap<Value, u32>,
) -> HashSet<(u32, u32)> {
    let mut out = redundant_underflow_checks_in(f, rpo, caps);
    out.extend(super::adbound::redundant_overflow_checks_in(f, rpo, caps));
    out
}

/// The underflow half of [`redundant_adstack_checks_in`].
fn redundant_underflow_checks_in(
    f: &Function,
    rpo: &[crate::inst::Block],
    caps: &HashMap<Value, u32>,
) -> HashSet<(u32, u32)> {
    let cx = Cx {
        f,
        caps,
        class: buffer_classes(f),
        consts: iconsts(f),
    };
    fixpoint(
        f.blocks.len(),
        rpo,
        None,
        |b, facts, out| cx.block(b, facts, out),
        |slot, edge, round| meet(slot, edge, round == 0),
    )
}

/// The forward dataflow driver of both adstack analyses (this one and
/// [`super::adbound`]): from empty facts at the entry block, runs
/// `block` over the blocks in reverse postorder (`rpo`), meeting the facts
/// it returns per edge into each successor's entry facts (`meet`, given the
/// round number, says whether they changed), until a round changes
/// nothing; that round's claims (what `block` put in the set) hold. With
/// `max_rounds`, a function still changing after that many rounds gets no
/// claim.
pub(super) fn fixpoint<F: Clone + Default>(
    n_blocks: usize,
    rpo: &[crate::inst::Block],
    max_rounds: Option<u32>,
    block: impl Fn(u32, F, &mut HashSet<(u32, u32)>) -> Vec<(usize, F)>,
    meet: impl Fn(&mut Option<F>, F, u32) -> bool,
) -> HashSet<(u32, u32)> {
    let mut at_entry: Vec<Option<F>> = vec![None; n_blocks];
    at_entry[0] = Some(F::default());
    let mut round = 0u32;
    loop {
        let mut out = HashSet::new();
        let mut changed = false;
        for b in rpo.iter().map(|b| b.0) {
            let Some(facts) = at_entry[b as usize].clone() else {
                continue;
            };
            for (dest, edge) in block(b, facts, &mut out) {
                if let Some(slot) = at_entry.get_mut(dest) {
                    changed |= meet(slot, edge, round);
                }
            }
        }
        // A round that changed nothing ran on the fixpoint: its claims hold.
        if !changed {
            return out;
        }
        round += 1;
        if max_rounds.is_some_and(|m| round > m) {
            // No fixpoint yet: claim nothing (always sound).
            return HashSet::new();
        }
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
pub(super) fn buffer_classes(f: &Function) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..f.values.len() as u32).collect();
    fn find(parent: &mut [u32], mut v: u32) -> u32 {
        while parent[v as usize] != v {
            let up = parent[parent[v as usize] as usize];
            parent[v as usize] = up;
            v = up;
        }
        v
    }
    for (a, p) in handle_bindings(f) {
        if a.index() < parent.len() && p.index() < parent.len() {
            let (ra, rp) = (find(&mut parent, a.0), find(&mut parent, p.0));
            parent[ra as usize] = rp;
        }
    }
    (0..parent.len() as u32)
        .map(|v| find(&mut parent, v))
        .collect()
}

/// The immediate of every value an `iconst` defines.
pub(super) fn iconsts(f: &Function) -> SecondaryMap<Value, Option<i64>> {
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
                BrTable { default, table, .. } => {
                    return std::iter::once(default)
                        .chain(table)
                        .map(|dest| (dest.block.index(), self.along(&facts, None, dest)))
                        .collect()
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
pub(super) fn swap(cc: IntCC) -> IntCC {
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

    // The elision cases as programs: ir/tests/elide/*.glir (ir/tests/elide.rs).

    /// The claims for `@f` of `text` (hand-written guards), sorted.
    fn elided(text: &str) -> Vec<(u32, u32)> {
        let m = crate::parse_and_verify(text).expect("valid");
        let f = &m.functions[0];
        let caps = crate::analysis::adstack_capacities(f).expect("caps");
        let mut v: Vec<_> = redundant_adstack_checks(f, &caps).into_iter().collect();
        v.sort();
        v
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
        // Facts survive the edge for the most recent MAX_FACTS handles only
        // (the tops, in block 1; the pushes of block 0 are adbound's).
        let tops = elided(&text).into_iter().filter(|&(b, _)| b == 1).count();
        assert_eq!(tops, MAX_FACTS);
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
