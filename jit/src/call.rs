//! Calling compiled code: typed handles ([`TypedFunc`], [`SafeFunc`]) and
//! calls with raw argument bits through a trampoline
//! ([`CompiledModule::call_dynamic`], [`CompiledModule::safe_call_dynamic`]).
//!
//! # The contract of the `unsafe` entry points
//!
//! IR code is native code. A raw `load`/`store` accesses whatever address
//! it computes, an object-model op dereferences the `ptr` it is given, an
//! adstack op without the `adstack` check can write past its buffer, and a
//! host symbol ([`crate::CompileOptions::symbol`]) does what it does. Rust
//! cannot see any of that, so [`TypedFunc::call`] and
//! [`CompiledModule::call_dynamic`] are `unsafe fn`s, as cranelift-jit hands
//! out finalized code as a raw pointer. Their caller promises that every
//! memory access the call makes (the function's, the IR functions' it
//! calls, the host symbols') touches only memory that is valid for that
//! access while the call runs: allocated, large enough, not freed, and not
//! behind a Rust reference that assumes it unchanged or unaliased.
//! What guardlift's checks stop never happens, so it is no part of the
//! promise: with the `lifetime` check, an access to an object the runtime
//! knows to be freed (one of its model heap's, or a host object the host
//! reported through `object_freed`) is reported and skipped (recover mode)
//! or ends the run (abort and trap modes) before it touches memory, and the
//! `bounds` and `adstack` checks stop accesses past what the runtime
//! recorded in the same way. Passing such an object to instrumented code is
//! therefore within the contract; passing it to code without the check is
//! not. What no check can see — a raw pointer into memory the runtime
//! never knew, a host function's own accesses — stays the caller's
//! promise.
//!
//! # The safe entry points
//!
//! [`CompiledModule::safe_func`] and [`CompiledModule::safe_call_dynamic`]
//! accept only functions that [`crate::safety`] proves memory-safe: they
//! touch the stack, checked adstack buffers and the model heap through the
//! built-ins, which check their object arguments. Calling them needs no
//! promise.

use crate::engine::{lock, CompiledModule, Inner};
use crate::error::JitError;
use crate::trampoline::build_trampoline;
use crate::typed::{signature_text, Params, Results};
use guardlift_runtime::Runtime;
use std::marker::PhantomData;
use std::sync::Arc;

impl CompiledModule {
    /// A typed handle to function `name`: `A` must be its parameter types
    /// (`()`, one type, or a tuple) and `R` its result (`()` for none),
    /// exactly: `i8 i32 i64 f32 f64` and [`crate::Ptr`] for `ptr`.
    pub fn func<A: Params, R: Results>(&self, name: &str) -> Result<TypedFunc<A, R>, JitError> {
        let (_, f) = self.info(name)?;
        let want_p = A::ir_types();
        let want_r = R::ir_type();
        if want_p != f.params || want_r != f.ret {
            return Err(JitError::Signature {
                name: f.name.clone(),
                expected: signature_text(&f.params, f.ret),
                got: signature_text(&want_p, want_r),
            });
        }
        Ok(TypedFunc {
            inner: self.inner.clone(),
            addr: f.addr,
            _sig: PhantomData,
        })
    }

    /// The native address of function `name` — what `func_addr @name` gives
    /// IR code: its checked body, callable with its IR signature under the
    /// platform's C convention — held by a handle that keeps the code
    /// alive. For a VM's own dispatch tables (a method slot, a
    /// `call_indirect` target of another module).
    ///
    /// A host that calls the address directly, rather than through
    /// [`TypedFunc::call`], skips what that call does first: marking the
    /// thread as running compiled code and giving it an alternate signal
    /// stack (`guardlift_runtime::codemap::enter_compiled_code`). Faults
    /// and reports in the compiled code are still placed at their IR site;
    /// a fault in a host function it calls is then a fault of the host,
    /// and a stack overflow may not be reported as `stack_overflow`.
    pub fn native_func(&self, name: &str) -> Result<NativeFunc, JitError> {
        let (index, f) = self.info(name)?;
        Ok(NativeFunc {
            inner: self.inner.clone(),
            addr: f.addr,
            index,
        })
    }

    /// A typed handle to function `name` that safe Rust may call: as
    /// [`Self::func`], and [`JitError::NotMemorySafe`] unless the function
    /// is memory-safe ([`Self::check_memory_safe`]).
    pub fn safe_func<A: Params, R: Results>(&self, name: &str) -> Result<SafeFunc<A, R>, JitError> {
        let f = self.func(name)?;
        self.check_memory_safe(name)?;
        Ok(SafeFunc { f })
    }

    /// Calls `name` with raw argument bits: integers sign-extended to 64 bits
    /// from their width, `f32` as `to_bits() as u64`, `f64` as `to_bits()`,
    /// `ptr` as the address. The result comes back the same way (`None` for
    /// a function without a result). A wrong argument count is an error.
    ///
    /// # Safety
    /// Every memory access the call makes must touch memory valid for it
    /// (the contract in [`crate::call`]). [`Self::safe_call_dynamic`] needs
    /// no such promise, for memory-safe functions.
    pub unsafe fn call_dynamic(&self, name: &str, args: &[u64]) -> Result<Option<u64>, JitError> {
        let (i, f) = self.info(name)?;
        if args.len() != f.params.len() {
            let got = format!("{} argument(s)", args.len());
            return Err(JitError::Signature {
                name: f.name.clone(),
                expected: signature_text(&f.params, f.ret),
                got,
            });
        }
        let tramp = self.trampoline(i)?;
        // Faults inside are placed at their IR site (see `fault`).
        let _entry = guardlift_runtime::codemap::enter_compiled_code();
        let mut ret = 0u64;
        // SAFETY: the trampoline was generated for exactly this function; it
        // reads `params.len()` (= `args.len()`) words from `args` and writes
        // one to `ret`. What the function itself touches, the caller vouches for.
        unsafe {
            let t: unsafe extern "C" fn(*const u64, *mut u64) =
                std::mem::transmute(tramp as *const ());
            t(args.as_ptr(), &mut ret);
        }
        Ok(f.ret.map(|_| ret))
    }

    /// [`Self::call_dynamic`] for a memory-safe function; any other is
    /// [`JitError::NotMemorySafe`] and is not called.
    pub fn safe_call_dynamic(&self, name: &str, args: &[u64]) -> Result<Option<u64>, JitError> {
        self.check_memory_safe(name)?;
        // SAFETY: `check_memory_safe` proved that the function and every IR
        // function it calls touch only the stack, checked adstack buffers and
        // the model heap through the built-ins (`crate::safety`), whatever
        // the arguments.
        unsafe { self.call_dynamic(name, args) }
    }

    /// The dynamic-call trampoline of function `i`, compiled on first use.
    fn trampoline(&self, i: usize) -> Result<usize, JitError> {
        let mut st = lock(&self.inner.state);
        if let Some(&t) = st.trampolines.get(&i) {
            return Ok(t);
        }
        let f = &self.inner.funcs[i];
        let jm = st
            .module
            .as_mut()
            .ok_or_else(|| JitError::Internal("the JIT module is already freed".into()))?;
        let debug = self.inner.debug;
        let (addr, seen) = build_trampoline(jm, f, debug.any(), self.inner.unwind_on)?;
        let reg = match &seen {
            Some((len, unwind)) if self.inner.unwind_on => {
                let unit = crate::unwind::UnwindUnit {
                    start: addr,
                    len: *len,
                    info: unwind.as_ref(),
                };
                let isa = cranelift_module::Module::isa(jm);
                // SAFETY: the trampoline is finalized code of this module,
                // which drops what `State::unwind` holds before freeing it.
                Some(unsafe { crate::unwind::register(isa, &[unit]) })
            }
            _ => None,
        };
        let published = match seen {
            Some((len, unwind)) if debug.any() => {
                let unit = crate::debuginfo::CodeUnit {
                    name: format!("[trampoline @{}]", f.name),
                    start: addr,
                    len,
                    locs: &[],
                    line: 0,
                    unwind: unwind.as_ref(),
                };
                let source = std::path::Path::new("module.glir");
                // SAFETY: the trampoline is finalized code of this module, which
                // withdraws what `State::published` holds before freeing it.
                let p = unsafe {
                    crate::debuginfo::publish(
                        debug,
                        &[unit],
                        source,
                        cranelift_module::Module::isa(jm),
                    )
                };
                Some(p)
            }
            _ => None,
        };
        st.unwind.extend(reg);
        if let Some(p) = published {
            st.published.push(p?);
        }
        st.trampolines.insert(i, addr);
        Ok(addr)
    }
}

/// A typed entry point. It keeps the module's code alive. Calling it is
/// `unsafe` (see [`crate::call`]); [`SafeFunc`] is the safe kind.
pub struct TypedFunc<A, R> {
    inner: Arc<Inner>,
    addr: usize,
    _sig: PhantomData<fn(A) -> R>,
}

impl<A: Params, R: Results> std::fmt::Debug for TypedFunc<A, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TypedFunc{}",
            signature_text(&A::ir_types(), R::ir_type())
        )
    }
}

impl<A, R> Clone for TypedFunc<A, R> {
    fn clone(&self) -> Self {
        TypedFunc {
            inner: self.inner.clone(),
            addr: self.addr,
            _sig: PhantomData,
        }
    }
}

impl<A: Params, R: Results> TypedFunc<A, R> {
    /// Runs the function. Violations go to the module's runtime (see
    /// [`Runtime::take_reports`]); in abort mode a violation ends the process.
    ///
    /// # Safety
    /// Every memory access the call makes (raw `load`/`store`, object-model
    /// ops on the pointers it is given, host symbols) must touch memory
    /// valid for it: the contract in [`crate::call`]. Memory-safe functions
    /// need no such promise: call them through [`SafeFunc`].
    pub unsafe fn call(&self, args: A) -> R {
        // Faults inside are placed at their IR site (see `fault`).
        let _entry = guardlift_runtime::codemap::enter_compiled_code();
        // SAFETY: `func` checked that the IR signature is exactly (A) -> R,
        // `inner` keeps the code mapped, and the caller vouches for the
        // memory the code touches.
        unsafe { A::invoke::<R>(self.addr, args) }
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
    }
}

/// The native address of a compiled function, from
/// [`CompiledModule::native_func`]. It keeps the module's code alive: the
/// address is valid for calls while this handle (or any other handle to
/// the module) lives, and not after.
#[derive(Clone)]
pub struct NativeFunc {
    inner: Arc<Inner>,
    addr: usize,
    index: usize,
}

impl std::fmt::Debug for NativeFunc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (p, r) = self.signature();
        write!(f, "NativeFunc({:#x}{})", self.addr, signature_text(p, r))
    }
}

impl NativeFunc {
    /// The address: call it as an `extern "C"` function of the IR
    /// signature ([`Self::signature`]), under the contract of
    /// [`crate::call`], while this handle lives.
    pub fn addr(&self) -> *const u8 {
        self.addr as *const u8
    }

    /// The function's IR signature: (params, result).
    pub fn signature(&self) -> (&[guardlift_ir::Type], Option<guardlift_ir::Type>) {
        let f = &self.inner.funcs[self.index];
        (&f.params, f.ret)
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
    }
}

/// A typed entry point of a memory-safe function, from
/// [`CompiledModule::safe_func`]: calling it is safe. It keeps the module's
/// code alive.
pub struct SafeFunc<A, R> {
    f: TypedFunc<A, R>,
}

impl<A: Params, R: Results> std::fmt::Debug for SafeFunc<A, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Safe{:?}", self.f)
    }
}

impl<A, R> Clone for SafeFunc<A, R> {
    fn clone(&self) -> Self {
        SafeFunc { f: self.f.clone() }
    }
}

impl<A: Params, R: Results> SafeFunc<A, R> {
    /// Runs the function, as [`TypedFunc::call`] does.
    pub fn call(&self, args: A) -> R {
        // SAFETY: `safe_func` proved that the function and every IR function
        // it calls touch only the stack, checked adstack buffers and the
        // model heap through the built-ins (`crate::safety`), whatever the
        // arguments.
        unsafe { self.f.call(args) }
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        self.f.runtime()
    }
}
