//! Straight-line statements: integer and float arithmetic, conversions,
//! in-bounds memory, calls to helpers and builtins, printing, attributes
//! and managed-dict slots.

use super::{FnGen, Obj, Param};
use guardlift_ir::{BinOp, ConvOp, IntCC, Type, UnOp, Value};

impl FnGen<'_, '_, '_> {
    pub(super) fn int_binary(&mut self) {
        let ops = [
            BinOp::Iadd,
            BinOp::Isub,
            BinOp::Imul,
            BinOp::Band,
            BinOp::Bor,
            BinOp::Bxor,
            BinOp::Ishl,
            BinOp::Ushr,
            BinOp::Sshr,
        ];
        let op = ops[self.src.index(ops.len())];
        let a = self.pick_int();
        let b = if op.is_shift() {
            // Any int type may be the amount (taken mod the width).
            self.pick_int()
        } else {
            let t = self.ty(a);
            self.pick_compat(t)
        };
        let r = self.fb.binary(op, a, b);
        self.vals.push(r);
    }

    /// The arithmetic of spec §3.1: a division or remainder (its divisor
    /// made 1 … 127, so it neither divides by zero nor overflows: the
    /// fatal reports have their own tests), an overflow test, a bit count,
    /// a rounding or `fcopysign`.
    pub(super) fn arith_3_1(&mut self) {
        let r = match self.src.range(0, 4) {
            0 => {
                let ops = [BinOp::Sdiv, BinOp::Udiv, BinOp::Srem, BinOp::Urem];
                let op = ops[self.src.index(ops.len())];
                let a = self.pick_int();
                let t = self.ty(a);
                let b = self.pick_compat(t);
                let tb = self.ty(b);
                let m = self.fb.iconst(tb, 0x7f);
                let low = self.fb.binary(BinOp::Band, b, m);
                let one = self.fb.iconst(tb, 1);
                let d = self.fb.binary(BinOp::Bor, low, one);
                self.fb.binary(op, a, d)
            }
            1 => {
                let ops = [
                    BinOp::SaddOverflows,
                    BinOp::SsubOverflows,
                    BinOp::SmulOverflows,
                ];
                let op = ops[self.src.index(ops.len())];
                let a = self.pick_int();
                let t = self.ty(a);
                let b = self.pick_compat(t);
                self.fb.binary(op, a, b)
            }
            2 => {
                let op = [UnOp::Popcnt, UnOp::Clz, UnOp::Ctz][self.src.index(3)];
                let a = self.pick_int();
                self.fb.unary(op, a)
            }
            _ => {
                let t = self.float_ty();
                let a = self.pick(t);
                if self.src.chance(1, 5) {
                    let b = self.pick(t);
                    self.fb.binary(BinOp::Fcopysign, a, b)
                } else {
                    let ops = [UnOp::Ffloor, UnOp::Fceil, UnOp::Ftrunc, UnOp::Fnearest];
                    let op = ops[self.src.index(ops.len())];
                    self.fb.unary(op, a)
                }
            }
        };
        self.vals.push(r);
    }

    pub(super) fn conversion(&mut self) {
        use Type::*;
        let r = match self.src.range(0, 8) {
            0 | 1 => {
                let from = if self.src.chance(1, 2) { I8 } else { I32 };
                let to = match (from, self.src.range(0, 4)) {
                    (I8, 0) => I32,
                    (_, 4) => Ptr,
                    _ => I64,
                };
                let a = self.pick(from);
                let op = if self.src.chance(1, 2) {
                    ConvOp::Sext
                } else {
                    ConvOp::Uext
                };
                self.fb.conv(op, to, a)
            }
            2 => {
                let from = [I32, I64, Ptr][self.src.weighted(&[3, 6, 1])];
                let to = if from == I32 || self.src.chance(1, 2) {
                    I8
                } else {
                    I32
                };
                let a = self.pick(from);
                self.fb.conv(ConvOp::Ireduce, to, a)
            }
            3 => {
                let a = self.pick_int();
                let to = self.float_ty();
                self.fb.conv(ConvOp::FcvtFromSint, to, a)
            }
            4 => {
                let from = self.float_ty();
                let a = self.pick(from);
                let to = self.int_ty();
                self.fb.conv(ConvOp::FcvtToSint, to, a)
            }
            5 => {
                if self.src.chance(1, 2) {
                    let a = self.pick(F32);
                    self.fb.conv(ConvOp::Fpromote, F64, a)
                } else {
                    let a = self.pick(F64);
                    self.fb.conv(ConvOp::Fdemote, F32, a)
                }
            }
            6 => {
                let (from, to) =
                    [(I32, F32), (I64, F64), (Ptr, F64)][self.src.weighted(&[4, 4, 1])];
                let a = self.pick(from);
                self.fb.conv(ConvOp::Bitcast, to, a)
            }
            7 => {
                let (from, to) =
                    [(F32, I32), (F64, I64), (F64, Ptr)][self.src.weighted(&[4, 4, 1])];
                let a = self.pick(from);
                let a = self.canon_nan(a);
                self.fb.conv(ConvOp::Bitcast, to, a)
            }
            _ => {
                let (from, to) = if self.src.chance(1, 2) {
                    (I64, Ptr)
                } else {
                    (Ptr, I64)
                };
                let a = self.pick(from);
                self.fb.conv(ConvOp::Bitcast, to, a)
            }
        };
        self.vals.push(r);
    }

    /// In-bounds loads and stores: the sandboxed buffer, or an object's body.
    pub(super) fn memory(&mut self) {
        let tys = [
            Type::I8,
            Type::I32,
            Type::I64,
            Type::Ptr,
            Type::F32,
            Type::F64,
        ];
        let ty = tys[self.src.weighted(&[3, 3, 4, 1, 3, 3])];
        let w = ty.bytes() as i32;
        let use_buf = !self.bufs.is_empty() && (self.objs.is_empty() || self.src.chance(3, 4));
        let (addr, off) = if use_buf {
            let b = self.bufs[self.src.index(self.bufs.len())];
            let bytes = b.bytes as i32;
            match self.src.range(0, 2) {
                0 => {
                    let off = self.src.range(0, (bytes - w) as u32) as i32;
                    (b.base, off)
                }
                1 => {
                    let half = self.iconst(Type::I64, (bytes / 2) as i64);
                    let a = self.fb.binary(BinOp::Iadd, b.base, half);
                    let off = self.src.range(0, (bytes - w) as u32) as i32 - bytes / 2;
                    (a, off)
                }
                _ => {
                    // A run-time offset: (x & 0x38) is 0..=56.
                    let x = self.pick_int();
                    let x = self.widen_to_i64(x);
                    let m = self.iconst(Type::I64, 0x38);
                    let d = self.fb.binary(BinOp::Band, x, m);
                    let a = if self.src.chance(1, 2) {
                        self.fb.binary(BinOp::Iadd, b.base, d)
                    } else {
                        self.fb.binary(BinOp::Iadd, d, b.base)
                    };
                    self.ev.insert("mem.dynamic_address");
                    let off = self.src.range(0, (bytes - 56 - w) as u32) as i32;
                    (a, off)
                }
            }
        } else {
            let o = self.pick_obj();
            self.ev.insert("mem.object_body");
            (o.v, self.src.range(0, (16 - w) as u32) as i32)
        };
        if self.src.chance(1, 2) {
            let r = self.fb.load(ty, addr, off);
            self.vals.push(r);
        } else {
            let mut v = self.pick_compat(ty);
            if self.ty(v).is_float() {
                v = self.canon_nan(v);
            }
            self.fb.store(v, addr, off);
            if self.src.chance(1, 16) {
                self.hand_guard();
            }
        }
    }

    /// Helpers this function may call now (later in the module, and
    /// cheap enough for the loops around the call).
    pub(super) fn callable(&self) -> Vec<usize> {
        let first = self.helper.map_or(0, |i| i + 1);
        let room = self.ms.cfg.max_cost.saturating_sub(self.cost);
        (first..self.ms.helpers.len())
            .filter(|&j| self.ms.helpers[j].cost.saturating_mul(self.mult) <= room)
            .collect()
    }

    pub(super) fn call_helper(&mut self) {
        let mut cands = self.callable();
        if self.restricted() {
            // A leaf-call loop calls leaf helpers on objects it already has.
            cands.retain(|&j| {
                let h = &self.ms.helpers[j];
                h.leaf
                    && h.params.iter().all(|p| match *p {
                        Param::Obj(k, _) => self.objs.iter().any(|o| o.nattrs >= k),
                        Param::Scalar(_) => true,
                    })
            });
        }
        if cands.is_empty() {
            return;
        }
        let j = cands[self.src.index(cands.len())];
        if self.ms.faults && !self.restricted() && self.src.chance(1, 2) {
            if self.src.chance(1, 2) && self.own_fault(j) {
                return;
            }
            if self.vouch_fault(j) {
                return;
            }
        }
        let (id, args) = self.helper_args(j);
        if let Some(r) = self.fb.call(id, &args) {
            self.vals.push(r);
        }
    }

    /// The arguments of a call of helper `j` (objects for its object
    /// params, made when none fits), its cost counted: what a direct or an
    /// indirect call of it passes.
    pub(super) fn helper_args(&mut self, j: usize) -> (guardlift_ir::FuncId, Vec<Value>) {
        let (id, params, cost) = {
            let h = &self.ms.helpers[j];
            (h.id, h.params.clone(), h.cost)
        };
        let mut args = Vec::with_capacity(params.len());
        for p in params {
            match p {
                Param::Scalar(t) => args.push(self.pick_compat(t)),
                Param::Obj(k, ty) => {
                    let fit: Vec<Obj> = self
                        .objs
                        .iter()
                        .copied()
                        .filter(|o| o.nattrs >= k)
                        .collect();
                    let fresh = !self.restricted() && self.src.chance(1, 8);
                    let o = if fit.is_empty() || fresh {
                        let n = self.src.range(k, 6);
                        self.new_obj(n)
                    } else {
                        fit[self.src.index(fit.len())]
                    };
                    self.ev.insert("call.object_arg");
                    if ty == Type::I64 {
                        self.ev.insert("call.object_arg_i64");
                    }
                    let arg = if self.loop_depth > 0 && !fit.is_empty() && self.src.chance(1, 4) {
                        // An argument defined inside the loop (a select of
                        // two objects): not loop-invariant, so a loop
                        // calling a leaf helper with it is not clean and
                        // no fixed attribute is claimed of it.
                        let other = fit[self.src.index(fit.len())];
                        let c = self.pick_int();
                        if self.leaf_body {
                            self.ev.insert("loop.leaf_arg_in_loop");
                        }
                        self.fb.select(c, o.v, other.v)
                    } else {
                        o.v
                    };
                    args.push(arg);
                }
            }
        }
        self.cost = self.cost.saturating_add(cost.saturating_mul(self.mult));
        (id, args)
    }

    pub(super) fn f64_arg(&mut self) -> Value {
        if self.src.chance(1, 4) {
            let a = self.pick(Type::F32);
            self.fb.conv(ConvOp::Fpromote, Type::F64, a)
        } else {
            self.pick(Type::F64)
        }
    }

    pub(super) fn print_stmt(&mut self) {
        self.host_call_event();
        if self.src.chance(1, 2) {
            let a = self.pick_int();
            let a = if self.ty(a) == Type::Ptr {
                a
            } else {
                self.widen_to_i64(a)
            };
            self.fb.call(self.ms.ext.print_i64, &[a]);
        } else {
            let a = self.f64_arg();
            self.fb.call(self.ms.ext.print_f64, &[a]);
        }
    }

    pub(super) fn call_builtin(&mut self) {
        self.host_call_event();
        match self.src.range(0, 5) {
            0..=2 => {
                let a = self.f64_arg();
                let f = self.ms.ext.math[self.src.index(4)];
                let r = self.fb.call(f, &[a]).expect("math returns");
                self.vals.push(r);
            }
            3 | 4 => self.print_stmt(),
            _ => {
                // The host's slow paths, called directly.
                let o = self.pick_obj();
                let i = self.src.range(0, o.nattrs - 1);
                let iv = self.iconst(Type::I64, i as i64);
                if self.src.chance(1, 2) {
                    let r = self
                        .fb
                        .call(self.ms.ext.load_attr_slow, &[o.v, iv])
                        .expect("load_attr_slow returns");
                    self.vals.push(r);
                } else {
                    let x = self.pick_compat(Type::I64);
                    self.fb.call(self.ms.ext.store_attr_slow, &[o.v, iv, x]);
                }
            }
        }
    }

    pub(super) fn attr(&mut self) {
        if self.dictified {
            self.ev.insert("obj.attr_after_dictify");
        }
        let o = self.pick_obj();
        let i = self.src.range(0, o.nattrs - 1);
        self.attr_op(o, i);
        if self.src.chance(1, 12) {
            self.hand_guard();
        }
    }

    pub(super) fn dict_slot(&mut self) {
        let o = self.pick_obj();
        // A leaf helper or leaf-call loop that stores a word keeps its
        // loop's bounds tests (`CleanLoop::attrs`): there, most picks
        // are loads, so that such loops are common too.
        let pick = match self.restricted() && self.src.chance(3, 4) {
            true => 0,
            false if self.leaf_body || (self.leaf && self.src.chance(1, 5)) => 5,
            false => self.src.range(0, 4),
        };
        match pick {
            5 => {
                // The word cleared, then an attribute stored: the slow
                // path (the host's, when bound: it may free the object),
                // inside a leaf helper or a leaf-call loop.
                let z = self.iconst(Type::I64, 0);
                self.fb.dict_slot_store(o.v, z);
                let x = self.pick_compat(Type::I64);
                self.fb.store_attr(o.v, self.src.range(0, o.nattrs - 1), x);
                self.ev.insert("obj.dict_cleared_store");
            }
            0 | 1 => {
                // Only the tag bits of the word are address-independent.
                let w = self.fb.dict_slot_load(o.v);
                if self.src.chance(1, 8) {
                    self.hand_guard();
                }
                let r = if self.src.chance(3, 4) {
                    let m = self.iconst(Type::I64, 7);
                    self.fb.binary(BinOp::Band, w, m)
                } else {
                    let z = self.iconst(Type::I64, 0);
                    self.fb.icmp(IntCC::Eq, w, z)
                };
                self.vals.push(r);
            }
            2 | 3 => {
                // Store back the word just read: unchanged.
                let w = if self.src.chance(2, 3) {
                    self.fb.dict_slot_load(o.v)
                } else {
                    let off = self.ms.layout.dict_slot_offset();
                    self.fb.load(Type::I64, o.v, off)
                };
                self.fb.dict_slot_store(o.v, w);
                if self.src.chance(1, 8) {
                    self.hand_guard();
                }
            }
            _ => {
                // 0 is a valid word: "no values and no dict yet".
                let z = self.iconst(Type::I64, 0);
                self.fb.dict_slot_store(o.v, z);
                self.ev.insert("obj.dict_slot.store_zero");
            }
        }
    }
}
