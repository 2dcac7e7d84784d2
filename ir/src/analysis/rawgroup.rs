//! Raw-access groups: the guarded raw `load`/`store`s of one block that
//! go through the same base value at constant offsets, with nothing
//! between them that can change what their checks decide.
//!
//! The lifetime, bounds and clobber checks of a raw access decide from the
//! runtime's records of the bytes it touches (freed memory, redzones,
//! watched slots and capacity words). Only the runtime changes those
//! records, and only when code calls it for something other than a check:
//! a call (IR, host, built-in, indirect), `guard.watch`, `stack_alloc`,
//! `adstack.alloc`, and an attribute op (`load_attr`/`store_attr`, whose
//! slow path calls the host). Between two such instructions the records
//! are fixed, so if the whole range a group touches passes the checks at
//! its first access, every access of the group passes them: the JIT tests
//! the range once (one shadow test of its granules) and runs the group's
//! accesses unchecked when it is clean, checked one by one otherwise.
//!
//! The interpreter verifies the claim while it runs with
//! `set_verify_elision`: a group whose range passed at its first access
//! and one of whose accesses then fails its own check is an internal
//! error.

use super::{BlockGroup, BlockGroups};
use crate::inst::{CheckKind, Checks, Inst, InstKind, Value};
use crate::module::{Function, Module};
use std::collections::HashMap;

/// Widest range one group covers, in bytes (at most nine granules of the
/// shadow, whatever the alignment).
pub const MAX_GROUP_SPAN: i64 = 64;

/// The checks a group's range test stands for.
pub const GROUP_CHECKS: [CheckKind; 3] =
    [CheckKind::Lifetime, CheckKind::Bounds, CheckKind::Clobber];

/// One group: its accesses touch `[base + lo, base + hi)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawGroup {
    /// The block.
    pub block: u32,
    /// The base address every access adds its offset to.
    pub base: Value,
    /// The lowest offset touched.
    pub lo: i64,
    /// One past the highest offset touched.
    pub hi: i64,
    /// The union of the members' checks among [`GROUP_CHECKS`].
    pub checks: Checks,
    /// The members' instruction indices in the block, in order (at least two).
    pub members: Vec<u32>,
}

impl BlockGroup for RawGroup {
    fn block(&self) -> u32 {
        self.block
    }
    fn members(&self) -> &[u32] {
        &self.members
    }
}

/// Every raw-access group of a function, and which instruction belongs to which.
pub type RawGroups = BlockGroups<RawGroup>;

/// Can `kind` change the runtime's records of memory (so that a check
/// that passed before it might fail after it)?
pub fn ends_groups(kind: &InstKind) -> bool {
    use InstKind::*;
    matches!(
        kind,
        Call { .. }
            | CallIndirect { .. }
            | Watch { .. }
            | StackAlloc { .. }
            | AdAlloc { .. }
            | LoadAttr { .. }
            | StoreAttr { .. }
    )
}

/// `(base, offset, width, checks)` of a guarded raw access with a check of
/// [`GROUP_CHECKS`], else `None`.
pub(crate) fn raw_access(
    f: &Function,
    m: &Module,
    inst: &Inst,
) -> Option<(Value, i32, u32, Checks)> {
    let (addr, offset, width) = match &inst.kind {
        InstKind::Load { ty, addr, offset } => (*addr, *offset, ty.bytes()),
        InstKind::Store {
            value,
            addr,
            offset,
        } => (*addr, *offset, f.ty(*value).bytes()),
        _ => return None,
    };
    let site = m.site(inst.site?)?;
    let checks = GROUP_CHECKS
        .iter()
        .filter(|&&k| site.checks.contains(k))
        .fold(Checks::EMPTY, |c, &k| c.with(k));
    (!checks.is_empty()).then_some((addr, offset, width, checks))
}

impl BlockGroups<RawGroup> {
    /// The groups of `f` (a function of `m`, whose sites say what guards
    /// each access), leaving out the accesses of its loop ranges
    /// ([`crate::looprange`]), which are tested once per loop entry.
    pub fn of(f: &Function, m: &Module) -> Self {
        Self::of_excluding(f, m, &crate::looprange::LoopRanges::of(f, m))
    }

    /// [`Self::of`] with the function's loop ranges.
    pub fn of_excluding(f: &Function, m: &Module, ranged: &crate::looprange::LoopRanges) -> Self {
        let mut all: Vec<RawGroup> = Vec::new();
        for (bi, b) in f.blocks.iter().enumerate() {
            // The open group of each base, as an index into `all`.
            let mut open: HashMap<Value, usize> = HashMap::new();
            for (ii, inst) in b.insts.iter().enumerate() {
                if ends_groups(&inst.kind) {
                    open.clear();
                    continue;
                }
                let Some((base, off, width, checks)) = raw_access(f, m, inst) else {
                    continue;
                };
                if ranged.range_of(bi as u32, ii as u32).is_some() {
                    continue;
                }
                let (lo, hi) = (i64::from(off), i64::from(off) + i64::from(width));
                if let Some(g) = open.get(&base).map(|&i| &mut all[i]) {
                    let (nlo, nhi) = (g.lo.min(lo), g.hi.max(hi));
                    if nhi - nlo <= MAX_GROUP_SPAN {
                        g.lo = nlo;
                        g.hi = nhi;
                        g.checks = g.checks.union(checks);
                        g.members.push(ii as u32);
                        continue;
                    }
                }
                open.insert(base, all.len());
                all.push(RawGroup {
                    block: bi as u32,
                    base,
                    lo,
                    hi,
                    checks,
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

    /// The groups of `@f` in `body` (a function text), as (block name,
    /// base name, lo, hi, member count).
    fn groups(text: &str) -> Vec<(String, String, i64, i64, usize)> {
        let m = parse_module(text).expect("parses");
        let f = m.func(m.func_by_name("f").expect("@f"));
        RawGroups::of(f, &m)
            .groups()
            .iter()
            .map(|g| {
                (
                    f.blocks[g.block as usize].name.to_string(),
                    f.values[g.base.0 as usize].name.to_string(),
                    g.lo,
                    g.hi,
                    g.members.len(),
                )
            })
            .collect()
    }

    const HEAD: &str =
        "extern fn @obj_free(ptr)\nfn @f(%p: ptr, %q: ptr, %o: ptr) -> i64 {\nentry:\n";

    #[test]
    fn accesses_through_one_base_form_a_group() {
        let t = format!(
            "{HEAD}    %a = guard.load.i64 %p\n    %b = guard.load.i64 %q\n    guard.store %a, %p, 16\n    %c = guard.load.i32 %p, 8\n    return %c\n}}\n"
        );
        assert_eq!(groups(&t), vec![("entry".into(), "p".into(), 0, 24, 3)]);
    }

    #[test]
    fn a_call_an_attribute_op_or_a_watch_ends_the_groups() {
        for cut in [
            "call @obj_free(%o)",
            "%x = load_attr %o, 0",
            "store_attr %o, 0, %a",
            "guard.watch %o",
            "%s = stack_alloc 16",
        ] {
            let t = format!(
                "{HEAD}    %a = guard.load.i64 %p\n    {cut}\n    %b = guard.load.i64 %p, 8\n    return %b\n}}\n"
            );
            assert_eq!(groups(&t), vec![], "{cut}");
        }
        // A dict slot op, an unguarded access or arithmetic does not.
        let t = format!(
            "{HEAD}    %a = guard.load.i64 %p\n    %w = dict_slot.load %o\n    %x = load.i64 %q\n    %y = iadd %a, %x\n    %b = guard.load.i64 %p, 8\n    return %b\n}}\n"
        );
        assert_eq!(groups(&t), vec![("entry".into(), "p".into(), 0, 16, 2)]);
    }

    #[test]
    fn a_group_spans_at_most_64_bytes() {
        let t = format!(
            "{HEAD}    %a = guard.load.i64 %p\n    %b = guard.load.i64 %p, 56\n    %c = guard.load.i64 %p, 64\n    %d = guard.load.i64 %p, 72\n    return %d\n}}\n"
        );
        assert_eq!(
            groups(&t),
            vec![
                ("entry".into(), "p".into(), 0, 64, 2),
                ("entry".into(), "p".into(), 64, 80, 2)
            ]
        );
    }

    #[test]
    fn negative_offsets_and_lone_accesses() {
        let t = format!(
            "{HEAD}    %a = guard.load.i64 %p, -8\n    %b = guard.load.i64 %q\n    guard.store %b, %p, 0\n    jump next\nnext:\n    %c = guard.load.i64 %p, 8\n    return %c\n}}\n"
        );
        assert_eq!(groups(&t), vec![("entry".into(), "p".into(), -8, 8, 2)]);
    }
}
