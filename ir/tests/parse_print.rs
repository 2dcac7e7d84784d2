//! Parser, printer and builder: round trips, error positions, robustness.

use guardlift_abi::adstack::AdElem;
use guardlift_abi::layout::DictLayout;
use guardlift_ir::builder::ModuleBuilder;
use guardlift_ir::module::Module;
use guardlift_ir::{
    parse_module, print_module, BinOp, Callee, ConvOp, Diagnostic, FloatCC, FuncId, InstKind,
    IntCC, ParseError, SiteId, SrcLoc, Type, UnOp, ValueDef,
};
use std::time::{Duration, Instant};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/examples");

fn examples() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(EXAMPLES)
        .expect("examples directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).expect("read example"),
            )
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no examples found in {EXAMPLES}");
    v
}

/// The module with every instruction/block/function/extern position zeroed.
fn strip_locs(m: &Module) -> Module {
    let mut m = m.clone();
    for e in &mut m.externs {
        e.loc = SrcLoc::default();
    }
    for f in &mut m.functions {
        f.loc = SrcLoc::default();
        for b in &mut f.blocks {
            b.loc = SrcLoc::default();
            for i in &mut b.insts {
                i.loc = SrcLoc::default();
            }
        }
    }
    m
}

/// Equality up to source positions (Debug text, so NaN constants compare equal).
fn assert_same(a: &Module, b: &Module) {
    assert_eq!(
        format!("{:#?}", strip_locs(a)),
        format!("{:#?}", strip_locs(b))
    );
}

fn parse_ok(text: &str) -> Module {
    match parse_module(text) {
        Ok(m) => m,
        Err(e) => panic!("unexpected parse error {e}\n--- text ---\n{text}"),
    }
}

/// parse → print → parse gives the same module, and printing is idempotent.
fn roundtrip(text: &str) -> (Module, String) {
    let m1 = parse_ok(text);
    let p1 = print_module(&m1);
    let m2 = parse_ok(&p1);
    assert_same(&m1, &m2);
    let p2 = print_module(&m2);
    assert_eq!(p1, p2, "printing is not idempotent");
    (m1, p1)
}

/// The error in the text that `e` must be (not an internal error).
#[track_caller]
fn invalid(e: ParseError) -> Diagnostic {
    match e {
        ParseError::Invalid(d) => d,
        ParseError::Internal { .. } => panic!("an internal error: {e}"),
    }
}

#[track_caller]
fn expect_err(text: &str, line: u32, col: u32, frag: &str) {
    match parse_module(text) {
        Ok(_) => panic!("expected an error containing {frag:?}, got a module\n{text}"),
        Err(e) => {
            let e = invalid(e);
            assert!(e.msg.contains(frag), "error {e} does not contain {frag:?}");
            assert_eq!(
                (e.loc.line, e.loc.col),
                (line, col),
                "wrong position for {e}"
            );
        }
    }
}

#[test]
fn examples_roundtrip() {
    for (path, text) in examples() {
        let (m, printed) = roundtrip(&text);
        assert!(!m.functions.is_empty(), "{path}");
        assert!(printed.starts_with("layout "), "{path}");
    }
}

#[test]
fn example_details() {
    for (path, text) in examples() {
        let m = parse_ok(&text);
        if path.ends_with("attrs.glir") {
            assert_eq!(m.layout, DictLayout::Cpython312);
            assert_eq!(m.externs.len(), 3);
            let f = &m.functions[0];
            assert_eq!(f.name, "main");
            assert_eq!(f.ret, Some(Type::I64));
            let insts = &f.blocks[0].insts;
            assert_eq!(insts[0].loc, SrcLoc::new(11, 5));
            // %o = call @obj_new(%n): ptr from the extern's signature.
            let o = insts[1].result.unwrap();
            assert_eq!(f.ty(o), Type::Ptr);
            assert_eq!(f.value(o).name, "o");
            assert!(matches!(
                insts[1].kind,
                InstKind::Call {
                    callee: Callee::Extern(_),
                    ..
                }
            ));
            assert!(matches!(
                insts[3].kind,
                InstKind::StoreAttr { index: 1, .. }
            ));
            assert!(!m.is_instrumented());
        }
        if path.ends_with("tagflip.glir") {
            assert_eq!(m.layout, DictLayout::Phoenix);
            let f = &m.functions[0];
            assert_eq!(f.blocks.len(), 6);
            assert_eq!(f.blocks[4].name, "store");
            assert_eq!(f.blocks[4].loc, SrcLoc::new(26, 1));
        }
        if path.ends_with("sin_chain_grad.glir") {
            let f = &m.functions[0];
            let top = f
                .blocks
                .iter()
                .flat_map(|b| &b.insts)
                .find(|i| matches!(i.kind, InstKind::AdTop { .. }));
            assert_eq!(f.ty(top.unwrap().result.unwrap()), Type::F64);
        }
    }
}

const ALL_OPS: &str = r#"
; every instruction form, with blocks out of order and uses before definitions
layout dict_slot_offset = -32
extern fn @sin(f64) -> f64
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)

fn @main(%x: f64, %n: i64, %p: ptr) -> f64 {
entry:
    %a = iconst.i64 -5
    %h = iconst.ptr 0xffffffffffffffff
    %b8 = iconst.i8 255
    %c8 = iconst.i8 -128
    %i32 = iconst.i32 0x7fffffff
    %f = fconst.f64 0.95
    %g = fconst.f32 0.1
    %k = fconst.f64 -2.5e-3
    %tiny = fconst.f32 1e-7
    %one = fconst.f64 1
    %nan = fconst.f64 nan
    %inf = fconst.f32 inf
    %ninf = fconst.f64 -inf
    %nz = fconst.f64 -0.0
    %big = fconst.f64 1.7976931348623157e308
    jump second(%a, %later)
second(%s: i64, %t: f64):
    %z = iadd %s, %n
    %z1 = isub %z, %s
    %z2 = imul %z1, %z
    %z3 = band %z2, %z
    %z4 = bor %z3, %z
    %z5 = bxor %z4, %z
    %z6 = ishl %z5, %z
    %z7 = ushr %z6, %z
    %z8 = sshr %z7, %z
    %pp = iadd %p, %z8
    %c = icmp.slt %z8, %n
    %c2 = icmp.uge %z8, %n
    %fa = fadd %x, %t
    %fb = fsub %fa, %x
    %fc = fmul %fb, %x
    %fd = fdiv %fc, %x
    %fe = fmin %fd, %x
    %ff = fmax %fe, %x
    %fg = fneg %ff
    %fh = fabs %fg
    %fi = fsqrt %fh
    %dq = sdiv %z8, %n
    %dq2 = udiv %dq, %n
    %dr = srem %dq2, %n
    %dr2 = urem %dr, %n
    %ov = sadd_overflows %dr2, %n
    %ov2 = ssub_overflows %dr2, %n
    %ov3 = smul_overflows %dr2, %n
    %bc = popcnt %dr2
    %bc2 = clz %ov
    %bc3 = ctz %bc
    %rf = ffloor %fi
    %rc = fceil %rf
    %rt = ftrunc %rc
    %rn = fnearest %rt
    %cs = fcopysign %rn, %x
    %fc1 = fcmp.lt %fi, %x
    %fc2 = fcmp.ne %fi, %x
    %sel = select %c, %fi, %x
    %w = sext.i64 %c
    %w2 = uext.i32 %c2
    %w3 = ireduce.i8 %w
    %w4 = fcvt_from_sint.f32 %w
    %w5 = fcvt_to_sint.i64 %sel
    %w6 = fpromote.f64 %w4
    %w7 = fdemote.f32 %w6
    %w8 = bitcast.i64 %w6
    %l = load.i64 %p
    %l2 = load.f64 %p, 16
    %l3 = load.i8 %p, -8
    store %l, %p
    store %l2, %p, 24
    %sv = call @sin(%sel)
    %o = call @obj_new(%n)
    call @obj_free(%o)
    %r = call @helper(%n)
    call @helper(%n)
    brif %c, third, fourth(%sv)
fourth(%q: f64):
    return %q
third:
    %dw = dict_slot.load %o
    dict_slot.store %o, %dw
    %la = load_attr %o, 3
    store_attr %o, 16777215, %la
    %st = adstack.alloc.f32 32
    %st2 = adstack.alloc.i64 1
    %st3 = adstack.alloc.f64 1048576
    adstack.push %st, %w7
    %tp = adstack.top %st
    %ta = adstack.top_adj %st
    adstack.acc_adj %st, %tp
    %ln = adstack.len %st
    adstack.pop %st
    %ti = adstack.top %st2
    jump loop(%st3)
loop(%h3: adstack.f64):
    %t3 = adstack.top %h3
    return %t3
}

fn @helper(%v: i64) -> i64 {
entry:
    jump b
b:
    return %v
}

fn @void() {
entry:
    return
}
"#;

#[test]
fn all_ops_roundtrip_and_types() {
    let text = ALL_OPS.replace("%later", "%one");
    let (m, printed) = roundtrip(&text);
    assert_eq!(m.layout, DictLayout::Custom(-32));
    let f = &m.functions[0];
    let ty = |name: &str| {
        let v = f
            .values
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no %{name}"));
        v.ty
    };
    for (n, t) in [
        ("a", Type::I64),
        ("h", Type::Ptr),
        ("b8", Type::I8),
        ("g", Type::F32),
        ("z", Type::I64),
        ("pp", Type::Ptr),
        ("c", Type::I8),
        ("fc1", Type::I8),
        ("fi", Type::F64),
        ("sel", Type::F64),
        ("w2", Type::I32),
        ("w4", Type::F32),
        ("l3", Type::I8),
        ("sv", Type::F64),
        ("o", Type::Ptr),
        ("r", Type::I64),
        ("dw", Type::I64),
        ("la", Type::I64),
        ("st", Type::AdStack(AdElem::F32)),
        ("tp", Type::F32),
        ("ta", Type::F32),
        ("ti", Type::I64),
        ("ln", Type::I64),
        ("h3", Type::AdStack(AdElem::F64)),
        ("t3", Type::F64),
        ("q", Type::F64),
    ] {
        assert_eq!(ty(n), t, "type of %{n}");
    }
    let consts: Vec<&InstKind> = f.blocks[0].insts.iter().map(|i| &i.kind).collect();
    assert_eq!(
        consts[0],
        &InstKind::Iconst {
            ty: Type::I64,
            imm: -5
        }
    );
    assert_eq!(
        consts[1],
        &InstKind::Iconst {
            ty: Type::Ptr,
            imm: -1
        }
    );
    assert_eq!(
        consts[2],
        &InstKind::Iconst {
            ty: Type::I8,
            imm: -1
        }
    );
    assert_eq!(
        consts[3],
        &InstKind::Iconst {
            ty: Type::I8,
            imm: -128
        }
    );
    assert_eq!(
        consts[4],
        &InstKind::Iconst {
            ty: Type::I32,
            imm: 0x7fffffff
        }
    );
    assert_eq!(
        consts[6],
        &InstKind::Fconst {
            ty: Type::F32,
            value: 0.1f32 as f64
        }
    );
    assert_eq!(
        consts[8],
        &InstKind::Fconst {
            ty: Type::F32,
            value: 1e-7f32 as f64
        }
    );
    assert_eq!(
        consts[9],
        &InstKind::Fconst {
            ty: Type::F64,
            value: 1.0
        }
    );
    match consts[10] {
        InstKind::Fconst { value, .. } => assert!(value.is_nan()),
        k => panic!("{k:?}"),
    }
    match consts[13] {
        InstKind::Fconst { value, .. } => assert_eq!(value.to_bits(), (-0.0f64).to_bits()),
        k => panic!("{k:?}"),
    }
    // Calls to a function defined later, with and without a result.
    let calls: Vec<_> = f.blocks[1]
        .insts
        .iter()
        .filter_map(|i| match &i.kind {
            InstKind::Call { callee, .. } => Some((*callee, i.result.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(calls[3], (Callee::Func(FuncId(1)), true));
    assert_eq!(calls[4], (Callee::Func(FuncId(1)), false));
    // Canonical text details.
    assert!(printed.starts_with("layout dict_slot_offset = -32\n\nextern fn @sin(f64) -> f64\n"));
    assert!(printed.contains(
        "\n\nfn @main(%x: f64, %n: i64, %p: ptr) -> f64 {\nentry:\n    %a = iconst.i64 -5\n"
    ));
    assert!(printed.contains("    %g = fconst.f32 0.1\n"));
    assert!(printed.contains("    %nan = fconst.f64 nan\n"));
    assert!(printed.contains("    %ninf = fconst.f64 -inf\n"));
    assert!(printed.contains("    %one = fconst.f64 1.0\n"));
    assert!(printed.contains("    %l = load.i64 %p\n"));
    assert!(printed.contains("    store %l2, %p, 24\n"));
    assert!(printed.contains("    brif %c, third, fourth(%sv)\n"));
    assert!(printed.contains("\nloop(%h3: adstack.f64):\n"));
    assert!(printed.contains("    call @helper(%n)\n"));
    assert!(printed.contains("fn @void() {\nentry:\n    return\n}\n"));
    assert!(printed.ends_with("}\n"));
}

#[test]
fn value_numbering_is_definition_order() {
    let m = parse_ok("fn @f(%a: i64) -> i64 {\nentry:\n    %c = iadd %b, %a\n    %b = iconst.i64 1\n    return %c\n}\n");
    let f = &m.functions[0];
    let names: Vec<&str> = f.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["a", "c", "b"]);
    assert_eq!(f.values[2].def, ValueDef::Inst(guardlift_ir::Block(0)));
}

#[test]
fn type_inference_follows_cfg_not_text() {
    // %y's definition comes after its use in the text, but dominates it.
    let text = "\
fn @f(%a: i64) -> i64 {
entry:
    jump first
second:
    %z = iadd %y, %a
    return %z
first:
    %y = imul %a, %a
    jump second
}
";
    let m = parse_ok(text);
    let f = &m.functions[0];
    assert!(f.values.iter().all(|v| v.ty == Type::I64));
    roundtrip(text);
    // Not dominated and not inferable: an error at the using instruction.
}

#[test]
fn integer_literals() {
    let big =
        "fn @f() -> i64 {\nentry:\n    %x = iconst.i64 99999999999999999999999\n    return %x\n}\n";
    expect_err(big, 3, 21, "out of range");
    let huge = format!(
        "fn @f() -> i64 {{\nentry:\n    %x = iconst.i64 {}\n    return %x\n}}\n",
        "9".repeat(200)
    );
    expect_err(&huge, 3, 21, "integer literal out of range");
    let m = parse_ok("fn @f() -> i32 {\nentry:\n    %x = iconst.i32 0xFFFFFFFF\n    %y = iconst.i64 -0x8000000000000000\n    return %x\n}\n");
    let insts = &m.functions[0].blocks[0].insts;
    assert_eq!(
        insts[0].kind,
        InstKind::Iconst {
            ty: Type::I32,
            imm: -1
        }
    );
    assert_eq!(
        insts[1].kind,
        InstKind::Iconst {
            ty: Type::I64,
            imm: i64::MIN
        }
    );
}

#[test]
fn float_literals() {
    for bad in [
        "1.2.3", "abc", "1e", "0x10", "1.", ".5", "--1.0", "1e400", "infinity", "NaN",
    ] {
        let text =
            format!("fn @f() -> f64 {{\nentry:\n    %x = fconst.f64 {bad}\n    return %x\n}}\n");
        let e = invalid(parse_module(&text).expect_err(bad));
        assert_eq!((e.loc.line, e.loc.col), (3, 21), "{bad}: {e}");
        assert!(e.msg.contains("float literal"), "{bad}: {e}");
    }
    // f32 literals round once, straight to f32 (not via f64).
    let s = "1.00000005960464477539062500000001";
    let text = format!("fn @f() -> f32 {{\nentry:\n    %x = fconst.f32 {s}\n    return %x\n}}\n");
    let m = parse_ok(&text);
    let want = s.parse::<f32>().unwrap() as f64;
    assert_eq!(
        m.functions[0].blocks[0].insts[0].kind,
        InstKind::Fconst {
            ty: Type::F32,
            value: want
        }
    );
    // Printing is bit-exact for arbitrary finite values.
    let mut seed = 0x1234_5678_9abc_def0u64;
    for _ in 0..2000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v64 = f64::from_bits(seed);
        let v32 = f32::from_bits((seed >> 32) as u32);
        for (ty, v) in [(Type::F64, v64), (Type::F32, v32 as f64)] {
            if !v.is_finite() {
                continue;
            }
            let text = format!(
                "fn @f() -> {ty} {{\nentry:\n    %x = fconst.{ty} {}\n    return %x\n}}\n",
                guardlift_ir::print::format_float(ty, v)
            );
            let m = parse_ok(&text);
            match m.functions[0].blocks[0].insts[0].kind {
                InstKind::Fconst { value, .. } => {
                    assert_eq!(value.to_bits(), v.to_bits(), "{text}")
                }
                ref k => panic!("{k:?}"),
            }
        }
    }
}

#[test]
fn pathological_inputs_fail_fast() {
    let start = Instant::now();
    let deep = "{".repeat(100_000);
    expect_err(&deep, 1, 1, "expected `fn`");
    let deep_lines = "{\n".repeat(100_000);
    expect_err(&deep_lines, 1, 1, "expected `fn`");
    let inner = format!("fn @f() {{\nentry:\n{}", "    {\n".repeat(100_000));
    expect_err(&inner, 3, 5, "expected an instruction");
    let fns = "fn @f() {\n".repeat(100_000);
    expect_err(&fns, 1, 1, "unclosed function @f");
    let parens = format!("fn @f({}", "(".repeat(100_000));
    expect_err(&parens, 1, 7, "expected a value");
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
}

#[test]
fn twenty_thousand_blocks() {
    // Blocks in reverse text order, so inference has to follow the CFG.
    const N: usize = 20_000;
    let mut t = String::from(
        "fn @main(%n: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    jump b0(%n)\n",
    );
    for i in (0..N).rev() {
        t.push_str(&format!(
            "b{i}(%x{i}: i64):\n    %y{i} = iadd %x{i}, %one\n"
        ));
        if i + 1 < N {
            t.push_str(&format!("    jump b{}(%y{i})\n", i + 1));
        } else {
            t.push_str(&format!("    return %y{i}\n"));
        }
    }
    t.push_str("}\n");
    let start = Instant::now();
    let m = parse_ok(&t);
    let elapsed = start.elapsed();
    assert_eq!(m.functions[0].blocks.len(), N + 1);
    assert!(
        elapsed < Duration::from_secs(2),
        "parsing {N} blocks took {elapsed:?}"
    );
    // A long chain of operand-typed values, written in reverse order.
    let mut t = String::from("fn @main(%n: i64) -> i64 {\nentry:\n    jump b0\n");
    for i in (0..N).rev() {
        let src = if i == 0 {
            "%n".to_string()
        } else {
            format!("%v{}", i - 1)
        };
        t.push_str(&format!("b{i}:\n    %v{i} = iadd {src}, %n\n"));
        if i + 1 < N {
            t.push_str(&format!("    jump b{}\n", i + 1));
        } else {
            t.push_str(&format!("    return %v{i}\n"));
        }
    }
    t.push_str("}\n");
    let m = parse_ok(&t);
    assert!(m.functions[0].values.iter().all(|v| v.ty == Type::I64));
    let printed = print_module(&m);
    assert_eq!(print_module(&parse_ok(&printed)), printed);
}

const GUARDS: &str = "\
extern fn @obj_new(i64) -> ptr

fn @main(%k: i64) -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    guard.watch %o
    guard.store_attr %o, 0, %k !site(3, 27:5)
    %w = guard.dict_slot.load %o !site(0, 12:5)
    guard.dict_slot.store %o, %w
    %v = guard.load_attr %o, 1
    guard.store %k, %o, 8 !site(7, 1:1)
    %s = adstack.alloc.i64 4
    guard.adstack.push %s, %k
    %t = guard.adstack.top %s
    %ta = guard.adstack.top_adj %s !site(5, 30:9)
    guard.adstack.acc_adj %s, %t
    guard.adstack.pop %s
    store_attr %o, 1, %v
    return %v
}

fn @second(%o: ptr) {
entry:
    guard.store_attr %o, 0, %o
    return
}
";

#[test]
fn guards() {
    let (m, printed) = roundtrip(GUARDS);
    let f = &m.functions[0];
    let insts = &f.blocks[0].insts;
    assert_eq!(insts[2].kind.opcode(), "watch");
    assert_eq!(insts[2].site, None);
    // explicit ids
    assert_eq!(insts[3].site, Some(SiteId(3)));
    let s3 = m.site(SiteId(3)).unwrap();
    assert_eq!(
        (s3.func, s3.loc, s3.op),
        (FuncId(0), SrcLoc::new(27, 5), "store_attr")
    );
    assert_eq!(insts[4].site, Some(SiteId(0)));
    assert_eq!(m.site(SiteId(0)).unwrap().op, "dict_slot.load");
    // fresh ids: after the largest explicit one (7), in text order; loc = own position
    assert_eq!(insts[5].site, Some(SiteId(8)));
    let s8 = m.site(SiteId(8)).unwrap();
    assert_eq!((s8.loc, s8.op), (SrcLoc::new(10, 5), "dict_slot.store"));
    assert_eq!(insts[6].site, Some(SiteId(9)));
    assert_eq!(m.site(SiteId(9)).unwrap().loc, SrcLoc::new(11, 5));
    assert_eq!(insts[7].site, Some(SiteId(7)));
    assert_eq!(m.site(SiteId(7)).unwrap().op, "store");
    assert_eq!(insts[9].site, Some(SiteId(10)));
    assert_eq!(insts[10].site, Some(SiteId(11)));
    assert_eq!(f.ty(insts[10].result.unwrap()), Type::I64);
    assert_eq!(insts[11].site, Some(SiteId(5)));
    assert_eq!(insts[14].site, None);
    let g = &m.functions[1];
    assert_eq!(g.blocks[0].insts[0].site, Some(SiteId(14)));
    assert_eq!(m.site(SiteId(14)).unwrap().func, FuncId(1));
    assert_eq!(m.sites.len(), 11);
    assert!(m.is_instrumented());
    // printed form
    assert!(printed.contains("    guard.watch %o\n"));
    // a site written without a check list takes every check applicable to its op
    assert!(
        printed.contains("    guard.store_attr %o, 0, %k !site(3, 27:5, lifetime dict bounds)\n")
    );
    assert!(printed.contains("    %w = guard.dict_slot.load %o !site(0, 12:5, lifetime dict)\n"));
    assert!(printed.contains("    guard.dict_slot.store %o, %w !site(8, 10:5, lifetime dict)\n"));
    assert!(printed.contains("    guard.store %k, %o, 8 !site(7, 1:1, lifetime bounds clobber)\n"));
    assert!(printed.contains("    %ta = guard.adstack.top_adj %s !site(5, 30:9, adstack)\n"));
    assert!(printed.contains("    store_attr %o, 1, %v\n"));
}

const SITE_CHECKS: &str = "\
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
extern fn @print_i64(i64)
fn @main(%n: i64) -> i64 {
entry:
    %o = guard.call @obj_new(%n) !site(0, 5:5, bounds)
    guard.store_attr %o, 0, %n !site(1, 6:5, bounds dict)
    %v = guard.load.i64 %o, 8
    guard.call @obj_free(%o)
    guard.store %n, %o, 0 !site(2, 9:5, clobber)
    return %v
}
";

#[test]
fn site_check_lists() {
    use guardlift_ir::{CheckKind, Checks};
    let (m, printed) = roundtrip(SITE_CHECKS);
    let checks = |id| m.site(SiteId(id)).unwrap().checks;
    assert_eq!(checks(0), Checks::only(CheckKind::Bounds));
    // any order in, spec order out
    assert_eq!(
        checks(1),
        Checks::only(CheckKind::Dict).with(CheckKind::Bounds)
    );
    // a raw load takes lifetime and bounds (heap redzones)
    assert_eq!(
        checks(3),
        Checks::only(CheckKind::Lifetime).with(CheckKind::Bounds),
        "guard.load"
    );
    assert_eq!(
        checks(4),
        Checks::only(CheckKind::Lifetime),
        "call @obj_free"
    );
    assert_eq!(m.site(SiteId(4)).unwrap().op, "call");
    assert!(printed.contains("guard.store_attr %o, 0, %n !site(1, 6:5, dict bounds)\n"));
    assert!(printed.contains("%o = guard.call @obj_new(%n) !site(0, 5:5, bounds)\n"));
    assert!(printed.contains("guard.call @obj_free(%o) !site(4, 9:5, lifetime)\n"));
    assert!(
        printed.contains("%v = guard.load.i64 %o, 8 !site(3, 8:5, lifetime bounds)\n"),
        "{printed}"
    );
    // `call @obj_new` without a list: every object check
    let (m2, _) = roundtrip(&SITE_CHECKS.replace(" !site(0, 5:5, bounds)", ""));
    let s = m2
        .sites
        .values()
        .find(|s| s.op == "call" && s.loc.line == 6)
        .unwrap();
    assert_eq!(s.checks, Checks::OBJECT);
}

#[test]
fn builder_roundtrip() {
    let mut mb = ModuleBuilder::new(DictLayout::Phoenix);
    let obj_new = mb.declare_extern("obj_new", &[Type::I64], Some(Type::Ptr));
    let obj_free = mb.declare_extern("obj_free", &[Type::Ptr], None);
    let helper = mb.declare_function("helper", &[Type::F64], Some(Type::F64));
    let main = mb.declare_function("main", &[Type::I64], Some(Type::I64));

    let mut f = mb.function(main);
    let entry = f.create_block("entry");
    let body = f.create_block("loop");
    let body2 = f.create_block("loop");
    let exit = f.create_block("9 exit!");
    let i = f.append_block_param(body, Type::I64);
    let acc = f.append_block_param(body, Type::F64);
    f.switch_to_block(entry);
    let n = f.param(0);
    let o = f.call(obj_new, &[n]).unwrap();
    f.watch(o);
    let z = f.iconst(Type::I64, 0);
    let c200 = f.iconst(Type::I8, 200);
    let _ = f.conv(ConvOp::Sext, Type::I64, c200);
    let x = f.fconst(Type::F32, 0.1);
    let x64 = f.conv(ConvOp::Fpromote, Type::F64, x);
    f.store_attr(o, 2, z);
    let site = f.guard_last(SrcLoc::new(42, 7));
    let w = f.dict_slot_load(o);
    f.dict_slot_store(o, w);
    f.jump(body, &[z, x64]);
    f.switch_to_block(body);
    let lim = f.load_attr(o, 2);
    let c = f.icmp(IntCC::Slt, i, lim);
    let h = f.call(helper, &[acc]).unwrap();
    let s = f.adstack_alloc(AdElem::F64, 8);
    f.adstack_push(s, h);
    let t = f.adstack_top(s);
    let ta = f.adstack_top_adj(s);
    f.adstack_acc_adj(s, t);
    let len = f.adstack_len(s);
    f.adstack_pop(s);
    let sum = f.binary(BinOp::Fadd, t, ta);
    let neg = f.unary(UnOp::Fneg, sum);
    let fc = f.fcmp(FloatCC::Lt, neg, acc);
    let sel = f.select(fc, neg, acc);
    let one = f.iconst(Type::I64, 1);
    let i1 = f.binary(BinOp::Iadd, i, one);
    let i2 = f.binary(BinOp::Iadd, i1, len);
    let p = f.load(Type::I64, o, 8);
    f.store(p, o, -16);
    f.brif(c, body2, &[], exit, &[i2]);
    let r = f.append_block_param(exit, Type::I64);
    f.switch_to_block(body2);
    f.jump(body, &[i2, sel]);
    f.switch_to_block(exit);
    assert!(f.call(obj_free, &[o]).is_none());
    f.ret(Some(r));
    assert_eq!(f.finish(), main);

    let mut f = mb.function(helper);
    let e = f.create_block("entry");
    f.switch_to_block(e);
    let a = f.param(0);
    f.ret(Some(a));
    f.finish();

    let m = mb.build().expect("valid module");
    assert_eq!(m.site(site).unwrap().loc, SrcLoc::new(42, 7));
    let text = print_module(&m);
    assert!(text.contains("\nloop_1:\n"), "{text}");
    assert!(text.contains("\nb9_exit_(%v"), "{text}");
    assert!(text.contains("    %v5 = iconst.i8 -56\n"), "{text}");
    assert!(text.contains("    %v7 = fconst.f32 0.1\n"), "{text}");
    assert!(
        text.contains("    guard.store_attr %v3, 2, %v4 !site(0, 42:7, lifetime dict bounds)\n"),
        "{text}"
    );
    assert!(text.contains("    guard.watch %v3\n"), "{text}");
    let m2 = parse_ok(&text);
    // Same text again, and the same structure apart from value numbering
    // (the builder numbers values in creation order, the parser in text order).
    assert_eq!(print_module(&m2), text);
    let (m3, _) = roundtrip(&text);
    assert_same(&m2, &m3);
    assert_eq!(m2.sites, m.sites);
    assert_eq!(m2.functions[0].name, "helper");
    assert_eq!(m2.functions[0].ty(m2.functions[0].params[0]), Type::F64);
    assert!(matches!(m2.functions[1].values[0].def, ValueDef::Param(0)));
}

#[test]
fn builder_module_without_body_is_rejected() {
    let mut mb = ModuleBuilder::new(DictLayout::Cpython312);
    mb.declare_function("f", &[], None);
    let e = mb.build().unwrap_err();
    assert!(e.0[0].msg.contains("no body"));
}

#[test]
fn printer_survives_bad_names() {
    let mut m = parse_ok("fn @f(%a: i64) -> i64 {\nentry:\n    %b = iadd %a, %a\n    jump next(%b)\nnext(%c: i64):\n    return %c\n}\n");
    let f = &mut m.functions[0];
    f.values[1].name = "a".into();
    f.values[2].name = "".into();
    f.blocks[1].name = "entry".into();
    let text = print_module(&m);
    let m2 = parse_ok(&text);
    let names: Vec<&str> = m2.functions[0]
        .values
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(names, ["a", "a.1", "v.1"]);
    assert_eq!(m2.functions[0].blocks[1].name, "entry_1");
    assert_eq!(print_module(&m2), text);
}

#[test]
fn mutations_never_panic() {
    let texts: Vec<String> = examples()
        .into_iter()
        .map(|(_, t)| t)
        .chain([ALL_OPS.to_string(), GUARDS.to_string()])
        .collect();
    const ALPHABET: &[u8] = b" \n%@!(),:={}-;.0123456789aefinxz_guardsite\xc3\xa9\xff";
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut parsed_ok = 0;
    for round in 0..2000 {
        let mut bytes = texts[round % texts.len()].clone().into_bytes();
        for _ in 0..1 + next() % 4 {
            if bytes.is_empty() {
                break;
            }
            let pos = next() % bytes.len();
            match next() % 3 {
                0 => {
                    bytes.remove(pos);
                }
                1 => bytes[pos] = ALPHABET[next() % ALPHABET.len()],
                _ => bytes.insert(pos, ALPHABET[next() % ALPHABET.len()]),
            }
        }
        // The CLI refuses non-UTF-8 before parsing; do the same.
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let res = std::panic::catch_unwind(|| {
            if let Ok(m) = parse_module(&text) {
                // Anything that parses prints and parses back.
                let p = print_module(&m);
                let m2 = parse_module(&p).unwrap_or_else(|e| panic!("reparse: {e}\n{p}"));
                assert_eq!(print_module(&m2), p);
                true
            } else {
                false
            }
        });
        match res {
            Ok(ok) => parsed_ok += ok as usize,
            Err(_) => panic!("parser panicked on mutation round {round}:\n{text}"),
        }
    }
    assert!(parsed_ok > 0);
}

#[test]
fn examples_verify() {
    for (path, text) in examples() {
        if let Err(e) = guardlift_ir::parse_and_verify(&text) {
            panic!("{path}: {e}");
        }
    }
}

#[test]
fn utf8_bom_at_start_is_skipped() {
    let text = "fn @main() -> i64 {\nentry:\n    %x = iconst.i64 1\n    return %x\n}\n";
    let with_bom = format!("\u{feff}{text}");
    assert_same(&parse_ok(&with_bom), &parse_ok(text));
    // Columns on line 1 do not count the BOM; a BOM elsewhere is still an error
    // (a file case cannot start with a BOM: its header comes first).
    expect_err("\u{feff}fn main() {\n}\n", 1, 4, "function name");
    expect_err("\n\u{feff}fn @main() {\n}\n", 2, 1, "unexpected character");
}

#[test]
fn huge_literals_and_names_are_not_echoed_whole() {
    let big = "7".repeat(100_000);
    let text =
        format!("fn @main() -> i64 {{\nentry:\n    %x = iconst.i64 {big}\n    return %x\n}}\n");
    let e = invalid(parse_module(&text).unwrap_err());
    assert_eq!((e.loc.line, e.loc.col), (3, 21));
    assert!(e.to_string().len() < 300, "{e}");
    assert!(e.msg.contains("more characters)"), "{e}");
    let name = "v".repeat(50_000);
    let text = format!("fn @main() -> i64 {{\nentry:\n    return %{name}\n}}\n");
    let e = parse_module(&text).unwrap_err();
    assert!(e.to_string().len() < 300, "{e}");
}

/// A guard the verifier rejects (a guarded call of a plain function) prints
/// as written: printing must not turn an invalid module into a valid one
/// (found by the `parse` fuzz target, fuzz/corpus/parse/regressions/).
#[test]
fn a_rejected_guard_prints_as_written() {
    let text = "fn @f() {\nentry:\n    guard.call @f()\n    return\n}\n";
    let (m, printed) = roundtrip(text);
    assert!(printed.contains("guard.call @f()"), "{printed}");
    let again = parse_ok(&printed);
    assert!(guardlift_ir::verify_module(&m).is_err());
    assert!(guardlift_ir::verify_module(&again).is_err());
}
