//! Calling a native function with an IR signature from the interpreter
//! (`run --link LIB.so --engine interp`), without libffi.
//!
//! Under the SysV x86-64 and AAPCS64 C ABIs, integer-class arguments
//! (`i8 i32 i64 ptr`) and float-class arguments (`f32 f64`) are assigned to
//! two separate register files, each in parameter order, and neither file
//! spills into the other while it has registers left. So every signature
//! with at most [`MAX_INT_ARGS`] integer and [`MAX_FLOAT_ARGS`] float
//! parameters is called as one fixed C function type: all integer
//! registers, then all float registers (`extern "C" fn(i64 × N, f64 × 8)`),
//! the unused registers carrying zeros the callee never reads. Integers go
//! sign-extended to 64 bits (the interpreter's canonical bits); an `f32`
//! goes as an `f64` whose low 32 bits are the `f32`'s bits (the callee
//! reads the low half of the register). The result is read from the
//! integer return register or, for a float result, the float one (an
//! `f32`: its low 32 bits); the interpreter canonicalises it by type as it
//! does a built-in's. A larger signature would pass arguments on the stack:
//! [`NativeSig::new`] refuses it (a link error naming the extern).

use guardlift_ir::Type;

/// Integer-class parameters passed in registers: 6 on x86-64 (rdi, rsi,
/// rdx, rcx, r8, r9), 8 on aarch64 (x0–x7).
#[cfg(target_arch = "x86_64")]
pub const MAX_INT_ARGS: usize = 6;
/// Integer-class parameters passed in registers: 6 on x86-64 (rdi, rsi,
/// rdx, rcx, r8, r9), 8 on aarch64 (x0–x7).
#[cfg(target_arch = "aarch64")]
pub const MAX_INT_ARGS: usize = 8;
/// No native calls from the interpreter on other hosts.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const MAX_INT_ARGS: usize = 0;

/// Float-class parameters passed in registers (xmm0–7, v0–v7).
pub const MAX_FLOAT_ARGS: usize = 8;

/// The one C function type every call goes through, returning in the
/// integer register (`I`) or the float register (`F`).
macro_rules! native_fn_types {
    ($($i:ident)*) => {
        type IntRet = unsafe extern "C" fn($($i: u64,)* f64, f64, f64, f64, f64, f64, f64, f64) -> u64;
        type FloatRet = unsafe extern "C" fn($($i: u64,)* f64, f64, f64, f64, f64, f64, f64, f64) -> f64;
    };
}
#[cfg(target_arch = "x86_64")]
native_fn_types!(a0 a1 a2 a3 a4 a5);
#[cfg(not(target_arch = "x86_64"))]
native_fn_types!(a0 a1 a2 a3 a4 a5 a6 a7);

/// A signature the interpreter can call natively.
#[derive(Clone, Debug)]
pub struct NativeSig {
    params: Vec<Type>,
    ret: Option<Type>,
}

impl NativeSig {
    /// The signature `(params) -> ret`, or why it cannot be called: more
    /// than [`MAX_INT_ARGS`] integer or [`MAX_FLOAT_ARGS`] float parameters
    /// (they would go on the stack), or a type no C function takes.
    pub fn new(params: &[Type], ret: Option<Type>) -> Result<NativeSig, String> {
        let ints = params.iter().filter(|t| t.is_int()).count();
        let floats = params.iter().filter(|t| t.is_float()).count();
        let other = params
            .iter()
            .chain(&ret)
            .any(|t| !t.is_int() && !t.is_float());
        if other {
            return Err("an adstack handle is no C type".into());
        }
        if MAX_INT_ARGS == 0 {
            return Err(format!("no native calls on {}", std::env::consts::ARCH));
        }
        if ints > MAX_INT_ARGS || floats > MAX_FLOAT_ARGS {
            return Err(format!(
                "{ints} integer and {floats} float parameter(s): the interpreter calls a \
                 library function with at most {MAX_INT_ARGS} integer and {MAX_FLOAT_ARGS} \
                 float parameters on {} (the rest would go on the stack)",
                std::env::consts::ARCH
            ));
        }
        Ok(NativeSig {
            params: params.to_vec(),
            ret,
        })
    }

    /// Calls the C function at `addr` with raw-bit arguments `args` (one per
    /// parameter, the interpreter's canonical bits); its raw-bit result (0
    /// for void; an `f32` in the low 32 bits, upper bits zero).
    ///
    /// # Safety
    /// `addr` must be a function that the C ABI lets be called with this
    /// signature, and calling it with `args` must be sound (it may do
    /// anything the C function does).
    pub unsafe fn call(&self, addr: usize, args: &[u64]) -> u64 {
        let mut ints = [0u64; 8];
        let mut floats = [0f64; MAX_FLOAT_ARGS];
        let (mut ni, mut nf) = (0, 0);
        for (t, &a) in self.params.iter().zip(args) {
            match t {
                // f32: its bits in the low half of the register.
                Type::F32 => {
                    floats[nf] = f64::from_bits(a & 0xffff_ffff);
                    nf += 1;
                }
                Type::F64 => {
                    floats[nf] = f64::from_bits(a);
                    nf += 1;
                }
                _ => {
                    ints[ni] = a;
                    ni += 1;
                }
            }
        }
        let [i0, i1, i2, i3, i4, i5, i6, i7] = ints;
        // Six integer registers on x86-64.
        #[cfg(target_arch = "x86_64")]
        let _ = (i6, i7);
        let [f0, f1, f2, f3, f4, f5, f6, f7] = floats;
        let float_ret = self.ret.is_some_and(Type::is_float);
        // SAFETY: the caller vouches that `addr` is a C function whose
        // parameters are `self.params`; `new` checked they all fit in
        // registers, where the C ABI puts integer-class and float-class
        // arguments each in order into its own register file, so calling it
        // through this type (every register of both files, the unused ones
        // zero) passes each argument where the callee reads it, and the
        // result is in the return register of its class.
        unsafe {
            if float_ret {
                let f: FloatRet = std::mem::transmute::<usize, FloatRet>(addr);
                #[cfg(target_arch = "x86_64")]
                let r = f(i0, i1, i2, i3, i4, i5, f0, f1, f2, f3, f4, f5, f6, f7);
                #[cfg(not(target_arch = "x86_64"))]
                let r = f(
                    i0, i1, i2, i3, i4, i5, i6, i7, f0, f1, f2, f3, f4, f5, f6, f7,
                );
                let bits = r.to_bits();
                if self.ret == Some(Type::F32) {
                    bits & 0xffff_ffff
                } else {
                    bits
                }
            } else {
                let f: IntRet = std::mem::transmute::<usize, IntRet>(addr);
                #[cfg(target_arch = "x86_64")]
                let r = f(i0, i1, i2, i3, i4, i5, f0, f1, f2, f3, f4, f5, f6, f7);
                #[cfg(not(target_arch = "x86_64"))]
                let r = f(
                    i0, i1, i2, i3, i4, i5, i6, i7, f0, f1, f2, f3, f4, f5, f6, f7,
                );
                match self.ret {
                    Some(_) => r,
                    None => 0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Type::*;

    extern "C" fn mixed(a: i8, x: f32, b: i32, y: f64, c: i64, p: *const i64, z: f32) -> f64 {
        // SAFETY: the tests pass a pointer to a live i64.
        let d = unsafe { *p };
        a as f64 + x as f64 * 10.0 + b as f64 * 100.0 + y + c as f64 + d as f64 + z as f64
    }
    extern "C" fn ret_i8(a: i64, b: i8) -> i8 {
        (a as i8).wrapping_add(b)
    }
    extern "C" fn ret_i32(a: i32, x: f64, b: i32) -> i32 {
        a.wrapping_mul(b).wrapping_add(x as i32)
    }
    extern "C" fn ret_f32(x: f32, n: i64, y: f32) -> f32 {
        x * n as f32 - y
    }
    #[allow(clippy::too_many_arguments)]
    extern "C" fn all_regs(
        a: i64,
        x0: f64,
        b: i64,
        x1: f64,
        c: i64,
        x2: f64,
        d: i64,
        x3: f64,
        e: i64,
        x4: f64,
        f: i64,
        x5: f64,
        x6: f64,
        x7: f64,
    ) -> i64 {
        let ints = a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
        let fl = x0 + 2.0 * x1 + 3.0 * x2 + 4.0 * x3 + 5.0 * x4 + 6.0 * x5 + 7.0 * x6 + 8.0 * x7;
        ints * 1000 + fl as i64
    }
    static VOID_HIT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    extern "C" fn void_fn(v: i64) {
        VOID_HIT.store(v, std::sync::atomic::Ordering::SeqCst);
    }

    fn call(f: usize, params: &[Type], ret: Option<Type>, args: &[u64]) -> u64 {
        let sig = NativeSig::new(params, ret).unwrap();
        // SAFETY: each test passes a function of exactly this signature.
        unsafe { sig.call(f, args) }
    }

    fn f32b(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn mixed_int_float_f32_pointer_params() {
        let d: i64 = 7000;
        let args = [
            (-3i64) as u64,
            f32b(1.5),
            (-2i64) as u64,
            0.25f64.to_bits(),
            40,
            &d as *const i64 as u64,
            f32b(0.5),
        ];
        let r = call(
            mixed as *const () as usize,
            &[I8, F32, I32, F64, I64, Ptr, F32],
            Some(F64),
            &args,
        );
        assert_eq!(
            f64::from_bits(r),
            -3.0 + 15.0 - 200.0 + 0.25 + 40.0 + 7000.0 + 0.5
        );
    }

    #[test]
    fn small_int_results_in_the_low_bits() {
        let r = call(
            ret_i8 as *const () as usize,
            &[I64, I8],
            Some(I8),
            &[120, 10],
        );
        assert_eq!(r as u8 as i8, 120i8.wrapping_add(10));
        let r = call(
            ret_i32 as *const () as usize,
            &[I32, F64, I32],
            Some(I32),
            &[(-70000i64) as u64, 2.9f64.to_bits(), 70000],
        );
        assert_eq!(r as u32 as i32, (-70000i32).wrapping_mul(70000) + 2);
    }

    #[test]
    fn f32_result_is_the_low_half() {
        let r = call(
            ret_f32 as *const () as usize,
            &[F32, I64, F32],
            Some(F32),
            &[f32b(2.5), 3, f32b(0.25)],
        );
        assert_eq!(r >> 32, 0);
        assert_eq!(f32::from_bits(r as u32), 2.5 * 3.0 - 0.25);
    }

    #[test]
    fn every_register_of_both_files() {
        let mut params = Vec::new();
        let mut args = Vec::new();
        for i in 0..6u64 {
            params.extend([I64, F64]);
            args.extend([i + 1, ((i + 1) as f64).to_bits()]);
        }
        params.extend([F64, F64]);
        args.extend([7.0f64.to_bits(), 8.0f64.to_bits()]);
        let r = call(all_regs as *const () as usize, &params, Some(I64), &args);
        let ints: i64 = (1..=6).map(|i| i * i).sum();
        let fl: i64 = (1..=8).map(|i| i * i).sum();
        assert_eq!(r as i64, ints * 1000 + fl);
    }

    #[test]
    fn void_result_is_zero() {
        let r = call(void_fn as *const () as usize, &[I64], None, &[99]);
        assert_eq!(r, 0);
        assert_eq!(VOID_HIT.load(std::sync::atomic::Ordering::SeqCst), 99);
    }

    #[test]
    fn signatures_beyond_the_registers_are_refused() {
        let ints = vec![I64; MAX_INT_ARGS + 1];
        let e = NativeSig::new(&ints, None).unwrap_err();
        assert!(
            e.contains(&format!("at most {MAX_INT_ARGS} integer")),
            "{e}"
        );
        let floats = vec![F32; MAX_FLOAT_ARGS + 1];
        assert!(NativeSig::new(&floats, Some(F64)).is_err());
        let both: Vec<Type> = [vec![I64; MAX_INT_ARGS], vec![F64; MAX_FLOAT_ARGS]].concat();
        assert!(NativeSig::new(&both, Some(I64)).is_ok());
        let ad = Type::AdStack(guardlift_runtime::adstack::AdElem::F64);
        assert!(NativeSig::new(&[ad], None).is_err());
    }
}
