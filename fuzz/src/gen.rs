//! The module generator of the `differential` and `compile_aarch64`
//! targets: `arbitrary` bytes in, a well-typed, verified [`Module`] out,
//! built through [`guardlift_ir::builder`].
//!
//! Every module it makes is *safe to run* on both engines under the check
//! sets its [`Needs`] allow, and its results do not depend on where the
//! heap put anything, so the interpreter and the JIT must agree bit for bit:
//!
//! - Control flow is structured: `if`/`else` diamonds with merge params,
//!   `while` and `do … while` loops with a bounded trip count (a constant,
//!   or a value masked to at most 7), nested a few levels; helper
//!   functions are called acyclically (a helper only calls helpers
//!   declared after it), so nothing recurses.
//! - Memory goes only to a sandboxed buffer (the values array of an object
//!   from `@obj_new`, addressed through its managed-dict word, at in-bounds
//!   offsets, some computed at run time) and to the 16-byte bodies of
//!   model-heap objects.
//! - Values derived from addresses (object pointers, managed-dict words,
//!   the buffer's base) are kept out of the value pools: only their low tag
//!   bits (`band w, 7`) flow on.
//! - Floats are canonicalized (`select (fcmp.ne x, x), nan, x`) wherever
//!   their bits could become visible as an integer (`bitcast` to an int, a
//!   `store` to memory), so NaN payloads never decide a result; the
//!   runner compares float results with every NaN equal.
//! - Attribute indices are below the object's attribute count, so both the
//!   values fast path and the dict slow path stay in bounds whatever mode
//!   the object is in (values, dict after `@obj_dictify`, or empty).
//! - The depth of every adstack is known exactly at every point: a nested
//!   region (an `if` arm, a loop body) is brought back to the depth it
//!   started at before it ends, and "tape" loops push or pop a constant
//!   number of times. A push at capacity or a pop/top/top_adj/acc_adj at
//!   length 0 is only emitted as an *injected fault*. Re-allocating loops
//!   run an `adstack.alloc` again while the header's param still carries
//!   the previous iteration's handle (so the two name one, just emptied,
//!   buffer); their depths are modelled for the first and the later
//!   iterations, and nothing of them is used after the loop.
//! - Injected faults (`@fault_clear_lsb`, raw stores over a dict slot,
//!   `dict_slot.store` of a word with bad tag bits, adstack overflow and
//!   underflow) are either guarded by hand (`guard_last`: a hand-written
//!   `guard.` op, so even the uninstrumented run stays in bounds) or
//!   recorded in [`Needs`], and then the module only runs with those
//!   checks on. A corrupting word always has low bits in `1..=6`, so no
//!   corruption can ever look like a values-tagged word.
//! - Lifetime and bounds faults ([`FnGen::lifetime_fault`],
//!   [`FnGen::bounds_fault`]) follow the same rule: a use of a freed object
//!   (attribute, dict slot, raw access to its header or through a values
//!   pointer kept from before the free), a double or invalid free, or an
//!   attribute index at or past the object's capacity is hand-guarded or
//!   needs `lifetime` / `bounds`. Freed objects are fresh ones that never
//!   join the object pool, so nothing else touches them.
//!
//! A generated module that does not verify is a bug of this generator: it
//! panics with the module's text.

use arbitrary::{Arbitrary, Unstructured};
use guardlift_instrument::CheckSet;
use guardlift_ir::builder::{FunctionBuilder, ModuleBuilder};
use guardlift_ir::{
    print_module, verify_module, BinOp, ConvOp, ExternId, FloatCC, FuncId, IntCC, Module, SrcLoc,
    Type, UnOp, Value,
};
use guardlift_runtime::adstack::AdElem;
use guardlift_runtime::layout::DictLayout;
use std::collections::BTreeSet;

/// Size limits of generated modules.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Helper functions besides `@main`.
    pub max_helpers: u32,
    /// Statements of `@main` (all regions together).
    pub max_main_stmts: u32,
    /// Statements of a helper.
    pub max_helper_stmts: u32,
    /// Nesting of `if`s and loops.
    pub max_depth: u32,
    /// Nesting of loops.
    pub max_loop_depth: u32,
    /// Largest product of the trip bounds of the loops around a statement.
    pub max_mult: u64,
    /// Largest estimated dynamic cost of one function (statements executed,
    /// callees included).
    pub max_cost: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_helpers: 3,
            max_main_stmts: 48,
            max_helper_stmts: 16,
            max_depth: 3,
            max_loop_depth: 2,
            max_mult: 64,
            max_cost: 20_000,
        }
    }
}

/// The checks a module must run with because some injected fault is not
/// guarded by hand.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    pub dict: bool,
    pub adstack: bool,
    pub lifetime: bool,
    pub bounds: bool,
}

impl Needs {
    /// May the module run instrumented with `checks` (none = uninstrumented)?
    pub fn allows(self, checks: CheckSet) -> bool {
        (!self.dict || checks.dict)
            && (!self.adstack || checks.adstack)
            && (!self.lifetime || checks.lifetime)
            && (!self.bounds || checks.bounds)
    }
}

/// A generated module with the arguments of its entry `@main`.
#[derive(Clone, Debug)]
pub struct Generated {
    pub module: Module,
    /// Canonical argument bits for `@main` (see `guardlift_ir::literal`).
    pub args: Vec<u64>,
    pub needs: Needs,
    /// Per function (module order): what the generator put in it that its
    /// opcodes do not show (`fault.overflow`, `ctl.loop`, ...).
    pub events: Vec<BTreeSet<&'static str>>,
}

/// The entry function of every generated module.
pub const ENTRY: &str = "main";

/// Generates one module from `u`. Never fails: when the bytes run out,
/// every choice takes its first option and the module simply ends.
pub fn generate(u: &mut Unstructured<'_>, cfg: &GenConfig) -> Generated {
    let mut src = Src { u };
    let layout = match src.range(0, 4) {
        0 | 1 => DictLayout::Cpython312,
        2 => DictLayout::Phoenix,
        3 => DictLayout::Custom(-64),
        _ => DictLayout::Custom(32),
    };
    let faults = src.chance(1, 2);
    let mut mb = ModuleBuilder::new(layout);
    let ext = Ext::declare(&mut mb);

    let main_params: Vec<Type> = (0..src.range(0, 3)).map(|_| src.scalar_ty()).collect();
    let main_ret = if src.chance(4, 5) {
        Some(src.scalar_ty())
    } else {
        None
    };
    let main = mb.declare_function(ENTRY, &main_params, main_ret);
    let n_helpers = src.range(0, cfg.max_helpers);
    let mut helpers = Vec::new();
    for i in 0..n_helpers {
        let params: Vec<Param> = (0..src.range(0, 4))
            .map(|_| {
                if src.chance(1, 4) {
                    Param::Obj(src.range(1, 4))
                } else {
                    Param::Scalar(src.scalar_ty())
                }
            })
            .collect();
        let ret = if src.chance(3, 4) {
            Some(src.scalar_ty())
        } else {
            None
        };
        let tys: Vec<Type> = params.iter().map(Param::ty).collect();
        let id = mb.declare_function(&format!("h{i}"), &tys, ret);
        helpers.push(HelperSig {
            id,
            params,
            ret,
            cost: 0,
        });
    }
    let mut ms = ModState {
        cfg: cfg.clone(),
        faults,
        layout,
        ext,
        helpers,
        needs: Needs::default(),
    };
    let mut events = vec![BTreeSet::new(); 1 + n_helpers as usize];
    // Callees before callers, so each caller knows its callees' costs.
    for i in (0..n_helpers as usize).rev() {
        let id = ms.helpers[i].id;
        let (cost, ev) = gen_function(&mut ms, &mut src, &mut mb, id, Some(i));
        ms.helpers[i].cost = cost;
        events[1 + i] = ev;
    }
    let (_, ev) = gen_function(&mut ms, &mut src, &mut mb, main, None);
    events[0] = ev;

    let text = print_module(mb.module());
    let mut module = match mb.build() {
        Ok(m) => m,
        Err(e) => panic!("generator bug: the module does not verify: {e}\n{text}"),
    };
    renumber(&mut module);
    if let Err(e) = verify_module(&module) {
        panic!(
            "generator bug: renumbered module does not verify: {e}\n{}",
            print_module(&module)
        );
    }
    let args = main_params.iter().map(|&t| src.arg_bits(t)).collect();
    Generated {
        module,
        args,
        needs: ms.needs,
        events,
    }
}

/// Gives every function, block and instruction its own line (as if the
/// module had been written one instruction per line), and every site the
/// position of the instruction it guards, so reports name distinct lines.
pub fn renumber(m: &mut Module) {
    let Module {
        functions, sites, ..
    } = m;
    let mut line = 1u32;
    for f in functions.iter_mut() {
        f.loc = SrcLoc::new(line, 1);
        line += 1;
        for b in &mut f.blocks {
            b.loc = SrcLoc::new(line, 1);
            line += 1;
            for inst in &mut b.insts {
                inst.loc = SrcLoc::new(line, 5);
                line += 1;
                if let Some(s) = inst.site.and_then(|id| sites.get_mut(&id)) {
                    s.loc = inst.loc;
                }
            }
        }
        line += 1;
    }
}

// ---------------------------------------------------------------------------
// Choices.

/// Choices over `arbitrary` bytes. Every method returns its first option
/// once the bytes run out, and no loop depends on a choice to end.
pub(crate) struct Src<'a, 'b> {
    pub(crate) u: &'a mut Unstructured<'b>,
}

impl Src<'_, '_> {
    pub(crate) fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if lo >= hi {
            return lo;
        }
        self.u.int_in_range(lo..=hi).unwrap_or(lo)
    }

    /// True with probability `num/den` (false once the bytes run out).
    pub(crate) fn chance(&mut self, num: u32, den: u32) -> bool {
        self.range(0, den - 1) >= den - num
    }

    pub(crate) fn index(&mut self, n: usize) -> usize {
        self.range(0, n.saturating_sub(1) as u32) as usize
    }

    /// An index drawn by weight (zero weights never).
    pub(crate) fn weighted(&mut self, w: &[u32]) -> usize {
        let total: u32 = w.iter().sum();
        let mut x = self.range(0, total.saturating_sub(1));
        for (i, &wi) in w.iter().enumerate() {
            if x < wi {
                return i;
            }
            x -= wi;
        }
        0
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::arbitrary(self.u).unwrap_or(0)
    }

    fn scalar_ty(&mut self) -> Type {
        [Type::I8, Type::I32, Type::I64, Type::F32, Type::F64][self.weighted(&[15, 20, 30, 15, 20])]
    }

    /// An interesting or arbitrary integer.
    pub(crate) fn int_imm(&mut self) -> i64 {
        const SPECIAL: [i64; 16] = [
            0,
            1,
            -1,
            2,
            7,
            8,
            31,
            32,
            63,
            64,
            127,
            -128,
            255,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ];
        match self.range(0, 3) {
            0 => self.range(0, 20) as i64 - 5,
            1 | 2 => SPECIAL[self.index(SPECIAL.len())],
            _ => self.u64() as i64,
        }
    }

    /// An interesting or arbitrary float.
    pub(crate) fn float_imm(&mut self) -> f64 {
        const SPECIAL: [f64; 18] = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            -2.5,
            3.0,
            1e-300,
            1e300,
            f64::MIN_POSITIVE,
            5e-324,
            f32::MAX as f64,
            f32::MIN_POSITIVE as f64,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            9.223372036854776e18,
        ];
        match self.range(0, 3) {
            0 => self.range(0, 40) as f64 / 4.0 - 5.0,
            1 | 2 => SPECIAL[self.index(SPECIAL.len())],
            _ => f64::from_bits(self.u64()),
        }
    }

    /// Canonical bits of an entry argument of type `ty`.
    fn arg_bits(&mut self, ty: Type) -> u64 {
        use guardlift_ir::literal::norm_int;
        match ty {
            Type::F32 => {
                let f = if self.chance(1, 4) {
                    f32::from_bits(self.u64() as u32)
                } else {
                    self.float_imm() as f32
                };
                f.to_bits() as u64
            }
            Type::F64 => self.float_imm().to_bits(),
            t => norm_int(t, self.int_imm() as u64),
        }
    }
}

// ---------------------------------------------------------------------------
// Module-level state.

struct Ext {
    obj_new: ExternId,
    obj_dictify: ExternId,
    obj_free: ExternId,
    fault_clear_lsb: ExternId,
    load_attr_slow: ExternId,
    store_attr_slow: ExternId,
    math: [ExternId; 4],
    print_i64: ExternId,
    print_f64: ExternId,
}

impl Ext {
    fn declare(mb: &mut ModuleBuilder) -> Ext {
        use Type::*;
        Ext {
            obj_new: mb.declare_extern("obj_new", &[I64], Some(Ptr)),
            obj_dictify: mb.declare_extern("obj_dictify", &[Ptr], None),
            obj_free: mb.declare_extern("obj_free", &[Ptr], None),
            fault_clear_lsb: mb.declare_extern("fault_clear_lsb", &[Ptr], None),
            load_attr_slow: mb.declare_extern("load_attr_slow", &[Ptr, I64], Some(I64)),
            store_attr_slow: mb.declare_extern("store_attr_slow", &[Ptr, I64, I64], None),
            math: [
                mb.declare_extern("sin", &[F64], Some(F64)),
                mb.declare_extern("cos", &[F64], Some(F64)),
                mb.declare_extern("exp", &[F64], Some(F64)),
                mb.declare_extern("log", &[F64], Some(F64)),
            ],
            print_i64: mb.declare_extern("print_i64", &[I64], None),
            print_f64: mb.declare_extern("print_f64", &[F64], None),
        }
    }
}

/// A helper parameter: a scalar, or an object with at least this many attributes.
#[derive(Clone, Copy, Debug)]
enum Param {
    Scalar(Type),
    Obj(u32),
}

impl Param {
    fn ty(&self) -> Type {
        match self {
            Param::Scalar(t) => *t,
            Param::Obj(_) => Type::Ptr,
        }
    }
}

struct HelperSig {
    id: FuncId,
    params: Vec<Param>,
    ret: Option<Type>,
    cost: u64,
}

struct ModState {
    cfg: GenConfig,
    faults: bool,
    layout: DictLayout,
    ext: Ext,
    helpers: Vec<HelperSig>,
    needs: Needs,
}

// ---------------------------------------------------------------------------
// Function-level state.

/// A model-heap object (a `ptr` that only ever reaches object operands).
#[derive(Clone, Copy, Debug)]
struct Obj {
    v: Value,
    nattrs: u32,
}

/// The sandboxed buffer: `base` (an address, never in a pool) and its size.
#[derive(Clone, Copy, Debug)]
struct Buf {
    obj: Value,
    base: Value,
    bytes: u32,
}

/// An adstack, its current handle value and its exact depth.
#[derive(Clone, Copy, Debug)]
struct Stack {
    v: Value,
    elem: AdElem,
    cap: u32,
    depth: u32,
}

/// What a region restores when it ends.
struct Scope {
    vals: usize,
    objs: usize,
    stacks: Vec<(Value, u32)>,
}

/// Size of the sandboxed buffer (16 attributes).
const BUF_ATTRS: u32 = 16;
const BUF_BYTES: u32 = BUF_ATTRS * 8;

struct FnGen<'f, 'a, 'b> {
    src: &'f mut Src<'a, 'b>,
    ms: &'f mut ModState,
    fb: FunctionBuilder<'f>,
    /// Index of this helper (callees must come after it), None for @main.
    helper: Option<usize>,
    /// Clean scalar values (no address ever flows into them).
    vals: Vec<Value>,
    objs: Vec<Obj>,
    bufs: Vec<Buf>,
    stacks: Vec<Stack>,
    depth: u32,
    loop_depth: u32,
    mult: u64,
    cost: u64,
    stmts_left: u32,
    /// Has an `@obj_dictify` call been emitted (earlier in program order)?
    dictified: bool,
    ev: BTreeSet<&'static str>,
}

fn gen_function(
    ms: &mut ModState,
    src: &mut Src<'_, '_>,
    mb: &mut ModuleBuilder,
    id: FuncId,
    helper: Option<usize>,
) -> (u64, BTreeSet<&'static str>) {
    let (params, ret) = match helper {
        Some(i) => (ms.helpers[i].params.clone(), ms.helpers[i].ret),
        None => {
            let f = mb.module().func(id);
            (
                f.param_types().into_iter().map(Param::Scalar).collect(),
                f.ret,
            )
        }
    };
    let max_stmts = if helper.is_some() {
        ms.cfg.max_helper_stmts
    } else {
        ms.cfg.max_main_stmts
    };
    let fb = mb.function(id);
    let mut g = FnGen {
        src,
        ms,
        fb,
        helper,
        vals: Vec::new(),
        objs: Vec::new(),
        bufs: Vec::new(),
        stacks: Vec::new(),
        depth: 0,
        loop_depth: 0,
        mult: 1,
        cost: 0,
        stmts_left: max_stmts,
        dictified: false,
        ev: BTreeSet::new(),
    };
    let entry = g.fb.create_block("entry");
    g.fb.switch_to_block(entry);
    for (i, p) in params.iter().enumerate() {
        let v = g.fb.param(i);
        match *p {
            Param::Scalar(_) => g.vals.push(v),
            Param::Obj(k) => g.objs.push(Obj { v, nattrs: k }),
        }
    }
    g.prologue();
    let n = g.src.range(1, max_stmts);
    g.region(n);
    g.epilogue(ret);
    let FnGen { cost, ev, .. } = g;
    (cost.max(1), ev)
}

impl FnGen<'_, '_, '_> {
    // ---- small helpers ----

    fn ty(&self, v: Value) -> Type {
        self.fb.ty(v)
    }

    fn step(&mut self) {
        self.cost = self.cost.saturating_add(self.mult);
    }

    fn iconst(&mut self, ty: Type, x: i64) -> Value {
        self.fb.iconst(ty, x)
    }

    fn int_ty(&mut self) -> Type {
        [Type::I8, Type::I32, Type::I64, Type::Ptr][self.src.weighted(&[25, 30, 40, 5])]
    }

    fn float_ty(&mut self) -> Type {
        if self.src.chance(1, 2) {
            Type::F64
        } else {
            Type::F32
        }
    }

    /// A new constant of `ty` (a scalar type).
    fn konst(&mut self, ty: Type) -> Value {
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
    fn pick_where(&mut self, ok: impl Fn(Type) -> bool) -> Option<Value> {
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
    fn pick(&mut self, ty: Type) -> Value {
        if !self.src.chance(1, 10) {
            if let Some(v) = self.pick_where(|t| t == ty) {
                return v;
            }
        }
        self.konst(ty)
    }

    /// A value that may stand where `ty` is expected (`i64` and `ptr` mix).
    fn pick_compat(&mut self, ty: Type) -> Value {
        if !self.src.chance(1, 10) {
            if let Some(v) = self.pick_where(|t| t.compatible(ty)) {
                return v;
            }
        }
        self.konst(ty)
    }

    fn pick_int(&mut self) -> Value {
        let t = self.int_ty();
        self.pick(t)
    }

    /// Any int widened to `i64` (sign- or zero-extended).
    fn widen_to_i64(&mut self, v: Value) -> Value {
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
    fn canon_nan(&mut self, x: Value) -> Value {
        let t = self.ty(x);
        let c = self.fb.fcmp(FloatCC::Ne, x, x);
        let nan = self.fb.fconst(t, f64::NAN);
        self.fb.select(c, nan, x)
    }

    /// A branch condition: a comparison, or any int.
    fn cond(&mut self) -> Value {
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

    fn scope(&self) -> Scope {
        Scope {
            vals: self.vals.len(),
            objs: self.objs.len(),
            stacks: self.stacks.iter().map(|s| (s.v, s.depth)).collect(),
        }
    }

    /// Brings every adstack back to the depth it had at `s` (exactly known:
    /// pops of a non-empty stack, pushes below capacity).
    fn compensate(&mut self, s: &Scope) {
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
    fn restore(&mut self, s: &Scope) {
        self.vals.truncate(s.vals);
        self.objs.truncate(s.objs);
        for (st, &(v, d)) in self.stacks.iter_mut().zip(&s.stacks) {
            st.v = v;
            debug_assert_eq!(st.depth, d, "regions are compensated before they end");
            st.depth = d;
        }
    }

    /// Guards the last instruction by hand (a hand-written `guard.` op).
    fn hand_guard(&mut self) {
        self.fb.guard_last(SrcLoc::default());
        self.ev.insert("guard.hand_written");
    }

    /// An injected fault: guard it by hand (contained, runs everywhere) or
    /// leave it to the instrumentation (the module then needs the check).
    fn fault_guard(&mut self, dict: bool) {
        if self.src.chance(1, 2) {
            self.hand_guard();
        } else if dict {
            self.ms.needs.dict = true;
        } else {
            self.ms.needs.adstack = true;
        }
    }

    fn new_obj(&mut self, nattrs: u32) -> Obj {
        let n = self.iconst(Type::I64, nattrs as i64);
        let v = self
            .fb
            .call(self.ms.ext.obj_new, &[n])
            .expect("obj_new returns");
        let o = Obj { v, nattrs };
        self.objs.push(o);
        o
    }

    fn pick_obj(&mut self) -> Obj {
        if self.objs.is_empty() || self.src.chance(1, 12) {
            let n = self.src.range(1, 6);
            return self.new_obj(n);
        }
        let i = self.src.index(self.objs.len());
        self.objs[i]
    }

    // ---- structure ----

    fn prologue(&mut self) {
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
    fn print_val(&mut self, v: Value) {
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
    fn dump(&mut self) {
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

    fn epilogue(&mut self, ret: Option<Type>) {
        if self.src.chance(3, 4) {
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

    fn region(&mut self, n: u32) {
        for _ in 0..n {
            if self.stmts_left == 0 {
                break;
            }
            self.stmts_left -= 1;
            self.stmt();
        }
    }

    fn stmt(&mut self) {
        self.step();
        let can_ctl = self.depth < self.ms.cfg.max_depth && self.stmts_left > 0;
        let can_loop = can_ctl && self.loop_depth < self.ms.cfg.max_loop_depth;
        let has_objs = !self.objs.is_empty();
        let has_mem = has_objs || !self.bufs.is_empty();
        let has_stacks = !self.stacks.is_empty();
        let can_call = !self.callable().is_empty();
        let w = [
            14,                                         // 0 int binary
            5,                                          // 1 icmp
            8,                                          // 2 float binary
            3,                                          // 3 float unary
            3,                                          // 4 fcmp
            4,                                          // 5 select
            8,                                          // 6 conversion
            2,                                          // 7 constant
            if has_mem { 8 } else { 0 },                // 8 memory
            if can_call { 5 } else { 0 },               // 9 call a helper
            3,                                          // 10 call a built-in
            2,                                          // 11 obj_new
            if has_objs { 8 } else { 2 },               // 12 attributes
            if has_objs { 4 } else { 1 },               // 13 dict slot
            if has_objs { 2 } else { 0 },               // 14 dictify
            if has_stacks { 10 } else { 0 },            // 15 adstack op
            if has_stacks && can_loop { 2 } else { 0 }, // 16 tape loop
            if can_ctl { 4 } else { 0 },                // 17 if/else
            if can_loop { 4 } else { 0 },               // 18 loop
            if self.ms.faults { 3 } else { 0 },         // 19 injected fault
            if has_objs { 1 } else { 0 },               // 20 hand-written watch
            if can_loop { 2 } else { 0 },               // 21 re-allocating loop
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
            _ => {
                let o = self.pick_obj();
                self.fb.watch(o.v);
            }
        }
    }

    fn int_binary(&mut self) {
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

    fn conversion(&mut self) {
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
    fn memory(&mut self) {
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
    fn callable(&self) -> Vec<usize> {
        let first = self.helper.map_or(0, |i| i + 1);
        let room = self.ms.cfg.max_cost.saturating_sub(self.cost);
        (first..self.ms.helpers.len())
            .filter(|&j| self.ms.helpers[j].cost.saturating_mul(self.mult) <= room)
            .collect()
    }

    fn call_helper(&mut self) {
        let cands = self.callable();
        if cands.is_empty() {
            return;
        }
        let j = cands[self.src.index(cands.len())];
        let (id, params, cost) = {
            let h = &self.ms.helpers[j];
            (h.id, h.params.clone(), h.cost)
        };
        let mut args = Vec::with_capacity(params.len());
        for p in params {
            match p {
                Param::Scalar(t) => args.push(self.pick_compat(t)),
                Param::Obj(k) => {
                    let fit: Vec<Obj> = self
                        .objs
                        .iter()
                        .copied()
                        .filter(|o| o.nattrs >= k)
                        .collect();
                    let o = if fit.is_empty() || self.src.chance(1, 8) {
                        let n = self.src.range(k, 6);
                        self.new_obj(n)
                    } else {
                        fit[self.src.index(fit.len())]
                    };
                    self.ev.insert("call.object_arg");
                    args.push(o.v);
                }
            }
        }
        self.cost = self.cost.saturating_add(cost.saturating_mul(self.mult));
        if let Some(r) = self.fb.call(id, &args) {
            self.vals.push(r);
        }
    }

    fn f64_arg(&mut self) -> Value {
        if self.src.chance(1, 4) {
            let a = self.pick(Type::F32);
            self.fb.conv(ConvOp::Fpromote, Type::F64, a)
        } else {
            self.pick(Type::F64)
        }
    }

    fn print_stmt(&mut self) {
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

    fn call_builtin(&mut self) {
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

    fn attr(&mut self) {
        if self.dictified {
            self.ev.insert("obj.attr_after_dictify");
        }
        let o = self.pick_obj();
        let i = self.src.range(0, o.nattrs - 1);
        if self.src.chance(1, 2) {
            let r = self.fb.load_attr(o.v, i);
            self.vals.push(r);
        } else {
            let x = self.pick_compat(Type::I64);
            self.fb.store_attr(o.v, i, x);
        }
        if self.src.chance(1, 12) {
            self.hand_guard();
        }
    }

    fn dict_slot(&mut self) {
        let o = self.pick_obj();
        match self.src.range(0, 4) {
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

    /// One op on an adstack, legal unless this module injects faults.
    fn adstack_op(&mut self) {
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
    fn emit_ad_op(&mut self, si: usize, op: usize) {
        let st = self.stacks[si];
        self.emit_ad_op_on(st.v, st.elem, op);
    }

    /// Emits adstack op `op` (see [`Self::adstack_op`]) on handle `h`.
    fn emit_ad_op_on(&mut self, h: Value, elem: AdElem, op: usize) {
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
    fn realloc_loop(&mut self) {
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

    /// `if`/`else` with optional arm params, merge params, and adstack
    /// handles passed through the merge.
    fn if_else(&mut self) {
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
        self.fb.switch_to_block(merge);
        self.vals.extend(merge_vals);
        for (&i, &h) in passed.iter().zip(&merge_handles) {
            self.stacks[i].v = h;
        }
    }

    /// A trip count: (value, its type, upper bound).
    fn trip_count(&mut self, max_bound: u64) -> (Value, Type, u64) {
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
    fn counted_loop(&mut self) {
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
    /// or one that reads and pops a constant number of them.
    fn tape_loop(&mut self) {
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
        let zero = self.iconst(Type::I64, 0);
        let acc0 = self.pick_compat(et);
        let mut init = vec![zero, acc0];
        init.extend(h_param.map(|_| st.v));
        self.fb.jump(header, &init);
        self.fb.switch_to_block(header);
        let nv = self.iconst(Type::I64, n as i64);
        let c = self.fb.icmp(IntCC::Slt, i, nv);
        self.fb.brif(c, body, &[], exit, &[]);
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

    /// An injected fault.
    fn fault(&mut self) {
        let kinds = [
            if self.stacks.is_empty() { 0 } else { 2 }, // 0 adstack overflow
            if self.stacks.is_empty() { 0 } else { 2 }, // 1 adstack underflow
            2,                                          // 2 fault_clear_lsb
            2,                                          // 3 raw store over the slot
            2,                                          // 4 dict_slot.store of a bad word
            4,                                          // 5 lifetime (use after free, bad frees)
            2,                                          // 6 attribute index out of bounds
        ];
        match self.src.weighted(&kinds) {
            k @ (0 | 1) => {
                let si = self.src.index(self.stacks.len());
                // Fill (or drain) with legal ops first, then one op too many.
                if k == 0 {
                    while self.stacks[si].depth < self.stacks[si].cap
                        && self.stacks[si].cap - self.stacks[si].depth <= 4
                    {
                        self.emit_ad_op(si, 0);
                        self.stacks[si].depth += 1;
                    }
                    if self.stacks[si].depth < self.stacks[si].cap {
                        return;
                    }
                    self.emit_ad_op(si, 0);
                    self.ev.insert("fault.adstack_overflow");
                } else {
                    while self.stacks[si].depth > 0 && self.stacks[si].depth <= 4 {
                        self.emit_ad_op(si, 1);
                        self.stacks[si].depth -= 1;
                    }
                    if self.stacks[si].depth > 0 {
                        return;
                    }
                    let op = [1, 2, 3, 4][self.src.index(4)];
                    self.emit_ad_op(si, op);
                    self.ev.insert("fault.adstack_underflow");
                }
                self.fault_guard(false);
            }
            5 => self.lifetime_fault(),
            6 => self.bounds_fault(),
            2 => {
                let o = self.pick_obj();
                self.fb.call(self.ms.ext.fault_clear_lsb, &[o.v]);
                self.ms.needs.dict = true;
                self.ev.insert("fault.clear_lsb");
            }
            k => {
                let o = self.pick_obj();
                // A word whose low bits are 1..=6 whatever the slot held:
                // never mistaken for a values-tagged word.
                let bits = self.src.range(1, 6) as i64;
                let bad = if self.src.chance(1, 2) {
                    let hi = self.src.u64() as i64 & !7;
                    self.iconst(Type::I64, hi | bits)
                } else {
                    let w = self.fb.dict_slot_load(o.v);
                    let m = self.iconst(Type::I64, !7);
                    let c = self.fb.binary(BinOp::Band, w, m);
                    let b = self.iconst(Type::I64, bits);
                    self.fb.binary(BinOp::Bor, c, b)
                };
                if k == 3 {
                    let off = self.ms.layout.dict_slot_offset();
                    let v = match self.src.range(0, 3) {
                        0 => self.fb.conv(ConvOp::Ireduce, Type::I8, bad),
                        1 => self.fb.conv(ConvOp::Ireduce, Type::I32, bad),
                        _ => bad,
                    };
                    self.fb.store(v, o.v, off);
                    self.ev.insert("fault.raw_slot_store");
                } else {
                    self.fb.dict_slot_store(o.v, bad);
                    self.ev.insert("fault.bad_dict_store");
                }
                self.fault_guard(true);
            }
        }
    }

    /// A lifetime or bounds fault: guard it by hand or record the check
    /// the module then needs.
    fn object_fault_guard(&mut self, need: fn(&mut Needs)) {
        if self.src.chance(1, 2) {
            self.hand_guard();
        } else {
            need(&mut self.ms.needs);
        }
    }

    /// An injected lifetime fault on a fresh object (never in the pool):
    /// freed, then used — an attribute, its dict slot, a raw access to its
    /// header or through its values pointer kept from before the free — or
    /// freed twice; or a free of something that is not an object.
    fn lifetime_fault(&mut self) {
        let need: fn(&mut Needs) = |n| n.lifetime = true;
        let nattrs = self.src.range(1, 4);
        let n = self.iconst(Type::I64, nattrs as i64);
        let o = self
            .fb
            .call(self.ms.ext.obj_new, &[n])
            .expect("obj_new returns");
        // attribute load, store, dict slot, raw header load, raw store
        // through the values pointer, double free, invalid free
        let kind = self.src.weighted(&[2, 2, 1, 2, 2, 3, 3]);
        if kind == 6 {
            // Not an object: an address inside one.
            let eight = self.iconst(Type::I64, 8);
            let inner = self.fb.binary(BinOp::Iadd, o, eight);
            self.fb.call(self.ms.ext.obj_free, &[inner]);
            self.object_fault_guard(need);
            self.fb.call(self.ms.ext.obj_free, &[o]);
            self.ev.insert("fault.invalid_free");
            return;
        }
        let i = self.src.range(0, nattrs - 1);
        let x = self.pick_compat(Type::I64);
        self.fb.store_attr(o, i, x);
        // A values pointer kept from before the free (the object is fresh:
        // values-tagged).
        let word = self.fb.dict_slot_load(o);
        let one = self.iconst(Type::I64, 1);
        let values = self.fb.binary(BinOp::Iadd, word, one);
        self.fb.call(self.ms.ext.obj_free, &[o]);
        match kind {
            0 => {
                let r = self.fb.load_attr(o, i);
                self.object_fault_guard(need);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free");
            }
            1 => {
                let y = self.pick_compat(Type::I64);
                self.fb.store_attr(o, i, y);
                self.object_fault_guard(need);
                self.ev.insert("fault.use_after_free");
            }
            2 => {
                let w = self.fb.dict_slot_load(o);
                self.object_fault_guard(need);
                let m = self.iconst(Type::I64, 7);
                let r = self.fb.binary(BinOp::Band, w, m);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free");
            }
            3 => {
                // The header word at the object's address (its refcount).
                let r = self.fb.load(Type::I64, o, 0);
                self.object_fault_guard(need);
                self.vals.push(r);
                self.ev.insert("fault.use_after_free_raw");
            }
            4 => {
                let y = self.pick_compat(Type::I64);
                self.fb.store(y, values, 8 * i as i32);
                self.object_fault_guard(need);
                self.ev.insert("fault.use_after_free_raw");
            }
            _ => {
                self.fb.call(self.ms.ext.obj_free, &[o]);
                self.object_fault_guard(need);
                self.ev.insert("fault.double_free");
            }
        }
    }

    /// An injected bounds fault: an attribute index at or past the
    /// object's capacity. (An object in dict mode takes the host's slow
    /// path, where any index is an ordinary dict key.)
    fn bounds_fault(&mut self) {
        let o = self.pick_obj();
        let i = o.nattrs + self.src.range(0, 3);
        if self.src.chance(1, 2) {
            let r = self.fb.load_attr(o.v, i);
            self.object_fault_guard(|n| n.bounds = true);
            self.vals.push(r);
        } else {
            let x = self.pick_compat(Type::I64);
            self.fb.store_attr(o.v, i, x);
            self.object_fault_guard(|n| n.bounds = true);
        }
        self.ev.insert("fault.attr_out_of_bounds");
    }
}
