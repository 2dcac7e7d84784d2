//! Verifier tests of modules built through the API: what text cannot
//! express, because the parser rejects or repairs it first (unknown values,
//! bad value definitions, types the parser infers, sites of other
//! functions…), and the positive cases. Verifier errors that text can
//! express are files in `cases/verify/`, run by `filetests.rs`.

use guardlift_abi::adstack::{AdElem, MAX_ADSTACK_CAPACITY};
use guardlift_abi::layout::{DictLayout, MAX_ATTR_INDEX};
use guardlift_ir::inst::{
    BinOp, Block, BlockCall, Callee, ConvOp, ExternId, FloatCC, FuncId, Inst, InstKind, IntCC,
    SiteId, SrcLoc, UnOp, Value,
};
use guardlift_ir::module::{BlockData, ExternDecl, Function, Module, Site, ValueData, ValueDef};
use guardlift_ir::{verify_module, Diagnostic, Type};
use std::collections::BTreeMap;

// ---- a tiny hand builder ------------------------------------------------------

const I8: Type = Type::I8;
const I32: Type = Type::I32;
const I64: Type = Type::I64;
const PTR: Type = Type::Ptr;
const F32: Type = Type::F32;
const F64: Type = Type::F64;
const ASF64: Type = Type::AdStack(AdElem::F64);
const ASF32: Type = Type::AdStack(AdElem::F32);

/// Builds a function; every function, block and instruction gets its own line
/// (functions and blocks at column 1, instructions at column 5).
struct Fb {
    f: Function,
    line: u32,
    last: SrcLoc,
}

impl Fb {
    fn new(name: &str, line: u32, params: &[(&str, Type)], ret: Option<Type>) -> Fb {
        let loc = SrcLoc::new(line, 1);
        let mut fb = Fb {
            f: Function {
                name: name.to_string(),
                params: Vec::new(),
                ret,
                values: Vec::new(),
                blocks: Vec::new(),
                loc,
            },
            line,
            last: loc,
        };
        for (i, (n, t)) in params.iter().enumerate() {
            let v = fb.value(n, *t, ValueDef::Param(i as u32));
            fb.f.params.push(v);
        }
        fb
    }

    fn next_loc(&mut self, col: u32) -> SrcLoc {
        self.line += 1;
        self.last = SrcLoc::new(self.line, col);
        self.last
    }

    fn value(&mut self, name: &str, ty: Type, def: ValueDef) -> Value {
        self.f.values.push(ValueData {
            name: name.into(),
            ty,
            def,
        });
        Value(self.f.values.len() as u32 - 1)
    }

    fn block(&mut self, name: &str, params: &[(&str, Type)]) -> Block {
        let b = Block(self.f.blocks.len() as u32);
        let loc = self.next_loc(1);
        self.f.blocks.push(BlockData {
            name: name.into(),
            params: Vec::new(),
            insts: Vec::new(),
            loc,
        });
        for (i, (n, t)) in params.iter().enumerate() {
            let v = self.value(n, *t, ValueDef::BlockParam(b, i as u32));
            self.f.blocks[b.0 as usize].params.push(v);
        }
        b
    }

    fn push(
        &mut self,
        b: Block,
        kind: InstKind,
        result: Option<Value>,
        site: Option<u32>,
    ) -> SrcLoc {
        let loc = self.next_loc(5);
        self.f.blocks[b.0 as usize].insts.push(Inst {
            kind,
            result,
            loc,
            site: site.map(SiteId),
        });
        loc
    }

    fn next_def(&self, b: Block) -> ValueDef {
        ValueDef::Inst(b)
    }

    /// An instruction without result.
    fn i(&mut self, b: Block, kind: InstKind) -> SrcLoc {
        self.push(b, kind, None, None)
    }

    /// A guarded instruction without result.
    fn gi(&mut self, b: Block, site: u32, kind: InstKind) -> SrcLoc {
        self.push(b, kind, None, Some(site))
    }

    /// An instruction defining `%name: ty`.
    fn r(&mut self, b: Block, name: &str, ty: Type, kind: InstKind) -> Value {
        let def = self.next_def(b);
        let v = self.value(name, ty, def);
        self.push(b, kind, Some(v), None);
        v
    }

    /// A guarded instruction defining `%name: ty`.
    fn gr(&mut self, b: Block, site: u32, name: &str, ty: Type, kind: InstKind) -> Value {
        let def = self.next_def(b);
        let v = self.value(name, ty, def);
        self.push(b, kind, Some(v), Some(site));
        v
    }

    fn v(&self, name: &str) -> Value {
        let i = self
            .f
            .values
            .iter()
            .position(|d| d.name == name)
            .expect("no such value");
        Value(i as u32)
    }

    fn loc(&self) -> SrcLoc {
        self.last
    }

    fn done(self) -> Function {
        self.f
    }
}

fn ext(name: &str, line: u32, params: &[Type], ret: Option<Type>) -> ExternDecl {
    ExternDecl {
        name: name.to_string(),
        params: params.to_vec(),
        ret,
        loc: SrcLoc::new(line, 1),
    }
}

fn module(externs: Vec<ExternDecl>, functions: Vec<Function>) -> Module {
    Module {
        layout: DictLayout::Cpython312,
        externs,
        functions,
        sites: BTreeMap::new(),
    }
}

fn bin(op: BinOp, a: Value, b: Value) -> InstKind {
    InstKind::Binary { op, a, b }
}
fn iconst(ty: Type, imm: i64) -> InstKind {
    InstKind::Iconst { ty, imm }
}
fn fconst(ty: Type, value: f64) -> InstKind {
    InstKind::Fconst { ty, value }
}
fn conv(op: ConvOp, ty: Type, a: Value) -> InstKind {
    InstKind::Conv { op, ty, a }
}
fn bc(block: Block, args: &[Value]) -> BlockCall {
    BlockCall {
        block,
        args: args.iter().copied().collect(),
    }
}
fn jump(block: Block, args: &[Value]) -> InstKind {
    InstKind::Jump {
        dest: bc(block, args),
    }
}
fn ret(v: Option<Value>) -> InstKind {
    InstKind::Return { value: v }
}
fn call_f(i: u32, args: &[Value]) -> InstKind {
    InstKind::Call {
        callee: Callee::Func(FuncId(i)),
        args: args.to_vec(),
    }
}
fn call_x(i: u32, args: &[Value]) -> InstKind {
    InstKind::Call {
        callee: Callee::Extern(ExternId(i)),
        args: args.to_vec(),
    }
}

fn errs(m: &Module) -> Vec<Diagnostic> {
    match verify_module(m) {
        Ok(()) => Vec::new(),
        Err(e) => {
            assert!(!e.0.is_empty(), "Err must carry at least one diagnostic");
            e.0
        }
    }
}

fn show(es: &[Diagnostic]) -> String {
    es.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Some error contains `frag` and sits at `loc`.
#[track_caller]
fn expect(m: &Module, frag: &str, loc: SrcLoc) -> Vec<Diagnostic> {
    let es = errs(m);
    assert!(
        es.iter().any(|d| d.msg.contains(frag) && d.loc == loc),
        "expected `{frag}` at {loc}, got:\n{}",
        show(&es)
    );
    es
}

/// Exactly one error, containing `frag`, at `loc`.
#[track_caller]
fn expect_only(m: &Module, frag: &str, loc: SrcLoc) {
    let es = expect(m, frag, loc);
    assert_eq!(
        es.len(),
        1,
        "expected exactly one error, got:\n{}",
        show(&es)
    );
}

#[track_caller]
fn ok(m: &Module) {
    let es = errs(m);
    assert!(es.is_empty(), "expected no errors, got:\n{}", show(&es));
}

/// One function `@f(params) -> ret` with a single `entry` block filled by `body`,
/// which must add the terminator itself.
fn one_fn(
    params: &[(&str, Type)],
    ret_ty: Option<Type>,
    body: impl FnOnce(&mut Fb, Block),
) -> Function {
    let mut fb = Fb::new("f", 1, params, ret_ty);
    let e = fb.block("entry", &[]);
    body(&mut fb, e);
    fb.done()
}

/// Like [`one_fn`] but returns the module and the location of the instruction
/// `body` reports as interesting.
fn one(
    params: &[(&str, Type)],
    ret_ty: Option<Type>,
    body: impl FnOnce(&mut Fb, Block) -> SrcLoc,
) -> (Module, SrcLoc) {
    let mut loc = SrcLoc::default();
    let f = one_fn(params, ret_ty, |fb, e| loc = body(fb, e));
    (module(Vec::new(), vec![f]), loc)
}

// ---- the positive module ------------------------------------------------------

fn site(func: u32, line: u32, op: &'static str) -> Site {
    use guardlift_ir::CheckKind as K;
    let checks = guardlift_ir::Checks::EMPTY;
    let checks = match op {
        "load_attr" | "store_attr" => checks.with(K::Lifetime).with(K::Dict).with(K::Bounds),
        "dict_slot.load" | "dict_slot.store" => checks.with(K::Lifetime).with(K::Dict),
        "store" => checks.with(K::Lifetime).with(K::Clobber),
        "load" | "call" => checks.with(K::Lifetime),
        _ => checks.with(K::Adstack),
    };
    Site {
        func: FuncId(func),
        loc: SrcLoc::new(line, 5),
        op,
        checks,
    }
}

/// A valid module exercising most of the IR.
fn valid_module() -> Module {
    use InstKind::*;
    let externs = vec![
        ext("obj_new", 2, &[I64], Some(PTR)),
        ext("print_f64", 3, &[F64], None),
        ext("sin", 4, &[F64], Some(F64)),
    ];
    // fn @helper(%x: i64, %p: ptr) -> i64 { entry: %s = iadd %x, %p; return %s }
    let mut h = Fb::new("helper", 10, &[("x", I64), ("p", PTR)], Some(I64));
    let e = h.block("entry", &[]);
    let (x, p) = (h.v("x"), h.v("p"));
    let s = h.r(e, "s", I64, bin(BinOp::Iadd, x, p));
    h.i(e, ret(Some(s)));
    let helper = h.done();

    let mut f = Fb::new("main", 20, &[("n", I64)], Some(F64));
    let n = f.v("n");
    let entry = f.block("entry", &[]);
    let lp = f.block("loop", &[("i", I64), ("acc", F64), ("s", ASF64)]);
    let exit = f.block("exit", &[("r", F64)]);
    let dead = f.block("dead", &[]);
    let (i, acc, s) = (f.v("i"), f.v("acc"), f.v("s"));
    let r = f.v("r");
    // entry
    let three = f.r(entry, "three", I64, iconst(I64, 3));
    let o = f.r(entry, "o", PTR, call_x(0, &[three]));
    let w = f.gr(entry, 0, "w", I64, DictSlotLoad { obj: o });
    f.gi(entry, 1, DictSlotStore { obj: o, word: w });
    let a = f.gr(entry, 2, "a", I64, LoadAttr { obj: o, index: 2 });
    f.gi(
        entry,
        3,
        StoreAttr {
            obj: o,
            index: 1,
            value: a,
        },
    );
    f.i(entry, Watch { obj: o });
    let _h = f.r(entry, "h", I64, call_f(0, &[n, o]));
    let st = f.r(
        entry,
        "st",
        ASF64,
        AdAlloc {
            elem: AdElem::F64,
            capacity: 16,
        },
    );
    let zero = f.r(entry, "zero", I64, iconst(I64, 0));
    let fz = f.r(entry, "fz", F64, fconst(F64, 0.0));
    f.i(entry, jump(lp, &[zero, fz, st]));
    // loop(%i: i64, %acc: f64, %s: adstack.f64)
    let fi = f.r(lp, "fi", F64, conv(ConvOp::FcvtFromSint, F64, i));
    let sn = f.r(lp, "sn", F64, call_x(2, &[fi]));
    f.gi(
        lp,
        4,
        AdPush {
            stack: s,
            value: sn,
        },
    );
    let t = f.gr(lp, 5, "t", F64, AdTop { stack: s });
    let _ta = f.r(lp, "ta", F64, AdTopAdj { stack: s });
    f.i(lp, AdAccAdj { stack: s, delta: t });
    let _len = f.r(lp, "len", I64, AdLen { stack: s });
    let acc2 = f.r(lp, "acc2", F64, bin(BinOp::Fadd, acc, t));
    let one = f.r(lp, "one", I64, iconst(I64, 1));
    let i2 = f.r(lp, "i2", I64, bin(BinOp::Iadd, i, one));
    let c = f.r(
        lp,
        "c",
        I8,
        Icmp {
            cc: IntCC::Slt,
            a: i2,
            b: n,
        },
    );
    f.i(
        lp,
        Brif {
            cond: c,
            then_dest: bc(lp, &[i2, acc2, s]),
            else_dest: bc(exit, &[acc2]),
        },
    );
    // exit(%r: f64)
    f.gi(exit, 6, AdPop { stack: s });
    let f32v = f.r(exit, "f32", F32, conv(ConvOp::Fdemote, F32, r));
    let back = f.r(exit, "back", F64, conv(ConvOp::Fpromote, F64, f32v));
    let bits = f.r(exit, "bits", I64, conv(ConvOp::Bitcast, I64, back));
    let asp = f.r(exit, "asp", PTR, conv(ConvOp::Bitcast, PTR, bits));
    let _asf = f.r(exit, "asf", F32, conv(ConvOp::Bitcast, F32, f.v("f32")));
    let b32 = f.r(exit, "b32", I32, conv(ConvOp::Ireduce, I32, bits));
    let b64 = f.r(exit, "b64", I64, conv(ConvOp::Sext, I64, b32));
    let _u = f.r(exit, "u", PTR, conv(ConvOp::Uext, PTR, b32));
    let _sh = f.r(exit, "sh", I64, bin(BinOp::Ishl, b64, b32));
    let _pm = f.r(exit, "pm", PTR, bin(BinOp::Band, asp, b64));
    let sel = f.r(
        exit,
        "sel",
        F64,
        Select {
            cond: c,
            a: r,
            b: back,
        },
    );
    let _isel = f.r(
        exit,
        "isel",
        I64,
        Select {
            cond: b32,
            a: b64,
            b: asp,
        },
    );
    let _fc = f.r(
        exit,
        "fc",
        I8,
        Fcmp {
            cc: FloatCC::Lt,
            a: sel,
            b: r,
        },
    );
    let neg = f.r(
        exit,
        "neg",
        F64,
        Unary {
            op: UnOp::Fneg,
            a: sel,
        },
    );
    let ld = f.r(
        exit,
        "ld",
        I64,
        Load {
            ty: I64,
            addr: o,
            offset: 16,
        },
    );
    f.gi(
        exit,
        7,
        Store {
            value: ld,
            addr: o,
            offset: 8,
        },
    );
    let _ai = f.r(exit, "ai", I32, conv(ConvOp::FcvtToSint, I32, neg));
    let fm = f.r(exit, "fm", F64, bin(BinOp::Fmin, neg, r));
    f.i(exit, call_x(1, &[fm]));
    f.i(exit, call_x(2, &[fm])); // a returning callee may have no result
    f.i(exit, ret(Some(sel)));
    // dead: unreachable, uses a value it is not dominated by (skipped like Cranelift)
    let _dd = f.r(dead, "dd", F64, bin(BinOp::Fadd, sel, sel));
    f.i(dead, jump(exit, &[sel]));
    let main = f.done();

    let mut m = module(externs, vec![helper, main]);
    m.layout = DictLayout::Custom(-32);
    let ops = [
        "dict_slot.load",
        "dict_slot.store",
        "load_attr",
        "store_attr",
        "adstack.push",
        "adstack.top",
        "adstack.pop",
        "store",
    ];
    for (k, op) in ops.iter().enumerate() {
        m.sites
            .insert(SiteId(k as u32), site(1, 100 + k as u32, op));
    }
    m
}

#[test]
fn valid_module_verifies() {
    ok(&valid_module());
}

#[test]
fn empty_module_verifies() {
    ok(&Module::default());
}

// ---- structure ------------------------------------------------------------------

#[test]
fn function_without_blocks() {
    let f = Fb::new("f", 7, &[], None).done();
    expect_only(&module(vec![], vec![f]), "has no blocks", SrcLoc::new(7, 1));
}

#[test]
fn empty_block_and_missing_terminator() {
    let mut fb = Fb::new("f", 1, &[], None);
    let e = fb.block("entry", &[]);
    let l1 = fb.loc();
    let b = fb.block("b", &[]);
    let l2 = fb.loc();
    fb.i(b, iconst(I64, 1));
    fb.i(b, iconst(I64, 1)); // no result (also an error)
    let m = module(vec![], vec![fb.done()]);
    let _ = e;
    expect(&m, "block `entry` is empty", l1);
    expect(&m, "block `b` does not end with a terminator", l2);
}

#[test]
fn duplicate_names() {
    let f1 = one_fn(&[], None, |fb, e| {
        fb.i(e, ret(None));
    });
    let mut f2 = f1.clone();
    f2.loc = SrcLoc::new(50, 1);
    let mut f3 = f1.clone();
    f3.name = "sin".into();
    f3.loc = SrcLoc::new(60, 1);
    let m = module(
        vec![ext("sin", 2, &[F64], Some(F64)), ext("sin", 3, &[], None)],
        vec![f1, f2, f3],
    );
    let es = expect(&m, "duplicate function @f", SrcLoc::new(50, 1));
    expect(
        &m,
        "function @sin has the same name as an extern",
        SrcLoc::new(60, 1),
    );
    expect(&m, "duplicate extern @sin", SrcLoc::new(3, 1));
    assert_eq!(es.len(), 3, "{}", show(&es));
}

#[test]
fn duplicate_block_names() {
    let mut fb = Fb::new("f", 1, &[], None);
    let e = fb.block("entry", &[]);
    let b = fb.block("entry", &[]);
    let l = fb.loc();
    fb.i(e, jump(b, &[]));
    fb.i(b, ret(None));
    expect_only(
        &module(vec![], vec![fb.done()]),
        "duplicate block name `entry`",
        l,
    );
}

// ---- values ---------------------------------------------------------------------

#[test]
fn value_def_mismatch() {
    let (mut m, loc) = one(&[], None, |fb, e| {
        fb.r(e, "x", I64, iconst(I64, 1));
        let l = fb.loc();
        fb.i(e, ret(None));
        l
    });
    m.functions[0].values[0].def = ValueDef::Param(0);
    expect_only(
        &m,
        "value %x is recorded as defined by function parameter 0",
        loc,
    );
}

#[test]
fn value_defined_twice_and_never() {
    let (mut m, loc) = one(&[], None, |fb, e| {
        let x = fb.r(e, "x", I64, iconst(I64, 1));
        fb.push(e, iconst(I64, 2), Some(x), None);
        let l = fb.loc();
        fb.i(e, ret(None));
        l
    });
    let f = &mut m.functions[0];
    f.values.push(ValueData {
        name: "ghost".into(),
        ty: I64,
        def: ValueDef::Inst(Block(0)),
    });
    expect(&m, "value %x is defined more than once (first at 3:5)", loc);
    expect(&m, "value %ghost is never defined", SrcLoc::new(1, 1));
}

#[test]
fn result_presence() {
    let (m, loc) = one(&[("p", PTR)], None, |fb, e| {
        let p = fb.v("p");
        fb.i(e, iconst(I64, 1));
        let l = fb.loc();
        let _ = fb.r(
            e,
            "bad",
            I64,
            InstKind::Store {
                value: p,
                addr: p,
                offset: 0,
            },
        );
        fb.i(e, ret(None));
        l
    });
    expect(&m, "`iconst` must define a result", loc);
    expect(
        &m,
        "`store` does not produce a value, but defines %bad",
        SrcLoc::new(loc.line + 1, 5),
    );
}

#[test]
fn call_to_void_with_result() {
    let (mut m, loc) = one(&[("x", F64)], None, |fb, e| {
        let x = fb.v("x");
        fb.r(e, "r", F64, call_x(0, &[x]));
        let l = fb.loc();
        fb.i(e, ret(None));
        l
    });
    m.externs.push(ext("print_f64", 1, &[F64], None));
    expect_only(
        &m,
        "call to @print_f64 returns no value, but defines %r",
        loc,
    );
}

#[test]
fn use_of_invalid_and_undefined_values() {
    let (mut m, loc) = one(&[], None, |fb, e| {
        fb.r(e, "y", I64, bin(BinOp::Iadd, Value(999), Value(1)));
        let l = fb.loc();
        fb.i(e, ret(None));
        l
    });
    let f = &mut m.functions[0];
    // %u exists in the value table but nothing defines it.
    f.values.push(ValueData {
        name: "u".into(),
        ty: I64,
        def: ValueDef::Param(5),
    });
    expect(&m, "use of invalid value #999", loc);
    expect(&m, "use of undefined value %u", loc);
}

#[test]
fn use_before_def_in_same_block() {
    let (m, loc) = one(&[], None, |fb, e| {
        // %a = iadd %b, %b ; %b = iconst (defined later)
        let def = ValueDef::Inst(e);
        let b = fb.value("b", I64, def);
        let _a = fb.r(e, "a", I64, bin(BinOp::Iadd, b, b));
        let l = fb.loc();
        fb.push(e, iconst(I64, 1), Some(b), None);
        fb.i(e, ret(None));
        l
    });
    expect(
        &m,
        "use of %b is not dominated by its definition at 4:5",
        loc,
    );
}

#[test]
fn use_not_dominated_across_blocks() {
    // entry: brif c, a, b   a: %x = iconst; jump j   b: jump j   j: return %x
    let mut fb = Fb::new("f", 1, &[("c", I8)], Some(I64));
    let c = fb.v("c");
    let e = fb.block("entry", &[]);
    let a = fb.block("a", &[]);
    let b = fb.block("b", &[]);
    let j = fb.block("j", &[]);
    fb.i(
        e,
        InstKind::Brif {
            cond: c,
            then_dest: bc(a, &[]),
            else_dest: bc(b, &[]),
        },
    );
    let x = fb.r(a, "x", I64, iconst(I64, 1));
    let xl = fb.loc();
    fb.i(a, jump(j, &[]));
    fb.i(b, jump(j, &[]));
    let l = fb.i(j, ret(Some(x)));
    let m = module(vec![], vec![fb.done()]);
    expect_only(
        &m,
        &format!("use of %x is not dominated by its definition at {xl}"),
        l,
    );
}

#[test]
fn use_of_block_param_of_another_block() {
    let mut fb = Fb::new("f", 1, &[], Some(I64));
    let e = fb.block("entry", &[]);
    let b = fb.block("b", &[("p", I64)]);
    let p = fb.v("p");
    let l = fb.i(e, ret(Some(p)));
    fb.i(b, ret(Some(p)));
    let bl = fb.f.blocks[1].loc;
    let m = module(vec![], vec![fb.done()]);
    expect_only(
        &m,
        &format!("use of %p is not dominated by its definition at {bl}"),
        l,
    );
}

#[test]
fn unreachable_use_skips_dominance_but_not_existence() {
    let mut fb = Fb::new("f", 1, &[], None);
    let e = fb.block("entry", &[]);
    let d = fb.block("dead", &[]);
    fb.i(e, ret(None));
    // %x = iadd %y, #50 ; %y = iconst.i64 1 -- %y used before its definition
    let y = fb.value("y", I64, ValueDef::Inst(d));
    fb.r(d, "x", I64, bin(BinOp::Iadd, y, Value(50)));
    let l = fb.loc();
    fb.push(d, iconst(I64, 1), Some(y), None);
    fb.i(d, ret(None));
    let m = module(vec![], vec![fb.done()]);
    expect_only(&m, "use of invalid value #50", l);
}

// ---- types --------------------------------------------------------------------------

#[test]
fn int_op_i64_ptr_mix_and_result_type() {
    let (m, loc) = one(&[("a", PTR), ("b", I64), ("c", I32)], None, |fb, e| {
        let (a, b, c) = (fb.v("a"), fb.v("b"), fb.v("c"));
        fb.r(e, "ok", PTR, bin(BinOp::Imul, a, b));
        fb.r(e, "z", I64, bin(BinOp::Isub, a, b)); // result must be ptr
        let l = fb.loc();
        fb.r(e, "m", I32, bin(BinOp::Bxor, c, b));
        fb.i(e, ret(None));
        l
    });
    let es = expect(&m, "result %z of isub has type i64, expected ptr", loc);
    expect(
        &m,
        "type mismatch: bxor %c (i32), %b (i64)",
        SrcLoc::new(loc.line + 1, 5),
    );
    assert_eq!(es.len(), 2, "{}", show(&es));
}

#[test]
fn float_op_types() {
    let (m, loc) = one(&[("a", F32), ("b", F64), ("i", I64)], None, |fb, e| {
        let (a, b, i) = (fb.v("a"), fb.v("b"), fb.v("i"));
        fb.r(e, "z", F32, bin(BinOp::Fmul, a, b));
        let l = fb.loc();
        fb.r(
            e,
            "y",
            I64,
            InstKind::Unary {
                op: UnOp::Fsqrt,
                a: i,
            },
        );
        fb.r(e, "w", F64, InstKind::Unary { op: UnOp::Fabs, a });
        fb.i(e, ret(None));
        l
    });
    let es = expect(&m, "type mismatch: fmul %a (f32), %b (f64)", loc);
    expect(
        &m,
        "fsqrt needs a float operand, got %i (i64)",
        SrcLoc::new(loc.line + 1, 5),
    );
    expect(
        &m,
        "result %w of fabs has type f64, expected f32",
        SrcLoc::new(loc.line + 2, 5),
    );
    assert_eq!(es.len(), 3, "{}", show(&es));
}

#[test]
fn compare_types() {
    let (m, loc) = one(&[("a", I32), ("b", I64), ("x", F32)], None, |fb, e| {
        let (a, b, x) = (fb.v("a"), fb.v("b"), fb.v("x"));
        fb.r(
            e,
            "c",
            I8,
            InstKind::Icmp {
                cc: IntCC::Eq,
                a,
                b,
            },
        );
        let l = fb.loc();
        fb.r(
            e,
            "d",
            I32,
            InstKind::Icmp {
                cc: IntCC::Ne,
                a,
                b: a,
            },
        );
        fb.r(
            e,
            "g",
            I8,
            InstKind::Fcmp {
                cc: FloatCC::Ge,
                a: x,
                b: a,
            },
        );
        fb.i(e, ret(None));
        l
    });
    let es = expect(&m, "type mismatch: icmp %a (i32), %b (i64)", loc);
    expect(
        &m,
        "result %d of icmp has type i32, expected i8",
        SrcLoc::new(loc.line + 1, 5),
    );
    expect(
        &m,
        "type mismatch: fcmp %x (f32), %a (i32)",
        SrcLoc::new(loc.line + 2, 5),
    );
    assert_eq!(es.len(), 3, "{}", show(&es));
}

#[test]
fn conversion_result_type() {
    let (m, loc) = one(&[("s", I32)], None, |fb, e| {
        let s = fb.v("s");
        fb.r(e, "x", I32, conv(ConvOp::Uext, I64, s));
        let l = fb.loc();
        fb.i(e, ret(None));
        l
    });
    expect_only(&m, "result %x of uext has type i32, expected i64", loc);
}

#[test]
fn constants() {
    let (m, loc) = one(&[], None, |fb, e| {
        fb.r(e, "a", F64, iconst(F64, 1));
        let l = fb.loc();
        fb.r(e, "b", I64, fconst(I64, 1.0));
        fb.r(e, "c", I32, iconst(I64, 1));
        fb.r(e, "d", ASF32, iconst(ASF32, 1));
        fb.i(e, ret(None));
        l
    });
    let es = expect(&m, "iconst needs an int type, got f64", loc);
    expect(
        &m,
        "fconst needs a float type, got i64",
        SrcLoc::new(loc.line + 1, 5),
    );
    expect(
        &m,
        "result %c of iconst has type i32, expected i64",
        SrcLoc::new(loc.line + 2, 5),
    );
    expect(
        &m,
        "iconst needs an int type, got adstack.f32",
        SrcLoc::new(loc.line + 3, 5),
    );
    assert_eq!(es.len(), 4, "{}", show(&es));
}

#[test]
fn memory_types() {
    let (m, loc) = one(
        &[("p", PTR), ("q", I32), ("s", ASF64), ("x", F64)],
        None,
        |fb, e| {
            let (p, q, x) = (fb.v("p"), fb.v("q"), fb.v("x"));
            fb.r(
                e,
                "a",
                ASF64,
                InstKind::Load {
                    ty: ASF64,
                    addr: p,
                    offset: 0,
                },
            );
            let l = fb.loc();
            fb.r(
                e,
                "b",
                F64,
                InstKind::Load {
                    ty: F64,
                    addr: q,
                    offset: 0,
                },
            );
            fb.i(
                e,
                InstKind::Store {
                    value: x,
                    addr: x,
                    offset: 4,
                },
            );
            fb.r(
                e,
                "c",
                I32,
                InstKind::Load {
                    ty: I64,
                    addr: p,
                    offset: 0,
                },
            );
            fb.i(e, ret(None));
            l
        },
    );
    let es = expect(&m, "load type cannot be an adstack handle", loc);
    expect(
        &m,
        "load address must be i64 or ptr, got %q (i32)",
        SrcLoc::new(loc.line + 1, 5),
    );
    expect(
        &m,
        "store address must be i64 or ptr, got %x (f64)",
        SrcLoc::new(loc.line + 2, 5),
    );
    expect(
        &m,
        "result %c of load has type i32, expected i64",
        SrcLoc::new(loc.line + 3, 5),
    );
    // plus %s as a function parameter
    expect(
        &m,
        "adstack handle %s cannot be a function parameter",
        SrcLoc::new(1, 1),
    );
    assert_eq!(es.len(), 5, "{}", show(&es));
}

#[test]
fn call_checks() {
    let mut g = Fb::new("g", 40, &[("a", I64), ("b", F32)], Some(PTR));
    let ge = g.block("entry", &[]);
    let a = g.v("a");
    g.i(ge, ret(Some(a)));
    let g = g.done();
    let (mut m, loc) = one(&[("x", I64), ("p", PTR), ("y", F64)], None, |fb, e| {
        let (x, p, y) = (fb.v("x"), fb.v("p"), fb.v("y"));
        fb.r(e, "r0", I64, call_f(1, &[p, y])); // ok args (ptr for i64), i64 for ptr ok; but f64 for f32
        let l = fb.loc();
        fb.r(e, "r1", F64, call_f(1, &[x]));
        fb.r(e, "r2", F64, call_f(7, &[x]));
        fb.r(e, "r3", F64, call_x(3, &[x]));
        fb.r(e, "r4", F64, call_x(0, &[y]));
        fb.i(e, ret(None));
        l
    });
    m.functions.push(g);
    m.externs.push(ext("sin", 2, &[F64], Some(F64)));
    let at = |k: u32| SrcLoc::new(loc.line + k, 5);
    let es = expect(
        &m,
        "argument 2 of call to @g must be f32, got %y (f64)",
        at(0),
    );
    expect(&m, "call to @g expects 2 arguments, got 1", at(1));
    expect(
        &m,
        "result %r1 of call to @g has type f64, expected ptr",
        at(1),
    );
    expect(&m, "call to unknown function #7", at(2));
    expect(&m, "call to unknown extern #3", at(3));
    assert_eq!(es.len(), 5, "{}", show(&es));
    // @g's return of %a (i64) for ptr is fine: only the 5 errors above.
}

#[test]
fn branch_checks() {
    let mut fb = Fb::new("f", 1, &[("c", F64), ("x", I64), ("p", PTR)], None);
    let (c, x, p) = (fb.v("c"), fb.v("x"), fb.v("p"));
    let e = fb.block("entry", &[]);
    let lp = fb.block("loop", &[("i", I64), ("j", I64)]);
    let ex = fb.block("exit", &[("f", F32)]);
    let l0 = fb.i(e, jump(lp, &[x]));
    let l1 = fb.i(
        lp,
        InstKind::Brif {
            cond: c,
            then_dest: bc(lp, &[p, x]),
            else_dest: bc(ex, &[x]),
        },
    );
    let l2 = fb.i(ex, jump(Block(9), &[]));
    let m = module(vec![], vec![fb.done()]);
    let es = expect(&m, "block `loop` expects 2 arguments, got 1", l0);
    expect(&m, "brif condition must be an int, got %c (f64)", l1);
    expect(
        &m,
        "argument 1 to block `exit` must be f32, got %x (i64)",
        l1,
    );
    expect(&m, "branch to unknown block #9", l2);
    assert_eq!(es.len(), 4, "{}", show(&es));
}

#[test]
fn return_checks() {
    let mk = |ret_ty: Option<Type>, v: bool| {
        one(&[("x", F64)], ret_ty, |fb, e| {
            let x = fb.v("x");
            fb.i(e, ret(v.then_some(x)))
        })
    };
    // The errors: cases/verify/return_*.glir.
    let (m, _) = mk(Some(F64), true);
    ok(&m);
    let (m, _) = one(&[("x", I64)], Some(PTR), |fb, e| {
        let x = fb.v("x");
        fb.i(e, ret(Some(x)))
    });
    ok(&m);
}

#[test]
fn dict_op_types() {
    use InstKind::*;
    let (m, loc) = one(&[("o", I32), ("p", PTR), ("f", F64)], None, |fb, e| {
        let (o, p, f) = (fb.v("o"), fb.v("p"), fb.v("f"));
        fb.r(e, "w", I64, DictSlotLoad { obj: o });
        let l = fb.loc();
        fb.r(e, "w2", PTR, DictSlotLoad { obj: p });
        fb.i(e, DictSlotStore { obj: p, word: f });
        fb.r(e, "a", I32, LoadAttr { obj: p, index: 0 });
        fb.i(
            e,
            StoreAttr {
                obj: p,
                index: 0,
                value: f,
            },
        );
        fb.i(
            e,
            StoreAttr {
                obj: p,
                index: MAX_ATTR_INDEX + 1,
                value: p,
            },
        );
        fb.r(
            e,
            "a2",
            I64,
            LoadAttr {
                obj: p,
                index: MAX_ATTR_INDEX,
            },
        );
        fb.i(e, ret(None));
        l
    });
    let at = |k: u32| SrcLoc::new(loc.line + k, 5);
    let es = expect(
        &m,
        "dict_slot.load object must be i64 or ptr, got %o (i32)",
        at(0),
    );
    expect(
        &m,
        "result %w2 of dict_slot.load has type ptr, expected i64",
        at(1),
    );
    expect(
        &m,
        "dict_slot.store word must be i64 or ptr, got %f (f64)",
        at(2),
    );
    expect(
        &m,
        "result %a of load_attr has type i32, expected i64",
        at(3),
    );
    expect(
        &m,
        "store_attr value must be i64 or ptr, got %f (f64)",
        at(4),
    );
    expect(&m, "attribute index 16777216 is out of range", at(5));
    assert_eq!(es.len(), 6, "{}", show(&es));
}

#[test]
fn adstack_alloc_checks() {
    use InstKind::*;
    let (m, loc) = one(&[], None, |fb, e| {
        fb.r(
            e,
            "a",
            ASF64,
            AdAlloc {
                elem: AdElem::F64,
                capacity: 0,
            },
        );
        let l = fb.loc();
        fb.r(
            e,
            "b",
            ASF64,
            AdAlloc {
                elem: AdElem::F64,
                capacity: MAX_ADSTACK_CAPACITY + 1,
            },
        );
        fb.r(
            e,
            "c",
            ASF32,
            AdAlloc {
                elem: AdElem::F64,
                capacity: 4,
            },
        );
        fb.r(
            e,
            "d",
            ASF64,
            AdAlloc {
                elem: AdElem::F64,
                capacity: MAX_ADSTACK_CAPACITY,
            },
        );
        fb.i(e, ret(None));
        l
    });
    let at = |k: u32| SrcLoc::new(loc.line + k, 5);
    let es = expect(&m, "adstack capacity 0 is out of range", at(0));
    expect(&m, "adstack capacity 1048577 is out of range", at(1));
    expect(
        &m,
        "result %c of adstack.alloc has type adstack.f32, expected adstack.f64",
        at(2),
    );
    assert_eq!(es.len(), 3, "{}", show(&es));
}

#[test]
fn adstack_frame_limit() {
    use InstKind::*;
    // Over the limit: cases/verify/adstack_frame_limit.glir.
    // One max-size f64 stack plus small ones fits.
    let (m, _) = one(&[], None, |fb, e| {
        fb.r(
            e,
            "a",
            ASF64,
            AdAlloc {
                elem: AdElem::F64,
                capacity: MAX_ADSTACK_CAPACITY,
            },
        );
        fb.r(
            e,
            "b",
            ASF32,
            AdAlloc {
                elem: AdElem::F32,
                capacity: 1024,
            },
        );
        fb.i(e, ret(None))
    });
    ok(&m);
}

#[test]
fn adstack_op_checks() {
    use InstKind::*;
    let (m, loc) = one(&[("x", I64), ("f", F32), ("p", PTR)], None, |fb, e| {
        let (x, f, p) = (fb.v("x"), fb.v("f"), fb.v("p"));
        let s = fb.r(
            e,
            "s",
            ASF64,
            AdAlloc {
                elem: AdElem::F64,
                capacity: 8,
            },
        );
        let si = fb.r(
            e,
            "si",
            Type::AdStack(AdElem::I64),
            AdAlloc {
                elem: AdElem::I64,
                capacity: 8,
            },
        );
        fb.i(
            e,
            AdPush {
                stack: si,
                value: p,
            },
        ); // ptr on an i64 stack: fine
        fb.i(e, AdPush { stack: s, value: f });
        let l = fb.loc();
        fb.i(e, AdAccAdj { stack: s, delta: x });
        fb.r(e, "t", F32, AdTop { stack: s });
        fb.r(e, "ta", F64, AdTopAdj { stack: si });
        fb.r(e, "n", I32, AdLen { stack: s });
        fb.i(e, AdPop { stack: x });
        fb.r(e, "t2", F64, AdTop { stack: f });
        fb.i(e, ret(None));
        l
    });
    let at = |k: u32| SrcLoc::new(loc.line + k, 5);
    let es = expect(
        &m,
        "type mismatch: adstack.push value %f (f32), stack holds f64",
        at(0),
    );
    expect(
        &m,
        "type mismatch: adstack.acc_adj delta %x (i64), stack holds f64",
        at(1),
    );
    expect(
        &m,
        "result %t of adstack.top has type f32, expected f64",
        at(2),
    );
    expect(
        &m,
        "result %ta of adstack.top_adj has type f64, expected i64",
        at(3),
    );
    expect(
        &m,
        "result %n of adstack.len has type i32, expected i64",
        at(4),
    );
    expect(
        &m,
        "adstack.pop needs an adstack handle, got %x (i64)",
        at(5),
    );
    expect(
        &m,
        "adstack.top needs an adstack handle, got %f (f32)",
        at(6),
    );
    assert_eq!(es.len(), 7, "{}", show(&es));
}

#[test]
fn adstack_handles_flow_through_block_params() {
    use InstKind::*;
    let mut fb = Fb::new("f", 1, &[], None);
    let e = fb.block("entry", &[]);
    let b = fb.block("b", &[("h", ASF32)]);
    let s = fb.r(
        e,
        "s",
        ASF32,
        AdAlloc {
            elem: AdElem::F32,
            capacity: 4,
        },
    );
    fb.i(e, jump(b, &[s]));
    let h = fb.v("h");
    fb.i(b, AdPop { stack: h });
    fb.i(b, ret(None));
    ok(&module(vec![], vec![fb.done()]));
}

// ---- guards ----------------------------------------------------------------------------

fn guarded() -> (Module, Vec<SrcLoc>) {
    use InstKind::*;
    let mut locs = Vec::new();
    let (mut m, _) = one(&[("o", PTR)], None, |fb, e| {
        let o = fb.v("o");
        locs.push(fb.gi(
            e,
            0,
            StoreAttr {
                obj: o,
                index: 0,
                value: o,
            },
        ));
        fb.gr(e, 1, "w", I64, DictSlotLoad { obj: o });
        locs.push(fb.loc());
        fb.i(e, ret(None))
    });
    m.sites.insert(SiteId(0), site(0, 90, "store_attr"));
    m.sites.insert(SiteId(1), site(0, 91, "dict_slot.load"));
    (m, locs)
}

#[test]
fn guarded_base_is_valid() {
    ok(&guarded().0);
}

#[test]
fn site_on_unguardable_op() {
    let (mut m, _) = guarded();
    let f = &mut m.functions[0];
    f.blocks[0].insts[2].site = Some(SiteId(2));
    m.sites.insert(SiteId(2), site(0, 92, "return"));
    let l = m.functions[0].blocks[0].insts[2].loc;
    expect_only(&m, "`return` cannot be guarded (site 2)", l);
}

#[test]
fn unknown_site() {
    let (mut m, locs) = guarded();
    m.functions[0].blocks[0].insts[0].site = Some(SiteId(42));
    let es = expect(&m, "unknown guard site 42", locs[0]);
    expect(
        &m,
        "site 0 is not used by any instruction",
        SrcLoc::new(90, 5),
    );
    assert_eq!(es.len(), 2, "{}", show(&es));
}

#[test]
fn site_op_and_function_mismatch() {
    let (mut m, locs) = guarded();
    m.sites.get_mut(&SiteId(0)).unwrap().op = "load_attr";
    m.sites.get_mut(&SiteId(1)).unwrap().func = FuncId(3);
    let es = expect(&m, "site 0 is for `load_attr`, not `store_attr`", locs[0]);
    expect(&m, "site 1 belongs to unknown function #3, not @f", locs[1]);
    assert_eq!(es.len(), 2, "{}", show(&es));
}

#[test]
fn site_used_twice_and_unused() {
    let (mut m, locs) = guarded();
    m.functions[0].blocks[0].insts[1].site = Some(SiteId(0));
    m.sites.get_mut(&SiteId(0)).unwrap().op = "dict_slot.load";
    let es = expect(
        &m,
        &format!("site 0 is already used at {}", locs[0]),
        locs[1],
    );
    expect(
        &m,
        "site 1 is not used by any instruction",
        SrcLoc::new(91, 5),
    );
    // plus the op mismatch on the first user, and the site's `bounds`
    // check, which does not apply to the second user (a dict_slot.load)
    expect(
        &m,
        "check(s) `bounds` do not apply to `dict_slot.load`",
        locs[1],
    );
    assert_eq!(es.len(), 4, "{}", show(&es));
}

#[test]
fn watch_checks() {
    let (m, loc) = one(&[("f", F64), ("o", PTR)], None, |fb, e| {
        let (f, o) = (fb.v("f"), fb.v("o"));
        fb.i(e, InstKind::Watch { obj: f });
        let l = fb.loc();
        fb.r(e, "w", I64, InstKind::Watch { obj: o });
        fb.i(e, ret(None));
        l
    });
    let es = expect(&m, "watch object must be i64 or ptr, got %f (f64)", loc);
    expect(
        &m,
        "`watch` does not produce a value, but defines %w",
        SrcLoc::new(loc.line + 1, 5),
    );
    assert_eq!(es.len(), 2, "{}", show(&es));
}

// ---- layout and ordering ------------------------------------------------------------

#[test]
fn custom_layout() {
    let mut m = Module {
        layout: DictLayout::Custom(-20),
        ..Default::default()
    };
    expect_only(
        &m,
        "invalid layout: dict_slot_offset -20 is not a multiple of 8",
        SrcLoc::default(),
    );
    m.layout = DictLayout::Custom(8192);
    expect_only(&m, "out of range", SrcLoc::default());
    m.layout = DictLayout::Custom(-4096);
    ok(&m);
}

#[test]
fn errors_are_sorted_by_position() {
    let (mut m, _) = one(&[("a", I64), ("b", F64)], None, |fb, e| {
        let (a, b) = (fb.v("a"), fb.v("b"));
        fb.r(e, "z", I64, bin(BinOp::Iadd, a, b));
        fb.r(e, "y", I64, bin(BinOp::Fadd, a, b));
        fb.i(e, ret(None))
    });
    m.externs.push(ext("x", 1000, &[ASF64], None));
    m.layout = DictLayout::Custom(3);
    let es = errs(&m);
    assert_eq!(es.len(), 4, "{}", show(&es));
    let keys: Vec<_> = es.iter().map(|d| (d.loc.line, d.loc.col)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(es[0].loc, SrcLoc::default());
    assert_eq!(es[3].loc, SrcLoc::new(1000, 1));
}

// ---- scale -----------------------------------------------------------------------------

/// `entry` then 20 000 blocks `b_k(%p_k: i64)`, each adding a value of the entry
/// block (deep dominance queries) and jumping on; a loop-back edge every 100 blocks.
fn chain(n: usize) -> Module {
    let mut fb = Fb::new("chain", 1, &[("n", I64)], Some(I64));
    let nv = fb.v("n");
    let e = fb.block("entry", &[]);
    let blocks: Vec<Block> = (0..n)
        .map(|k| fb.block(&format!("b{k}"), &[("p", I64)]))
        .collect();
    let c0 = fb.r(e, "c0", I64, iconst(I64, 1));
    fb.i(e, jump(blocks[0], &[c0]));
    for k in 0..n {
        let b = blocks[k];
        let p = fb.f.blocks[b.0 as usize].params[0];
        let x = fb.r(b, &format!("x{k}"), I64, bin(BinOp::Iadd, p, c0));
        let y = fb.r(b, &format!("y{k}"), I64, bin(BinOp::Iadd, x, nv));
        if k + 1 == n {
            fb.i(b, ret(Some(y)));
        } else if k % 100 == 99 {
            let c = fb.r(
                b,
                &format!("c{k}"),
                I8,
                InstKind::Icmp {
                    cc: IntCC::Ult,
                    a: y,
                    b: nv,
                },
            );
            fb.i(
                b,
                InstKind::Brif {
                    cond: c,
                    then_dest: bc(blocks[k - 50], &[y]),
                    else_dest: bc(blocks[k + 1], &[y]),
                },
            );
        } else {
            fb.i(b, jump(blocks[k + 1], &[y]));
        }
    }
    module(vec![], vec![fb.done()])
}

#[test]
fn twenty_thousand_blocks() {
    let m = chain(20_000);
    let t = std::time::Instant::now();
    ok(&m);
    eprintln!("verified 20 000 blocks in {:?}", t.elapsed());
    // And a dominance error deep in the chain is still found.
    let mut m = m;
    let f = &mut m.functions[0];
    let late = f.blocks[19_000].insts[0].result.unwrap();
    let early = &mut f.blocks[100].insts[0];
    let InstKind::Binary { b, .. } = &mut early.kind else {
        unreachable!()
    };
    *b = late;
    let loc = early.loc;
    expect_only(&m, "use of %x18999 is not dominated by its definition", loc);
}

// ---- fuzz-ish ---------------------------------------------------------------------------

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next() as usize % n
        }
    }
    /// A mostly-nearby index, sometimes wild.
    fn index(&mut self, n: usize) -> u32 {
        match self.next() % 8 {
            0 => u32::MAX - self.next() % 4,
            1 => self.next(),
            _ => self.below(n + 3) as u32,
        }
    }
}

fn mutate(m: &mut Module, rng: &mut Lcg) {
    let nf = m.functions.len();
    let fi = rng.below(nf);
    let nfuncs = m.functions.len();
    let nexterns = m.externs.len();
    let f = &mut m.functions[fi];
    let nv = f.values.len();
    let nb = f.blocks.len();
    if nb == 0 {
        return;
    }
    match rng.next() % 12 {
        // an operand
        0..=3 => {
            let bi = rng.below(nb);
            let ni = f.blocks[bi].insts.len();
            if ni == 0 {
                return;
            }
            let inst = &mut f.blocks[bi].insts[rng.below(ni)];
            let mut slots = 0;
            inst.kind.for_each_operand_mut(|_| slots += 1);
            let pick = rng.below(slots);
            let new = Value(rng.index(nv));
            let mut k = 0;
            inst.kind.for_each_operand_mut(|v| {
                if k == pick {
                    *v = new;
                }
                k += 1;
            });
        }
        // a result
        4 => {
            let bi = rng.below(nb);
            let ni = f.blocks[bi].insts.len();
            if ni == 0 {
                return;
            }
            let r = if rng.next() & 3 == 0 {
                None
            } else {
                Some(Value(rng.index(nv)))
            };
            f.blocks[bi].insts[rng.below(ni)].result = r;
        }
        // a branch target
        5 | 6 => {
            let bi = rng.below(nb);
            let new = Block(rng.index(nb));
            if let Some(inst) = f.blocks[bi].insts.last_mut() {
                match &mut inst.kind {
                    InstKind::Jump { dest } => dest.block = new,
                    InstKind::Brif {
                        then_dest,
                        else_dest,
                        ..
                    } => {
                        if rng.next() & 1 == 0 {
                            then_dest.block = new
                        } else {
                            else_dest.block = new
                        }
                    }
                    _ => {}
                }
            }
        }
        // a block or function param
        7 => {
            let bi = rng.below(nb);
            let np = f.blocks[bi].params.len();
            if np > 0 {
                f.blocks[bi].params[rng.below(np)] = Value(rng.index(nv));
            } else {
                f.blocks[bi].params.push(Value(rng.index(nv)));
            }
        }
        8 => {
            let np = f.params.len();
            if np > 0 {
                f.params[rng.below(np)] = Value(rng.index(nv));
            }
        }
        // a value's recorded definition
        9 => {
            let vi = rng.below(nv);
            if vi < nv {
                f.values[vi].def = match rng.next() % 3 {
                    0 => ValueDef::Param(rng.index(2)),
                    1 => ValueDef::BlockParam(Block(rng.index(nb)), rng.index(3)),
                    _ => ValueDef::Inst(Block(rng.index(nb))),
                };
            }
        }
        // callee, site, or structure
        10 => {
            let bi = rng.below(nb);
            let ni = f.blocks[bi].insts.len();
            if ni == 0 {
                return;
            }
            let ii = rng.below(ni);
            let inst = &mut f.blocks[bi].insts[ii];
            match &mut inst.kind {
                InstKind::Call { callee, .. } => {
                    *callee = if rng.next() & 1 == 0 {
                        Callee::Func(FuncId(rng.index(nfuncs)))
                    } else {
                        Callee::Extern(ExternId(rng.index(nexterns)))
                    }
                }
                _ => inst.site = Some(SiteId(rng.index(10))),
            }
        }
        _ => {
            let bi = rng.below(nb);
            match rng.next() % 4 {
                0 => {
                    f.blocks[bi].insts.clear();
                }
                1 => {
                    f.blocks.truncate(bi);
                }
                2 => {
                    let ni = f.blocks[bi].insts.len();
                    if ni > 0 {
                        f.blocks[bi].insts.remove(rng.below(ni));
                    }
                }
                _ => {
                    f.values.truncate(rng.below(nv));
                }
            }
        }
    }
}

#[test]
fn fuzz_never_panics() {
    let base = valid_module();
    let mut rng = Lcg(0x9e37_79b9_7f4a_7c15);
    let mut failures = 0usize;
    for iter in 0..2000 {
        let mut m = base.clone();
        let rounds = 1 + rng.below(4);
        for _ in 0..rounds {
            mutate(&mut m, &mut rng);
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verify_module(&m)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failures += 1;
                let es = &e.0;
                assert!(!es.is_empty());
                assert!(es
                    .windows(2)
                    .all(|w| (w[0].loc.line, w[0].loc.col) <= (w[1].loc.line, w[1].loc.col)));
            }
            Err(_) => panic!("verify_module panicked on iteration {iter}: {m:#?}"),
        }
    }
    // Most mutations must be caught.
    assert!(
        failures > 1000,
        "only {failures} of 2000 mutants were rejected"
    );
}

/// The type rules of the spec §3.1 arithmetic: divisions and overflow tests
/// take two ints (an overflow test yields i8), bit counts an int, the
/// roundings and `fcopysign` floats.
#[test]
fn ops_of_section_3_1_type_rules() {
    let cases = [
        (
            "%r = sdiv %a, %x",
            "i64",
            "type mismatch: sdiv %a (i64), %x (f64)",
        ),
        (
            "%r = urem %x, %x",
            "f64",
            "type mismatch: urem %x (f64), %x (f64)",
        ),
        (
            "%r = popcnt %x",
            "f64",
            "type mismatch: popcnt needs an integer operand, got %x (f64)",
        ),
        (
            "%r = ffloor %a",
            "i64",
            "type mismatch: ffloor needs a float operand, got %a (i64)",
        ),
        (
            "%r = fcopysign %x, %a",
            "f64",
            "type mismatch: fcopysign %x (f64), %a (i64)",
        ),
    ];
    for (line, ret, msg) in cases {
        let text = format!(
            "fn @main(%a: i64, %x: f64) -> {ret} {{\nentry:\n    {line}\n    return %r\n}}\n"
        );
        let e = guardlift_ir::parse_and_verify(&text)
            .expect_err(&text)
            .to_string();
        assert!(e.contains(msg), "{text}: {e}");
    }
    let ok = "fn @main(%a: i32, %b: i32) -> i8 {\nentry:\n    %o = smul_overflows %a, %b\n    %n = clz %a\n    %q = sdiv %n, %b\n    return %o\n}\n";
    assert!(guardlift_ir::parse_and_verify(ok).is_ok());
}
