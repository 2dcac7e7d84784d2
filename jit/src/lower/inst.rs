//! The instruction lowering: [`FnLower::inst`] dispatches on the opcode
//! family; this file holds the scalar ops, conversions, control flow and
//! calls. Memory and object-model ops are in `memory`, adstack ops in
//! `adstack`, and every check they emit in `guards`.

use super::abi::{cl_type, ir_signature, ExternBinding};
use super::func::{internal, mem};
use super::stubs::Stub;
use super::FnLower;
use crate::error::JitError;
use cranelift_codegen::ir::{self as cl, condcodes, types, InstBuilder};
use cranelift_module::Module as ClModule;
use guardlift_abi::Entry;
use guardlift_ir::{
    BinOp, Callee, CheckKind, Checks, ConvOp, ExternId, FloatCC, FuncId, Inst, InstKind, IntCC,
    SiteId, Type, UnOp, Value,
};

/// The checks that guard one instruction and can fail, with its site.
#[derive(Copy, Clone)]
pub(super) struct Guarded {
    site: Option<SiteId>,
    checks: Checks,
}

impl Guarded {
    /// The site of check `k`, if it guards the instruction.
    pub(super) fn on(self, k: CheckKind) -> Option<SiteId> {
        self.site.filter(|_| self.checks.contains(k))
    }
}

fn int_cc(cc: IntCC) -> condcodes::IntCC {
    use condcodes::IntCC as C;
    match cc {
        IntCC::Eq => C::Equal,
        IntCC::Ne => C::NotEqual,
        IntCC::Slt => C::SignedLessThan,
        IntCC::Sle => C::SignedLessThanOrEqual,
        IntCC::Sgt => C::SignedGreaterThan,
        IntCC::Sge => C::SignedGreaterThanOrEqual,
        IntCC::Ult => C::UnsignedLessThan,
        IntCC::Ule => C::UnsignedLessThanOrEqual,
        IntCC::Ugt => C::UnsignedGreaterThan,
        IntCC::Uge => C::UnsignedGreaterThanOrEqual,
    }
}

fn float_cc(cc: FloatCC) -> condcodes::FloatCC {
    use condcodes::FloatCC as C;
    match cc {
        // Ordered comparisons: false when either operand is NaN.
        FloatCC::Eq => C::Equal,
        FloatCC::Lt => C::LessThan,
        FloatCC::Le => C::LessThanOrEqual,
        FloatCC::Gt => C::GreaterThan,
        FloatCC::Ge => C::GreaterThanOrEqual,
        // `ne` = not `eq`: unordered or not equal, true on NaN.
        FloatCC::Ne => C::NotEqual,
    }
}

impl<M: ClModule + ?Sized> FnLower<'_, '_, M> {
    /// Lowers one instruction at the builder's position.
    pub(super) fn inst(&mut self, inst: &Inst) -> Result<(), JitError> {
        use InstKind::*;
        let g = Guarded {
            site: inst.site,
            checks: self.checks_of(inst),
        };
        let r = inst.result;
        match &inst.kind {
            Binary { op, a, b } if op.is_division() => {
                let v = self.division(*op, *a, *b)?;
                self.def(r, v);
            }
            guardlift_ir::scalar_inst!() => {
                let v = self.scalar(&inst.kind)?;
                self.def(r, v);
            }
            Load { ty, addr, offset } => self.load(g, r, *ty, *addr, *offset)?,
            Store {
                value,
                addr,
                offset,
            } => {
                if [CheckKind::Lifetime, CheckKind::Bounds, CheckKind::Clobber]
                    .iter()
                    .any(|&k| g.on(k).is_some())
                {
                    self.anchor(*value)?;
                }
                self.store(g, *value, *addr, *offset)?
            }
            Call { callee, args } => {
                self.call(g, r, *callee, args)?;
                // A call may free: nothing vouches for an object after it.
                self.vouch_reset_all();
            }
            Jump { .. } | Brif { .. } | BrTable { .. } | Return { .. } => {
                self.terminator(&inst.kind)?
            }
            DictSlotLoad { obj } => self.dict_slot_load(g, r, *obj)?,
            DictSlotStore { obj, word } => self.dict_slot_store(g, *obj, *word)?,
            LoadAttr { obj, index } => self.load_attr(g, r, *obj, *index)?,
            StoreAttr { obj, index, value } => {
                self.anchor(*value)?;
                self.store_attr(g, *obj, *index, *value)?
            }
            AdAlloc { .. }
            | AdPush { .. }
            | AdPop { .. }
            | AdTop { .. }
            | AdTopAdj { .. }
            | AdAccAdj { .. }
            | AdLen { .. } => {
                let site = g.on(CheckKind::Adstack);
                match inst.kind {
                    AdPush { value: v, .. } | AdAccAdj { delta: v, .. } if site.is_some() => {
                        self.anchor(v)?
                    }
                    _ => {}
                }
                self.adstack_op(site, r, &inst.kind)?
            }
            StackAlloc { size } => {
                let v = self.stack_alloc(*size)?;
                self.def(r, v);
            }
            FuncAddr { callee } => {
                let v = self.func_addr(*callee)?;
                self.def(r, v);
            }
            CallIndirect { target, args, sig } => {
                let t = self.val(*target)?;
                let argv: Vec<cl::Value> = args
                    .iter()
                    .map(|&a| self.val(a))
                    .collect::<Result<_, _>>()?;
                let s = ir_signature(self.lw.call_conv, &sig.params, sig.ret);
                let sr = self.b.import_signature(s);
                let call = self.b.ins().call_indirect(sr, t, &argv);
                if let Some(v) = self.b.inst_results(call).first().copied() {
                    self.def(r, v);
                }
                self.vouch_reset_all();
            }
            Watch { obj } if self.clean_copy_drops_watch(*obj) => {}
            Watch { obj } => {
                let o = self.val(*obj)?;
                self.watch(o)?;
            }
        }
        Ok(())
    }

    /// The value of a side-effect-free scalar op.
    fn scalar(&mut self, kind: &InstKind) -> Result<cl::Value, JitError> {
        use InstKind::*;
        Ok(match kind {
            Iconst { ty, imm } => self.iconst(cl_type(*ty), *imm),
            Fconst { ty, value } => match ty {
                Type::F32 => self.b.ins().f32const(*value as f32),
                _ => self.b.ins().f64const(*value),
            },
            Binary { op, .. } if op.is_division() => {
                return Err(internal(
                    self.fname,
                    "a division is lowered with its checks",
                ))
            }
            Binary { op, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                self.binary(*op, x, y)
            }
            Unary { op, a } => {
                let x = self.val(*a)?;
                let ins = self.b.ins();
                match op {
                    UnOp::Fneg => ins.fneg(x),
                    UnOp::Fabs => ins.fabs(x),
                    UnOp::Fsqrt => ins.sqrt(x),
                    // NaN results canonical (the ISA's NaN canonicalization).
                    UnOp::Ffloor => ins.floor(x),
                    UnOp::Fceil => ins.ceil(x),
                    UnOp::Ftrunc => ins.trunc(x),
                    UnOp::Fnearest => ins.nearest(x),
                    UnOp::Popcnt => ins.popcnt(x),
                    UnOp::Clz => ins.clz(x),
                    UnOp::Ctz => ins.ctz(x),
                }
            }
            Icmp { cc, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                self.b.ins().icmp(int_cc(*cc), x, y)
            }
            Fcmp { cc, a, b } => {
                let (x, y) = (self.val(*a)?, self.val(*b)?);
                self.b.ins().fcmp(float_cc(*cc), x, y)
            }
            Select { cond, a, b } => {
                let (c, x, y) = (self.val(*cond)?, self.val(*a)?, self.val(*b)?);
                self.b.ins().select(c, x, y)
            }
            Conv { op, ty, a } => self.conv(*op, *ty, *a)?,
            _ => return Err(internal(self.fname, "not a scalar op")),
        })
    }

    fn binary(&mut self, op: BinOp, x: cl::Value, y: cl::Value) -> cl::Value {
        let ins = self.b.ins();
        match op {
            BinOp::Iadd => ins.iadd(x, y),
            BinOp::Isub => ins.isub(x, y),
            BinOp::Imul => ins.imul(x, y),
            BinOp::Band => ins.band(x, y),
            BinOp::Bor => ins.bor(x, y),
            BinOp::Bxor => ins.bxor(x, y),
            // Cranelift shifts take the amount modulo the operand width.
            BinOp::Ishl => ins.ishl(x, y),
            BinOp::Ushr => ins.ushr(x, y),
            BinOp::Sshr => ins.sshr(x, y),
            BinOp::Fadd => ins.fadd(x, y),
            BinOp::Fsub => ins.fsub(x, y),
            BinOp::Fmul => ins.fmul(x, y),
            BinOp::Fdiv => ins.fdiv(x, y),
            // NaN if either operand is NaN; -0.0 < +0.0.
            BinOp::Fmin => ins.fmin(x, y),
            BinOp::Fmax => ins.fmax(x, y),
            // A bit operation, as fneg and fabs (a NaN's payload is kept).
            BinOp::Fcopysign => ins.fcopysign(x, y),
            BinOp::SaddOverflows | BinOp::SsubOverflows | BinOp::SmulOverflows => {
                self.overflows(op, x, y)
            }
            // Lowered with their checks (`division`; `scalar` refuses them).
            BinOp::Sdiv => ins.sdiv(x, y),
            BinOp::Udiv => ins.udiv(x, y),
            BinOp::Srem => ins.srem(x, y),
            BinOp::Urem => ins.urem(x, y),
        }
    }

    /// `sadd_overflows` … `smul_overflows` (i8 0/1), computed without
    /// Cranelift's `*_overflow` ops (not every backend has them for every
    /// width): add/sub from the sign bits, mul through the high half (i64)
    /// or the sign-extended 64-bit product (narrower types).
    fn overflows(&mut self, op: BinOp, x: cl::Value, y: cl::Value) -> cl::Value {
        use condcodes::IntCC as C;
        let t = self.b.func.dfg.value_type(x);
        match op {
            // The sign bit of (x ^ r) & (y ^ r) (add) or (x ^ y) & (x ^ r)
            // (sub): the operands agree in sign and the result does not.
            BinOp::SaddOverflows | BinOp::SsubOverflows => {
                let add = op == BinOp::SaddOverflows;
                let r = if add {
                    self.b.ins().iadd(x, y)
                } else {
                    self.b.ins().isub(x, y)
                };
                let xr = self.b.ins().bxor(x, r);
                let other = if add {
                    self.b.ins().bxor(y, r)
                } else {
                    self.b.ins().bxor(x, y)
                };
                let s = self.b.ins().band(xr, other);
                self.b.ins().icmp_imm_s(C::SignedLessThan, s, 0)
            }
            _ if t == types::I64 => {
                let hi = self.b.ins().smulhi(x, y);
                let lo = self.b.ins().imul(x, y);
                let sign = self.b.ins().sshr_imm_s(lo, 63);
                self.b.ins().icmp(C::NotEqual, hi, sign)
            }
            _ => {
                let wx = self.b.ins().sextend(types::I64, x);
                let wy = self.b.ins().sextend(types::I64, y);
                let p = self.b.ins().imul(wx, wy);
                let n = self.b.ins().ireduce(t, p);
                let back = self.b.ins().sextend(types::I64, n);
                self.b.ins().icmp(C::NotEqual, p, back)
            }
        }
    }

    /// sdiv udiv srem urem: a zero divisor, and `sdiv` of the minimum by
    /// −1, go to a cold block that calls `gl_arith_fault` (the fatal
    /// report, spec §3.1; it does not return) with the function's frame
    /// pointer; the call carries the op's source location, so the report
    /// names its site. `srem` of the minimum by −1 is Cranelift's 0.
    fn division(&mut self, op: BinOp, a: Value, b: Value) -> Result<cl::Value, JitError> {
        use condcodes::IntCC as C;
        let (x, y) = (self.val(a)?, self.val(b)?);
        let t = self.b.func.dfg.value_type(x);
        self.arith_check(y, guardlift_abi::ReportKind::DivByZero)?;
        if op == BinOp::Sdiv {
            let min = self.iconst(t, i64::MIN >> (64 - t.bits()));
            let is_min = self.b.ins().icmp(C::Equal, x, min);
            let m1 = self.b.ins().icmp_imm_s(C::Equal, y, -1);
            let both = self.b.ins().band(is_min, m1);
            let ok = self.b.ins().bxor_imm_s(both, 1);
            self.arith_check(ok, guardlift_abi::ReportKind::IntOverflow)?;
        }
        Ok(self.binary(op, x, y))
    }

    /// Goes on where `ok` is non-zero; else (cold) the fatal `kind` report.
    fn arith_check(
        &mut self,
        ok: cl::Value,
        kind: guardlift_abi::ReportKind,
    ) -> Result<(), JitError> {
        let cont = self.b.create_block();
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        self.b.ins().brif(ok, cont, &[], cold, &[]);
        self.b.switch_to_block(cold);
        let rt = self.rt()?;
        let k = self.iconst(types::I32, kind.code() as i64);
        let fp = self.b.ins().get_frame_pointer(types::I64);
        self.call_entry(Entry::ArithFault, &[rt, k, fp])?;
        let code = if kind == guardlift_abi::ReportKind::IntOverflow {
            cl::TrapCode::INTEGER_OVERFLOW
        } else {
            cl::TrapCode::INTEGER_DIVISION_BY_ZERO
        };
        self.b.ins().trap(code);
        self.b.switch_to_block(cont);
        Ok(())
    }

    fn conv(&mut self, op: ConvOp, ty: Type, a: Value) -> Result<cl::Value, JitError> {
        let x = self.val(a)?;
        let from = cl_type(self.ty(a));
        let to = cl_type(ty);
        let ins = self.b.ins();
        Ok(match op {
            ConvOp::Sext => ins.sextend(to, x),
            ConvOp::Uext => ins.uextend(to, x),
            ConvOp::Ireduce => ins.ireduce(to, x),
            ConvOp::FcvtFromSint => {
                let x = if from == types::I8 {
                    ins.sextend(types::I32, x)
                } else {
                    x
                };
                self.b.ins().fcvt_from_sint(to, x)
            }
            ConvOp::FcvtToSint => {
                if to == types::I8 {
                    // Saturate through i32, then clamp to the i8 range.
                    let w = ins.fcvt_to_sint_sat(types::I32, x);
                    let lo = self.iconst(types::I32, i8::MIN as i64);
                    let hi = self.iconst(types::I32, i8::MAX as i64);
                    let w = self.b.ins().smax(w, lo);
                    let w = self.b.ins().smin(w, hi);
                    self.b.ins().ireduce(types::I8, w)
                } else {
                    // Saturating; NaN converts to 0.
                    ins.fcvt_to_sint_sat(to, x)
                }
            }
            ConvOp::Fpromote => ins.fpromote(to, x),
            ConvOp::Fdemote => ins.fdemote(to, x),
            ConvOp::Bitcast => {
                if from == to {
                    x
                } else {
                    ins.bitcast(to, mem(), x)
                }
            }
        })
    }

    /// `jump`, `brif`, `br_table`, `return`.
    fn terminator(&mut self, kind: &InstKind) -> Result<(), JitError> {
        match kind {
            InstKind::Jump { dest } => {
                let e = self.edge(dest)?;
                self.b.ins().jump(e.to, &e.args);
                self.fill_exit_edges([e.exit])?;
            }
            InstKind::Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                let c = self.val(*cond)?;
                let (e1, e2) = (self.edge(then_dest)?, self.edge(else_dest)?);
                (self.b.ins()).brif(c, e1.to, &e1.args, e2.to, &e2.args);
                self.fill_exit_edges([e1.exit, e2.exit])?;
            }
            InstKind::BrTable {
                index,
                default,
                table,
            } => self.br_table(*index, default, table)?,
            InstKind::Return { value } => {
                let rv: Vec<cl::Value> = value
                    .iter()
                    .map(|&v| self.val(v))
                    .collect::<Result<_, _>>()?;
                self.release_stack_areas()?;
                self.b.ins().return_(&rv);
            }
            _ => return Err(internal(self.fname, "not a terminator")),
        }
        Ok(())
    }

    /// `br_table`: Cranelift's `br_table`, whose index is an `i32`: the
    /// unsigned i64 index is clamped to the table's length first (every
    /// index at or past it becomes the length, which Cranelift's
    /// `br_table` sends to the default), then narrowed. Each destination is an
    /// [`FnLower::edge`] (forwarded arguments, a versioned loop's exit
    /// blocks) and a `BlockCall` with its arguments: Cranelift 0.135
    /// splits the critical edges of a jump table that passes arguments.
    fn br_table(
        &mut self,
        index: Value,
        default: &guardlift_ir::BlockCall,
        table: &[guardlift_ir::BlockCall],
    ) -> Result<(), JitError> {
        let n = u32::try_from(table.len())
            .ok()
            .filter(|&n| n < i32::MAX as u32)
            .ok_or_else(|| internal(self.fname, "br_table longer than an i32 index reaches"))?;
        let i = self.val(index)?;
        let i = match cl_type(self.ty(index)) {
            types::I64 => i,
            t => return Err(internal(self.fname, format!("br_table index of type {t}"))),
        };
        let len = self.iconst(types::I64, i64::from(n));
        let clamped = self.b.ins().umin(i, len);
        let idx = self.b.ins().ireduce(types::I32, clamped);
        let d = self.edge(default)?;
        let mut exits = vec![d.exit];
        let def = self.b.func.dfg.block_call(d.to, &d.args);
        let mut calls = Vec::with_capacity(table.len());
        for dest in table {
            let e = self.edge(dest)?;
            exits.push(e.exit);
            calls.push(self.b.func.dfg.block_call(e.to, &e.args));
        }
        let jt = self
            .b
            .create_jump_table(cl::JumpTableData::new(def, &calls));
        self.b.ins().br_table(idx, jt);
        self.fill_exit_edges(exits)?;
        Ok(())
    }

    /// `call`: of an IR function, a built-in (guarded `obj_new` / `obj_free`
    /// through their site-recording entry points) or a host extern.
    fn call(
        &mut self,
        g: Guarded,
        r: Option<Value>,
        callee: Callee,
        args: &[Value],
    ) -> Result<(), JitError> {
        let argv: Vec<cl::Value> = args
            .iter()
            .map(|&a| self.val(a))
            .collect::<Result<_, _>>()?;
        let res = match callee {
            Callee::Func(fid) => match self.call_vouched(fid, args, &argv)? {
                Some(res) => res,
                None => self.call_func(fid, &argv)?,
            },
            Callee::Extern(eid) => self.call_extern(g, eid, &argv)?,
        };
        if let Some(rv) = r {
            let v = res.ok_or_else(|| {
                internal(self.fname, "call result of a callee that returns nothing")
            })?;
            self.def(Some(rv), v);
        }
        Ok(())
    }

    /// `stack_alloc SIZE`: an explicit stack slot (16-aligned), zeroed
    /// each time the instruction runs (8 bytes at a time: the slot's size
    /// is rounded up to 16).
    fn stack_alloc(&mut self, size: u32) -> Result<cl::Value, JitError> {
        let bytes = size.max(8).next_multiple_of(8);
        // A 16-byte pad on each side (the interpreter's redzones): an
        // off-by-one store lands in the slot's own pad, never on the rest
        // of the frame; with bounds checks the pads are redzones.
        let pad = guardlift_runtime::heap::REDZONE_BYTES as u32;
        let slot = match self.stack_areas.get(&self.at) {
            Some(&(slot, _)) => slot,
            None => self.b.create_sized_stack_slot(cl::StackSlotData::new(
                cl::StackSlotKind::ExplicitSlot,
                bytes + 2 * pad,
                4,
            )),
        };
        let p = self.b.ins().stack_addr(types::I64, slot, pad as i32);
        if self.stack_areas.contains_key(&self.at) {
            let n = self.iconst(types::I32, size as i64);
            self.call_stub(Stub::Slow(Entry::StackArea), &[p, n])?;
        }
        let zero = self.b.ins().iconst(types::I64, 0);
        if bytes <= 128 {
            for off in (0..bytes).step_by(8) {
                self.b.ins().store(mem(), zero, p, off as i32);
            }
            return Ok(p);
        }
        // A loop for big areas: i = 0; do { *(p + i) = 0; i += 8 } while i < bytes.
        let body = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(body, types::I64);
        self.b.ins().jump(body, &[cl::BlockArg::Value(zero)]);
        self.b.switch_to_block(body);
        let i = self.b.block_params(body)[0];
        let a = self.b.ins().iadd(p, i);
        self.b.ins().store(mem(), zero, a, 0);
        let next = self.b.ins().iadd_imm_s(i, 8);
        let more = self
            .b
            .ins()
            .icmp_imm_s(condcodes::IntCC::UnsignedLessThan, next, bytes as i64);
        self.b
            .ins()
            .brif(more, body, &[cl::BlockArg::Value(next)], done, &[]);
        self.b.switch_to_block(done);
        Ok(p)
    }

    /// The frame slots of every `stack_alloc` of the function (with
    /// [`super::Lowerer::stack_redzones`]), made up front: each `return`
    /// releases all of them, whichever ran.
    pub(super) fn make_stack_area_slots(&mut self) {
        let pad = guardlift_runtime::heap::REDZONE_BYTES as u32;
        for (bi, blk) in self.f.blocks.iter().enumerate() {
            for (ii, inst) in blk.insts.iter().enumerate() {
                if let InstKind::StackAlloc { size } = inst.kind {
                    let slot = self.b.create_sized_stack_slot(cl::StackSlotData::new(
                        cl::StackSlotKind::ExplicitSlot,
                        size.max(8).next_multiple_of(8) + 2 * pad,
                        4,
                    ));
                    self.stack_areas
                        .insert((bi as u32, ii as u32), (slot, size));
                }
            }
        }
    }

    /// Before a `return`: the runtime forgets the pads of every
    /// `stack_alloc` area of the frame (one that never ran is unknown to
    /// it: a no-op).
    fn release_stack_areas(&mut self) -> Result<(), JitError> {
        let pad = guardlift_runtime::heap::REDZONE_BYTES as i32;
        let areas: Vec<_> = self.stack_areas.values().copied().collect();
        for (slot, size) in areas {
            let p = self.b.ins().stack_addr(types::I64, slot, pad);
            let n = self.iconst(types::I32, size as i64);
            self.call_stub(Stub::Slow(Entry::StackRelease), &[p, n])?;
        }
        Ok(())
    }

    /// `func_addr @f`: an IR function's native address (its checked
    /// body, never a clean variant), or an extern's; for a built-in that
    /// takes the runtime pointer, its stub's (which passes it).
    fn func_addr(&mut self, callee: Callee) -> Result<cl::Value, JitError> {
        let fr =
            match callee {
                Callee::Func(fid) => {
                    let id =
                        self.lw.funcs.get(fid.0 as usize).copied().ok_or_else(|| {
                            internal(self.fname, "func_addr of an unknown function")
                        })?;
                    self.fref(id)
                }
                Callee::Extern(eid) => {
                    let binding = self
                        .lw
                        .externs
                        .get(eid.0 as usize)
                        .cloned()
                        .ok_or_else(|| internal(self.fname, "func_addr of an unknown extern"))?;
                    match binding {
                        // Its stub: the module-local function that calls
                        // it with the runtime pointer, of its IR signature.
                        ExternBinding::Builtin(b) if b.needs_rt => {
                            let id = self.lw.stub(self.m, Stub::Slow(b.entry))?;
                            self.fref(id)
                        }
                        ExternBinding::Builtin(b) => {
                            let sig = super::abi::entry_signature(self.lw.call_conv, b.entry);
                            self.import(b.symbol, &sig)?
                        }
                        ExternBinding::Host { symbol } => {
                            let e = self.lw.ir.ext(eid);
                            let sig = ir_signature(self.lw.call_conv, &e.params, e.ret);
                            self.import(&symbol, &sig)?
                        }
                    }
                }
            };
        Ok(self.b.ins().func_addr(types::I64, fr))
    }

    fn call_func(
        &mut self,
        fid: FuncId,
        argv: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let id = self
            .callee_of(fid)
            .ok_or_else(|| internal(self.fname, "call to unknown function"))?;
        let fr = self.fref(id);
        let call = self.b.ins().call(fr, argv);
        Ok(self.b.inst_results(call).first().copied())
    }

    fn call_extern(
        &mut self,
        g: Guarded,
        eid: ExternId,
        argv: &[cl::Value],
    ) -> Result<Option<cl::Value>, JitError> {
        let binding = self
            .lw
            .externs
            .get(eid.0 as usize)
            .cloned()
            .ok_or_else(|| internal(self.fname, "call to unknown extern"))?;
        match binding {
            ExternBinding::Builtin(b) => match (b.name, g.site) {
                // Guarded built-ins: the runtime records the
                // allocation site / checks the free.
                ("obj_new", Some(id)) if !g.checks.is_empty() => {
                    self.call_at_site(Entry::ObjNewAt, id, argv)
                }
                ("obj_free", Some(id)) if g.on(CheckKind::Lifetime).is_some() => {
                    self.call_at_site(Entry::ObjFreeAt, id, argv)
                }
                ("obj_dictify", Some(id)) if g.on(CheckKind::Lifetime).is_some() => {
                    self.call_at_site(Entry::ObjDictifyAt, id, argv)
                }
                _ => self.call_builtin(b, argv),
            },
            ExternBinding::Host { symbol } => {
                let e = self.lw.ir.ext(eid);
                let sig = ir_signature(self.lw.call_conv, &e.params, e.ret);
                let fr = self.import(&symbol, &sig)?;
                let call = self.b.ins().call(fr, argv);
                Ok(self.b.inst_results(call).first().copied())
            }
        }
    }
}
