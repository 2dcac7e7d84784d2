//! Versioned loops with a side exit (issue 33, `guardlift_ir::hoist`): a
//! loop whose attribute ops on an object made before it run in hot blocks,
//! with a host call on a cold branch taken at one iteration (or never).
//! The JIT's clean copy leaves for the checked copy at that branch and
//! stays there until the loop is left; the interpreter runs the loop as
//! written. The cold call changes what the loop's checks see:
//!
//! - `obj_free` of the loop's object (a fault: every later attribute op,
//!   in the same iteration and the next ones, is a `use_after_free`, so
//!   the module needs the lifetime checks);
//! - `fault_clear_lsb` of it (a fault: later attribute ops find a bad
//!   word, the module needs the dict checks);
//! - `obj_dictify` of it (legal: later attribute ops take the slow path);
//! - a fresh object made and freed (legal: the runtime's epochs move);
//! - `print_i64` of the counter (legal: nothing moves).
//!
//! One loop in four runs on an object dictified before it, whose
//! attribute ops all take the slow path (a host's, where the input binds
//! one, which frees every third object it stores to when the lifetime
//! checks run), and writes its word back unchanged (so the loop has no
//! fixed attributes and its entry runs the clean copy). With faults, one
//! in four of the others runs on an object whose word `fault_clear_lsb`
//! broke before the loop, written back the same way: the clean copy runs
//! and its attribute ops' dict tests must report (mutant
//! `clean-copy-drops-dict-of-invariant-objects`).
//!
//! Every block a side exit reaches uses only its params and values from
//! before the loop (the counter and an accumulator travel as block
//! arguments), as the analysis requires; the accumulator leaves the loop
//! through the exit block's param.

use super::FnGen;
use guardlift_ir::{BinOp, IntCC, Type};

impl FnGen<'_, '_, '_> {
    /// A loop with a side exit (see the module's header).
    pub(super) fn side_exit_loop(&mut self) {
        let trip = self.src.range(1, 5);
        if self.ms.cfg.max_mult / self.mult < u64::from(trip) {
            return;
        }
        let nattrs = self.src.range(1, 4);
        let nv = self.iconst(Type::I64, i64::from(nattrs));
        let o = (self.fb.call(self.ms.ext.obj_new, &[nv])).expect("obj_new returns");
        // One loop in four runs on a dict-mode object: every attribute op
        // takes the slow path (a host's, which may free, where the input
        // binds one: then the loop is not clean, `HostModel`).
        let dict_mode = self.src.chance(1, 4);
        if dict_mode {
            self.fb.call(self.ms.ext.obj_dictify, &[o]);
            self.dictified = true;
            self.ev.insert("loop.side_exit_dict_mode");
        }
        // With faults, one loop in four of the others runs on an object
        // whose word `fault_clear_lsb` broke before it: the loop writes
        // the word back too (no fixed attributes: the clean copy runs,
        // and its dict tests must report every attribute op).
        let bad_before = !dict_mode && self.ms.faults && self.src.chance(1, 4);
        if bad_before {
            self.fb.call(self.ms.ext.fault_clear_lsb, &[o]);
            self.ms.needs.dict = true;
            self.ev.insert("loop.side_exit_bad_word_before");
        }
        let n = self.iconst(Type::I64, i64::from(trip));
        // The iteration that takes the cold branch (`trip`: none).
        let hit = self.src.range(0, trip);
        let hit = self.iconst(Type::I64, i64::from(hit));
        let zero = self.iconst(Type::I64, 0);
        let one = self.iconst(Type::I64, 1);
        let acc0 = self.pick_compat(Type::I64);
        let kind = match self.ms.faults {
            true => self.src.weighted(&[4, 1, 1, 1, 1]),
            false => 2 + self.src.weighted(&[1, 1, 1]),
        };
        let header = self.fb.create_block("loop");
        let body = self.fb.create_block("hot");
        let cold = self.fb.create_block("cold");
        let join = self.fb.create_block("join");
        let exit = self.fb.create_block("exit");
        let i = self.fb.append_block_param(header, Type::I64);
        let acc = self.fb.append_block_param(header, Type::I64);
        let [k, a] = [Type::I64; 2].map(|t| self.fb.append_block_param(body, t));
        let [k1, a1] = [Type::I64; 2].map(|t| self.fb.append_block_param(cold, t));
        let [k2, a2] = [Type::I64; 2].map(|t| self.fb.append_block_param(join, t));
        let out = self.fb.append_block_param(exit, Type::I64);
        self.fb.jump(header, &[zero, acc0]);
        self.fb.switch_to_block(header);
        let more = self.fb.icmp(IntCC::Slt, i, n);
        self.fb.brif(more, body, &[i, acc], exit, &[acc]);
        // Hot: a store and a load on the object, then the cold test.
        self.fb.switch_to_block(body);
        self.fb.store_attr(o, self.src.range(0, nattrs - 1), k);
        let r = self.fb.load_attr(o, self.src.range(0, nattrs - 1));
        let a = self.fb.binary(BinOp::Iadd, a, r);
        let now = self.fb.icmp(IntCC::Eq, k, hit);
        self.fb.brif(now, cold, &[k, a], join, &[k, a]);
        // Cold: the host call.
        self.fb.switch_to_block(cold);
        match kind {
            0 => {
                self.fb.call(self.ms.ext.obj_free, &[o]);
                self.ms.needs.lifetime = true;
                self.ev.insert("loop.side_exit_free");
            }
            1 => {
                self.fb.call(self.ms.ext.fault_clear_lsb, &[o]);
                self.ms.needs.dict = true;
                self.ev.insert("loop.side_exit_clear_lsb");
            }
            2 => {
                self.fb.call(self.ms.ext.obj_dictify, &[o]);
                self.dictified = true;
                self.ev.insert("loop.side_exit_dictify");
            }
            3 => {
                let t = (self.fb.call(self.ms.ext.obj_new, &[one])).expect("obj_new returns");
                self.fb.call(self.ms.ext.obj_free, &[t]);
                self.ev.insert("loop.side_exit_other_free");
            }
            _ => {
                self.fb.call(self.ms.ext.print_i64, &[k1]);
                self.ev.insert("loop.side_exit_print");
            }
        }
        self.fb.jump(join, &[k1, a1]);
        // Join (hot, and reached by the side exit): its params only.
        self.fb.switch_to_block(join);
        if dict_mode || bad_before {
            // The word written back as it is (a VM's write barrier): no
            // fixed attributes, so no entry test stops the clean copy.
            let w = self.fb.dict_slot_load(o);
            self.fb.dict_slot_store(o, w);
        }
        self.fb.store_attr(o, self.src.range(0, nattrs - 1), a2);
        let r2 = self.fb.load_attr(o, self.src.range(0, nattrs - 1));
        let a3 = self.fb.binary(BinOp::Bxor, a2, r2);
        let i2 = self.fb.binary(BinOp::Iadd, k2, one);
        self.fb.jump(header, &[i2, a3]);
        self.fb.switch_to_block(exit);
        self.vals.push(out);
    }
}
