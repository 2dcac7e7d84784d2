//! The per-function analysis context, as Cranelift's `Context` keeps its
//! CFG and dominator tree: each analysis of one function computed once, on
//! first use, and shared by everything that asks.
//!
//! Before it, the JIT's lowering of one function built the control-flow
//! graph four to five times (block order, underflow elision, the clean-loop
//! analysis twice, ...) and the dominator tree twice. [`FuncAnalysis`]
//! borrows the function, so it cannot change under the context: a pass
//! that edits a function drops the context and makes a new one (the borrow
//! checker is the invalidation).

use super::dominator_tree::{reverse_postorder, DominatorTree};
use super::elide;
use super::flowgraph::ControlFlowGraph;
use super::hoist::{self, CleanLoop, HostModel};
use crate::inst::{Block, Value};
use crate::module::{Function, Module};
use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The analyses of one function, each computed on first use.
pub struct FuncAnalysis<'f> {
    f: &'f Function,
    cfg: OnceCell<ControlFlowGraph>,
    domtree: OnceCell<DominatorTree>,
    rpo: OnceCell<Vec<u32>>,
    /// Clean loops per host model (one or two models per function).
    clean: RefCell<Vec<(HostModel, Rc<[CleanLoop]>)>>,
    elided: OnceCell<HashSet<(u32, u32)>>,
}

impl<'f> FuncAnalysis<'f> {
    /// A context for `f`; nothing is computed yet.
    pub fn new(f: &'f Function) -> Self {
        FuncAnalysis {
            f,
            cfg: OnceCell::new(),
            domtree: OnceCell::new(),
            rpo: OnceCell::new(),
            clean: RefCell::new(Vec::new()),
            elided: OnceCell::new(),
        }
    }

    /// The function analysed.
    pub fn function(&self) -> &'f Function {
        self.f
    }

    /// The control-flow graph.
    pub fn cfg(&self) -> &ControlFlowGraph {
        self.cfg
            .get_or_init(|| ControlFlowGraph::with_function(self.f))
    }

    /// The dominator tree.
    pub fn domtree(&self) -> &DominatorTree {
        self.domtree
            .get_or_init(|| DominatorTree::with_cfg(self.cfg()))
    }

    /// The blocks reachable from the entry, in reverse postorder (block
    /// indices).
    pub fn rpo(&self) -> &[u32] {
        self.rpo.get_or_init(|| {
            let rpo: Vec<Block> = match self.domtree.get() {
                Some(dt) => dt.cfg_rpo().to_vec(),
                None => reverse_postorder(self.cfg()),
            };
            rpo.into_iter().map(|b| b.0).collect()
        })
    }

    /// The clean loops of the function, a function of `m`, against `host`
    /// ([`hoist::clean_loops_for`]).
    pub fn clean_loops(&self, m: &Module, host: HostModel) -> Rc<[CleanLoop]> {
        if let Some((_, loops)) = self.clean.borrow().iter().find(|(h, _)| *h == host) {
            return loops.clone();
        }
        let loops: Rc<[CleanLoop]> = if self.f.blocks.len() < 2 {
            Rc::from(Vec::new())
        } else {
            hoist::clean_loops_in(m, self.f, self.cfg(), self.domtree(), host).into()
        };
        self.clean.borrow_mut().push((host, loops.clone()));
        loops
    }

    /// The guarded adstack checks (underflow and overflow) that cannot
    /// fail ([`elide::redundant_adstack_checks`]); `caps` is
    /// [`crate::analysis::adstack_capacities`] of the function (the same
    /// on every call: the first call's answer is kept).
    pub fn redundant_adstack_checks(&self, caps: &HashMap<Value, u32>) -> &HashSet<(u32, u32)> {
        self.elided.get_or_init(|| {
            if self.f.blocks.is_empty() {
                HashSet::new()
            } else {
                let rpo: Vec<Block> = self.rpo().iter().map(|&b| Block(b)).collect();
                elide::redundant_adstack_checks_in(self.f, &rpo, caps)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_and_verify;

    const LOOP: &str = "fn @f(%o: ptr, %n: i64) {\nentry:\n    %z = iconst.i64 0\n    jump head(%z)\nhead(%i: i64):\n    %v = load_attr %o, 0\n    %one = iconst.i64 1\n    %j = iadd %i, %one\n    %c = icmp.slt %j, %n\n    brif %c, head(%j), done\ndone:\n    return\n}\n";

    #[test]
    fn analyses_agree_with_the_free_functions_and_are_computed_once() {
        let m = parse_and_verify(LOOP).expect("parse");
        let f = &m.functions[0];
        let an = FuncAnalysis::new(f);
        assert_eq!(an.rpo(), crate::analysis::reverse_postorder(f).as_slice());
        let a = an.clean_loops(&m, HostModel::default());
        let b = an.clean_loops(&m, HostModel::default());
        assert!(Rc::ptr_eq(&a, &b), "the second ask reuses the first answer");
        assert_eq!(&*a, hoist::clean_loops(&m, f).as_slice());
        assert_eq!(a.len(), 1);
        let bound = an.clean_loops(
            &m,
            HostModel {
                host_slow_paths: true,
            },
        );
        assert!(
            bound.is_empty(),
            "an attribute op under bound slow paths keeps the loop checked"
        );
        assert!(std::ptr::eq(an.cfg(), an.cfg()));
    }
}
