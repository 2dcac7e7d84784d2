//! The shape of a function body: prologue (adstacks, objects, the sandboxed
//! buffer), regions of statements and the statement choice, and the
//! epilogue that prints and returns what the function computed.

use super::{Buf, FnGen, Obj, Stack, BUF_ATTRS, BUF_BYTES};
use guardlift_ir::{BinOp, ConvOp, FloatCC, IntCC, Type, UnOp, Value};
use guardlift_runtime::adstack::AdElem;

impl FnGen<'_, '_, '_> {
    pub(super) fn prologue(&mut self) {
        // First, in the helper's entry region (`vouch`).
        self.param_slot_read();
        if self.leaf {
            // A leaf helper allocates nothing (a call, an adstack op).
            for _ in 0..self.src.range(0, 2) {
                let t = self.src.scalar_ty();
                self.konst(t);
            }
            return;
        }
        let n_stacks = self.src.range(0, 2);
        for _ in 0..n_stacks {
            let elem = [AdElem::F32, AdElem::F64, AdElem::I64][self.src.index(3)];
            let cap = if self.src.chance(1, 6) {
                self.src.range(9, 300)
            } else {
                self.src.range(1, 8)
            };
            let v = self.fb.adstack_alloc(elem, cap);
            self.stacks.push(Stack {
                v,
                elem,
                cap,
                depth: 0,
            });
        }
        let want_buf = if self.helper.is_none() {
            self.src.chance(3, 4)
        } else {
            self.src.chance(1, 3)
        };
        if want_buf {
            let n = self.iconst(Type::I64, BUF_ATTRS as i64);
            let obj = self
                .fb
                .call(self.ms.ext.obj_new, &[n])
                .expect("obj_new returns");
            let word = if self.src.chance(1, 2) {
                self.fb.dict_slot_load(obj)
            } else {
                let off = self.ms.layout.dict_slot_offset();
                self.fb.load(Type::I64, obj, off)
            };
            let one = self.iconst(Type::I64, 1);
            let base = self.fb.binary(BinOp::Iadd, word, one);
            self.bufs.push(Buf {
                obj,
                base,
                bytes: BUF_BYTES,
            });
        }
        for _ in 0..self.src.range(0, 2) {
            let t = self.src.scalar_ty();
            self.konst(t);
        }
    }

    /// Prints `v` (ints as i64, floats as f64).
    pub(super) fn print_val(&mut self, v: Value) {
        let t = self.ty(v);
        if t.is_float() {
            let x = if t == Type::F32 {
                self.fb.conv(ConvOp::Fpromote, Type::F64, v)
            } else {
                v
            };
            self.fb.call(self.ms.ext.print_f64, &[x]);
        } else {
            let x = if t == Type::Ptr {
                v
            } else {
                self.widen_to_i64(v)
            };
            self.fb.call(self.ms.ext.print_i64, &[x]);
        }
    }

    /// Makes what the function computed observable: prints its most recent
    /// values, the sandboxed buffer, the attributes of its objects and the
    /// state of its adstacks.
    pub(super) fn dump(&mut self) {
        let main = self.helper.is_none();
        let n_vals = if main { 16 } else { 4 };
        let vals: Vec<Value> = self.vals.iter().rev().take(n_vals).copied().collect();
        for v in vals {
            self.print_val(v);
        }
        if main {
            for b in self.bufs.clone() {
                for k in 0..(b.bytes / 8) as i32 {
                    let x = self.fb.load(Type::I64, b.base, 8 * k);
                    self.fb.call(self.ms.ext.print_i64, &[x]);
                }
            }
        }
        let objs: Vec<Obj> = self
            .objs
            .iter()
            .rev()
            .take(if main { 4 } else { 2 })
            .copied()
            .collect();
        for o in objs {
            for i in 0..o.nattrs {
                let x = self.fb.load_attr(o.v, i);
                self.fb.call(self.ms.ext.print_i64, &[x]);
            }
        }
        for st in self.stacks.clone() {
            let n = self.fb.adstack_len(st.v);
            self.fb.call(self.ms.ext.print_i64, &[n]);
            if st.depth > 0 {
                let t = self.fb.adstack_top(st.v);
                self.print_val(t);
                let a = self.fb.adstack_top_adj(st.v);
                self.print_val(a);
            }
        }
    }

    pub(super) fn epilogue(&mut self, ret: Option<Type>) {
        // A leaf helper prints nothing (a call): its caller sees its result.
        if !self.leaf && self.src.chance(3, 4) {
            self.dump();
        }
        if self.helper.is_none() {
            // Free what @main allocated (nothing uses it afterwards).
            if self.src.chance(1, 2) {
                let objs: Vec<Value> = self
                    .objs
                    .iter()
                    .map(|o| o.v)
                    .chain(self.bufs.iter().map(|b| b.obj))
                    .collect();
                for o in objs {
                    self.fb.call(self.ms.ext.obj_free, &[o]);
                }
            }
        }
        let r = ret.map(|t| {
            // The most recent value of the type, so the result depends on the body.
            match self
                .vals
                .iter()
                .rev()
                .find(|&&v| self.fb.ty(v).compatible(t))
            {
                Some(&v) if self.src.chance(3, 4) => v,
                _ => self.pick_compat(t),
            }
        });
        self.fb.ret(r);
    }

    pub(super) fn region(&mut self, n: u32) {
        for _ in 0..n {
            if self.stmts_left == 0 {
                break;
            }
            self.stmts_left -= 1;
            self.stmt();
        }
    }

    /// Are this region's statements restricted to what a leaf helper or a
    /// leaf-call loop's body may hold (arithmetic, attribute and dict-slot
    /// ops on existing objects, `if`s; loops in a leaf helper; calls of
    /// leaf helpers in a leaf-call loop)?
    pub(super) fn restricted(&self) -> bool {
        self.leaf || self.leaf_body
    }

    /// A statement of a restricted region ([`Self::restricted`]).
    fn restricted_stmt(&mut self) {
        let can_ctl = self.depth < self.ms.cfg.max_depth && self.stmts_left > 0;
        let can_loop = self.leaf && can_ctl && self.loop_depth < self.ms.cfg.max_loop_depth;
        let has_objs = !self.objs.is_empty();
        let can_call = self.leaf_body && !self.callable().is_empty();
        let w = [
            6,                             // 0 int binary
            if has_objs { 8 } else { 0 },  // 1 attributes
            if has_objs { 3 } else { 0 },  // 2 dict slot
            if can_call { 12 } else { 0 }, // 3 call a leaf helper
            if can_ctl { 2 } else { 0 },   // 4 if/else
            if can_loop { 2 } else { 0 },  // 5 loop
            if has_objs { 1 } else { 0 },  // 6 hand-written watch
            2,                             // 7 float binary
            if can_ctl { 5 } else { 0 },   // 8 br_table switch
            // 9 an attribute index past the capacity in a loop of a leaf
            // region (issue 33: a clean loop's fixed attributes are tested
            // once per entry, and such an object must fail that test)
            if has_objs && self.ms.faults && self.loop_depth > 0 {
                1
            } else {
                0
            },
        ];
        if std::mem::take(&mut self.force_call) && can_call {
            return self.call_helper();
        }
        match self.src.weighted(&w) {
            0 => self.int_binary(),
            1 => self.attr(),
            2 => self.dict_slot(),
            3 => self.call_helper(),
            4 => self.if_else(),
            5 => self.counted_loop(),
            6 => {
                let o = self.pick_obj();
                self.fb.watch(o.v);
            }
            8 => self.switch(),
            9 => self.bounds_fault(),
            _ => {
                let t = self.float_ty();
                let (a, b) = (self.pick(t), self.pick(t));
                let r = self.fb.binary(BinOp::Fmul, a, b);
                self.vals.push(r);
            }
        }
    }

    pub(super) fn stmt(&mut self) {
        self.step();
        if self.restricted() {
            return self.restricted_stmt();
        }
        let can_ctl = self.depth < self.ms.cfg.max_depth && self.stmts_left > 0;
        let can_loop = can_ctl && self.loop_depth < self.ms.cfg.max_loop_depth;
        let has_objs = !self.objs.is_empty();
        let has_mem = has_objs || !self.bufs.is_empty();
        let has_stacks = !self.stacks.is_empty();
        let can_call = !self.callable().is_empty();
        let can_leaf_call = self.callable().iter().any(|&j| self.ms.helpers[j].leaf);
        let w = [
            14,                                            // 0 int binary
            5,                                             // 1 icmp
            8,                                             // 2 float binary
            3,                                             // 3 float unary
            3,                                             // 4 fcmp
            4,                                             // 5 select
            8,                                             // 6 conversion
            2,                                             // 7 constant
            if has_mem { 8 } else { 0 },                   // 8 memory
            if can_call { 5 } else { 0 },                  // 9 call a helper
            3,                                             // 10 call a built-in
            2,                                             // 11 obj_new
            if has_objs { 8 } else { 2 },                  // 12 attributes
            if has_objs { 4 } else { 1 },                  // 13 dict slot
            if has_objs { 2 } else { 0 },                  // 14 dictify
            if has_stacks { 10 } else { 0 },               // 15 adstack op
            if has_stacks && can_loop { 2 } else { 0 },    // 16 tape loop
            if can_ctl { 4 } else { 0 },                   // 17 if/else
            if can_loop { 4 } else { 0 },                  // 18 loop
            if self.ms.faults { 4 } else { 0 },            // 19 injected fault
            if has_objs { 1 } else { 0 },                  // 20 hand-written watch
            if can_loop { 2 } else { 0 },                  // 21 re-allocating loop
            if can_loop && can_leaf_call { 5 } else { 0 }, // 22 leaf-call loop
            4,                                             // 23 spec §3.1 arithmetic
            if self.loop_depth > 0 { 2 } else { 0 },       // 24 object freed in a loop
            if self.loop_depth > 0 { 1 } else { 0 },       // 25 cold host call in a loop
            if can_ctl { 2 } else { 0 },                   // 26 br_table switch
            2,                                             // 27 stack_alloc area
            2,                                             // 28 func_addr + call_indirect
            if can_loop { 2 } else { 0 },                  // 29 loop with a side exit
            if can_loop { 1 } else { 0 },                  // 30 loops over four receivers
            if can_loop { 2 } else { 0 },                  // 31 fill loop with a raw store
        ];
        match self.src.weighted(&w) {
            0 => self.int_binary(),
            1 => {
                let a = self.pick_int();
                let t = self.ty(a);
                let b = self.pick_compat(t);
                let cc = IntCC::ALL[self.src.index(IntCC::ALL.len())];
                let r = self.fb.icmp(cc, a, b);
                self.vals.push(r);
            }
            2 => {
                let t = self.float_ty();
                let (a, b) = (self.pick(t), self.pick(t));
                let ops = [
                    BinOp::Fadd,
                    BinOp::Fsub,
                    BinOp::Fmul,
                    BinOp::Fdiv,
                    BinOp::Fmin,
                    BinOp::Fmax,
                ];
                let op = ops[self.src.index(ops.len())];
                let r = self.fb.binary(op, a, b);
                self.vals.push(r);
            }
            3 => {
                let t = self.float_ty();
                let a = self.pick(t);
                let op = [UnOp::Fneg, UnOp::Fabs, UnOp::Fsqrt][self.src.index(3)];
                let r = self.fb.unary(op, a);
                self.vals.push(r);
            }
            4 => {
                let t = self.float_ty();
                let (a, b) = (self.pick(t), self.pick(t));
                let cc = FloatCC::ALL[self.src.index(FloatCC::ALL.len())];
                let r = self.fb.fcmp(cc, a, b);
                self.vals.push(r);
            }
            5 => {
                let c = self.pick_int();
                let t = self.src.scalar_ty();
                let a = self.pick(t);
                let b = self.pick_compat(t);
                let r = self.fb.select(c, a, b);
                self.vals.push(r);
            }
            6 => self.conversion(),
            7 => {
                let t = self.src.scalar_ty();
                self.konst(t);
            }
            8 => self.memory(),
            9 => self.call_helper(),
            10 => self.call_builtin(),
            11 => {
                let n = self.src.range(1, 6);
                self.new_obj(n);
            }
            12 => self.attr(),
            13 => self.dict_slot(),
            14 => {
                let o = self.pick_obj();
                self.fb.call(self.ms.ext.obj_dictify, &[o.v]);
                self.dictified = true;
            }
            15 => self.adstack_op(),
            16 => self.tape_loop(),
            17 => self.if_else(),
            18 => self.counted_loop(),
            19 => self.fault(),
            21 => self.realloc_loop(),
            22 => {
                self.leaf_call_loop();
                // Another right after it: several versioned loops per
                // function (each its own dispatch and loop-entry cache).
                if self.src.chance(2, 3) {
                    self.leaf_call_loop();
                }
            }
            23 => self.arith_3_1(),
            24 => self.loop_local_object(),
            25 => self.cold_host_call(),
            26 => self.switch(),
            27 => self.stack_area(),
            28 => self.indirect_call(),
            29 => self.side_exit_loop(),
            30 => self.receivers_loop(),
            31 => self.raw_store_loop(),
            _ => {
                let o = self.pick_obj();
                self.fb.watch(o.v);
            }
        }
    }
}
