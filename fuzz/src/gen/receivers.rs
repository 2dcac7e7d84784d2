//! Loops entered with several receivers in turn (issue 33, the JIT's
//! loop-entry cache, `jit/src/lower/entrycache.rs`): an outer loop picks
//! one of four fresh objects by its counter (`i & 3`) and runs an inner
//! counted loop of attribute ops on it — a clean loop whose fixed
//! attributes the JIT tests at each entry, behind a cache of the last
//! four successes — as a method JIT's loop over `self` at a call site
//! that sees several objects.
//!
//! One receiver, at a position the input picks, may fail that test:
//!
//! - fewer attributes than the inner loop's highest index (a fault: the
//!   op past its capacity is `attr_out_of_bounds` at every entry with it,
//!   guarded by hand or needing the bounds checks);
//! - dictified before the loops (legal: its attribute ops take the slow
//!   path, and the entry test fails for it alone);
//! - with faults and more than one round, its word's LSB cleared
//!   (`fault_clear_lsb`) right after its first entry: the entry test
//!   passed once for it, and must fail at the next entries although no
//!   object went (the runtime's memo of `attr_fixed` answers only for
//!   the word it recorded).
//!
//! A cache that answered for a receiver from another receiver's way would
//! run the clean copy, without the bounds tests, on the failing one. The
//! inner loop's results leave it only through its exit block's param (a
//! clean loop defines no value used outside it).
//!
//! Half the time the method reads an attribute of its receiver after the
//! loop, in the block the loop exits to (a clean exit twin's prefix,
//! `jit/src/lower/version.rs`: the JIT drops the tests its entry made
//! there, but not the bounds test of an index the loop did not fix).
//!
//! With faults, half the time the method reads the word of a third object
//! (`dict_slot.load`), freed before the loops half the time: an object
//! whose lifetime test and watch the clean copy drops without a fixed
//! attribute, so the dispatch must test its shadow bytes (the fixed
//! attributes' test stands for them only where it covers every such
//! object: `jit/src/lower/dispatch.rs`).
//!
//! Half the time the method also reads a second object, the next receiver
//! (`objs[(i + 1) & 3]`): a clean loop of two objects from outside, which
//! both copies take as their header's params (`jit/src/lower/version.rs`)
//! — passed in the wrong order, the loop's stores would land in the other
//! object.

use super::{FnGen, Obj};
use guardlift_ir::{BinOp, IntCC, Type, Value};

impl FnGen<'_, '_, '_> {
    /// Loops over four receivers in turn (see the module's header).
    pub(super) fn receivers_loop(&mut self) {
        let rounds = self.src.range(1, 3);
        let trip = self.src.range(1, 3);
        if self.ms.cfg.max_mult / self.mult < u64::from(4 * rounds * trip) {
            return;
        }
        // The inner loop's highest attribute index, and which receiver
        // fails the entry test (4: none) and how.
        let max = self.src.range(0, 2);
        let bad = match self.src.chance(1, 3) {
            true => 4,
            false => self.src.range(0, 3),
        };
        let small = max > 0 && self.ms.faults && self.src.chance(2, 3);
        let objs: Vec<Value> = (0..4)
            .map(|k| {
                let n = match (k == bad, small) {
                    (true, true) => max,
                    _ => max + 1 + self.src.range(0, 1),
                };
                let nv = self.iconst(Type::I64, i64::from(n));
                (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns")
            })
            .collect();
        // With faults and a second round, the failing receiver is broken
        // after its first entry instead (`fault_clear_lsb` between two
        // entries: its word changes and no epoch moves, so an answer kept
        // from the first entry must look at the word again).
        let broken = bad < 4 && !small && self.ms.faults && rounds >= 2;
        if bad < 4 && !small && !broken {
            self.fb.call(self.ms.ext.obj_dictify, &[objs[bad as usize]]);
            self.dictified = true;
        }
        if broken {
            self.ms.needs.dict = true;
        }
        let uncovered = self.uncovered_object();
        self.ev.insert(match (bad < 4, small, broken) {
            (false, _, _) => "entrycache.receivers",
            (true, true, _) => "entrycache.receiver_too_small",
            (true, false, false) => "entrycache.receiver_dictified",
            (true, false, true) => "entrycache.receiver_broken_between",
        });
        let zero = self.iconst(Type::I64, 0);
        let one = self.iconst(Type::I64, 1);
        let three = self.iconst(Type::I64, 3);
        let outer_n = self.iconst(Type::I64, i64::from(4 * rounds));
        let inner_n = self.iconst(Type::I64, i64::from(trip));
        let acc0 = self.pick_compat(Type::I64);
        let outer = self.fb.create_block("receivers");
        let pick = self.fb.create_block("receiver");
        let inner = self.fb.create_block("method");
        let body = self.fb.create_block("method_body");
        let next = self.fb.create_block("next_receiver");
        let done = self.fb.create_block("receivers_done");
        let [i, acc] = [Type::I64; 2].map(|t| self.fb.append_block_param(outer, t));
        let [j, a] = [Type::I64; 2].map(|t| self.fb.append_block_param(inner, t));
        let a2 = self.fb.append_block_param(next, Type::I64);
        let out = self.fb.append_block_param(done, Type::I64);
        self.fb.jump(outer, &[zero, acc0]);
        self.fb.switch_to_block(outer);
        let more = self.fb.icmp(IntCC::Slt, i, outer_n);
        self.fb.brif(more, pick, &[], done, &[acc]);
        // The receiver: objs[i & 3].
        self.fb.switch_to_block(pick);
        let k = self.fb.binary(BinOp::Band, i, three);
        let mut r = objs[3];
        for (slot, &o) in objs.iter().enumerate().take(3).rev() {
            let at = self.iconst(Type::I64, slot as i64);
            let is = self.fb.icmp(IntCC::Eq, k, at);
            r = self.fb.select(is, o, r);
        }
        // The second object, the next receiver (its index below `max`, as
        // the small one holds).
        let other = self.src.chance(1, 2).then(|| {
            let k1 = self.fb.binary(BinOp::Iadd, i, one);
            let k1 = self.fb.binary(BinOp::Band, k1, three);
            let mut s = objs[0];
            for (slot, &o) in objs.iter().enumerate().skip(1) {
                let at = self.iconst(Type::I64, slot as i64);
                let is = self.fb.icmp(IntCC::Eq, k1, at);
                s = self.fb.select(is, o, s);
            }
            self.ev.insert("entrycache.two_objects");
            s
        });
        self.fb.jump(inner, &[zero, acc]);
        // The method's loop: attribute ops on the receiver (and the other).
        self.fb.switch_to_block(inner);
        let go = self.fb.icmp(IntCC::Slt, j, inner_n);
        self.fb.brif(go, body, &[], next, &[a]);
        self.fb.switch_to_block(body);
        let low = self.src.range(0, max.saturating_sub(1));
        let x = self.fb.load_attr(r, low);
        let mut a1 = self.fb.binary(BinOp::Iadd, a, x);
        if let Some(s) = other {
            let y = self.fb.load_attr(s, low);
            let y = self.fb.binary(BinOp::Iadd, y, one);
            a1 = self.fb.binary(BinOp::Imul, a1, y);
        }
        if let Some(d) = uncovered {
            a1 = self.read_uncovered(d, a1);
        }
        // The op at the highest index: past the capacity of a small one.
        if self.src.chance(1, 2) {
            let y = self.fb.load_attr(r, max);
            if small {
                self.object_fault_guard(|n| n.bounds = true);
            }
            let a3 = self.fb.binary(BinOp::Bxor, a1, y);
            self.fb.store_attr(r, low, a3);
        } else {
            self.fb.store_attr(r, max, a1);
            if small {
                self.object_fault_guard(|n| n.bounds = true);
            }
        }
        let j2 = self.fb.binary(BinOp::Iadd, j, one);
        let a4 = self.fb.load_attr(r, low);
        let a5 = self.fb.binary(BinOp::Iadd, a1, a4);
        self.fb.jump(inner, &[j2, a5]);
        self.fb.switch_to_block(next);
        if broken {
            // After the broken receiver's first entry (i == bad).
            let at = self.iconst(Type::I64, i64::from(bad));
            let first = self.fb.icmp(IntCC::Eq, i, at);
            let brk = self.fb.create_block("break_receiver");
            let go_on = self.fb.create_block("receiver_broken");
            self.fb.brif(first, brk, &[], go_on, &[]);
            self.fb.switch_to_block(brk);
            self.fb
                .call(self.ms.ext.fault_clear_lsb, &[objs[bad as usize]]);
            self.fb.jump(go_on, &[]);
            self.fb.switch_to_block(go_on);
        }
        let i2 = self.fb.binary(BinOp::Iadd, i, one);
        self.receiver_exit(r, (low, max, small), (i2, a2), outer);
        self.fb.switch_to_block(done);
        self.vals.push(out);
        // The receivers that pass join the pool (a small one would make
        // later ops past its capacity).
        for (k, &v) in objs.iter().enumerate() {
            if k as u32 != bad && self.src.chance(1, 2) {
                self.objs.push(Obj { v, nattrs: max + 1 });
            }
        }
    }

    /// With faults, half the time: the third object (see the module's
    /// header), made before the loops and freed there half the time (a
    /// `use_after_free` at every entry); whether it was freed.
    fn uncovered_object(&mut self) -> Option<(Value, bool)> {
        if !(self.ms.faults && self.src.chance(1, 2)) {
            return None;
        }
        let nv = self.iconst(Type::I64, 1);
        let d = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
        let freed = self.src.chance(1, 2);
        if freed {
            self.fb.call(self.ms.ext.obj_free, &[d]);
        }
        self.ev.insert("entrycache.uncovered_object");
        Some((d, freed))
    }

    /// In the method's loop: `acc` plus the third object's tag bits (7
    /// live; 0 where a failed lifetime test recovers). The clean copy drops
    /// its lifetime test and watch, but it has no fixed attribute, so the
    /// dispatch must make its shadow tests.
    fn read_uncovered(&mut self, (d, freed): (Value, bool), acc: Value) -> Value {
        let w = self.fb.dict_slot_load(d);
        if freed {
            self.object_fault_guard(|n| n.lifetime = true);
        }
        let m = self.iconst(Type::I64, 7);
        let t = self.fb.binary(BinOp::Band, w, m);
        self.fb.binary(BinOp::Iadd, acc, t)
    }

    /// The block after the method's loop (the builder there), `r` the
    /// receiver, the loop's lowest and highest index and whether a
    /// receiver is too small: the next round's counter and sum `(i2, a2)`
    /// go to `outer` (see the module's header).
    fn receiver_exit(
        &mut self,
        r: Value,
        (low, max, small): (u32, u32, bool),
        (i2, a2): (Value, Value),
        outer: guardlift_ir::Block,
    ) {
        // Half the time the method returns an attribute of its receiver
        // after its loop (`return self.total`): an exit prefix, which the
        // JIT lowers a second time, entered from the clean copy alone,
        // without the tests the entry made — at an index the loop used,
        // or, with faults, one past the highest (its bounds test stays:
        // past the capacity of a receiver of `max + 1` attributes).
        let mut a2 = a2;
        if self.src.chance(1, 2) {
            let past = self.ms.faults && self.src.chance(2, 3);
            let idx = match past {
                true => max + 1,
                false => [low, max][self.src.range(0, 1) as usize],
            };
            let y = self.fb.load_attr(r, idx);
            if past || (small && idx == max) {
                self.object_fault_guard(|n| n.bounds = true);
            }
            a2 = self.fb.binary(BinOp::Iadd, a2, y);
            self.ev.insert(match past {
                true => "entrycache.exit_read_past",
                false => "entrycache.exit_read",
            });
        }
        // Half the time through a block of its own, passed a value the
        // exit block defines (a block entered from the JIT's exit twin
        // too: it must keep its params).
        if self.src.chance(1, 2) {
            let step = self.fb.create_block("receiver_step");
            let [si, sa] = [Type::I64; 2].map(|t| self.fb.append_block_param(step, t));
            self.fb.jump(step, &[i2, a2]);
            self.fb.switch_to_block(step);
            self.ev.insert("entrycache.exit_step");
            self.fb.jump(outer, &[si, sa]);
        } else {
            self.fb.jump(outer, &[i2, a2]);
        }
    }
}
