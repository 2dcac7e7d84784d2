//! Reverse postorder and dominators of a function (Cranelift's
//! `dominator_tree.rs`).
//!
//! The reverse postorder comes from an iterative depth-first search from the
//! entry (block 0) that visits a block's successors last to first; the
//! immediate dominators from the Cooper–Harvey–Kennedy iteration over it;
//! `dominates` queries take O(1) through a pre/post numbering of the
//! dominator tree. Nothing recurses, and the whole costs near-linear time
//! in the size of the function.

use super::flowgraph::ControlFlowGraph;
use crate::inst::Block;
use cranelift_entity::EntityRef;

/// Marks an unreachable block (or a missing dominator) in the tables.
const NONE: u32 = u32::MAX;

/// Reverse postorder, immediate dominators and O(1) dominance queries.
#[derive(Clone, Debug, Default)]
pub struct DominatorTree {
    /// The blocks reachable from the entry, in reverse postorder.
    rpo: Vec<Block>,
    /// RPO number of each block ([`NONE`]: unreachable).
    rpo_num: Vec<u32>,
    /// Immediate dominator of each block, by RPO number (the entry's is itself).
    idom: Vec<u32>,
    /// Dominator-tree pre/post numbers, by RPO number.
    pre: Vec<u32>,
    post: Vec<u32>,
}

/// The blocks reachable from the entry in reverse postorder (the search
/// visits successors last to first, so they come first to last).
pub fn reverse_postorder(cfg: &ControlFlowGraph) -> Vec<Block> {
    let nb = cfg.num_blocks();
    if nb == 0 {
        return Vec::new();
    }
    let mut visited = vec![false; nb];
    let mut post = Vec::with_capacity(nb);
    // (block, successors not yet visited, counted from the end)
    let mut stack: Vec<(Block, usize)> = vec![(Block(0), cfg.succs(Block(0)).len())];
    visited[0] = true;
    while let Some((b, pending)) = stack.last_mut() {
        let b = *b;
        if *pending == 0 {
            post.push(b);
            stack.pop();
            continue;
        }
        *pending -= 1;
        let s = cfg.succs(b)[*pending];
        if !visited[s.index()] {
            visited[s.index()] = true;
            stack.push((s, cfg.succs(s).len()));
        }
    }
    post.reverse();
    post
}

/// The nearest common dominator of two blocks, by RPO number.
fn intersect(idom: &[u32], mut a: u32, mut b: u32) -> u32 {
    while a != b {
        while a > b {
            a = idom[a as usize];
        }
        while b > a {
            b = idom[b as usize];
        }
    }
    a
}

impl DominatorTree {
    /// The dominator tree of the function `cfg` is the graph of.
    pub fn with_cfg(cfg: &ControlFlowGraph) -> Self {
        let rpo = reverse_postorder(cfg);
        let mut rpo_num = vec![NONE; cfg.num_blocks()];
        for (i, b) in rpo.iter().enumerate() {
            rpo_num[b.index()] = i as u32;
        }
        let idom = Self::idoms(cfg, &rpo, &rpo_num);
        let mut t = DominatorTree {
            rpo,
            rpo_num,
            idom,
            pre: Vec::new(),
            post: Vec::new(),
        };
        t.number_tree();
        t
    }

    /// Cooper–Harvey–Kennedy: immediate dominators by RPO number.
    fn idoms(cfg: &ControlFlowGraph, rpo: &[Block], rpo_num: &[u32]) -> Vec<u32> {
        let n = rpo.len();
        let mut idom = vec![NONE; n];
        if n == 0 {
            return idom;
        }
        idom[0] = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for (i, &b) in rpo.iter().enumerate().skip(1) {
                let mut new = NONE;
                for p in cfg.preds(b) {
                    let p = rpo_num[p.index()];
                    if p == NONE || idom[p as usize] == NONE {
                        continue;
                    }
                    new = if new == NONE {
                        p
                    } else {
                        intersect(&idom, p, new)
                    };
                }
                if new != NONE && idom[i] != new {
                    idom[i] = new;
                    changed = true;
                }
            }
        }
        idom
    }

    /// Pre/post numbers of the dominator tree (iterative walk).
    fn number_tree(&mut self) {
        let n = self.rpo.len();
        let mut first_child = vec![NONE; n];
        let mut next_sibling = vec![NONE; n];
        for b in (1..n).rev() {
            let p = self.idom[b] as usize;
            next_sibling[b] = first_child[p];
            first_child[p] = b as u32;
        }
        self.pre = vec![0; n];
        self.post = vec![0; n];
        if n == 0 {
            return;
        }
        let mut counter = 0u32;
        let mut stack: Vec<(u32, bool)> = vec![(0, false)];
        while let Some((b, done)) = stack.pop() {
            if done {
                self.post[b as usize] = counter;
                counter += 1;
                continue;
            }
            self.pre[b as usize] = counter;
            counter += 1;
            stack.push((b, true));
            let mut c = first_child[b as usize];
            while c != NONE {
                stack.push((c, false));
                c = next_sibling[c as usize];
            }
        }
    }

    /// The blocks reachable from the entry, in reverse postorder.
    pub fn cfg_rpo(&self) -> &[Block] {
        &self.rpo
    }

    /// Is `b` reachable from the entry?
    pub fn is_reachable(&self, b: Block) -> bool {
        self.rpo_num.get(b.index()).is_some_and(|&n| n != NONE)
    }

    /// The immediate dominator of `b` (None for the entry and for
    /// unreachable blocks).
    pub fn idom(&self, b: Block) -> Option<Block> {
        let n = *self.rpo_num.get(b.index())?;
        if n == NONE || n == 0 {
            return None;
        }
        Some(self.rpo[self.idom[n as usize] as usize])
    }

    /// Does block `a` dominate block `b` (every block dominates itself)?
    /// False when either is unreachable.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        let num = |x: Block| self.rpo_num.get(x.index()).copied().filter(|&n| n != NONE);
        match (num(a), num(b)) {
            (Some(ra), Some(rb)) => {
                let (ra, rb) = (ra as usize, rb as usize);
                self.pre[ra] <= self.pre[rb] && self.post[rb] <= self.post[ra]
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> DominatorTree {
        let m = crate::parse_module(text).expect("parses");
        DominatorTree::with_cfg(&ControlFlowGraph::with_function(&m.functions[0]))
    }

    #[test]
    fn diamond_with_a_loop_and_an_unreachable_block() {
        let t = tree(
            "fn @f(%x: i64) -> i64 {
entry:
    brif %x, a, b
a:
    jump join
b:
    brif %x, b, join
join:
    return %x
dead:
    jump join
}",
        );
        let [entry, a, b, join, dead] = [0, 1, 2, 3, 4].map(Block);
        // Successors come first to last: `a` before `b`.
        assert_eq!(t.cfg_rpo(), &[entry, a, b, join]);
        assert_eq!(t.idom(join), Some(entry));
        assert_eq!(t.idom(b), Some(entry));
        assert_eq!(t.idom(entry), None);
        assert!(t.dominates(entry, join) && t.dominates(b, b));
        assert!(!t.dominates(a, join) && !t.dominates(b, join));
        assert!(!t.is_reachable(dead) && !t.dominates(dead, join));
        assert!(!t.dominates(entry, dead) && t.idom(dead).is_none());
    }

    #[test]
    fn a_deep_chain_is_walked_without_recursion() {
        let n = 200_000;
        let mut text = String::from("fn @f(%x: i64) -> i64 {\nentry:\n    jump b0\n");
        for i in 0..n {
            text += &format!("b{i}:\n    jump b{}\n", i + 1);
        }
        text += &format!("b{n}:\n    return %x\n}}\n");
        let t = tree(&text);
        assert_eq!(t.cfg_rpo().len(), n + 2);
        assert!(t.dominates(Block(1), Block(n as u32 + 1)));
        assert_eq!(t.idom(Block(n as u32 + 1)), Some(Block(n as u32)));
    }
}
