//! Attribute groups ([`guardlift_ir::attrgroup`]): the first member of a
//! block's guarded attribute ops on one object runs its checks as ever,
//! its inline bounds test testing the recorded capacity against the
//! group's highest index (the verdict); the later members then run as a plain load
//! or store through the first member's values pointer when that verdict is
//! clean, and with their own checks, in a cold copy, when it is not.
//!
//! The verdict and the values pointer live in two Cranelift variables per
//! group (groups on different objects may interleave): 0 at the
//! function's entry and again after the group's last member, and the fast
//! path's values where the first member passes its checks, so every other
//! way out of the first member (the slow path, a recovered failure)
//! leaves the verdict 0.

use super::func::mem;
use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, BlockArg, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::Module as ClModule;
use guardlift_ir::attrgroup::GROUP_CHECKS;
use guardlift_ir::{CheckKind, Checks};
use guardlift_runtime::shadow;

/// The role of the attribute op being lowered in its group.
pub(super) enum AttrRole {
    /// Not in a group, or a group lowered member by member.
    Alone,
    /// The first member: after its checks, record the verdict for a
    /// highest index of `max_index` (test the capacity when `bounds`).
    First { max_index: u32, bounds: bool },
    /// A later member of a group whose first member recorded a verdict.
    Later,
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// The effective checks of `GROUP_CHECKS` of instruction `ii` of the
    /// block being lowered.
    fn group_checks_of(&self, ii: u32) -> Checks {
        let inst = &self.f.blocks[self.at.0 as usize].insts[ii as usize];
        let c = self.checks_of(inst);
        GROUP_CHECKS
            .iter()
            .filter(|&&k| c.contains(k))
            .fold(Checks::EMPTY, |acc, &k| acc.with(k))
    }

    /// What the attribute op being lowered does for its group. At the
    /// first member the group is accepted only when its checks include the
    /// lifetime or bounds check, every member has the same effective checks (a clean loop copy drops some of them for its
    /// fixed attributes), its indices fit the capacity table (below
    /// `shadow::CAPACITY_BYTE_MAX`) and,
    /// with the bounds check, there is a table to read.
    pub(super) fn attr_role(&mut self) -> AttrRole {
        let (bi, ii) = self.at;
        let Some((gi, g)) = self.attr.group_of(bi, ii) else {
            return AttrRole::Alone;
        };
        let (members, max_index) = (g.members.clone(), g.max_index);
        if members.first() == Some(&ii) {
            let first = self.group_checks_of(ii);
            let bounds = first.contains(CheckKind::Bounds);
            // The dict check alone costs a later member no more than the
            // plain tag test it rides on: a group buys nothing there.
            let saves = first.contains(CheckKind::Lifetime) || bounds;
            let ok = saves
                && members.iter().all(|&m| self.group_checks_of(m) == first)
                && u64::from(max_index) < shadow::CAPACITY_BYTE_MAX
                && (!bounds || self.lw.shadow.is_some());
            self.attr_ok.insert(gi, ok);
            return match ok {
                true => AttrRole::First { max_index, bounds },
                false => AttrRole::Alone,
            };
        }
        // A `guard.watch` fused with this op's lifetime check expects its
        // checks to run here: lowered on its own.
        match self.attr_ok.get(&gi) {
            Some(true) if self.fused_watch.is_none() => AttrRole::Later,
            _ => AttrRole::Alone,
        }
    }

    /// Group `gi`'s verdict and values-pointer variables.
    pub(super) fn attr_vars(&mut self, gi: usize) -> (Variable, Variable) {
        if let Some(&v) = self.attr_vars.get(&gi) {
            return v;
        }
        let v = (
            self.b.declare_var(types::I8),
            self.b.declare_var(types::I64),
        );
        self.attr_vars.insert(gi, v);
        v
    }

    /// The group of the attribute op being lowered (one of its members).
    fn current_group(&self) -> Result<usize, JitError> {
        let (bi, ii) = self.at;
        (self.attr.group_of(bi, ii).map(|(gi, _)| gi))
            .ok_or_else(|| super::func::internal(self.fname, "attribute op of no group"))
    }

    /// At the function's entry (the builder there): every group's two
    /// variables 0, so that every path into a first member's checks that
    /// does not pass them (its slow path, a recovered failure, the fast
    /// path of a `guard.watch` fused with its lifetime check) carries
    /// verdict 0.
    pub(super) fn attr_groups_init(&mut self) {
        for gi in 0..self.attr.groups().len() {
            self.attr_group_reset(gi);
        }
    }

    /// Group `gi`'s verdict and values pointer back to 0 (at the entry,
    /// and after its last member: its first member then starts from 0 on
    /// every path, a loop's back edge included).
    fn attr_group_reset(&mut self, gi: usize) {
        let (clean, base) = self.attr_vars(gi);
        let zero8 = self.iconst(types::I8, 0);
        let zero = self.iconst(types::I64, 0);
        self.b.def_var(clean, zero8);
        self.b.def_var(base, zero);
    }

    /// After an attribute op: if it was the last member of a group lowered
    /// on a verdict, resets the verdict.
    pub(super) fn attr_group_close(&mut self) {
        let (bi, ii) = self.at;
        let Some((gi, g)) = self.attr.group_of(bi, ii) else {
            return;
        };
        if g.members.last() == Some(&ii) && self.attr_ok.get(&gi) == Some(&true) {
            self.attr_group_reset(gi);
        }
    }

    /// Before the first member's checks (`first`: it opens a group, with
    /// its highest index and whether it tests the capacity): with the
    /// bounds check, its inline bounds test — always made, since a group
    /// with the bounds check needs a shadow and indices below
    /// `shadow::CAPACITY_BYTE_MAX`
    /// ([`Self::attr_role`]) — tests the highest index, and its outcome
    /// is the verdict ([`Self::attr_group_pass`]).
    pub(super) fn open_group(&mut self, first: Option<(u32, bool)>) {
        self.group_bounds = first.filter(|&(_, bounds)| bounds).map(|(m, _)| m);
    }

    /// The first member's inline bounds test, `room` (the recorded
    /// capacity exceeds the group's highest index), is the group's
    /// verdict: the values fast path is reached with it 1, or with it 0
    /// through the runtime's bounds decision (an array too small for the
    /// group, or without a record) — the byte and compare the test made,
    /// not loaded and made a second time.
    pub(super) fn attr_group_pass(&mut self, room: cl::Value) -> Result<(), JitError> {
        let gi = self.current_group()?;
        let (clean, _) = self.attr_vars(gi);
        self.b.def_var(clean, room);
        Ok(())
    }

    /// On the first member's values fast path, after its checks: the
    /// verdict — with `bounds`, already defined by its inline bounds test
    /// ([`Self::attr_group_pass`]), else 1 — and the values base `base`
    /// (as the fast path returned it).
    pub(super) fn attr_group_verdict(
        &mut self,
        base: cl::Value,
        bounds: bool,
    ) -> Result<(), JitError> {
        let gi = self.current_group()?;
        let (clean, var_base) = self.attr_vars(gi);
        if bounds {
            if self.group_bounds.take().is_some() {
                return Err(super::func::internal(
                    self.fname,
                    "a group's first member made no inline bounds test",
                ));
            }
        } else {
            let one = self.iconst(types::I8, 1);
            self.b.def_var(clean, one);
        }
        self.b.def_var(var_base, base);
        Ok(())
    }

    /// A later member: branches on the group's verdict to a plain access
    /// through the first member's values base (built by `plain`, given
    /// the base and the attribute's offset from it) or to a cold block
    /// where `checked` lowers the op with its own checks; both jump to
    /// the returned join with their result (`ty`: load_attr's).
    pub(super) fn attr_group_later(
        &mut self,
        index: u32,
        ty: Option<cl::Type>,
        plain: impl FnOnce(&mut Self, cl::Value, i32) -> Option<cl::Value>,
        checked: impl FnOnce(&mut Self) -> Result<Option<cl::Value>, JitError>,
    ) -> Result<Option<cl::Value>, JitError> {
        let gi = self.current_group()?;
        let (clean, var_base) = self.attr_vars(gi);
        let verdict = self.b.use_var(clean);
        let base = self.b.use_var(var_base);
        let dict_checked = self.group_checks_of(self.at.1).contains(CheckKind::Dict);
        let off = self.attr_offset(index, dict_checked)?;
        let (fast, cold, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.set_cold_block(cold);
        let res = ty.map(|t| self.b.append_block_param(join, t));
        self.b.ins().brif(verdict, fast, &[], cold, &[]);
        self.b.switch_to_block(fast);
        let v = plain(self, base, off);
        let args: Vec<BlockArg> = v.into_iter().map(BlockArg::Value).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(cold);
        let first = self.b.func.dfg.num_blocks();
        let v = checked(self)?;
        let args: Vec<BlockArg> = v.into_iter().map(BlockArg::Value).collect();
        self.b.ins().jump(join, &args);
        // All of the member's own checks are off the hot path.
        self.cold_since(first);
        self.b.switch_to_block(join);
        Ok(res)
    }
}

/// A later member's plain `load_attr`: the attribute through the base.
pub(super) fn plain_load<M: ClModule + ?Sized>(
    fl: &mut FnLower<'_, '_, M>,
    base: cl::Value,
    off: i32,
) -> Option<cl::Value> {
    Some(fl.b.ins().load(types::I64, mem(), base, off))
}

/// A later member's plain `store_attr` of `x`.
pub(super) fn plain_store<M: ClModule + ?Sized>(
    fl: &mut FnLower<'_, '_, M>,
    x: cl::Value,
    base: cl::Value,
    off: i32,
) -> Option<cl::Value> {
    fl.b.ins().store(mem(), x, base, off);
    None
}
