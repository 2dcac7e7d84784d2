//! The control-flow graph of a function (Cranelift's `flowgraph.rs`): the
//! successors and predecessors of every block.
//!
//! A block's successors are the targets of its last instruction when that
//! is a branch (`jump`, `brif`), in instruction order, a target repeated as
//! often as it is named. Targets that name no block are left out, so the
//! graph of an unverified function is still well formed: every analysis
//! (the verifier's included) can build it first and trust it.
//!
//! Edges are stored flat (one array of successors, one of predecessors,
//! with per-block offsets): two allocations whatever the function's size.

use crate::inst::Block;
use crate::module::Function;
use cranelift_entity::EntityRef;

/// Successors and predecessors of every block of one function.
#[derive(Clone, Debug, Default)]
pub struct ControlFlowGraph {
    /// `succs[succ_start[b]..succ_start[b + 1]]`: the successors of `b`.
    succ_start: Vec<u32>,
    succs: Vec<Block>,
    /// `preds[pred_start[b]..pred_start[b + 1]]`: the predecessors of `b`,
    /// in block order, one entry per edge.
    pred_start: Vec<u32>,
    preds: Vec<Block>,
}

/// The in-range branch targets of block `b`'s last instruction.
pub fn successors(f: &Function, b: Block) -> impl Iterator<Item = Block> + '_ {
    let n = f.blocks.len();
    f.blocks
        .get(b.index())
        .and_then(|bd| bd.insts.last())
        .into_iter()
        .flat_map(|i| i.kind.branch_targets())
        .map(|bc| bc.block)
        .filter(move |s| s.index() < n)
}

impl ControlFlowGraph {
    /// The graph of `f`.
    pub fn with_function(f: &Function) -> Self {
        let n = f.blocks.len();
        let mut succ_start = Vec::with_capacity(n + 1);
        let mut succs = Vec::with_capacity(n * 2);
        let mut pred_count = vec![0u32; n + 1];
        for b in f.block_ids() {
            succ_start.push(succs.len() as u32);
            for s in successors(f, b) {
                succs.push(s);
                pred_count[s.index()] += 1;
            }
        }
        succ_start.push(succs.len() as u32);
        // Prefix sums: pred_start[b] is where b's predecessors begin.
        let mut pred_start = Vec::with_capacity(n + 1);
        let mut acc = 0u32;
        for c in &pred_count {
            pred_start.push(acc);
            acc += c;
        }
        let mut fill = pred_start.clone();
        let mut preds = vec![Block(0); succs.len()];
        for b in f.block_ids() {
            let (lo, hi) = (succ_start[b.index()], succ_start[b.index() + 1]);
            for &s in &succs[lo as usize..hi as usize] {
                preds[fill[s.index()] as usize] = b;
                fill[s.index()] += 1;
            }
        }
        ControlFlowGraph {
            succ_start,
            succs,
            pred_start,
            preds,
        }
    }

    /// Number of blocks of the function.
    pub fn num_blocks(&self) -> usize {
        self.succ_start.len().saturating_sub(1)
    }

    /// The successors of `b` (empty for a block out of range).
    pub fn succs(&self, b: Block) -> &[Block] {
        Self::slice(&self.succ_start, &self.succs, b)
    }

    /// The predecessors of `b`, one per edge (empty for a block out of range).
    pub fn preds(&self, b: Block) -> &[Block] {
        Self::slice(&self.pred_start, &self.preds, b)
    }

    fn slice<'s>(start: &[u32], items: &'s [Block], b: Block) -> &'s [Block] {
        match (start.get(b.index()), start.get(b.index() + 1)) {
            (Some(&lo), Some(&hi)) => &items[lo as usize..hi as usize],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_both_ways_and_out_of_range_targets_dropped() {
        let mut m = crate::parse_module(
            "fn @f(%x: i64) -> i64 {
entry:
    brif %x, a, b
a:
    jump b
b:
    brif %x, b, entry
}",
        )
        .expect("parses");
        let f = &mut m.functions[0];
        let cfg = ControlFlowGraph::with_function(f);
        assert_eq!(cfg.num_blocks(), 3);
        assert_eq!(cfg.succs(Block(0)), &[Block(1), Block(2)]);
        assert_eq!(cfg.preds(Block(2)), &[Block(0), Block(1), Block(2)]);
        assert_eq!(cfg.preds(Block(0)), &[Block(2)]);
        assert_eq!(cfg.succs(Block(7)), &[] as &[Block]);
        // A target naming no block (a module built wrong) is no edge.
        if let crate::InstKind::Jump { dest } = &mut f.blocks[1].insts[0].kind {
            dest.block = Block(99);
        }
        let cfg = ControlFlowGraph::with_function(f);
        assert_eq!(cfg.succs(Block(1)), &[] as &[Block]);
        assert_eq!(cfg.preds(Block(2)), &[Block(0), Block(2)]);
    }
}
