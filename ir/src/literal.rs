//! Runtime values at the API boundary: entry arguments parsed from text and
//! results formatted for output, as raw bits.
//!
//! Bit convention shared by every engine: integers are sign-extended to 64
//! bits from their width, `ptr` is the address, `f32` is `to_bits()` in the
//! low 32 bits, `f64` is `to_bits()`.

use crate::types::Type;
use guardlift_runtime::{format_f32, format_f64};

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

/// Parses one entry argument for a parameter of type `ty` into canonical bits.
pub fn parse_arg(ty: Type, text: &str) -> Result<u64, String> {
    match ty {
        Type::F32 | Type::F64 => {
            let v: f64 = match text {
                "nan" => f64::NAN,
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => text
                    .parse::<f64>()
                    .map_err(|_| format!("`{text}` is not a {ty} number"))?,
            };
            Ok(if ty == Type::F32 {
                let f: f32 = if v.is_finite() {
                    text.parse::<f32>().unwrap_or(v as f32)
                } else {
                    v as f32
                };
                f.to_bits() as u64
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
}
