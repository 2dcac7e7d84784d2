//! Memory and the object model: raw `load`/`store` and the managed-dict
//! ops (`dict_slot.*`, `load_attr`/`store_attr` with their values-array
//! fast path and the runtime's slow path), each with the checks of its
//! guard in spec order. Every access goes through [`Interpreter::read_mem`]
//! / [`Interpreter::write_mem`], which refuse anything outside a live block
//! of the runtime's heap: a wild access is a fault here, not a crash.

use crate::frame::{wild, Cx, Frame, Step};
use crate::values::{canon, store_bits};
use crate::{InterpError, Interpreter};
use guardlift_ir::{CheckKind, Checks, InstKind, SrcLoc};
use guardlift_runtime::internals::*;
use guardlift_runtime::layout;
use guardlift_runtime::watch;
use guardlift_runtime::Mode;

/// Where attribute `index` of an object lives.
enum AttrPlace {
    /// In its values array, at this address.
    Values(u64),
    /// In its dict: the runtime's slow path.
    Slow,
}

impl<'m> Interpreter<'m> {
    /// Reads `bytes` (1, 4 or 8) at `addr`, which must lie in a live heap block.
    pub(crate) fn read_mem(&self, loc: SrcLoc, addr: u64, bytes: u32) -> Result<u64, InterpError> {
        let ok = self.rt.with_heap(|h| h.is_valid(addr, bytes as u64));
        if !ok {
            return wild(loc, "load", bytes, addr);
        }
        // SAFETY: the heap just said [addr, addr+bytes) lies inside one of its
        // live blocks, which stay allocated while the runtime (held by `self`)
        // lives; the reads are unaligned-tolerant.
        Ok(unsafe {
            match bytes {
                1 => (addr as *const u8).read_unaligned() as u64,
                4 => (addr as *const u32).read_unaligned() as u64,
                _ => (addr as *const u64).read_unaligned(),
            }
        })
    }

    /// Writes the low `bytes` (1, 4 or 8) of `v` at `addr`, which must lie
    /// in a live heap block.
    pub(crate) fn write_mem(
        &self,
        loc: SrcLoc,
        addr: u64,
        bytes: u32,
        v: u64,
    ) -> Result<(), InterpError> {
        let ok = self.rt.with_heap(|h| h.is_valid(addr, bytes as u64));
        if !ok {
            return wild(loc, "store", bytes, addr);
        }
        // SAFETY: the heap just said [addr, addr+bytes) lies inside one of its
        // live blocks (program data, no Rust object aliases it), which stay
        // allocated while the runtime lives; the writes are unaligned-tolerant.
        unsafe {
            match bytes {
                1 => (addr as *mut u8).write_unaligned(v as u8),
                4 => (addr as *mut u32).write_unaligned(v as u32),
                _ => (addr as *mut u64).write_unaligned(v),
            }
        }
        Ok(())
    }

    /// `stack_alloc SIZE` of the top frame: its area (a block of the
    /// runtime's heap, so raw accesses into it are checked like any),
    /// zeroed each time the instruction runs.
    pub(crate) fn stack_alloc(
        &self,
        fr: &mut Frame,
        cx: &Cx<'_, 'm>,
        size: u32,
    ) -> Result<u64, InterpError> {
        let areas = fr.areas.get_or_insert_with(Default::default);
        if let Some(&p) = areas.get(&cx.at) {
            self.rt.with_heap(|h| h.zero_stack_area(p));
            return Ok(p);
        }
        let Some(p) = self.rt.with_heap(|h| h.alloc_stack_area(size)) else {
            return crate::frame::fault(cx.inst.loc, "stack_alloc: out of memory");
        };
        areas.insert(cx.at, p);
        Ok(p)
    }

    /// Gives back the `stack_alloc` areas of a frame that returned.
    pub(crate) fn free_areas(&self, fr: &Frame) {
        if let Some(areas) = &fr.areas {
            self.rt
                .with_heap(|h| areas.values().for_each(|&p| h.free_stack_area(p)));
        }
    }

    /// Runs a `load` or `store` of the top frame `fr`.
    pub(crate) fn exec_mem(&self, fr: &mut Frame, cx: &Cx<'_, 'm>) -> Result<Step, InterpError> {
        let inst = cx.inst;
        let loc = inst.loc;
        let g = self.guard(inst);
        match &inst.kind {
            InstKind::Load { ty, addr, offset } => {
                let a = fr.val(*addr).wrapping_add(*offset as i64 as u64);
                self.verify_raw_group(fr, cx, g.0, a, ty.bytes())?;
                if !self.mem_live(cx.callers, g, a, ty.bytes())?
                    || !self.mem_in_bounds(cx.callers, g, (a, ty.bytes()), None)?
                {
                    return Ok(Step::Set(0));
                }
                Ok(Step::Set(canon(*ty, self.read_mem(loc, a, ty.bytes())?)))
            }
            InstKind::Store {
                value,
                addr,
                offset,
            } => {
                let t = cx.func.ty(*value);
                let a = fr.val(*addr).wrapping_add(*offset as i64 as u64);
                let x = store_bits(t, fr.val(*value));
                self.verify_raw_group(fr, cx, g.0, a, t.bytes())?;
                if !self.mem_live(cx.callers, g, a, t.bytes())?
                    || !self.mem_in_bounds(cx.callers, g, (a, t.bytes()), Some(x))?
                {
                    return Ok(Step::Next);
                }
                let (checks, site) = g;
                if checks.contains(CheckKind::Clobber)
                    && self.rt.clobber_check(site, a, t.bytes(), x)
                {
                    if self.rt.mode() != Mode::Recover {
                        return Err(InterpError::Aborted);
                    }
                    return Ok(Step::Next);
                }
                self.with_frames(cx.watch, cx.func, inst, || {
                    self.write_mem(loc, a, t.bytes(), x)
                })?;
                Ok(Step::Next)
            }
            _ => self.exec_object(fr, cx, g),
        }
    }

    /// Runs an object-model op (`dict_slot.*`, `load_attr`, `store_attr`)
    /// guarded by `g`.
    fn exec_object(
        &self,
        fr: &mut Frame,
        cx: &Cx<'_, 'm>,
        g: (Checks, u32),
    ) -> Result<Step, InterpError> {
        let (inst, callers) = (cx.inst, cx.callers);
        let loc = inst.loc;
        match &inst.kind {
            InstKind::DictSlotLoad { obj } => {
                let o = fr.val(*obj);
                if !self.live(callers, g, o)? {
                    return Ok(Step::Set(0));
                }
                let word = self.read_mem(loc, self.rt.layout().slot_addr(o), 8)?;
                // A bad word is still the load's result (spec §6).
                self.dict_ok(callers, g, o, word)?;
                Ok(Step::Set(word))
            }
            InstKind::DictSlotStore { obj, word } => {
                let (o, w) = (fr.val(*obj), fr.val(*word));
                if !self.live(callers, g, o)? || !self.dict_ok(callers, g, o, w)? {
                    return Ok(Step::Next);
                }
                // An instrumented module's store is guardlift's own write;
                // uninstrumented IR code is foreign to a watchpoint (§6.1).
                let write = || self.write_mem(loc, self.rt.layout().slot_addr(o), 8, w);
                self.with_frames(cx.watch, cx.func, inst, || {
                    if self.m.is_instrumented() {
                        watch::runtime_write(write)
                    } else {
                        write()
                    }
                })?;
                if g.0.contains(CheckKind::Dict) {
                    self.rt.note_slot_write(g.1, o, w);
                }
                Ok(Step::Next)
            }
            InstKind::LoadAttr { obj, index } => {
                let o = fr.val(*obj);
                self.verify_attr_group(fr, cx, g.0, o, *index)?;
                let fixed = self.is_fixed(fr, cx.at.1, *obj, *index);
                let entry = self.fixed_entry_word(fr, *obj).filter(|_| fixed);
                Ok(Step::Set(
                    match self.attr_place(cx, g, (o, fixed, entry), *index)? {
                        None => 0,
                        Some(AttrPlace::Values(a)) => self.read_mem(loc, a, 8)?,
                        Some(AttrPlace::Slow) => self.rt.load_attr_slow(o, *index) as u64,
                    },
                ))
            }
            InstKind::StoreAttr { obj, index, value } => {
                let (o, x) = (fr.val(*obj), fr.val(*value));
                self.verify_attr_group(fr, cx, g.0, o, *index)?;
                let fixed = self.is_fixed(fr, cx.at.1, *obj, *index);
                let entry = self.fixed_entry_word(fr, *obj).filter(|_| fixed);
                match self.attr_place(cx, g, (o, fixed, entry), *index)? {
                    None => {}
                    Some(AttrPlace::Values(a)) => self.write_mem(loc, a, 8, x)?,
                    Some(AttrPlace::Slow) => self.rt.store_attr_slow(o, *index, x as i64),
                }
                Ok(Step::Next)
            }
            _ => Err(InterpError::Internal {
                loc,
                msg: format!("{} is not a memory op", inst.kind.opcode()),
            }),
        }
    }

    /// Where attribute `index` of `obj` lives, after the lifetime, dict and
    /// bounds checks of `g`; `None` when one failed in recover mode.
    /// `fixed`: `obj` is a fixed attribute of a claimed loop (its bounds
    /// test is verified not to fail, `crate::hoist`), `entry` the word
    /// its activation's entry saw.
    fn attr_place(
        &self,
        cx: &Cx,
        g: (Checks, u32),
        (obj, fixed, entry): (u64, bool, Option<u64>),
        index: u32,
    ) -> Result<Option<AttrPlace>, InterpError> {
        let (callers, loc) = (cx.callers, cx.inst.loc);
        if g.0.contains(CheckKind::Lifetime) {
            // The JIT's own-values test may stand for these checks.
            self.check_own_values(cx, obj, index)?;
        }
        if !self.live(callers, g, obj)? {
            return Ok(None);
        }
        let word = self.read_mem(loc, self.rt.layout().slot_addr(obj), 8)?;
        if fixed {
            // The JIT drops a fixed attribute's dict test too.
            self.check_fixed_word(cx, obj, (word, entry))?;
        }
        if !self.dict_ok(callers, g, obj, word)? {
            return Ok(None);
        }
        if word & layout::VALUES_BIT == 0 {
            return Ok(Some(AttrPlace::Slow));
        }
        let values = layout::values_ptr(word);
        // Lifetime, for the values array: a word kept across the
        // `obj_dictify` that released its array (quarantined) — tested on
        // the array's header, its capacity word.
        let header = layout::capacity_word_addr(values);
        if !self.mem_live(callers, g, header, layout::VALUES_HEADER_BYTES)? {
            return Ok(None);
        }
        if fixed {
            self.check_fixed(cx, (obj, values), index)?;
        }
        if !self.bounds_ok(callers, g, (obj, values), index)? {
            return Ok(None);
        }
        let a = values.wrapping_add(layout::attr_offset(index) as u64);
        Ok(Some(AttrPlace::Values(a)))
    }
}
