//! guardlift's Cranelift backend.
//!
//! - `lower` (private): the one lowering from guardlift IR to Cranelift IR
//!   (every op of the spec, object model, adstack, guards), driven by
//!   `unit` (private), the one compile driver over any
//!   `cranelift_module::Module`, shared by
//! - [`engine`]: the JIT for the host ([`Jit::compile`] → [`CompiledModule`]),
//!   with [`call`]: typed entry points ([`TypedFunc`], `unsafe` to call, and
//!   [`SafeFunc`] for functions [`safety`] proves memory-safe) and calls with
//!   raw argument bits ([`CompiledModule::call_dynamic`]);
//! - [`unwind`]: the JIT code's unwind info registered with the process's
//!   unwinder, so backtraces walk through JIT frames;
//! - [`object`]: relocatable objects for `x86_64` / `aarch64`, and the text
//!   of `guardlift emit --what clif|asm`.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use guardlift_runtime::{Runtime, RuntimeConfig};
//! # use guardlift_jit::{Jit, CompileOptions};
//! # let module: guardlift_ir::Module = unimplemented!();
//! let rt = Runtime::new(RuntimeConfig::default());
//! let code = Jit::compile(&module, rt.clone(), &CompileOptions::default())?;
//! // `add` does arithmetic only: it is memory-safe, safe Rust may call it.
//! let f = code.safe_func::<(i64, i64), i64>("add")?;
//! assert_eq!(f.call((2, 3)), 5);
//! # Ok::<(), guardlift_jit::JitError>(())
//! ```

pub mod call;
mod codemap;
pub mod debuginfo;
pub mod engine;
pub mod error;
mod lower;
pub mod object;
pub mod pieces;
pub mod placement;
pub mod safety;
pub mod target;
mod trampoline;
pub mod typed;
mod unit;
pub mod unwind;

pub use call::{NativeFunc, SafeFunc, TypedFunc};
pub use engine::{CompileOptions, CompiledModule, Jit};
pub use error::JitError;
pub use lower::RUNTIME_SYMBOL;
pub use object::{
    check_externs, emit_asm, emit_clif, emit_object, emit_object_verified, emit_object_with_traps,
    EmitOptions, ObjectTrap,
};
pub use object::{emit_object_with_code, ObjectCode};
pub use placement::Placement;
pub use target::{OptLevel, Target, Tier, BIG_FUNCTION_INSTS};
pub use typed::{HostFn, NativeType, Params, Ptr, Results};
pub use unit::CompileTimes;
