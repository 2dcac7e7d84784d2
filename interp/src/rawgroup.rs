//! Verification of the raw-access groups ([`guardlift_ir::rawgroup`]) and
//! loop ranges ([`guardlift_ir::looprange`]) while running: the JIT tests
//! a group's whole range once, at its first access, and a loop range's at
//! each entry into its loop, and runs the accesses unchecked when that
//! test passes, on the claim that nothing between them changes the
//! runtime's records of memory. Here, at the first access (the loop's
//! entry), the frame records whether the range passes the checks (by the
//! runtime's records: the JIT's shadow test passing implies it); an access
//! of a group or range recorded clean whose own checks then fail — or, for
//! a loop range, that falls outside the range — refutes the claim.

use crate::frame::{Cx, Frame};
use crate::{InterpError, Interpreter};
use guardlift_ir::analysis::context::FuncAnalysis;
use guardlift_ir::hoist::HostModel;
use guardlift_ir::looprange::{entry_range, LoopRange, LoopRanges};
use guardlift_ir::rawgroup::{RawGroups, GROUP_CHECKS};
use guardlift_ir::{BlockCall, CheckKind, Checks, Function, Module};
use guardlift_runtime::internals::*;

/// One function's raw-access groups and loop ranges.
pub(crate) struct FuncClaims {
    groups: RawGroups,
    ranges: LoopRanges,
}

/// Per function, its claims.
pub(crate) type GroupClaims = Vec<FuncClaims>;

/// The groups and ranges of every function of `m` (with the ranges of
/// its clean loops' clean copies against `host`, as the JIT finds them).
pub(crate) fn group_claims(m: &Module, host: HostModel) -> GroupClaims {
    (m.functions.iter())
        .map(|f| {
            let ranges = match f.blocks.len() {
                0 | 1 => LoopRanges::default(),
                _ => {
                    let an = FuncAnalysis::new(f);
                    let clean = an.clean_loops(m, host);
                    LoopRanges::of_in_with(f, m, (an.cfg(), an.domtree()), &clean)
                }
            };
            FuncClaims {
                groups: RawGroups::of_excluding(f, m, &ranges),
                ranges,
            }
        })
        .collect()
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
        let Some(claims) = self
            .raw_groups
            .as_ref()
            .and_then(|g| g.get(fr.func.0 as usize))
        else {
            return Ok(());
        };
        let (bi, ii) = (cx.at.0 as u32, cx.at.1 as u32);
        if let Some((ri, _)) = claims.ranges.range_of(bi, ii) {
            return self.verify_loop_range(fr, cx, ri as u32, checks, (addr, width));
        }
        let Some((gi, g)) = claims.groups.group_of(bi, ii) else {
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

    /// A ranged access of range `ri` (the instruction of `cx`, guarded by
    /// `checks`, touching `width` bytes at `addr`): refutes the claim when
    /// the range was recorded clean at the loop's entry and the access
    /// falls outside it or fails its own checks.
    fn verify_loop_range(
        &self,
        fr: &Frame,
        cx: &Cx<'_, '_>,
        ri: u32,
        checks: Checks,
        (addr, width): (u64, u32),
    ) -> Result<(), InterpError> {
        let Some(&(_, lo, hi)) = fr.loop_clean.iter().find(|c| c.0 == ri) else {
            return Ok(());
        };
        let own = GROUP_CHECKS
            .iter()
            .filter(|&&k| checks.contains(k))
            .fold(Checks::EMPTY, |c, &k| c.with(k));
        let inside = lo <= addr && addr.checked_add(u64::from(width)).is_some_and(|e| e <= hi);
        if inside && self.passes(own, addr, u64::from(width)) {
            return Ok(());
        }
        let msg = format!(
            "@{}: the loop range [{lo:#x}, {hi:#x}) passed its test at the loop's entry, yet this access at {addr:#x} ({width} bytes) {} (the counter left its range, or something in the loop changed the runtime's records)",
            cx.func.name,
            if inside { "fails its checks" } else { "lies outside it" },
        );
        self.claim_refuted(cx.inst.loc, msg)
    }

    /// On a branch of frame `fr` from block `from` to `dest` (the params
    /// already bound): entering a loop with ranges from outside records
    /// which of them are clean, with their address range.
    pub(crate) fn enter_loop_ranges(
        &self,
        fr: &mut Frame,
        func: &Function,
        from: u32,
        dest: &BlockCall,
    ) {
        let Some(claims) = (self.raw_groups.as_ref()).and_then(|g| g.get(fr.func.0 as usize))
        else {
            return;
        };
        let h = dest.block.0;
        for (ri, r) in claims.ranges.of_header(h) {
            // A clean copy's ranges: at the fixed attributes' entry test
            // (`Interpreter::enter_clean_copy_ranges`).
            if r.contains(from) || r.clean_copy {
                continue;
            }
            self.record_loop_range(fr, func, (ri as u32, r));
        }
    }

    /// Records at a loop entry of frame `fr` (the header's params bound)
    /// whether range `ri` is clean, with its address range.
    fn record_loop_range(&self, fr: &mut Frame, func: &Function, (ri, r): (u32, &LoopRange)) {
        fr.loop_clean.retain(|c| c.0 != ri);
        let Some(&counter) = func.blocks[r.header as usize].params.get(r.counter) else {
            return;
        };
        let (base, init, n) = (
            fr.val(r.base),
            fr.val(counter) as i64,
            fr.val(r.bound) as i64,
        );
        match entry_range(r, base, init, n) {
            Some(None) => fr.loop_clean.push((ri, 0, 0)),
            Some(Some((lo, hi))) if self.passes(r.checks, lo, hi - lo) => {
                fr.loop_clean.push((ri, lo, hi))
            }
            _ => {}
        }
    }

    /// Do the clean copy's ranges of the loop headed by `h` all pass in
    /// frame `fr` (the header's params bound), as the JIT's dispatch tests
    /// them on its way into the clean copy? It enters the checked copy
    /// otherwise.
    pub(crate) fn clean_copy_ranges_pass(&self, fr: &Frame, h: u32) -> bool {
        let Some(claims) = (self.raw_groups.as_ref()).and_then(|g| g.get(fr.func.0 as usize))
        else {
            return true;
        };
        let func = self.m.func(fr.func);
        (claims.ranges.of_header(h).filter(|(_, r)| r.clean_copy)).all(|(_, r)| {
            let Some(&counter) = func.blocks[r.header as usize].params.get(r.counter) else {
                return false;
            };
            let (base, init, n) = (
                fr.val(r.base),
                fr.val(counter) as i64,
                fr.val(r.bound) as i64,
            );
            match entry_range(r, base, init, n) {
                Some(None) => true,
                Some(Some((lo, hi))) => self.passes(r.checks, lo, hi - lo),
                None => false,
            }
        })
    }

    /// When frame `fr` enters the clean loop headed by `h` with its fixed
    /// attributes holding (`entered`: the activation the JIT's clean copy
    /// runs in) records its clean copy's ranges, as the dispatch tests
    /// them; otherwise (the activation ended: an exit, a side exit) forgets
    /// them.
    pub(crate) fn enter_clean_copy_ranges(&self, fr: &mut Frame, h: u32, entered: bool) {
        let Some(claims) = (self.raw_groups.as_ref()).and_then(|g| g.get(fr.func.0 as usize))
        else {
            return;
        };
        let func = self.m.func(fr.func);
        for (ri, r) in claims.ranges.of_header(h).filter(|(_, r)| r.clean_copy) {
            match entered {
                true => self.record_loop_range(fr, func, (ri as u32, r)),
                false => fr.loop_clean.retain(|c| c.0 != ri as u32),
            }
        }
    }
}
