//! Structured control flow: `if`/`else` diamonds, counted `while` and
//! `do … while` loops, and tape loops that push or pop a constant number of times.

use super::FnGen;
use guardlift_ir::{BinOp, ConvOp, IntCC, Type, Value};
use guardlift_runtime::adstack::AdElem;

impl FnGen<'_, '_, '_> {
    /// `if`/`else` with optional arm params, merge params, and adstack
    /// handles passed through the merge.
    pub(super) fn if_else(&mut self) {
        self.ev.insert("ctl.if");
        let c = self.cond();
        let then_b = self.fb.create_block("then");
        let else_b = self.fb.create_block("else");
        let merge = self.fb.create_block("merge");
        let mut arm_params = [Vec::new(), Vec::new()];
        let mut arm_args = [Vec::new(), Vec::new()];
        for (k, blk) in [then_b, else_b].into_iter().enumerate() {
            for _ in 0..self.src.range(0, 2) {
                let t = self.src.scalar_ty();
                let a = self.pick_compat(t);
                arm_params[k].push(self.fb.append_block_param(blk, t));
                arm_args[k].push(a);
            }
        }
        let merge_tys: Vec<Type> = (0..self.src.range(0, 3))
            .map(|_| self.src.scalar_ty())
            .collect();
        let merge_vals: Vec<Value> = merge_tys
            .iter()
            .map(|&t| self.fb.append_block_param(merge, t))
            .collect();
        let passed: Vec<usize> = (0..self.stacks.len())
            .filter(|_| self.src.chance(1, 3))
            .collect();
        let merge_handles: Vec<Value> = passed
            .iter()
            .map(|&i| {
                let t = Type::AdStack(self.stacks[i].elem);
                self.fb.append_block_param(merge, t)
            })
            .collect();
        if !passed.is_empty() {
            self.ev.insert("adstack.handle_param");
        }
        self.fb.brif(c, then_b, &arm_args[0], else_b, &arm_args[1]);
        let s = self.scope();
        self.depth += 1;
        let saved_arm = self.arm_in_loop;
        self.arm_in_loop |= self.loop_depth > 0;
        for (k, blk) in [then_b, else_b].into_iter().enumerate() {
            self.fb.switch_to_block(blk);
            self.vals.extend(arm_params[k].iter().copied());
            let n = self.src.range(0, 6);
            self.region(n);
            self.compensate(&s);
            let mut args: Vec<Value> = merge_tys.iter().map(|&t| self.pick_compat(t)).collect();
            args.extend(passed.iter().map(|&i| self.stacks[i].v));
            self.fb.jump(merge, &args);
            self.restore(&s);
        }
        self.depth -= 1;
        self.arm_in_loop = saved_arm;
        self.fb.switch_to_block(merge);
        self.vals.extend(merge_vals);
        for (&i, &h) in passed.iter().zip(&merge_handles) {
            self.stacks[i].v = h;
        }
    }

    /// A trip count: (value, its type, upper bound).
    pub(super) fn trip_count(&mut self, max_bound: u64) -> (Value, Type, u64) {
        if self.src.chance(1, 3) && max_bound >= 7 {
            // Dynamic: any int masked to 0..=mask.
            let x = self.pick_int();
            let t = self.ty(x);
            let mask = [1i64, 3, 7][self.src.index(3)];
            let m = self.iconst(t, mask);
            let n = self.fb.binary(BinOp::Band, x, m);
            self.ev.insert("ctl.dynamic_trip_count");
            (n, t, mask as u64)
        } else {
            let t = [Type::I8, Type::I32, Type::I64][self.src.index(3)];
            let n = self.src.range(0, max_bound.min(6) as u32) as i64;
            (self.iconst(t, n), t, n as u64)
        }
    }

    /// A `while` (test at the top) or `do … while` (test at the bottom)
    /// loop with a counter, loop-carried values and optionally adstack
    /// handles through the header.
    /// A counted loop whose body only computes, touches existing objects
    /// and calls leaf helpers ([`Self::restricted`]): the loops the JIT
    /// versions through calls, each leaf callee run as its clean variant
    /// (`guardlift_ir::hoist`).
    pub(super) fn leaf_call_loop(&mut self) {
        let saved = self.leaf_body;
        self.leaf_body = true;
        self.ev.insert("ctl.leaf_call_loop");
        let vals = self.vals.len();
        self.force_call = true;
        self.counted_loop();
        self.force_call = false;
        // Nothing defined in the loop (its header's params included) is
        // used after it, as versioning requires.
        self.vals.truncate(vals);
        self.leaf_body = saved;
    }

    pub(super) fn counted_loop(&mut self) {
        let room = self.ms.cfg.max_mult / self.mult;
        if room < 2 {
            return;
        }
        let (n, ct, bound) = self.trip_count(room);
        let do_while = self.src.chance(1, 3);
        let header = self.fb.create_block(if do_while { "body" } else { "loop" });
        let body = if do_while {
            header
        } else {
            self.fb.create_block("body")
        };
        let exit = self.fb.create_block("exit");
        let i = self.fb.append_block_param(header, ct);
        let carried_tys: Vec<Type> = (0..self.src.range(0, 2))
            .map(|_| self.src.scalar_ty())
            .collect();
        let carried: Vec<Value> = carried_tys
            .iter()
            .map(|&t| self.fb.append_block_param(header, t))
            .collect();
        let passed: Vec<usize> = (0..self.stacks.len())
            .filter(|_| self.src.chance(1, 3))
            .collect();
        let handles: Vec<Value> = passed
            .iter()
            .map(|&k| {
                let t = Type::AdStack(self.stacks[k].elem);
                self.fb.append_block_param(header, t)
            })
            .collect();
        if !passed.is_empty() {
            self.ev.insert("adstack.handle_param");
        }
        let zero = self.iconst(ct, 0);
        let mut init = vec![zero];
        for &t in &carried_tys {
            init.push(self.pick_compat(t));
        }
        init.extend(passed.iter().map(|&k| self.stacks[k].v));
        self.fb.jump(header, &init);
        self.fb.switch_to_block(header);
        if !do_while {
            self.ev.insert("ctl.while");
            let c = self.fb.icmp(IntCC::Slt, i, n);
            if self.src.chance(1, 2) {
                self.fb.brif(c, body, &[], exit, &[]);
            } else {
                let one = self.iconst(Type::I8, 1);
                let nc = self.fb.binary(BinOp::Bxor, c, one);
                self.fb.brif(nc, exit, &[], body, &[]);
            }
            self.fb.switch_to_block(body);
        } else {
            self.ev.insert("ctl.do_while");
        }
        // The header's params dominate the body and everything after the loop.
        self.vals.push(i);
        self.vals.extend(carried.iter().copied());
        for (&k, &h) in passed.iter().zip(&handles) {
            self.stacks[k].v = h;
        }
        let s = self.scope();
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(bound.max(1));
        self.depth += 1;
        self.loop_depth += 1;
        let n_stmts = self.src.range(0, 6);
        self.region(n_stmts);
        if std::mem::take(&mut self.force_call) && self.leaf_body {
            // A leaf-call loop whose body had no room for its call.
            self.call_helper();
        }
        self.compensate(&s);
        let one = self.iconst(ct, 1);
        let i1 = self.fb.binary(BinOp::Iadd, i, one);
        let mut next = vec![i1];
        for &t in &carried_tys {
            next.push(self.pick_compat(t));
        }
        next.extend(passed.iter().map(|&k| self.stacks[k].v));
        if do_while {
            let c = self.fb.icmp(IntCC::Slt, i1, n);
            self.fb.brif(c, header, &next, exit, &[]);
            // Everything defined in the body dominates the exit: keep it.
            for (st, &(v, _)) in self.stacks.iter_mut().zip(&s.stacks) {
                st.v = v;
            }
        } else {
            self.fb.jump(header, &next);
            self.restore(&s);
        }
        self.loop_depth -= 1;
        self.depth -= 1;
        self.mult = saved_mult;
        self.fb.switch_to_block(exit);
    }

    /// The autodiff tape: a loop that pushes a constant number of entries,
    /// or one that reads and pops a constant number of them. The counter
    /// runs from a constant `a` (0–2) to `a + n` under one of the tests
    /// that bound it from above (`slt`, `ult`, `sle` against `a + n − 1`,
    /// or `sge`/`sgt` with the body on the false edge): the shapes
    /// `guardlift_ir::analysis::adbound` proves a push loop that fits
    /// from (its overflow checks elided), and the loops one push past the
    /// room (an injected fault) that it must not claim.
    pub(super) fn tape_loop(&mut self) {
        let room = self.ms.cfg.max_mult / self.mult;
        if room < 2 {
            return;
        }
        let si = self.src.index(self.stacks.len());
        let st = self.stacks[si];
        let push = st.depth == 0 || (st.depth < st.cap && self.src.chance(1, 2));
        let mut n = self.src.range(0, room.min(8) as u32);
        let fits = if push {
            st.depth + n <= st.cap
        } else {
            n <= st.depth
        };
        let fault = !fits && self.ms.faults && self.src.chance(2, 3);
        if !fits && !fault {
            n = if push { st.cap - st.depth } else { st.depth };
        }
        let et = Type::of_elem(st.elem);
        let header = self
            .fb
            .create_block(if push { "tape_fwd" } else { "tape_rev" });
        let body = self.fb.create_block("tape_body");
        let exit = self.fb.create_block("tape_done");
        let i = self.fb.append_block_param(header, Type::I64);
        let acc = self.fb.append_block_param(header, et);
        let through_param = self.src.chance(1, 2);
        let h_param =
            through_param.then(|| self.fb.append_block_param(header, Type::AdStack(st.elem)));
        let a = self.src.range(0, 2) as i64;
        let start = self.iconst(Type::I64, a);
        let acc0 = self.pick_compat(et);
        let mut init = vec![start, acc0];
        init.extend(h_param.map(|_| st.v));
        self.fb.jump(header, &init);
        self.fb.switch_to_block(header);
        // The test, and whether the body is on its true edge.
        let end = a + n as i64;
        let (cc, k, body_on_true) = match self.src.index(5) {
            0 => (IntCC::Slt, end, true),
            1 => (IntCC::Ult, end, true),
            2 => (IntCC::Sle, end - 1, true),
            3 => (IntCC::Sge, end, false),
            _ => (IntCC::Sgt, end - 1, false),
        };
        if matches!(cc, IntCC::Sle | IntCC::Sgt) {
            self.ev.insert("adstack.tape_counter_le");
        }
        let kv = self.iconst(Type::I64, k);
        let c = self.fb.icmp(cc, i, kv);
        if body_on_true {
            self.fb.brif(c, body, &[], exit, &[]);
        } else {
            self.fb.brif(c, exit, &[], body, &[]);
        }
        self.fb.switch_to_block(body);
        let h = h_param.unwrap_or(st.v);
        let (vals_before, objs_before) = (self.vals.len(), self.objs.len());
        let saved_mult = self.mult;
        self.mult = self.mult.saturating_mul(n.max(1) as u64);
        let acc1 = if push {
            // x = f(i, acc)
            let x = match st.elem {
                AdElem::I64 => {
                    let k = self.pick_compat(Type::I64);
                    let p = self.fb.binary(BinOp::Imul, i, k);
                    self.fb.binary(BinOp::Iadd, p, acc)
                }
                _ => {
                    let f = self.fb.conv(ConvOp::FcvtFromSint, et, i);
                    self.fb.binary(BinOp::Fadd, f, acc)
                }
            };
            self.fb.adstack_push(h, x);
            if fault {
                self.fault_guard(false);
            }
            x
        } else {
            let t = self.fb.adstack_top(h);
            if fault {
                self.fault_guard(false);
            }
            let a = self.fb.adstack_top_adj(h);
            if fault {
                self.fault_guard(false);
            }
            let add = if st.elem == AdElem::I64 {
                BinOp::Iadd
            } else {
                BinOp::Fadd
            };
            let s = self.fb.binary(add, t, a);
            let d = self.pick_compat(et);
            self.fb.adstack_acc_adj(h, d);
            if fault {
                self.fault_guard(false);
            }
            self.fb.adstack_pop(h);
            if fault {
                self.fault_guard(false);
            }
            self.fb.binary(add, acc, s)
        };
        self.mult = saved_mult;
        let one = self.iconst(Type::I64, 1);
        let i1 = self.fb.binary(BinOp::Iadd, i, one);
        let mut next = vec![i1, acc1];
        next.extend(h_param);
        self.fb.jump(header, &next);
        // What the body defined does not dominate the exit.
        self.vals.truncate(vals_before);
        self.objs.truncate(objs_before);
        self.fb.switch_to_block(exit);
        self.ev.insert(if push {
            "adstack.tape_push"
        } else {
            "adstack.tape_pop"
        });
        if fault {
            self.ev.insert(if push {
                "fault.adstack_overflow"
            } else {
                "fault.adstack_underflow"
            });
        }
        if through_param {
            self.ev.insert("adstack.handle_param");
        }
        self.vals.push(acc);
        let d = &mut self.stacks[si];
        if let Some(hp) = h_param {
            d.v = hp;
        }
        d.depth = if push {
            (d.depth + n).min(d.cap)
        } else {
            d.depth.saturating_sub(n)
        };
        self.cost = self.cost.saturating_add(self.mult * n as u64 * 6);
    }
}
