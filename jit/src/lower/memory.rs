//! Memory and object-model instructions: raw `load`/`store`, the
//! managed-dict slot (`dict_slot.load`/`.store`) and attribute access
//! (`load_attr`/`store_attr`: the values fast path on the dict word's tag,
//! the host's slow path). Offsets come from [`guardlift_abi::layout`];
//! the checks are in `guards`.

use super::attrgroup::{plain_load, plain_store, AttrRole};
use super::func::{internal, mem};
use super::guards::{Recover, Report, DICT_CHECK_ADD, DICT_CHECK_MASK};
use super::inst::Guarded;
use super::looprange::RangeVerdict;
use super::{cl_type, FnLower};
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, types, BlockArg, InstBuilder};
use cranelift_module::Module as ClModule;
use guardlift_abi::layout;
use guardlift_ir::{CheckKind, SiteId, Type, Value};
use guardlift_runtime::shadow;

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// `load`: under the lifetime check, the recover path yields 0. A
    /// member of a raw-access group whose range is clean loads unchecked.
    pub(super) fn load(
        &mut self,
        g: Guarded,
        r: Option<Value>,
        ty: Type,
        addr: Value,
        offset: i32,
    ) -> Result<(), JitError> {
        let split = match self.loop_range_clean() {
            Some(RangeVerdict::Passed) => {
                let p = self.val(addr)?;
                let v = self.b.ins().load(cl_type(ty), mem(), p, offset);
                self.def(r, v);
                return Ok(());
            }
            Some(RangeVerdict::Var(clean)) => self.clean_split(clean),
            None => match self.raw_group_dirty()? {
                Some(dirty) => self.raw_group_split(dirty),
                None => {
                    let v = self.checked_load(g, ty, addr, offset)?;
                    self.def(r, v);
                    return Ok(());
                }
            },
        };
        let t = cl_type(ty);
        let (plain, checked, join) = split;
        let join_v = self.b.append_block_param(join, t);
        self.b.switch_to_block(plain);
        let p = self.val(addr)?;
        let v = self.b.ins().load(t, mem(), p, offset);
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(checked);
        let v = self.checked_load(g, ty, addr, offset)?;
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(join);
        self.def(r, join_v);
        Ok(())
    }

    /// `load` with its checks; returns the value loaded (recover: 0 after a
    /// failed check).
    fn checked_load(
        &mut self,
        g: Guarded,
        ty: Type,
        addr: Value,
        offset: i32,
    ) -> Result<cl::Value, JitError> {
        let (lifetime, bounds) = (g.on(CheckKind::Lifetime), g.on(CheckKind::Bounds));
        let p = self.val(addr)?;
        let t = cl_type(ty);
        let (join, param) = self.join_block(lifetime.is_some() || bounds.is_some(), Some(t));
        if let Some(j) = join {
            let eff = self.effective_addr(p, offset);
            self.mem_checks(lifetime, bounds, eff, ty.bytes(), None, j, Recover::Zero(t))?;
        }
        let v = self.b.ins().load(t, mem(), p, offset);
        self.rejoin(join, Some(v));
        Ok(param.unwrap_or(v))
    }

    /// `store`: under the lifetime check (recover: skipped) and the clobber
    /// check (the runtime decides whether the store happens). A member of a
    /// raw-access group whose range is clean stores unchecked.
    pub(super) fn store(
        &mut self,
        g: Guarded,
        value: Value,
        addr: Value,
        offset: i32,
    ) -> Result<(), JitError> {
        let (plain, checked, join) = match self.loop_range_clean() {
            Some(RangeVerdict::Passed) => {
                let (x, p) = (self.val(value)?, self.val(addr)?);
                self.b.ins().store(mem(), x, p, offset);
                return Ok(());
            }
            Some(RangeVerdict::Var(clean)) => self.clean_split(clean),
            None => match self.raw_group_dirty()? {
                Some(dirty) => self.raw_group_split(dirty),
                None => return self.checked_store(g, value, addr, offset),
            },
        };
        self.b.switch_to_block(plain);
        let (x, p) = (self.val(value)?, self.val(addr)?);
        self.b.ins().store(mem(), x, p, offset);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(checked);
        self.checked_store(g, value, addr, offset)?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// `store` with its checks.
    fn checked_store(
        &mut self,
        g: Guarded,
        value: Value,
        addr: Value,
        offset: i32,
    ) -> Result<(), JitError> {
        let (lifetime, bounds) = (g.on(CheckKind::Lifetime), g.on(CheckKind::Bounds));
        let (x, p) = (self.val(value)?, self.val(addr)?);
        let t = self.ty(value);
        let (join, _) = self.join_block(lifetime.is_some() || bounds.is_some(), None);
        if let Some(j) = join {
            let eff = self.effective_addr(p, offset);
            let stored = Some((x, t));
            self.mem_checks(
                lifetime,
                bounds,
                eff,
                t.bytes(),
                stored,
                j,
                Recover::Nothing,
            )?;
        }
        match g.on(CheckKind::Clobber) {
            None => {
                self.b.ins().store(mem(), x, p, offset);
            }
            Some(id) => self.clobber_checked_store(id, x, t, p, offset)?,
        }
        self.rejoin(join, None);
        Ok(())
    }

    /// For a member of a raw-access group ([`guardlift_ir::rawgroup`]; only
    /// with a shadow): the value that is non-zero when the group's range
    /// has a bit its checks test, emitted at the group's first access.
    fn raw_group_dirty(&mut self) -> Result<Option<cl::Value>, JitError> {
        let (bi, ii) = self.at;
        let Some((gi, g)) = self.raw.group_of(bi, ii) else {
            return Ok(None);
        };
        if g.members.first() == Some(&ii) {
            let (base, lo, hi, checks) = (g.base, g.lo, g.hi, g.checks);
            let mut mask = 0u8;
            if checks.contains(CheckKind::Lifetime) || checks.contains(CheckKind::Bounds) {
                mask |= shadow::FREED_MEM | shadow::REDZONE;
            }
            if checks.contains(CheckKind::Clobber) {
                mask |= shadow::WATCH_MASK;
            }
            let p = self.val(base)?;
            let dirty = self
                .shadow_range_test(p, lo, hi, mask)
                .ok_or_else(|| internal(self.fname, "a raw-access group without a shadow"))?;
            self.raw_clean.insert(gi, dirty);
        }
        match self.raw_clean.get(&gi) {
            Some(&v) => Ok(Some(v)),
            None => Err(internal(
                self.fname,
                "a raw-access group member before its first",
            )),
        }
    }

    /// Branches on `clean` (a loop range's verdict: non-zero runs plain)
    /// to a new block (plain) or a new cold block (checked); returns
    /// (plain, checked, join), the builder still here.
    fn clean_split(&mut self, clean: cl::Value) -> (cl::Block, cl::Block, cl::Block) {
        self.access_split(clean, true)
    }

    /// Branches on `dirty` (a raw group's range test: non-zero runs
    /// checked), as [`Self::clean_split`] does on a verdict.
    fn raw_group_split(&mut self, dirty: cl::Value) -> (cl::Block, cl::Block, cl::Block) {
        self.access_split(dirty, false)
    }

    /// The plain/checked diamond of a member access: `cond` non-zero goes
    /// to the plain block when `set_is_plain`, to the cold checked one
    /// otherwise.
    fn access_split(
        &mut self,
        cond: cl::Value,
        set_is_plain: bool,
    ) -> (cl::Block, cl::Block, cl::Block) {
        let plain = self.b.create_block();
        let checked = self.b.create_block();
        let join = self.b.create_block();
        self.b.set_cold_block(checked);
        let (on_set, on_clear) = match set_is_plain {
            true => (plain, checked),
            false => (checked, plain),
        };
        self.b.ins().brif(cond, on_set, &[], on_clear, &[]);
        (plain, checked, join)
    }

    /// `dict_slot.load`: the word itself is the result, so a failed dict
    /// check simply rejoins.
    pub(super) fn dict_slot_load(
        &mut self,
        g: Guarded,
        r: Option<Value>,
        obj: Value,
    ) -> Result<(), JitError> {
        let lifetime = g.on(CheckKind::Lifetime);
        let o = self.val(obj)?;
        let (join, param) = self.join_block(lifetime.is_some(), Some(types::I64));
        if let (Some(id), Some(j)) = (lifetime, join) {
            self.obj_live_check(id, o, j, Recover::Zero(types::I64))?;
        }
        let word = self.load_word(o);
        if let Some(id) = g.on(CheckKind::Dict) {
            let ok = self.b.create_block();
            self.dict_check(id, o, word, ok)?;
            self.b.ins().jump(ok, &[]);
            self.b.switch_to_block(ok);
        }
        self.rejoin(join, Some(word));
        self.def(r, param.unwrap_or(word));
        Ok(())
    }

    /// `dict_slot.store`: the dict check runs before the write (recover:
    /// the slot is unchanged); the runtime records the last write. The
    /// write is never optimized away, not even when the next instruction
    /// writes the slot again.
    pub(super) fn dict_slot_store(
        &mut self,
        g: Guarded,
        obj: Value,
        word: Value,
    ) -> Result<(), JitError> {
        let lifetime = g.on(CheckKind::Lifetime);
        let (o, w) = (self.val(obj)?, self.val(word)?);
        let dict = g.on(CheckKind::Dict);
        let (join, _) = self.join_block(lifetime.is_some() || dict.is_some(), None);
        if let (Some(id), Some(j)) = (lifetime, join) {
            self.obj_live_check(id, o, j, Recover::Nothing)?;
        }
        if let (Some(id), Some(j)) = (dict, join) {
            self.dict_check(id, o, w, j)?;
        }
        let off = self.slot_offset();
        self.b.ins().store(mem(), w, o, off);
        // Every write of a dict slot is observable (a watchpoint counts it,
        // `foreign_write.old` shows what it left): Cranelift's alias analysis
        // would drop a store that a later one to the same slot overwrites.
        // A sequence point (no machine code) is a fence to it.
        self.b.ins().sequence_point();
        if let Some(id) = dict {
            self.note_slot_write(id, o, w)?;
        }
        self.rejoin(join, None);
        Ok(())
    }

    /// `load_attr`: recover (every check) yields 0 and reads nothing. A
    /// later member of an attribute group whose first member passed loads
    /// through that member's values pointer (`attrgroup`).
    pub(super) fn load_attr(
        &mut self,
        g: Guarded,
        r: Option<Value>,
        obj: Value,
        index: u32,
    ) -> Result<(), JitError> {
        if let Some(w) = self.own_static_word(obj)? {
            let off = self.attr_offset(index, false)?;
            let v = self.b.ins().load(types::I64, mem(), w, off);
            self.def(r, v);
            return Ok(());
        }
        let role = self.attr_role();
        if let Some(w) = self.fixed_access(&role, g, obj) {
            let off = self.attr_offset(index, false)?;
            let v = self.b.ins().load(types::I64, mem(), w, off);
            self.attr_group_close();
            self.def(r, v);
            return Ok(());
        }
        let v = match role {
            AttrRole::Later => self
                .attr_group_later(index, Some(types::I64), plain_load, |fl| {
                    fl.load_attr_checked(g, obj, index, None).map(Some)
                })?
                .ok_or_else(|| internal(self.fname, "load_attr without a result"))?,
            AttrRole::First { max_index, bounds } => {
                self.load_attr_checked(g, obj, index, Some((max_index, bounds)))?
            }
            AttrRole::Alone => self.load_attr_checked(g, obj, index, None)?,
        };
        self.attr_group_close();
        self.def(r, v);
        Ok(())
    }

    /// `load_attr` with its checks; `first`: the op opens an attribute
    /// group (its highest index, and whether to test the capacity).
    fn load_attr_checked(
        &mut self,
        g: Guarded,
        obj: Value,
        index: u32,
        first: Option<(u32, bool)>,
    ) -> Result<cl::Value, JitError> {
        let o = self.val(obj)?;
        let join = self.b.create_block();
        let res = self.b.append_block_param(join, types::I64);
        let recover = || Recover::Zero(types::I64);
        self.open_group(first);
        let (base, off, slow) = self.attr_access(g, o, index, join, recover)?;
        if let Some((_, bounds)) = first {
            self.attr_group_verdict(base, bounds)?;
        }
        let v = self.b.ins().load(types::I64, mem(), base, off);
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        // Slow path (cold): the host's LoadAttr.
        self.b.switch_to_block(slow);
        let i = self.iconst(types::I64, index as i64);
        let v = self
            .slow_path("load_attr_slow", &[o, i])?
            .ok_or_else(|| internal(self.fname, "load_attr_slow returns nothing"))?;
        self.b.ins().jump(join, &[BlockArg::Value(v)]);
        self.b.switch_to_block(join);
        Ok(res)
    }

    /// `store_attr`: recover (every check) skips the store. A later member
    /// of an attribute group whose first member passed stores through that
    /// member's values pointer (`attrgroup`).
    pub(super) fn store_attr(
        &mut self,
        g: Guarded,
        obj: Value,
        index: u32,
        value: Value,
    ) -> Result<(), JitError> {
        if let Some(w) = self.own_static_word(obj)? {
            let (x, off) = (self.val(value)?, self.attr_offset(index, false)?);
            self.b.ins().store(mem(), x, w, off);
            return Ok(());
        }
        let role = self.attr_role();
        if let Some(w) = self.fixed_access(&role, g, obj) {
            let (x, off) = (self.val(value)?, self.attr_offset(index, false)?);
            self.b.ins().store(mem(), x, w, off);
            self.attr_group_close();
            return Ok(());
        }
        match role {
            AttrRole::Later => {
                let x = self.val(value)?;
                let plain = |fl: &mut Self, base, off| plain_store(fl, x, base, off);
                self.attr_group_later(index, None, plain, |fl| {
                    fl.store_attr_checked(g, obj, index, value, None)
                        .map(|()| None)
                })?;
            }
            AttrRole::First { max_index, bounds } => {
                self.store_attr_checked(g, obj, index, value, Some((max_index, bounds)))?
            }
            AttrRole::Alone => self.store_attr_checked(g, obj, index, value, None)?,
        }
        self.attr_group_close();
        Ok(())
    }

    /// `store_attr` with its checks; `first` as for `load_attr_checked`.
    fn store_attr_checked(
        &mut self,
        g: Guarded,
        obj: Value,
        index: u32,
        value: Value,
        first: Option<(u32, bool)>,
    ) -> Result<(), JitError> {
        let (o, x) = (self.val(obj)?, self.val(value)?);
        let join = self.b.create_block();
        self.open_group(first);
        let (base, off, slow) = self.attr_access(g, o, index, join, || Recover::Nothing)?;
        if let Some((_, bounds)) = first {
            self.attr_group_verdict(base, bounds)?;
        }
        self.b.ins().store(mem(), x, base, off);
        self.b.ins().jump(join, &[]);
        // Slow path (cold): the host's StoreAttr.
        self.b.switch_to_block(slow);
        let i = self.iconst(types::I64, index as i64);
        self.slow_path("store_attr_slow", &[o, i, x])?;
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(())
    }

    /// In a clean copy, an attribute op on a fixed object with no check
    /// left (`clean_copy_checks` drops its lifetime, dict and bounds
    /// checks): the object's word, the clean header's param, from which
    /// the op addresses the values array directly — no load of the word,
    /// no tag test, no slow path (the word is the values word the entry
    /// tested, and nothing in the loop writes it: `hoist`'s second claim).
    fn fixed_access(&self, role: &AttrRole, g: Guarded, obj: Value) -> Option<cl::Value> {
        let unchecked = [CheckKind::Lifetime, CheckKind::Dict, CheckKind::Bounds]
            .iter()
            .all(|&k| g.on(k).is_none());
        (matches!(role, AttrRole::Alone) && unchecked)
            .then(|| self.fixed_word(obj))
            .flatten()
    }

    /// The guarded prologue of an attribute access of `o`: lifetime check,
    /// the dispatch on the dict word (with the dict check) and the bounds
    /// check. Leaves the builder on the values fast path and returns
    /// `(base, offset)` of attribute `index` there and the cold slow-path
    /// block. Failed checks rejoin `join` with `recover()`'s value.
    fn attr_access(
        &mut self,
        g: Guarded,
        o: cl::Value,
        index: u32,
        join: cl::Block,
        recover: impl Fn() -> Recover,
    ) -> Result<(cl::Value, i32, cl::Block), JitError> {
        let own = self.own_values_before(o, g.on(CheckKind::Lifetime).is_some())?;
        if let Some(id) = g.on(CheckKind::Lifetime) {
            self.obj_live_check(id, o, join, recover())?;
        }
        let word = self.load_word(o);
        let report = |site| Report::Dict { site, obj: o, word };
        let dict = g.on(CheckKind::Dict);
        let (base, slow) = self.attr_fast_path(dict, word, join, recover(), report)?;
        let checked = dict.is_some();
        // Lifetime of the values array (a word kept across the
        // `obj_dictify` that released it): with the bounds check, its
        // inline test covers it (only a live recorded array has a
        // capacity byte) and its slow path asks first; alone, a test of
        // the array's header. Kept in a clean copy but for its fixed
        // attributes (their word is the live object's own array).
        let site = self
            .lw
            .site_checks(&self.f.blocks[self.at.0 as usize].insts[self.at.1 as usize]);
        let inst_site = self.f.blocks[self.at.0 as usize].insts[self.at.1 as usize].site;
        let values_life = match (site.contains(CheckKind::Lifetime), inst_site) {
            (true, Some(id)) => Some(id),
            _ => None,
        };
        match g.on(CheckKind::Bounds) {
            Some(id) => {
                let life = (values_life, checked);
                self.bounds_check(id, o, base, index, life, join, recover())?;
            }
            None if values_life.is_some() && !site.contains(CheckKind::Bounds) => {
                let header = self.values_header(base, checked)?;
                let w = layout::VALUES_HEADER_BYTES;
                self.mem_checks(values_life, None, header, w, None, join, recover())?;
            }
            None => {}
        }
        let off = self.attr_offset(index, checked)?;
        let base = match own {
            Some(own) => self.own_values_join(own, base, checked),
            None => base,
        };
        Ok((base, off, slow))
    }

    pub(super) fn slot_offset(&self) -> i32 {
        self.lw.ir.layout.dict_slot_offset()
    }

    /// Loads the managed-dict word of `obj`.
    pub(super) fn load_word(&mut self, obj: cl::Value) -> cl::Value {
        let off = self.slot_offset();
        self.b.ins().load(types::I64, mem(), obj, off)
    }

    /// The constant offset of attribute `index` from the base that
    /// [`Self::attr_fast_path`] returns: `word + 1 + 8*index` from the word
    /// (uninstrumented), or `8*index` from `word + DICT_CHECK_ADD` (the
    /// checked path, whose tag test already computed that sum).
    pub(super) fn attr_offset(&self, index: u32, checked: bool) -> Result<i32, JitError> {
        self.values_offset(layout::attr_offset(index) as i64, checked)
            .ok_or_else(|| internal(self.fname, "attribute offset overflows i32"))
    }

    /// The address of the values array's header (its capacity word) from
    /// the fast path's base (see [`Self::attr_offset`]).
    fn values_header(&mut self, base: cl::Value, checked: bool) -> Result<cl::Value, JitError> {
        let off = self
            .values_offset(layout::VALUES_CAPACITY_OFFSET as i64, checked)
            .ok_or_else(|| internal(self.fname, "header offset overflows i32"))?;
        Ok(self.b.ins().iadd_imm_s(base, off as i64))
    }

    /// `off` from the values pointer, as an offset from the fast path's base.
    fn values_offset(&self, off: i64, checked: bool) -> Option<i32> {
        let from_word = layout::values_ptr(0) as i64 + off;
        let off = if checked {
            from_word - DICT_CHECK_ADD as i64
        } else {
            from_word
        };
        i32::try_from(off).ok()
    }

    /// The dispatch of `load_attr`/`store_attr` on the managed-dict word.
    /// Leaves the builder in the fast-path block (falls through from the
    /// test) and returns the base of the values access and the cold
    /// slow-path block, which the caller fills in.
    ///
    /// Uninstrumented: `test word, 1; jz slow` — values-tagged words take
    /// the fast path. Guarded: one test serves the fast path and the check,
    /// `t = word + 1; test t, 7; jnz other` (a valid values tag `0b111`
    /// wraps to `0b000`, so `t` is the values pointer), and only the cold
    /// `other` block tells a dict pointer (slow path) from a bad tag
    /// (report; recover: rejoin `join` with `recover`'s value).
    fn attr_fast_path(
        &mut self,
        site: Option<SiteId>,
        word: cl::Value,
        join: cl::Block,
        recover: Recover,
        report: impl FnOnce(u32) -> Report,
    ) -> Result<(cl::Value, cl::Block), JitError> {
        let fast = self.b.create_block();
        match site {
            None => {
                let slow = self.b.create_block();
                self.b.set_cold_block(slow);
                let is_values = self.b.ins().band_imm_u(word, layout::VALUES_BIT as i64);
                self.b.ins().brif(is_values, fast, &[], slow, &[]);
                self.b.switch_to_block(fast);
                Ok((word, slow))
            }
            Some(id) => {
                let site = self.site(id)?;
                let other = self.b.create_block();
                self.b.set_cold_block(other);
                let t = self.b.ins().iadd_imm_u(word, DICT_CHECK_ADD as i64);
                let not_values = self.b.ins().band_imm_u(t, layout::TAG_MASK as i64);
                self.b.ins().brif(not_values, other, &[], fast, &[]);
                self.b.switch_to_block(other);
                let bad = self.b.ins().band_imm_u(t, DICT_CHECK_MASK as i64);
                self.check(bad, report(site), join, recover)?;
                // A valid tag that is not the values tag: a dict (or none yet).
                let slow = self
                    .b
                    .current_block()
                    .ok_or_else(|| internal(self.fname, "no block after a check"))?;
                self.b.set_cold_block(slow);
                self.b.switch_to_block(fast);
                Ok((t, slow))
            }
        }
    }
}
