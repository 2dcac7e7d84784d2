//! Entry variants: the object tests a caller already made, not made again
//! by its callee (interprocedural, issue 33: a method JIT's methods each
//! re-tested the receiver their caller had just tested).
//!
//! The **entry region** of a function is every instruction that no path
//! from the entry reaches through an instruction that may free
//! ([`ends_entry_region`]: a `call` or `call_indirect` of any kind; against
//! a host with its own attribute slow paths also an attribute or
//! `dict_slot` op, whose slow path runs host code). It is a forward
//! must-analysis: a block starts in the region when every predecessor ends
//! in it, and its leading instructions up to the first that ends it are
//! in it ([`EntryPlan::region`]; a loop without such an instruction stays
//! in the region).
//!
//! An **entry variant** of a function `g` is `g` without the lifetime
//! checks and `guard.watch`es, inside its entry region, of the object
//! params in [`EntryPlan::life`] / [`EntryPlan::watch`]. A call of `g` runs
//! it when, for each such param, the caller's argument is **vouched for**:
//! since the caller's latest call (or its own entry) and since the
//! argument's value was last defined, an object op on that value passed
//! its lifetime check (for `life`) and a `guard.watch` of it ran (for
//! `watch`) — or the caller is itself an entry variant entered with that
//! param vouched for, inside its region. Every call resets what is
//! vouched for.
//!
//! **The claim.** Only a free changes what a lifetime check or a
//! `guard.watch` sees (a free quarantines the object and takes its slot
//! off the watch list; `Runtime::unwatch_epoch` counts both), and only a
//! call frees (`hoist`'s first claim: the other instructions call the
//! runtime only for slow paths and reports, none of which frees; with
//! host slow paths attribute ops end the region). So between the check
//! that vouched for an object and the end of the callee's entry region no
//! free runs: the dropped lifetime checks would pass (the object was not
//! freed then and is not now) and the dropped watches would change
//! nothing (the slot is on the watch list, or the runtime refused it for
//! a freed object, as it would again) — in every mode, since what vouches
//! is a check that passed, not one that ran. The interpreter verifies it
//! while it runs (`Interpreter::set_verify_elision`): a vouched-for param
//! whose dropped test sees the unwatch epoch moved since the test that
//! vouched for it is an internal error.
//!
//! Which params a variant drops: those of `g` that a lifetime-checked
//! object op or a `guard.watch` in its region takes as its object, kept
//! only if at every direct call of `g` the argument can be vouched for at
//! all (the caller tests it somewhere, or it is a param of the caller's
//! own plan): a param no caller vouches for would make every call take the
//! checked function.

use super::flowgraph::ControlFlowGraph;
use super::hoist::HostModel;
use crate::inst::{Block, CheckKind, FuncId, Inst, InstKind, Value};
use crate::module::{Function, Module};

/// Does `k` end a function's entry region (may it free)?
pub fn ends_entry_region(k: &InstKind, host: HostModel) -> bool {
    use InstKind::*;
    match k {
        Call { .. } | CallIndirect { .. } => true,
        LoadAttr { .. } | StoreAttr { .. } | DictSlotLoad { .. } | DictSlotStore { .. } => {
            host.host_slow_paths
        }
        _ => false,
    }
}

/// One function's entry variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPlan {
    /// Per block: how many of its leading instructions lie in the entry
    /// region (`u32::MAX`: all of them; 0 for an unreachable block).
    pub region: Vec<u32>,
    /// The params (indices, ascending) whose lifetime checks the variant
    /// drops in the region.
    pub life: Vec<usize>,
    /// The params (indices, ascending) whose `guard.watch`es it drops in
    /// the region.
    pub watch: Vec<usize>,
}

impl EntryPlan {
    /// Is instruction `ii` of block `b` in the entry region?
    pub fn in_region(&self, b: u32, ii: u32) -> bool {
        self.region.get(b as usize).is_some_and(|&n| ii < n)
    }

    /// The params whose tests the variant drops (either kind), ascending.
    pub fn params(&self) -> Vec<usize> {
        let mut p: Vec<usize> = self.life.iter().chain(&self.watch).copied().collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// Does the variant drop the test `inst` (instruction `ii` of block
    /// `b` of `f`) makes, the lifetime check (`CheckKind::Lifetime`) or the
    /// `guard.watch` itself?
    pub fn drops(&self, f: &Function, (b, ii): (u32, u32), inst: &Inst) -> bool {
        let Some(o) = inst.kind.dict_obj() else {
            return false;
        };
        let Some(k) = f.params.iter().position(|&p| p == o) else {
            return false;
        };
        let list = match inst.kind {
            InstKind::Watch { .. } => &self.watch,
            _ => &self.life,
        };
        list.contains(&k) && self.in_region(b, ii)
    }
}

/// Per block of `f`, how many leading instructions lie in its entry
/// region (see the module doc).
pub fn entry_region(f: &Function, host: HostModel) -> Vec<u32> {
    region_until(f, |i| ends_entry_region(&i.kind, host))
}

/// Per block of `f`, how many leading instructions no path from the entry
/// reaches through an instruction for which `ends` holds (a forward
/// must-analysis: the greatest fixpoint, so a loop without one stays in).
pub fn region_until(f: &Function, ends: impl Fn(&Inst) -> bool) -> Vec<u32> {
    let n = f.blocks.len();
    if n == 0 {
        return Vec::new();
    }
    let cfg = ControlFlowGraph::with_function(f);
    let rpo = super::reverse_postorder(f);
    let lead = |b: usize| -> u32 {
        (f.blocks[b].insts.iter())
            .position(&ends)
            .map_or(u32::MAX, |p| p as u32)
    };
    // `starts[b]`: does block b start in the region? The greatest fixpoint
    // (every reachable block assumed in, then refuted): a loop without a
    // call stays in.
    let mut starts = vec![false; n];
    for &b in &rpo {
        starts[b as usize] = true;
    }
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo.iter().skip(1) {
            let b = b as usize;
            let all = (cfg.preds(Block(b as u32)).iter())
                .all(|p| starts[p.0 as usize] && lead(p.0 as usize) == u32::MAX);
            if starts[b] && !all {
                starts[b] = false;
                changed = true;
            }
        }
    }
    (0..n)
        .map(|b| if starts[b] { lead(b) } else { 0 })
        .collect()
}

/// The lifetime and watch tests of `f`'s params in its entry region
/// `region`, by param index (ascending, deduplicated).
fn region_tests(m: &Module, f: &Function, region: &[u32]) -> (Vec<usize>, Vec<usize>) {
    let (mut life, mut watch) = (Vec::new(), Vec::new());
    for (b, blk) in f.blocks.iter().enumerate() {
        let n = region.get(b).copied().unwrap_or(0) as usize;
        for inst in blk.insts.iter().take(n) {
            let Some(o) = inst.kind.dict_obj() else {
                continue;
            };
            let Some(k) = f.params.iter().position(|&p| p == o) else {
                continue;
            };
            let list = match inst.kind {
                InstKind::Watch { .. } => &mut watch,
                _ if has_lifetime(m, inst) => &mut life,
                _ => continue,
            };
            if !list.contains(&k) {
                list.push(k);
            }
        }
    }
    life.sort_unstable();
    watch.sort_unstable();
    (life, watch)
}

/// Does `inst`, an object op, carry the lifetime check?
fn has_lifetime(m: &Module, inst: &Inst) -> bool {
    (m.inst_checks(inst)
        .intersect(m.applicable_checks(&inst.kind)))
    .contains(CheckKind::Lifetime)
}

/// The values of `f` that some lifetime-checked object op or
/// `guard.watch` of `f` takes as its object: the arguments a call in `f`
/// can vouch for (besides the params of `f`'s own plan).
fn tested_values(m: &Module, f: &Function) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        let Some(o) = inst.kind.dict_obj() else {
            continue;
        };
        if (matches!(inst.kind, InstKind::Watch { .. }) || has_lifetime(m, inst))
            && !out.contains(&o)
        {
            out.push(o);
        }
    }
    out
}

/// Every function's entry variant (`None`: none — no direct caller,
/// nothing its callers vouch for to drop, or a host with its own attribute
/// slow paths).
pub fn entry_plans(m: &Module, host: HostModel) -> Vec<Option<EntryPlan>> {
    entry_plans_except(m, host, &[])
}

/// [`entry_plans`], but no plan for the functions `skip` marks (the JIT's
/// later pieces of a big function, which get no variant): their regions
/// are not computed, and a call they make vouches only for what they test
/// themselves, as the code they run can (they are never entered vouched).
/// So each plan is a subset of [`entry_plans`]'s.
pub fn entry_plans_except(m: &Module, host: HostModel, skip: &[bool]) -> Vec<Option<EntryPlan>> {
    let n = m.functions.len();
    if host.host_slow_paths {
        // Any attribute op may then run host code that frees: what
        // vouches would end at each one. Not worth a variant.
        return vec![None; n];
    }
    let skipped = |fi: usize| skip.get(fi).copied().unwrap_or(false);
    // The direct calls (caller, callee, args), found in one pass: the
    // rounds below go over them, not over every instruction again.
    let calls: Vec<(usize, FuncId, &[Value])> = (m.functions.iter().enumerate())
        .flat_map(|(fi, f)| {
            (f.blocks.iter().flat_map(|b| &b.insts))
                .filter_map(move |i| i.kind.direct_call().map(|(g, args)| (fi, g, args)))
        })
        .collect();
    let mut called = vec![false; n];
    // Callers whose tested values matter: those calling a function that
    // may get a plan.
    let mut vouching = vec![false; n];
    for &(fi, g, _) in &calls {
        if let Some(c) = called.get_mut(g.0 as usize) {
            *c = true;
            vouching[fi] |= !skipped(g.0 as usize);
        }
    }
    // Per function: its region and the params it could drop tests of.
    let mut plans: Vec<Option<EntryPlan>> = (m.functions.iter().enumerate())
        .map(|(fi, f)| {
            if skipped(fi) {
                return None;
            }
            let region = entry_region(f, host);
            let (life, watch) = region_tests(m, f, &region);
            Some(EntryPlan {
                region,
                life,
                watch,
            })
        })
        .collect();
    let tested: Vec<Vec<Value>> = (m.functions.iter().enumerate())
        .map(|(fi, f)| match vouching[fi] {
            true => tested_values(m, f),
            false => Vec::new(),
        })
        .collect();
    // Params only go: repeat until no plan loses one (each round removes
    // at least one param, so at most as many rounds as params).
    loop {
        let mut changed = false;
        for &(fi, g, args) in &calls {
            let f = &m.functions[fi];
            let gi = g.0 as usize;
            // A param stays only if this call can vouch for its
            // argument: tested in the caller, or a param of the
            // caller its own plan keeps (of the same kind).
            let own = |list: fn(&EntryPlan) -> &Vec<usize>, a: &Value| {
                let k = f.params.iter().position(|p| p == a);
                let caller = plans.get(fi).and_then(|p| p.as_ref());
                k.zip(caller).is_some_and(|(k, c)| list(c).contains(&k))
            };
            let keep = |list: fn(&EntryPlan) -> &Vec<usize>, k: usize| {
                args.get(k)
                    .is_some_and(|a| tested[fi].contains(a) || own(list, a))
            };
            let Some(Some(p)) = plans.get(gi) else {
                continue;
            };
            let life: Vec<usize> = (p.life.iter().copied())
                .filter(|&k| keep(|c| &c.life, k))
                .collect();
            let watch: Vec<usize> = (p.watch.iter().copied())
                .filter(|&k| keep(|c| &c.watch, k))
                .collect();
            if let Some(Some(p)) = plans.get_mut(gi) {
                if (life.len(), watch.len()) != (p.life.len(), p.watch.len()) {
                    changed = true;
                    (p.life, p.watch) = (life, watch);
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (gi, p) in plans.iter_mut().enumerate() {
        if !called[gi]
            || p.as_ref()
                .is_some_and(|p| p.life.is_empty() && p.watch.is_empty())
        {
            *p = None;
        }
    }
    plans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inst::{Checks, SiteId};
    use crate::module::Site;

    /// `text` with every object op (not `guard.watch`) guarded by the
    /// lifetime check, as the instrumentation would.
    fn module(text: &str) -> Module {
        let mut m = crate::parse_and_verify(text).expect("valid");
        let mut n = 0;
        for (fi, f) in m.functions.iter_mut().enumerate() {
            for inst in f.blocks.iter_mut().flat_map(|b| &mut b.insts) {
                if inst.kind.dict_obj().is_none() || matches!(inst.kind, InstKind::Watch { .. }) {
                    continue;
                }
                let site = Site {
                    func: crate::inst::FuncId(fi as u32),
                    loc: inst.loc,
                    op: inst.kind.opcode(),
                    checks: Checks::EMPTY.with(CheckKind::Lifetime),
                };
                m.sites.insert(SiteId(n), site);
                inst.site = Some(SiteId(n));
                n += 1;
            }
        }
        m
    }

    const CALLS: &str = "
extern fn @obj_free(ptr)
fn @callee(%o: ptr, %p: ptr) -> i64 {
entry:
    guard.watch %o
    %a = load_attr %o, 0
    %b = load_attr %p, 0
    brif %a, more, out
more:
    %c = load_attr %o, 1
    call @obj_free(%p)
    %d = load_attr %o, 2
    jump out
out:
    %e = load_attr %p, 1
    return %e
}
fn @caller(%o: ptr, %p: ptr) -> i64 {
entry:
    %x = load_attr %o, 0
    %r = call @callee(%o, %p)
    return %r
}
";

    #[test]
    fn region_stops_at_the_first_call_and_after_any_path_through_one() {
        let m = module(CALLS);
        let f = &m.functions[0];
        let r = entry_region(f, HostModel::default());
        // entry: all; more: up to the call; out: a path through the
        // call reaches it.
        assert_eq!(r[0], u32::MAX);
        let call = (f.blocks[1].insts.iter())
            .position(|i| matches!(i.kind, InstKind::Call { .. }))
            .expect("a call");
        assert_eq!(r[1], call as u32);
        assert_eq!(r[2], 0);
        // With host slow paths the first attribute op ends it.
        let h = HostModel {
            host_slow_paths: true,
        };
        let r = entry_region(f, h);
        let first_attr = (f.blocks[0].insts.iter())
            .position(|i| matches!(i.kind, InstKind::LoadAttr { .. }))
            .expect("an attribute op");
        assert_eq!(r[0], first_attr as u32);
        assert_eq!(r[1], 0);
    }

    #[test]
    fn plan_keeps_only_params_every_caller_can_vouch_for() {
        let m = module(CALLS);
        let plans = entry_plans(&m, HostModel::default());
        // @callee: %o (tested by the caller) stays; %p, a param the
        // caller neither tests nor has vouched for (it has no plan), goes.
        let p = plans[0].as_ref().expect("@callee has a plan");
        assert_eq!(p.life, vec![0]);
        assert_eq!(p.watch, vec![0]);
        // The region's tests are dropped, the one after the free is not.
        let f = &m.functions[0];
        let first = &f.blocks[0].insts[1];
        assert!(p.drops(f, (0, 1), first));
        let after = (f.blocks[1].insts.iter().enumerate())
            .rfind(|(_, i)| matches!(i.kind, InstKind::LoadAttr { .. }))
            .expect("the op after the free");
        assert!(!p.drops(f, (1, after.0 as u32), after.1));
        // @caller has no caller: no plan.
        assert!(plans[1].is_none());
    }

    #[test]
    fn an_argument_the_caller_never_tests_drops_the_param() {
        let text = "
fn @callee(%o: ptr) -> i64 {
entry:
    %a = load_attr %o, 0
    return %a
}
fn @caller(%q: i64) -> i64 {
entry:
    %z = iconst.i64 16
    %o = iadd %q, %z
    %r = call @callee(%o)
    return %r
}
";
        let m = module(text);
        assert!(entry_plans(&m, HostModel::default())[0].is_none());
    }
}
