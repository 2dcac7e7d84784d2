//! Entry variants ([`guardlift_ir::analysis::entry`]): an IR function
//! whose callers vouch for some of its object params is compiled a second
//! time without those params' lifetime checks and `guard.watch`es inside
//! its entry region, and a call runs that code when the caller's tests
//! vouch for every such argument.
//!
//! What vouches lives in two Cranelift variables (I8) per IR value that a
//! call passes to such a param (**tracked values**): `life`, set to 1
//! where an object op on the value passed its lifetime check, and
//! `watch`, set to 1 where a `guard.watch` of it ran. Both are 0 at the
//! function's entry — 1 in an entry variant for the params it was entered
//! vouched for — and go back to 0 after every call and wherever the value
//! is defined again (its instruction runs again, its block is entered
//! again: a block param, a value of a loop body), so a 1 always speaks of
//! the object the value holds now. A call of a function with an entry
//! variant tests the variables of its arguments (one `and` per param, a
//! branch) and calls the variant or the function; both rejoin with the
//! result. Where a clean copy calls a leaf callee's clean variant
//! (`version`), that call stays as it is.

use super::FnLower;
use super::Lowerer;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, condcodes::IntCC, types, BlockArg, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::{FuncId as ClFuncId, Module as ClModule};
use guardlift_ir::analysis::entry::{entry_plans_except, EntryPlan};
use guardlift_ir::analysis::ownentry::{OwnPlan, OwnPlans};
use guardlift_ir::{FuncId, Function, Inst, InstKind, Value};
use std::collections::{HashMap, HashSet};

/// The instructions of `f` whose lifetime check or watch its entry variant
/// `plan` (its own variant, with `own`) drops, by identity.
pub(super) fn entry_dropped(
    f: &Function,
    plan: Option<&EntryPlan>,
    own: Option<&OwnPlan>,
) -> HashSet<*const Inst> {
    let mut out = HashSet::new();
    if plan.is_none() && own.is_none() {
        return out;
    }
    for (b, bd) in f.blocks.iter().enumerate() {
        for (i, inst) in bd.insts.iter().enumerate() {
            let at = (b as u32, i as u32);
            if plan.is_some_and(|p| p.drops(f, at, inst))
                || own.is_some_and(|o| o.covers(f, at, inst))
            {
                out.insert(inst as *const Inst);
            }
        }
    }
    out
}

/// `life` of a value whose own-values test passed with its demand
/// (`ownvalues`, "Own variants"): live, watched and its own values.
pub(super) const LIFE_OWN: i64 = 3;

/// The vouching variables of one function being lowered.
#[derive(Default)]
pub(super) struct Vouch {
    /// By tracked value: its `life` and `watch` variables.
    vars: HashMap<Value, (Variable, Variable)>,
    /// The same pairs in the order the values were tracked: what resets
    /// them goes over these, so the code (its constants' value numbers
    /// included) does not depend on the map's order.
    order: Vec<(Variable, Variable)>,
}

impl Lowerer<'_> {
    /// Decides which IR functions get an entry variant (all engines: the
    /// variant needs no shadow).
    pub fn plan_entry_variants(&mut self) {
        // Later pieces get no variant: no plan is computed for them.
        self.entries = entry_plans_except(self.ir, self.host, &self.later_pieces);
        self.entry_funcs = vec![None; self.entries.len()];
        self.drop_later_pieces_variants();
        self.own_funcs = vec![None; self.entries.len()];
        if self.own_caps() {
            // Later pieces get no variant.
            self.owns = OwnPlans::of_except(self.ir, self.host, &self.later_pieces);
        }
    }

    /// The own variant of IR function `g`, if it has one.
    pub(crate) fn own_plan(&self, g: FuncId) -> Option<&OwnPlan> {
        self.owns.plan(g.0 as usize)
    }

    /// Do own-values tests of value `v` of IR function `f` test its
    /// demand ([`OwnPlans`]), and which?
    pub(crate) fn own_demand(&self, f: usize, v: Value) -> Option<u32> {
        self.owns.demand_of(f, v)
    }

    /// Do functions keep which values passed their own-values tests, to
    /// call own variants (`ownvalues`, "Own variants")? With own-values
    /// tests of this runtime's marks.
    pub(crate) fn own_caps(&self) -> bool {
        (self.shadow)
            .filter(|sh| sh.own_values)
            .and_then(|sh| guardlift_runtime::shadow::own_values_mark(sh.watch_id?))
            .is_some()
    }

    /// The entry variant of IR function `g`, if it has one.
    pub(crate) fn entry_plan(&self, g: FuncId) -> Option<&EntryPlan> {
        self.entries.get(g.0 as usize)?.as_ref()
    }
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// At the function's entry (the builder there): a pair of variables per
    /// tracked value, 0 — or 1 for the params this entry variant was
    /// entered vouched for.
    pub(super) fn plan_vouching(&mut self) {
        let mut tracked: Vec<Value> = Vec::new();
        let calls =
            (self.f.blocks.iter().flat_map(|b| &b.insts)).filter_map(|i| i.kind.direct_call());
        // The values whose own-values pass this function can know: those
        // it tests (attribute ops with a lifetime check), and, in its own
        // variant, the params it starts with.
        let me = FuncId(self.id as u32);
        let testable = |v: &Value| {
            self.lw.own_demand(self.id, *v).is_some()
                && ((self.f.blocks.iter().flat_map(|b| &b.insts)).any(|i| {
                    matches!(i.kind, InstKind::LoadAttr { obj, .. } | InstKind::StoreAttr { obj, .. } if obj == *v)
                }) || (self.lw.own_plan(me)).is_some_and(|o| {
                    o.params.iter().any(|&k| self.f.params.get(k) == Some(v))
                }))
        };
        for (g, args) in calls {
            let entry = self.lw.entry_plan(g).map(EntryPlan::params);
            let own = (self
                .lw
                .own_plan(g)
                .map(|o| o.params.clone())
                .into_iter()
                .flatten())
            .filter(|&k| args.get(k).is_some_and(testable));
            let ks = entry.into_iter().flatten().chain(own);
            for a in ks.filter_map(|k| args.get(k)) {
                if !tracked.contains(a) {
                    tracked.push(*a);
                }
            }
        }
        for v in tracked {
            let pair = (self.b.declare_var(types::I8), self.b.declare_var(types::I8));
            self.vouch.vars.insert(v, pair);
            self.vouch.order.push(pair);
            let k = self.f.params.iter().position(|&p| p == v);
            let own = |list: &[usize]| k.is_some_and(|k| list.contains(&k));
            let (mut life, watch) = match &self.entry {
                Some(e) => (own(&e.life) as i64, own(&e.watch)),
                None => (0, false),
            };
            // An own variant's params passed their callers' own-values
            // tests with their demands: live, watched, their own values.
            let passed = (self.own_plan.as_ref()).is_some_and(|o| own(&o.params));
            if passed {
                life = LIFE_OWN;
            }
            let watch = watch || passed;
            let l = self.iconst(types::I8, life);
            self.b.def_var(pair.0, l);
            let w = self.iconst(types::I8, watch as i64);
            self.b.def_var(pair.1, w);
        }
    }

    /// Both variables of every tracked value back to 0 (after a call).
    pub(super) fn vouch_reset_all(&mut self) {
        let vars = self.vouch.order.clone();
        for (l, w) in vars {
            let z = self.iconst(types::I8, 0);
            self.b.def_var(l, z);
            self.b.def_var(w, z);
        }
    }

    /// `v` is defined (again): what vouched for its old object is gone.
    pub(super) fn vouch_reset(&mut self, v: Value) {
        if let Some(&(l, w)) = self.vouch.vars.get(&v) {
            let z = self.iconst(types::I8, 0);
            self.b.def_var(l, z);
            self.b.def_var(w, z);
        }
    }

    /// The object op being lowered passed its lifetime check here (and,
    /// `watched`, the `guard.watch` fused with it ran).
    pub(super) fn vouch_live(&mut self, watched: bool) {
        let Some(o) = self.inst_at().and_then(|i| i.kind.dict_obj()) else {
            return;
        };
        if let Some(&(l, w)) = self.vouch.vars.get(&o) {
            let one = self.iconst(types::I8, 1);
            self.b.def_var(l, one);
            if watched {
                self.b.def_var(w, one);
            }
        }
    }

    /// The `guard.watch` of `o` being lowered ran (it is not fused with
    /// the next instruction's lifetime check, which vouches for both).
    pub(super) fn vouch_watched(&mut self) {
        let Some(o) = self.inst_at().and_then(|i| i.kind.dict_obj()) else {
            return;
        };
        if let Some(&(_, w)) = self.vouch.vars.get(&o) {
            let one = self.iconst(types::I8, 1);
            self.b.def_var(w, one);
        }
    }

    /// The IR instruction being lowered.
    fn inst_at(&self) -> Option<&Inst> {
        let (b, i) = self.at;
        self.f.blocks.get(b as usize)?.insts.get(i as usize)
    }

    /// Does this entry variant drop the lifetime check (or, for a
    /// `guard.watch`, the watch) of `inst`, an instruction of the function
    /// (by identity: the lowering asks about instructions other than the
    /// one at `self.at` too — a group's later members, the op after a
    /// `guard.watch`, a loop's when planning its copies)?
    pub(super) fn entry_drops(&self, inst: &Inst) -> bool {
        self.entry_dropped.contains(&(inst as *const Inst))
    }

    /// A call of IR function `g` with `args` (`argv` lowered) that may run
    /// its entry variant: `None` when it has none (or this call runs a
    /// clean variant, or an argument is not tracked), else the call's
    /// result as [`Self::call_func`] returns it.
    pub(super) fn call_vouched(
        &mut self,
        g: FuncId,
        args: &[Value],
        argv: &[cl::Value],
    ) -> Result<Option<Option<cl::Value>>, JitError> {
        if self.callee_is_clean_variant(g) {
            return Ok(None);
        }
        // The entry variant, when every argument of its plan is tracked:
        // its id, the variables that must vouch, the plan's params.
        let entry = match (self.lw.entry_plan(g), self.lw.entry_funcs.get(g.0 as usize)) {
            (Some(plan), Some(&Some(id))) => {
                let mut need: Vec<Variable> = Vec::new();
                for (list, watch) in [(&plan.life, false), (&plan.watch, true)] {
                    for &k in list {
                        if let Some(&(l, w)) = args.get(k).and_then(|a| self.vouch.vars.get(a)) {
                            need.push(if watch { w } else { l });
                        }
                    }
                }
                let n = plan.life.len() + plan.watch.len();
                (need.len() == n && n > 0).then(|| (id, need, plan.params()))
            }
            _ => None,
        };
        let entry_params = entry.as_ref().map(|e| e.2.clone()).unwrap_or_default();
        let own = self.own_call(g, args, &entry_params);
        if entry.is_none() && own.is_none() {
            return Ok(None);
        }
        let checked = self
            .callee_of(g)
            .ok_or_else(|| super::func::internal(self.fname, "call to unknown function"))?;
        let all = entry.as_ref().map(|(_, need, _)| {
            let mut all = self.b.use_var(need[0]);
            for &v in &need[1..] {
                let x = self.b.use_var(v);
                all = self.b.ins().band(all, x);
            }
            all
        });
        let ret = self.lw.ir.func(g).ret.map(super::abi::cl_type);
        let (to_checked, join) = (self.b.create_block(), self.b.create_block());
        let res = ret.map(|t| self.b.append_block_param(join, t));
        let mut calls = vec![(to_checked, checked)];
        // The own variant first, when every argument of its params passed
        // an own-values test with its demand ([`LIFE_OWN`]) and the entry
        // params it does not cover are vouched for.
        if let Some((own, own_vars, covers)) = own.filter(|o| o.2 || all.is_some()) {
            let mut x = self.b.use_var(own_vars[0]);
            for &v in &own_vars[1..] {
                let y = self.b.use_var(v);
                x = self.b.ins().band(x, y);
            }
            let mut ok = self.b.ins().icmp_imm_u(IntCC::Equal, x, LIFE_OWN);
            if let (false, Some(all)) = (covers, all) {
                let live = self.b.ins().icmp_imm_u(IntCC::NotEqual, all, 0);
                ok = self.b.ins().band(ok, live);
            }
            let (to_own, not_own) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(ok, to_own, &[], not_own, &[]);
            self.b.switch_to_block(not_own);
            calls.push((to_own, own));
        }
        match (entry, all) {
            (Some((id, _, _)), Some(all)) => {
                let to_entry = self.b.create_block();
                self.b.ins().brif(all, to_entry, &[], to_checked, &[]);
                calls.push((to_entry, id));
            }
            _ => {
                self.b.ins().jump(to_checked, &[]);
            }
        }
        for (blk, id) in calls {
            self.b.switch_to_block(blk);
            let fr = self.fref(id);
            let call = self.b.ins().call(fr, argv);
            let out: Vec<BlockArg> = (self.b.inst_results(call).first().copied())
                .map(BlockArg::Value)
                .into_iter()
                .collect();
            self.b.ins().jump(join, &out);
        }
        self.b.switch_to_block(join);
        Ok(Some(res))
    }

    /// For a call of `g` with `args` whose entry plan's params are
    /// `entry_params`: `g`'s own variant, the `life` variables of the
    /// arguments of its params, and whether those params include every
    /// entry param — `None` when `g` has no own variant or an argument is
    /// not tracked.
    fn own_call(
        &self,
        g: FuncId,
        args: &[Value],
        entry_params: &[usize],
    ) -> Option<(ClFuncId, Vec<Variable>, bool)> {
        let plan = self.lw.own_plan(g)?;
        let id = (*self.lw.own_funcs.get(g.0 as usize)?)?;
        let vars = (plan.params.iter())
            .map(|&k| Some(self.vouch.vars.get(args.get(k)?)?.0))
            .collect::<Option<Vec<Variable>>>()?;
        let covers = entry_params.iter().all(|k| plan.params.contains(k));
        (!vars.is_empty()).then_some((id, vars, covers))
    }

    /// Does `v` have vouching variables?
    pub(super) fn own_tracked(&self, v: Value) -> bool {
        self.vouch.vars.contains_key(&v)
    }

    /// The attribute op being lowered passed its own-values test with its
    /// object's demand: its `life` becomes [`LIFE_OWN`], its `watch` 1.
    pub(super) fn vouch_own(&mut self) {
        let Some(o) = self.inst_at().and_then(|i| i.kind.dict_obj()) else {
            return;
        };
        if let Some(&(l, w)) = self.vouch.vars.get(&o) {
            let own = self.iconst(types::I8, LIFE_OWN);
            self.b.def_var(l, own);
            let one = self.iconst(types::I8, 1);
            self.b.def_var(w, one);
        }
    }

    /// After `inst`: when it may have written a word
    /// ([`guardlift_ir::analysis::ownentry::writes_words`]), no own-values
    /// pass holds any more (what vouches for lifetime and watch still
    /// does: `life` keeps its low bit).
    pub(super) fn own_after(&mut self, inst: &Inst) {
        if !self.lw.has_own_funcs
            || !guardlift_ir::analysis::ownentry::writes_words(self.lw.ir, inst)
        {
            return;
        }
        let vars: Vec<Variable> = self.vouch.order.iter().map(|p| p.0).collect();
        for l in vars {
            let x = self.b.use_var(l);
            let x = self.b.ins().band_imm_u(x, 1);
            self.b.def_var(l, x);
        }
    }
}
