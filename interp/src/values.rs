//! Values as raw bits: the arithmetic, comparisons and conversions of
//! spec §3 on the `u64` words the interpreter keeps (ints sign-extended,
//! f32 in the low 32 bits), with NaN results canonical as compiled code
//! makes them. Pure functions; nothing here touches memory or the runtime.

use guardlift_ir::literal::{canonical_f32_bits, canonical_f64_bits, norm_int};
use guardlift_ir::{BinOp, ConvOp, FloatCC, IntCC, Type, UnOp};
use guardlift_runtime::adstack::AdElem;

pub(crate) fn f32v(b: u64) -> f32 {
    f32::from_bits(b as u32)
}

pub(crate) fn f64v(b: u64) -> f64 {
    f64::from_bits(b)
}

pub(crate) fn fbits32(x: f32) -> u64 {
    x.to_bits() as u64
}

/// `fmin` (or `fmax` with `max`): NaN if either is NaN, −0 below +0.
/// f32 operands go through f64 exactly (every f32 is an f64 and the result
/// is one of the operands or a NaN, which the caller canonicalizes).
fn fminmax(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() != max {
            a
        } else {
            b
        }
    } else if max {
        a.max(b)
    } else {
        a.min(b)
    }
}

/// The low `ty.bits()` bits of `x` (zero-extended).
pub(crate) fn mask(ty: Type, x: u64) -> u64 {
    match ty.bits() {
        8 => x & 0xff,
        32 => x & 0xffff_ffff,
        _ => x,
    }
}

/// iadd … sshr on `ty`, wrapping; shift amounts taken modulo the width.
pub(crate) fn int_binop(op: BinOp, ty: Type, a: u64, b: u64) -> u64 {
    let bits = ty.bits();
    let sh = (b & (bits as u64 - 1)) as u32;
    let r = match op {
        BinOp::Iadd => a.wrapping_add(b),
        BinOp::Isub => a.wrapping_sub(b),
        BinOp::Imul => a.wrapping_mul(b),
        BinOp::Band => a & b,
        BinOp::Bor => a | b,
        BinOp::Bxor => a ^ b,
        BinOp::Ishl => a << sh,
        BinOp::Ushr => mask(ty, a) >> sh,
        BinOp::Sshr => ((norm_int(ty, a) as i64) >> sh) as u64,
        BinOp::SaddOverflows | BinOp::SsubOverflows | BinOp::SmulOverflows => {
            return overflows(op, ty, a, b) as u64
        }
        _ => 0,
    };
    norm_int(ty, r)
}

/// `sadd_overflows` … `smul_overflows`: does the signed operation on `ty`
/// leave the type's range?
fn overflows(op: BinOp, ty: Type, a: u64, b: u64) -> bool {
    let (x, y) = (
        norm_int(ty, a) as i64 as i128,
        norm_int(ty, b) as i64 as i128,
    );
    let r = match op {
        BinOp::SaddOverflows => x + y,
        BinOp::SsubOverflows => x - y,
        _ => x * y,
    };
    let bits = ty.bits();
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    r < min || r > max
}

/// Why a division has no result (spec §3.1: fatal reports).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum DivFault {
    /// The divisor is 0 (`div_by_zero`).
    ByZero,
    /// `sdiv` of the minimum by −1 (`int_overflow`).
    Overflow,
}

/// sdiv udiv srem urem on `ty`, truncating (C semantics); `srem` of the
/// minimum by −1 is 0.
pub(crate) fn int_div(op: BinOp, ty: Type, a: u64, b: u64) -> Result<u64, DivFault> {
    let (sa, sb) = (norm_int(ty, a) as i64, norm_int(ty, b) as i64);
    let (ua, ub) = (mask(ty, a), mask(ty, b));
    if ub == 0 {
        return Err(DivFault::ByZero);
    }
    let min = norm_int(ty, 1u64 << (ty.bits() - 1)) as i64;
    let r = match op {
        BinOp::Sdiv if sa == min && sb == -1 => return Err(DivFault::Overflow),
        BinOp::Sdiv => sa.wrapping_div(sb) as u64,
        BinOp::Srem => sa.wrapping_rem(sb) as u64,
        BinOp::Udiv => ua / ub,
        _ => ua % ub,
    };
    Ok(norm_int(ty, r))
}

/// popcnt, clz, ctz on the `ty.bits()` bits of `x`.
fn bit_count(op: UnOp, ty: Type, x: u64) -> u64 {
    let bits = ty.bits();
    let m = mask(ty, x);
    let n = match op {
        UnOp::Popcnt => m.count_ones(),
        UnOp::Clz => m.leading_zeros() - (64 - bits),
        _ => m.trailing_zeros().min(bits),
    };
    n as u64
}

/// fadd … fmax; a NaN result is the canonical NaN (spec §3), as compiled
/// code makes it (Cranelift's NaN canonicalization).
pub(crate) fn float_binop(op: BinOp, ty: Type, a: u64, b: u64) -> u64 {
    if ty == Type::F32 {
        let (x, y) = (f32v(a), f32v(b));
        canonical_f32_bits(match op {
            BinOp::Fadd => x + y,
            BinOp::Fsub => x - y,
            BinOp::Fmul => x * y,
            BinOp::Fdiv => x / y,
            BinOp::Fmin => fminmax(x as f64, y as f64, false) as f32,
            BinOp::Fcopysign => return fbits32(x.copysign(y)),
            _ => fminmax(x as f64, y as f64, true) as f32,
        }) as u64
    } else {
        let (x, y) = (f64v(a), f64v(b));
        canonical_f64_bits(match op {
            BinOp::Fadd => x + y,
            BinOp::Fsub => x - y,
            BinOp::Fmul => x * y,
            BinOp::Fdiv => x / y,
            BinOp::Fmin => fminmax(x, y, false),
            BinOp::Fcopysign => return x.copysign(y).to_bits(),
            _ => fminmax(x, y, true),
        })
    }
}

/// fneg, fabs (bit operations, NaN payload kept), fsqrt and the roundings
/// (canonical NaN); popcnt, clz, ctz on ints.
pub(crate) fn unary(op: UnOp, ty: Type, x: u64) -> u64 {
    if op.is_int() {
        bit_count(op, ty, x)
    } else if ty == Type::F32 {
        let f = f32v(x);
        match op {
            UnOp::Fneg => fbits32(-f),
            UnOp::Fabs => fbits32(f.abs()),
            UnOp::Fsqrt => canonical_f32_bits(f.sqrt()) as u64,
            UnOp::Ffloor => canonical_f32_bits(f.floor()) as u64,
            UnOp::Fceil => canonical_f32_bits(f.ceil()) as u64,
            UnOp::Ftrunc => canonical_f32_bits(f.trunc()) as u64,
            _ => canonical_f32_bits(f.round_ties_even()) as u64,
        }
    } else {
        let f = f64v(x);
        match op {
            UnOp::Fneg => (-f).to_bits(),
            UnOp::Fabs => f.abs().to_bits(),
            UnOp::Fsqrt => canonical_f64_bits(f.sqrt()),
            UnOp::Ffloor => canonical_f64_bits(f.floor()),
            UnOp::Fceil => canonical_f64_bits(f.ceil()),
            UnOp::Ftrunc => canonical_f64_bits(f.trunc()),
            _ => canonical_f64_bits(f.round_ties_even()),
        }
    }
}

pub(crate) fn icmp(cc: IntCC, ty: Type, a: u64, b: u64) -> bool {
    let (sa, sb) = (norm_int(ty, a) as i64, norm_int(ty, b) as i64);
    let (ua, ub) = (mask(ty, a), mask(ty, b));
    match cc {
        IntCC::Eq => ua == ub,
        IntCC::Ne => ua != ub,
        IntCC::Slt => sa < sb,
        IntCC::Sle => sa <= sb,
        IntCC::Sgt => sa > sb,
        IntCC::Sge => sa >= sb,
        IntCC::Ult => ua < ub,
        IntCC::Ule => ua <= ub,
        IntCC::Ugt => ua > ub,
        IntCC::Uge => ua >= ub,
    }
}

pub(crate) fn fcmp(cc: FloatCC, ty: Type, a: u64, b: u64) -> bool {
    let (x, y) = if ty == Type::F32 {
        (f32v(a) as f64, f32v(b) as f64)
    } else {
        (f64v(a), f64v(b))
    };
    match cc {
        FloatCC::Eq => x == y,
        FloatCC::Ne => x != y,
        FloatCC::Lt => x < y,
        FloatCC::Le => x <= y,
        FloatCC::Gt => x > y,
        FloatCC::Ge => x >= y,
    }
}

pub(crate) fn conv(op: ConvOp, from: Type, to: Type, a: u64) -> u64 {
    match op {
        ConvOp::Sext => norm_int(to, norm_int(from, a)),
        ConvOp::Uext => norm_int(to, mask(from, a)),
        ConvOp::Ireduce => norm_int(to, a),
        ConvOp::FcvtFromSint => {
            let x = norm_int(from, a) as i64;
            if to == Type::F32 {
                fbits32(x as f32)
            } else {
                (x as f64).to_bits()
            }
        }
        ConvOp::FcvtToSint => {
            let x = if from == Type::F32 {
                f32v(a) as f64
            } else {
                f64v(a)
            };
            let v = match to.bits() {
                8 => x as i8 as i64,
                32 => x as i32 as i64,
                _ => x as i64,
            };
            v as u64
        }
        ConvOp::Fpromote => canonical_f64_bits(f32v(a) as f64),
        ConvOp::Fdemote => canonical_f32_bits(f64v(a) as f32) as u64,
        ConvOp::Bitcast => match (from.bits(), to.is_float()) {
            (32, true) => mask(Type::I32, a),
            (32, false) => norm_int(Type::I32, a),
            _ => a,
        },
    }
}

/// The bits `fconst` of type `ty` makes of `value`.
pub(crate) fn fconst(ty: Type, value: f64) -> u64 {
    if ty == Type::F32 {
        fbits32(value as f32)
    } else {
        value.to_bits()
    }
}

/// Canonical bits of a value of type `ty` (ints sign-extended, f32 in the low 32 bits).
pub(crate) fn canon(ty: Type, x: u64) -> u64 {
    match ty {
        Type::F32 => x & 0xffff_ffff,
        t if t.is_int() => norm_int(t, x),
        _ => x,
    }
}

/// Canonical bits of an adstack element read back from its buffer.
pub(crate) fn canon_elem(e: AdElem, x: u64) -> u64 {
    match e {
        AdElem::F32 => x & 0xffff_ffff,
        _ => x,
    }
}

/// The bits a `store` of a `ty` value writes (f32 as its 32 bits).
pub(crate) fn store_bits(ty: Type, x: u64) -> u64 {
    mask(
        if ty.is_float() && ty.bits() == 32 {
            Type::I32
        } else {
            ty
        },
        x,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fmin/fmax through `fminmax` keep what the four separate functions
    /// did: signed zeros ordered, NaN in → NaN out, f32 exact through f64.
    #[test]
    fn fmin_fmax_signed_zero_and_nan() {
        let z = 0.0f64;
        let nz = -0.0f64;
        assert!(fminmax(z, nz, false).is_sign_negative());
        assert!(fminmax(nz, z, false).is_sign_negative());
        assert!(fminmax(z, nz, true).is_sign_positive());
        assert!(fminmax(nz, z, true).is_sign_positive());
        assert!(fminmax(f64::NAN, 1.0, false).is_nan());
        assert!(fminmax(1.0, f64::NAN, true).is_nan());
        assert_eq!(fminmax(1.5, -2.0, false), -2.0);
        assert_eq!(fminmax(1.5, -2.0, true), 1.5);
        let (a, b) = (f32::from_bits(0x3f80_0001), f32::from_bits(0x3f80_0002));
        let min = float_binop(BinOp::Fmin, Type::F32, fbits32(a), fbits32(b));
        let max = float_binop(BinOp::Fmax, Type::F32, fbits32(a), fbits32(b));
        assert_eq!((min, max), (0x3f80_0001, 0x3f80_0002));
        let nzf = fbits32(-0.0);
        let zf = fbits32(0.0);
        assert_eq!(float_binop(BinOp::Fmin, Type::F32, zf, nzf), nzf);
        assert_eq!(float_binop(BinOp::Fmax, Type::F32, nzf, zf), zf);
    }
}
