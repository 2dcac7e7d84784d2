//! Small helpers of [`FnGen`]: types, constants, picking values and
//! objects from the pools, conditions, scopes and hand guards.

use super::{FnGen, Obj, Scope};
use guardlift_ir::{ConvOp, FloatCC, IntCC, SrcLoc, Type, Value};

impl FnGen<'_, '_, '_> {
    pub(super) fn ty(&self, v: Value) -> Type {
        self.fb.ty(v)
    }

    pub(super) fn step(&mut self) {
        self.cost = self.cost.saturating_add(self.mult);
    }

    pub(super) fn iconst(&mut self, ty: Type, x: i64) -> Value {
        self.fb.iconst(ty, x)
    }

    pub(super) fn int_ty(&mut self) -> Type {
        [Type::I8, Type::I32, Type::I64, Type::Ptr][self.src.weighted(&[25, 30, 40, 5])]
    }

    pub(super) fn float_ty(&mut self) -> Type {
        if self.src.chance(1, 2) {
            Type::F64
        } else {
            Type::F32
        }
    }

    /// A new constant of `ty` (a scalar type).
    pub(super) fn konst(&mut self, ty: Type) -> Value {
        let v = if ty.is_float() {
            let x = self.src.float_imm();
            self.fb.fconst(ty, x)
        } else {
            let x = self.src.int_imm();
            self.fb.iconst(ty, x)
        };
        self.vals.push(v);
        v
    }

    /// A pooled value whose type satisfies `ok`, preferring recent ones.
    pub(super) fn pick_where(&mut self, ok: impl Fn(Type) -> bool) -> Option<Value> {
        let cands: Vec<Value> = self
            .vals
            .iter()
            .copied()
            .filter(|&v| ok(self.fb.ty(v)))
            .collect();
        if cands.is_empty() {
            return None;
        }
        let n = cands.len();
        let i = if self.src.chance(1, 2) {
            n - 1 - self.src.index(n.min(6))
        } else {
            self.src.index(n)
        };
        Some(cands[i])
    }

    /// A value of exactly `ty`, or (rarely, or when there is none) a new constant.
    pub(super) fn pick(&mut self, ty: Type) -> Value {
        if !self.src.chance(1, 10) {
            if let Some(v) = self.pick_where(|t| t == ty) {
                return v;
            }
        }
        self.konst(ty)
    }

    /// A value that may stand where `ty` is expected (`i64` and `ptr` mix).
    pub(super) fn pick_compat(&mut self, ty: Type) -> Value {
        if !self.src.chance(1, 10) {
            if let Some(v) = self.pick_where(|t| t.compatible(ty)) {
                return v;
            }
        }
        self.konst(ty)
    }

    pub(super) fn pick_int(&mut self) -> Value {
        let t = self.int_ty();
        self.pick(t)
    }

    /// Any int widened to `i64` (sign- or zero-extended).
    pub(super) fn widen_to_i64(&mut self, v: Value) -> Value {
        let t = self.ty(v);
        if t.bits() == 64 {
            return v;
        }
        let op = if self.src.chance(1, 2) {
            ConvOp::Sext
        } else {
            ConvOp::Uext
        };
        self.fb.conv(op, Type::I64, v)
    }

    /// `select (fcmp.ne x, x), nan, x`: NaN payloads never leave a float.
    pub(super) fn canon_nan(&mut self, x: Value) -> Value {
        let t = self.ty(x);
        let c = self.fb.fcmp(FloatCC::Ne, x, x);
        let nan = self.fb.fconst(t, f64::NAN);
        self.fb.select(c, nan, x)
    }

    /// A branch condition: a comparison, or any int.
    pub(super) fn cond(&mut self) -> Value {
        match self.src.range(0, 3) {
            0 => self.pick_int(),
            1 => {
                let t = self.float_ty();
                let (a, b) = (self.pick(t), self.pick(t));
                let cc = FloatCC::ALL[self.src.index(FloatCC::ALL.len())];
                self.fb.fcmp(cc, a, b)
            }
            _ => {
                let a = self.pick_int();
                let t = self.ty(a);
                let b = self.pick_compat(t);
                let cc = IntCC::ALL[self.src.index(IntCC::ALL.len())];
                self.fb.icmp(cc, a, b)
            }
        }
    }

    pub(super) fn scope(&self) -> Scope {
        Scope {
            vals: self.vals.len(),
            objs: self.objs.len(),
            stacks: self.stacks.iter().map(|s| (s.v, s.depth)).collect(),
        }
    }

    /// Brings every adstack back to the depth it had at `s` (exactly known:
    /// pops of a non-empty stack, pushes below capacity).
    pub(super) fn compensate(&mut self, s: &Scope) {
        for i in 0..self.stacks.len() {
            let want = s.stacks[i].1;
            while self.stacks[i].depth > want {
                let h = self.stacks[i].v;
                self.fb.adstack_pop(h);
                self.stacks[i].depth -= 1;
            }
            while self.stacks[i].depth < want {
                let st = self.stacks[i];
                let x = self.konst(Type::of_elem(st.elem));
                self.fb.adstack_push(st.v, x);
                self.stacks[i].depth += 1;
            }
        }
    }

    /// Leaves a region: its values and objects go out of scope, handles
    /// rebound inside it are bound again to what they were at `s`.
    pub(super) fn restore(&mut self, s: &Scope) {
        self.vals.truncate(s.vals);
        self.objs.truncate(s.objs);
        for (st, &(v, d)) in self.stacks.iter_mut().zip(&s.stacks) {
            st.v = v;
            debug_assert_eq!(st.depth, d, "regions are compensated before they end");
            st.depth = d;
        }
    }

    /// Guards the last instruction by hand (a hand-written `guard.` op).
    pub(super) fn hand_guard(&mut self) {
        self.fb.guard_last(SrcLoc::default());
        self.ev.insert("guard.hand_written");
    }

    /// An injected fault: guard it by hand (contained, runs everywhere) or
    /// leave it to the instrumentation (the module then needs the check).
    pub(super) fn fault_guard(&mut self, dict: bool) {
        if self.src.chance(1, 2) {
            self.hand_guard();
        } else if dict {
            self.ms.needs.dict = true;
        } else {
            self.ms.needs.adstack = true;
        }
    }

    pub(super) fn new_obj(&mut self, nattrs: u32) -> Obj {
        let n = self.iconst(Type::I64, nattrs as i64);
        let v = self
            .fb
            .call(self.ms.ext.obj_new, &[n])
            .expect("obj_new returns");
        let o = Obj { v, nattrs };
        self.objs.push(o);
        o
    }

    pub(super) fn pick_obj(&mut self) -> Obj {
        // A restricted region makes no object (`@obj_new` is a call).
        let fresh = !self.restricted() && self.src.chance(1, 12);
        if self.objs.is_empty() || fresh {
            let n = self.src.range(1, 6);
            return self.new_obj(n);
        }
        let i = self.src.index(self.objs.len());
        self.objs[i]
    }
}
