//! Adstack statements: single ops with exactly modelled depths, and loops
//! that re-run an `adstack.alloc` while the header still holds the old handle.

use super::FnGen;
use guardlift_ir::{BinOp, IntCC, Type, Value};
use guardlift_runtime::adstack::AdElem;

impl FnGen<'_, '_, '_> {
    /// One op on an adstack, legal unless this module injects faults.
    pub(super) fn adstack_op(&mut self) {
        let si = self.src.index(self.stacks.len());
        let st = self.stacks[si];
        // 0 push, 1 pop, 2 top, 3 top_adj, 4 acc_adj, 5 len
        let mut op = self.src.weighted(&[5, 2, 2, 1, 2, 1]);
        let legal = |op: usize| match op {
            0 => st.depth < st.cap,
            5 => true,
            _ => st.depth > 0,
        };
        let mut fault = false;
        if !legal(op) {
            if self.ms.faults && self.src.chance(1, 2) {
                fault = true;
            } else {
                op = if op == 0 { 1 } else { 0 };
            }
        }
        self.emit_ad_op(si, op);
        if fault {
            self.ev.insert(if op == 0 {
                "fault.adstack_overflow"
            } else {
                "fault.adstack_underflow"
            });
            self.fault_guard(false);
        } else if op != 5 && self.src.chance(1, 12) {
            self.hand_guard();
        }
        let d = &mut self.stacks[si].depth;
        match op {
            0 if !fault => *d += 1,
            1 if !fault => *d -= 1,
            _ => {}
        }
    }

    /// Emits adstack op `op` (see [`Self::adstack_op`]) on stack `si`; does not update the depth.
    pub(super) fn emit_ad_op(&mut self, si: usize, op: usize) {
        let st = self.stacks[si];
        self.emit_ad_op_on(st.v, st.elem, op);
    }

    /// Emits adstack op `op` (see [`Self::adstack_op`]) on handle `h`.
    pub(super) fn emit_ad_op_on(&mut self, h: Value, elem: AdElem, op: usize) {
        let et = Type::of_elem(elem);
        match op {
            0 => {
                let x = self.pick_compat(et);
                self.fb.adstack_push(h, x);
            }
            1 => self.fb.adstack_pop(h),
            2 => {
                let r = self.fb.adstack_top(h);
                self.vals.push(r);
            }
            3 => {
                let r = self.fb.adstack_top_adj(h);
                self.vals.push(r);
            }
            4 => {
                let d = self.pick_compat(et);
                self.fb.adstack_acc_adj(h, d);
            }
            _ => {
                let r = self.fb.adstack_len(h);
                self.vals.push(r);
            }
        }
    }

    /// A loop that re-runs an `adstack.alloc` while its header's param
    /// `%t` still names the previous iteration's buffer (issue 13):
    /// `%p = alloc; push…; loop(%t = %p): push… %t; %s = alloc; ops on %t
    /// and %s; jump loop(%s)`. In the first iteration %t is %p's buffer;
    /// later %t and %s name one buffer, which the alloc has just emptied.
    /// The depths are modelled for both cases; an op that is not legal in
    /// both is an injected fault (or, without faults, a `len`). Nothing
    /// of the loop is used after it.
    pub(super) fn realloc_loop(&mut self) {
        let room = self.ms.cfg.max_mult / self.mult;
        if room < 2 {
            return;
        }
        let (n, ct, bound) = self.trip_count(room);
        let elem = [AdElem::F32, AdElem::F64, AdElem::I64][self.src.index(3)];
        let et = Type::of_elem(elem);
        let cap = self.src.range(1, 6);
        let p = self.fb.adstack_alloc(elem, cap);
        let mut first_t = self.src.range(0, cap); // depth of %p = first %t
        for _ in 0..first_t {
            let x = self.pick_compat(et);
            self.fb.adstack_push(p, x);
        }
        let header = self.fb.create_block("realloc");
        let body = self.fb.create_block("realloc_body");
        let exit = self.fb.create_block("realloc_done");
        let i = self.fb.append_block_param(header, ct);
        let t = self.fb.append_block_param(header, Type::AdStack(elem));
        let zero = self.iconst(ct, 0);
        self.fb.jump(header, &[zero, p]);
        self.fb.switch_to_block(header);
        let c = self.fb.icmp(IntCC::Slt, i, n);
        self.fb.brif(c, body, &[], exit, &[]);
        self.fb.switch_to_block(body);
        let (vals_before, objs_before) = (self.vals.len(), self.objs.len());
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(bound.max(1));
        // Pushes through %t before the alloc: a later iteration's %t holds
        // what the previous one left, so they may overflow: guarded by hand.
        for _ in 0..self.src.range(0, 2) {
            self.emit_ad_op_on(t, elem, 0);
            self.hand_guard();
            first_t = (first_t + 1).min(cap);
        }
        let s = self.fb.adstack_alloc(elem, cap);
        // Depths: (first iteration: %t, %s), (later: the one buffer).
        let (mut first_s, mut later) = (0u32, 0u32);
        for _ in 0..self.src.range(1, 6) {
            let on_t = self.src.chance(1, 2);
            let mut op = self.src.weighted(&[5, 2, 2, 1, 2, 1]);
            let first = if on_t { first_t } else { first_s };
            let legal = |op: usize, d: u32| match op {
                0 => d < cap,
                5 => true,
                _ => d > 0,
            };
            let fault = !(legal(op, first) && legal(op, later));
            if fault && !(self.ms.faults && self.src.chance(1, 2)) {
                op = 5;
            }
            self.emit_ad_op_on(if on_t { t } else { s }, elem, op);
            if op != 5 && fault {
                self.ev.insert(if op == 0 {
                    "fault.adstack_overflow"
                } else {
                    "fault.adstack_underflow"
                });
                self.fault_guard(false);
            } else if op != 5 && self.src.chance(1, 4) {
                self.hand_guard();
            }
            // Each case: a legal push or pop moves the count, a failed one
            // (recovered) leaves it.
            for d in [if on_t { &mut first_t } else { &mut first_s }, &mut later] {
                match op {
                    0 if *d < cap => *d += 1,
                    1 if *d > 0 => *d -= 1,
                    _ => {}
                }
            }
        }
        self.mult = saved_mult;
        let one = self.iconst(ct, 1);
        let i1 = self.fb.binary(BinOp::Iadd, i, one);
        self.fb.jump(header, &[i1, s]);
        self.vals.truncate(vals_before);
        self.objs.truncate(objs_before);
        self.fb.switch_to_block(exit);
        if bound >= 2 {
            // The alloc may run again while %t carries the old handle.
            self.ev.insert("adstack.realloc_loop");
        }
        self.ev.insert("adstack.handle_param");
        self.cost = self.cost.saturating_add(self.mult * bound * 12);
    }
}
