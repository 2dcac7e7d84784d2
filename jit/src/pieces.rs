//! Compiling a big function in pieces (issue 33: compile time per
//! instruction that does not grow with the function).
//!
//! Cranelift compiles a function whole: its data-flow graph, its vcode and
//! the register allocator's tables grow with the function, and past a few
//! tens of thousands of instructions every pass misses the caches (measured:
//! 1.1 µs of Cranelift time per instruction at 10^4, 1.6 at 10^6). `split`
//! cuts such a function, after instrumentation and before lowering, into
//! IR functions of about [`PIECE_INSTS`] instructions each, which the
//! driver (`crate::unit`) lowers and compiles one at a time like any
//! other function: the working set is one piece's.
//!
//! **Where a function is cut.** Between two blocks of its layout, at block
//! `j`, only where every edge from the blocks before `j` goes to a block
//! before `j` or to `j` itself, and no edge from `j` or after goes to a
//! block before `j`: no loop is split, and the one way into the rest is
//! block `j`. A function with `adstack.alloc` or `stack_alloc` is never
//! cut (a frame's slots and handles live as long as its frame), nor one
//! with no such cut after [`PIECE_INSTS`] instructions.
//!
//! **What a piece is.** Piece 0 keeps the function's index, name and
//! signature (its callers, the host and the registry see the function).
//! Piece `k ≥ 1` is a new function of the same name taking the params of
//! its first block, then the values defined before it and used in it or
//! after it (its live-ins: SSA values there dominate the cut block), and
//! enters its first block from an entry of its own. Each edge to the next
//! cut block goes to an exit block that calls the next piece with those
//! values and returns what it returns. The lowering compiles pieces `k ≥ 1`
//! with Cranelift's `tail` calling convention and each exit call of theirs
//! as a `return_call`, so the stack holds at most two frames of the
//! function whatever its size: piece 0's, at its call of piece 1, and the
//! running piece's.
//!
//! **What sees a piece.** Every instruction keeps its site and its source
//! position, and a piece's code unit its IR function's name: reports,
//! trap PCs, the PC map and profilers name the function. The exit calls
//! carry the line [`guardlift_abi::PIECE_CALL_LINE`]: backtraces and the
//! fault handler's frame walk leave piece 0's frame out, so the function
//! shows once, as in the interpreter (which runs the function unsplit).
//! What the analyses conclude is at least as conservative as for the
//! whole function: a piece's live-ins are params whose facts it does not
//! know, and a call ends every claim.

use crate::target::Tier;
use guardlift_ir::{
    Block, BlockCall, BlockData, Callee, FuncId, Function, Inst, InstKind, Module, Name, SrcLoc,
    Value, ValueData, ValueDef,
};
use std::borrow::Cow;

/// The instructions of a piece, about (a piece ends at the first cut after
/// this many): a function of this size compiles at the per-instruction
/// rate of small functions (`guardlift bench`'s compile rows).
pub const PIECE_INSTS: usize = 8_192;

/// The environment variable that sets the piece size for the JIT and
/// object emission (`0`: never cut; unset or empty: [`PIECE_INSTS`]); for
/// tests that compile small functions in pieces.
pub const PIECES_ENV: &str = "GUARDLIFT_JIT_PIECES";

/// The piece size [`PIECES_ENV`] asks for (its default: [`PIECE_INSTS`]);
/// an error names a value that is no number.
pub fn piece_insts_from_env() -> Result<usize, crate::JitError> {
    match std::env::var(PIECES_ENV) {
        Ok(s) if !s.trim().is_empty() => s.trim().parse().map_err(|_| crate::JitError::Runtime {
            context: format!("{PIECES_ENV}={s}: not a number of instructions"),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a number"),
        }),
        _ => Ok(PIECE_INSTS),
    }
}

/// How many pieces `f` is compiled in at piece size `piece` (1: whole):
/// what the fuzzers' coverage reads.
pub fn piece_count(f: &Function, piece: usize) -> usize {
    Plan::cut(f, f.inst_count(), piece).map_or(1, |p| p.starts.len())
}

/// A module with its big functions cut into pieces.
pub(crate) struct Split<'m> {
    /// The module: the original's functions in order (a cut function's
    /// piece 0 in its place), then every further piece.
    pub(crate) module: Cow<'m, Module>,
    /// By function of `module`: the function of the original module it
    /// is part of, and which piece (0: the function or its first piece).
    pub(crate) origin: Vec<(usize, u32)>,
    /// By function of `module`: the tier it compiles at, its whole
    /// function's ([`Tier::of`] the original).
    pub(crate) tiers: Vec<Tier>,
}

/// `module` with every function of more than twice `piece` instructions
/// that can be cut cut into pieces of about `piece` instructions (`0`:
/// none is); as it came when none is. A module given by value is cut in
/// place: each piece takes its blocks' params and instructions from the
/// function, and the functions not cut are moved (`Jit::compile_verified`,
/// what `guardlift run` does); a borrowed module is copied.
pub(crate) fn split(module: Cow<'_, Module>, piece: usize) -> Split<'_> {
    let n = module.functions.len();
    let counts: Vec<usize> = module.functions.iter().map(Function::inst_count).collect();
    let whole_tiers: Vec<Tier> = counts.iter().map(|&c| Tier::of_insts(c)).collect();
    let mut plans: Vec<Option<Plan>> = (module.functions.iter().zip(&counts))
        .map(|(f, &c)| Plan::cut(f, c, piece))
        .collect();
    if plans.iter().all(Option::is_none) {
        return Split {
            module,
            origin: (0..n).map(|i| (i, 0)).collect(),
            tiers: whole_tiers,
        };
    }
    let mut origin: Vec<(usize, u32)> = (0..n).map(|i| (i, 0)).collect();
    let mut later: Vec<Function> = Vec::new();
    let mut remap = Remap::new();
    let mut cut = |i: usize, f: &mut Blocks<'_>, functions: &mut Vec<Function>| {
        let Some(plan) = plans[i].take() else {
            return false;
        };
        // Piece k ≥ 1 gets index n + (pieces before it) + k − 1.
        let first = n + later.len();
        for k in 0..plan.starts.len() {
            let next = FuncId((first + k) as u32);
            let p = plan.piece(f, k, next, &mut remap);
            if k == 0 {
                functions.push(p);
            } else {
                later.push(p);
                origin.push((i, k as u32));
            }
        }
        true
    };
    let mut functions = Vec::with_capacity(n);
    let mut out = match module {
        Cow::Borrowed(m) => {
            for (i, f) in m.functions.iter().enumerate() {
                if !cut(i, &mut Blocks::Borrowed(f), &mut functions) {
                    functions.push(f.clone());
                }
            }
            Module {
                layout: m.layout,
                externs: m.externs.clone(),
                functions,
                sites: m.sites.clone(),
            }
        }
        Cow::Owned(mut m) => {
            for (i, mut f) in std::mem::take(&mut m.functions).into_iter().enumerate() {
                if !cut(i, &mut Blocks::Owned(&mut f), &mut functions) {
                    functions.push(f);
                }
            }
            m.functions = functions;
            m
        }
    };
    out.functions.extend(later);
    let tiers = origin.iter().map(|&(i, _)| whole_tiers[i]).collect();
    Split {
        module: Cow::Owned(out),
        origin,
        tiers,
    }
}

/// The function a piece is cut from: borrowed (its blocks are copied) or
/// owned (each piece takes its blocks).
enum Blocks<'f> {
    Borrowed(&'f Function),
    Owned(&'f mut Function),
}

impl Blocks<'_> {
    fn function(&self) -> &Function {
        match self {
            Blocks::Borrowed(f) => f,
            Blocks::Owned(f) => f,
        }
    }

    /// Blocks `s..e`, each with its params and instructions (no label).
    fn take(&mut self, s: usize, e: usize) -> Vec<BlockData> {
        match self {
            Blocks::Borrowed(f) => (f.blocks[s..e].iter())
                .map(|b| BlockData {
                    name: Name::default(),
                    params: b.params.clone(),
                    insts: b.insts.clone(),
                    loc: b.loc,
                })
                .collect(),
            Blocks::Owned(f) => (f.blocks[s..e].iter_mut())
                .map(|b| BlockData {
                    name: Name::default(),
                    params: std::mem::take(&mut b.params),
                    insts: std::mem::take(&mut b.insts),
                    loc: b.loc,
                })
                .collect(),
        }
    }
}

/// Where a function is cut and what crosses each cut.
struct Plan {
    /// The first block of each piece (the first is 0).
    starts: Vec<usize>,
    /// By piece: the values defined before it that it or a later piece
    /// uses, by value number.
    live_in: Vec<Vec<Value>>,
}

impl Plan {
    /// The cuts of `f` (of `insts` instructions) at piece size `piece`:
    /// `None` for size 0, a function of at most twice the size, or one
    /// [`Plan::of`] finds no cut in.
    fn cut(f: &Function, insts: usize, piece: usize) -> Option<Plan> {
        match piece {
            0 => None,
            _ if insts <= piece.saturating_mul(2) => None,
            _ => Plan::of(f, piece),
        }
    }

    /// The cuts of `f` (module doc), or `None` where it has none or must
    /// not be cut.
    fn of(f: &Function, piece: usize) -> Option<Plan> {
        let nb = f.blocks.len();
        if nb == 0 {
            return None;
        }
        // One pass over the instructions (a big function's outgrow the
        // caches): frame state, each block's smallest and largest branch
        // target, reachability in layout order, and each value's first
        // and last block of use (the live-ins, once the cuts are known).
        let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(nb);
        let mut reached = vec![false; nb];
        reached[0] = true;
        let mut uses = Uses::new(f.values.len());
        for (bi, b) in f.blocks.iter().enumerate() {
            let mut frame_state = false;
            for i in &b.insts {
                frame_state |= matches!(
                    i.kind,
                    InstKind::AdAlloc { .. } | InstKind::StackAlloc { .. }
                );
                i.kind.for_each_operand(|v| uses.add(v, bi));
            }
            if frame_state || uses.bad {
                return None;
            }
            let mut span: Option<(usize, usize)> = None;
            for c in b
                .insts
                .last()
                .into_iter()
                .flat_map(|t| t.kind.branch_targets())
            {
                let t = c.block.0 as usize;
                span = Some(span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))));
                if reached[bi] {
                    if let Some(r) = reached.get_mut(t) {
                        *r = true;
                    }
                }
            }
            spans.push(span);
        }
        // Unreachable blocks are left out: then every use is dominated by
        // its definition, and each live-in is defined where it is passed.
        // (A block reached only by an edge back from later in the layout
        // is found by the search.)
        if reached.iter().any(|&r| !r) && !all_reachable(f) {
            return None;
        }
        // suffix_min[j]: the smallest target of a branch in blocks ≥ j.
        let mut suffix_min = vec![usize::MAX; nb + 1];
        for j in (0..nb).rev() {
            suffix_min[j] = suffix_min[j + 1].min(spans[j].map_or(usize::MAX, |s| s.0));
        }
        let mut starts = vec![0];
        let (mut acc, mut prefix_max) = (0usize, 0usize);
        for j in 1..nb {
            acc += f.blocks[j - 1].insts.len();
            prefix_max = prefix_max.max(spans[j - 1].map_or(0, |s| s.1));
            if acc >= piece && prefix_max <= j && suffix_min[j] >= j {
                starts.push(j);
                acc = 0;
            }
        }
        if starts.len() < 2 {
            return None;
        }
        let live_in = uses.live_ins(f, &starts)?;
        Some(Plan { starts, live_in })
    }

    /// Piece `k` of `f` as an IR function (module doc); `next` is the
    /// function index of piece `k + 1`.
    fn piece(&self, src: &mut Blocks<'_>, k: usize, next: FuncId, remap: &mut Remap) -> Function {
        let f = src.function();
        let s = self.starts[k];
        let e = self.starts.get(k + 1).copied().unwrap_or(f.blocks.len());
        let last = e == f.blocks.len();
        remap.start(f.values.len());
        let insts: usize = f.blocks[s..e]
            .iter()
            .map(|b| b.insts.len() + b.params.len())
            .sum();
        let mut values: Vec<ValueData> = Vec::with_capacity(insts + f.params.len() + 8);
        // Blocks of the piece: (entry,) s..e, (exit).
        let off = usize::from(k > 0);
        let exit = Block((e - s + off) as u32);
        let mut blocks: Vec<BlockData> = Vec::with_capacity(e - s + off + 1);
        let params: Vec<Value>;
        if k == 0 {
            params = (f.params.iter().enumerate())
                .map(|(ix, &p)| {
                    let v = fresh(&mut values, f.ty(p), ValueDef::Param(ix as u32));
                    remap.set(p, v);
                    v
                })
                .collect();
        } else {
            // Params: the cut block's, then the live-ins.
            let cut = &f.blocks[s];
            let types = (cut.params.iter().chain(&self.live_in[k])).map(|&v| f.ty(v));
            params = (types.enumerate())
                .map(|(ix, ty)| fresh(&mut values, ty, ValueDef::Param(ix as u32)))
                .collect();
            for (&v, &p) in self.live_in[k].iter().zip(&params[cut.params.len()..]) {
                remap.set(v, p);
            }
            blocks.push(BlockData {
                name: "piece.entry".into(),
                params: Vec::new(),
                insts: vec![Inst {
                    kind: InstKind::Jump {
                        dest: BlockCall {
                            block: Block(1),
                            args: params[..cut.params.len()].iter().copied().collect(),
                        },
                    },
                    result: None,
                    loc: cut.loc,
                    site: None,
                }],
                loc: cut.loc,
            });
        }
        // Every definition is numbered as its block is taken, and the
        // operands remapped afterwards, in the piece's (small, cached)
        // blocks: a block may use a value of a block after it in the
        // layout (one that dominates it). No label: labels only name
        // blocks in the verifier's messages, and a piece is never verified
        // again.
        let taken = src.take(s, e);
        let f = src.function();
        for (bi, mut b) in taken.into_iter().enumerate() {
            let nb = Block((bi + off) as u32);
            for (ix, p) in b.params.iter_mut().enumerate() {
                let v = fresh(&mut values, f.ty(*p), ValueDef::BlockParam(nb, ix as u32));
                remap.set(*p, v);
                *p = v;
            }
            for i in &mut b.insts {
                if let Some(r) = i.result {
                    let v = fresh(&mut values, f.ty(r), ValueDef::Inst(nb));
                    remap.set(r, v);
                    i.result = Some(v);
                }
            }
            blocks.push(b);
        }
        for b in &mut blocks[off..] {
            for i in &mut b.insts {
                i.kind.for_each_operand_mut(|v| *v = remap.get(*v));
                i.kind.for_each_dest_mut(|d| {
                    *d = match d.0 as usize {
                        t if t == e => exit,
                        t => Block((t - s + off) as u32),
                    }
                });
            }
        }
        if !last {
            let cut = &f.blocks[e];
            let eparams: Vec<Value> = (cut.params.iter().enumerate())
                .map(|(ix, &p)| fresh(&mut values, f.ty(p), ValueDef::BlockParam(exit, ix as u32)))
                .collect();
            let mut args = eparams.clone();
            args.extend(self.live_in[k + 1].iter().map(|&v| remap.get(v)));
            let loc = SrcLoc {
                line: guardlift_abi::PIECE_CALL_LINE,
                col: 0,
            };
            let result = f.ret.map(|ty| fresh(&mut values, ty, ValueDef::Inst(exit)));
            let insts = vec![
                Inst {
                    kind: InstKind::Call {
                        callee: Callee::Func(next),
                        args,
                    },
                    result,
                    loc,
                    site: None,
                },
                Inst {
                    kind: InstKind::Return { value: result },
                    result: None,
                    loc,
                    site: None,
                },
            ];
            blocks.push(BlockData {
                name: "piece.exit".into(),
                params: eparams,
                insts,
                loc: cut.loc,
            });
        }
        Function {
            name: f.name.clone(),
            params,
            ret: f.ret,
            values,
            blocks,
            loc: f.loc,
        }
    }
}

/// A new value of type `ty` defined by `def` in `values`.
fn fresh(values: &mut Vec<ValueData>, ty: guardlift_ir::Type, def: ValueDef) -> Value {
    let v = Value(values.len() as u32);
    values.push(ValueData {
        name: Name::default(),
        ty,
        def,
    });
    v
}

/// Are all blocks of `f` reachable from its entry?
fn all_reachable(f: &Function) -> bool {
    let mut seen = vec![false; f.blocks.len()];
    let mut stack = vec![0usize];
    seen[0] = true;
    let mut count = 1;
    while let Some(b) = stack.pop() {
        let targets = f.blocks[b].insts.last().map(|t| t.kind.branch_targets());
        for c in targets.into_iter().flatten() {
            let t = c.block.0 as usize;
            if t < seen.len() && !seen[t] {
                seen[t] = true;
                count += 1;
                stack.push(t);
            }
        }
    }
    count == f.blocks.len()
}

/// Each value's first and last block of use, by block index
/// (`u32::MAX, 0`: unused), gathered in [`Plan::of`]'s one pass.
struct Uses {
    span: Vec<(u32, u32)>,
    /// An operand names no value of the function.
    bad: bool,
}

impl Uses {
    fn new(values: usize) -> Self {
        Uses {
            span: vec![(u32::MAX, 0); values],
            bad: false,
        }
    }

    fn add(&mut self, v: Value, block: usize) {
        match self.span.get_mut(v.0 as usize) {
            Some((lo, hi)) => {
                *lo = (*lo).min(block as u32);
                *hi = (*hi).max(block as u32);
            }
            None => self.bad = true,
        }
    }

    /// By piece (starting at `starts`): the values defined before it that
    /// it or a later piece uses, sorted; `None` if a piece uses a value
    /// defined in a piece after it (only unreachable code could;
    /// [`Plan::of`] leaves such functions whole).
    fn live_ins(&self, f: &Function, starts: &[usize]) -> Option<Vec<Vec<Value>>> {
        // The piece of each block.
        let mut piece_of = vec![0u32; f.blocks.len()];
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(f.blocks.len());
            piece_of[s..e].fill(k as u32);
        }
        let mut out: Vec<Vec<Value>> = vec![Vec::new(); starts.len()];
        for (v, (d, &(lo, hi))) in f.values.iter().zip(&self.span).enumerate() {
            if lo == u32::MAX {
                continue;
            }
            // Function params: before block 0's instructions, so before
            // every later piece.
            let def = match d.def {
                ValueDef::Param(_) => 0,
                ValueDef::BlockParam(b, _) | ValueDef::Inst(b) => b.0 as usize,
            };
            let piece = |b: usize| piece_of.get(b).copied();
            let (dp, first, last) = (piece(def)?, piece(lo as usize)?, piece(hi as usize)?);
            if first < dp {
                return None;
            }
            // Live into every piece after its definition's, up to its
            // last use's (values in increasing order: each list sorted).
            for live in &mut out[dp as usize + 1..=last as usize] {
                live.push(Value(v as u32));
            }
        }
        Some(out)
    }
}

/// Old value → new value of the piece being built (one table for every
/// piece, reset by a generation count instead of cleared).
struct Remap {
    map: Vec<(u32, Value)>,
    generation: u32,
}

impl Remap {
    fn new() -> Self {
        Remap {
            map: Vec::new(),
            generation: 0,
        }
    }

    fn start(&mut self, values: usize) {
        self.generation += 1;
        if self.map.len() < values {
            self.map.resize(values, (0, Value(u32::MAX)));
        }
    }

    fn set(&mut self, old: Value, new: Value) {
        self.map[old.0 as usize] = (self.generation, new);
    }

    /// The new value of `old`: a piece only uses values it defines or
    /// takes (checked by [`live_ins`]); anything else maps to an invalid
    /// value the lowering rejects as an internal error.
    fn get(&self, old: Value) -> Value {
        match self.map.get(old.0 as usize) {
            Some(&(g, v)) if g == self.generation => v,
            _ => Value(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests;
