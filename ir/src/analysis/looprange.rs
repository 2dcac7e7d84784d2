//! Loop ranges: the guarded raw `load`/`store`s of a counted loop whose
//! address is affine in the loop's counter, checked once per entry for
//! the whole range the loop can touch (bounds-check elimination, as JVMs
//! and Go do for array loops).
//!
//! A **counted loop** is an innermost natural loop (`hoist`'s) whose
//! header `h` has a counter `%i` (one of its params) and ends in
//! `brif %c, ...` with `%c = icmp.sge %i, %n` leaving the loop on its
//! then-edge (or `icmp.slt %i, %n` leaving it on its else-edge), `%n`
//! defined outside the loop, and every edge into `h` from inside the loop
//! passes `iadd %i, C` (or `iadd C, %i`) for `%i`, `C` an `iconst` in
//! `1..=MAX_STEP`. Every other block of the loop runs only after the
//! header's test passed in the same iteration, so there `init ≤ %i < %n`,
//! where `init` is what the edge that entered the loop passed for `%i`
//! (the counter only grows; the JIT's entry test requires `%n ≤ 2^32` and
//! `init ≥ 0`, so `%i + C` never wraps).
//!
//! A **ranged access** is a guarded raw access of such a loop, outside the
//! header, with a check among the raw-access checks
//! ([`crate::rawgroup::GROUP_CHECKS`]) and an address `%base + S·%i`
//! (`iadd` of `%base`, defined outside the loop, and `%i`, `imul %i, S`,
//! `imul S, %i` or `ishl %i, K`; `S` in `1..=MAX_SCALE`) plus its offset.
//! The accesses of one loop through one base and scale form one
//! [`LoopRange`]: with `lo`/`hi` the lowest offset and one past the
//! highest offset + width, every access in the loop lies in
//! `[base + S·init + lo, base + S·(n − 1) + hi)`.
//!
//! **The claim.** The checks of a raw access decide from the runtime's
//! records of the bytes it touches (freed memory, redzones, watched
//! slots). The loop holds none of the instructions that change them
//! ([`crate::rawgroup::ends_groups`]: calls, `guard.watch`, `stack_alloc`,
//! `adstack.alloc`, attribute ops, whose slow path calls the host); raw
//! stores and the rest do not. So if the whole range passes the checks
//! when control enters the loop, every ranged access in the loop passes
//! its own until control leaves it: the JIT tests the range on each edge
//! into the header from outside and runs the accesses unchecked when it is
//! clean (one register test per access), checked one by one otherwise.
//! The interpreter verifies the claim while it runs with
//! `set_verify_elision`: an access of a range recorded clean at the entry
//! that falls outside the range or fails its own checks is an internal
//! error.
//!
//! **In a clean copy** ([`LoopRange::clean_copy`], issue 33). A loop whose
//! attribute ops keep it out (richards' fill loop: a read-modify-write of
//! an attribute beside a raw store into a list) may still be a clean loop
//! of [`crate::hoist`] with fixed attributes. When every instruction of
//! its hot part that could change the records is a `load_attr`,
//! `store_attr` or `guard.watch` on one of its fixed-attribute objects
//! (the instrumentation's watches, which the clean copy drops), the claim
//! holds in
//! its clean copy entered after each such object passed `attr_fixed` (a
//! live object of the runtime, its word its own values array, watched
//! since `obj_new`, with more attributes than the loop uses; the JIT
//! uses these ranges only where its dispatch makes that test, i.e. where
//! the clean copy drops bounds tests), and then those ops take the values
//! fast path and run nothing — no slow path, no watch — until control
//! leaves the hot part (`hoist`'s second claim). So the ranges of the hot
//! blocks' accesses are tested when the dispatch enters the clean copy,
//! and its accesses run unchecked on a clean verdict; the checked copy
//! (entered otherwise, or by a side exit) checks each access. The
//! interpreter records such a range at the entries where its fixed
//! attributes hold (what the JIT's dispatch tests, and more) and forgets
//! it when control leaves the hot part.

use super::dominator_tree::DominatorTree;
use super::flowgraph::ControlFlowGraph;
use super::hoist::{CleanLoop, Innermost};
use super::rawgroup::{ends_groups, raw_access};
use crate::inst::{BinOp, Checks, InstKind, IntCC, Value};
use crate::module::{Function, Module, ValueDef};
use std::collections::HashMap;

/// Largest counter step `C` of a counted loop.
pub const MAX_STEP: i64 = 1 << 16;

/// Largest scale `S` of a ranged access.
pub const MAX_SCALE: i64 = 1 << 12;

/// Most ranges one loop is tested for at each entry.
pub const MAX_RANGES: usize = 4;

/// Largest bound `%n` the entry test accepts (then `S·(n − 1)` and the
/// offsets stay far from wrapping).
pub const MAX_BOUND: i64 = 1 << 32;

/// Widest range the entry test scans, in bytes (one shadow byte per 8):
/// a longer one keeps its checks per access.
pub const MAX_SPAN: u64 = 1 << 16;

/// The accesses of one counted loop through one base and scale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopRange {
    /// The loop's header.
    pub header: u32,
    /// The loop's blocks, ascending.
    pub blocks: Vec<u32>,
    /// Which of the header's params is the counter.
    pub counter: usize,
    /// The bound `%n` (defined outside the loop).
    pub bound: Value,
    /// The base address (defined outside the loop).
    pub base: Value,
    /// Bytes per counter step of the address (`S`).
    pub scale: i64,
    /// The lowest offset an access adds to `base + S·i`.
    pub lo: i64,
    /// One past the highest byte an access touches, from `base + S·i`.
    pub hi: i64,
    /// The union of the members' checks among the raw-access checks.
    pub checks: Checks,
    /// The members as (block, instruction index).
    pub members: Vec<(u32, u32)>,
    /// A range of the loop's **clean copy** only (the module doc, "In a
    /// clean copy"): its loop holds attribute ops, so the claim holds only
    /// where the JIT runs the clean copy — its members all in hot blocks,
    /// tested when the dispatch enters the clean copy, checked one by one
    /// in the checked copy.
    pub clean_copy: bool,
}

impl LoopRange {
    /// Is block `b` part of the range's loop?
    pub fn contains(&self, b: u32) -> bool {
        self.blocks.binary_search(&b).is_ok()
    }
}

/// Every loop range of a function, and which access belongs to which.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopRanges {
    ranges: Vec<LoopRange>,
    member: HashMap<(u32, u32), usize>,
}

impl LoopRanges {
    /// The ranges, by loop.
    pub fn ranges(&self) -> &[LoopRange] {
        &self.ranges
    }

    /// No range at all?
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The range instruction `inst` of block `block` belongs to, if any.
    pub fn range_of(&self, block: u32, inst: u32) -> Option<(usize, &LoopRange)> {
        let &i = self.member.get(&(block, inst))?;
        Some((i, &self.ranges[i]))
    }

    /// The ranges of the loop whose header is `h`, with their indices.
    pub fn of_header(&self, h: u32) -> impl Iterator<Item = (usize, &LoopRange)> {
        self.ranges
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.header == h)
    }

    /// The loop ranges of `f` (a function of `m`, whose sites say what
    /// guards each access).
    pub fn of(f: &Function, m: &Module) -> Self {
        if f.blocks.len() < 2 {
            return Self::default();
        }
        let cfg = ControlFlowGraph::with_function(f);
        let dt = DominatorTree::with_cfg(&cfg);
        Self::of_in(f, m, &cfg, &dt)
    }

    /// [`Self::of`] with the function's CFG and dominator tree.
    pub fn of_in(f: &Function, m: &Module, cfg: &ControlFlowGraph, dt: &DominatorTree) -> Self {
        Self::of_in_with(f, m, (cfg, dt), &[])
    }

    /// [`Self::of_in`], and the clean-copy ranges of `clean`, the
    /// function's clean loops ([`crate::hoist::clean_loops_for`] against
    /// the host the code runs with): a counted loop whose hot part's only
    /// instructions that could change the runtime's records are attribute
    /// ops on its fixed-attribute objects gets ranges of its hot blocks'
    /// accesses, marked [`LoopRange::clean_copy`].
    pub fn of_in_with(
        f: &Function,
        m: &Module,
        (cfg, dt): (&ControlFlowGraph, &DominatorTree),
        clean: &[CleanLoop],
    ) -> Self {
        let inner = Innermost::of(f, cfg, dt);
        let defs = Defs::of(f);
        let mut ranges = Vec::new();
        for (k, body) in inner.loops.iter().enumerate() {
            if !inner.ok[k] {
                continue;
            }
            let mut blocks = body.clone();
            blocks.sort_unstable();
            let cl = Counted {
                f,
                defs: &defs,
                header: inner.hdrs[k],
                blocks: &blocks,
            };
            let lp = clean.iter().find(|l| l.header == inner.hdrs[k]);
            ranges.extend(cl.ranges(m, lp).unwrap_or_default());
        }
        let mut member = HashMap::new();
        for (i, r) in ranges.iter().enumerate() {
            for &key in &r.members {
                member.insert(key, i);
            }
        }
        LoopRanges { ranges, member }
    }
}

/// The defining instruction of each value defined by one.
struct Defs<'f>(HashMap<Value, &'f InstKind>);

impl<'f> Defs<'f> {
    fn of(f: &'f Function) -> Self {
        let mut d = HashMap::new();
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            if let Some(r) = inst.result {
                d.insert(r, &inst.kind);
            }
        }
        Defs(d)
    }

    fn get(&self, v: Value) -> Option<&'f InstKind> {
        self.0.get(&v).copied()
    }

    /// The value of `v` when it is an `iconst`.
    fn constant(&self, v: Value) -> Option<i64> {
        match self.get(v)? {
            InstKind::Iconst { imm, .. } => Some(*imm),
            _ => None,
        }
    }
}

/// One innermost loop being examined.
struct Counted<'a, 'f> {
    f: &'f Function,
    defs: &'a Defs<'f>,
    header: u32,
    blocks: &'a [u32],
}

impl Counted<'_, '_> {
    fn inside(&self, b: u32) -> bool {
        self.blocks.binary_search(&b).is_ok()
    }

    /// Is `v` defined outside the loop (a function param included)?
    fn invariant(&self, v: Value) -> bool {
        match self.f.values.get(v.0 as usize).map(|d| d.def) {
            Some(ValueDef::Inst(b) | ValueDef::BlockParam(b, _)) => !self.inside(b.0),
            Some(ValueDef::Param(_)) => true,
            None => false,
        }
    }

    /// The counter (param index and value) and the bound, when the loop is
    /// counted (the module doc).
    fn counter(&self) -> Option<(usize, Value, Value)> {
        let hb = self.f.blocks.get(self.header as usize)?;
        let InstKind::Brif {
            cond,
            then_dest,
            else_dest,
        } = &hb.insts.last()?.kind
        else {
            return None;
        };
        // The condition is the header's own `icmp` (this iteration's counter).
        if !hb.insts.iter().any(|i| i.result == Some(*cond)) {
            return None;
        }
        let InstKind::Icmp { cc, a, b } = self.defs.get(*cond)? else {
            return None;
        };
        let (stay, leave) = match cc {
            IntCC::Sge => (else_dest.block, then_dest.block),
            IntCC::Slt => (then_dest.block, else_dest.block),
            _ => return None,
        };
        if !self.inside(stay.0) || stay.0 == self.header || self.inside(leave.0) {
            return None;
        }
        let k = hb.params.iter().position(|p| p == a)?;
        if !self.invariant(*b) {
            return None;
        }
        // Every edge into the header from inside passes `i + C`.
        for &bi in self.blocks {
            let term = self.f.blocks[bi as usize].insts.last()?;
            for dest in term.kind.branch_targets() {
                if dest.block.0 != self.header {
                    continue;
                }
                let next = *dest.args.get(k)?;
                let InstKind::Binary {
                    op: BinOp::Iadd,
                    a: x,
                    b: y,
                } = self.defs.get(next)?
                else {
                    return None;
                };
                let step = match (*x == *a, *y == *a) {
                    (true, _) => self.defs.constant(*y)?,
                    (_, true) => self.defs.constant(*x)?,
                    _ => return None,
                };
                if !(1..=MAX_STEP).contains(&step) {
                    return None;
                }
            }
        }
        Some((k, *a, *b))
    }

    /// `(base, scale)` when `addr` is `base + scale·i`.
    fn affine(&self, addr: Value, i: Value) -> Option<(Value, i64)> {
        let InstKind::Binary {
            op: BinOp::Iadd,
            a,
            b,
        } = self.defs.get(addr)?
        else {
            return None;
        };
        let scaled = |t: Value| -> Option<i64> {
            if t == i {
                return Some(1);
            }
            let s = match self.defs.get(t)? {
                InstKind::Binary {
                    op: BinOp::Imul,
                    a,
                    b,
                } if *a == i => self.defs.constant(*b)?,
                InstKind::Binary {
                    op: BinOp::Imul,
                    a,
                    b,
                } if *b == i => self.defs.constant(*a)?,
                InstKind::Binary {
                    op: BinOp::Ishl,
                    a,
                    b,
                } if *a == i => 1i64.checked_shl(u32::try_from(self.defs.constant(*b)?).ok()?)?,
                _ => return None,
            };
            (1..=MAX_SCALE).contains(&s).then_some(s)
        };
        for (base, t) in [(*a, *b), (*b, *a)] {
            if self.invariant(base) && self.f.ty(base).bytes() == 8 {
                if let Some(s) = scaled(t) {
                    return Some((base, s));
                }
            }
        }
        None
    }

    /// The loop's ranges (`None`: it is not counted, or holds what
    /// changes the runtime's records — but for attribute ops on the fixed
    /// objects of `clean`, its clean loop, if any: then the ranges of its
    /// clean copy).
    fn ranges(&self, m: &Module, clean: Option<&CleanLoop>) -> Option<Vec<LoopRange>> {
        let mut out: Vec<LoopRange> = Vec::new();
        let insts = |blocks: &[u32]| -> Vec<&InstKind> {
            (blocks.iter())
                .flat_map(|&b| self.f.blocks[b as usize].insts.iter().map(|i| &i.kind))
                .collect()
        };
        let clean_copy = match insts(self.blocks).into_iter().any(ends_groups) {
            false => None,
            true => {
                let lp = clean.filter(|l| !l.attrs.is_empty())?;
                let fixed = |o: &Value| lp.attrs.iter().any(|(x, _)| x == o);
                let only_fixed = insts(&lp.hot).into_iter().all(|k| match k {
                    InstKind::LoadAttr { obj, .. }
                    | InstKind::StoreAttr { obj, .. }
                    | InstKind::Watch { obj } => fixed(obj),
                    k2 => !ends_groups(k2),
                });
                Some(only_fixed.then_some(lp)?)
            }
        };
        let (counter, i, bound) = self.counter()?;
        let member_block = |b: u32| b != self.header && clean_copy.is_none_or(|l| l.is_hot(b));
        for &bi in self.blocks.iter().filter(|&&b| member_block(b)) {
            for (ii, inst) in self.f.blocks[bi as usize].insts.iter().enumerate() {
                let Some((addr, offset, width, checks)) = raw_access(self.f, m, inst) else {
                    continue;
                };
                let Some((base, scale)) = self.affine(addr, i) else {
                    continue;
                };
                let (lo, hi) = (i64::from(offset), i64::from(offset) + i64::from(width));
                let key = (bi, ii as u32);
                let full = out.len() >= MAX_RANGES;
                match (out.iter_mut()).find(|r| r.base == base && r.scale == scale) {
                    Some(r) => {
                        r.lo = r.lo.min(lo);
                        r.hi = r.hi.max(hi);
                        r.checks = r.checks.union(checks);
                        r.members.push(key);
                    }
                    None if !full => out.push(LoopRange {
                        header: self.header,
                        blocks: self.blocks.to_vec(),
                        counter,
                        bound,
                        base,
                        scale,
                        lo,
                        hi,
                        checks,
                        members: vec![key],
                        clean_copy: clean_copy.is_some(),
                    }),
                    None => {}
                }
            }
        }
        Some(out)
    }
}

/// The address range a loop entry tests: `[lo, hi)` for a range entered
/// with counter `init` and bound `n` and base address `base`, or `None`
/// when the entry test does not accept it (the accesses then run checked);
/// `Some(None)`: the loop body runs no iteration (nothing to test). The
/// JIT's entry test and the interpreter's verification compute the same.
pub fn entry_range(r: &LoopRange, base: u64, init: i64, n: i64) -> Option<Option<(u64, u64)>> {
    if n <= init {
        return Some(None);
    }
    if init < 0 || n > MAX_BOUND {
        return None;
    }
    let lo = (base as i64)
        .wrapping_add(r.scale * init)
        .wrapping_add(r.lo) as u64;
    let hi = (base as i64)
        .wrapping_add(r.scale * (n - 1))
        .wrapping_add(r.hi) as u64;
    (lo < hi && hi <= TOP && hi - lo <= MAX_SPAN).then_some(Some((lo, hi)))
}

/// The end a range must lie below: the user address space the runtime's
/// shadow covers on x86_64 and aarch64 (2^47), less 64 bytes, so that the
/// JIT's eight-byte reads of the shadow stay inside the mapping.
pub const TOP: u64 = (1 << 47) - 64;

#[cfg(test)]
mod tests;
