//! Runtime values at the API boundary: entry arguments parsed from text and
//! results formatted for output, as raw bits.
//!
//! Bit convention shared by every engine: integers are sign-extended to 64
//! bits from their width, `ptr` is the address, `f32` is `to_bits()` in the
//! low 32 bits, `f64` is `to_bits()`.

use crate::types::Type;
use guardlift_abi::{format_f32, format_f64};

/// The canonical quiet NaN of f64 (spec §3): the bits of every NaN that
/// fadd, fsub, fmul, fdiv, fmin, fmax, fsqrt and fpromote produce.
pub const CANONICAL_NAN_F64: u64 = 0x7ff8_0000_0000_0000;
/// The canonical quiet NaN of f32 (spec §3), likewise (and of fdemote).
pub const CANONICAL_NAN_F32: u32 = 0x7fc0_0000;

/// `x`'s bits, or [`CANONICAL_NAN_F64`] if `x` is a NaN.
pub fn canonical_f64_bits(x: f64) -> u64 {
    if x.is_nan() {
        CANONICAL_NAN_F64
    } else {
        x.to_bits()
    }
}

/// `x`'s bits, or [`CANONICAL_NAN_F32`] if `x` is a NaN.
pub fn canonical_f32_bits(x: f32) -> u32 {
    if x.is_nan() {
        CANONICAL_NAN_F32
    } else {
        x.to_bits()
    }
}

/// Normalizes integer bits to the canonical sign-extended form of `ty`.
pub fn norm_int(ty: Type, x: u64) -> u64 {
    match ty.bits() {
        8 => x as i8 as i64 as u64,
        32 => x as i32 as i64 as u64,
        _ => x,
    }
}

fn parse_int(text: &str) -> Option<i128> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()?
    } else {
        if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        body.parse::<i128>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// Is `s` `[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`?
fn is_decimal_float(s: &str) -> bool {
    fn digits(b: &[u8], i: &mut usize) -> bool {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    }
    let b = s.as_bytes();
    let mut i = 0;
    if !digits(b, &mut i) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(b, &mut i) {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(b, &mut i) {
            return false;
        }
    }
    i == b.len()
}

/// Parses a float written as spec §1 says — decimal (`0.95`, `-2.5e-3`),
/// `inf`, `-inf`, `nan` — for type `ty` (f32 values are rounded once,
/// directly to f32). The one float grammar of IR literals and entry
/// arguments: a decimal whose value does not fit in `ty` (it would round to
/// infinity, e.g. `1e309`) is an error; write `inf` for infinity.
pub fn parse_float(ty: Type, s: &str) -> Result<f64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    match body {
        "nan" => return Ok(f64::NAN),
        "inf" => {
            return Ok(if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        _ => {}
    }
    if !is_decimal_float(body) {
        return Err(format!("invalid float literal `{s}`"));
    }
    let v = if ty == Type::F32 {
        s.parse::<f32>().map(f64::from).ok()
    } else {
        s.parse::<f64>().ok()
    };
    match v {
        Some(v) if v.is_finite() => Ok(v),
        Some(_) => Err(format!("float literal out of range for {ty}: {s}")),
        None => Err(format!("invalid float literal `{s}`")),
    }
}

/// Parses one entry argument for a parameter of type `ty` into canonical
/// bits. Floats follow [`parse_float`], exactly as IR literals do.
pub fn parse_arg(ty: Type, text: &str) -> Result<u64, String> {
    match ty {
        Type::F32 | Type::F64 => {
            let v = parse_float(ty, text)?;
            Ok(if ty == Type::F32 {
                (v as f32).to_bits() as u64
            } else {
                v.to_bits()
            })
        }
        Type::AdStack(_) => Err("adstack handles cannot be passed as arguments".into()),
        _ => {
            let v = parse_int(text).ok_or_else(|| format!("`{text}` is not an integer"))?;
            let bits = ty.bits();
            let (min, max) = (-(1i128 << (bits - 1)), (1i128 << bits) - 1);
            if v < min || v > max {
                return Err(format!("`{text}` does not fit in {ty}"));
            }
            Ok(norm_int(ty, v as u64))
        }
    }
}

/// Formats a result of type `ty` for plain output.
pub fn format_value(ty: Type, bits: u64) -> String {
    match ty {
        Type::F32 => format_f32(f32::from_bits(bits as u32)),
        Type::F64 => format_f64(f64::from_bits(bits)),
        Type::Ptr => format!("{bits}"),
        _ => format!("{}", norm_int(ty, bits) as i64),
    }
}

/// The JSON form of a result: a number, or `"nan"`, `"inf"`, `"-inf"`.
pub fn json_value(ty: Type, bits: u64) -> String {
    let s = format_value(ty, bits);
    match s.as_str() {
        "nan" | "inf" | "-inf" => format!("\"{s}\""),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        assert_eq!(parse_arg(Type::I64, "-5").unwrap(), (-5i64) as u64);
        assert_eq!(parse_arg(Type::I64, "0x10").unwrap(), 16);
        assert_eq!(parse_arg(Type::I8, "0xff").unwrap(), u64::MAX);
        assert!(parse_arg(Type::I8, "256").is_err());
        assert!(parse_arg(Type::I64, "1.5").is_err());
        assert_eq!(
            format_value(Type::I8, parse_arg(Type::I8, "-1").unwrap()),
            "-1"
        );
        assert_eq!(
            format_value(Type::F64, parse_arg(Type::F64, "0.5").unwrap()),
            "0.5"
        );
        assert_eq!(
            format_value(Type::F32, parse_arg(Type::F32, "0.1").unwrap()),
            "0.1"
        );
        assert_eq!(json_value(Type::F64, f64::NAN.to_bits()), "\"nan\"");
        assert_eq!(
            json_value(Type::F64, f64::NEG_INFINITY.to_bits()),
            "\"-inf\""
        );
        assert_eq!(format_value(Type::F64, 1.0f64.to_bits()), "1.0");
    }

    #[test]
    fn args_and_ir_literals_share_one_float_grammar() {
        // Out of range is an error for both (write `inf`), as IR literals are.
        assert!(parse_arg(Type::F64, "1e309").is_err());
        assert!(parse_arg(Type::F32, "1e39").is_err());
        assert!(parse_arg(Type::F64, "infinity").is_err());
        assert!(parse_arg(Type::F64, ".5").is_err());
        assert_eq!(
            parse_arg(Type::F64, "inf").unwrap(),
            f64::INFINITY.to_bits()
        );
        assert_eq!(
            parse_arg(Type::F32, "-2.5e-3").unwrap(),
            (-2.5e-3f32).to_bits() as u64
        );
        let ir = "fn @f() -> f64 {\nentry:\n    %x = fconst.f64 1e309\n    return %x\n}\n";
        let e = crate::parse_module(ir).unwrap_err();
        let e = e.diagnostic().expect("an error in the text");
        assert_eq!((e.loc.line, e.loc.col), (3, 21), "{e}");
        assert_eq!(
            e.msg,
            parse_arg(Type::F64, "1e309").unwrap_err(),
            "one message for both"
        );
    }
}
