//! Attribute groups: the guarded `load_attr`/`store_attr`s of one block on
//! the same object, with nothing between them that can change the
//! object's managed-dict word or what their checks decide.
//!
//! An attribute op's dict, lifetime and bounds checks decide from the
//! object's word (its tag), the runtime's records of freed objects and the
//! capacity the runtime recorded for the values array the word points to.
//! Between two group members nothing can change any of them:
//!
//! - no call (IR, host, built-in, indirect: a host function may free,
//!   dictify or rewrite anything), no `stack_alloc`/`adstack.alloc` (the
//!   runtime's records of memory);
//! - no write that could reach the word: no raw `store`, no
//!   `dict_slot.store`;
//! - no attribute op on another object that could run host code or write
//!   outside that object's values: against a host with its own attribute
//!   slow paths ([`HostModel`]) any such op (its slow path may free or
//!   write anything); against the runtime's own slow paths (which free
//!   nothing and write only the other object's dict) a `store_attr`
//!   without the bounds check (on a forged or stale word it could write
//!   anywhere), or an unguarded one. So without a host binding, groups on
//!   different objects interleave: a `load_attr` of another object, or a
//!   `store_attr` whose bounds check refuses every index outside the
//!   values array the runtime recorded, leaves them open (richards'
//!   methods read and write two or three objects in turn). A
//!   member `store_attr` of the same object writes, in a clean group, one
//!   of the values the recorded capacity covers, never the word.
//!
//! So once the first member has passed its checks on the values fast path,
//! and the recorded capacity exceeds every member's index, every member
//! passes its checks with the same word: the JIT keeps the first member's
//! values pointer and runs the others as a plain load or store of it. If
//! the first member took the slow path, failed a check or the capacity is
//! too small for a later index, every later member runs its own checks.
//!
//! The interpreter verifies the claim while it runs with
//! `set_verify_elision`: in a group whose first member was clean, a later
//! member that sees another word or fails its own checks is an internal
//! error.

use super::hoist::HostModel;
use super::{BlockGroup, BlockGroups};
use crate::inst::{CheckKind, Checks, Inst, InstKind, Value};
use crate::module::{Function, Module};

/// The checks of an attribute op a group's first member stands for.
pub const GROUP_CHECKS: [CheckKind; 3] = [CheckKind::Dict, CheckKind::Lifetime, CheckKind::Bounds];

/// One group of attribute ops on one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrGroup {
    /// The block.
    pub block: u32,
    /// The object.
    pub obj: Value,
    /// The checks of every member among [`GROUP_CHECKS`] (all the same).
    pub checks: Checks,
    /// The highest attribute index a member accesses.
    pub max_index: u32,
    /// The members' instruction indices in the block, in order (at least two).
    pub members: Vec<u32>,
}

impl BlockGroup for AttrGroup {
    fn block(&self) -> u32 {
        self.block
    }
    fn members(&self) -> &[u32] {
        &self.members
    }
}

/// Every attribute group of a function, and which instruction belongs to which.
pub type AttrGroups = BlockGroups<AttrGroup>;

/// Can `kind` (other than an attribute op) change an object's word or
/// the runtime's records, so that an attribute check that passed before
/// it might fail after it, or see another word?
pub fn ends_groups(kind: &InstKind) -> bool {
    use InstKind::*;
    matches!(
        kind,
        Call { .. }
            | CallIndirect { .. }
            | StackAlloc { .. }
            | AdAlloc { .. }
            | Store { .. }
            | DictSlotStore { .. }
    )
}

/// `(obj, index, checks)` of an attribute op, `checks` its guard's among
/// [`GROUP_CHECKS`] (maybe none).
fn attr_op(m: &Module, inst: &Inst) -> Option<(Value, u32, Checks)> {
    let (obj, index) = match &inst.kind {
        InstKind::LoadAttr { obj, index } => (*obj, *index),
        InstKind::StoreAttr { obj, index, .. } => (*obj, *index),
        _ => return None,
    };
    let checks = match inst.site.and_then(|s| m.site(s)) {
        Some(site) => GROUP_CHECKS
            .iter()
            .filter(|&&k| site.checks.contains(k))
            .fold(Checks::EMPTY, |c, &k| c.with(k)),
        None => Checks::EMPTY,
    };
    Some((obj, index, checks))
}

impl BlockGroups<AttrGroup> {
    /// The groups of `f` (a function of `m`, whose sites say what guards
    /// each op) against a host with its own slow paths: an op on another
    /// object ends a group. Only guarded ops group (an unguarded op has
    /// nothing to skip).
    pub fn of(f: &Function, m: &Module) -> Self {
        Self::of_for(
            f,
            m,
            HostModel {
                host_slow_paths: true,
            },
        )
    }

    /// The groups of `f` against `host` (see the module doc: without host
    /// slow paths, groups on different objects interleave).
    pub fn of_for(f: &Function, m: &Module, host: HostModel) -> Self {
        let mut all: Vec<AttrGroup> = Vec::new();
        for (bi, b) in f.blocks.iter().enumerate() {
            // The open groups (indices into `all`), at most one per
            // object; with host slow paths at most one in all.
            let mut open: Vec<usize> = Vec::new();
            for (ii, inst) in b.insts.iter().enumerate() {
                if ends_groups(&inst.kind) {
                    open.clear();
                    continue;
                }
                let Some((obj, index, checks)) = attr_op(m, inst) else {
                    continue;
                };
                let store = matches!(inst.kind, InstKind::StoreAttr { .. });
                // What this op may do to the other objects' groups.
                if host.host_slow_paths || (store && !checks.contains(CheckKind::Bounds)) {
                    open.retain(|&i| all[i].obj == obj);
                }
                if checks.is_empty() {
                    open.retain(|&i| all[i].obj != obj);
                    continue;
                }
                let same = open.iter().position(|&i| all[i].obj == obj);
                if let Some(k) = same {
                    let g = &mut all[open[k]];
                    if g.checks == checks {
                        g.max_index = g.max_index.max(index);
                        g.members.push(ii as u32);
                        continue;
                    }
                    open.remove(k);
                }
                open.push(all.len());
                all.push(AttrGroup {
                    block: bi as u32,
                    obj,
                    checks,
                    max_index: index,
                    members: vec![ii as u32],
                });
            }
        }
        BlockGroups::new(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_module;

    /// The groups of `@f` against a host with its own slow paths, as
    /// (object name, max index, member count).
    fn groups(body: &str) -> Vec<(String, u32, usize)> {
        groups_for(
            body,
            HostModel {
                host_slow_paths: true,
            },
        )
    }

    /// The groups of `@f` without host slow paths.
    fn groups_model(body: &str) -> Vec<(String, u32, usize)> {
        groups_for(body, HostModel::default())
    }

    fn groups_for(body: &str, host: HostModel) -> Vec<(String, u32, usize)> {
        let text = format!(
            "extern fn @obj_free(ptr)\nfn @f(%o: ptr, %p: ptr, %q: ptr) -> i64 {{\nentry:\n{body}\n}}\n"
        );
        let m = parse_module(&text).expect("parses");
        let f = m.func(m.func_by_name("f").expect("@f"));
        AttrGroups::of_for(f, &m, host)
            .groups()
            .iter()
            .map(|g| {
                let name = f.values[g.obj.0 as usize].name.to_string();
                (name, g.max_index, g.members.len())
            })
            .collect()
    }

    #[test]
    fn ops_on_one_object_form_a_group() {
        let g = groups(
            "    %a = guard.load_attr %o, 3\n    %b = guard.load_attr %o, 1\n    %x = iadd %a, %b\n    guard.store_attr %o, 4, %x\n    %w = dict_slot.load %o\n    %c = load.i64 %q\n    %d = guard.load_attr %o, 0\n    return %d",
        );
        assert_eq!(g, vec![("o".into(), 4, 4)]);
    }

    #[test]
    fn calls_stores_and_other_objects_end_the_group() {
        for cut in [
            "call @obj_free(%p)",
            "store %p, %q",
            "dict_slot.store %o, %w",
            "%s = stack_alloc 16",
            "%y = guard.load_attr %p, 0",
            "%y = load_attr %o, 0",
        ] {
            let g = groups(&format!(
                "    %w = dict_slot.load %p\n    %a = guard.load_attr %o, 0\n    {cut}\n    %b = guard.load_attr %o, 1\n    return %b"
            ));
            assert_eq!(g, vec![], "{cut}");
        }
    }

    #[test]
    fn without_host_slow_paths_groups_interleave() {
        let g = groups_model(
            "    %a = guard.load_attr %o, 0\n    %b = guard.load_attr %p, 2\n    guard.store_attr %o, 1, %b\n    guard.store_attr %p, 0, %a\n    return %a",
        );
        assert_eq!(g, vec![("o".into(), 1, 2), ("p".into(), 2, 2)]);
        // What still ends them: calls, raw stores, an unguarded op.
        for cut in [
            "call @obj_free(%q)",
            "store %p, %q",
            "%y = load_attr %o, 0",
            "store_attr %p, 0, %q",
        ] {
            let g = groups_model(&format!(
                "    %a = guard.load_attr %o, 0\n    {cut}\n    %b = guard.load_attr %o, 1\n    return %b"
            ));
            assert_eq!(g, vec![], "{cut}");
        }
    }

    #[test]
    fn unguarded_ops_do_not_group() {
        let g = groups("    %a = load_attr %o, 0\n    %b = load_attr %o, 1\n    return %b");
        assert_eq!(g, vec![]);
    }
}
