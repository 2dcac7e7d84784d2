//! The trust shapes of issue 28 in generated modules (every check decides
//! from the runtime's records, never from memory the program can
//! rewrite), and the loop shapes around the JIT's versioned loops:
//!
//! - a raw store forging an object's capacity word (`values - 8`), read
//!   back raw, then attribute ops past the real capacity (`bounds`
//!   compares with the recorded capacity; under `clobber` the forging
//!   store is a `slot_clobber`, skipped);
//! - `obj_dictify` with the values pointer and the values-tagged word
//!   kept across it, then used: raw loads/stores through the pointer, or
//!   the old word written back with `dict_slot.store` and attribute ops
//!   through it (`use_after_free`, the dictify call the free site), with
//!   an `obj_new` after the dictify (the released array must not be
//!   reused);
//! - raw loads/stores at and around objects and values arrays: the
//!   capacity word and the last attribute (no report) and the redzones
//!   just before and after the values array and the object's block
//!   (`heap_overflow`);
//! - an object made, used and freed inside a loop body;
//! - raw accesses through one values pointer in one block (a raw-access
//!   group, `guardlift_ir::rawgroup`: the JIT tests their range once),
//!   with an `obj_free` or `obj_dictify` of the object between them and
//!   then accesses to the released array (`use_after_free`), or one access
//!   just past the array, or half past it (`heap_overflow`, the range test
//!   fails);
//! - attribute ops on one object in one block (an attribute group,
//!   `guardlift_ir::attrgroup`: the JIT runs the later ones through the
//!   first one's values pointer) with a free, a dictify or another
//!   object's word written to the slot between them, or a later index past
//!   the capacity;
//! - `guard.watch` of an interior pointer (an unaligned slot) and a raw
//!   store into that slot's bytes outside the object's own slot;
//! - a counted loop walking a values array at `values + 8·i + off` (a loop
//!   range, `guardlift_ir::looprange`: the JIT tests the range the loop
//!   can touch once at its entry): clean, one item past the end or one
//!   before the array (`heap_overflow` at the last / first iteration), or
//!   after the object is freed (`use_after_free` at every iteration).
//!
//! Each access that breaks a rule is a fault of [`super::faults`]: guarded
//! by hand or recorded in [`super::Needs`] (`bounds`, `lifetime`), so an
//! uninstrumented run never makes it; what the program may do
//! uninstrumented (the forging store: the word is inside the array's
//! block) both engines do alike on the model heap. The objects are fresh
//! ones; a forged or dictified one joins the pool only half the time.

use super::{FnGen, Obj, BUF_BYTES};
use guardlift_ir::{BinOp, CheckKind, Checks, ConvOp, IntCC, SrcLoc, Type, Value};
use guardlift_runtime::heap::REDZONE_BYTES;
use guardlift_runtime::layout::VALUES_CAPACITY_OFFSET;

/// Bytes of the heap's redzones (spec §6: at least 16).
const REDZONE: i32 = REDZONE_BYTES as i32;

/// The capacity word's offset from the managed-dict word of a
/// values-tagged object (the values pointer is the word + 1).
const CAP_FROM_WORD: i32 = VALUES_CAPACITY_OFFSET + 1;

impl FnGen<'_, '_, '_> {
    /// A trust-shape fault (see the module's header).
    pub(super) fn trust_fault(&mut self) {
        match self.src.weighted(&[2, 3, 2]) {
            0 => self.forged_capacity(),
            1 => self.dictify_kept_values(),
            _ => self.redzone_access(),
        }
        // Besides (not instead of) the others, which keep their share.
        if self.src.chance(2, 3) {
            self.raw_group();
        }
        if self.src.chance(2, 3) {
            // One or two: its five cases each keep a share above 1 %.
            for _ in 0..self.src.range(1, 2) {
                self.attr_group();
            }
        }
        if self.src.chance(2, 3) {
            self.loop_range();
        }
        if self.src.chance(1, 4) {
            self.unaligned_watch();
        }
    }

    /// Shape 7: `guard.watch` of an interior pointer `p = o ± k` (`k` in
    /// 1..=7: its slot is unaligned), then a raw store of `w ≤ k` bytes
    /// into the part of `p`'s slot outside `o`'s own — bytes of `o`'s
    /// block that nothing else uses (between the slot and the body, on
    /// either side as the layout puts the slot). It is a `slot_clobber`
    /// wherever the store carries the clobber check (by hand here, or the
    /// pass's); else a harmless write, alike on every engine. The JIT's
    /// inline watch test must send an unaligned slot to the runtime
    /// (mutant `watch-skips-odd-slots`).
    fn unaligned_watch(&mut self) {
        let slot = self.ms.layout.dict_slot_offset();
        let body = guardlift_runtime::heap::OBJ_BODY_BYTES as i32;
        // The 7 bytes the store may touch must be the block's unused ones.
        if (slot < 0 && slot + 8 + 7 > 0) || (slot >= 0 && slot - 7 < body) {
            return;
        }
        let (o, _) = self.fresh_obj();
        let k = self.src.range(1, 7) as i32;
        // Below the object (slot < 0): p = o + k, the bytes just past o's
        // slot; above it: p = o - k, the bytes just before o's slot.
        let (delta, at) = match slot < 0 {
            true => (k, slot + 8),
            false => (-k, slot - k),
        };
        let d = self.iconst(Type::I64, i64::from(delta));
        let p = self.fb.binary(BinOp::Iadd, o.v, d);
        self.fb.watch(p);
        let ty = match k >= 4 && self.src.chance(1, 2) {
            true => Type::I32,
            false => Type::I8,
        };
        let x = self.pick_compat(ty);
        self.fb.store(x, o.v, at);
        if self.src.chance(1, 2) {
            self.hand_guard();
        }
        self.ev.insert("trust.unaligned_watch");
    }

    /// Shape 6: a counted loop over a fresh object's values array (see
    /// the module's header); its loads fold into one value of the pool.
    fn loop_range(&mut self) {
        let (o, w) = self.fresh_obj();
        let n = o.nattrs;
        if self.ms.cfg.max_mult / self.mult <= u64::from(n) {
            return;
        }
        let one = self.iconst(Type::I64, 1);
        let values = self.fb.binary(BinOp::Iadd, w, one);
        // 0 clean, 1 one past the end, 2 one before the array, 3 freed.
        let kind = self.src.weighted(&[2, 1, 1, 1]);
        let (bound, off) = match kind {
            1 => (n + 1, 0),
            2 => (n, -16),
            _ => (n, 0),
        };
        // Half the other walks address each item from the one before
        // (`off + 8`, one iteration fewer): the same bytes, in a range
        // that starts 8 bytes in, which the JIT's entry test takes on its
        // general path (its fast path is for 8-byte items at offset 0).
        let shifted = kind != 2 && bound > 1 && self.src.chance(1, 2);
        let (bound, off) = match shifted {
            true => (bound - 1, off + 8),
            false => (bound, off),
        };
        if shifted {
            self.ev.insert("looprange.shifted");
        }
        if kind == 3 {
            self.fb.call(self.ms.ext.obj_free, &[o.v]);
        }
        let bound = self.iconst(Type::I64, i64::from(bound));
        let zero = self.iconst(Type::I64, 0);
        let acc0 = self.pick_compat(Type::I64);
        let header = self.fb.create_block("walk");
        let body = self.fb.create_block("step");
        let exit = self.fb.create_block("walked");
        let i = self.fb.append_block_param(header, Type::I64);
        let acc = self.fb.append_block_param(header, Type::I64);
        let out = self.fb.append_block_param(exit, Type::I64);
        self.fb.jump(header, &[zero, acc0]);
        self.fb.switch_to_block(header);
        let done = self.fb.icmp(IntCC::Sge, i, bound);
        self.fb.brif(done, exit, &[acc], body, &[]);
        self.fb.switch_to_block(body);
        let t = if self.src.chance(1, 2) {
            let three = self.iconst(Type::I64, 3);
            self.fb.binary(BinOp::Ishl, i, three)
        } else {
            let eight = self.iconst(Type::I64, 8);
            self.fb.binary(BinOp::Imul, eight, i)
        };
        let a = match self.src.chance(1, 2) {
            true => self.fb.binary(BinOp::Iadd, values, t),
            false => self.fb.binary(BinOp::Iadd, t, values),
        };
        // Stores only where they stay in the items (a clean walk).
        let acc2 = if kind == 0 && self.src.chance(1, 2) {
            self.fb.store(acc, a, off);
            acc
        } else {
            let r = self.fb.load(Type::I64, a, off);
            match kind {
                1 | 2 => self.object_fault_guard(|n| n.bounds = true),
                3 => self.object_fault_guard(|n| n.lifetime = true),
                _ => {}
            }
            self.fb.binary(BinOp::Bxor, acc, r)
        };
        let i2 = self.fb.binary(BinOp::Iadd, i, one);
        self.fb.jump(header, &[i2, acc2]);
        self.fb.switch_to_block(exit);
        self.vals.push(out);
        self.ev.insert(match kind {
            0 => "looprange.clean",
            _ => "looprange.dirty",
        });
        if kind != 3 && self.src.chance(1, 2) {
            self.objs.push(o);
        }
    }

    /// A fresh object of 1 to 4 attributes (not in the pool) and its word.
    fn fresh_obj(&mut self) -> (Obj, Value) {
        let nattrs = self.src.range(1, 4);
        self.fresh_obj_of(nattrs)
    }

    /// A fresh object of `nattrs` attributes (not in the pool) and its word.
    pub(super) fn fresh_obj_of(&mut self, nattrs: u32) -> (Obj, Value) {
        let n = self.iconst(Type::I64, nattrs as i64);
        let v = self
            .fb
            .call(self.ms.ext.obj_new, &[n])
            .expect("obj_new returns");
        let w = self.fb.dict_slot_load(v);
        (Obj { v, nattrs }, w)
    }

    /// An attribute op at index `i` of `o`, a fault guarded by hand or
    /// needing `need` (a load's value joins the pool: 0 where it reported).
    fn faulty_attr(&mut self, o: Obj, i: u32, need: fn(&mut super::Needs)) {
        if self.src.chance(1, 2) {
            let r = self.fb.load_attr(o.v, i);
            self.object_fault_guard(need);
            self.vals.push(r);
        } else {
            let x = self.pick_compat(Type::I64);
            self.fb.store_attr(o.v, i, x);
            self.object_fault_guard(need);
        }
    }

    /// Shape 1: a raw store forging the capacity word, then attribute ops
    /// past the real capacity.
    fn forged_capacity(&mut self) {
        let (o, w) = self.fresh_obj();
        let forged = match self.src.range(0, 3) {
            0 => (o.nattrs + 1 + self.src.range(0, 3)) as i64,
            1 => 255,
            2 => 1 << 20,
            _ => self.src.u64() as i64,
        };
        let f = self.iconst(Type::I64, forged);
        self.fb.store(f, w, CAP_FROM_WORD);
        // The word read back: the forged one, or the recorded capacity
        // where `clobber` refused the store (address-independent).
        let r = self.fb.load(Type::I64, w, CAP_FROM_WORD);
        self.vals.push(r);
        for _ in 0..self.src.range(1, 2) {
            let i = o.nattrs + self.src.range(0, 2);
            self.faulty_attr(o, i, |n| n.bounds = true);
        }
        if self.src.chance(2, 3) {
            // Attribute ops, clean loops and dictify meet a forged word too.
            self.objs.push(o);
            self.ev.insert("trust.forged_in_pool");
        }
        self.ev.insert("trust.forged_capacity");
    }

    /// Shape 2: the values pointer and the values-tagged word kept across
    /// `obj_dictify`, then used.
    fn dictify_kept_values(&mut self) {
        let (o, w) = self.fresh_obj();
        let i = self.src.range(0, o.nattrs - 1);
        let x = self.pick_compat(Type::I64);
        self.fb.store_attr(o.v, i, x);
        let one = self.iconst(Type::I64, 1);
        let values = self.fb.binary(BinOp::Iadd, w, one);
        self.fb.call(self.ms.ext.obj_dictify, &[o.v]);
        let dict = self.fb.dict_slot_load(o.v);
        if self.src.chance(1, 2) {
            // A new object right after: the released array is not reused.
            let n = self.src.range(1, 4);
            self.new_obj(n);
            self.ev.insert("trust.dictify_then_new");
        }
        let life: fn(&mut super::Needs) = |n| n.lifetime = true;
        let j = self.src.range(0, o.nattrs - 1);
        match self.src.range(0, 2) {
            0 => {
                let y = self.pick_compat(Type::I64);
                self.fb.store(y, values, 8 * j as i32);
                self.object_fault_guard(life);
            }
            1 => {
                let r = self.fb.load(Type::I64, values, 8 * j as i32);
                self.object_fault_guard(life);
                self.vals.push(r);
            }
            _ => {
                // The old word written back: the attribute ops go through
                // it to the released array; then the dict word again.
                self.fb.dict_slot_store(o.v, w);
                for _ in 0..self.src.range(1, 2) {
                    let k = self.src.range(0, o.nattrs - 1);
                    self.faulty_attr(o, k, life);
                }
                self.fb.dict_slot_store(o.v, dict);
                self.ev.insert("trust.dictify_old_word");
            }
        }
        if self.src.chance(1, 2) {
            self.objs.push(o);
        }
        self.ev.insert("trust.dictify_kept_values");
    }

    /// Shape 3: raw accesses at and around a values array (a fresh
    /// object's or the sandboxed buffer's) or an object's block.
    fn redzone_access(&mut self) {
        let on_obj = !self.objs.is_empty() && self.src.chance(1, 3);
        let (base, lo, hi) = if on_obj {
            // The object's block: [obj + lo, obj + hi) (`Heap::obj_new`).
            let o = self.pick_obj();
            let off = self.ms.layout.dict_slot_offset();
            (o.v, off.min(0), (off + 8).max(16))
        } else if !self.bufs.is_empty() && self.src.chance(1, 2) {
            let b = self.bufs[self.src.index(self.bufs.len())];
            (b.base, VALUES_CAPACITY_OFFSET, BUF_BYTES as i32)
        } else {
            let (o, w) = self.fresh_obj();
            let one = self.iconst(Type::I64, 1);
            let values = self.fb.binary(BinOp::Iadd, w, one);
            (values, VALUES_CAPACITY_OFFSET, 8 * o.nattrs as i32)
        };
        // In bounds first (no report): the block's first and last words
        // (the capacity word, the last attribute; the object's lowest and
        // highest word), read raw. Values arrays only: an object block's
        // words hold addresses in some layouts.
        if !on_obj && self.src.chance(3, 4) {
            let off = if self.src.chance(1, 2) { lo } else { hi - 8 };
            let r = self.fb.load(Type::I64, base, off);
            self.vals.push(r);
            self.ev.insert("trust.block_edge");
        }
        let (ty, w) = [(Type::I8, 1), (Type::I32, 4), (Type::I64, 8)][self.src.index(3)];
        let off = match self.src.range(0, 3) {
            0 => hi,
            1 => hi + REDZONE - w,
            2 => lo - w,
            _ => lo - REDZONE,
        };
        self.bounds_fault_access(ty, base, off);
        self.ev.insert("trust.redzone");
    }

    /// Shape 4: raw accesses through a fresh object's values pointer in
    /// one block, then a free or dictify of the object (which ends the
    /// group) and accesses to the released array, or an access just past
    /// the array in the same group.
    fn raw_group(&mut self) {
        let (o, w) = self.fresh_obj();
        let one = self.iconst(Type::I64, 1);
        let values = self.fb.binary(BinOp::Iadd, w, one);
        let n = o.nattrs;
        for _ in 0..self.src.range(2, 3) {
            let off = 8 * self.src.range(0, n - 1) as i32;
            if self.src.chance(1, 2) {
                let r = self.fb.load(Type::I64, values, off);
                self.vals.push(r);
            } else {
                let x = self.pick_compat(Type::I64);
                self.fb.store(x, values, off);
            }
        }
        let life: fn(&mut super::Needs) = |n| n.lifetime = true;
        match self.src.range(0, 2) {
            0 => {
                self.fb.call(self.ms.ext.obj_free, &[o.v]);
                self.ev.insert("rawgroup.free_between");
            }
            1 => {
                self.fb.call(self.ms.ext.obj_dictify, &[o.v]);
                self.ev.insert("rawgroup.dictify_between");
            }
            _ => {
                // Past the array: the group's range test fails, each
                // access is checked on its own. Unless the object has
                // three attributes, the access is half in the last item
                // and half in the redzone: its first byte's granule is
                // clean, so only the test of both granules reports it (the
                // JIT's one-granule test is for aligned addresses only).
                let straddle = n != 3;
                let off = 8 * n as i32 - if straddle { 4 } else { 0 };
                self.bounds_fault_access(Type::I64, values, off);
                self.ev.insert("rawgroup.past_the_end");
                if straddle {
                    self.ev.insert("rawgroup.past_the_end_straddle");
                }
                if self.src.chance(1, 2) {
                    self.objs.push(o);
                }
                return;
            }
        }
        for _ in 0..self.src.range(1, 2) {
            let off = 8 * self.src.range(0, n - 1) as i32;
            if self.src.chance(1, 2) {
                let r = self.fb.load(Type::I64, values, off);
                self.object_fault_guard(life);
                self.vals.push(r);
            } else {
                let x = self.pick_compat(Type::I64);
                self.fb.store(x, values, off);
                self.object_fault_guard(life);
            }
        }
        self.ev.insert("rawgroup.released");
    }

    /// An in-bounds attribute op at index `i` of `o` (a load's value joins
    /// the pool).
    pub(super) fn attr_op(&mut self, o: Obj, i: u32) {
        if self.src.chance(1, 2) {
            let r = self.fb.load_attr(o.v, i);
            self.vals.push(r);
        } else {
            let x = self.pick_compat(Type::I64);
            self.fb.store_attr(o.v, i, x);
        }
    }

    /// Shape 5: attribute ops on one fresh object in one block (an
    /// attribute group, `guardlift_ir::attrgroup`: the JIT runs the later
    /// ones through the first one's values pointer), then, between them, a
    /// free or a dictify of the object, or another object's word written
    /// to its slot (`dict_slot.store`, or a raw store; each ends the
    /// group: the later ops see the new word), or a later index past the
    /// capacity (the first op's verdict fails).
    fn attr_group(&mut self) {
        let (o, w) = self.fresh_obj();
        let n = o.nattrs;
        // Half the time a second fresh object's ops between them: two
        // groups interleaved (without host slow paths), each with its own
        // verdict and values pointer in the JIT.
        let other = self.src.chance(1, 2).then(|| self.fresh_obj().0);
        for _ in 0..self.src.range(2, 3) {
            let i = self.src.range(0, n - 1);
            self.attr_op(o, i);
            if let Some(q) = other {
                let j = self.src.range(0, q.nattrs - 1);
                self.attr_op(q, j);
                self.ev.insert("attrgroup.interleaved");
            }
        }
        let life: fn(&mut super::Needs) = |n| n.lifetime = true;
        // The fifth case half again as often: only its runs without the
        // bounds check (one check set in three) tell its mutant.
        match self.src.weighted(&[2, 2, 2, 2, 3]) {
            0 => {
                self.fb.call(self.ms.ext.obj_free, &[o.v]);
                for _ in 0..self.src.range(1, 2) {
                    let i = self.src.range(0, n - 1);
                    self.faulty_attr(o, i, life);
                }
                self.ev.insert("attrgroup.free_between");
                return;
            }
            1 => {
                self.fb.call(self.ms.ext.obj_dictify, &[o.v]);
                for _ in 0..self.src.range(1, 2) {
                    let i = self.src.range(0, n - 1);
                    self.attr_op(o, i);
                }
                self.ev.insert("attrgroup.dictify_between");
            }
            2 => {
                // Another live object's word (at least as many attributes):
                // the later ops read and write its values; then the own
                // word again.
                let k = self.src.range(n, 4);
                let (_, w2) = self.fresh_obj_of(k);
                self.ev.insert("attrgroup.word_between");
                if self.src.chance(1, 2) {
                    self.fb.dict_slot_store(o.v, w2);
                    self.ev.insert("attrgroup.word_stored_between");
                } else {
                    let off = self.ms.layout.dict_slot_offset();
                    self.fb.store(w2, o.v, off);
                    self.ev.insert("attrgroup.raw_word_between");
                }
                for _ in 0..self.src.range(1, 2) {
                    let i = self.src.range(0, n - 1);
                    self.attr_op(o, i);
                }
                self.fb.dict_slot_store(o.v, w);
            }
            3 => {
                let i = n + self.src.range(0, 1);
                self.faulty_attr(o, i, |n| n.bounds = true);
                self.ev.insert("attrgroup.past_capacity");
            }
            _ => self.forged_other_between(o, w),
        }
        if self.src.chance(1, 2) {
            self.objs.push(o);
        }
    }

    /// Shape 5's fifth case: between the group's ops on `o` (word `w`), a
    /// `store_attr` on another object whose word a `dict_slot.store`
    /// forged so that its attribute 0 is `o`'s dict slot: it writes a
    /// third object's word there. Groups on different objects interleave
    /// (without host slow paths), but only across a `store_attr` whose
    /// bounds check refuses an array the runtime did not record: with it
    /// the store is `attr_out_of_bounds`; without it (`lifetime` alone)
    /// `o`'s later ops must see the new word.
    ///
    /// Two times in three the ops after the forging `dict_slot.store` are
    /// guarded by hand with the lifetime check alone (`!site(..,
    /// lifetime)`), so that every check set runs them as a lifetime-only
    /// group and a lifetime-only `store_attr` between its ops — not only
    /// the one set in eight that has `lifetime` without `bounds`
    /// (`attrgroup.forged_other_lifetime_sites`).
    fn forged_other_between(&mut self, o: Obj, w: Value) {
        let n = o.nattrs;
        let (p, _) = self.fresh_obj_of(1);
        let (_, w2) = self.fresh_obj_of(n);
        let off = self.ms.layout.dict_slot_offset();
        let slot_minus_one = self.iconst(Type::I64, i64::from(off) - 1);
        let forged = self.fb.binary(BinOp::Iadd, o.v, slot_minus_one);
        self.fb.dict_slot_store(p.v, forged);
        let lifetime_sites = self.src.chance(2, 3);
        let guard = |t: &mut Self| {
            if lifetime_sites {
                let only = Checks::only(CheckKind::Lifetime);
                t.fb.guard_last_with(SrcLoc::default(), only);
            }
        };
        let i = self.src.range(0, n - 1);
        self.attr_op(o, i);
        guard(self);
        self.fb.store_attr(p.v, 0, w2);
        guard(self);
        for _ in 0..self.src.range(1, 2) {
            let i = self.src.range(0, n - 1);
            self.attr_op(o, i);
            guard(self);
        }
        self.fb.dict_slot_store(o.v, w);
        self.ev.insert("attrgroup.forged_other_between");
        if lifetime_sites {
            self.ev.insert("attrgroup.forged_other_lifetime_sites");
        }
    }

    /// A raw load or store of `ty` at `base + off` that touches a redzone
    /// (a `heap_overflow`): guarded by hand or left to the `bounds`
    /// instrumentation; a load's value joins the pool.
    pub(super) fn bounds_fault_access(&mut self, ty: Type, base: Value, off: i32) {
        if self.src.chance(1, 2) {
            let r = self.fb.load(ty, base, off);
            self.object_fault_guard(|n| n.bounds = true);
            let r = if ty == Type::I64 {
                r
            } else {
                self.fb.conv(ConvOp::Sext, Type::I64, r)
            };
            self.vals.push(r);
        } else {
            let x = self.pick_compat(ty);
            self.fb.store(x, base, off);
            self.object_fault_guard(|n| n.bounds = true);
        }
    }

    /// An object made, used and freed inside a loop body (a free in a
    /// loop: the loop is not clean).
    pub(super) fn loop_local_object(&mut self) {
        let n = self.src.range(1, 4);
        let nv = self.iconst(Type::I64, n as i64);
        let o = self
            .fb
            .call(self.ms.ext.obj_new, &[nv])
            .expect("obj_new returns");
        let i = self.src.range(0, n - 1);
        let x = self.pick_compat(Type::I64);
        self.fb.store_attr(o, i, x);
        let r = self.fb.load_attr(o, self.src.range(0, n - 1));
        self.vals.push(r);
        self.fb.call(self.ms.ext.obj_free, &[o]);
        self.ev.insert("loop.free");
    }

    /// A host call (a built-in, a print, a slow path) on the taken side of
    /// a branch inside a loop, whose other side skips it: the loop is not
    /// clean, the call a cold path of the loop.
    pub(super) fn cold_host_call(&mut self) {
        let c = self.cond();
        let cold = self.fb.create_block("cold");
        let join = self.fb.create_block("join");
        self.fb.brif(c, cold, &[], join, &[]);
        self.fb.switch_to_block(cold);
        let s = self.scope();
        let saved = std::mem::replace(&mut self.arm_in_loop, true);
        if self.src.chance(1, 2) {
            self.print_stmt();
        } else {
            self.call_builtin();
        }
        self.arm_in_loop = saved;
        // What the cold block defined does not dominate the join.
        self.restore(&s);
        self.fb.jump(join, &[]);
        self.fb.switch_to_block(join);
    }

    /// Records a host call: inside a loop, and in an `if` arm inside one.
    pub(super) fn host_call_event(&mut self) {
        if self.loop_depth > 0 {
            self.ev.insert("loop.host_call");
        }
        if self.arm_in_loop {
            self.ev.insert("loop.cold_host_call");
        }
    }
}
