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
//! with an entry plan is its entry variant in which, inside the own
//! region, the attribute ops on the params of [`OwnPlan::params`] make no
//! test at all: they address the values array from the object (the
//! array's fixed offset), and the lifetime checks and `guard.watch`es of
//! those params are dropped too. A call runs it when, besides what the
//! entry variant needs, every such argument passed an own-values test
//! **with the param's demand** ([`OwnPlans::demand`]) since the caller's
//! latest call or word write, and since the argument was last defined.
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

use super::entry::EntryPlan;
use super::flowgraph::ControlFlowGraph;
use super::hoist::HostModel;
use crate::inst::{Block, CheckKind, Inst, InstKind, Value};
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
/// its entry region (`entry`, [`EntryPlan::region`]) cut at every
/// instruction that [`writes_words`].
pub fn own_region(m: &Module, f: &Function, entry: &[u32]) -> Vec<u32> {
    let n = f.blocks.len();
    if n == 0 {
        return Vec::new();
    }
    let cfg = ControlFlowGraph::with_function(f);
    let rpo = super::reverse_postorder(f);
    let lead = |b: usize| -> u32 {
        let writes = (f.blocks[b].insts.iter())
            .position(|i| writes_words(m, i))
            .map_or(u32::MAX, |p| p as u32);
        writes.min(entry.get(b).copied().unwrap_or(0))
    };
    // As the entry region: the greatest fixpoint of "every predecessor
    // ends in the region".
    let mut starts = vec![false; n];
    for &b in &rpo {
        starts[b as usize] = entry.get(b as usize).is_some_and(|&e| e > 0);
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
    /// The own plans of `m`, whose entry plans are `entries`.
    pub fn of(m: &Module, entries: &[Option<EntryPlan>], host: HostModel) -> OwnPlans {
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
        // Demands from the function's own ops; values with a too high
        // index never get one.
        let mut over: Vec<Vec<Value>> = vec![Vec::new(); n];
        let mut demand: Vec<HashMap<Value, u32>> = (m.functions.iter().enumerate())
            .map(|(fi, f)| {
                let mut d: HashMap<Value, u32> = HashMap::new();
                for (o, index) in f.blocks.iter().flat_map(|b| &b.insts).filter_map(attr) {
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
        let plans: Vec<Option<OwnPlan>> = (m.functions.iter().enumerate())
            .map(|(fi, f)| {
                let e = entries.get(fi)?;
                let e = e.as_ref()?;
                let region = own_region(m, f, &e.region);
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
        // Arguments take their params' demands, until none grows (each
        // round raises one; demands are below MAX_INDEX).
        let calls: Vec<(usize, usize, &[Value])> = (m.functions.iter().enumerate())
            .flat_map(|(fi, f)| {
                (f.blocks.iter().flat_map(|b| &b.insts)).filter_map(move |i| {
                    i.kind
                        .direct_call()
                        .map(|(g, args)| (fi, g.0 as usize, args))
                })
            })
            .collect();
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
