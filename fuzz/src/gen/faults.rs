//! Injected faults (pointer corruption, dict-slot words with bad tags,
//! adstack overflow and underflow, lifetime and bounds faults, the trust
//! shapes of [`super::trust`]) and how each is guarded by hand or
//! recorded in [`Needs`].

use super::{FnGen, Needs};
use guardlift_ir::{BinOp, ConvOp, Type};

impl FnGen<'_, '_, '_> {
    /// An injected fault.
    pub(super) fn fault(&mut self) {
        let kinds = [
            if self.stacks.is_empty() { 0 } else { 2 }, // 0 adstack overflow
            if self.stacks.is_empty() { 0 } else { 2 }, // 1 adstack underflow
            2,                                          // 2 fault_clear_lsb
            2,                                          // 3 raw store over the slot
            2,                                          // 4 dict_slot.store of a bad word
            5,                                          // 5 lifetime (use after free, bad frees)
            2,                                          // 6 attribute index out of bounds
            7,                                          // 7 trust shapes (gen/trust.rs)
        ];
        match self.src.weighted(&kinds) {
            k @ (0 | 1) => {
                let si = self.src.index(self.stacks.len());
                // Fill (or drain) with legal ops first, then one op too many.
                if k == 0 {
                    while self.stacks[si].depth < self.stacks[si].cap
                        && self.stacks[si].cap - self.stacks[si].depth <= 4
                    {
                        self.emit_ad_op(si, 0);
                        self.stacks[si].depth += 1;
                    }
                    if self.stacks[si].depth < self.stacks[si].cap {
                        return;
                    }
                    self.emit_ad_op(si, 0);
                    self.ev.insert("fault.adstack_overflow");
                } else {
                    while self.stacks[si].depth > 0 && self.stacks[si].depth <= 4 {
                        self.emit_ad_op(si, 1);
                        self.stacks[si].depth -= 1;
                    }
                    if self.stacks[si].depth > 0 {
                        return;
                    }
                    let op = [1, 2, 3, 4][self.src.index(4)];
                    self.emit_ad_op(si, op);
                    self.ev.insert("fault.adstack_underflow");
                }
                self.fault_guard(false);
            }
            5 => self.lifetime_fault(),
            6 => self.bounds_fault(),
            7 => self.trust_fault(),
            2 => {
                let o = self.pick_obj();
                self.fb.call(self.ms.ext.fault_clear_lsb, &[o.v]);
                self.ms.needs.dict = true;
                self.ev.insert("fault.clear_lsb");
            }
            k => {
                let o = self.pick_obj();
                // A word whose low bits are 1..=6 whatever the slot held:
                // never mistaken for a values-tagged word.
                let bits = self.src.range(1, 6) as i64;
                let bad = if self.src.chance(1, 2) {
                    let hi = self.src.u64() as i64 & !7;
                    self.iconst(Type::I64, hi | bits)
                } else {
                    let w = self.fb.dict_slot_load(o.v);
                    let m = self.iconst(Type::I64, !7);
                    let c = self.fb.binary(BinOp::Band, w, m);
                    let b = self.iconst(Type::I64, bits);
                    self.fb.binary(BinOp::Bor, c, b)
                };
                if k == 3 {
                    let off = self.ms.layout.dict_slot_offset();
                    let v = match self.src.range(0, 3) {
                        0 => self.fb.conv(ConvOp::Ireduce, Type::I8, bad),
                        1 => self.fb.conv(ConvOp::Ireduce, Type::I32, bad),
                        _ => bad,
                    };
                    self.fb.store(v, o.v, off);
                    self.ev.insert("fault.raw_slot_store");
                } else {
                    self.fb.dict_slot_store(o.v, bad);
                    self.ev.insert("fault.bad_dict_store");
                }
                self.fault_guard(true);
            }
        }
    }

    /// A lifetime or bounds fault: guard it by hand or record the check
    /// the module then needs.
    pub(super) fn object_fault_guard(&mut self, need: fn(&mut Needs)) {
        if self.src.chance(1, 2) {
            self.hand_guard();
        } else {
            need(&mut self.ms.needs);
        }
    }

    /// An injected lifetime fault on a fresh object (never in the pool):
    /// freed, then used — an attribute, its dict slot, a raw access to its
    /// header or through its values pointer kept from before the free — or
    /// freed twice; or a free of something that is not an object.
    pub(super) fn lifetime_fault(&mut self) {
        let need: fn(&mut Needs) = |n| n.lifetime = true;
        let nattrs = self.src.range(1, 4);
        let n = self.iconst(Type::I64, nattrs as i64);
        let o = self
            .fb
            .call(self.ms.ext.obj_new, &[n])
            .expect("obj_new returns");
        // attribute load, store, dict slot, raw header load, raw store
        // through the values pointer, double free, invalid free
        let kind = self.src.weighted(&[2, 2, 1, 2, 2, 3, 3]);
        if kind == 6 {
            // Not an object: an address inside one.
            let eight = self.iconst(Type::I64, 8);
            let inner = self.fb.binary(BinOp::Iadd, o, eight);
            self.fb.call(self.ms.ext.obj_free, &[inner]);
            self.object_fault_guard(need);
            self.fb.call(self.ms.ext.obj_free, &[o]);
            self.ev.insert("fault.invalid_free");
            return;
        }
        let i = self.src.range(0, nattrs - 1);
        let x = self.pick_compat(Type::I64);
        self.fb.store_attr(o, i, x);
        // A values pointer kept from before the free (the object is fresh:
        // values-tagged).
        let word = self.fb.dict_slot_load(o);
        let one = self.iconst(Type::I64, 1);
        let values = self.fb.binary(BinOp::Iadd, word, one);
        self.fb.call(self.ms.ext.obj_free, &[o]);
        match kind {
            0 => {
                let r = self.fb.load_attr(o, i);
                self.object_fault_guard(need);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free");
            }
            1 => {
                let y = self.pick_compat(Type::I64);
                self.fb.store_attr(o, i, y);
                self.object_fault_guard(need);
                self.ev.insert("fault.use_after_free");
            }
            2 => {
                let w = self.fb.dict_slot_load(o);
                self.object_fault_guard(need);
                let m = self.iconst(Type::I64, 7);
                let r = self.fb.binary(BinOp::Band, w, m);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free");
            }
            3 => {
                // The header word at the object's address (its refcount).
                let r = self.fb.load(Type::I64, o, 0);
                self.object_fault_guard(need);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free_raw");
            }
            4 => {
                let y = self.pick_compat(Type::I64);
                self.fb.store(y, values, 8 * i as i32);
                self.object_fault_guard(need);
                self.ev.insert("fault.use_after_free_raw");
            }
            _ => {
                self.fb.call(self.ms.ext.obj_free, &[o]);
                self.object_fault_guard(need);
                self.ev.insert("fault.double_free");
            }
        }
    }

    /// An injected bounds fault: an attribute index at or past the
    /// object's capacity. (An object in dict mode takes the host's slow
    /// path, where any index is an ordinary dict key.)
    pub(super) fn bounds_fault(&mut self) {
        let o = self.pick_obj();
        let i = o.nattrs + self.src.range(0, 3);
        if self.src.chance(1, 2) {
            let r = self.fb.load_attr(o.v, i);
            self.object_fault_guard(|n| n.bounds = true);
            self.vals.push(r);
        } else {
            let x = self.pick_compat(Type::I64);
            self.fb.store_attr(o.v, i, x);
            self.object_fault_guard(|n| n.bounds = true);
        }
        self.ev.insert("fault.attr_out_of_bounds");
    }
}
