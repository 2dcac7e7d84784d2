//! Verification of the attribute groups ([`guardlift_ir::attrgroup`])
//! while running: the JIT runs the first `load_attr`/`store_attr` of a
//! block's group on one object with its checks and the later ones as plain
//! accesses through the first one's values pointer, when at the first one
//! the object was live, its word values-tagged and the recorded capacity
//! above the group's highest index — on the claim that nothing between the
//! members changes the word or those records. Here, at the first member,
//! the frame records whether the group is clean by the runtime's records;
//! a later member of a clean group that finds the object freed, another
//! word, its values array released or its index out of the recorded
//! capacity refutes the claim.

use crate::frame::{Cx, Frame};
use crate::{InterpError, Interpreter};
use guardlift_ir::attrgroup::AttrGroups;
use guardlift_ir::hoist::HostModel;
use guardlift_ir::{CheckKind, Checks, Module};
use guardlift_runtime::internals::*;
use guardlift_runtime::layout;

/// Per function, its groups.
pub(crate) type AttrGroupClaims = Vec<AttrGroups>;

/// The groups of every function of `m` against `host`.
pub(crate) fn attr_group_claims(m: &Module, host: HostModel) -> AttrGroupClaims {
    (m.functions.iter())
        .map(|f| AttrGroups::of_for(f, m, host))
        .collect()
}

impl Interpreter<'_> {
    /// The word of live object `obj` when it is values-tagged and every
    /// check of `checks` would pass for attribute indices up to `max` by the
    /// runtime's records (reporting nothing), else `None`.
    fn attr_clean(&self, checks: Checks, obj: u64, max: u32) -> Option<u64> {
        let slot = self.rt.layout().slot_addr(obj);
        self.rt.with_heap(|h| {
            if h.is_freed(obj) || !h.is_valid(slot, 8) {
                return None;
            }
            // SAFETY: the heap just said the slot lies in one of its live
            // blocks, which stay allocated while the runtime lives.
            let word = unsafe { (slot as *const u64).read_unaligned() };
            if word & layout::TAG_MASK != layout::VALUES_TAG {
                return None;
            }
            let values = layout::values_ptr(word);
            let header = layout::capacity_word_addr(values);
            if checks.contains(CheckKind::Lifetime)
                && h.freed_memory_owner(header, layout::VALUES_HEADER_BYTES as u64)
                    .is_some()
            {
                return None;
            }
            if checks.contains(CheckKind::Bounds)
                && h.recorded_capacity(obj, values).unwrap_or(0) <= u64::from(max)
            {
                return None;
            }
            Some(word)
        })
    }

    /// Before the attribute op of `cx` on `obj` (guarded by `checks`): at a
    /// group's first member, records whether the group is clean; at a later
    /// member of a clean group, refutes the claim when its own index no
    /// longer passes with the same word.
    pub(crate) fn verify_attr_group(
        &self,
        fr: &mut Frame,
        cx: &Cx<'_, '_>,
        checks: Checks,
        obj: u64,
        index: u32,
    ) -> Result<(), InterpError> {
        let Some(groups) = (self.attr_groups.as_ref()).and_then(|g| g.get(fr.func.0 as usize))
        else {
            return Ok(());
        };
        let (bi, ii) = (cx.at.0 as u32, cx.at.1 as u32);
        let Some((gi, g)) = groups.group_of(bi, ii) else {
            return Ok(());
        };
        let gi = gi as u32;
        if g.members.first() == Some(&ii) {
            fr.attr_clean.retain(|&(open, _)| open != gi);
            if let Some(word) = self.attr_clean(g.checks, obj, g.max_index) {
                fr.attr_clean.push((gi, word));
            }
            return Ok(());
        }
        let Some(&(_, word)) = fr.attr_clean.iter().find(|&&(open, _)| open == gi) else {
            return Ok(());
        };
        if self.attr_clean(checks, obj, index) == Some(word) {
            return Ok(());
        }
        let (value, block) = cx.names(g.obj);
        let msg = format!(
            "@{}: the attribute group of %{value} in block `{block}` was clean at its first op (word {word:#x}), yet at this op the object, its word or its values array changed (something between them wrote the word or changed the runtime's records)",
            cx.func.name,
        );
        self.claim_refuted(cx.inst.loc, msg)
    }
}
