//! The reference interpreter's semantics, pinned op by op (spec/IR.md §3–§7).
//!
//! Every program is IR text (inline, or from the corpus in `tests/programs/`
//! where the corpus has it), parsed and verified, and run
//! through `guardlift_interp::Interpreter` against a fresh `Runtime` that
//! captures output and never ends the process. Arguments and results are raw
//! bits: ints sign-extended to 64 bits, f32 as `to_bits()` in the low 32 bits,
//! f64 as `to_bits()`.

use guardlift_instrument::{instrument, CheckSet};
use guardlift_interp::{InterpError, Interpreter};
use guardlift_ir::{parse_and_verify, Module};
use guardlift_runtime::adstack::{self, AdElem};
use guardlift_runtime::internals::*;
use guardlift_runtime::layout::{self, DictLayout};
use guardlift_runtime::{Mode, Observed, Report, ReportKind, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Helpers

fn module(text: &str) -> Module {
    match parse_and_verify(text) {
        Ok(m) => m,
        Err(e) => panic!("program does not parse/verify:\n{e}\n--- program ---\n{text}"),
    }
}

fn runtime(m: &Module, mode: Mode) -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: false,
        capture_output: true,
    })
}

type RunResult = Result<Option<u64>, InterpError>;

/// Runs `@main` of an already-built module in `mode`.
fn exec(m: &Module, mode: Mode, args: &[u64]) -> (RunResult, Arc<Runtime>) {
    let rt = runtime(m, mode);
    let r = Interpreter::new(m, rt.clone(), &HashMap::new())
        .expect("link")
        .call("main", args);
    (r, rt)
}

/// Parses, verifies and runs `@main` uninstrumented; returns the result and runtime.
fn exec_text(text: &str, args: &[u64]) -> (RunResult, Arc<Runtime>) {
    exec(&module(text), Mode::Recover, args)
}

/// Runs `@main` uninstrumented and returns its (required) result.
fn run(text: &str, args: &[u64]) -> u64 {
    let (r, rt) = exec_text(text, args);
    assert!(rt.take_reports().is_empty(), "no reports expected");
    assert_eq!(rt.take_host_fault(), None, "no host fault expected");
    match r {
        Ok(Some(v)) => v,
        other => panic!("expected a result, got {other:?}\n--- program ---\n{text}"),
    }
}

/// Runs `@main` uninstrumented and returns its captured output.
fn run_output(text: &str, args: &[u64]) -> String {
    let (r, rt) = exec_text(text, args);
    if let Err(e) = r {
        panic!("run failed: {e}\n--- program ---\n{text}");
    }
    assert_eq!(rt.take_host_fault(), None, "no host fault expected");
    rt.take_output()
}

/// Instruments `text` with `checks` and runs `@main` in `mode`.
fn exec_guarded(
    text: &str,
    checks: CheckSet,
    mode: Mode,
    args: &[u64],
) -> (RunResult, Arc<Runtime>) {
    let m = instrument(&module(text), checks);
    guardlift_ir::verify_module(&m).expect("instrumented IR verifies");
    exec(&m, mode, args)
}

/// 1-based line of the only line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> u32 {
    let hits: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "`{needle}` must occur on exactly one line");
    hits[0] as u32 + 1
}

fn s(x: i64) -> u64 {
    x as u64
}
fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}
fn f64b(x: f64) -> u64 {
    x.to_bits()
}
fn as_f32(b: u64) -> f32 {
    assert_eq!(
        b >> 32,
        0,
        "f32 result must live in the low 32 bits: {b:#x}"
    );
    f32::from_bits(b as u32)
}
fn as_f64(b: u64) -> f64 {
    f64::from_bits(b)
}

const DICT: CheckSet = CheckSet {
    dict: true,
    ..CheckSet::NONE
};
const ADSTACK: CheckSet = CheckSet {
    adstack: true,
    ..CheckSet::NONE
};
const CLOBBER: CheckSet = CheckSet {
    clobber: true,
    ..CheckSet::NONE
};

/// `%r = OP %a, %b` with both operands of type `ty`.
fn bin(ty: &str, op: &str, a: u64, b: u64) -> u64 {
    let text = format!(
        "fn @main(%a: {ty}, %b: {ty}) -> {ty} {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
    );
    run(&text, &[a, b])
}

/// `%r = OP %a`.
fn un(ty: &str, op: &str, a: u64) -> u64 {
    let text =
        format!("fn @main(%a: {ty}) -> {ty} {{\nentry:\n    %r = {op} %a\n    return %r\n}}\n");
    run(&text, &[a])
}

/// `%r = OP %a, %b` → i8 (icmp.CC / fcmp.CC).
fn cmp(ty: &str, op: &str, a: u64, b: u64) -> u64 {
    let text = format!(
        "fn @main(%a: {ty}, %b: {ty}) -> i8 {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
    );
    run(&text, &[a, b])
}

/// `%r = OP %a` from type `from` to type `to` (`op` carries the suffix).
fn conv(from: &str, op: &str, to: &str, a: u64) -> u64 {
    let text =
        format!("fn @main(%a: {from}) -> {to} {{\nentry:\n    %r = {op} %a\n    return %r\n}}\n");
    run(&text, &[a])
}

fn only_report(rt: &Runtime) -> Report {
    let mut r = rt.take_reports();
    assert_eq!(r.len(), 1, "exactly one report expected: {r:#?}");
    r.remove(0)
}

fn assert_site(r: &Report, kind: ReportKind, function: &str, line: u32, op: &str) {
    assert_eq!(r.kind, kind, "{r:#?}");
    assert_eq!(r.info.function, function, "{r:#?}");
    assert_eq!(r.info.line, line, "{r:#?}");
    assert_eq!(r.info.op, op, "{r:#?}");
}

// ---------------------------------------------------------------------------
// Constants and integer ops

#[test]
fn iconst_every_width_hex_and_negative() {
    let cases: &[(&str, &str, i64)] = &[
        ("i8", "0", 0),
        ("i8", "127", 127),
        ("i8", "-128", -128),
        ("i8", "0xff", -1),
        ("i8", "0x80", -128),
        ("i8", "-1", -1),
        ("i32", "0x7fffffff", i32::MAX as i64),
        ("i32", "0x80000000", i32::MIN as i64),
        ("i32", "0xffffffff", -1),
        ("i32", "-5", -5),
        ("i32", "4294967295", -1),
        ("i64", "-5", -5),
        ("i64", "0x7fffffffffffffff", i64::MAX),
        ("i64", "-0x8000000000000000", i64::MIN),
        ("i64", "0xffffffffffffffff", -1),
        ("i64", "0x1122334455667788", 0x1122334455667788),
        ("ptr", "0x10", 16),
        ("ptr", "0xffffffffffffffff", -1),
        ("ptr", "-8", -8),
    ];
    for &(ty, lit, want) in cases {
        let text = format!(
            "fn @main() -> {ty} {{\nentry:\n    %x = iconst.{ty} {lit}\n    return %x\n}}\n"
        );
        assert_eq!(run(&text, &[]), s(want), "iconst.{ty} {lit}");
    }
    // Out of range for the width: a parse error, not a silent truncation.
    for (ty, lit) in [("i8", "0x100"), ("i8", "-129"), ("i32", "0x100000000")] {
        let text = format!(
            "fn @main() -> {ty} {{\nentry:\n    %x = iconst.{ty} {lit}\n    return %x\n}}\n"
        );
        assert!(
            parse_and_verify(&text).is_err(),
            "iconst.{ty} {lit} must be rejected"
        );
    }
}

#[test]
fn fconst_f32_and_f64() {
    let f = |ty: &str, lit: &str| {
        run(
            &format!(
                "fn @main() -> {ty} {{\nentry:\n    %x = fconst.{ty} {lit}\n    return %x\n}}\n"
            ),
            &[],
        )
    };
    assert_eq!(f("f64", "0.95"), f64b(0.95));
    assert_eq!(f("f64", "-2.5e-3"), f64b(-2.5e-3));
    assert_eq!(f("f64", "inf"), f64b(f64::INFINITY));
    assert_eq!(f("f64", "-inf"), f64b(f64::NEG_INFINITY));
    assert!(as_f64(f("f64", "nan")).is_nan());
    assert_eq!(f("f32", "0.1"), f32b(0.1f32));
    assert_eq!(f("f32", "-1.5"), f32b(-1.5));
    assert_eq!(f("f32", "inf"), f32b(f32::INFINITY));
    assert!(as_f32(f("f32", "nan")).is_nan());
}

#[test]
fn iadd_isub_imul_wrap_at_each_width() {
    let cases: &[(&str, &str, i64, i64, i64)] = &[
        ("i8", "iadd", 127, 1, -128),
        ("i8", "iadd", -1, -1, -2),
        ("i8", "isub", -128, 1, 127),
        ("i8", "isub", 0, 1, -1),
        ("i8", "imul", 16, 16, 0),
        ("i8", "imul", 100, 3, 44),
        ("i8", "imul", -1, -128, -128),
        ("i32", "iadd", i32::MAX as i64, 1, i32::MIN as i64),
        ("i32", "isub", i32::MIN as i64, 1, i32::MAX as i64),
        ("i32", "imul", 0x10000, 0x10000, 0),
        ("i32", "imul", 0x10001, 0x10001, 0x20001),
        ("i32", "imul", -7, 6, -42),
        ("i64", "iadd", i64::MAX, 1, i64::MIN),
        ("i64", "isub", i64::MIN, 1, i64::MAX),
        ("i64", "imul", 1 << 32, 1 << 32, 0),
        ("i64", "imul", i64::MAX, 2, -2),
        ("i64", "iadd", 40, 2, 42),
        ("ptr", "iadd", -1, 1, 0),
        ("ptr", "isub", 0, 8, -8),
    ];
    for &(ty, op, a, b, want) in cases {
        assert_eq!(bin(ty, op, s(a), s(b)), s(want), "{op}.{ty} {a}, {b}");
    }
}

#[test]
fn ptr_mixes_with_i64_and_keeps_first_operand_type() {
    let text = "
fn @main(%p: ptr, %d: i64) -> ptr {
entry:
    %q = iadd %p, %d
    %r = isub %q, %d
    %s = iadd %r, %d
    return %s
}
";
    assert_eq!(run(text, &[0x1000, 0x18]), 0x1018);
}

#[test]
fn band_bor_bxor() {
    let cases: &[(&str, &str, i64, i64, i64)] = &[
        ("i8", "band", 0xf0u8 as i8 as i64, 0x3c, 0x30),
        ("i8", "bor", 0xf0u8 as i8 as i64, 0x0f, -1),
        ("i8", "bxor", -1, 0x0f, 0xf0u8 as i8 as i64),
        ("i32", "band", -1, 0x1234_5678, 0x1234_5678),
        ("i32", "bor", 0x7fff_0000, 0x0000_ffff, 0x7fff_ffff),
        ("i32", "bxor", 0x5555_5555, -1, 0xaaaa_aaaau32 as i32 as i64),
        ("i64", "band", -8, 0x97, 0x90),
        ("i64", "bor", 0x96, 1, 0x97),
        ("i64", "bxor", 0x97, 1, 0x96),
        ("i64", "bxor", -1, i64::MIN, i64::MAX),
    ];
    for &(ty, op, a, b, want) in cases {
        assert_eq!(bin(ty, op, s(a), s(b)), s(want), "{op}.{ty} {a:#x}, {b:#x}");
    }
}

#[test]
fn shifts_take_the_amount_mod_width_and_respect_sign() {
    let cases: &[(&str, &str, i64, i64, i64)] = &[
        // i8
        ("i8", "ishl", 1, 7, -128),
        ("i8", "ishl", 1, 8, 1),
        ("i8", "ishl", 1, 9, 2),
        ("i8", "ishl", 0x40, 1, -128),
        ("i8", "ushr", -1, 1, 0x7f),
        ("i8", "ushr", -1, 9, 0x7f),
        ("i8", "ushr", -128, 7, 1),
        ("i8", "sshr", -128, 1, -64),
        ("i8", "sshr", -128, 7, -1),
        ("i8", "sshr", -1, 8, -1),
        ("i8", "sshr", 0x40, 6, 1),
        // i32
        ("i32", "ishl", 1, 33, 2),
        ("i32", "ishl", 1, 32, 1),
        ("i32", "ishl", 1, 31, i32::MIN as i64),
        ("i32", "ushr", -1, 1, 0x7fff_ffff),
        ("i32", "ushr", -1, 33, 0x7fff_ffff),
        ("i32", "ushr", -1, 0, -1),
        ("i32", "ushr", i32::MIN as i64, 31, 1),
        ("i32", "sshr", -8, 1, -4),
        ("i32", "sshr", -8, 33, -4),
        ("i32", "sshr", i32::MIN as i64, 31, -1),
        ("i32", "ishl", 3, -1, i32::MIN as i64),
        // i64
        ("i64", "ishl", 1, 65, 2),
        ("i64", "ishl", 1, 64, 1),
        ("i64", "ishl", 1, 63, i64::MIN),
        ("i64", "ishl", 1, -1, i64::MIN),
        ("i64", "ushr", -1, 63, 1),
        ("i64", "ushr", -16, 4, 0x0fff_ffff_ffff_ffff),
        ("i64", "ushr", -16, 68, 0x0fff_ffff_ffff_ffff),
        ("i64", "sshr", -1, 63, -1),
        ("i64", "sshr", -16, 4, -1),
        ("i64", "sshr", i64::MIN, 64, i64::MIN),
    ];
    for &(ty, op, a, b, want) in cases {
        assert_eq!(bin(ty, op, s(a), s(b)), s(want), "{op}.{ty} {a}, {b}");
    }
}

#[test]
fn shift_amount_may_have_another_int_type() {
    let text = "
fn @main(%a: i32, %b: i64) -> i32 {
entry:
    %r = ishl %a, %b
    return %r
}
";
    assert_eq!(run(text, &[1, 33]), 2);
    let text = "
fn @main(%a: i64, %b: i8) -> i64 {
entry:
    %r = ushr %a, %b
    return %r
}
";
    assert_eq!(
        run(text, &[s(-1), s(-1)]),
        1,
        "amount -1 as i8 = 255, mod 64 = 63"
    );
}

#[test]
fn icmp_every_code_signed_vs_unsigned() {
    const CODES: [&str; 10] = [
        "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
    ];
    // (type, a, b, expected results in CODES order)
    let cases: &[(&str, i64, i64, [u64; 10])] = &[
        ("i64", -1, 1, [0, 1, 1, 1, 0, 0, 0, 0, 1, 1]),
        ("i64", 1, 1, [1, 0, 0, 1, 0, 1, 0, 1, 0, 1]),
        ("i64", 2, 1, [0, 1, 0, 0, 1, 1, 0, 0, 1, 1]),
        ("i64", i64::MIN, i64::MAX, [0, 1, 1, 1, 0, 0, 0, 0, 1, 1]),
        ("i32", -1, 1, [0, 1, 1, 1, 0, 0, 0, 0, 1, 1]),
        ("i32", i32::MIN as i64, 0, [0, 1, 1, 1, 0, 0, 0, 0, 1, 1]),
        ("i32", 5, 7, [0, 1, 1, 1, 0, 0, 1, 1, 0, 0]),
        ("i8", -128, 127, [0, 1, 1, 1, 0, 0, 0, 0, 1, 1]),
        ("i8", -1, -1, [1, 0, 0, 1, 0, 1, 0, 1, 0, 1]),
        ("i8", 0, -1, [0, 1, 0, 0, 1, 1, 1, 1, 0, 0]),
        ("ptr", 0x1000, -1, [0, 1, 0, 0, 1, 1, 1, 1, 0, 0]),
    ];
    for &(ty, a, b, want) in cases {
        for (cc, w) in CODES.iter().zip(want) {
            assert_eq!(
                cmp(ty, &format!("icmp.{cc}"), s(a), s(b)),
                w,
                "icmp.{cc} {ty} {a}, {b}"
            );
        }
    }
}

#[test]
fn icmp_ptr_against_i64() {
    let text = "
fn @main(%p: ptr, %x: i64) -> i8 {
entry:
    %c = icmp.ult %p, %x
    return %c
}
";
    assert_eq!(run(text, &[8, 16]), 1);
    assert_eq!(run(text, &[s(-8), 16]), 0);
}

// ---------------------------------------------------------------------------
// Float ops

#[test]
fn float_arithmetic_f64() {
    let cases: &[(&str, f64, f64, f64)] = &[
        ("fadd", 0.1, 0.2, 0.1 + 0.2),
        ("fadd", 1.5, 2.25, 3.75),
        ("fadd", f64::INFINITY, 1.0, f64::INFINITY),
        ("fsub", 1.0, 3.5, -2.5),
        ("fsub", 0.0, 0.0, 0.0),
        ("fmul", 0.95, 0.95, 0.95 * 0.95),
        ("fmul", -2.0, 0.0, -0.0),
        ("fmul", 1e200, 1e200, f64::INFINITY),
        ("fdiv", 1.0, 3.0, 1.0 / 3.0),
        ("fdiv", 1.0, 0.0, f64::INFINITY),
        ("fdiv", -1.0, 0.0, f64::NEG_INFINITY),
        ("fdiv", 1.0, -0.0, f64::NEG_INFINITY),
    ];
    for &(op, a, b, want) in cases {
        assert_eq!(
            bin("f64", op, f64b(a), f64b(b)),
            f64b(want),
            "{op}.f64 {a}, {b}"
        );
    }
    for (op, a, b) in [
        ("fdiv", 0.0, 0.0),
        ("fsub", f64::INFINITY, f64::INFINITY),
        ("fmul", f64::INFINITY, 0.0),
        ("fadd", f64::NAN, 1.0),
    ] {
        assert!(
            as_f64(bin("f64", op, f64b(a), f64b(b))).is_nan(),
            "{op}.f64 {a}, {b}"
        );
    }
}

#[test]
fn float_arithmetic_f32_rounds_to_f32() {
    let cases: &[(&str, f32, f32, f32)] = &[
        ("fadd", 0.1, 0.2, 0.1f32 + 0.2f32),
        ("fadd", 16777216.0, 1.0, 16777216.0),
        ("fsub", 1.0, 3.5, -2.5),
        ("fmul", 0.95, 0.95, 0.95f32 * 0.95f32),
        ("fmul", 1e30, 1e30, f32::INFINITY),
        ("fdiv", 1.0, 3.0, 1.0f32 / 3.0f32),
        ("fdiv", -1.0, 0.0, f32::NEG_INFINITY),
    ];
    for &(op, a, b, want) in cases {
        assert_eq!(
            bin("f32", op, f32b(a), f32b(b)),
            f32b(want),
            "{op}.f32 {a}, {b}"
        );
    }
    assert!(as_f32(bin("f32", "fdiv", f32b(0.0), f32b(0.0))).is_nan());
}

#[test]
fn fmin_fmax_nan_and_signed_zero() {
    for ty in ["f32", "f64"] {
        let enc = |x: f64| if ty == "f32" { f32b(x as f32) } else { f64b(x) };
        let dec = |b: u64| {
            if ty == "f32" {
                as_f32(b) as f64
            } else {
                as_f64(b)
            }
        };
        for op in ["fmin", "fmax"] {
            for (a, b) in [
                (f64::NAN, 1.0),
                (1.0, f64::NAN),
                (f64::NAN, f64::NAN),
                (f64::NAN, f64::INFINITY),
            ] {
                assert!(
                    dec(bin(ty, op, enc(a), enc(b))).is_nan(),
                    "{op}.{ty} {a}, {b} must be NaN"
                );
            }
        }
        assert_eq!(bin(ty, "fmin", enc(1.0), enc(2.0)), enc(1.0));
        assert_eq!(bin(ty, "fmax", enc(1.0), enc(2.0)), enc(2.0));
        assert_eq!(bin(ty, "fmin", enc(-3.0), enc(2.0)), enc(-3.0));
        assert_eq!(
            bin(ty, "fmax", enc(f64::NEG_INFINITY), enc(-1e30)),
            enc(-1e30)
        );
        // -0.0 < +0.0 for fmin/fmax, in either order.
        assert_eq!(
            bin(ty, "fmin", enc(-0.0), enc(0.0)),
            enc(-0.0),
            "fmin.{ty} -0, 0"
        );
        assert_eq!(
            bin(ty, "fmin", enc(0.0), enc(-0.0)),
            enc(-0.0),
            "fmin.{ty} 0, -0"
        );
        assert_eq!(
            bin(ty, "fmax", enc(-0.0), enc(0.0)),
            enc(0.0),
            "fmax.{ty} -0, 0"
        );
        assert_eq!(
            bin(ty, "fmax", enc(0.0), enc(-0.0)),
            enc(0.0),
            "fmax.{ty} 0, -0"
        );
    }
}

#[test]
fn fneg_fabs_fsqrt() {
    assert_eq!(un("f64", "fneg", f64b(0.0)), f64b(-0.0));
    assert_eq!(un("f64", "fneg", f64b(-2.5)), f64b(2.5));
    assert_eq!(
        un("f64", "fneg", f64b(f64::INFINITY)),
        f64b(f64::NEG_INFINITY)
    );
    assert_eq!(un("f64", "fabs", f64b(-0.0)), f64b(0.0));
    assert_eq!(un("f64", "fabs", f64b(-7.25)), f64b(7.25));
    assert_eq!(
        un("f64", "fabs", f64b(f64::NEG_INFINITY)),
        f64b(f64::INFINITY)
    );
    assert_eq!(un("f64", "fsqrt", f64b(2.0)), f64b(2f64.sqrt()));
    assert_eq!(un("f64", "fsqrt", f64b(-0.0)), f64b(-0.0));
    assert_eq!(un("f64", "fsqrt", f64b(f64::INFINITY)), f64b(f64::INFINITY));
    assert!(as_f64(un("f64", "fsqrt", f64b(-1.0))).is_nan());
    assert_eq!(un("f32", "fneg", f32b(0.0)), f32b(-0.0));
    assert_eq!(un("f32", "fneg", f32b(1.5)), f32b(-1.5));
    assert_eq!(un("f32", "fabs", f32b(-3.0)), f32b(3.0));
    assert_eq!(un("f32", "fsqrt", f32b(2.0)), f32b(2f32.sqrt()));
    assert!(as_f32(un("f32", "fsqrt", f32b(-4.0))).is_nan());
    // NaN sign: fneg/fabs touch only the sign bit.
    let neg_nan = un("f64", "fneg", f64b(f64::NAN));
    assert!(as_f64(neg_nan).is_nan() && as_f64(neg_nan).is_sign_negative());
    let abs_nan = un("f64", "fabs", neg_nan);
    assert_eq!(abs_nan, f64b(f64::NAN));
}

#[test]
fn fcmp_every_code_with_nan() {
    const CODES: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];
    let cases: &[(f64, f64, [u64; 6])] = &[
        (1.0, 2.0, [0, 1, 1, 1, 0, 0]),
        (2.0, 2.0, [1, 0, 0, 1, 0, 1]),
        (3.0, 2.0, [0, 1, 0, 0, 1, 1]),
        (-0.0, 0.0, [1, 0, 0, 1, 0, 1]),
        (f64::NEG_INFINITY, f64::INFINITY, [0, 1, 1, 1, 0, 0]),
        (f64::NAN, 1.0, [0, 1, 0, 0, 0, 0]),
        (1.0, f64::NAN, [0, 1, 0, 0, 0, 0]),
        (f64::NAN, f64::NAN, [0, 1, 0, 0, 0, 0]),
        (f64::INFINITY, f64::NAN, [0, 1, 0, 0, 0, 0]),
    ];
    for ty in ["f32", "f64"] {
        let enc = |x: f64| if ty == "f32" { f32b(x as f32) } else { f64b(x) };
        for &(a, b, want) in cases {
            for (cc, w) in CODES.iter().zip(want) {
                assert_eq!(
                    cmp(ty, &format!("fcmp.{cc}"), enc(a), enc(b)),
                    w,
                    "fcmp.{cc} {ty} {a}, {b}"
                );
            }
        }
    }
}

#[test]
fn select_picks_a_when_cond_nonzero() {
    let text = "
fn @main(%c: i64, %a: i64, %b: i64) -> i64 {
entry:
    %r = select %c, %a, %b
    return %r
}
";
    assert_eq!(run(text, &[1, 10, 20]), 10);
    assert_eq!(run(text, &[0, 10, 20]), 20);
    assert_eq!(run(text, &[s(-1), 10, 20]), 10);
    assert_eq!(run(text, &[0x100, 10, 20]), 10, "only zero picks b");
    let text = "
fn @main(%x: f64, %y: f64) -> f64 {
entry:
    %c = fcmp.lt %x, %y
    %r = select %c, %x, %y
    return %r
}
";
    assert_eq!(run(text, &[f64b(1.5), f64b(2.5)]), f64b(1.5));
    assert_eq!(run(text, &[f64b(f64::NAN), f64b(2.5)]), f64b(2.5));
    let text = "
fn @main(%c: i32, %a: f32, %b: f32) -> f32 {
entry:
    %r = select %c, %a, %b
    return %r
}
";
    assert_eq!(
        run(text, &[s(i32::MIN as i64), f32b(1.0), f32b(2.0)]),
        f32b(1.0)
    );
    assert_eq!(run(text, &[0, f32b(1.0), f32b(2.0)]), f32b(2.0));
    let text = "
fn @main(%c: i8, %a: i8, %b: i8) -> i8 {
entry:
    %r = select %c, %a, %b
    return %r
}
";
    assert_eq!(run(text, &[s(-128), s(-5), 7]), s(-5));
}

// ---------------------------------------------------------------------------
// Conversions

#[test]
fn sext_uext_ireduce() {
    let cases: &[(&str, &str, &str, i64, i64)] = &[
        ("i8", "sext.i64", "i64", -1, -1),
        ("i8", "sext.i32", "i32", -128, -128),
        ("i8", "sext.i64", "i64", 127, 127),
        ("i32", "sext.i64", "i64", i32::MIN as i64, i32::MIN as i64),
        ("i8", "uext.i32", "i32", -1, 255),
        ("i8", "uext.i64", "i64", -128, 128),
        ("i32", "uext.i64", "i64", -1, 0xffff_ffff),
        ("i32", "uext.i64", "i64", 5, 5),
        ("i8", "uext.ptr", "ptr", -1, 255),
        ("i64", "ireduce.i32", "i32", 0x12_3456_7890, 0x3456_7890),
        ("i64", "ireduce.i32", "i32", 0xffff_ffff, -1),
        (
            "i64",
            "ireduce.i8",
            "i8",
            0x12_3456_7890,
            0x90u8 as i8 as i64,
        ),
        ("i64", "ireduce.i8", "i8", 0x17f, 127),
        ("i32", "ireduce.i8", "i8", 0xff, -1),
        ("ptr", "ireduce.i32", "i32", 0x1_0000_0010, 16),
    ];
    for &(from, op, to, a, want) in cases {
        assert_eq!(conv(from, op, to, s(a)), s(want), "{op} {from} {a:#x}");
    }
}

#[test]
fn fcvt_from_sint() {
    assert_eq!(conv("i64", "fcvt_from_sint.f64", "f64", s(-3)), f64b(-3.0));
    assert_eq!(conv("i8", "fcvt_from_sint.f32", "f32", s(-1)), f32b(-1.0));
    assert_eq!(
        conv("i8", "fcvt_from_sint.f64", "f64", s(-128)),
        f64b(-128.0)
    );
    assert_eq!(
        conv("i32", "fcvt_from_sint.f64", "f64", s(i32::MIN as i64)),
        f64b(i32::MIN as f64)
    );
    // Rounding to nearest.
    assert_eq!(
        conv("i64", "fcvt_from_sint.f64", "f64", s((1 << 53) + 1)),
        f64b((1u64 << 53) as f64)
    );
    assert_eq!(
        conv("i32", "fcvt_from_sint.f32", "f32", 16_777_217),
        f32b(16_777_216.0)
    );
    assert_eq!(
        conv("i64", "fcvt_from_sint.f32", "f32", s(i64::MAX)),
        f32b(i64::MAX as f32)
    );
    assert_eq!(
        conv("i64", "fcvt_from_sint.f64", "f64", s(i64::MIN)),
        f64b(-(2f64.powi(63)))
    );
}

#[test]
fn fcvt_to_sint_truncates_and_saturates() {
    let to_i32 = |x: f64| conv("f64", "fcvt_to_sint.i32", "i32", f64b(x));
    assert_eq!(to_i32(1e30), s(i32::MAX as i64));
    assert_eq!(to_i32(-1e30), s(i32::MIN as i64));
    assert_eq!(to_i32(f64::NAN), 0);
    assert_eq!(to_i32(f64::INFINITY), s(i32::MAX as i64));
    assert_eq!(to_i32(f64::NEG_INFINITY), s(i32::MIN as i64));
    assert_eq!(to_i32(2.7), 2);
    assert_eq!(to_i32(-2.7), s(-2));
    assert_eq!(to_i32(-0.5), 0);
    assert_eq!(to_i32(2147483647.9), s(i32::MAX as i64));
    let to_i64 = |x: f64| conv("f64", "fcvt_to_sint.i64", "i64", f64b(x));
    assert_eq!(to_i64(1e30), s(i64::MAX));
    assert_eq!(to_i64(-1e30), s(i64::MIN));
    assert_eq!(to_i64(f64::NAN), 0);
    assert_eq!(to_i64(-123456789.99), s(-123456789));
    let to_i8 = |x: f64| conv("f64", "fcvt_to_sint.i8", "i8", f64b(x));
    assert_eq!(to_i8(300.0), 127);
    assert_eq!(to_i8(-300.0), s(-128));
    assert_eq!(to_i8(-5.9), s(-5));
    assert_eq!(to_i8(f64::NAN), 0);
    let f32_to_i32 = |x: f32| conv("f32", "fcvt_to_sint.i32", "i32", f32b(x));
    assert_eq!(f32_to_i32(3e9), s(i32::MAX as i64));
    assert_eq!(f32_to_i32(-3e9), s(i32::MIN as i64));
    assert_eq!(f32_to_i32(f32::NAN), 0);
    assert_eq!(f32_to_i32(-7.5), s(-7));
    assert_eq!(
        conv("f32", "fcvt_to_sint.i64", "i64", f32b(1e30)),
        s(i64::MAX)
    );
}

#[test]
fn fpromote_fdemote() {
    assert_eq!(
        conv("f32", "fpromote.f64", "f64", f32b(0.1)),
        f64b(0.1f32 as f64)
    );
    assert_eq!(conv("f32", "fpromote.f64", "f64", f32b(-0.0)), f64b(-0.0));
    assert_eq!(
        conv("f32", "fpromote.f64", "f64", f32b(f32::NEG_INFINITY)),
        f64b(f64::NEG_INFINITY)
    );
    assert!(as_f64(conv("f32", "fpromote.f64", "f64", f32b(f32::NAN))).is_nan());
    assert_eq!(conv("f64", "fdemote.f32", "f32", f64b(0.1)), f32b(0.1f32));
    assert_eq!(
        conv("f64", "fdemote.f32", "f32", f64b(1e300)),
        f32b(f32::INFINITY)
    );
    assert_eq!(
        conv("f64", "fdemote.f32", "f32", f64b(-1e300)),
        f32b(f32::NEG_INFINITY)
    );
    assert_eq!(conv("f64", "fdemote.f32", "f32", f64b(1e-50)), f32b(0.0));
    assert_eq!(
        conv("f64", "fdemote.f32", "f32", f64b(1.0 + 1e-12)),
        f32b(1.0)
    );
    assert!(as_f32(conv("f64", "fdemote.f32", "f32", f64b(f64::NAN))).is_nan());
}

#[test]
fn bitcast_between_equal_sizes() {
    assert_eq!(
        conv("f64", "bitcast.i64", "i64", f64b(1.0)),
        0x3ff0_0000_0000_0000
    );
    assert_eq!(
        conv("f64", "bitcast.i64", "i64", f64b(-0.0)),
        0x8000_0000_0000_0000
    );
    assert_eq!(
        conv("i64", "bitcast.f64", "f64", 0x4004_0000_0000_0000),
        f64b(2.5)
    );
    assert_eq!(
        conv("f32", "bitcast.i32", "i32", f32b(-1.0)),
        s(0xbf80_0000u32 as i32 as i64)
    );
    assert_eq!(conv("f32", "bitcast.i32", "i32", f32b(1.0)), 0x3f80_0000);
    assert_eq!(
        conv("i32", "bitcast.f32", "f32", s(0xbf80_0000u32 as i32 as i64)),
        f32b(-1.0)
    );
    assert_eq!(conv("i32", "bitcast.f32", "f32", 0x3f80_0000), f32b(1.0));
    assert_eq!(conv("ptr", "bitcast.i64", "i64", 0x1234), 0x1234);
    assert_eq!(conv("i64", "bitcast.ptr", "ptr", s(-16)), s(-16));
    // Round trip preserves a NaN payload.
    let payload = 0x7ff0_0000_dead_beefu64;
    assert_eq!(conv("i64", "bitcast.f64", "f64", payload), payload);
}

// ---------------------------------------------------------------------------
// Memory

const MEM_PROGRAM: &str = "
extern fn @obj_new(i64) -> ptr
extern fn @print_i64(i64)
extern fn @print_f64(f64)

fn @main() -> i64 {
entry:
    %n = iconst.i64 4
    %o = call @obj_new(%n)
    %rc = load.i64 %o
    call @print_i64(%rc)
    %cnt = load.i64 %o, 8
    call @print_i64(%cnt)
    %w = dict_slot.load %o
    %one = iconst.i64 1
    %vals = iadd %w, %one
    %big = iconst.i64 0x1122334455667788
    store %big, %vals
    %l64 = load.i64 %vals
    call @print_i64(%l64)
    %l32 = load.i32 %vals
    %l32x = sext.i64 %l32
    call @print_i64(%l32x)
    %l32b = load.i32 %vals, 4
    %l32bx = sext.i64 %l32b
    call @print_i64(%l32bx)
    %l8 = load.i8 %vals
    %l8x = sext.i64 %l8
    call @print_i64(%l8x)
    %l8b = load.i8 %vals, 7
    %l8bx = sext.i64 %l8b
    call @print_i64(%l8bx)
    %a0 = load_attr %o, 0
    call @print_i64(%a0)
    %m2 = iconst.i32 -2
    store %m2, %vals, 8
    %r1 = load.i32 %vals, 8
    %r1x = sext.i64 %r1
    call @print_i64(%r1x)
    %r1w = load.i64 %vals, 8
    call @print_i64(%r1w)
    %b = iconst.i8 0x96
    store %b, %vals, 16
    %r2 = load.i8 %vals, 16
    %r2x = sext.i64 %r2
    call @print_i64(%r2x)
    %r2w = load.i64 %vals, 16
    call @print_i64(%r2w)
    %f = fconst.f32 1.5
    store %f, %vals, 24
    %r3 = load.f32 %vals, 24
    %r3d = fpromote.f64 %r3
    call @print_f64(%r3d)
    %r3i = load.i32 %vals, 24
    %r3ix = sext.i64 %r3i
    call @print_i64(%r3ix)
    %d = fconst.f64 -2.25
    store %d, %vals, 16
    %r4 = load.f64 %vals, 16
    call @print_f64(%r4)
    %a2 = load_attr %o, 2
    call @print_i64(%a2)
    store %o, %vals, 8
    %r5 = load.ptr %vals, 8
    %same = icmp.eq %r5, %o
    %samex = uext.i64 %same
    call @print_i64(%samex)
    %p = load.ptr %o, 8
    return %p
}
";

#[test]
#[cfg(target_endian = "little")]
fn load_store_every_width_on_a_model_heap_object() {
    let (r, rt) = exec_text(MEM_PROGRAM, &[]);
    assert_eq!(r, Ok(Some(4)), "load.ptr of the attribute count word");
    let out = rt.take_output();
    let want = [
        "1".to_string(),                           // refcount at obj+0
        "4".to_string(),                           // attribute count at obj+8
        0x1122334455667788i64.to_string(),         // load.i64
        0x55667788i64.to_string(),                 // load.i32 (little endian)
        0x11223344i64.to_string(),                 // load.i32 +4
        (-120i64).to_string(),                     // load.i8 0x88
        "17".to_string(),                          // load.i8 +7 = 0x11
        0x1122334455667788i64.to_string(),         // load_attr 0 sees the raw store
        "-2".to_string(),                          // load.i32
        0xffff_fffei64.to_string(),                // 4-byte store left the high half 0
        "-106".to_string(),                        // load.i8 0x96
        "150".to_string(),                         // 1-byte store, rest 0
        "1.5".to_string(),                         // f32 round trip
        0x3fc0_0000i64.to_string(),                // its bits
        "-2.25".to_string(),                       // f64 round trip
        ((-2.25f64).to_bits() as i64).to_string(), // load_attr sees the bits
        "1".to_string(),                           // ptr round trip
    ];
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn wild_and_out_of_bounds_accesses_fault() {
    let wild_load = "
fn @main() -> i64 {
entry:
    %p = iconst.ptr 16
    %v = load.i64 %p
    return %v
}
";
    match exec_text(wild_load, &[]).0 {
        Err(InterpError::Fault { loc, msg, .. }) => {
            assert_eq!(loc.line, 5, "fault at the load");
            assert!(msg.contains("0x10"), "{msg}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    let wild_store = "
fn @main() {
entry:
    %p = iconst.ptr 16
    %v = iconst.i8 1
    store %v, %p
    return
}
";
    assert!(matches!(
        exec_text(wild_store, &[]).0,
        Err(InterpError::Fault { .. })
    ));
    // Past the end of a 3-attribute values array (24 bytes), and straddling
    // its end (every block starts 16-aligned, so nothing else lives there).
    for off in ["24", "20"] {
        let text = format!(
            "
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {{
entry:
    %n = iconst.i64 3
    %o = call @obj_new(%n)
    %w = dict_slot.load %o
    %one = iconst.i64 1
    %vals = iadd %w, %one
    %v = load.i64 %vals, {off}
    return %v
}}
"
        );
        assert!(
            matches!(exec_text(&text, &[]).0, Err(InterpError::Fault { .. })),
            "load at values+{off}"
        );
    }
    // After obj_free, the object's memory is held in quarantine, unchanged
    // (word 0 is the refcount 1): an uninstrumented load reads it, as
    // native code would. Once out of quarantine (quarantine_mb=0) it is gone.
    let uaf = "
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    call @obj_free(%o)
    %v = load.i64 %o
    return %v
}
";
    assert_eq!(run(uaf, &[]), 1);
    let m = module(uaf);
    let rt = runtime(&m, Mode::Recover);
    rt.configure(&guardlift_runtime::Options::parse("quarantine_mb=0").unwrap())
        .unwrap();
    let r = Interpreter::new(&m, rt, &HashMap::new())
        .expect("link")
        .call("main", &[]);
    assert!(matches!(r, Err(InterpError::Fault { .. })), "{r:?}");
}

// ---------------------------------------------------------------------------
// Calls and control flow

/// From the corpus every engine runs (`tests/programs/`).
const FACT: &str = include_str!("../../tests/programs/call_factorial.glir");

#[test]
fn recursion_factorial() {
    let fact = |n: i64| (1..=n).fold(1i64, |a, k| a.wrapping_mul(k));
    for n in [0, 1, 5, 10, 20, 21, 25] {
        assert_eq!(run(FACT, &[s(n)]), s(fact(n)), "fact({n})");
    }
    assert_eq!(run(FACT, &[10]), 3_628_800);
}

/// From the corpus: `@main(n)` is `10 * is_even(n) + is_odd(n)`.
const EVEN_ODD: &str = include_str!("../../tests/programs/call_even_odd.glir");

#[test]
fn mutual_recursion() {
    assert_eq!(run(EVEN_ODD, &[0]), 10);
    assert_eq!(run(EVEN_ODD, &[7]), 1);
    assert_eq!(run(EVEN_ODD, &[10]), 10);
    assert_eq!(
        run(EVEN_ODD, &[20_001]),
        1,
        "deep but within the default limit"
    );
}

#[test]
fn call_depth_limit_is_a_fault_not_a_stack_overflow() {
    let m = module(FACT);
    let rt = runtime(&m, Mode::Recover);
    let mut it = Interpreter::new(&m, rt, &HashMap::new()).unwrap();
    it.set_max_depth(50);
    assert_eq!(
        it.call("main", &[40]).unwrap(),
        Some(s((1..=40).fold(1i64, |a, k| a.wrapping_mul(k))))
    );
    match it.call("main", &[100]) {
        Err(InterpError::StackOverflow { limit, .. }) => assert_eq!(limit, 50),
        other => panic!("expected a stack overflow, got {other:?}"),
    }
    // The interpreter is still usable afterwards.
    assert_eq!(it.call("main", &[5]).unwrap(), Some(120));
    // With the default limit, runaway recursion is a fault too.
    let runaway = "
fn @down(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %m = iadd %n, %one
    %r = call @down(%m)
    return %r
}
fn @main() -> i64 {
entry:
    %z = iconst.i64 0
    %r = call @down(%z)
    return %r
}
";
    assert!(matches!(
        exec_text(runaway, &[]).0,
        Err(InterpError::StackOverflow { .. })
    ));
}

#[test]
fn call_errors() {
    let m = module(FACT);
    let rt = runtime(&m, Mode::Recover);
    let it = Interpreter::new(&m, rt, &HashMap::new()).unwrap();
    assert!(matches!(
        it.call("nope", &[]),
        Err(InterpError::NoSuchFunction(_))
    ));
    assert!(matches!(
        it.call("main", &[]),
        Err(InterpError::ArgCount {
            want: 1,
            got: 0,
            ..
        })
    ));
    assert_eq!(
        it.call("fact", &[6]).unwrap(),
        Some(720),
        "any function can be the entry"
    );
    let unlinked = module("extern fn @mystery(i64) -> i64\nfn @main() {\nentry:\n    return\n}\n");
    let rt = runtime(&unlinked, Mode::Recover);
    assert!(matches!(
        Interpreter::new(&unlinked, rt, &HashMap::new()),
        Err(InterpError::Link(_))
    ));
}

#[test]
fn void_functions_and_i8_returns() {
    let text = "
extern fn @print_i64(i64)
fn @say(%x: i64) {
entry:
    call @print_i64(%x)
    return
}
fn @flag(%x: i64) -> i8 {
entry:
    %z = iconst.i64 0
    %c = icmp.slt %x, %z
    return %c
}
fn @main(%x: i64) -> i8 {
entry:
    call @say(%x)
    %r = call @flag(%x)
    return %r
}
";
    let (r, rt) = exec_text(text, &[s(-3)]);
    assert_eq!(r, Ok(Some(1)));
    assert_eq!(rt.take_output(), "-3\n");
    let (r, _) = exec_text(text, &[3]);
    assert_eq!(r, Ok(Some(0)));
    let void = "fn @main() {\nentry:\n    return\n}\n";
    assert_eq!(exec_text(void, &[]).0, Ok(None));
}

#[test]
fn loops_with_block_params() {
    let sum = "
fn @main(%n: i64) -> i64 {
entry:
    %z = iconst.i64 0
    jump loop(%z, %z)
loop(%i: i64, %acc: i64):
    %done = icmp.sge %i, %n
    brif %done, exit(%acc), body
body:
    %one = iconst.i64 1
    %i1 = iadd %i, %one
    %acc1 = iadd %acc, %i1
    jump loop(%i1, %acc1)
exit(%r: i64):
    return %r
}
";
    assert_eq!(run(sum, &[0]), 0);
    assert_eq!(run(sum, &[10]), 55);
    assert_eq!(run(sum, &[100_000]), 5_000_050_000);
    // Block arguments are assigned in parallel: jump loop(%y, %x) swaps.
    let swap = "
fn @main(%n: i64) -> i64 {
entry:
    %a = iconst.i64 1
    %b = iconst.i64 2
    %z = iconst.i64 0
    jump loop(%a, %b, %z)
loop(%x: i64, %y: i64, %k: i64):
    %done = icmp.sge %k, %n
    brif %done, exit, body
body:
    %one = iconst.i64 1
    %k1 = iadd %k, %one
    jump loop(%y, %x, %k1)
exit:
    %ten = iconst.i64 10
    %t = imul %x, %ten
    %r = iadd %t, %y
    return %r
}
";
    assert_eq!(run(swap, &[0]), 12);
    assert_eq!(run(swap, &[3]), 21);
    assert_eq!(run(swap, &[4]), 12);
    // Fibonacci: (a, b) -> (b, a + b), and a brif with i32/ i64 conditions.
    let fib = "
fn @main(%n: i32) -> i64 {
entry:
    %a = iconst.i64 0
    %b = iconst.i64 1
    jump loop(%a, %b, %n)
loop(%x: i64, %y: i64, %k: i32):
    brif %k, body, exit
body:
    %s = iadd %x, %y
    %one = iconst.i32 1
    %k1 = isub %k, %one
    jump loop(%y, %s, %k1)
exit:
    return %x
}
";
    assert_eq!(run(fib, &[10]), 55);
    assert_eq!(run(fib, &[90]), 2_880_067_194_370_816_120);
}

#[test]
fn brif_condition_is_any_nonzero_bits() {
    let text = "
fn @main(%c: i64) -> i64 {
entry:
    brif %c, yes(%c), no
yes(%v: i64):
    %one = iconst.i64 1
    return %one
no:
    %z = iconst.i64 0
    return %z
}
";
    assert_eq!(run(text, &[0]), 0);
    assert_eq!(run(text, &[1]), 1);
    assert_eq!(run(text, &[0x100]), 1);
    assert_eq!(run(text, &[s(i64::MIN)]), 1);
}

// ---------------------------------------------------------------------------
// Object model

const LAYOUT_PROGRAM: &str = "
layout LAYOUT
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)
extern fn @obj_free(ptr)
extern fn @print_i64(i64)

fn @main() -> i64 {
entry:
    %n = iconst.i64 4
    %o = call @obj_new(%n)
    %w = dict_slot.load %o
    %raw = load.i64 %o, OFFSET
    %same = icmp.eq %w, %raw
    %samex = uext.i64 %same
    call @print_i64(%samex)
    %seven = iconst.i64 7
    %tag = band %w, %seven
    call @print_i64(%tag)
    %a = iconst.i64 42
    store_attr %o, 1, %a
    %b = iconst.i64 -9
    store_attr %o, 3, %b
    %x1 = load_attr %o, 1
    call @print_i64(%x1)
    %x3 = load_attr %o, 3
    call @print_i64(%x3)
    %x0 = load_attr %o, 0
    call @print_i64(%x0)
    call @obj_dictify(%o)
    %w2 = dict_slot.load %o
    %tag2 = band %w2, %seven
    call @print_i64(%tag2)
    %nz = iconst.i64 0
    %isdict = icmp.ne %w2, %nz
    %isdictx = uext.i64 %isdict
    call @print_i64(%isdictx)
    %y1 = load_attr %o, 1
    call @print_i64(%y1)
    %c = iconst.i64 100
    store_attr %o, 3, %c
    store_attr %o, 9, %c
    %y3 = load_attr %o, 3
    call @print_i64(%y3)
    %y9 = load_attr %o, 9
    call @print_i64(%y9)
    %y7 = load_attr %o, 7
    call @print_i64(%y7)
    %r = iadd %y1, %y3
    call @obj_free(%o)
    return %r
}
";

fn layout_program(layout: &str, offset: i32) -> String {
    LAYOUT_PROGRAM
        .replace("LAYOUT", layout)
        .replace("OFFSET", &offset.to_string())
}

#[test]
fn attributes_agree_across_layouts_in_values_and_dict_mode() {
    let want = "1\n7\n42\n-9\n0\n0\n1\n42\n100\n100\n0\n";
    for (name, layout, off) in [
        ("cpython312", DictLayout::Cpython312, -24),
        ("phoenix", DictLayout::Phoenix, 0x18),
        ("dict_slot_offset = -32", DictLayout::Custom(-32), -32),
        ("dict_slot_offset = 64", DictLayout::Custom(64), 64),
    ] {
        let text = layout_program(name, off);
        let m = module(&text);
        assert_eq!(m.layout, layout, "{name}");
        assert_eq!(m.layout.dict_slot_offset(), off);
        let (r, rt) = exec(&m, Mode::Recover, &[]);
        assert_eq!(r, Ok(Some(142)), "{name}");
        assert_eq!(rt.take_output(), want, "{name}");
        assert_eq!(rt.take_host_fault(), None, "{name}");
        assert!(rt.take_reports().is_empty());
        assert_eq!(
            rt.with_heap(|h| h.live_objects()),
            0,
            "{name}: obj_free freed it"
        );
        // Instrumented with every check: same results, no reports.
        let (r, rt) = exec_guarded(&text, CheckSet::ALL, Mode::Recover, &[]);
        assert_eq!(r, Ok(Some(142)), "{name} instrumented");
        assert_eq!(rt.take_output(), want, "{name} instrumented");
        assert!(rt.take_reports().is_empty(), "{name} instrumented");
    }
}

#[test]
fn layout_constants_from_the_interpreters_side() {
    // Default layout is cpython312: the word is at obj - 24.
    let text = "
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %n = iconst.i64 3
    %o = call @obj_new(%n)
    %w = dict_slot.load %o
    %raw = load.i64 %o, -24
    %d = isub %w, %raw
    %rc = load.i64 %o, 0
    %cnt = load.i64 %o, 8
    %seven = iconst.i64 7
    %tag = band %w, %seven
    %t10 = iconst.i64 10
    %x = imul %tag, %t10
    %y = iadd %x, %cnt
    %t100 = iconst.i64 100
    %z = imul %rc, %t100
    %r0 = iadd %y, %z
    %r = iadd %r0, %d
    return %r
}
";
    let m = module(text);
    assert_eq!(m.layout, DictLayout::Cpython312);
    // refcount 1 * 100 + tag 7 * 10 + count 3 + (word - raw = 0)
    assert_eq!(run(text, &[]), 173);
    let phoenix = format!("layout phoenix\n{}", text.replace("-24", "0x18"));
    assert_eq!(module(&phoenix).layout, DictLayout::Phoenix);
    assert_eq!(run(&phoenix, &[]), 173);
    assert_eq!(DictLayout::Phoenix.slot_addr(0x1000), 0x1018);
    assert_eq!(DictLayout::Cpython312.slot_addr(0x1000), 0x1000 - 24);
    assert_eq!(layout::TAG_MASK, 0b111);
    assert_eq!(adstack::buffer_bytes(AdElem::F64, 32), 8 + 32 * 16);
    assert_eq!(adstack::buffer_bytes(AdElem::F32, 32), 8 + 32 * 8);
    assert_eq!(adstack::buffer_bytes(AdElem::I64, 1), 8 + 16);
    assert_eq!(adstack::ADSTACK_HEADER_BYTES, 8);
}

#[test]
fn dict_slot_load_and_store() {
    let text = "
extern fn @obj_new(i64) -> ptr
extern fn @print_i64(i64)
fn @main() -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    %w = dict_slot.load %o
    %five = iconst.i64 5
    store_attr %o, 1, %five
    ; empty the slot: word 0 = no values, no dict
    %z = iconst.i64 0
    dict_slot.store %o, %z
    %w0 = dict_slot.load %o
    call @print_i64(%w0)
    %e = load_attr %o, 1
    call @print_i64(%e)
    ; put the original word back: the values array is still there
    dict_slot.store %o, %w
    %back = load_attr %o, 1
    call @print_i64(%back)
    ; empty again, then a store_attr makes a dict
    dict_slot.store %o, %z
    %six = iconst.i64 6
    store_attr %o, 0, %six
    %wd = dict_slot.load %o
    %seven = iconst.i64 7
    %tag = band %wd, %seven
    call @print_i64(%tag)
    %nonzero = icmp.ne %wd, %z
    %nzx = uext.i64 %nonzero
    call @print_i64(%nzx)
    %six2 = load_attr %o, 0
    return %six2
}
";
    let (r, rt) = exec_text(text, &[]);
    assert_eq!(r, Ok(Some(6)));
    assert_eq!(rt.take_output(), "0\n0\n5\n0\n1\n");
    assert_eq!(rt.take_host_fault(), None);
}

#[test]
fn host_fault_when_a_corrupted_word_reaches_the_slow_path() {
    let text = "
layout phoenix
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    call @fault_clear_lsb(%o)
    %w = dict_slot.load %o
    %v = iconst.i64 3
    store_attr %o, 0, %v
    %seven = iconst.i64 7
    %tag = band %w, %seven
    return %tag
}
";
    let (r, rt) = exec_text(text, &[]);
    assert_eq!(r, Ok(Some(6)), "the flipped word has low bits 0b110");
    let f = rt.take_host_fault().expect("a host fault");
    assert!(f.to_string().contains("corrupted"), "{f}");
    assert_eq!(f.func, "store_attr_slow");
    assert!(
        rt.take_reports().is_empty(),
        "uninstrumented: nothing is reported"
    );
    assert_eq!(rt.take_host_fault(), None, "taken");
}

// ---------------------------------------------------------------------------
// Adstack

#[test]
fn adstack_f64_every_op() {
    let text = "
extern fn @print_f64(f64)
extern fn @print_i64(i64)
fn @main() -> f64 {
entry:
    %s = adstack.alloc.f64 8
    jump go(%s)
go(%t: adstack.f64):
    %n0 = adstack.len %t
    call @print_i64(%n0)
    %a = fconst.f64 1.5
    adstack.push %t, %a
    %b = fconst.f64 2.5
    adstack.push %t, %b
    %n2 = adstack.len %t
    call @print_i64(%n2)
    %top = adstack.top %t
    call @print_f64(%top)
    %adj0 = adstack.top_adj %t
    call @print_f64(%adj0)
    %d1 = fconst.f64 0.25
    adstack.acc_adj %t, %d1
    %d2 = fconst.f64 0.5
    adstack.acc_adj %t, %d2
    %adj1 = adstack.top_adj %t
    call @print_f64(%adj1)
    adstack.pop %t
    %n1 = adstack.len %t
    call @print_i64(%n1)
    %top2 = adstack.top %t
    call @print_f64(%top2)
    %adj2 = adstack.top_adj %t
    call @print_f64(%adj2)
    ; a fresh push starts with a zero adjoint, even over a used entry
    %c = fconst.f64 9.0
    adstack.push %t, %c
    %adj3 = adstack.top_adj %t
    call @print_f64(%adj3)
    %top3 = adstack.top %t
    return %top3
}
";
    let (r, rt) = exec_text(text, &[]);
    assert_eq!(r, Ok(Some(f64b(9.0))));
    assert_eq!(rt.take_output(), "0\n2\n2.5\n0.0\n0.75\n1\n1.5\n0.0\n0.0\n");
}

#[test]
fn adstack_f32_every_op() {
    let text = "
extern fn @print_f64(f64)
extern fn @print_i64(i64)
fn @main(%x: f32) -> f32 {
entry:
    %s = adstack.alloc.f32 4
    adstack.push %s, %x
    %two = fconst.f32 2.0
    %y = fmul %x, %two
    adstack.push %s, %y
    %n = adstack.len %s
    call @print_i64(%n)
    %t = adstack.top %s
    %td = fpromote.f64 %t
    call @print_f64(%td)
    %d = fconst.f32 0.1
    adstack.acc_adj %s, %d
    adstack.acc_adj %s, %d
    %adj = adstack.top_adj %s
    %adjd = fpromote.f64 %adj
    call @print_f64(%adjd)
    adstack.pop %s
    %t2 = adstack.top %s
    %adj2 = adstack.top_adj %s
    %r = fadd %t2, %adj2
    return %r
}
";
    let (r, rt) = exec_text(text, &[f32b(1.25)]);
    assert_eq!(r, Ok(Some(f32b(1.25))));
    let sum = 0.1f32 + 0.1f32;
    assert_eq!(rt.take_output(), format!("2\n2.5\n{:?}\n", sum as f64));
}

#[test]
fn adstack_i64_every_op_and_realloc_resets() {
    let text = "
extern fn @print_i64(i64)
fn @main() -> i64 {
entry:
    %z = iconst.i64 0
    jump round(%z)
round(%k: i64):
    %s = adstack.alloc.i64 4
    %n0 = adstack.len %s
    call @print_i64(%n0)
    %big = iconst.i64 0x7fffffffffffffff
    adstack.push %s, %k
    adstack.push %s, %big
    %one = iconst.i64 1
    adstack.acc_adj %s, %big
    adstack.acc_adj %s, %one
    %adj = adstack.top_adj %s
    call @print_i64(%adj)
    %top = adstack.top %s
    call @print_i64(%top)
    adstack.pop %s
    %under = adstack.top %s
    call @print_i64(%under)
    %n = adstack.len %s
    call @print_i64(%n)
    %k1 = iadd %k, %one
    %two = iconst.i64 2
    %more = icmp.slt %k1, %two
    brif %more, round(%k1), done
done:
    return %k1
}
";
    let (r, rt) = exec_text(text, &[]);
    assert_eq!(r, Ok(Some(2)));
    let min = i64::MIN.to_string();
    let max = i64::MAX.to_string();
    assert_eq!(
        rt.take_output(),
        format!("0\n{min}\n{max}\n0\n1\n0\n{min}\n{max}\n1\n1\n"),
        "acc_adj wraps; re-running the alloc empties the stack"
    );
}

#[test]
fn adstack_handle_through_block_params_and_fill_to_capacity() {
    let text = "
fn @main(%n: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 32
    %z = iconst.i64 0
    jump fill(%s, %z)
fill(%st: adstack.i64, %i: i64):
    %done = icmp.sge %i, %n
    brif %done, drain(%st, %z), body(%st, %i)
body(%b: adstack.i64, %j: i64):
    adstack.push %b, %j
    %one = iconst.i64 1
    %j1 = iadd %j, %one
    jump fill(%b, %j1)
drain(%d: adstack.i64, %acc: i64):
    %len = adstack.len %d
    %empty = icmp.eq %len, %z
    brif %empty, exit(%acc), pop(%d, %acc)
pop(%p: adstack.i64, %a: i64):
    %v = adstack.top %p
    %ten = iconst.i64 10
    %a10 = imul %a, %ten
    %a1 = iadd %a10, %v
    adstack.pop %p
    jump drain(%p, %a1)
exit(%r: i64):
    return %r
}
";
    assert_eq!(run(text, &[4]), 3210, "LIFO order");
    assert_eq!(run(text, &[0]), 0);
    assert_eq!(
        run(text, &[32]),
        (0..32i64)
            .rev()
            .fold(0i64, |a, v| a.wrapping_mul(10).wrapping_add(v)) as u64
    );
    // Uninstrumented overflow is undefined: the interpreter refuses it.
    assert!(matches!(
        exec_text(text, &[33]).0,
        Err(InterpError::Fault { .. })
    ));
}

// ---------------------------------------------------------------------------
// Host functions

#[test]
fn print_output_is_captured() {
    let text = "
extern fn @print_i64(i64)
extern fn @print_f64(f64)
fn @main() {
entry:
    %a = iconst.i64 -5
    call @print_i64(%a)
    %b = iconst.i64 0x7fffffffffffffff
    call @print_i64(%b)
    %c = fconst.f64 2.5
    call @print_f64(%c)
    %d = fconst.f64 nan
    call @print_f64(%d)
    %e = fconst.f64 inf
    call @print_f64(%e)
    %f = fconst.f64 -inf
    call @print_f64(%f)
    %g = fconst.f64 0.1
    %h = fconst.f64 0.2
    %i = fadd %g, %h
    call @print_f64(%i)
    %j = fconst.f64 -0.0
    call @print_f64(%j)
    %k = fconst.f64 1.0
    call @print_f64(%k)
    return
}
";
    let out = run_output(text, &[]);
    assert_eq!(
        out,
        "-5\n9223372036854775807\n2.5\nnan\ninf\n-inf\n0.30000000000000004\n-0.0\n1.0\n"
    );
}

#[test]
fn math_builtins() {
    let text = "
extern fn @sin(f64) -> f64
extern fn @cos(f64) -> f64
extern fn @exp(f64) -> f64
extern fn @log(f64) -> f64
fn @main(%which: i64, %x: f64) -> f64 {
entry:
    %z = iconst.i64 0
    %is0 = icmp.eq %which, %z
    brif %is0, s, not0
s:
    %rs = call @sin(%x)
    return %rs
not0:
    %one = iconst.i64 1
    %is1 = icmp.eq %which, %one
    brif %is1, c, not1
c:
    %rc = call @cos(%x)
    return %rc
not1:
    %two = iconst.i64 2
    %is2 = icmp.eq %which, %two
    brif %is2, e, l
e:
    %re = call @exp(%x)
    return %re
l:
    %rl = call @log(%x)
    return %rl
}
";
    for x in [0.5, 0.0, -1.25, 3.0] {
        assert_eq!(run(text, &[0, f64b(x)]), f64b(x.sin()), "sin {x}");
        assert_eq!(run(text, &[1, f64b(x)]), f64b(x.cos()), "cos {x}");
        assert_eq!(run(text, &[2, f64b(x)]), f64b(x.exp()), "exp {x}");
    }
    assert_eq!(run(text, &[0, f64b(0.0)]), f64b(0.0));
    assert_eq!(run(text, &[1, f64b(0.0)]), f64b(1.0));
    assert_eq!(run(text, &[2, f64b(0.0)]), f64b(1.0));
    assert_eq!(run(text, &[3, f64b(1.0)]), f64b(0.0));
    assert_eq!(run(text, &[3, f64b(2.0)]), f64b(2f64.ln()));
    assert_eq!(run(text, &[3, f64b(0.0)]), f64b(f64::NEG_INFINITY));
    assert!(as_f64(run(text, &[3, f64b(-1.0)])).is_nan());
}

#[test]
fn embedder_host_functions() {
    let text = "
extern fn @twice(i64) -> i64
fn @main(%x: i64) -> i64 {
entry:
    %r = call @twice(%x)
    return %r
}
";
    let m = module(text);
    let rt = runtime(&m, Mode::Recover);
    let mut hosts: HashMap<String, guardlift_interp::HostFn> = HashMap::new();
    hosts.insert("twice".into(), Arc::new(|a: &[u64]| a[0].wrapping_mul(2)));
    let it = Interpreter::new(&m, rt, &hosts).unwrap();
    assert_eq!(it.call("main", &[21]).unwrap(), Some(42));
}

// ---------------------------------------------------------------------------
// Guards: dict

/// `@make` builds the object; `@main(%o)` does the guarded work; `@word(%o)`
/// and `@attr0(%o)` read back without any guard (they are excluded by hand).
const DICT_BASE: &str = "
layout phoenix
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)

fn @make() -> ptr {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    %seven = iconst.i64 7
    store_attr %o, 0, %seven
    return %o
}
";

/// Instruments only `@main`'s text by building the module from two parts:
/// guards are inserted by the pass, then helper functions are appended
/// uninstrumented (a second module run against the same runtime).
struct TwoPart {
    rt: Arc<Runtime>,
    obj: u64,
}

const READBACK: &str = "
layout phoenix
fn @word(%o: ptr) -> i64 {
entry:
    %w = dict_slot.load %o
    return %w
}
fn @attr0(%o: ptr) -> i64 {
entry:
    %v = load_attr %o, 0
    return %v
}
";

impl TwoPart {
    fn new(mode: Mode) -> TwoPart {
        let m = module(DICT_BASE);
        let rt = runtime(&m, mode);
        let obj = Interpreter::new(&m, rt.clone(), &HashMap::new())
            .unwrap()
            .call("make", &[])
            .unwrap()
            .unwrap();
        TwoPart { rt, obj }
    }
    fn run_main(&self, main_text: &str, checks: CheckSet) -> RunResult {
        let m = instrument(&module(main_text), checks);
        Interpreter::new(&m, self.rt.clone(), &HashMap::new())
            .unwrap()
            .call("main", &[self.obj])
    }
    fn run_main_plain(&self, main_text: &str) -> RunResult {
        let m = module(main_text);
        Interpreter::new(&m, self.rt.clone(), &HashMap::new())
            .unwrap()
            .call("main", &[self.obj])
    }
    fn readback(&self, f: &str) -> u64 {
        let m = module(READBACK);
        Interpreter::new(&m, self.rt.clone(), &HashMap::new())
            .unwrap()
            .call(f, &[self.obj])
            .unwrap()
            .unwrap()
    }
}

#[test]
fn guard_dict_slot_store_of_a_bad_word() {
    let main = "
layout phoenix
fn @main(%o: ptr) {
entry:
    %bad = iconst.i64 0x96
    dict_slot.store %o, %bad
    return
}
";
    let t = TwoPart::new(Mode::Recover);
    let before = t.readback("word");
    assert_eq!(before & 7, 7);
    assert_eq!(t.run_main(main, DICT), Ok(None));
    assert_eq!(t.readback("word"), before, "slot unchanged");
    assert_eq!(t.readback("attr0"), 7);
    let r = only_report(&t.rt);
    assert_site(
        &r,
        ReportKind::DictSlotTag,
        "main",
        line_of(main, "dict_slot.store"),
        "dict_slot.store",
    );
    assert_eq!(r.count, 1);
    assert_eq!(
        r.observed,
        Observed::Dict {
            object: t.obj,
            value: 0x96
        }
    );
    assert_eq!(t.rt.take_host_fault(), None);

    // A valid word (0 or a 0b111 word) is stored without a report.
    let fine = "
layout phoenix
fn @main(%o: ptr) {
entry:
    %w = dict_slot.load %o
    dict_slot.store %o, %w
    return
}
";
    assert_eq!(t.run_main(fine, CheckSet::ALL), Ok(None));
    assert!(t.rt.take_reports().is_empty());

    // Uninstrumented, the bad word is written.
    assert_eq!(t.run_main_plain(main), Ok(None));
    assert_eq!(t.readback("word"), 0x96);
    assert!(t.rt.take_reports().is_empty());
}

#[test]
fn guard_dict_slot_store_by_hand_only_guards_that_op() {
    let text = "
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    %w = dict_slot.load %o
    %bad = iconst.i64 0x96
    guard.dict_slot.store %o, %bad
    %w2 = dict_slot.load %o
    %d = isub %w2, %w
    return %d
}
";
    let m = module(text);
    assert!(m.is_instrumented());
    let (r, rt) = exec(&m, Mode::Recover, &[]);
    assert_eq!(
        r,
        Ok(Some(0)),
        "skipped store, unguarded reload sees the original word"
    );
    let rep = only_report(&rt);
    assert_site(
        &rep,
        ReportKind::DictSlotTag,
        "main",
        line_of(text, "guard.dict_slot.store"),
        "dict_slot.store",
    );
    match rep.observed {
        Observed::Dict { value, .. } => assert_eq!(value, 0x96),
        o => panic!("{o:?}"),
    }
}

#[test]
fn guard_dict_slot_load_of_a_bad_word() {
    let main = "
layout phoenix
extern fn @fault_clear_lsb(ptr)
fn @main(%o: ptr) -> i64 {
entry:
    call @fault_clear_lsb(%o)
    %w = dict_slot.load %o
    return %w
}
";
    let t = TwoPart::new(Mode::Recover);
    let good = t.readback("word");
    let r = t.run_main(main, DICT).unwrap().unwrap();
    assert_eq!(r, good & !1, "dict_slot.load returns the word as read");
    assert_eq!(r & 7, 0b110);
    let rep = only_report(&t.rt);
    assert_site(
        &rep,
        ReportKind::DictSlotTag,
        "main",
        line_of(main, "dict_slot.load"),
        "dict_slot.load",
    );
    assert_eq!(
        rep.observed,
        Observed::Dict {
            object: t.obj,
            value: good & !1
        }
    );
    assert_eq!(rep.count, 1);
    assert_eq!(t.rt.take_host_fault(), None);
}

#[test]
fn guard_load_attr_on_a_bad_word_returns_zero_without_slow_path() {
    let main = "
layout phoenix
extern fn @fault_clear_lsb(ptr)
fn @main(%o: ptr) -> i64 {
entry:
    call @fault_clear_lsb(%o)
    %v = load_attr %o, 0
    return %v
}
";
    let t = TwoPart::new(Mode::Recover);
    let good = t.readback("word");
    assert_eq!(t.readback("attr0"), 7);
    assert_eq!(t.run_main(main, DICT), Ok(Some(0)));
    let rep = only_report(&t.rt);
    assert_site(
        &rep,
        ReportKind::DictSlotTag,
        "main",
        line_of(main, "load_attr"),
        "load_attr",
    );
    assert_eq!(
        rep.observed,
        Observed::Dict {
            object: t.obj,
            value: good - 1
        }
    );
    assert_eq!(t.rt.take_host_fault(), None, "the slow path was not called");

    // Uninstrumented: the corrupted word reaches the host's slow path.
    let t = TwoPart::new(Mode::Recover);
    assert_eq!(t.run_main_plain(main), Ok(Some(0)));
    let f = t.rt.take_host_fault().expect("host fault");
    assert_eq!(f.func, "load_attr_slow");
    assert!(f.msg.contains("corrupted"), "{f}");
    assert!(t.rt.take_reports().is_empty());
}

#[test]
fn guard_store_attr_on_a_bad_word_is_skipped_and_counted() {
    let main = "
layout phoenix
extern fn @fault_clear_lsb(ptr)
fn @main(%o: ptr) -> i64 {
entry:
    call @fault_clear_lsb(%o)
    %z = iconst.i64 0
    jump loop(%z)
loop(%i: i64):
    %five = iconst.i64 5
    %done = icmp.sge %i, %five
    brif %done, fix, body
body:
    %v = iconst.i64 99
    store_attr %o, 0, %v
    %one = iconst.i64 1
    %i1 = iadd %i, %one
    jump loop(%i1)
fix:
    %w = dict_slot.load %o
    %lsb = iconst.i64 1
    %w1 = bor %w, %lsb
    dict_slot.store %o, %w1
    %r = load_attr %o, 0
    return %r
}
";
    let t = TwoPart::new(Mode::Recover);
    let good = t.readback("word");
    assert_eq!(
        t.run_main(main, CheckSet::ALL),
        Ok(Some(7)),
        "every store was skipped"
    );
    assert_eq!(t.rt.take_host_fault(), None);
    let reps = t.rt.take_reports();
    assert_eq!(reps.len(), 2, "{reps:#?}");
    assert_site(
        &reps[0],
        ReportKind::DictSlotTag,
        "main",
        line_of(main, "store_attr"),
        "store_attr",
    );
    assert_eq!(reps[0].count, 5);
    assert_eq!(
        reps[0].observed,
        Observed::Dict {
            object: t.obj,
            value: good - 1
        }
    );
    assert_site(
        &reps[1],
        ReportKind::DictSlotTag,
        "main",
        line_of(main, "dict_slot.load"),
        "dict_slot.load",
    );
    assert_eq!(reps[1].count, 1);
    assert!(
        t.rt.take_reports().is_empty(),
        "asking again after taking them finds none"
    );
    assert_eq!(t.readback("word"), good, "repaired");

    // Same program uninstrumented: the stores reach the host (fault recorded), then the repair.
    let t = TwoPart::new(Mode::Recover);
    assert_eq!(t.run_main_plain(main), Ok(Some(7)));
    assert!(t.rt.take_host_fault().unwrap().msg.contains("corrupted"));
}

#[test]
fn guard_abort_and_trap_modes_stop_at_the_first_violation() {
    let main = "
layout phoenix
extern fn @fault_clear_lsb(ptr)
extern fn @print_i64(i64)
fn @main(%o: ptr) -> i64 {
entry:
    call @fault_clear_lsb(%o)
    %v = iconst.i64 99
    store_attr %o, 0, %v
    call @print_i64(%v)
    store_attr %o, 1, %v
    return %v
}
";
    for mode in [Mode::Abort, Mode::Trap] {
        let t = TwoPart::new(mode);
        assert_eq!(
            t.run_main(main, CheckSet::ALL),
            Err(InterpError::Aborted),
            "{mode:?}"
        );
        assert_eq!(
            t.rt.take_output(),
            "",
            "{mode:?}: nothing ran after the violation"
        );
        assert_eq!(t.rt.take_host_fault(), None);
        let rep = only_report(&t.rt);
        let line = main
            .lines()
            .position(|l| l.contains("store_attr %o, 0"))
            .unwrap() as u32
            + 1;
        assert_site(&rep, ReportKind::DictSlotTag, "main", line, "store_attr");
        assert_eq!(rep.count, 1);
        assert!(t.rt.take_reports().is_empty());
    }
}

#[test]
fn guard_reports_are_taken_once_and_dedup_per_site() {
    let text = "
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    call @fault_clear_lsb(%o)
    %a = load_attr %o, 0
    %b = load_attr %o, 0
    %c = iadd %a, %b
    return %c
}
";
    let (r, rt) = exec_guarded(text, CheckSet::ALL, Mode::Recover, &[]);
    assert_eq!(r, Ok(Some(0)));
    let reps = rt.peek_reports();
    assert_eq!(reps.len(), 2, "two sites, two reports");
    assert_ne!(reps[0].site, reps[1].site);
    assert_eq!(reps[0].info.line + 1, reps[1].info.line);
    assert_eq!(rt.take_reports().len(), 2);
    assert!(
        rt.take_reports().is_empty(),
        "asking again after taking them finds none"
    );
}

// ---------------------------------------------------------------------------
// Guards: adstack

#[test]
fn guard_adstack_push_at_capacity_is_skipped() {
    let text = "
fn @main() -> i64 {
entry:
    %s = adstack.alloc.i64 4
    %z = iconst.i64 0
    jump loop(%z)
loop(%i: i64):
    %six = iconst.i64 6
    %done = icmp.sge %i, %six
    brif %done, exit, body
body:
    adstack.push %s, %i
    %one = iconst.i64 1
    %i1 = iadd %i, %one
    jump loop(%i1)
exit:
    %len = adstack.len %s
    %top = adstack.top %s
    %ten = iconst.i64 10
    %l10 = imul %len, %ten
    %r = iadd %l10, %top
    return %r
}
";
    let (r, rt) = exec_guarded(text, ADSTACK, Mode::Recover, &[]);
    assert_eq!(r, Ok(Some(43)), "len 4, top = the 4th push (3)");
    let rep = only_report(&rt);
    assert_site(
        &rep,
        ReportKind::AdstackOverflow,
        "main",
        line_of(text, "adstack.push"),
        "adstack.push",
    );
    assert_eq!(rep.count, 2);
    assert_eq!(
        rep.observed,
        Observed::Adstack {
            capacity: 4,
            len: 4
        }
    );
    // Abort mode stops at the first overflowing push.
    let (r, rt) = exec_guarded(text, ADSTACK, Mode::Abort, &[]);
    assert_eq!(r, Err(InterpError::Aborted));
    assert_eq!(only_report(&rt).count, 1);
}

#[test]
fn guard_adstack_underflow_on_every_reading_op() {
    let text = "
extern fn @print_f64(f64)
fn @main() -> i64 {
entry:
    %s = adstack.alloc.f64 2
    adstack.pop %s ; first pop
    %t = adstack.top %s
    call @print_f64(%t)
    %a = adstack.top_adj %s
    call @print_f64(%a)
    %d = fconst.f64 1.0
    adstack.acc_adj %s, %d
    %x = fconst.f64 4.0
    adstack.push %s, %x
    adstack.pop %s
    adstack.pop %s ; second pop
    %n = adstack.len %s
    return %n
}
";
    let (r, rt) = exec_guarded(text, CheckSet::ALL, Mode::Recover, &[]);
    assert_eq!(r, Ok(Some(0)), "len stays 0");
    assert_eq!(rt.take_output(), "0.0\n0.0\n", "top/top_adj return 0");
    let reps = rt.take_reports();
    let want = [
        (line_of(text, "first pop"), "adstack.pop"),
        (line_of(text, "adstack.top %s"), "adstack.top"),
        (line_of(text, "adstack.top_adj %s"), "adstack.top_adj"),
        (line_of(text, "adstack.acc_adj"), "adstack.acc_adj"),
        (line_of(text, "second pop"), "adstack.pop"),
    ];
    assert_eq!(reps.len(), want.len(), "{reps:#?}");
    for (r, (line, op)) in reps.iter().zip(want) {
        assert_site(r, ReportKind::AdstackUnderflow, "main", line, op);
        assert_eq!(r.count, 1);
        assert_eq!(
            r.observed,
            Observed::Adstack {
                capacity: 2,
                len: 0
            }
        );
    }
}

#[test]
fn guard_adstack_underflow_f32_and_i64() {
    for (elem, zero) in [("f32", "0.0"), ("i64", "0")] {
        let cast = if elem == "f32" {
            "%t2 = fpromote.f64 %t\n    call @print_f64(%t2)"
        } else {
            "call @print_i64(%t)"
        };
        let text = format!(
            "
extern fn @print_f64(f64)
extern fn @print_i64(i64)
fn @main() -> i64 {{
entry:
    %s = adstack.alloc.{elem} 3
    %t = adstack.top_adj %s
    {cast}
    %n = adstack.len %s
    return %n
}}
"
        );
        let (r, rt) = exec_guarded(&text, ADSTACK, Mode::Recover, &[]);
        assert_eq!(r, Ok(Some(0)));
        assert_eq!(rt.take_output(), format!("{zero}\n"));
        let rep = only_report(&rt);
        assert_eq!(rep.kind, ReportKind::AdstackUnderflow);
        assert_eq!(rep.info.op, "adstack.top_adj");
        assert_eq!(
            rep.observed,
            Observed::Adstack {
                capacity: 3,
                len: 0
            }
        );
        // Uninstrumented: undefined behaviour, refused by the interpreter.
        assert!(
            matches!(exec_text(&text, &[]).0, Err(InterpError::Fault { .. })),
            "{elem}"
        );
    }
}

// ---------------------------------------------------------------------------
// Guards: clobber

#[test]
fn guard_clobber_of_the_dict_slot_low_byte() {
    for (layout, off) in [("cpython312", -24i64), ("phoenix", 0x18)] {
        let text = format!(
            "
layout {layout}
extern fn @obj_new(i64) -> ptr
fn @make() -> ptr {{
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    return %o
}}
fn @main(%o: ptr) -> i64 {{
entry:
    %b = iconst.i8 0x96
    store %b, %o, {off} ; clobber
    %w = dict_slot.load %o
    return %w
}}
"
        );
        let m = instrument(&module(&text), CLOBBER);
        let rt = runtime(&m, Mode::Recover);
        let it = Interpreter::new(&m, rt.clone(), &HashMap::new()).unwrap();
        let o = it.call("make", &[]).unwrap().unwrap();
        let w = it.call("main", &[o]).unwrap().unwrap();
        assert_eq!(w & 7, 7, "{layout}: the store was skipped");
        let rep = only_report(&rt);
        assert_site(
            &rep,
            ReportKind::SlotClobber,
            "main",
            line_of(&text, "; clobber"),
            "store",
        );
        assert_eq!(
            rep.observed,
            Observed::Clobber {
                address: o.wrapping_add(off as u64),
                width: 1,
                value: 0x96
            },
            "{layout}"
        );
        // Uninstrumented, the byte lands.
        let m = module(&text);
        let rt = runtime(&m, Mode::Recover);
        let it = Interpreter::new(&m, rt.clone(), &HashMap::new()).unwrap();
        let o = it.call("make", &[]).unwrap().unwrap();
        let w = it.call("main", &[o]).unwrap().unwrap();
        assert_eq!(w & 0xff, 0x96, "{layout}: uninstrumented store lands");
        assert!(rt.take_reports().is_empty());
    }
}

#[test]
fn guard_clobber_every_overlap_and_not_the_neighbours() {
    // phoenix: slot = [obj+0x18, obj+0x20); the object block is [obj, obj+0x20).
    let text = "
layout phoenix
extern fn @obj_new(i64) -> ptr
extern fn @print_i64(i64)
fn @make() -> ptr {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    return %o
}
fn @main(%o: ptr) -> i64 {
entry:
    %b = iconst.i8 -1
    %q = iconst.i64 -1
    %h = iconst.i32 0x12345678
    store %b, %o, 0x17 ; below: not watched
    store %q, %o, 0x10 ; below, 8 bytes: not watched
    store %b, %o, 0x1f ; top byte
    store %h, %o, 0x16 ; straddles the start
    store %q, %o, 0x18 ; the whole word
    %w = dict_slot.load %o
    %v = load_attr %o, 1
    %r = iadd %w, %v
    return %r
}
";
    let m = instrument(&module(text), CheckSet::ALL);
    let rt = runtime(&m, Mode::Recover);
    let it = Interpreter::new(&m, rt.clone(), &HashMap::new()).unwrap();
    let o = it.call("make", &[]).unwrap().unwrap();
    let before_reports = rt.take_reports();
    assert!(before_reports.is_empty());
    let r = it.call("main", &[o]).unwrap().unwrap();
    assert_eq!(r & 7, 7, "the word survived every store; attribute 1 is 0");
    let reps = rt.take_reports();
    let want = [
        ("; top byte", 0x1fu64, 1u32, 0xffu64),
        ("; straddles", 0x16, 4, 0x12345678),
        ("; the whole word", 0x18, 8, u64::MAX),
    ];
    assert_eq!(reps.len(), want.len(), "{reps:#?}");
    for (rep, (marker, off, width, value)) in reps.iter().zip(want) {
        assert_site(
            rep,
            ReportKind::SlotClobber,
            "main",
            line_of(text, marker),
            "store",
        );
        assert_eq!(
            rep.observed,
            Observed::Clobber {
                address: o + off,
                width,
                value
            },
            "{marker}"
        );
    }
    // The neighbours were written.
    let peek = "
layout phoenix
fn @main(%o: ptr) -> i64 {
entry:
    %v = load.i64 %o, 0x10
    return %v
}
";
    let pm = module(peek);
    let v = Interpreter::new(&pm, rt.clone(), &HashMap::new())
        .unwrap()
        .call("main", &[o])
        .unwrap()
        .unwrap();
    assert_eq!(
        v,
        u64::MAX,
        "the 8-byte store below the slot landed, then the byte store at 0x17"
    );
}

#[test]
fn guard_clobber_by_hand_in_abort_mode() {
    let text = "
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    %b = iconst.i8 0x96
    guard.store %b, %o, -24
    %w = dict_slot.load %o
    return %w
}
";
    let m = module(text);
    let (r, rt) = exec(&m, Mode::Abort, &[]);
    assert_eq!(r, Err(InterpError::Aborted));
    let rep = only_report(&rt);
    assert_site(
        &rep,
        ReportKind::SlotClobber,
        "main",
        line_of(text, "guard.store"),
        "store",
    );
    let (r, rt) = exec(&m, Mode::Recover, &[]);
    assert_eq!(r.unwrap().unwrap() & 7, 7);
    assert_eq!(only_report(&rt).count, 1);
}

#[test]
fn instrumentation_covers_exactly_its_check_set() {
    // A program touching every guard kind, each violating once.
    let text = "
layout phoenix
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    %b = iconst.i8 0x96
    store %b, %o, 0x18
    %w = dict_slot.load %o
    %lsb = iconst.i64 1
    %bad = bxor %w, %lsb
    dict_slot.store %o, %bad
    %s = adstack.alloc.i64 1
    adstack.pop %s
    %r = adstack.len %s
    return %r
}
";
    // Without the adstack check the final pop on an empty stack is undefined
    // (a fault); the reports up to there are what is compared.
    let kinds = |checks: CheckSet| {
        let (r, rt) = exec_guarded(text, checks, Mode::Recover, &[]);
        if checks.adstack {
            assert_eq!(r, Ok(Some(0)), "{checks}");
        } else {
            assert!(
                matches!(r, Err(InterpError::Fault { .. })),
                "{checks}: {r:?}"
            );
        }
        let mut k: Vec<ReportKind> = rt.take_reports().into_iter().map(|r| r.kind).collect();
        k.sort();
        k
    };
    assert_eq!(kinds(DICT), vec![ReportKind::DictSlotTag]);
    assert_eq!(kinds(CLOBBER), vec![ReportKind::SlotClobber]);
    assert_eq!(
        kinds(ADSTACK),
        vec![ReportKind::AdstackUnderflow],
        "adstack alone: the store lands (uninstrumented), the pop is guarded"
    );
    assert_eq!(
        kinds(CheckSet::ALL),
        vec![
            ReportKind::DictSlotTag,
            ReportKind::AdstackUnderflow,
            ReportKind::SlotClobber
        ]
    );
}

/// Regression: the pass inserts `guard.watch` with `clobber` and must
/// re-record `ValueDef::Inst(block, index)` for the results that follow, or
/// the instrumented module fails verification.
#[test]
fn instrumented_module_verifies() {
    let text = "
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    %a = load_attr %o, 0
    return %a
}
";
    for checks in [DICT, ADSTACK, CLOBBER, CheckSet::ALL] {
        let m = instrument(&module(text), checks);
        if let Err(e) = guardlift_ir::verify_module(&m) {
            panic!("instrumented with {checks}: {e}");
        }
    }
}

#[test]
fn guard_dict_tag_rule_is_low_three_bits_000_or_111() {
    let text = "
extern fn @obj_new(i64) -> ptr
fn @main(%w: i64) -> i64 {
entry:
    %n = iconst.i64 1
    %o = call @obj_new(%n)
    guard.dict_slot.store %o, %w
    %back = dict_slot.load %o
    %same = icmp.eq %back, %w
    %r = uext.i64 %same
    return %r
}
";
    let m = module(text);
    for low in 0u64..8 {
        let word = 0x1000 | low;
        let (r, rt) = exec(&m, Mode::Recover, &[word]);
        let reps = rt.take_reports();
        let ok = low == 0 || low == 7;
        assert_eq!(
            r,
            Ok(Some(ok as u64)),
            "low bits {low:03b}: stored iff well-formed"
        );
        assert_eq!(
            reps.len(),
            usize::from(!ok),
            "low bits {low:03b}: {reps:#?}"
        );
        if let Some(rep) = reps.first() {
            assert_eq!(rep.kind, ReportKind::DictSlotTag);
            assert!(matches!(rep.observed, Observed::Dict { value, .. } if value == word));
            assert_eq!(rep.to_json()["value_low_bits"], format!("0b{low:03b}"));
        }
    }
    // Zero is a valid word (no values, no dict yet).
    let (r, rt) = exec(&m, Mode::Recover, &[0]);
    assert_eq!(r, Ok(Some(1)));
    assert!(rt.take_reports().is_empty());
}

// ---------------------------------------------------------------------------
// The loop-versioning claim (guardlift_ir::hoist), verified while running

/// A loop claimed to free nothing whose call frees (in the callee's frame):
/// the verification follows the call into the frames it runs and refutes
/// the claim; the loop the analysis itself finds (calling a leaf function)
/// runs clean.
#[test]
fn a_free_in_a_callee_of_a_claimed_loop_is_an_internal_error() {
    let text = "extern fn @obj_new(i64) -> ptr\nextern fn @obj_free(ptr)\n\
        fn @leaf(%o: ptr, %v: i64) {\nentry:\n    store_attr %o, 0, %v\n    return\n}\n\
        fn @kill(%o: ptr) {\nentry:\n    call @obj_free(%o)\n    return\n}\n\
        fn @main(%n: i64, %free: i64) -> i64 {\nentry:\n    %two = iconst.i64 2\n    %o = call @obj_new(%two)\n    %z = iconst.i64 0\n    jump loop(%z)\n\
        loop(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, exit, body\n\
        body:\n    call @leaf(%o, %i)\n    %one = iconst.i64 1\n    %i2 = iadd %i, %one\n    %f = icmp.eq %i2, %free\n    brif %f, kill, loop(%i2)\n\
        kill:\n    call @kill(%o)\n    jump loop(%i2)\n\
        exit:\n    return %n\n}\n";
    let m = module(text);
    let main = m.func_by_name("main").expect("@main");
    let claims = |kill_claimed: bool| -> Vec<Vec<bool>> {
        (m.functions.iter().enumerate())
            .map(|(i, f)| {
                (f.blocks.iter())
                    .map(|b| {
                        i == main.0 as usize
                            && (["loop", "body"].contains(&b.name.as_str())
                                || (kill_claimed && b.name == "kill"))
                    })
                    .collect()
            })
            .collect()
    };
    for (kill_claimed, free_at, fails) in [(false, 2, false), (true, 99, false), (true, 2, true)] {
        let mut it =
            Interpreter::new(&m, runtime(&m, Mode::Recover), &HashMap::new()).expect("link");
        it.set_verify_elision(true);
        it.set_loop_claims(claims(kill_claimed));
        let r = it.call("main", &[4, free_at]);
        match r {
            Err(InterpError::Internal { msg, .. }) if fails => {
                assert!(msg.contains("@kill"), "{msg}")
            }
            r => assert!(!fails && r.is_ok(), "{kill_claimed} {free_at}: {r:?}"),
        }
    }
}

/// A `@main(%n, %swap)` whose loop runs `access` (on `%a`, 4 attributes)
/// each iteration and, at iteration `%swap`, points `%a`'s word at the
/// values array of a 1-attribute object (`dict_slot.store`); `prelude`
/// holds the functions `access` calls.
fn swap_program(prelude: &str, access: &str) -> Module {
    module(&format!(
        "extern fn @obj_new(i64) -> ptr\n{prelude}\
        fn @main(%n: i64, %swap: i64) -> i64 {{\nentry:\n    %four = iconst.i64 4\n    %one = iconst.i64 1\n    %a = call @obj_new(%four)\n    %s = call @obj_new(%one)\n    %ws = dict_slot.load %s\n    %z = iconst.i64 0\n    jump loop(%z)\n\
        loop(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, exit, body\n\
        body:\n    {access}\n    %i2 = iadd %i, %one\n    %f = icmp.eq %i2, %swap\n    brif %f, rewrite, loop(%i2)\n\
        rewrite:\n    dict_slot.store %a, %ws\n    jump loop(%i2)\n\
        exit:\n    return %n\n}}\n"
    ))
}

/// Runs [`swap_program`]'s `m` (4 iterations, the swap at `swap`) under
/// `set_verify_elision`, with the claim that `%a` is a fixed attribute of
/// `@main`'s loop up to index 3 when `claimed` (the analysis makes none:
/// the `dict_slot.store` bars it).
fn run_fixed_claim(m: &Module, claimed: bool, swap: u64) -> Result<Option<u64>, InterpError> {
    let main = m.func_by_name("main").expect("@main");
    let f = m.func(main);
    let real = guardlift_ir::hoist::clean_loops(m, f);
    assert!(real.iter().all(|l| l.attrs.is_empty()), "{real:?}");
    let block = |n: &str| f.blocks.iter().position(|b| b.name == n).expect("block") as u32;
    let a = guardlift_ir::Value(f.values.iter().position(|v| v.name == "a").expect("%a") as u32);
    let mut claims = vec![Vec::new(); m.functions.len()];
    if claimed {
        claims[main.0 as usize] = vec![guardlift_ir::hoist::CleanLoop {
            header: block("loop"),
            blocks: vec![block("loop"), block("body"), block("rewrite")],
            hot: vec![block("loop"), block("body"), block("rewrite")],
            cold: Vec::new(),
            side: Vec::new(),
            objects: vec![a],
            attrs: vec![(a, 3)],
            exits: Vec::new(),
        }];
    }
    let mut it = Interpreter::new(m, runtime(m, Mode::Recover), &HashMap::new()).expect("link");
    it.set_verify_elision(true);
    it.set_attr_claims(claims);
    it.call("main", &[4, swap])
}

/// The fixed-attribute claim (`CleanLoop::attrs`) is verified per
/// activation: a claimed loop whose `dict_slot.store` points `%a` at
/// another (smaller) values array changes the word its entry saw, from
/// which the JIT's clean copy addresses the values, which refutes the
/// claim; the same run is fine unclaimed (the analysis makes no claim:
/// the store bars it), and claimed but without the rewrite.
#[test]
fn a_word_rewritten_under_a_fixed_attribute_claim_is_an_internal_error() {
    let m = swap_program("", "guard.store_attr %a, 3, %i");
    for (claimed, swap, fails) in [(false, 2, false), (true, 99, false), (true, 2, true)] {
        match run_fixed_claim(&m, claimed, swap) {
            Err(InterpError::Internal { msg, .. }) if fails => {
                assert!(
                    msg.contains("not the") && msg.contains("the entry saw"),
                    "{msg}"
                )
            }
            r => assert!(!fails && r.is_ok(), "{claimed} {swap}: {r:?}"),
        }
    }
}

/// The same claim followed into a leaf callee: the param it is passed a
/// fixed object as is claimed for the whole call.
#[test]
fn a_bounds_failure_in_a_callee_on_a_fixed_attribute_is_an_internal_error() {
    let m = swap_program(
        "fn @leaf(%o: ptr, %v: i64) {\nentry:\n    guard.store_attr %o, 3, %v\n    return\n}\n",
        "call @leaf(%a, %i)",
    );
    for (swap, fails) in [(99, false), (2, true)] {
        match run_fixed_claim(&m, true, swap) {
            Err(InterpError::Internal { msg, .. }) if fails => {
                assert!(msg.contains("@leaf") && msg.contains("capacity 1"), "{msg}")
            }
            r => assert!(!fails && r.is_ok(), "{swap}: {r:?}"),
        }
    }
}

/// The fixed-attribute claim's objects must be loop-invariant, whatever
/// their type (issue 28, item 4): `tests/programs/hoist_loop_leaf_i64_object.glir`
/// passes a value its loop defines to a leaf callee's `i64` object param.
/// The analysis makes no claim on it (the run verifies clean), and a
/// claim naming that value is refuted at the loop's first entry.
#[test]
fn a_fixed_attribute_claim_on_a_loop_defined_value_is_an_internal_error() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/programs/hoist_loop_leaf_i64_object.glir"
    );
    let m = module(&std::fs::read_to_string(path).expect("program"));
    let run = |claims: Option<Vec<Vec<guardlift_ir::hoist::CleanLoop>>>| {
        let mut it =
            Interpreter::new(&m, runtime(&m, Mode::Recover), &HashMap::new()).expect("link");
        it.set_verify_elision(true);
        if let Some(c) = claims {
            it.set_attr_claims(c);
        }
        it.call("main", &[7])
    };
    assert_eq!(run(None).expect("verified run"), Some(110));
    let pick = m.func_by_name("pick").expect("@pick");
    let f = m.func(pick);
    let block = |n: &str| f.blocks.iter().position(|b| b.name == n).expect("block") as u32;
    let val = |n: &str| {
        guardlift_ir::Value(f.values.iter().position(|v| v.name == n).expect("value") as u32)
    };
    let mut claims = vec![Vec::new(); m.functions.len()];
    claims[pick.0 as usize] = vec![guardlift_ir::hoist::CleanLoop {
        header: block("loop"),
        blocks: vec![block("loop"), block("body")],
        hot: vec![block("loop"), block("body")],
        cold: Vec::new(),
        side: Vec::new(),
        objects: vec![val("a")],
        attrs: vec![(val("o"), 1), (val("a"), 0)],
        exits: Vec::new(),
    }];
    match run(Some(claims)) {
        Err(InterpError::Internal { msg, .. }) => {
            assert!(
                msg.contains("%o") && msg.contains("not loop-invariant"),
                "{msg}"
            )
        }
        r => panic!("a claim on %o, defined in the loop, was not refuted: {r:?}"),
    }
}

// ---------------------------------------------------------------------------
// Spec §3.1: divisions, overflow tests, bit counts, roundings

#[test]
fn division_truncates_like_c_on_every_width() {
    assert_eq!(bin("i64", "sdiv", s(-7), s(2)), s(-3));
    assert_eq!(bin("i64", "srem", s(-7), s(2)), s(-1));
    assert_eq!(bin("i64", "udiv", s(-7), s(2)), s(i64::MAX - 3));
    assert_eq!(bin("i64", "urem", s(-7), s(2)), 1);
    assert_eq!(bin("i32", "udiv", s(-1), s(2)), s(i32::MAX as i64));
    assert_eq!(bin("i8", "sdiv", s(-128), s(3)), s(-42));
    assert_eq!(bin("i8", "urem", s(-1), s(10)), 5);
    // srem of the minimum by -1 is 0.
    assert_eq!(bin("i64", "srem", s(i64::MIN), s(-1)), 0);
    assert_eq!(bin("i8", "srem", s(-128), s(-1)), 0);
}

#[test]
fn division_faults_are_fatal_at_the_op() {
    for (op, a, b, kind) in [
        ("sdiv", 5, 0, ReportKind::DivByZero),
        ("udiv", 5, 0, ReportKind::DivByZero),
        ("srem", 5, 0, ReportKind::DivByZero),
        ("urem", 5, 0, ReportKind::DivByZero),
        ("sdiv", i64::MIN, -1, ReportKind::IntOverflow),
    ] {
        let text = format!(
            "fn @main(%a: i64, %b: i64) -> i64 {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
        );
        match exec_text(&text, &[s(a), s(b)]).0 {
            Err(InterpError::Arith { loc, kind: k, .. }) => {
                assert_eq!((loc.line, k), (3, kind), "{op}");
            }
            other => panic!("{op} {a} {b}: {other:?}"),
        }
    }
}

#[test]
fn overflow_tests_on_the_operands_type() {
    let ov = |ty: &str, op: &str, a: i64, b: i64| {
        let text = format!(
            "fn @main(%a: {ty}, %b: {ty}) -> i8 {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
        );
        run(&text, &[s(a), s(b)])
    };
    assert_eq!(ov("i64", "sadd_overflows", i64::MAX, 1), 1);
    assert_eq!(ov("i64", "sadd_overflows", i64::MAX, -1), 0);
    assert_eq!(ov("i64", "ssub_overflows", i64::MIN, 1), 1);
    assert_eq!(ov("i64", "smul_overflows", 1 << 32, 1 << 31), 1);
    assert_eq!(ov("i64", "smul_overflows", 1 << 31, 1 << 31), 0);
    assert_eq!(ov("i32", "smul_overflows", 1 << 16, 1 << 15), 1);
    assert_eq!(ov("i32", "sadd_overflows", i32::MAX as i64, 0), 0);
    assert_eq!(ov("i8", "sadd_overflows", 100, 28), 1);
    assert_eq!(ov("i8", "ssub_overflows", -128, -1), 0);
    assert_eq!(ov("i8", "smul_overflows", -128, -1), 1);
}

#[test]
fn bit_counts_have_the_operands_type() {
    assert_eq!(un("i64", "popcnt", s(-1)), 64);
    assert_eq!(un("i64", "clz", 1), 63);
    assert_eq!(un("i64", "ctz", 0), 64);
    assert_eq!(un("i32", "clz", 0), 32);
    assert_eq!(un("i32", "ctz", s(-2147483648)), 31);
    assert_eq!(un("i8", "popcnt", s(-1)), 8);
    assert_eq!(un("i8", "clz", 1), 7);
    assert_eq!(un("i8", "ctz", 0), 8);
}

#[test]
fn roundings_and_copysign() {
    let f = |op: &str, x: f64| as_f64(un("f64", op, f64b(x)));
    assert_eq!(f("ffloor", -2.5), -3.0);
    assert_eq!(f("fceil", -2.5), -2.0);
    assert_eq!(f("ftrunc", -2.5), -2.0);
    assert_eq!(f("fnearest", -2.5), -2.0);
    assert_eq!(f("fnearest", 3.5), 4.0);
    assert!(f("fceil", -0.5).is_sign_negative());
    assert_eq!(
        un("f64", "ffloor", f64b(f64::from_bits(0xfff0_0000_0000_0001))),
        0x7ff8_0000_0000_0000
    );
    assert_eq!(as_f32(un("f32", "fnearest", f32b(0.5))), 0.0);
    assert_eq!(
        un("f32", "ftrunc", f32b(f32::from_bits(0xffc0_0001))),
        0x7fc0_0000
    );
    assert_eq!(as_f64(bin("f64", "fcopysign", f64b(2.0), f64b(-0.0))), -2.0);
    // A bit operation, as fneg: the payload of a NaN is kept.
    assert_eq!(
        bin("f64", "fcopysign", 0x7ff0_0000_0000_0001, f64b(-1.0)),
        0xfff0_0000_0000_0001
    );
}

/// `br_table` (spec §3.1): the shared program of `jit/tests/ops.rs`'s
/// test of the same name, with its table of (index, result).
const BR_TABLE: &str = r#"
fn @main(%i: i64) -> i64 {
entry:
    %ten = iconst.i64 10
    br_table %i, dflt(%ten), [a, b(%i), b(%ten), a]
a:
    %h = iconst.i64 100
    return %h
b(%x: i64):
    %k = iconst.i64 1000
    %y = iadd %x, %k
    return %y
dflt(%t: i64):
    %u = isub %t, %i
    return %u
}
"#;

/// The index is unsigned and whole: 4 (the length) and everything past
/// it, -1 and 2^32 (whose low 32 bits are 0) included, take the default.
#[test]
fn br_table_index_is_unsigned_and_whole() {
    for (i, want) in [
        (0u64, 100u64),
        (1, 1001),
        (2, 1010),
        (3, 100),
        (4, 6),
        (5, 5),
        (u64::MAX, 11),
        (1 << 32, 10u64.wrapping_sub(1 << 32)),
        ((1 << 32) | 1, 10u64.wrapping_sub((1 << 32) | 1)),
        (1 << 63, 10u64.wrapping_sub(1 << 63)),
    ] {
        assert_eq!(run(BR_TABLE, &[i]), want, "index {i:#x}");
    }
    let empty = "fn @main(%i: i64) -> i64 {\nentry:\n    br_table %i, d(%i), []\nd(%x: i64):\n    return %x\n}\n";
    for i in [0u64, 7, u64::MAX] {
        assert_eq!(run(empty, &[i]), i);
    }
}
