//! Loops whose object tests can be checked once per entry: an IR analysis
//! for loop versioning (the JIT's clean loop copies, docs/CODEGEN.md).
//!
//! A **clean loop** is an innermost natural loop (the blocks that reach a
//! back edge `t → h` without passing `h`, where `h` dominates `t`) whose
//! **hot part** — the blocks the header reaches without entering a cold
//! block — runs nothing that could free, and whose cold blocks can be left
//! to the checked copy:
//! - a block that holds a raw `store` without the `clobber` check
//!   ([`store_keeps_claims`]), an adstack op, a `call_indirect` or
//!   a `call` (`@obj_free`, an IR function and every extern are calls)
//!   other than of a **leaf object function** with loop-invariant objects
//!   is **barred**. Leaf object functions are IR functions with no `call`,
//!   no raw `store` and no adstack op ([`leaf_object_params`]; their own
//!   loops are fine), which can no more free or run host code than the
//!   loop's own instructions. The object ops of such a callee whose
//!   object is a param (of any type) take their object from the call's
//!   argument: each such argument must be defined outside the loop, and is
//!   one of the loop's invariant objects (the JIT's clean copy calls the
//!   callee's **clean variant**, compiled without those objects' tests);
//! - the header is not barred, and a back edge leaves a hot block. The
//!   barred blocks a hot block branches to are the loop's **cold blocks**
//!   ([`CleanLoop::cold`]): the clean copy leaves there for the checked
//!   copy's block (a **side exit**, issue 33: one host call on a cold
//!   branch no longer makes the whole loop checked) and control stays in
//!   the checked copy until it leaves the loop; the next entry tests
//!   again. Every block a side exit reaches before the header
//!   ([`CleanLoop::side`]) uses only values it defines and values from
//!   outside the loop, so that the checked copy's block is valid whichever
//!   copy branched to it;
//! - the loop does not start at the entry block, holds at most
//!   [`MAX_BLOCKS`] blocks, and defines no value used outside it (its
//!   results leave it only as branch arguments), so a second copy of its
//!   blocks needs no new merges;
//! - its hot part touches at least one **loop-invariant object**: a
//!   `guard.watch`, `load_attr`, `store_attr` or `dict_slot.*` whose
//!   object is defined outside the loop, directly or in a leaf callee
//!   through a param.
//!
//! The claim: **no instruction of a clean loop's hot part changes what
//! the lifetime check or `guard.watch` of an object sees.** Only freeing changes it (a
//! free takes the object's slot off the watch list and puts the object in
//! quarantine, `Runtime::unwatch_epoch` counts both), and the only ways to
//! free are `@obj_free`, the host (through an extern or an IR function
//! that calls one) and the embedding API — each a call. The other
//! instructions a clean loop may hold call the runtime only for its slow
//! paths (`load_attr_slow`, `store_attr_slow`, the dict write record) and
//! for reports, none of which frees. A raw `store` cannot free either,
//! whatever its checks (only its effect on the second claim, below, keeps
//! one without `clobber` out). So when every object of the loop
//! passes its lifetime check and is watched when control enters the loop
//! at its header, every lifetime check and every `guard.watch` of those
//! objects in its hot part passes / changes nothing until control leaves
//! the hot part (the loop, or a side exit) — in every mode, and whatever the other checks report (a report never
//! frees). The JIT tests the objects once at each entry and runs a copy of
//! the loop without those tests when they pass, the checked loop when one
//! does not. The interpreter verifies the claim while it runs
//! (`Interpreter::set_verify_elision`): an instruction of a hot block
//! (a call: with everything its callee runs) that moves the unwatch epoch
//! is an internal error.
//!
//! A second claim covers the **bounds tests** ([`CleanLoop::attrs`]). When
//! the hot part and its leaf callees write object memory only through
//! `store_attr` on the loop's invariant objects (no `dict_slot.store`, no
//! `store_attr` on an object made or loaded inside the loop) and raw
//! `store`s that carry the `clobber` check, and at an
//! entry each invariant object `o` that an attribute op uses is a live
//! object of the runtime whose word is its own values array, holding (in
//! memory and in the runtime's record) more than `max(o)` attributes
//! (`Runtime::attr_fixed`), then **no bounds test of those objects in the
//! hot part or its callees fails until control leaves the hot part**. Their words and
//! capacity words stay as they were: every store of the loop writes an
//! attribute `i ≤ max(b) <` capacity of some such `b`, inside `b`'s own
//! values array, which holds no object's word or capacity word; a raw
//! `store` (the list store of a method JIT's fill loop) writes no
//! watched slot and no watched capacity word (it is skipped in every
//! mode, spec §6) — and each such `o` is watched, slot and capacity word:
//! `attr_fixed` holds only for an object the model heap made, which
//! watches both from `obj_new` until the free (the heap's
//! `record_values`); the host's slow paths run only for words that are not values-tagged (only
//! objects made or loaded inside the loop, whose `load_attr_slow` writes
//! nothing); nothing frees (the first claim). So each such `o`'s word is
//! the same at every instruction of the activation (the JIT's clean copy
//! addresses the values array from the word the entry tested, without
//! loading it again; the interpreter checks the word against the
//! entry's). The JIT makes those tests
//! once per entry instead (one runtime call per object) where a callee's
//! clean variant can drop them; the interpreter verifies the claim while
//! it runs (per activation, which a side exit ends like an exit). Another thread writing the loop's objects while it runs is
//! outside both claims, as it is for the checks of uninstrumented code.
//!
//! **Clean exits** ([`CleanLoop::exits`]). Both claims outlive the hot
//! part by what runs next: when control leaves the hot part by an exit
//! edge (not a side exit) into a block whose leading instructions free
//! nothing, call nothing and write no memory ([`keeps_exit_claims`]:
//! loads, arithmetic, `load_attr`, `dict_slot.load`, `guard.watch`), the
//! lifetime checks and `guard.watch`es of the loop's invariant objects in
//! that prefix pass / change nothing, and so do the bounds tests of its
//! fixed attributes at indices up to `max(o)` — the state at the last
//! instruction of the hot part, which nothing since has changed. The JIT
//! lowers such a block a second time, entered from the clean copy's
//! exits only, without those tests in the prefix (the method loop's
//! `return self.total` after its loop); the interpreter verifies the
//! prefix like the hot part (its instructions must not move the unwatch
//! epoch; a fixed attribute's bounds test there must pass).

use super::dominator_tree::DominatorTree;
use super::flowgraph::ControlFlowGraph;
use crate::inst::{Block, Callee, CheckKind, FuncId, Inst, InstKind, Value};
use crate::module::{Function, Module};
use std::collections::HashMap;

/// Largest loop (in blocks) that is versioned: the copy doubles its code.
pub const MAX_BLOCKS: usize = 64;

/// Most loop-invariant objects one loop is versioned for (each costs a
/// test at every entry).
pub const MAX_OBJECTS: usize = 8;

/// A loop whose invariant objects' lifetime and watch tests can be made
/// once at each entry (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanLoop {
    /// The loop header (the only block entered from outside).
    pub header: u32,
    /// The loop's blocks (header included), ascending.
    pub blocks: Vec<u32>,
    /// Its **hot** blocks, ascending: those the header reaches without
    /// entering a cold block (the header included). The clean copy is
    /// these blocks; the claims below are about them. All of `blocks`
    /// when `cold` is empty.
    pub hot: Vec<u32>,
    /// Its **cold** blocks, ascending: the blocks a hot block branches to
    /// that hold what a clean copy cannot run (a call of a function that
    /// is no leaf object function or of an extern, a raw `store` without
    /// the `clobber` check, an adstack op, a `call_indirect`). The clean copy leaves there for the
    /// checked copy's block — a **side exit** — and control stays in the
    /// checked copy until it leaves the loop.
    pub cold: Vec<u32>,
    /// The blocks a side exit reaches before the header (the cold blocks
    /// included), ascending. Each uses only values it defines itself or
    /// that are defined outside the loop (its params carry the rest), so
    /// the checked copy's block is valid whichever copy branched to it.
    pub side: Vec<u32>,
    /// The objects defined outside the loop that its object ops and
    /// `guard.watch`es touch, directly or as the argument of a leaf
    /// callee's object param, in first-use order.
    pub objects: Vec<Value>,
    /// The invariant objects that `load_attr`/`store_attr` use, in the
    /// loop or in a leaf callee through a param, each with the highest
    /// attribute index used on it, in first-use order: their bounds tests
    /// cannot fail in the loop when the runtime's `attr_fixed` holds for
    /// each at its entry (the module doc). Empty when the loop or a callee
    /// holds a `dict_slot.store` or a `store_attr` on another object.
    pub attrs: Vec<(Value, u32)>,
    /// Its **exit prefixes**, by block ascending: each block outside the
    /// loop that a hot block branches to, with the number of its leading
    /// instructions that keep both claims ([`keeps_exit_claims`]; at least
    /// one of them an object op or `guard.watch` on one of `objects`).
    /// Control that leaves the hot part for such a block has run nothing
    /// since the loop's entry that frees or changes an object's word or
    /// capacity, and the prefix runs nothing that does either: the claims
    /// hold there too — up to its `n`th instruction, for the bounds claim
    /// at the indices `attrs` covers (the module doc, "Clean exits").
    pub exits: Vec<(u32, u32)>,
}

impl CleanLoop {
    /// Is block `b` part of the loop?
    pub fn contains(&self, b: u32) -> bool {
        self.blocks.binary_search(&b).is_ok()
    }

    /// Is block `b` one the clean copy runs (see [`CleanLoop::hot`])?
    pub fn is_hot(&self, b: u32) -> bool {
        self.hot.binary_search(&b).is_ok()
    }

    /// Is block `b` one a side exit can reach ([`CleanLoop::side`])?
    pub fn is_side(&self, b: u32) -> bool {
        self.side.binary_search(&b).is_ok()
    }

    /// The length of block `b`'s exit prefix ([`CleanLoop::exits`]), 0
    /// when it has none.
    pub fn exit_prefix(&self, b: u32) -> u32 {
        (self.exits.binary_search_by_key(&b, |&(e, _)| e)).map_or(0, |i| self.exits[i].1)
    }
}

/// Can `k`, in the block a clean loop's hot part exits to, run under the
/// loop's claims ([`CleanLoop::exits`])? Not a call of any kind, nothing
/// that writes memory or the runtime's records (a raw `store`, a
/// `store_attr`, a `dict_slot.store`, a `stack_alloc`, an adstack op), no
/// terminator (the prefix is one block's) and, against a host with its own
/// attribute slow paths, no attribute op (its slow path runs host code).
pub fn keeps_exit_claims(k: &InstKind, host: HostModel) -> bool {
    use InstKind::*;
    match k {
        Call { .. } | StackAlloc { .. } | StoreAttr { .. } | DictSlotStore { .. } => false,
        LoadAttr { .. } => !host.host_slow_paths,
        k2 => !bars_loop(k2) && !k2.is_terminator(),
    }
}

/// The exit prefixes of a loop ([`CleanLoop::exits`]): `blocks` its
/// blocks and `hot` its hot ones (both ascending), `objects` its
/// invariant objects.
fn exit_prefixes(
    f: &Function,
    cfg: &ControlFlowGraph,
    (blocks, hot): (&[u32], &[u32]),
    objects: &[Value],
    host: HostModel,
) -> Vec<(u32, u32)> {
    let mut exits: Vec<(u32, u32)> = Vec::new();
    for &b in hot {
        for &s in cfg.succs(Block(b)) {
            let e = s.0;
            if e == 0 || blocks.binary_search(&e).is_ok() || exits.iter().any(|x| x.0 == e) {
                continue;
            }
            let insts = &f.blocks[e as usize].insts;
            let n = insts
                .iter()
                .take_while(|i| keeps_exit_claims(&i.kind, host))
                .count();
            let touches = (insts[..n].iter())
                .any(|i| i.kind.dict_obj().is_some_and(|o| objects.contains(&o)));
            if touches {
                exits.push((e, n as u32));
            }
        }
    }
    exits.sort_unstable();
    exits
}

/// What the analysis may assume of the host the code will run against.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HostModel {
    /// The host bound its own attribute slow paths
    /// (`Runtime::bind_attr_slow_paths`): a `load_attr`/`store_attr` that
    /// finds a word not values-tagged runs host code, which may free or
    /// rewrite anything, as an extern call may. Then a loop (or a leaf
    /// callee) that holds an attribute op is never clean: nothing the
    /// loop's entry can test rules out that an object's word leaves values
    /// mode inside it (a `dict_slot.store`, the host's own slow path on
    /// another object). Without a binding the model heap's slow paths free
    /// and write nothing (the module doc).
    pub host_slow_paths: bool,
}

/// Is `k` an instruction that keeps a loop checked whatever it touches
/// (a raw `store`, an adstack op, a `call_indirect` to code nobody sees;
/// direct calls are judged by their callee)?
fn bars_loop(k: &InstKind) -> bool {
    matches!(
        k,
        InstKind::Store { .. }
            | InstKind::CallIndirect { .. }
            | InstKind::AdAlloc { .. }
            | InstKind::AdPush { .. }
            | InstKind::AdPop { .. }
            | InstKind::AdTop { .. }
            | InstKind::AdTopAdj { .. }
            | InstKind::AdAccAdj { .. }
            | InstKind::AdLen { .. }
    )
}

/// Can the raw `store` `inst` run in a clean loop's hot part? Only when it
/// carries the `clobber` check: then it writes no watched slot and no
/// watched capacity word (it is skipped, in every mode: spec §6), so it
/// changes no invariant object's word or capacity while the loop runs (the
/// module doc). It frees nothing whatever its checks say; without the
/// check it could forge the word of an object whose bounds tests the clean
/// copy dropped.
pub fn store_keeps_claims(m: &Module, inst: &Inst) -> bool {
    matches!(inst.kind, InstKind::Store { .. }) && m.inst_checks(inst).contains(CheckKind::Clobber)
}

/// `None` unless `f` is a **leaf object function** (no `call`, no raw
/// `store`, no adstack op: calling it frees, unwatches and runs nothing);
/// then the indices of its params that an object op or `guard.watch` of
/// it takes as its object, ascending — of any type: an `i64` param is as
/// much an object as a `ptr` one (spec §2: `ptr` mixes freely with
/// `i64`), so its argument must be loop-invariant just the same.
pub fn leaf_object_params(f: &Function) -> Option<Vec<usize>> {
    leaf_object_params_for(f, HostModel::default())
}

/// [`leaf_object_params`] against `host`: with host slow paths, a function
/// with an attribute op is no leaf (that op may run the host's slow path).
pub fn leaf_object_params_for(f: &Function, host: HostModel) -> Option<Vec<usize>> {
    let mut objs = Vec::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        if bars_loop(&inst.kind) || matches!(inst.kind, InstKind::Call { .. }) {
            return None;
        }
        if let InstKind::LoadAttr { .. } | InstKind::StoreAttr { .. } = inst.kind {
            if host.host_slow_paths {
                return None;
            }
        }
        if let Some(o) = inst.kind.dict_obj() {
            objs.push(o);
        }
    }
    Some(
        (f.params.iter().enumerate())
            .filter(|&(_, p)| objs.contains(p))
            .map(|(i, _)| i)
            .collect(),
    )
}

/// How function `f` uses its params as objects of attribute ops: the
/// highest attribute index `load_attr`/`store_attr` use on each (param
/// index, index), and whether it writes object memory otherwise (a
/// `dict_slot.store`, or a `store_attr` on an object that is no param).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrUse {
    /// (param index, highest attribute index), in first-use order.
    pub max: Vec<(usize, u32)>,
    /// Does it write an object's memory other than through a param?
    pub writes_other: bool,
}

/// The [`AttrUse`] of `f`.
pub fn attr_use(f: &Function) -> AttrUse {
    let mut u = AttrUse::default();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        match inst.kind {
            InstKind::DictSlotStore { .. } => u.writes_other = true,
            InstKind::LoadAttr { obj, index } | InstKind::StoreAttr { obj, index, .. } => {
                match f.params.iter().position(|&p| p == obj) {
                    Some(pi) => note_max(&mut u.max, pi, index),
                    None => u.writes_other |= matches!(inst.kind, InstKind::StoreAttr { .. }),
                }
            }
            _ => {}
        }
    }
    u
}

/// Raises the highest index of `key` in `list` to `index` (adds it).
fn note_max<K: PartialEq>(list: &mut Vec<(K, u32)>, key: K, index: u32) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, m)) => *m = (*m).max(index),
        None => list.push((key, index)),
    }
}

/// The clean loops of `f`, a function of `m` (disjoint: innermost loops
/// only).
pub fn clean_loops(m: &Module, f: &Function) -> Vec<CleanLoop> {
    clean_loops_for(m, f, HostModel::default())
}

/// [`clean_loops`] against `host` ([`HostModel`]).
pub fn clean_loops_for(m: &Module, f: &Function, host: HostModel) -> Vec<CleanLoop> {
    crate::analysis::context::FuncAnalysis::new(f)
        .clean_loops(m, host)
        .to_vec()
}

/// Loop headers and their latches: the back edges `t -> h`, `h`
/// dominating `t`.
fn latches(cfg: &ControlFlowGraph, dt: &DominatorTree) -> HashMap<u32, Vec<u32>> {
    let mut latches: HashMap<u32, Vec<u32>> = HashMap::new();
    for &t in dt.cfg_rpo() {
        for &h in cfg.succs(t) {
            if dt.dominates(h, t) {
                latches.entry(h.0).or_default().push(t.0);
            }
        }
    }
    latches
}

/// [`clean_loops_for`] with the function's CFG and dominator tree (from
/// its [`crate::analysis::context::FuncAnalysis`]); `f` has two blocks or
/// more.
pub(crate) fn clean_loops_in(
    m: &Module,
    f: &Function,
    cfg: &ControlFlowGraph,
    dt: &DominatorTree,
    host: HostModel,
) -> Vec<CleanLoop> {
    let Innermost {
        loops,
        hdrs,
        loop_of,
        mut ok,
    } = Innermost::of(f, cfg, dt);
    let def_block = |v: Value| f.def_block(v);
    let inside = |b: Option<u32>, k: usize| b.and_then(|b| loop_of[b as usize]) == Some(k);
    // A value of a loop used outside it: no copy without merges.
    for (bi, blk) in f.blocks.iter().enumerate() {
        for inst in &blk.insts {
            inst.kind.for_each_operand(|v| {
                if let Some(k) = def_block(v).and_then(|b| loop_of[b as usize]) {
                    if loop_of[bi] != Some(k) {
                        ok[k] = false;
                    }
                }
            });
        }
    }
    let mut callees = Callees {
        m,
        host,
        leaf: HashMap::new(),
        uses: HashMap::new(),
    };
    // The loop blocks that hold what a clean copy cannot run.
    let mut barred = vec![false; f.blocks.len()];
    for (bi, blk) in f.blocks.iter().enumerate() {
        let Some(k) = loop_of[bi] else { continue };
        barred[bi] =
            (blk.insts.iter()).any(|inst| callees.bars_hot(inst, |a| !inside(def_block(a), k)));
    }
    let mut regions: Vec<Option<Regions>> = Vec::with_capacity(loops.len());
    for (k, &h) in hdrs.iter().enumerate() {
        let r = Regions::of(cfg, h, &barred, |b| loop_of[b as usize] == Some(k));
        // A side exit enters the checked copy's block from the clean copy:
        // every block it can reach before the header uses only its own
        // values and values from outside the loop (its params carry the
        // rest), so that block is valid from either copy.
        let entered_from_both = |r: &Regions| {
            r.side.iter().all(|&b| {
                let mut own = true;
                for inst in &f.blocks[b as usize].insts {
                    inst.kind.for_each_operand(|v| {
                        let d = def_block(v);
                        own &= d == Some(b) || !inside(d, k);
                    });
                }
                own
            })
        };
        regions.push(r.filter(entered_from_both));
    }
    let mut touches: Vec<Touches> = (0..loops.len()).map(|_| Touches::default()).collect();
    for (bi, blk) in f.blocks.iter().enumerate() {
        let Some(k) = loop_of[bi] else { continue };
        // Only what the clean copy runs: its hot blocks.
        if (regions[k].as_ref()).is_none_or(|r| r.hot.binary_search(&(bi as u32)).is_err()) {
            continue;
        }
        for inst in &blk.insts {
            let invariant = |v: Value| !inside(def_block(v), k);
            ok[k] &= touches[k].note(&inst.kind, &mut callees, invariant);
        }
    }
    loops
        .into_iter()
        .zip(hdrs)
        .zip(touches)
        .zip(regions)
        .enumerate()
        // An attribute op may run the host's slow path ([`HostModel`]).
        .filter(|(k, ((_, t), _))| ok[*k] && !(host.host_slow_paths && t.attr_ops))
        .filter(|(_, ((_, t), _))| !t.objects.is_empty() && t.objects.len() <= MAX_OBJECTS)
        .filter_map(|(_, (((mut blocks, header), t), r))| {
            let r = r?;
            blocks.sort_unstable();
            let exits = exit_prefixes(f, cfg, (&blocks, &r.hot), &t.objects, host);
            Some(CleanLoop {
                header,
                blocks,
                hot: r.hot,
                cold: r.cold,
                side: r.side,
                objects: t.objects,
                attrs: if t.attrs_ok { t.attrs } else { Vec::new() },
                exits,
            })
        })
        .collect()
}

/// The innermost natural loops of a function (unsorted blocks, headers),
/// which loop each block belongs to, and whether each may be clean so far
/// (a block claimed by two loops: neither).
pub(crate) struct Innermost {
    pub(crate) loops: Vec<Vec<u32>>,
    pub(crate) hdrs: Vec<u32>,
    pub(crate) loop_of: Vec<Option<usize>>,
    pub(crate) ok: Vec<bool>,
}

impl Innermost {
    pub(crate) fn of(f: &Function, cfg: &ControlFlowGraph, dt: &DominatorTree) -> Innermost {
        let latches = latches(cfg, dt);
        let mut headers: Vec<u32> = latches.keys().copied().collect();
        headers.sort_unstable();
        let mut loops: Vec<Vec<u32>> = Vec::new();
        let mut hdrs = Vec::new();
        for h in headers {
            if h == 0 {
                continue;
            }
            if let Some(body) = natural_loop(cfg, dt, h, &latches[&h]) {
                // Innermost: no other header inside.
                if body.iter().all(|b| *b == h || !latches.contains_key(b)) {
                    loops.push(body);
                    hdrs.push(h);
                }
            }
        }
        let mut loop_of: Vec<Option<usize>> = vec![None; f.blocks.len()];
        let mut ok = vec![true; loops.len()];
        for (k, body) in loops.iter().enumerate() {
            for &b in body {
                match loop_of[b as usize] {
                    None => loop_of[b as usize] = Some(k),
                    Some(j) => {
                        ok[j] = false;
                        ok[k] = false;
                    }
                }
            }
        }
        Innermost {
            loops,
            hdrs,
            loop_of,
            ok,
        }
    }
}

/// What a loop's hot part touches: its invariant objects, its fixed
/// attributes, whether they can be fixed and whether it holds an
/// attribute op.
struct Touches {
    objects: Vec<Value>,
    attrs: Vec<(Value, u32)>,
    attrs_ok: bool,
    attr_ops: bool,
}

impl Default for Touches {
    fn default() -> Self {
        Touches {
            objects: Vec::new(),
            attrs: Vec::new(),
            attrs_ok: true,
            attr_ops: false,
        }
    }
}

impl Touches {
    /// Notes instruction `k` of a hot block (`invariant`: is a value
    /// defined outside the loop?); false when it keeps the loop checked.
    fn note(
        &mut self,
        k: &InstKind,
        callees: &mut Callees<'_>,
        invariant: impl Fn(Value) -> bool,
    ) -> bool {
        let mut ok = true;
        match k {
            InstKind::Call {
                callee: Callee::Func(g),
                args,
            } => {
                let Some(params) = callees.leaf(*g) else {
                    return false;
                };
                let u = callees.uses(*g);
                self.attrs_ok &= !u.writes_other;
                self.attr_ops |= !u.max.is_empty();
                // A fixed attribute is an invariant object's, whatever
                // the param's type (an argument defined inside the loop
                // bars the block: `Callees::bars_hot`).
                for &(pi, mx) in &u.max {
                    match args.get(pi) {
                        Some(&a) if invariant(a) => note_max(&mut self.attrs, a, mx),
                        _ => ok = false,
                    }
                }
                for a in params.iter().map(|&i| args.get(i).copied()) {
                    match a {
                        Some(a) if invariant(a) => {
                            if !self.objects.contains(&a) {
                                self.objects.push(a);
                            }
                        }
                        _ => ok = false,
                    }
                }
            }
            k2 => {
                let Some(o) = k2.dict_obj() else {
                    return true;
                };
                let inv = invariant(o);
                if let InstKind::LoadAttr { .. } | InstKind::StoreAttr { .. } = k2 {
                    self.attr_ops = true;
                }
                if inv && !self.objects.contains(&o) {
                    self.objects.push(o);
                }
                match *k2 {
                    InstKind::DictSlotStore { .. } => self.attrs_ok = false,
                    InstKind::LoadAttr { index, .. } | InstKind::StoreAttr { index, .. } if inv => {
                        note_max(&mut self.attrs, o, index)
                    }
                    InstKind::StoreAttr { .. } => self.attrs_ok = false,
                    _ => {}
                }
            }
        }
        ok
    }
}

/// The leaf-ness and attribute use of the callees of one function, each
/// computed once.
struct Callees<'m> {
    m: &'m Module,
    host: HostModel,
    leaf: HashMap<FuncId, Option<Vec<usize>>>,
    uses: HashMap<FuncId, AttrUse>,
}

impl Callees<'_> {
    /// [`leaf_object_params_for`] of `g`.
    fn leaf(&mut self, g: FuncId) -> Option<Vec<usize>> {
        let (m, host) = (self.m, self.host);
        (self.leaf.entry(g))
            .or_insert_with(|| leaf_object_params_for(m.func(g), host))
            .clone()
    }

    /// [`attr_use`] of `g`.
    fn uses(&mut self, g: FuncId) -> AttrUse {
        let m = self.m;
        self.uses
            .entry(g)
            .or_insert_with(|| attr_use(m.func(g)))
            .clone()
    }

    /// Does `inst` keep its block out of a clean copy: a call that is not
    /// of a leaf object function with loop-invariant objects (`invariant`
    /// tells), or an instruction that [`bars_loop`] — except a raw `store`
    /// that carries the `clobber` check ([`store_keeps_claims`])?
    fn bars_hot(&mut self, inst: &Inst, invariant: impl Fn(Value) -> bool) -> bool {
        match &inst.kind {
            InstKind::Store { .. } => !store_keeps_claims(self.m, inst),
            InstKind::Call {
                callee: Callee::Func(g),
                args,
            } => {
                let Some(params) = self.leaf(*g) else {
                    return true;
                };
                let u = self.uses(*g);
                let objs = (u.max.iter().map(|&(pi, _)| pi)).chain(params);
                !objs
                    .map(|i| args.get(i).copied())
                    .all(|a| a.is_some_and(&invariant))
            }
            InstKind::Call { .. } => true,
            k2 => bars_loop(k2),
        }
    }
}

/// The parts of a loop for a clean copy with side exits.
struct Regions {
    /// Reached from the header without entering a barred block (header
    /// included), ascending.
    hot: Vec<u32>,
    /// The barred blocks a hot block branches to, ascending.
    cold: Vec<u32>,
    /// The blocks reached from a cold one before the header (the cold
    /// ones included), ascending.
    side: Vec<u32>,
}

impl Regions {
    /// The regions of the loop of header `h` (`in_loop` tells its blocks);
    /// `None` when its header is barred or no back edge leaves a hot block
    /// (the clean copy would leave at every iteration).
    fn of(
        cfg: &ControlFlowGraph,
        h: u32,
        barred: &[bool],
        in_loop: impl Fn(u32) -> bool,
    ) -> Option<Regions> {
        if barred[h as usize] {
            return None;
        }
        let (mut hot, mut cold) = (vec![h], Vec::new());
        let mut work = vec![h];
        let mut latch = false;
        while let Some(b) = work.pop() {
            for &s in cfg.succs(Block(b)) {
                latch |= s.0 == h;
                if !in_loop(s.0) || hot.contains(&s.0) || cold.contains(&s.0) {
                    continue;
                }
                if barred[s.0 as usize] {
                    cold.push(s.0);
                } else {
                    hot.push(s.0);
                    work.push(s.0);
                }
            }
        }
        if !latch {
            return None;
        }
        let mut side = cold.clone();
        let mut work = cold.clone();
        while let Some(b) = work.pop() {
            for &s in cfg.succs(Block(b)) {
                if s.0 != h && in_loop(s.0) && !side.contains(&s.0) {
                    side.push(s.0);
                    work.push(s.0);
                }
            }
        }
        for v in [&mut hot, &mut cold, &mut side] {
            v.sort_unstable();
        }
        Some(Regions { hot, cold, side })
    }
}

/// The natural loop of header `h` with back edges from `latches`: `h` and
/// every reachable block that reaches a latch without passing `h`. `None` when it
/// has more than [`MAX_BLOCKS`] blocks.
fn natural_loop(
    cfg: &ControlFlowGraph,
    dt: &DominatorTree,
    h: u32,
    latches: &[u32],
) -> Option<Vec<u32>> {
    let mut body = vec![h];
    let mut work: Vec<u32> = Vec::new();
    for &t in latches {
        if !body.contains(&t) {
            body.push(t);
            work.push(t);
        }
    }
    while let Some(b) = work.pop() {
        for &p in cfg.preds(Block(b)) {
            if dt.is_reachable(p) && !body.contains(&p.0) {
                if body.len() >= MAX_BLOCKS {
                    return None;
                }
                body.push(p.0);
                work.push(p.0);
            }
        }
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The versioning cases as programs: ir/tests/hoist/*.glir (ir/tests/hoist.rs).

    #[test]
    fn big_loops_are_not_versioned() {
        let mut text = String::from(
            "fn @f(%o: ptr, %n: i64) -> i64 {\nentry:\n    %z = iconst.i64 0\n    jump h(%z)\nh(%i: i64):\n    %a = load_attr %o, 0\n    jump b0\n",
        );
        for i in 0..MAX_BLOCKS {
            text.push_str(&format!("b{i}:\n    jump b{}\n", i + 1));
        }
        text.push_str(&format!(
            "b{MAX_BLOCKS}:\n    %one = iconst.i64 1\n    %j = iadd %i, %one\n    %c = icmp.slt %j, %n\n    brif %c, h(%j), out\nout:\n    return %n\n}}\n"
        ));
        let m = crate::parse_and_verify(&text).expect("valid");
        assert!(clean_loops(&m, &m.functions[0]).is_empty());
    }

    /// A method's loop over `%o` and the blocks it exits to.
    const EXITS: &str = "extern fn @x()
fn @f(%o: ptr, %p: ptr, %n: i64) -> i64 {
entry:
    %z = iconst.i64 0
    jump h(%z)
h(%i: i64):
    %d = icmp.sge %i, %n
    brif %d, out, body
body:
    guard.watch %o
    %a = load_attr %o, 2
    %one = iconst.i64 1
    %j = iadd %i, %one
    %e = icmp.eq %a, %z
    brif %e, other, h(%j)
out:
    guard.watch %o
    %r = load_attr %o, 1
    %s = load_attr %p, 0
    call @x()
    %t = load_attr %o, 0
    return %t
other:
    %q = load_attr %p, 0
    return %q
}
";

    fn exits_of(host: HostModel) -> Vec<(String, u32)> {
        let m = crate::parse_and_verify(EXITS).expect("valid");
        let f = &m.functions[0];
        let loops = clean_loops_for(&m, f, host);
        assert_eq!(loops.len(), 1, "{loops:?}");
        let name = |b: u32| f.blocks[b as usize].name.to_string();
        loops[0].exits.iter().map(|&(b, n)| (name(b), n)).collect()
    }

    #[test]
    fn an_exit_prefix_ends_at_the_first_call() {
        // `out`: the watch and two loads (one of another object) keep the
        // claims, the call ends them; `other` touches no loop object.
        assert_eq!(exits_of(HostModel::default()), vec![("out".to_string(), 3)]);
    }

    #[test]
    fn with_host_slow_paths_an_attribute_op_ends_the_prefix() {
        let host = HostModel {
            host_slow_paths: true,
        };
        // The loop itself is clean only without attribute ops then.
        let m = crate::parse_and_verify(
            &EXITS.replace("    %a = load_attr %o, 2\n", "    %a = dict_slot.load %o\n"),
        )
        .expect("valid");
        let f = &m.functions[0];
        let loops = clean_loops_for(&m, f, host);
        assert_eq!(loops.len(), 1, "{loops:?}");
        let out = f.blocks.iter().position(|b| b.name == "out").expect("out") as u32;
        assert_eq!(loops[0].exits, vec![(out, 1)]);
        assert_eq!(loops[0].exit_prefix(out), 1);
        assert_eq!(loops[0].exit_prefix(0), 0);
    }
}
