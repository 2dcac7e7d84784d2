//! Choices over `arbitrary` bytes: [`Src`], which every generator decision goes through.

use arbitrary::{Arbitrary, Unstructured};
use guardlift_ir::Type;

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

    pub(super) fn scalar_ty(&mut self) -> Type {
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
    pub(super) fn arg_bits(&mut self, ty: Type) -> u64 {
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
