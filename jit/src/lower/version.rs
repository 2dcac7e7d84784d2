//! Loop versioning of the object tests ([`guardlift_ir::hoist`]): the JIT
//! lowers each clean loop twice.
//!
//! - The **checked copy** is the loop as written, every check in place.
//! - The **clean copy** drops the lifetime checks and `guard.watch`es of
//!   the loop's invariant objects, and the bounds checks of its fixed
//!   attributes where it tests them (below); every other check stays.
//! - Every edge that enters the loop from outside goes to a **dispatch
//!   block** (`super::dispatch`): one shadow test per object (its `FREED_OBJ` bit clear — the
//!   lifetime check would pass without a call; its slot's watch field is
//!   this runtime's — `guard.watch` would change nothing) and a branch to
//!   the clean copy's header when all pass, to the checked copy's
//!   otherwise. Back edges stay in their copy; exits leave both for the
//!   same blocks, each exit edge through a block of its own — but the
//!   clean copy's exits enter the **clean exit twin** of a block with an
//!   exit prefix, where one was made (`super::cleanexit`).
//! - The checked copy takes the objects as params of its header, so that
//!   what it derives from them stays inside it instead of being hoisted
//!   in front of it and taking the registers of the clean copy's values.
//!
//! - A clean loop may call leaf object functions
//!   ([`guardlift_ir::hoist::leaf_object_params`]). Such a callee has a
//!   **clean variant**: a second Cranelift function compiled from the same
//!   IR function without the lifetime checks and `guard.watch`es of its
//!   object params (every other check stays), which the clean copy calls
//!   instead. The call's arguments for those params are among the loop's
//!   objects, so the dispatch block tests them like the loop's own. The
//!   variant's code is registered under its IR function's name with the
//!   same PC → IR-site map: reports, backtraces and fault chains do not
//!   tell it from the function. The checked copy calls the function.
//!
//! - Where a variant can also drop the bounds checks of params passed a
//!   loop's **fixed attributes** ([`CleanLoop::attrs`]: every clean loop
//!   calling it passes one there), the dispatch of each loop calling it,
//!   after the shadow tests, tests `Runtime::attr_fixed` for each fixed
//!   object — behind an inline cache, `FnLower::fixed_attrs_test` — and
//!   the clean copy and the variants drop those bounds checks.
//!
//! The analysis proves that nothing inside a clean loop frees or unwatches
//! anything, so a test that passes at the entry would pass at every
//! iteration: the clean copy reports, counts and recovers exactly as the
//! checked one, in every mode. The dispatch trusts only a clear shadow bit
//! and the runtime's own id, as the inline fast paths do ([`super::shadow`]);
//! anything else runs the checked copy. Object files (no shadow) and
//! runtimes without a shadow mapping lower every loop once.

use super::abi::cl_type;
use super::func::internal;
use super::FnLower;
use super::Lowerer;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, BlockArg, InstBuilder};
use cranelift_module::Module as ClModule;
use guardlift_ir::hoist::{leaf_object_params_for, CleanLoop};
use guardlift_ir::{BlockCall, Callee, CheckKind, Checks, FuncId, Inst, InstKind, Value};

/// What a clean copy or variant drops, by object (param index or value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drops<T> {
    /// The objects whose lifetime checks it drops.
    pub life: Vec<T>,
    /// The objects whose `guard.watch`es it drops.
    pub watch: Vec<T>,
    /// The objects whose bounds checks it drops (each clean loop that
    /// calls the variant tests them at its entry: `CleanLoop::attrs`).
    pub bounds: Vec<T>,
}

/// What a clean variant drops, by param index.
pub(super) type VariantDrops = Drops<usize>;

impl Lowerer<'_> {
    /// Decides which IR functions get a clean variant: the leaf callees of
    /// the module's clean loops that have a lifetime check or a
    /// `guard.watch` on an object param to drop (JIT code whose shadow can
    /// test watches only: otherwise no loop is versioned).
    pub fn plan_clean_variants(&mut self) {
        let n = self.ir.functions.len();
        self.variants = vec![None; n];
        self.clean_funcs = vec![None; n];
        if self.shadow.is_none_or(|s| s.watch_id.is_none()) {
            return;
        }
        // (A later piece is only called by its previous piece's exit.)
        let later = self.later_pieces.clone();
        let calls = |f: &&guardlift_ir::Function| {
            (f.blocks.iter().flat_map(|b| &b.insts))
                .filter_map(|i| i.kind.direct_call())
                .any(|(g, _)| !later.get(g.0 as usize).copied().unwrap_or(false))
        };
        // Per callee, the params whose argument is a fixed-attribute
        // object of every clean loop that calls it (`None`: no call seen).
        let mut fixed: Vec<Option<Vec<usize>>> = vec![None; n];
        // Only a function that calls an IR function needs the analysis.
        for (fi, f) in self
            .ir
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| calls(f))
        {
            let loops = self.analyses[fi].clean_loops(self.ir, self.host);
            for lp in loops.iter() {
                // The clean copy's calls: those of the hot blocks.
                for &b in &lp.hot {
                    for inst in &f.blocks[b as usize].insts {
                        if let InstKind::Call {
                            callee: Callee::Func(g),
                            args,
                        } = &inst.kind
                        {
                            let gi = g.0 as usize;
                            if self.variants[gi].is_none() {
                                self.variants[gi] = self.drops_of(*g);
                            }
                            let here: Vec<usize> = (0..args.len())
                                .filter(|&i| lp.attrs.iter().any(|&(o, _)| o == args[i]))
                                .collect();
                            fixed[gi] = Some(match fixed[gi].take() {
                                None => here,
                                Some(prev) => {
                                    prev.into_iter().filter(|i| here.contains(i)).collect()
                                }
                            });
                        }
                    }
                }
            }
        }
        // Only callees with a variant are looked at (another pass over a
        // function's instructions).
        for (gi, fx) in fixed.into_iter().enumerate() {
            let Some(fx) = fx.filter(|_| self.variants[gi].is_some()) else {
                continue;
            };
            let bounded = self.bounds_params(FuncId(gi as u32));
            if let Some(d) = self.variants[gi].as_mut() {
                d.bounds = fx.into_iter().filter(|i| bounded.contains(i)).collect();
            }
        }
    }

    /// The checks the lowering of `inst` starts from: its site's, as far
    /// as they apply to its opcode.
    pub(super) fn site_checks(&self, inst: &Inst) -> Checks {
        (inst.site.and_then(|id| self.ir.site(id))).map_or(Checks::EMPTY, |s| {
            s.checks.intersect(self.ir.applicable_checks(&inst.kind))
        })
    }

    /// The params of IR function `g` that an attribute op with a bounds
    /// check takes as its object.
    fn bounds_params(&self, g: FuncId) -> Vec<usize> {
        let f = self.ir.func(g);
        let mut out = Vec::new();
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            let (InstKind::LoadAttr { obj, .. } | InstKind::StoreAttr { obj, .. }) = inst.kind
            else {
                continue;
            };
            if !self.site_checks(inst).contains(CheckKind::Bounds) {
                continue;
            }
            if let Some(i) = f.params.iter().position(|&p| p == obj) {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        out
    }

    /// What the clean variant of leaf function `g` would drop; `None` when
    /// nothing (or `g` is no leaf).
    fn drops_of(&self, g: FuncId) -> Option<VariantDrops> {
        let f = self.ir.func(g);
        let (mut life, mut watch) = (Vec::new(), Vec::new());
        for i in leaf_object_params_for(f, self.host)? {
            let p = f.params[i];
            for inst in f.blocks.iter().flat_map(|b| &b.insts) {
                if inst.kind.dict_obj() != Some(p) {
                    continue;
                }
                let list = match inst.kind {
                    InstKind::Watch { .. } => &mut watch,
                    _ => {
                        if !self.site_checks(inst).contains(CheckKind::Lifetime) {
                            continue;
                        }
                        &mut life
                    }
                };
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
        (!life.is_empty() || !watch.is_empty()).then_some(Drops {
            life,
            watch,
            bounds: Vec::new(),
        })
    }

    /// What the clean variant of IR function `g` drops (`None`: it has
    /// none).
    pub fn variant_drops(&self, g: FuncId) -> Option<&VariantDrops> {
        self.variants.get(g.0 as usize)?.as_ref()
    }

    /// [`Self::variant_drops`] as the param values of `g`.
    pub(super) fn variant_values(&self, g: FuncId) -> Option<Drops<Value>> {
        let f = self.ir.func(g);
        let d = self.variant_drops(g)?;
        let vals = |ix: &[usize]| ix.iter().map(|&i| f.params[i]).collect();
        Some(Drops {
            life: vals(&d.life),
            watch: vals(&d.watch),
            bounds: vals(&d.bounds),
        })
    }
}

/// A branch destination as lowered ([`FnLower::edge`]).
pub(super) struct Edge {
    /// The block to branch to.
    pub(super) to: cl::Block,
    /// The arguments of that branch.
    pub(super) args: Vec<BlockArg>,
    /// When `to` is an exit block of its own: it and the real target.
    pub(super) exit: Option<(cl::Block, cl::Block)>,
}

/// One versioned loop of the function being lowered.
pub(super) struct Versioned {
    pub(super) lp: CleanLoop,
    /// Objects whose lifetime checks the clean copy drops.
    pub(super) life: Vec<Value>,
    /// Objects whose `guard.watch` the clean copy drops.
    pub(super) watch: Vec<Value>,
    /// Objects whose bounds checks the clean copy and the variants it
    /// calls drop, with the highest attribute index used on each: the
    /// dispatch tests each with `gl_attr_fixed` (empty: no such test).
    pub(super) attrs: Vec<(Value, u32)>,
    /// Where entries from outside go.
    pub(super) dispatch: cl::Block,
    /// The objects the dispatch tests (`life` and `watch`) or fixes
    /// (`attrs`), once each ...
    pub(super) objs: Vec<Value>,
    /// ... their values in the checked copy: params of its header ...
    alias: Vec<cl::Value>,
    /// ... in the clean copy: params of its header ...
    pub(super) clean_alias: Vec<cl::Value>,
    /// ... and an opaque zero, the clean header's last param (0 from the
    /// dispatch, itself on back edges): the constant arguments of the
    /// clean copy's runtime calls are built on it (`FnLower::opaque_args`).
    pub(super) clean_zero: Option<cl::Value>,
    /// ... and, after it, the word of each object of `attrs` (loaded in
    /// the block entering the clean copy, passed on by its back edges):
    /// the clean copy's attribute ops on a fixed object address its
    /// values array from it ([`FnLower::fixed_word`]).
    pub(super) words: Vec<(Value, cl::Value)>,
    /// ... and outside the loop (set when its header is lowered).
    orig: Vec<cl::Value>,
    /// The clean copy's block of each loop block.
    pub(super) clean: Vec<(u32, cl::Block)>,
    /// The clean exit twins: each exit prefix block the clean copy's
    /// exits go to instead of the block itself, its twin and the prefix's
    /// length ([`CleanLoop::exits`]).
    pub(super) exits: Vec<(u32, cl::Block, u32)>,
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// Decides which loops to version (JIT code with a shadow only) and
    /// creates their dispatch and clean blocks.
    pub(super) fn plan_versions(&mut self) {
        if self.lw.shadow.is_none() {
            return;
        }
        let can_watch = self.lw.shadow.is_some_and(|s| s.watch_id.is_some());
        let loops = self.lw.analyses[self.id].clean_loops(self.lw.ir, self.lw.host);
        for lp in loops.iter() {
            let (mut life, mut watch) = (Vec::new(), Vec::new());
            let mut hoist_bounds = false;
            for &b in &lp.hot {
                for inst in &self.f.blocks[b as usize].insts {
                    hoist_bounds |= self.variant_objects(inst, &mut life, &mut watch);
                    hoist_bounds |= self.fixed_bounds_test(inst, lp);
                    let Some(o) = inst.kind.dict_obj().filter(|o| lp.objects.contains(o)) else {
                        continue;
                    };
                    let list = match inst.kind {
                        InstKind::Watch { .. } if can_watch => &mut watch,
                        InstKind::Watch { .. } => continue,
                        _ if self.checks_of(inst).contains(CheckKind::Lifetime) => &mut life,
                        _ => continue,
                    };
                    if !list.contains(&o) {
                        list.push(o);
                    }
                }
            }
            // Versioned when the clean copy drops a `guard.watch` or a
            // bounds test (issue 33: on AMD EPYC the store loop's inline
            // capacity test cost 1.5x plain, `--checks lifetime,bounds`
            // alone 1.48x); a lifetime test alone is a load and a bit test
            // off the critical path (measured on an Intel Xeon: no gain).
            if watch.is_empty() && !hoist_bounds {
                continue;
            }
            let header = lp.header;
            let Some(checked) = self.blocks[header as usize] else {
                continue;
            };
            let dispatch = self.block_like(header);
            // The bounds tests are made once per entry where the clean copy
            // or a callee's variant drops some (the entry test is an inline
            // cache hit but for the first entry after a free or dictify).
            let attrs = match hoist_bounds {
                true => lp.attrs.clone(),
                false => Vec::new(),
            };
            // The objects the copies take as their headers' params: those
            // the dispatch tests and those whose attributes it fixes.
            let mut objs = life.clone();
            for o in watch.iter().chain(attrs.iter().map(|(o, _)| o)) {
                if !objs.contains(o) {
                    objs.push(*o);
                }
            }
            let alias = self.object_params(checked, &objs);
            // The clean copy: the hot blocks (a branch to a cold block
            // goes to the checked copy's: a side exit).
            let clean: Vec<(u32, cl::Block)> =
                lp.hot.iter().map(|&b| (b, self.block_like(b))).collect();
            // The clean copy's header takes the objects as params too
            // (its back edges pass them as the checked copy's do): each
            // is then a value of the loop alone, which regalloc2 keeps in
            // a register there, where the one value of the whole function
            // lived in a frame slot (the method loop's `self`, reloaded
            // before each attribute op: docs/PERFORMANCE.md).
            let (clean_alias, clean_zero) = match clean.iter().find(|&&(b, _)| b == header) {
                Some(&(_, ch)) => (
                    self.object_params(ch, &objs),
                    Some(self.b.append_block_param(ch, cl::types::I64)),
                ),
                None => (Vec::new(), None),
            };
            // The fixed objects' words: `hoist`'s second claim keeps each
            // the values word the entry tested for the whole activation
            // (the interpreter verifies it: `check_fixed_word`).
            let words = match clean.iter().find(|&&(b, _)| b == header) {
                Some(&(_, ch)) => (attrs.iter())
                    .map(|&(o, _)| (o, self.b.append_block_param(ch, cl::types::I64)))
                    .collect(),
                None => Vec::new(),
            };
            self.version_of_header.insert(header, self.versions.len());
            for &b in &lp.blocks {
                self.version_of_block.insert(b, self.versions.len());
            }
            self.versions.push(Versioned {
                lp: lp.clone(),
                life,
                watch,
                attrs,
                dispatch,
                objs,
                alias,
                clean_alias,
                clean_zero,
                words,
                orig: Vec::new(),
                clean,
                exits: Vec::new(),
            });
        }
        self.plan_exit_twins();
    }

    /// Lowers IR block `bi` into Cranelift block `cb` (a copy's or a
    /// twin's), its params those of `cb`.
    pub(super) fn lower_block_at(&mut self, cb: cl::Block, bi: u32) -> Result<(), JitError> {
        self.b.switch_to_block(cb);
        let params = self.b.block_params(cb).to_vec();
        for (&p, v) in self.f.blocks[bi as usize].params.iter().zip(params) {
            self.vals[p.0 as usize] = Some(v);
        }
        self.lower_block(bi)
    }

    /// A param of header `h` (either copy's) for each object of `objs`.
    fn object_params(&mut self, h: cl::Block, objs: &[Value]) -> Vec<cl::Value> {
        (objs.iter())
            .map(|&o| self.b.append_block_param(h, cl_type(self.f.ty(o))))
            .collect()
    }

    /// For a call in a clean loop of a function with a clean variant: adds
    /// the arguments of the params whose tests the variant drops to `life`
    /// and `watch` (the dispatch tests them). True when the variant drops
    /// bounds checks (the dispatch tests the loop's fixed attributes).
    fn variant_objects(&self, inst: &Inst, life: &mut Vec<Value>, watch: &mut Vec<Value>) -> bool {
        let InstKind::Call {
            callee: Callee::Func(g),
            args,
        } = &inst.kind
        else {
            return false;
        };
        let Some(d) = self.lw.variant_drops(*g) else {
            return false;
        };
        for (ix, list) in [(&d.life, &mut *life), (&d.watch, &mut *watch)] {
            for a in ix.iter().filter_map(|&i| args.get(i)) {
                if !list.contains(a) {
                    list.push(*a);
                }
            }
        }
        !d.bounds.is_empty()
    }

    /// Is `inst` an attribute op of loop `lp` with a bounds test on one of
    /// its fixed attributes (which the clean copy drops, the entry testing
    /// them once)?
    fn fixed_bounds_test(&self, inst: &Inst, lp: &CleanLoop) -> bool {
        let (InstKind::LoadAttr { obj, .. } | InstKind::StoreAttr { obj, .. }) = inst.kind else {
            return false;
        };
        let c = self.checks_of(inst);
        lp.attrs.iter().any(|&(o, _)| o == obj)
            && (c.contains(CheckKind::Bounds) || c.contains(CheckKind::Dict))
    }

    /// Does a call of IR function `g` here run its clean variant?
    pub(super) fn callee_is_clean_variant(&self, g: FuncId) -> bool {
        self.in_clean.is_some()
            && self
                .lw
                .clean_funcs
                .get(g.0 as usize)
                .is_some_and(|c| c.is_some())
    }

    /// The Cranelift function a call of IR function `g` calls: its clean
    /// variant in a clean copy, when it has one.
    pub(super) fn callee_of(&self, g: FuncId) -> Option<cranelift_module::FuncId> {
        let clean = self
            .in_clean
            .and_then(|_| self.lw.clean_funcs.get(g.0 as usize)?.as_ref());
        clean.or_else(|| self.lw.funcs.get(g.0 as usize)).copied()
    }

    /// A new Cranelift block with the params of IR block `b`.
    pub(super) fn block_like(&mut self, b: u32) -> cl::Block {
        let blk = self.b.create_block();
        for &p in &self.f.blocks[b as usize].params {
            let t = cl_type(self.f.ty(p));
            self.b.append_block_param(blk, t);
        }
        blk
    }

    /// Where a branch of the block being lowered to IR block `b` goes: the
    /// dispatch block when it enters a versioned loop from outside.
    pub(super) fn entry_redirect(&self, b: u32) -> Option<cl::Block> {
        let &k = self.version_of_header.get(&b)?;
        (self.version_of_block.get(&self.at.0) != Some(&k)).then(|| self.versions[k].dispatch)
    }

    /// `c` (the checks of `inst`) less what the clean copy, clean variant
    /// or clean exit twin's prefix being lowered drops: the lifetime check
    /// of an invariant object (of an object param), and its bounds check
    /// where the loop's entry tested its attributes — with, for an
    /// attribute op, its dict check (the word is the values word the
    /// entry tested, and nothing in the loop writes it).
    pub(super) fn clean_copy_checks(&self, inst: &Inst, c: Checks) -> Checks {
        let Some(o) = inst.kind.dict_obj() else {
            return c;
        };
        let (life, bounds) = self.exit_prefix_drops(inst, o).unwrap_or_else(|| {
            let copy = self.in_clean.map(|k| &self.versions[k]);
            let life = copy.is_some_and(|v| v.life.contains(&o))
                || self.variant.as_ref().is_some_and(|d| d.life.contains(&o))
                || self.entry_drops(inst);
            let bounds = copy.is_some_and(|v| v.attrs.iter().any(|&(x, _)| x == o))
                || self.variant.as_ref().is_some_and(|d| d.bounds.contains(&o));
            (life, bounds)
        });
        // A fixed attribute's word stays the values word the entry tested
        // (`hoist`'s second claim): its tag test passes too.
        let dict = bounds
            && matches!(
                inst.kind,
                guardlift_ir::InstKind::LoadAttr { .. } | guardlift_ir::InstKind::StoreAttr { .. }
            );
        c.iter()
            .filter(|&k| {
                !(life && k == CheckKind::Lifetime
                    || bounds && k == CheckKind::Bounds
                    || dict && k == CheckKind::Dict)
            })
            .collect()
    }

    /// In a clean copy, the word of fixed object `obj` (its header's
    /// param): the values word the entry tested, which no instruction of
    /// the loop writes.
    pub(super) fn fixed_word(&self, obj: Value) -> Option<cl::Value> {
        let k = self.in_clean?;
        (self.versions[k].words.iter())
            .find(|&&(o, _)| o == obj)
            .map(|&(_, w)| w)
    }

    /// Does the clean copy or clean variant being lowered drop
    /// `guard.watch %o`?
    pub(super) fn clean_copy_drops_watch(&self, o: Value) -> bool {
        let (b, i) = self.at;
        let here = self
            .f
            .blocks
            .get(b as usize)
            .and_then(|bd| bd.insts.get(i as usize));
        here.is_some_and(|inst| inst.kind.dict_obj() == Some(o) && self.entry_drops(inst))
            || self
                .in_clean
                .is_some_and(|k| self.versions[k].watch.contains(&o))
            || self.variant.as_ref().is_some_and(|d| d.watch.contains(&o))
            || self
                .exit_prefix_loop()
                .is_some_and(|v| v.watch.contains(&o))
    }

    /// Before lowering IR block `bi` of the checked lowering (`None`: after
    /// it): inside a versioned loop its objects are the params of the
    /// checked header, outside they are the values from before the loop.
    /// The checked copy thus shares no object value with the clean one,
    /// and what it derives from them (the shadow addresses, the watch
    /// test) stays in its body: Cranelift hoists loop-invariant values in
    /// front of a loop, where they would live across its calls, take the
    /// callee-saved registers and have regalloc2 spill the invariants of
    /// the clean copy.
    ///
    /// A block a side exit reaches ([`CleanLoop::side`]) is entered from
    /// the clean copy too, where the checked header's params are not
    /// defined: it uses the values from before the loop.
    pub(super) fn alias_objects(&mut self, bi: Option<u32>) -> Result<(), JitError> {
        let inside = bi.and_then(|b| {
            let k = *self.version_of_block.get(&b)?;
            (!self.versions[k].lp.is_side(b)).then_some(k)
        });
        if inside == self.aliased {
            return Ok(());
        }
        if let Some(k) = self.aliased.take() {
            let v = &self.versions[k];
            for (&o, &x) in v.objs.iter().zip(&v.orig) {
                self.vals[o.0 as usize] = Some(x);
            }
        }
        if let Some(k) = inside {
            // The header comes first: the values from before the loop.
            if self.versions[k].orig.len() < self.versions[k].objs.len() {
                let orig = (self.versions[k].objs.clone().into_iter())
                    .map(|o| self.val(o))
                    .collect::<Result<_, _>>()?;
                self.versions[k].orig = orig;
            }
            let v = &self.versions[k];
            for (&o, &x) in v.objs.iter().zip(&v.alias) {
                self.vals[o.0 as usize] = Some(x);
            }
            self.aliased = Some(k);
        }
        Ok(())
    }

    /// A branch's destination `dest` as the block being lowered branches
    /// to it: its target and arguments, plus, on a back edge of a checked
    /// copy, its objects; through an exit block of its own when the branch
    /// leaves a versioned loop (either copy). Both copies exit to the same
    /// blocks, so without it each exit edge is a critical one, and
    /// Cranelift places the block that splits it right after the branch:
    /// between the loop's header and its body, which then costs a taken
    /// jump per iteration.
    pub(super) fn edge(&mut self, dest: &BlockCall) -> Result<Edge, JitError> {
        let b = dest.block.0;
        let t = self.target(dest.block)?;
        if self.forward[b as usize] {
            // The one edge into `b`: its params are the arguments.
            for (&p, &a) in self.f.blocks[b as usize].params.iter().zip(&dest.args) {
                self.vals[p.0 as usize] = Some(self.val(a)?);
            }
            return Ok(Edge {
                to: t,
                args: Vec::new(),
                exit: None,
            });
        }
        let mut args = self.block_args(&dest.args)?;
        args.extend(self.alias_args(b, t)?);
        let mut exit = (self.version_of_block.get(&self.at.0))
            .is_some_and(|&k| !self.versions[k].lp.contains(b))
            .then(|| (self.block_like(b), t));
        if self.enters_ranged_loop(b) {
            // The loop ranges' test runs on this edge only (`looprange`).
            let x = match exit {
                Some((x, _)) => x,
                None => self.block_like(b),
            };
            exit = Some((x, t));
            self.ranges.entries.push((x, b));
        }
        Ok(Edge {
            to: exit.map_or(t, |(x, _)| x),
            args,
            exit,
        })
    }

    /// The extra arguments of a branch to IR block `b` (`t`: its lowered
    /// target): on a back edge of either copy, its objects.
    fn alias_args(&mut self, b: u32, t: cl::Block) -> Result<Vec<BlockArg>, JitError> {
        let Some(&k) = self.version_of_header.get(&b) else {
            return Ok(Vec::new());
        };
        if self.in_clean.is_some_and(|c| c != k) || t == self.versions[k].dispatch {
            return Ok(Vec::new());
        }
        // Not the param itself: Cranelift drops a param that is only ever
        // passed itself or one other value (`remove_constant_phis`, before
        // its optimizer folds the `band` with -1 away). The objects as the
        // block being lowered has them: the header's params, or the
        // values from before the loop in a block a side exit reaches.
        let objs = self.versions[k].objs.clone();
        let mut vals: Vec<cl::Value> = objs
            .iter()
            .map(|&o| self.val(o))
            .collect::<Result<_, _>>()?;
        // The clean copy's back edges pass its opaque zero on.
        if let Some(z) = self.in_clean.and(self.versions[k].clean_zero) {
            vals.push(z);
            vals.extend(self.versions[k].words.iter().map(|&(_, w)| w));
        }
        Ok(vals
            .into_iter()
            .map(|a| BlockArg::Value(self.b.ins().band_imm_s(a, -1)))
            .collect())
    }

    /// After the branch: fills each exit block of [`Self::edge`] with a
    /// jump to its target, passing its params on. Leaves the builder in
    /// the last one filled.
    pub(super) fn fill_exit_edges(
        &mut self,
        exits: impl IntoIterator<Item = Option<(cl::Block, cl::Block)>>,
    ) -> Result<(), JitError> {
        for (x, t) in exits.into_iter().flatten() {
            self.b.switch_to_block(x);
            let args: Vec<BlockArg> = (self.b.block_params(x).iter())
                .map(|&v| BlockArg::Value(v))
                .collect();
            if let Some(&(_, h)) = self.ranges.entries.iter().find(|(e, _)| *e == x) {
                self.test_loop_ranges(x, h)?;
            }
            self.b.ins().jump(t, &args);
        }
        Ok(())
    }

    /// After the checked lowering: every versioned loop's dispatch block
    /// and clean copy (`rpo`: the order blocks are lowered in).
    pub(super) fn lower_versions(&mut self, rpo: &[u32]) -> Result<(), JitError> {
        for k in 0..self.versions.len() {
            self.fill_dispatch(k)?;
            let saved: Vec<(u32, Option<cl::Block>)> = self.versions[k]
                .clean
                .iter()
                .map(|&(b, _)| (b, self.blocks[b as usize]))
                .collect();
            // The clean copy's exits go to the exit twins.
            let exits: Vec<(u32, Option<cl::Block>)> = (self.versions[k].exits.iter())
                .map(|&(e, _, _)| (e, self.blocks[e as usize]))
                .collect();
            for i in 0..self.versions[k].clean.len() {
                let (b, cb) = self.versions[k].clean[i];
                self.blocks[b as usize] = Some(cb);
            }
            for i in 0..self.versions[k].exits.len() {
                let (e, twin, _) = self.versions[k].exits[i];
                self.blocks[e as usize] = Some(twin);
            }
            self.in_clean = Some(k);
            self.opaque_zero = self.versions[k].clean_zero;
            // Inside the clean copy the objects are its header's params.
            let objs = self.versions[k].objs.clone();
            let before: Vec<Option<cl::Value>> =
                objs.iter().map(|&o| self.vals[o.0 as usize]).collect();
            for (&o, &x) in objs.iter().zip(&self.versions[k].clean_alias) {
                self.vals[o.0 as usize] = Some(x);
            }
            let body: Vec<u32> = (rpo.iter().copied())
                .filter(|&b| self.versions[k].lp.is_hot(b))
                .collect();
            for bi in body {
                let cb = self.blocks[bi as usize]
                    .ok_or_else(|| internal(self.fname, "loop block not lowered"))?;
                self.lower_block_at(cb, bi)?;
            }
            self.in_clean = None;
            for (b, blk) in saved.into_iter().chain(exits) {
                self.blocks[b as usize] = blk;
            }
            // The exit twins see the objects and the opaque zero as the
            // clean copy does.
            self.lower_exit_twins(k)?;
            self.opaque_zero = None;
            for (&o, x) in objs.iter().zip(before) {
                self.vals[o.0 as usize] = x;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests;
