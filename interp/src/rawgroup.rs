//! Verification of the raw-access groups ([`guardlift_ir::rawgroup`])
//! while running: the JIT tests a group's whole range once, at its first
//! access, and runs the group's accesses unchecked when that test passes,
//! on the claim that nothing between them changes the runtime's records of
//! memory. Here, at the first access, the frame records whether the range
//! passes the group's checks (by the runtime's records: the JIT's shadow
//! test passing implies it); an access of a group recorded clean whose own
//! checks then fail refutes the claim.

use crate::frame::{Cx, Frame};
use crate::{InterpError, Interpreter};
use guardlift_ir::rawgroup::{RawGroups, GROUP_CHECKS};
use guardlift_ir::{CheckKind, Checks, Module};
use guardlift_runtime::internals::*;

/// Per function, its groups.
pub(crate) type GroupClaims = Vec<RawGroups>;

/// The groups of every function of `m`.
pub(crate) fn group_claims(m: &Module) -> GroupClaims {
    m.functions.iter().map(|f| RawGroups::of(f, m)).collect()
}

impl Interpreter<'_> {
    /// Does `[addr, addr + width)` pass the `checks` (of [`GROUP_CHECKS`])
    /// by the runtime's records (reporting nothing)?
    fn passes(&self, checks: Checks, addr: u64, width: u64) -> bool {
        self.rt.with_heap(|h| {
            !(checks.contains(CheckKind::Lifetime) && h.freed_memory_owner(addr, width).is_some()
                || checks.contains(CheckKind::Bounds) && h.redzone_owner(addr, width).is_some()
                || checks.contains(CheckKind::Clobber)
                    && h.watched_owner(addr, width.min(u32::MAX as u64) as u32)
                        .is_some())
        })
    }

    /// Before a raw access of `width` bytes at `addr` (the instruction of
    /// `cx`, guarded by `checks`): records at a group's first access
    /// whether its range is clean, and refutes the group's claim when an
    /// access of a clean group would fail its own checks.
    pub(crate) fn verify_raw_group(
        &self,
        fr: &mut Frame,
        cx: &Cx<'_, '_>,
        checks: Checks,
        addr: u64,
        width: u32,
    ) -> Result<(), InterpError> {
        let Some(groups) = self
            .raw_groups
            .as_ref()
            .and_then(|g| g.get(fr.func.0 as usize))
        else {
            return Ok(());
        };
        let (bi, ii) = (cx.at.0 as u32, cx.at.1 as u32);
        let Some((gi, g)) = groups.group_of(bi, ii) else {
            return Ok(());
        };
        let gi = gi as u32;
        if g.members.first() == Some(&ii) {
            let lo = fr.val(g.base).wrapping_add(g.lo as u64);
            let clean = self.passes(g.checks, lo, (g.hi - g.lo) as u64);
            fr.raw_clean.retain(|&x| x != gi);
            if clean {
                fr.raw_clean.push(gi);
            }
        }
        let own = GROUP_CHECKS
            .iter()
            .filter(|&&k| checks.contains(k))
            .fold(Checks::EMPTY, |c, &k| c.with(k));
        if !fr.raw_clean.contains(&gi) || self.passes(own, addr, width as u64) {
            return Ok(());
        }
        let (value, block) = cx.names(g.base);
        let msg = format!(
            "@{}: the raw-access group of %{value} in block `{block}` passed its range test, yet this access at {addr:#x} fails its checks (something between them changed the runtime's records)",
            cx.func.name,
        );
        self.claim_refuted(cx.inst.loc, msg)
    }
}
