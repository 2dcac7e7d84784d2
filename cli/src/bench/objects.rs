//! The benchmarks' objects: made and freed by the `obj_new` / `obj_free`
//! built-ins, compiled through the public JIT API as any program calls
//! them (the CLI uses no runtime internals).

use super::parse;
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::Runtime;

/// The built-ins `obj_new` and `obj_free` as IR code calls them: the
/// benchmarks' objects come from the runtime's own heap, made through the
/// public JIT API like any program's (no runtime internals).
const OBJ_BUILTINS: &str = "extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)

fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}

fn @free(%o: ptr) {
entry:
    call @obj_free(%o)
    return
}
";

/// A new object of `rt` with `n` attributes (the `obj_new` built-in).
pub(super) fn obj_new(rt: &std::sync::Arc<Runtime>, n: i64) -> u64 {
    let code = Jit::compile(&parse(OBJ_BUILTINS), rt.clone(), &CompileOptions::default())
        .expect("compiles");
    let f = code.func::<(i64,), Ptr>("new").expect("signature");
    // SAFETY: `obj_new` touches only the runtime's heap.
    unsafe { f.call((n,)) }.0
}

/// Frees `o`, an object of `rt` (the `obj_free` built-in).
pub(super) fn obj_free(rt: &std::sync::Arc<Runtime>, o: u64) {
    let code = Jit::compile(&parse(OBJ_BUILTINS), rt.clone(), &CompileOptions::default())
        .expect("compiles");
    let f = code.func::<(Ptr,), ()>("free").expect("signature");
    // SAFETY: `o` is a live object of `rt`; `obj_free` checks it anyway.
    unsafe { f.call((Ptr(o),)) }
}
