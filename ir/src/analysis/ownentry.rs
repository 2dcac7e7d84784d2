//! Own variants (issue 33): the own-values tests a caller already passed,
//! not made again by its callee.
//!
//! An own-values test of `o` (the JIT's `ownvalues`) that passes tells
//! that `o` is a live object of the model heap, its slot watched, working
//! on its own values array with a recorded capacity above the highest
//! index tested, and that `o`'s word is that array's. All of it stays true
//! until something frees (a call, as for entry variants: [`super::entry`])
//! or writes a word: a `dict_slot.store`, or a write that no check keeps
//! off the watched slots ([`writes_words`]: a raw `store` without the
//! clobber check, a `store_attr` without the bounds check, an adstack op
//! without the adstack check — each of them could land on a word).
//!
//! The **own region** of a function is its entry region cut, in addition,
//! at every such write ([`own_region`]). The **own variant** of a function
//! that some instruction calls directly is the function (its entry
//! variant, when it has one: the same drops) in which, inside the own
//! region, the attribute ops on the params of [`OwnPlan::params`] make no
//! test at all: they address the values array from the object (the
//! array's fixed offset), and the lifetime checks and `guard.watch`es of
//! those params are dropped too (a param stays in the plan where some
//! direct call can pass a value that passed such a test). A call runs it when every such argument
//! passed an own-values test **with the param's demand**
//! ([`OwnPlans::demand`]) since the caller's latest call or word write,
//! and since the argument was last defined (and, for the entry variant's
//! params it does not cover, when they are vouched for as the entry
//! variant needs).
//!
//! A value's **demand** is the highest index its own-values tests test:
//! the highest index of the lifetime-checked attribute ops on it and, for
//! each call that passes it to a param of an own variant, that param's
//! demand — so a pass serves the callee's accesses too (a fixpoint over
//! the call graph; a value with an index of [`MAX_INDEX`] or more has
//! none).
//!
//! **The claim** the interpreter verifies (`interp`, its `entry` module):
//! at every attribute op of an own variant's own region on such a param,
//! the object is a live model-heap object whose word is its own values
//! array's, with room for the index — a mismatch is an internal error.

use super::entry::{ends_entry_region, region_until};
use super::hoist::HostModel;
use crate::inst::{CheckKind, Inst, InstKind, Value};
use crate::module::{Function, Module};
use std::collections::HashMap;

/// Indices from this one on get no own-values test (the capacity table
/// holds capacities below it: the runtime's `shadow::CAPACITY_BYTE_MAX`).
pub const MAX_INDEX: u32 = 127;

/// Does `inst` write memory that could be an object's word? (It ends the
/// own region; see the module doc.)
pub fn writes_words(m: &Module, inst: &Inst) -> bool {
    use InstKind::*;
    let checks = m
        .inst_checks(inst)
        .intersect(m.applicable_checks(&inst.kind));
    match inst.kind {
        DictSlotStore { .. } => true,
        Store { .. } => !checks.contains(CheckKind::Clobber),
        StoreAttr { .. } => !checks.contains(CheckKind::Bounds),
        AdAlloc { .. } | AdPush { .. } | AdPop { .. } | AdAccAdj { .. } => {
            !checks.contains(CheckKind::Adstack)
        }
        _ => false,
    }
}

/// Per block of `f`, how many leading instructions lie in its own region:
/// its entry region (against `host`) cut at every instruction that
/// [`writes_words`].
pub fn own_region(m: &Module, f: &Function, host: HostModel) -> Vec<u32> {
    region_until(f, |i| {
        ends_entry_region(&i.kind, host) || writes_words(m, i)
    })
}

/// One function's own variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnPlan {
    /// Per block: how many of its leading instructions lie in the own
    /// region.
    pub region: Vec<u32>,
    /// The params (indices, ascending) its attribute ops in the region
    /// address without a test.
    pub params: Vec<usize>,
}

impl OwnPlan {
    /// Is instruction `ii` of block `b` in the own region?
    pub fn in_region(&self, b: u32, ii: u32) -> bool {
        self.region.get(b as usize).is_some_and(|&n| ii < n)
    }

    /// Does the variant address attribute op `inst` (instruction `ii` of
    /// block `b` of `f`) without a test, or drop its lifetime check or
    /// `guard.watch`? Its object is one of the plan's params and it lies
    /// in the region.
    pub fn covers(&self, f: &Function, (b, ii): (u32, u32), inst: &Inst) -> bool {
        let Some(o) = inst.kind.dict_obj() else {
            return false;
        };
        let k = f.params.iter().position(|&p| p == o);
        k.is_some_and(|k| self.params.contains(&k)) && self.in_region(b, ii)
    }
}

/// Every function's own variant and every value's demand.
#[derive(Clone, Debug, Default)]
pub struct OwnPlans {
    /// By function: its own variant (only functions with an entry plan).
    pub plans: Vec<Option<OwnPlan>>,
    /// By function: the demand of each value that has one.
    pub demand: Vec<HashMap<Value, u32>>,
}

impl OwnPlans {
    /// The own plans of `m`: of every function some instruction calls
    /// directly.
    pub fn of(m: &Module, host: HostModel) -> OwnPlans {
        OwnPlans::of_except(m, host, &[])
    }

    /// [`OwnPlans::of`], but no plan for the functions `skip` marks (the
    /// JIT's later pieces, which get no variant: their regions are not
    /// computed).
    pub fn of_except(m: &Module, host: HostModel, skip: &[bool]) -> OwnPlans {
        let n = m.functions.len();
        if host.host_slow_paths {
            return OwnPlans {
                plans: vec![None; n],
                demand: vec![HashMap::new(); n],
            };
        }
        let attr = |i: &Inst| match i.kind {
            InstKind::LoadAttr { obj, index } | InstKind::StoreAttr { obj, index, .. } => {
                let checks = m.inst_checks(i).intersect(m.applicable_checks(&i.kind));
                checks.contains(CheckKind::Lifetime).then_some((obj, index))
            }
            _ => None,
        };
        // Demands from the function's own ops (values with a too high
        // index never get one), and the functions called directly: one
        // pass over the instructions.
        let mut over: Vec<Vec<Value>> = vec![Vec::new(); n];
        let mut called = vec![false; n];
        let mut demand: Vec<HashMap<Value, u32>> = (m.functions.iter().enumerate())
            .map(|(fi, f)| {
                let mut d: HashMap<Value, u32> = HashMap::new();
                for i in f.blocks.iter().flat_map(|b| &b.insts) {
                    if let Some((g, _)) = i.kind.direct_call() {
                        if let Some(c) = called.get_mut(g.0 as usize) {
                            *c = true;
                        }
                    }
                    let Some((o, index)) = attr(i) else {
                        continue;
                    };
                    if index >= MAX_INDEX {
                        over[fi].push(o);
                    } else {
                        let e = d.entry(o).or_insert(index);
                        *e = (*e).max(index);
                    }
                }
                for o in &over[fi] {
                    d.remove(o);
                }
                d
            })
            .collect();
        let mut plans: Vec<Option<OwnPlan>> = (m.functions.iter().enumerate())
            .map(|(fi, f)| {
                if !called[fi] || skip.get(fi).copied().unwrap_or(false) {
                    return None;
                }
                let region = own_region(m, f, host);
                let mut params: Vec<usize> = Vec::new();
                for (b, blk) in f.blocks.iter().enumerate() {
                    let len = region.get(b).copied().unwrap_or(0) as usize;
                    for (o, _) in blk.insts.iter().take(len).filter_map(attr) {
                        let k = f.params.iter().position(|&p| p == o);
                        if let Some(k) = k.filter(|k| !params.contains(k)) {
                            params.push(k);
                        }
                    }
                }
                params.sort_unstable();
                params.retain(|&k| demand[fi].contains_key(&f.params[k]));
                (!params.is_empty()).then_some(OwnPlan { region, params })
            })
            .collect();
        let calls: Vec<(usize, usize, &[Value])> = (m.functions.iter().enumerate())
            .flat_map(|(fi, f)| {
                (f.blocks.iter().flat_map(|b| &b.insts)).filter_map(move |i| {
                    i.kind
                        .direct_call()
                        .map(|(g, args)| (fi, g.0 as usize, args))
                })
            })
            .collect();
        keep_supplied(m, &calls, &demand, &mut plans);
        // Arguments take their params' demands, until none grows (each
        // round raises one; demands are below MAX_INDEX).
        loop {
            let mut grew = false;
            for &(fi, gi, args) in &calls {
                let Some(Some(p)) = plans.get(gi) else {
                    continue;
                };
                let g = &m.functions[gi];
                for &k in &p.params {
                    let (Some(&a), Some(&want)) = (args.get(k), demand[gi].get(&g.params[k]))
                    else {
                        continue;
                    };
                    if over[fi].contains(&a) {
                        continue;
                    }
                    let d = demand[fi].entry(a).or_insert(want);
                    if *d < want {
                        *d = want;
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        OwnPlans { plans, demand }
    }

    /// The own variant of function `fi`, if it has one.
    pub fn plan(&self, fi: usize) -> Option<&OwnPlan> {
        self.plans.get(fi)?.as_ref()
    }

    /// The demand of value `v` of function `fi`, if it has one.
    pub fn demand_of(&self, fi: usize, v: Value) -> Option<u32> {
        self.demand.get(fi)?.get(&v).copied()
    }
}

/// Drops from `plans` the params no call of `calls` (caller, callee,
/// arguments) can pass a tested argument for: one with a demand in the
/// caller (`demand`), or a param of the caller's own plan (a call that
/// cannot runs the entry variant or the function). Params only go: at
/// most as many rounds as params.
fn keep_supplied(
    m: &Module,
    calls: &[(usize, usize, &[Value])],
    demand: &[HashMap<Value, u32>],
    plans: &mut [Option<OwnPlan>],
) {
    let n = plans.len();
    loop {
        let mut supplied: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(fi, gi, args) in calls {
            let f = &m.functions[fi];
            let testable = |a: &Value| {
                demand[fi].contains_key(a)
                    || (plans[fi].as_ref())
                        .is_some_and(|p| p.params.iter().any(|&k| f.params.get(k) == Some(a)))
            };
            if let Some(p) = plans[gi].as_ref() {
                for &k in &p.params {
                    if args.get(k).is_some_and(testable) && !supplied[gi].contains(&k) {
                        supplied[gi].push(k);
                    }
                }
            }
        }
        let mut changed = false;
        for (gi, p) in plans.iter_mut().enumerate() {
            let Some(plan) = p.as_mut() else {
                continue;
            };
            let before = plan.params.len();
            plan.params.retain(|k| supplied[gi].contains(k));
            changed |= plan.params.len() != before;
            if plan.params.is_empty() {
                *p = None;
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inst::{Checks, SiteId};
    use crate::module::Site;

    /// `text` with every instruction that has applicable checks guarded
    /// by `checks` (as far as they apply), as the instrumentation would.
    fn module(text: &str, checks: Checks) -> Module {
        let mut m = crate::parse_and_verify(text).expect("valid");
        let mut n = 0;
        for (fi, f) in m.functions.iter_mut().enumerate() {
            for inst in f.blocks.iter_mut().flat_map(|b| &mut b.insts) {
                if inst.kind.applicable_checks().intersect(checks) == Checks::EMPTY {
                    continue;
                }
                let site = Site {
                    func: crate::inst::FuncId(fi as u32),
                    loc: inst.loc,
                    op: inst.kind.opcode(),
                    checks,
                };
                m.sites.insert(SiteId(n), site);
                inst.site = Some(SiteId(n));
                n += 1;
            }
        }
        m
    }

    fn all() -> Checks {
        Checks::OBJECT.with(CheckKind::Adstack)
    }

    const CHAIN: &str = "
extern fn @obj_free(ptr)
fn @leaf(%o: ptr, %p: ptr) -> i64 {
entry:
    %a = load_attr %o, 4
    %w = dict_slot.load %p
    dict_slot.store %p, %w
    %b = load_attr %p, 1
    %s = iadd %a, %b
    return %s
}
fn @mid(%o: ptr, %p: ptr) -> i64 {
entry:
    %a = load_attr %o, 1
    %b = load_attr %p, 0
    %r = call @leaf(%o, %p)
    %c = load_attr %o, 6
    return %r
}
fn @top(%o: ptr, %p: ptr) -> i64 {
entry:
    %a = load_attr %o, 0
    %b = load_attr %p, 0
    %r = call @mid(%o, %p)
    return %r
}
";

    /// Own variants cover the params with attribute ops in the own region
    /// (the region ends at the `dict_slot.store` and at the call), and a
    /// value's demand grows with what the callees it is passed to need.
    #[test]
    fn own_variants_and_demands_follow_the_calls() {
        let m = module(CHAIN, all());
        let owns = OwnPlans::of(&m, HostModel::default());
        let (leaf, mid, top) = (0, 1, 2);
        let lp = owns.plan(leaf).expect("@leaf has an own variant");
        // %p's attribute op comes after the word write: only %o.
        assert_eq!(lp.params, vec![0]);
        assert_eq!(lp.region, vec![2]);
        let mp = owns.plan(mid).expect("@mid has an own variant");
        assert_eq!(mp.params, vec![0, 1]);
        assert!(owns.plan(top).is_none(), "no caller, no own variant");
        let d = |fi: usize, k: usize| owns.demand_of(fi, m.functions[fi].params[k]);
        // @leaf: %o 4; %p 1 (its op outside the region counts for its own tests).
        assert_eq!((d(leaf, 0), d(leaf, 1)), (Some(4), Some(1)));
        // @mid: %o takes @leaf's 4 (its own 6 is after the call: 6 all
        // the same, its own op); %p keeps 0 (@leaf's own variant does not
        // cover its %p).
        assert_eq!((d(mid, 0), d(mid, 1)), (Some(6), Some(0)));
        // @top: the most its callees' params need.
        assert_eq!((d(top, 0), d(top, 1)), (Some(6), Some(0)));
    }

    /// Writes a check does not keep off the watched slots end the own
    /// region; checked ones do not.
    #[test]
    fn unchecked_writes_end_the_own_region() {
        let text = "
fn @f(%o: ptr, %q: ptr) -> i64 {
entry:
    %a = load_attr %o, 0
    store %a, %q
    %b = load_attr %o, 1
    return %b
}
";
        let checked = module(text, all());
        let f = &checked.functions[0];
        assert_eq!(
            own_region(&checked, f, HostModel::default()),
            vec![u32::MAX]
        );
        let no_clobber = Checks::only(CheckKind::Lifetime).with(CheckKind::Bounds);
        let no_clobber = module(text, no_clobber);
        let f = &no_clobber.functions[0];
        assert_eq!(own_region(&no_clobber, f, HostModel::default()), vec![1]);
        assert!(writes_words(&no_clobber, &f.blocks[0].insts[1]));
    }
}
