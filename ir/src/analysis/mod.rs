//! Analyses shared by the verifier, the parser and the engines.
//!
//! - [`flowgraph`]: successors and predecessors of every block;
//!   [`dominator_tree`]: reverse postorder and dominators. The verifier,
//!   the parser's type inference, [`elide`] and the lowering all walk the
//!   CFG through these two.
//! - [`elide`]: the adstack underflow checks that cannot fail.
//! - [`hoist`]: the loops whose object tests can run once per entry
//!   (the JIT's loop versioning).
//! - [`rawgroup`]: the raw accesses of a block through one base whose
//!   checks can be decided by one range test.
//! - [`attrgroup`]: the attribute ops of a block on one object whose
//!   checks the first one decides for all.
//!
//! [`adstack_capacities`]: every adstack handle is traced back to the
//! `adstack.alloc` it came from, through block params. Guards need the
//! capacity at every use, so a handle that may come from allocations of
//! different capacities is rejected (the verifier reports it).
//!
//! [`reverse_postorder`]: the blocks reachable from the entry, in the
//! order forward analyses and the lowering visit them.

pub mod adbound;
pub mod attrgroup;
pub mod context;
pub mod dominator_tree;
pub mod elide;
pub mod entry;
pub mod flowgraph;
pub mod hoist;
pub mod looprange;
pub mod ownentry;
pub mod rawgroup;

use crate::error::Diagnostic;
use crate::inst::{InstKind, Value};
use crate::module::Function;
use cranelift_entity::EntityRef;
use std::collections::HashMap;

/// A group of instructions of one block ([`rawgroup`], [`attrgroup`]).
pub trait BlockGroup {
    /// The block.
    fn block(&self) -> u32;
    /// The members' instruction indices in the block, in order.
    fn members(&self) -> &[u32];
}

/// Every group of a function with at least two members, and which
/// instruction belongs to which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockGroups<G> {
    groups: Vec<G>,
    member: HashMap<(u32, u32), usize>,
}

impl<G> Default for BlockGroups<G> {
    fn default() -> Self {
        BlockGroups {
            groups: Vec::new(),
            member: HashMap::new(),
        }
    }
}

impl<G: BlockGroup> BlockGroups<G> {
    /// The groups of `all` with at least two members, indexed.
    pub fn new(mut all: Vec<G>) -> Self {
        all.retain(|g| g.members().len() >= 2);
        let mut member = HashMap::new();
        for (gi, g) in all.iter().enumerate() {
            for &ii in g.members() {
                member.insert((g.block(), ii), gi);
            }
        }
        BlockGroups {
            groups: all,
            member,
        }
    }

    /// No group at all?
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The groups, in block and then program order.
    pub fn groups(&self) -> &[G] {
        &self.groups
    }

    /// The group instruction `inst` of block `block` belongs to, with its
    /// index, if any.
    pub fn group_of(&self, block: u32, inst: u32) -> Option<(usize, &G)> {
        let &gi = self.member.get(&(block, inst))?;
        Some((gi, &self.groups[gi]))
    }
}

/// Capacity (in entries) of the adstack every adstack-typed value refers to.
pub fn adstack_capacities(f: &Function) -> Result<HashMap<Value, u32>, Diagnostic> {
    let mut cap: HashMap<Value, u32> = HashMap::new();
    for b in &f.blocks {
        for inst in &b.insts {
            if let (InstKind::AdAlloc { capacity, .. }, Some(r)) = (&inst.kind, inst.result) {
                cap.insert(r, *capacity);
            }
        }
    }
    // No allocation, no handle with a capacity (the propagation below only
    // spreads the allocations' own): a function without adstacks, most
    // functions, skips the pass over its branches.
    if cap.is_empty() {
        return Ok(cap);
    }
    // Propagate along "passed as branch argument to" edges (worklist:
    // linear). Only handles have a capacity: other arguments make no edge.
    let mut edges: HashMap<Value, Vec<Value>> = HashMap::new();
    for (arg, param) in handle_bindings(f) {
        edges.entry(arg).or_default().push(param);
    }
    let mut work: Vec<Value> = cap.keys().copied().collect();
    while let Some(v) = work.pop() {
        let c = cap[&v];
        for &param in edges.get(&v).map_or(&[][..], |e| e.as_slice()) {
            match cap.get(&param) {
                None => {
                    cap.insert(param, c);
                    work.push(param);
                }
                Some(&p) if p != c => {
                    let name = f.values.get(param.index()).map_or("?", |v| v.name.as_str());
                    let loc = match f.values.get(param.index()).map(|v| v.def) {
                        Some(crate::module::ValueDef::BlockParam(b, _)) => {
                            f.blocks.get(b.index()).map_or(f.loc, |b| b.loc)
                        }
                        _ => f.loc,
                    };
                    return Err(Diagnostic::new(
                        loc,
                        format!(
                            "adstack handle %{name} may come from allocations of different capacities ({p} and {c})"
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(cap)
}

/// Every (argument, parameter) pair a branch binds whose argument is an
/// adstack handle: the edges along which handles flow between values.
pub(crate) fn handle_bindings(f: &Function) -> impl Iterator<Item = (Value, Value)> + '_ {
    f.blocks
        .iter()
        .filter_map(|b| b.insts.last())
        .flat_map(|term| term.kind.branch_targets())
        .filter_map(|dest| Some((dest, f.blocks.get(dest.block.index())?)))
        .flat_map(|(dest, target)| dest.args.iter().copied().zip(target.params.iter().copied()))
        .filter(|a| f.values.get(a.0.index()).is_some_and(|d| d.ty.is_adstack()))
}

/// Reverse postorder of the blocks reachable from the entry, as block
/// indices ([`dominator_tree::reverse_postorder`] of the function's CFG).
pub fn reverse_postorder(f: &Function) -> Vec<u32> {
    let cfg = flowgraph::ControlFlowGraph::with_function(f);
    dominator_tree::reverse_postorder(&cfg)
        .into_iter()
        .map(|b| b.0)
        .collect()
}
