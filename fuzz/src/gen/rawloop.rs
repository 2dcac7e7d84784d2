//! Versioned loops with a raw store in their hot part (issue 33,
//! `guardlift_ir::hoist::store_keeps_claims`): a method JIT's fill loop,
//! a read-modify-write of an attribute of an object made before the loop
//! beside a raw store into a list's items (another object's values array,
//! at `items + 8·i`). A raw store that carries the `clobber` check may run
//! in a clean copy: it can write no watched slot and no watched capacity
//! word, so the loop's object keeps its word and its fixed attribute.
//!
//! The store's address is `items + 8·i` in a counted loop: a loop range
//! of the clean copy (`guardlift_ir::looprange::LoopRange::clean_copy`),
//! tested when the dispatch enters it. With injected faults, one list in
//! six is one item short (the last store is a `heap_overflow`) and one in
//! six is freed before the loop (every store is a `use_after_free`): the
//! range test fails and each store runs its own checks (the mutant
//! `clean-copy-range-untested`).
//!
//! With injected faults, one loop in three of the others **forges** the object's word
//! at one iteration: the raw store's address and value are selected so
//! that, at that iteration, it writes the word of a one-attribute object
//! into the loop object's dict slot. Under `clobber` that is a
//! `slot_clobber` (skipped); without it the later attribute ops at
//! index ≥ 1 run past the other object's capacity, which only the bounds
//! checks catch (the module needs them) — and the loop must not be clean
//! then, or the JIT's clean copy would have dropped exactly those tests
//! (the mutant `clean-loop-raw-store-without-clobber`). The loop object's
//! own word is written back after the loop.

use super::FnGen;
use guardlift_ir::{BinOp, IntCC, Type};

impl FnGen<'_, '_, '_> {
    /// A fill loop with a raw store (see the module's header).
    pub(super) fn raw_store_loop(&mut self) {
        let trip = self.src.range(1, 4);
        if self.ms.cfg.max_mult / self.mult < u64::from(trip) {
            return;
        }
        let nattrs = self.src.range(2, 4);
        let (o, w) = self.fresh_obj_of(nattrs);
        // The list: at least `trip` items, or (a fault) one too few, or
        // freed before the loop: its clean copy's range test fails at the
        // entry and every store runs its own checks.
        let list = match self.ms.faults && trip >= 2 {
            true => self.src.weighted(&[4, 1, 1]),
            false => 0,
        };
        let len = match list {
            1 => trip - 1,
            _ => trip + self.src.range(0, 1),
        };
        let (l, lw) = self.fresh_obj_of(len);
        let one = self.iconst(Type::I64, 1);
        let items = self.fb.binary(BinOp::Iadd, lw, one);
        match list {
            1 => {
                self.ms.needs.bounds = true;
                self.ev.insert("rawloop.past_the_end");
            }
            2 => {
                self.fb.call(self.ms.ext.obj_free, &[l.v]);
                self.ms.needs.lifetime = true;
                self.ev.insert("rawloop.list_freed");
            }
            _ => {}
        }
        let forged = list == 0 && self.ms.faults && self.src.chance(1, 3);
        let other = forged.then(|| {
            let (_, qw) = self.fresh_obj_of(1);
            let hit = self.src.range(0, trip - 1);
            (qw, self.iconst(Type::I64, i64::from(hit)))
        });
        let zero = self.iconst(Type::I64, 0);
        let eight = self.iconst(Type::I64, 8);
        let n = self.iconst(Type::I64, i64::from(trip));
        let acc0 = self.pick_compat(Type::I64);
        let header = self.fb.create_block("fill");
        let body = self.fb.create_block("fill_step");
        let exit = self.fb.create_block("filled");
        let i = self.fb.append_block_param(header, Type::I64);
        let acc = self.fb.append_block_param(header, Type::I64);
        let out = self.fb.append_block_param(exit, Type::I64);
        self.fb.jump(header, &[zero, acc0]);
        self.fb.switch_to_block(header);
        let done = self.fb.icmp(IntCC::Sge, i, n);
        self.fb.brif(done, exit, &[acc], body, &[]);
        self.fb.switch_to_block(body);
        let c = self.fb.load_attr(o.v, self.src.range(0, nattrs - 1));
        let c1 = self.fb.binary(BinOp::Iadd, c, one);
        self.fb.store_attr(o.v, self.src.range(0, nattrs - 1), c1);
        let off = self.fb.binary(BinOp::Imul, i, eight);
        let at = self.fb.binary(BinOp::Iadd, items, off);
        match other {
            Some((qw, hit)) => {
                let now = self.fb.icmp(IntCC::Eq, i, hit);
                let slot_off = self.iconst(Type::I64, i64::from(self.ms.layout.dict_slot_offset()));
                let slot = self.fb.binary(BinOp::Iadd, o.v, slot_off);
                let p = self.fb.select(now, slot, at);
                let v = self.fb.select(now, qw, c1);
                self.fb.store(v, p, 0);
                self.ms.needs.bounds = true;
                self.ev.insert("rawloop.forged");
            }
            None => {
                self.fb.store(c1, at, 0);
                self.ev.insert("rawloop.clean");
            }
        }
        // The highest index after the store: past the other object's
        // capacity once the word is forged.
        let r = self.fb.load_attr(o.v, nattrs - 1);
        let x = self.fb.binary(BinOp::Bxor, acc, r);
        let acc2 = self.fb.binary(BinOp::Iadd, x, c);
        let i2 = self.fb.binary(BinOp::Iadd, i, one);
        self.fb.jump(header, &[i2, acc2]);
        self.fb.switch_to_block(exit);
        self.vals.push(out);
        // The first item read back (a counter value, or 0 where the
        // forging store took its place; not from a freed list).
        if list != 2 {
            let first = self.fb.load(Type::I64, items, 0);
            self.vals.push(first);
        }
        if forged {
            self.fb.dict_slot_store(o.v, w);
        } else if self.src.chance(1, 2) {
            self.objs.push(o);
        }
    }
}
