//! Typed calls into compiled code: Rust types that stand for IR types, and
//! argument tuples that a [`crate::TypedFunc`] checks against the IR
//! function's signature before any call can happen.

use guardlift_ir::Type;

/// An IR `ptr` argument or result: a 64-bit address.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ptr(pub u64);

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is exactly one IR value type (`i8 i32 i64 f32 f64`, and
/// [`Ptr`] for `ptr`). Sealed.
pub trait NativeType: Copy + sealed::Sealed + 'static {
    /// The IR type it stands for.
    const TYPE: Type;
}

macro_rules! native {
    ($($t:ty => $ir:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl NativeType for $t {
            const TYPE: Type = $ir;
        }
    )*};
}
native!(i8 => Type::I8, i32 => Type::I32, i64 => Type::I64, f32 => Type::F32, f64 => Type::F64, Ptr => Type::Ptr);

impl sealed::Sealed for () {}

/// What a function returns: `()` for nothing, or one [`NativeType`]. Sealed.
pub trait Results: sealed::Sealed + 'static {
    /// The IR result type (`None` for no result).
    fn ir_type() -> Option<Type>;
}

impl Results for () {
    fn ir_type() -> Option<Type> {
        None
    }
}

impl<T: NativeType> Results for T {
    fn ir_type() -> Option<Type> {
        Some(T::TYPE)
    }
}

/// Arguments: `()`, one [`NativeType`], or a tuple of up to six. Sealed.
pub trait Params: sealed::Sealed + 'static {
    /// The IR parameter types, in order.
    fn ir_types() -> Vec<Type>;

    /// Calls the native function at `addr` with these arguments.
    ///
    /// # Safety
    /// `addr` must be a live function whose native signature is exactly
    /// `extern "C" fn(Self...) -> R` (checked by `CompiledModule::func`).
    #[doc(hidden)]
    unsafe fn invoke<R: Results>(addr: usize, args: Self) -> R;
}

impl Params for () {
    fn ir_types() -> Vec<Type> {
        Vec::new()
    }
    unsafe fn invoke<R: Results>(addr: usize, _args: Self) -> R {
        // SAFETY: the caller guarantees `addr` is a live function of exactly
        // this native signature.
        let f: unsafe extern "C" fn() -> R = unsafe { std::mem::transmute(addr as *const ()) };
        // SAFETY: as above; what the function touches is the caller's promise.
        unsafe { f() }
    }
}

impl<T: NativeType> Params for T {
    fn ir_types() -> Vec<Type> {
        vec![T::TYPE]
    }
    unsafe fn invoke<R: Results>(addr: usize, args: Self) -> R {
        // SAFETY: the caller guarantees `addr` is a live function of exactly
        // this native signature.
        let f: unsafe extern "C" fn(T) -> R = unsafe { std::mem::transmute(addr as *const ()) };
        // SAFETY: as above; what the function touches is the caller's promise.
        unsafe { f(args) }
    }
}

macro_rules! tuple_params {
    ($($n:ident: $t:ident),+) => {
        impl<$($t: NativeType),+> sealed::Sealed for ($($t,)+) {}
        impl<$($t: NativeType),+> Params for ($($t,)+) {
            fn ir_types() -> Vec<Type> {
                vec![$($t::TYPE),+]
            }
            unsafe fn invoke<R: Results>(addr: usize, args: Self) -> R {
                let f: unsafe extern "C" fn($($t),+) -> R;
                // SAFETY: the caller guarantees `addr` is a live function
                // of exactly this native signature.
                f = unsafe {
                    std::mem::transmute::<*const (), unsafe extern "C" fn($($t),+) -> R>(
                        addr as *const (),
                    )
                };
                let ($($n,)+) = args;
                // SAFETY: as above; what the function touches is the
                // caller's promise.
                unsafe { f($($n),+) }
            }
        }
    };
}
tuple_params!(a: A);
tuple_params!(a: A, b: B);
tuple_params!(a: A, b: B, c: C);
tuple_params!(a: A, b: B, c: C, d: D);
tuple_params!(a: A, b: B, c: C, d: D, e: E);
tuple_params!(a: A, b: B, c: C, d: D, e: E, f: F);

/// A Rust function that IR code may call as a host function, whose
/// signature the JIT checks against the module's `extern` declaration at
/// link time ([`crate::CompileOptions::host_fn`]): an `extern "C" fn` of up
/// to six [`NativeType`] parameters and a [`Results`] result, as wasmtime's
/// `Func::wrap` takes a closure. Sealed.
pub trait HostFn: Copy + sealed::Sealed + 'static {
    /// The IR parameter types, in order.
    fn ir_params() -> Vec<Type>;
    /// The IR result type (`None` for no result).
    fn ir_ret() -> Option<Type>;
    /// The function's address.
    fn addr(self) -> *const u8;
}

macro_rules! host_fn {
    ($($t:ident),*) => {
        impl<$($t: NativeType,)* R: Results> sealed::Sealed for extern "C" fn($($t),*) -> R {}
        impl<$($t: NativeType,)* R: Results> HostFn for extern "C" fn($($t),*) -> R {
            fn ir_params() -> Vec<Type> {
                vec![$($t::TYPE),*]
            }
            fn ir_ret() -> Option<Type> {
                R::ir_type()
            }
            fn addr(self) -> *const u8 {
                self as *const u8
            }
        }
    };
}
host_fn!();
host_fn!(A);
host_fn!(A, B);
host_fn!(A, B, C);
host_fn!(A, B, C, D);
host_fn!(A, B, C, D, E);
host_fn!(A, B, C, D, E, F);

/// `(i64, ptr) -> f64`, as error messages show signatures.
pub fn signature_text(params: &[Type], ret: Option<Type>) -> String {
    let p: Vec<String> = params.iter().map(|t| t.to_string()).collect();
    match ret {
        Some(r) => format!("({}) -> {r}", p.join(", ")),
        None => format!("({})", p.join(", ")),
    }
}
