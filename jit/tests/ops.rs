//! Every op family of spec §3 against Rust reference semantics.

mod common;
use common::*;
use guardlift_jit::Ptr;

/// Canonical raw bits of an integer of `bits` width.
fn ib(bits: u32, v: i64) -> u64 {
    match bits {
        8 => v as i8 as i64 as u64,
        32 => v as i32 as i64 as u64,
        _ => v as u64,
    }
}

const INT_SAMPLES: [i64; 14] = [
    0,
    1,
    -1,
    2,
    7,
    -8,
    100,
    127,
    -128,
    255,
    0x7fff_ffff,
    -0x8000_0000,
    i64::MAX,
    i64::MIN,
];

fn int_types() -> [(&'static str, u32); 3] {
    [("i8", 8), ("i32", 32), ("i64", 64)]
}

#[test]
fn constants() {
    let m = jit(r#"
fn @c_i8() -> i8 {
entry:
    %x = iconst.i8 -1
    return %x
}
fn @c_i8_wrap() -> i8 {
entry:
    %x = iconst.i8 0xff
    return %x
}
fn @c_i32() -> i32 {
entry:
    %x = iconst.i32 -2147483648
    return %x
}
fn @c_i64() -> i64 {
entry:
    %x = iconst.i64 0x7fffffffffffffff
    return %x
}
fn @c_ptr() -> ptr {
entry:
    %x = iconst.ptr 4096
    return %x
}
fn @c_f32() -> f32 {
entry:
    %x = fconst.f32 0.1
    return %x
}
fn @c_f64() -> f64 {
entry:
    %x = fconst.f64 -2.5e-3
    return %x
}
fn @c_nan() -> f64 {
entry:
    %x = fconst.f64 nan
    return %x
}
fn @c_inf() -> f32 {
entry:
    %x = fconst.f32 -inf
    return %x
}
"#);
    assert_eq!(call(&m, "c_i8", &[]), Some(u64::MAX));
    assert_eq!(call(&m, "c_i8_wrap", &[]), Some(u64::MAX));
    assert_eq!(call(&m, "c_i32", &[]), Some(i32::MIN as i64 as u64));
    assert_eq!(call(&m, "c_i64", &[]), Some(i64::MAX as u64));
    assert_eq!(call(&m, "c_ptr", &[]), Some(4096));
    assert_eq!(call(&m, "c_f32", &[]), Some(0.1f32.to_bits() as u64));
    assert_eq!(call(&m, "c_f64", &[]), Some((-2.5e-3f64).to_bits()));
    assert!(f64::from_bits(call(&m, "c_nan", &[]).unwrap()).is_nan());
    assert_eq!(
        call(&m, "c_inf", &[]),
        Some(f32::NEG_INFINITY.to_bits() as u64)
    );
    // Typed calls agree.
    assert_eq!(m.safe_func::<(), i8>("c_i8").unwrap().call(()), -1);
    assert_eq!(m.safe_func::<(), f32>("c_f32").unwrap().call(()), 0.1f32);
    assert_eq!(m.safe_func::<(), Ptr>("c_ptr").unwrap().call(()), Ptr(4096));
}

fn int_ref(op: &str, bits: u32, a: i64, b: i64) -> i64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let ua = a as u64 & mask;
    let sh = (b as u64 % bits as u64) as u32;
    let r: u64 = match op {
        "iadd" => a.wrapping_add(b) as u64,
        "isub" => a.wrapping_sub(b) as u64,
        "imul" => a.wrapping_mul(b) as u64,
        "band" => (a & b) as u64,
        "bor" => (a | b) as u64,
        "bxor" => (a ^ b) as u64,
        "ishl" => ua << sh,
        "ushr" => ua >> sh,
        "sshr" => {
            // sign-extend a from `bits` first
            let sa = ib(bits, a) as i64;
            (sa >> sh) as u64
        }
        _ => unreachable!(),
    };
    ib(bits, r as i64) as i64
}

#[test]
fn int_arithmetic_wraps_and_masks_shifts() {
    let ops = [
        "iadd", "isub", "imul", "band", "bor", "bxor", "ishl", "ushr", "sshr",
    ];
    let mut text = String::new();
    for op in ops {
        for (t, _) in int_types() {
            text += &format!(
                "fn @{op}_{t}(%a: {t}, %b: {t}) -> {t} {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
            );
        }
    }
    // Shift amounts of another width than the shifted value.
    text += "fn @ishl_i64_by_i8(%a: i64, %b: i8) -> i64 {\nentry:\n    %r = ishl %a, %b\n    return %r\n}\n";
    text += "fn @sshr_i8_by_i64(%a: i8, %b: i64) -> i8 {\nentry:\n    %r = sshr %a, %b\n    return %r\n}\n";
    text +=
        "fn @mix_ptr(%a: ptr, %b: i64) -> ptr {\nentry:\n    %r = iadd %a, %b\n    return %r\n}\n";
    let m = jit(&text);
    for op in ops {
        for (t, bits) in int_types() {
            for &a in &INT_SAMPLES {
                for &b in INT_SAMPLES
                    .iter()
                    .chain(&[3, 8, 31, 32, 33, 63, 64, 65, 70, -3])
                {
                    let got = call(&m, &format!("{op}_{t}"), &[ib(bits, a), ib(bits, b)]).unwrap();
                    let want = ib(
                        bits,
                        int_ref(op, bits, ib(bits, a) as i64, ib(bits, b) as i64),
                    );
                    assert_eq!(got, want, "{op}.{t} {a} {b}");
                }
            }
        }
    }
    assert_eq!(call(&m, "ishl_i64_by_i8", &[1, ib(8, 65)]), Some(2));
    assert_eq!(call(&m, "ishl_i64_by_i8", &[1, ib(8, -1)]), Some(1 << 63));
    assert_eq!(
        call(&m, "sshr_i8_by_i64", &[ib(8, -128), 9]),
        Some(ib(8, -64))
    );
    assert_eq!(call(&m, "mix_ptr", &[0x1000, ib(64, -16)]), Some(0xff0));
}

#[test]
fn icmp_all_codes() {
    let ccs = [
        "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
    ];
    let mut text = String::new();
    for cc in ccs {
        for (t, _) in int_types() {
            text += &format!(
                "fn @{cc}_{t}(%a: {t}, %b: {t}) -> i8 {{\nentry:\n    %r = icmp.{cc} %a, %b\n    return %r\n}}\n"
            );
        }
    }
    let m = jit(&text);
    for cc in ccs {
        for (t, bits) in int_types() {
            for &a in &INT_SAMPLES {
                for &b in &INT_SAMPLES {
                    let (sa, sb) = (ib(bits, a) as i64, ib(bits, b) as i64);
                    let mask = if bits == 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                    let (ua, ub) = (sa as u64 & mask, sb as u64 & mask);
                    let want = match cc {
                        "eq" => sa == sb,
                        "ne" => sa != sb,
                        "slt" => sa < sb,
                        "sle" => sa <= sb,
                        "sgt" => sa > sb,
                        "sge" => sa >= sb,
                        "ult" => ua < ub,
                        "ule" => ua <= ub,
                        "ugt" => ua > ub,
                        "uge" => ua >= ub,
                        _ => unreachable!(),
                    };
                    let got = call(&m, &format!("{cc}_{t}"), &[sa as u64, sb as u64]).unwrap();
                    assert_eq!(got, want as u64, "icmp.{cc}.{t} {sa} {sb}");
                }
            }
        }
    }
}

const F64_SAMPLES: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e300,
    -1e-300,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    3.0,
    2.5,
];

#[test]
fn fcmp_all_codes_with_nan() {
    let ccs = ["eq", "ne", "lt", "le", "gt", "ge"];
    let mut text = String::new();
    for cc in ccs {
        for t in ["f32", "f64"] {
            text += &format!(
                "fn @{cc}_{t}(%a: {t}, %b: {t}) -> i8 {{\nentry:\n    %r = fcmp.{cc} %a, %b\n    return %r\n}}\n"
            );
        }
    }
    let m = jit(&text);
    for cc in ccs {
        for &a in &F64_SAMPLES {
            for &b in &F64_SAMPLES {
                let want = match cc {
                    "eq" => a == b,
                    "ne" => a != b, // Rust's != is true on NaN, as the spec wants
                    "lt" => a < b,
                    "le" => a <= b,
                    "gt" => a > b,
                    "ge" => a >= b,
                    _ => unreachable!(),
                };
                let got = call(&m, &format!("{cc}_f64"), &[a.to_bits(), b.to_bits()]).unwrap();
                assert_eq!(got, want as u64, "fcmp.{cc}.f64 {a} {b}");
                let (fa, fb) = (a as f32, b as f32);
                let want32 = match cc {
                    "eq" => fa == fb,
                    "ne" => fa != fb,
                    "lt" => fa < fb,
                    "le" => fa <= fb,
                    "gt" => fa > fb,
                    "ge" => fa >= fb,
                    _ => unreachable!(),
                };
                let got = call(
                    &m,
                    &format!("{cc}_f32"),
                    &[fa.to_bits() as u64, fb.to_bits() as u64],
                )
                .unwrap();
                assert_eq!(got, want32 as u64, "fcmp.{cc}.f32 {fa} {fb}");
            }
        }
    }
}

/// fmin/fmax reference: NaN if either is NaN; -0.0 < +0.0.
fn fmin_ref(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else {
        a.min(b)
    }
}
fn fmax_ref(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_positive() {
            a
        } else {
            b
        }
    } else {
        a.max(b)
    }
}

fn same_f64(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
fn float_ops() {
    let bins = ["fadd", "fsub", "fmul", "fdiv", "fmin", "fmax"];
    let uns = ["fneg", "fabs", "fsqrt"];
    let mut text = String::new();
    for t in ["f32", "f64"] {
        for op in bins {
            text += &format!(
                "fn @{op}_{t}(%a: {t}, %b: {t}) -> {t} {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
            );
        }
        for op in uns {
            text += &format!(
                "fn @{op}_{t}(%a: {t}) -> {t} {{\nentry:\n    %r = {op} %a\n    return %r\n}}\n"
            );
        }
    }
    let m = jit(&text);
    for &a in &F64_SAMPLES {
        for &b in &F64_SAMPLES {
            for op in bins {
                let want = match op {
                    "fadd" => a + b,
                    "fsub" => a - b,
                    "fmul" => a * b,
                    "fdiv" => a / b,
                    "fmin" => fmin_ref(a, b),
                    "fmax" => fmax_ref(a, b),
                    _ => unreachable!(),
                };
                let got = f64::from_bits(
                    call(&m, &format!("{op}_f64"), &[a.to_bits(), b.to_bits()]).unwrap(),
                );
                assert!(
                    same_f64(got, want),
                    "{op}.f64 {a} {b}: got {got}, want {want}"
                );
                let (fa, fb) = (a as f32, b as f32);
                let want32 = match op {
                    "fadd" => fa + fb,
                    "fsub" => fa - fb,
                    "fmul" => fa * fb,
                    "fdiv" => fa / fb,
                    "fmin" => fmin_ref(fa as f64, fb as f64) as f32,
                    "fmax" => fmax_ref(fa as f64, fb as f64) as f32,
                    _ => unreachable!(),
                };
                let got = call(
                    &m,
                    &format!("{op}_f32"),
                    &[fa.to_bits() as u64, fb.to_bits() as u64],
                )
                .unwrap();
                assert!(got >> 32 == 0, "f32 result bits are zero-extended");
                let got = f32::from_bits(got as u32);
                assert!(
                    (got.is_nan() && want32.is_nan()) || got.to_bits() == want32.to_bits(),
                    "{op}.f32 {fa} {fb}: got {got}, want {want32}"
                );
            }
        }
        for op in uns {
            let want = match op {
                "fneg" => -a,
                "fabs" => a.abs(),
                "fsqrt" => a.sqrt(),
                _ => unreachable!(),
            };
            let got = f64::from_bits(call(&m, &format!("{op}_f64"), &[a.to_bits()]).unwrap());
            assert!(same_f64(got, want), "{op} {a}: {got} vs {want}");
        }
    }
    // fmin/fmax signed zeros.
    let fmin = m.safe_func::<(f64, f64), f64>("fmin_f64").unwrap();
    assert!(fmin.call((0.0, -0.0)).is_sign_negative());
    let fmax = m.safe_func::<(f64, f64), f64>("fmax_f64").unwrap();
    assert!(fmax.call((-0.0, 0.0)).is_sign_positive());
    assert!(fmax.call((f64::NAN, 1.0)).is_nan());
    assert!(m
        .safe_func::<(f32, f32), f32>("fmin_f32")
        .unwrap()
        .call((1.0, f32::NAN))
        .is_nan());
}

#[test]
fn int_conversions() {
    let m = jit(r#"
fn @sext_8_64(%a: i8) -> i64 {
entry:
    %r = sext.i64 %a
    return %r
}
fn @sext_8_32(%a: i8) -> i32 {
entry:
    %r = sext.i32 %a
    return %r
}
fn @sext_32_64(%a: i32) -> i64 {
entry:
    %r = sext.i64 %a
    return %r
}
fn @uext_8_64(%a: i8) -> i64 {
entry:
    %r = uext.i64 %a
    return %r
}
fn @uext_32_64(%a: i32) -> i64 {
entry:
    %r = uext.i64 %a
    return %r
}
fn @uext_8_ptr(%a: i8) -> ptr {
entry:
    %r = uext.ptr %a
    return %r
}
fn @ireduce_64_8(%a: i64) -> i8 {
entry:
    %r = ireduce.i8 %a
    return %r
}
fn @ireduce_64_32(%a: i64) -> i32 {
entry:
    %r = ireduce.i32 %a
    return %r
}
fn @ireduce_ptr_32(%a: ptr) -> i32 {
entry:
    %r = ireduce.i32 %a
    return %r
}
"#);
    for &a in &INT_SAMPLES {
        let a8 = a as i8;
        let a32 = a as i32;
        assert_eq!(call(&m, "sext_8_64", &[ib(8, a)]), Some(a8 as i64 as u64));
        assert_eq!(
            call(&m, "sext_8_32", &[ib(8, a)]),
            Some(a8 as i32 as i64 as u64)
        );
        assert_eq!(
            call(&m, "sext_32_64", &[ib(32, a)]),
            Some(a32 as i64 as u64)
        );
        assert_eq!(call(&m, "uext_8_64", &[ib(8, a)]), Some(a8 as u8 as u64));
        assert_eq!(
            call(&m, "uext_32_64", &[ib(32, a)]),
            Some(a32 as u32 as u64)
        );
        assert_eq!(call(&m, "uext_8_ptr", &[ib(8, a)]), Some(a8 as u8 as u64));
        assert_eq!(call(&m, "ireduce_64_8", &[a as u64]), Some(ib(8, a)));
        assert_eq!(call(&m, "ireduce_64_32", &[a as u64]), Some(ib(32, a)));
        assert_eq!(call(&m, "ireduce_ptr_32", &[a as u64]), Some(ib(32, a)));
    }
    assert_eq!(m.safe_func::<i8, i64>("uext_8_64").unwrap().call(-1), 255);
    assert_eq!(
        m.safe_func::<i64, i8>("ireduce_64_8").unwrap().call(0x1ff),
        -1
    );
}

#[test]
fn float_conversions_saturate() {
    let mut text = String::new();
    for (it, _) in int_types() {
        for ft in ["f32", "f64"] {
            text += &format!(
                "fn @from_{it}_{ft}(%a: {it}) -> {ft} {{\nentry:\n    %r = fcvt_from_sint.{ft} %a\n    return %r\n}}\n"
            );
            text += &format!(
                "fn @to_{ft}_{it}(%a: {ft}) -> {it} {{\nentry:\n    %r = fcvt_to_sint.{it} %a\n    return %r\n}}\n"
            );
        }
    }
    text += r#"
fn @from_ptr(%a: ptr) -> f64 {
entry:
    %r = fcvt_from_sint.f64 %a
    return %r
}
fn @to_ptr(%a: f64) -> ptr {
entry:
    %r = fcvt_to_sint.ptr %a
    return %r
}
fn @promote(%a: f32) -> f64 {
entry:
    %r = fpromote.f64 %a
    return %r
}
fn @demote(%a: f64) -> f32 {
entry:
    %r = fdemote.f32 %a
    return %r
}
"#;
    let m = jit(&text);
    for &a in &INT_SAMPLES {
        for (it, bits) in int_types() {
            let s = ib(bits, a) as i64;
            assert_eq!(
                call(&m, &format!("from_{it}_f64"), &[s as u64]),
                Some((s as f64).to_bits()),
                "fcvt_from_sint.f64 {it} {s}"
            );
            assert_eq!(
                call(&m, &format!("from_{it}_f32"), &[s as u64]),
                Some((s as f32).to_bits() as u64),
                "fcvt_from_sint.f32 {it} {s}"
            );
        }
    }
    let floats = [
        0.0,
        -0.0,
        1.5,
        -1.5,
        127.9,
        128.0,
        -129.0,
        200.0,
        3e9,
        -3e9,
        1e19,
        -1e19,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -0.9,
        2147483647.0,
        -2147483648.0,
    ];
    for &x in &floats {
        // Rust's `as` saturates and maps NaN to 0: the IR's semantics.
        let want = |bits: u32| -> u64 {
            match bits {
                8 => ib(8, x as i8 as i64),
                32 => ib(32, x as i32 as i64),
                _ => x as i64 as u64,
            }
        };
        let want32 = |bits: u32| -> u64 {
            let y = x as f32;
            match bits {
                8 => ib(8, y as i8 as i64),
                32 => ib(32, y as i32 as i64),
                _ => y as i64 as u64,
            }
        };
        for (it, bits) in int_types() {
            assert_eq!(
                call(&m, &format!("to_f64_{it}"), &[x.to_bits()]),
                Some(want(bits)),
                "f64 {x} -> {it}"
            );
            assert_eq!(
                call(&m, &format!("to_f32_{it}"), &[(x as f32).to_bits() as u64]),
                Some(want32(bits)),
                "f32 {x} -> {it}"
            );
        }
        assert_eq!(call(&m, "to_ptr", &[x.to_bits()]), Some(x as i64 as u64));
        let d = f32::from_bits(call(&m, "demote", &[x.to_bits()]).unwrap() as u32);
        assert!(
            (d.is_nan() && x.is_nan()) || d.to_bits() == (x as f32).to_bits(),
            "demote {x}"
        );
        let y = x as f32;
        let p = f64::from_bits(call(&m, "promote", &[y.to_bits() as u64]).unwrap());
        assert!(same_f64(p, y as f64), "promote {y}");
    }
    assert_eq!(
        call(&m, "from_ptr", &[1 << 40]),
        Some(((1u64 << 40) as f64).to_bits())
    );
}

#[test]
fn bitcasts() {
    let m = jit(r#"
fn @f64_to_i64(%a: f64) -> i64 {
entry:
    %r = bitcast.i64 %a
    return %r
}
fn @i64_to_f64(%a: i64) -> f64 {
entry:
    %r = bitcast.f64 %a
    return %r
}
fn @ptr_to_f64(%a: ptr) -> f64 {
entry:
    %r = bitcast.f64 %a
    return %r
}
fn @f64_to_ptr(%a: f64) -> ptr {
entry:
    %r = bitcast.ptr %a
    return %r
}
fn @f32_to_i32(%a: f32) -> i32 {
entry:
    %r = bitcast.i32 %a
    return %r
}
fn @i32_to_f32(%a: i32) -> f32 {
entry:
    %r = bitcast.f32 %a
    return %r
}
fn @i64_to_ptr(%a: i64) -> ptr {
entry:
    %r = bitcast.ptr %a
    return %r
}
"#);
    let x = -1.25f64;
    assert_eq!(call(&m, "f64_to_i64", &[x.to_bits()]), Some(x.to_bits()));
    assert_eq!(call(&m, "i64_to_f64", &[x.to_bits()]), Some(x.to_bits()));
    assert_eq!(call(&m, "ptr_to_f64", &[x.to_bits()]), Some(x.to_bits()));
    assert_eq!(call(&m, "f64_to_ptr", &[x.to_bits()]), Some(x.to_bits()));
    let y = -3.5f32;
    // i32 results are sign-extended from their width.
    assert_eq!(
        call(&m, "f32_to_i32", &[y.to_bits() as u64]),
        Some(y.to_bits() as i32 as i64 as u64)
    );
    assert_eq!(
        call(&m, "i32_to_f32", &[y.to_bits() as i32 as i64 as u64]),
        Some(y.to_bits() as u64)
    );
    assert_eq!(call(&m, "i64_to_ptr", &[42]), Some(42));
    assert_eq!(
        m.safe_func::<f32, i32>("f32_to_i32").unwrap().call(1.0),
        0x3f80_0000
    );
}

#[test]
fn select_picks_a_when_nonzero() {
    let m = jit(r#"
fn @sel_i64(%c: i8, %a: i64, %b: i64) -> i64 {
entry:
    %r = select %c, %a, %b
    return %r
}
fn @sel_f64(%c: i64, %a: f64, %b: f64) -> f64 {
entry:
    %r = select %c, %a, %b
    return %r
}
fn @sel_i8(%c: i32, %a: i8, %b: i8) -> i8 {
entry:
    %r = select %c, %a, %b
    return %r
}
fn @sel_cmp(%x: i64, %y: i64) -> i64 {
entry:
    %c = icmp.slt %x, %y
    %r = select %c, %x, %y
    return %r
}
"#);
    let s = m.safe_func::<(i8, i64, i64), i64>("sel_i64").unwrap();
    assert_eq!(s.call((1, 10, 20)), 10);
    assert_eq!(s.call((0, 10, 20)), 20);
    assert_eq!(s.call((-128, 10, 20)), 10);
    let s = m.safe_func::<(i64, f64, f64), f64>("sel_f64").unwrap();
    assert_eq!(s.call((1 << 40, 1.5, 2.5)), 1.5);
    assert_eq!(s.call((0, 1.5, 2.5)), 2.5);
    assert_eq!(
        call(&m, "sel_i8", &[ib(32, 256), ib(8, -3), 4]),
        Some(ib(8, -3))
    );
    assert_eq!(call(&m, "sel_i8", &[0, ib(8, -3), 4]), Some(4));
    assert_eq!(call(&m, "sel_cmp", &[ib(64, -5), 3]), Some(ib(64, -5)));
}

#[test]
fn loads_and_stores_on_a_model_object() {
    let m = jit(r#"
extern fn @obj_new(i64) -> ptr
fn @values(%o: ptr) -> ptr {
entry:
    %w = dict_slot.load %o
    %one = iconst.i64 1
    %v = iadd %w, %one
    %p = bitcast.ptr %v
    return %p
}
fn @roundtrip() -> i64 {
entry:
    %n = iconst.i64 4
    %o = call @obj_new(%n)
    %v = call @values(%o)
    %a = iconst.i64 -7
    store %a, %v
    %b = iconst.i32 -2
    store %b, %v, 8
    %c = iconst.i8 0x7f
    store %c, %v, 12
    %d = fconst.f64 2.5
    store %d, %v, 16
    %e = fconst.f32 -0.5
    store %e, %v, 24
    %la = load.i64 %v
    %lb = load.i32 %v, 8
    %lc = load.i8 %v, 12
    %ld = load.f64 %v, 16
    %le = load.f32 %v, 24
    %lb64 = sext.i64 %lb
    %lc64 = sext.i64 %lc
    %ld64 = fcvt_to_sint.i64 %ld
    %two = fconst.f32 2.0
    %le2 = fmul %le, %two
    %le64 = fcvt_to_sint.i64 %le2
    %s1 = iadd %la, %lb64
    %s2 = iadd %s1, %lc64
    %s3 = iadd %s2, %ld64
    %s4 = iadd %s3, %le64
    return %s4
}
fn @unaligned() -> i64 {
entry:
    %n = iconst.i64 4
    %o = call @obj_new(%n)
    %v = call @values(%o)
    %a = iconst.i64 0x1122334455667788
    store %a, %v, 3
    %b = load.i64 %v, 3
    %c = load.i8 %v, 3
    %c64 = uext.i64 %c
    %r = isub %b, %c64
    return %r
}
fn @load_ptr(%p: ptr) -> ptr {
entry:
    %r = load.ptr %p, -8
    return %r
}
"#);
    // -7 + -2 + 127 + 2 + (-1) = 119
    // SAFETY: both functions load and store inside the values array of
    // an object they make with 4 attributes (32 bytes; offsets up to 28).
    unsafe {
        assert_eq!(m.func::<(), i64>("roundtrip").unwrap().call(()), 119);
        assert_eq!(
            m.func::<(), i64>("unaligned").unwrap().call(()),
            0x1122334455667788 - 0x88
        );
    }
    let cell: [u64; 2] = [0xdead_beef, 0];
    let p = cell.as_ptr() as u64 + 8;
    // SAFETY: reads `cell[0]` (`p - 8`), which the test owns.
    let got = unsafe { m.func::<Ptr, Ptr>("load_ptr").unwrap().call(Ptr(p)) };
    assert_eq!(got, Ptr(0xdead_beef));
}

#[test]
fn calls_and_recursion() {
    let m = jit(r#"
extern fn @sin(f64) -> f64
extern fn @exp(f64) -> f64
extern fn @print_i64(i64)
extern fn @print_f64(f64)
fn @fact(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %c = icmp.sle %n, %one
    brif %c, base, rec
base:
    return %one
rec:
    %m = isub %n, %one
    %r = call @fact(%m)
    %p = imul %n, %r
    return %p
}
fn @twice(%x: f64) -> f64 {
entry:
    %s = call @sin(%x)
    %e = call @exp(%s)
    %y = fadd %e, %e
    return %y
}
fn @many(%a: i8, %b: i32, %c: i64, %d: f32, %e: f64, %f: ptr) -> f64 {
entry:
    %a1 = fcvt_from_sint.f64 %a
    %b1 = fcvt_from_sint.f64 %b
    %c1 = fcvt_from_sint.f64 %c
    %d1 = fpromote.f64 %d
    %f1 = fcvt_from_sint.f64 %f
    %s1 = fadd %a1, %b1
    %s2 = fadd %s1, %c1
    %s3 = fadd %s2, %d1
    %s4 = fadd %s3, %e
    %s5 = fadd %s4, %f1
    return %s5
}
fn @caller() -> f64 {
entry:
    %a = iconst.i8 -1
    %b = iconst.i32 -2
    %c = iconst.i64 -3
    %d = fconst.f32 0.5
    %e = fconst.f64 0.25
    %f = iconst.ptr 100
    %r = call @many(%a, %b, %c, %d, %e, %f)
    return %r
}
fn @prints() {
entry:
    %x = iconst.i64 -42
    call @print_i64(%x)
    %y = fconst.f64 0.1
    call @print_f64(%y)
    return
}
"#);
    let fact = m.safe_func::<i64, i64>("fact").unwrap();
    assert_eq!(fact.call(10), 3_628_800);
    assert_eq!(fact.call(0), 1);
    let tw = m.safe_func::<f64, f64>("twice").unwrap();
    assert_eq!(tw.call(0.5), 2.0 * 0.5f64.sin().exp());
    let many = m
        .safe_func::<(i8, i32, i64, f32, f64, Ptr), f64>("many")
        .unwrap();
    assert_eq!(many.call((-1, -2, -3, 0.5, 0.25, Ptr(100))), 94.75);
    assert_eq!(m.safe_func::<(), f64>("caller").unwrap().call(()), 94.75);
    m.safe_func::<(), ()>("prints").unwrap().call(());
    assert_eq!(m.runtime().take_output(), "-42\n0.1\n");
    assert_eq!(call(&m, "prints", &[]), None);
}

#[test]
fn loops_with_block_params() {
    let m = jit(r#"
fn @sum(%n: i64) -> i64 {
entry:
    %zero = iconst.i64 0
    jump loop(%zero, %zero)
loop(%i: i64, %acc: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done(%acc)
body:
    %acc2 = iadd %acc, %i
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump loop(%i2, %acc2)
done(%r: i64):
    return %r
}
fn @nested(%n: i64) -> f64 {
entry:
    %z = iconst.i64 0
    %fz = fconst.f64 0.0
    jump outer(%z, %fz)
outer(%i: i64, %acc: f64):
    %ci = icmp.slt %i, %n
    brif %ci, inner_start, exit
inner_start:
    jump inner(%z, %acc)
inner(%j: i64, %a: f64):
    %cj = icmp.slt %j, %i
    brif %cj, inner_body, inner_done
inner_body:
    %half = fconst.f64 0.5
    %a2 = fadd %a, %half
    %one = iconst.i64 1
    %j2 = iadd %j, %one
    jump inner(%j2, %a2)
inner_done:
    %one2 = iconst.i64 1
    %i2 = iadd %i, %one2
    jump outer(%i2, %a)
exit:
    return %acc
}
fn @swap_params(%n: i64) -> i64 {
entry:
    %a = iconst.i64 1
    %b = iconst.i64 2
    jump l(%n, %a, %b)
l(%k: i64, %x: i64, %y: i64):
    %zero = iconst.i64 0
    %c = icmp.eq %k, %zero
    brif %c, out, again
again:
    %one = iconst.i64 1
    %k2 = isub %k, %one
    jump l(%k2, %y, %x)
out:
    %ten = iconst.i64 10
    %t = imul %x, %ten
    %r = iadd %t, %y
    return %r
}
"#);
    assert_eq!(m.safe_func::<i64, i64>("sum").unwrap().call(100), 4950);
    assert_eq!(m.safe_func::<i64, i64>("sum").unwrap().call(-3), 0);
    // sum_{i<10} i * 0.5 = 22.5
    assert_eq!(m.safe_func::<i64, f64>("nested").unwrap().call(10), 22.5);
    assert_eq!(m.safe_func::<i64, i64>("swap_params").unwrap().call(3), 21);
    assert_eq!(m.safe_func::<i64, i64>("swap_params").unwrap().call(4), 12);
}

/// Rust's reference of the spec §3.1 integer ops on `bits`-wide operands
/// (`None`: a fatal report, never called here).
fn int_ref_3_1(op: &str, bits: u32, a: i64, b: i64) -> Option<i64> {
    let mask = |x: i64| match bits {
        8 => x as u8 as i64,
        32 => x as u32 as i64,
        _ => x,
    };
    let (ua, ub) = (mask(a) as u64, mask(b) as u64);
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    let out = |r: i128| (r < min || r > max) as i64;
    Some(match op {
        "sdiv" => a.checked_div(b)?,
        "srem" => a.checked_rem(b).unwrap_or(0),
        "udiv" => ua.checked_div(ub)? as i64,
        "urem" => ua.checked_rem(ub)? as i64,
        "sadd_overflows" => out(a as i128 + b as i128),
        "ssub_overflows" => out(a as i128 - b as i128),
        "smul_overflows" => out(a as i128 * b as i128),
        _ => unreachable!("{op}"),
    })
}

/// Divisions (without the fatal cases: cli/tests/fault_parity.rs), overflow
/// tests and bit counts on every width against Rust's semantics.
#[test]
fn spec_3_1_integer_ops() {
    let ops = [
        "sdiv",
        "udiv",
        "srem",
        "urem",
        "sadd_overflows",
        "ssub_overflows",
        "smul_overflows",
    ];
    let mut text = String::new();
    for op in ops {
        for (t, _) in int_types() {
            let r = if op.ends_with("_overflows") { "i8" } else { t };
            text += &format!(
                "fn @{op}_{t}(%a: {t}, %b: {t}) -> {r} {{\nentry:\n    %r = {op} %a, %b\n    return %r\n}}\n"
            );
        }
    }
    for op in ["popcnt", "clz", "ctz"] {
        for (t, _) in int_types() {
            text += &format!(
                "fn @{op}_{t}(%a: {t}) -> {t} {{\nentry:\n    %r = {op} %a\n    return %r\n}}\n"
            );
        }
    }
    let m = jit(&text);
    for op in ops {
        for (t, bits) in int_types() {
            for &a in &INT_SAMPLES {
                for &b in &INT_SAMPLES {
                    let (a, b) = (ib(bits, a) as i64, ib(bits, b) as i64);
                    let min = ib(bits, i64::MIN >> (64 - bits)) as i64;
                    if op.contains("div") && (b == 0 || (op == "sdiv" && a == min && b == -1)) {
                        continue;
                    }
                    if op.contains("rem") && b == 0 {
                        continue;
                    }
                    let want = int_ref_3_1(op, bits, a, b).expect("not a fatal case");
                    let r_bits = if op.ends_with("_overflows") { 8 } else { bits };
                    let got = call(&m, &format!("{op}_{t}"), &[a as u64, b as u64]).unwrap();
                    assert_eq!(got, ib(r_bits, want), "{op}.{t} {a} {b}");
                }
            }
        }
    }
    for (t, bits) in int_types() {
        for &a in &INT_SAMPLES {
            let u = ib(bits, a) & (u64::MAX >> (64 - bits));
            let want = [
                ("popcnt", u.count_ones()),
                ("clz", u.leading_zeros() - (64 - bits)),
                ("ctz", u.trailing_zeros().min(bits)),
            ];
            for (op, w) in want {
                let got = call(&m, &format!("{op}_{t}"), &[ib(bits, a)]).unwrap();
                assert_eq!(got, w as u64, "{op}.{t} {a}");
            }
        }
    }
}

/// The roundings (ties to even, canonical NaN) and `fcopysign` (a bit op).
#[test]
fn spec_3_1_roundings() {
    let mut text = String::new();
    for op in ["ffloor", "fceil", "ftrunc", "fnearest"] {
        for t in ["f32", "f64"] {
            text += &format!(
                "fn @{op}_{t}(%a: {t}) -> {t} {{\nentry:\n    %r = {op} %a\n    return %r\n}}\n"
            );
        }
    }
    text +=
        "fn @cs(%a: f64, %b: f64) -> f64 {\nentry:\n    %r = fcopysign %a, %b\n    return %r\n}\n";
    let m = jit(&text);
    let samples = [
        -2.5,
        -1.5,
        -0.5,
        -0.0,
        0.5,
        1.5,
        2.5,
        2.7,
        -2.7,
        1e300,
        f64::INFINITY,
        f64::from_bits(0xfff0_0000_0000_0001),
    ];
    for x in samples {
        type Rounding = fn(f64) -> f64;
        let refs: [(&str, Rounding); 4] = [
            ("ffloor", f64::floor),
            ("fceil", f64::ceil),
            ("ftrunc", f64::trunc),
            ("fnearest", f64::round_ties_even),
        ];
        for (op, f) in refs {
            let want = f(x);
            let want = if want.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                want.to_bits()
            };
            assert_eq!(
                call(&m, &format!("{op}_f64"), &[x.to_bits()]),
                Some(want),
                "{op} {x}"
            );
            let x32 = x as f32;
            let w32 = f(x32 as f64) as f32;
            let w32 = if w32.is_nan() {
                0x7fc0_0000
            } else {
                w32.to_bits() as u64
            };
            let got =
                call(&m, &format!("{op}_f32"), &[x32.to_bits() as u64]).map(|b| b & 0xffff_ffff);
            assert_eq!(got, Some(w32), "{op}.f32 {x32}");
        }
    }
    let nan = 0x7ff0_0000_0000_0001u64;
    assert_eq!(
        call(&m, "cs", &[nan, (-1.0f64).to_bits()]),
        Some(nan | 1 << 63)
    );
    assert_eq!(
        call(&m, "cs", &[2.0f64.to_bits(), (-0.0f64).to_bits()]),
        Some((-2.0f64).to_bits())
    );
}

/// `br_table` (spec §3.1), as `interp/tests/ops.rs`'s test of the same
/// name: the index is unsigned and whole (the lowering clamps it before
/// narrowing it to Cranelift's `i32` index, so 2^32 is no 0).
#[test]
fn br_table_index_is_unsigned_and_whole() {
    let m = jit(r#"
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
fn @empty(%i: ptr) -> ptr {
entry:
    br_table %i, d(%i), []
d(%x: ptr):
    return %x
}
"#);
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
        assert_eq!(call(&m, "main", &[i]), Some(want), "index {i:#x}");
    }
    for i in [0u64, 7, u64::MAX] {
        assert_eq!(call(&m, "empty", &[i]), Some(i));
    }
}
