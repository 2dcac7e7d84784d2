//! Type rules of the verifier (spec §3): the operand and result types of
//! every instruction form, by group, for [`FnVerifier`].

use super::*;
use crate::inst::IndirectSig;

impl FnVerifier<'_> {
    /// Operand and result types of every form (spec §3), by group.
    pub(super) fn check_types(&mut self, inst: &Inst) {
        use InstKind::*;
        let loc = inst.loc;
        match &inst.kind {
            crate::scalar_inst!() => self.check_arith_types(inst),
            Load { ty, addr, .. } => {
                if ty.is_adstack() {
                    self.err(loc, format!("load type cannot be an adstack handle ({ty})"));
                } else {
                    self.expect_result(inst, *ty);
                }
                self.need_word(inst, *addr, "address");
            }
            Store { addr, .. } => self.need_word(inst, *addr, "address"),
            Call { callee, args } => self.check_call(inst, *callee, args),
            Jump { dest } => self.check_block_call(inst, dest),
            Brif {
                cond,
                then_dest,
                else_dest,
            } => {
                if let Some(tc) = self.ty(*cond) {
                    if !tc.is_int() {
                        let dc = self.desc(*cond);
                        self.err(loc, format!("brif condition must be an int, got {dc}"));
                    }
                }
                self.check_block_call(inst, then_dest);
                self.check_block_call(inst, else_dest);
            }
            BrTable {
                index,
                default,
                table,
            } => {
                // The index is a word, read unsigned: `i64`, or `ptr`,
                // which mixes freely with `i64` (spec §2).
                self.need_word(inst, *index, "index");
                if table.len() > crate::inst::MAX_BR_TABLE {
                    let n = table.len();
                    self.err(
                        loc,
                        format!(
                            "br_table has {n} destinations (at most {})",
                            crate::inst::MAX_BR_TABLE
                        ),
                    );
                }
                self.check_block_call(inst, default);
                for d in table {
                    self.check_block_call(inst, d);
                }
            }
            Return { value } => self.check_return(inst, *value),
            DictSlotLoad { obj } => {
                self.need_word(inst, *obj, "object");
                self.expect_result(inst, Type::I64);
            }
            DictSlotStore { obj, word } => {
                self.need_word(inst, *obj, "object");
                self.need_word(inst, *word, "word");
            }
            LoadAttr { obj, index } => {
                self.need_word(inst, *obj, "object");
                self.check_attr_index(inst, *index);
                self.expect_result(inst, Type::I64);
            }
            StoreAttr { obj, index, value } => {
                self.need_word(inst, *obj, "object");
                self.check_attr_index(inst, *index);
                self.need_word(inst, *value, "value");
            }
            AdAlloc { elem, capacity } => self.check_alloc(inst, *elem, *capacity),
            AdPush { .. }
            | AdAccAdj { .. }
            | AdPop { .. }
            | AdTop { .. }
            | AdTopAdj { .. }
            | AdLen { .. } => self.check_adstack_types(inst),
            Watch { obj } => self.need_word(inst, *obj, "object"),
            StackAlloc { size } => {
                // The parser refuses these; a module built through the API
                // is checked here.
                if !(1..=crate::inst::MAX_STACK_ALLOC).contains(size) {
                    self.err(
                        loc,
                        format!(
                            "stack_alloc size {size} is out of range (1 to {} bytes)",
                            crate::inst::MAX_STACK_ALLOC
                        ),
                    );
                }
                self.expect_result(inst, Type::Ptr)
            }
            FuncAddr { callee } => {
                if self.callee_sig(*callee).is_none() {
                    self.err(loc, "func_addr of an unknown function".to_string());
                }
                self.expect_result(inst, Type::Ptr);
            }
            CallIndirect { target, args, sig } => {
                self.check_call_indirect(inst, *target, args, sig)
            }
        }
    }

    /// `call_indirect`: the target is a word, the arguments and the result
    /// match the written signature, which has no adstack handle.
    fn check_call_indirect(
        &mut self,
        inst: &Inst,
        target: Value,
        args: &[Value],
        sig: &IndirectSig,
    ) {
        let loc = inst.loc;
        self.need_word(inst, target, "call target");
        for t in sig.params.iter().chain(&sig.ret) {
            if t.is_adstack() {
                self.err(
                    loc,
                    format!("call_indirect signature cannot take an adstack handle ({t})"),
                );
            }
        }
        if sig.params.len() != args.len() {
            let (want, got) = (sig.params.len(), args.len());
            self.err(
                loc,
                format!("call_indirect signature has {want} parameters, got {got} arguments"),
            );
            return;
        }
        for (k, (pt, &a)) in sig.params.iter().zip(args).enumerate() {
            if let Some(at) = self.ty(a) {
                if !at.compatible(*pt) {
                    let d = self.desc(a);
                    self.err(
                        loc,
                        format!("argument {} of call_indirect must be {pt}, got {d}", k + 1),
                    );
                }
            }
        }
        if let (Some(r), Some(rt)) = (inst.result, sig.ret) {
            if let Some(t) = self.ty(r) {
                if !t.compatible(rt) {
                    let n = self.vname(r);
                    self.err(
                        loc,
                        format!("result {n} of call_indirect has type {t}, expected {rt}"),
                    );
                }
            }
        }
    }

    /// Constants, arithmetic, comparisons, `select` and conversions.
    fn check_arith_types(&mut self, inst: &Inst) {
        use InstKind::*;
        let loc = inst.loc;
        let op = inst.kind.opcode();
        match &inst.kind {
            Iconst { ty, .. } => {
                if ty.is_int() {
                    self.expect_result(inst, *ty);
                } else {
                    self.err(loc, format!("iconst needs an int type, got {ty}"));
                }
            }
            Fconst { ty, .. } => {
                if ty.is_float() {
                    self.expect_result(inst, *ty);
                } else {
                    self.err(loc, format!("fconst needs a float type, got {ty}"));
                }
            }
            Binary { op: bop, a, b } => {
                let (Some(ta), Some(tb)) = (self.ty(*a), self.ty(*b)) else {
                    return;
                };
                let ok = if bop.is_float() {
                    ta.is_float() && ta == tb
                } else if bop.is_shift() {
                    ta.is_int() && tb.is_int()
                } else {
                    ta.is_int() && tb.is_int() && ta.compatible(tb)
                };
                if ok && bop.is_overflow_test() {
                    self.expect_result(inst, Type::I8);
                } else if ok {
                    self.expect_result(inst, ta);
                } else {
                    let (da, db) = (self.desc(*a), self.desc(*b));
                    self.err(loc, format!("type mismatch: {op} {da}, {db}"));
                }
            }
            Unary { op: uop, a } => {
                let Some(ta) = self.ty(*a) else { return };
                if uop.is_int() {
                    if ta.is_int() {
                        self.expect_result(inst, ta);
                    } else {
                        let da = self.desc(*a);
                        self.err(
                            loc,
                            format!("type mismatch: {op} needs an integer operand, got {da}"),
                        );
                    }
                } else if ta.is_float() {
                    self.expect_result(inst, ta);
                } else {
                    let da = self.desc(*a);
                    self.err(
                        loc,
                        format!("type mismatch: {op} needs a float operand, got {da}"),
                    );
                }
            }
            Icmp { a, b, .. } => {
                let (Some(ta), Some(tb)) = (self.ty(*a), self.ty(*b)) else {
                    return;
                };
                if ta.is_int() && tb.is_int() && ta.compatible(tb) {
                    self.expect_result(inst, Type::I8);
                } else {
                    let (da, db) = (self.desc(*a), self.desc(*b));
                    self.err(loc, format!("type mismatch: icmp {da}, {db}"));
                }
            }
            Fcmp { a, b, .. } => {
                let (Some(ta), Some(tb)) = (self.ty(*a), self.ty(*b)) else {
                    return;
                };
                if ta.is_float() && ta == tb {
                    self.expect_result(inst, Type::I8);
                } else {
                    let (da, db) = (self.desc(*a), self.desc(*b));
                    self.err(loc, format!("type mismatch: fcmp {da}, {db}"));
                }
            }
            Select { cond, a, b } => {
                if let Some(tc) = self.ty(*cond) {
                    if !tc.is_int() {
                        let dc = self.desc(*cond);
                        self.err(loc, format!("select condition must be an int, got {dc}"));
                    }
                }
                let (Some(ta), Some(tb)) = (self.ty(*a), self.ty(*b)) else {
                    return;
                };
                let ok = (ta.is_int() && tb.is_int() && ta.compatible(tb))
                    || (ta.is_float() && ta == tb);
                if ok {
                    self.expect_result(inst, ta);
                } else {
                    let (da, db) = (self.desc(*a), self.desc(*b));
                    self.err(loc, format!("type mismatch: select {da}, {db}"));
                }
            }
            Conv { op: cop, ty, a } => self.check_conv(inst, *cop, *ty, *a),
            _ => {}
        }
    }

    /// A call's callee, arguments and result.
    fn check_call(&mut self, inst: &Inst, callee: Callee, args: &[Value]) {
        let loc = inst.loc;
        let Some((name, params, ret)) = self.callee_sig(callee) else {
            let what = match callee {
                Callee::Func(FuncId(i)) => format!("function #{i}"),
                Callee::Extern(e) => format!("extern #{}", e.0),
            };
            self.err(loc, format!("call to unknown {what}"));
            return;
        };
        if params.len() != args.len() {
            self.err(
                loc,
                format!(
                    "call to {name} expects {} arguments, got {}",
                    params.len(),
                    args.len()
                ),
            );
        } else {
            for (k, (pt, &a)) in params.iter().zip(args).enumerate() {
                if let (Some(pt), Some(at)) = (*pt, self.ty(a)) {
                    if !at.compatible(pt) {
                        let d = self.desc(a);
                        self.err(
                            loc,
                            format!("argument {} of call to {name} must be {pt}, got {d}", k + 1),
                        );
                    }
                }
            }
        }
        if let (Some(r), Some(rt)) = (inst.result, ret) {
            if let Some(t) = self.ty(r) {
                if t.is_adstack() {
                    let n = self.vname(r);
                    self.err(loc, format!("call result {n} cannot be an adstack handle"));
                } else if !t.compatible(rt) {
                    let n = self.vname(r);
                    self.err(
                        loc,
                        format!("result {n} of call to {name} has type {t}, expected {rt}"),
                    );
                }
            }
        }
    }

    /// `return` against the function's return type.
    fn check_return(&mut self, inst: &Inst, value: Option<Value>) {
        let loc = inst.loc;
        let fname = &self.f.name;
        match (self.f.ret, value.as_ref()) {
            (Some(rt), None) => self.err(
                loc,
                format!("`return` needs a value: @{fname} returns {rt}"),
            ),
            (None, Some(v)) => {
                let n = self.vname(*v);
                self.err(
                    loc,
                    format!("@{fname} returns no value, but `return` has {n}"),
                );
            }
            (Some(rt), Some(v)) => {
                if let Some(t) = self.ty(*v) {
                    if !t.compatible(rt) {
                        let d = self.desc(*v);
                        self.err(
                            loc,
                            format!("return type mismatch: {d}, @{fname} returns {rt}"),
                        );
                    }
                }
            }
            (None, None) => {}
        }
    }

    /// `adstack.alloc`: capacity, result, and the frame's total of buffers.
    fn check_alloc(&mut self, inst: &Inst, elem: AdElem, capacity: u32) {
        self.allocs = true;
        let loc = inst.loc;
        if capacity == 0 || capacity > MAX_ADSTACK_CAPACITY {
            self.err(
                loc,
                format!(
                    "adstack capacity {capacity} is out of range (1 to {MAX_ADSTACK_CAPACITY})"
                ),
            );
        }
        self.expect_result(inst, Type::AdStack(elem));
        if capacity > MAX_ADSTACK_CAPACITY {
            return; // already an error; not counted towards the frame
        }
        self.frame_bytes = self
            .frame_bytes
            .saturating_add(adstack::buffer_bytes(elem, capacity));
        if self.frame_bytes > MAX_ADSTACK_FRAME_BYTES && !self.frame_reported {
            self.frame_reported = true;
            let fname = &self.f.name;
            self.err(
                loc,
                format!(
                    "adstack buffers of @{fname} exceed {MAX_ADSTACK_FRAME_BYTES} bytes per frame"
                ),
            );
        }
    }

    /// The handle and element operands of the adstack ops.
    fn check_adstack_types(&mut self, inst: &Inst) {
        use InstKind::*;
        let loc = inst.loc;
        let op = inst.kind.opcode();
        match &inst.kind {
            AdPush { stack, value }
            | AdAccAdj {
                stack,
                delta: value,
            } => {
                let Some(et) = self.stack_elem(inst, *stack) else {
                    return;
                };
                if let Some(t) = self.ty(*value) {
                    if !t.compatible(et) {
                        let role = if matches!(inst.kind, AdPush { .. }) {
                            "value"
                        } else {
                            "delta"
                        };
                        let d = self.desc(*value);
                        self.err(
                            loc,
                            format!("type mismatch: {op} {role} {d}, stack holds {et}"),
                        );
                    }
                }
            }
            AdPop { stack } => {
                self.stack_elem(inst, *stack);
            }
            AdTop { stack } | AdTopAdj { stack } => {
                if let Some(et) = self.stack_elem(inst, *stack) {
                    self.expect_result(inst, et);
                }
            }
            AdLen { stack } => {
                self.stack_elem(inst, *stack);
                self.expect_result(inst, Type::I64);
            }
            _ => {}
        }
    }

    fn check_conv(&mut self, inst: &Inst, cop: ConvOp, ty: Type, a: Value) {
        let loc = inst.loc;
        let op = inst.kind.opcode();
        if ty.is_adstack() {
            self.err(loc, format!("{op} cannot produce an adstack handle ({ty})"));
            return;
        }
        let Some(ta) = self.ty(a) else { return };
        // Described only for an error.
        let da = || self.desc(a);
        let problem: Option<String> = match cop {
            ConvOp::Sext | ConvOp::Uext | ConvOp::Ireduce => {
                let widen = cop != ConvOp::Ireduce;
                if !ty.is_int() {
                    Some(format!("{op}.{ty}: result type must be an int"))
                } else if !ta.is_int()
                    || (widen && ta.bits() >= ty.bits())
                    || (!widen && ta.bits() <= ty.bits())
                {
                    let rel = if widen { "narrower" } else { "wider" };
                    Some(format!(
                        "{op}.{ty} needs an int operand {rel} than {ty}, got {da}",
                        da = da()
                    ))
                } else {
                    None
                }
            }
            ConvOp::FcvtFromSint => {
                if !ty.is_float() {
                    Some(format!("{op}.{ty}: result type must be a float"))
                } else if !ta.is_int() {
                    Some(format!(
                        "{op}.{ty} needs an int operand, got {da}",
                        da = da()
                    ))
                } else {
                    None
                }
            }
            ConvOp::FcvtToSint => {
                if !ty.is_int() {
                    Some(format!("{op}.{ty}: result type must be an int"))
                } else if !ta.is_float() {
                    Some(format!(
                        "{op}.{ty} needs a float operand, got {da}",
                        da = da()
                    ))
                } else {
                    None
                }
            }
            ConvOp::Fpromote | ConvOp::Fdemote => {
                let (from, to) = if cop == ConvOp::Fpromote {
                    (Type::F32, Type::F64)
                } else {
                    (Type::F64, Type::F32)
                };
                if ty != to {
                    Some(format!("{op}.{ty}: result type must be {to}"))
                } else if ta != from {
                    Some(format!(
                        "{op}.{ty} needs an {from} operand, got {da}",
                        da = da()
                    ))
                } else {
                    None
                }
            }
            ConvOp::Bitcast => {
                if ta.bits() != ty.bits() {
                    Some(format!(
                        "{op}.{ty} needs a {}-bit operand, got {da}",
                        ty.bits(),
                        da = da()
                    ))
                } else {
                    None
                }
            }
        };
        match problem {
            Some(msg) => self.err(loc, msg),
            None => self.expect_result(inst, ty),
        }
    }
}
