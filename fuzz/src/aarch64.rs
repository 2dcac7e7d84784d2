//! Compiling for aarch64 with Cranelift's verifier on, whatever the build
//! profile: [`guardlift_jit::emit_object_verified`], the library's own
//! object path (lowering, module-local stubs, object emission) with an ISA
//! whose verifier checks every function and stub as it compiles. One
//! compile per configuration is both the `emit_object` check and the
//! verifier check.

use guardlift_ir::Module;
use guardlift_jit::{emit_object_verified, EmitOptions, OptLevel, Target};
use guardlift_runtime::Mode;

/// Compiles every function of `m` for `target` with the verifier on;
/// returns the object's bytes (an ELF file: checked here).
pub fn compile_verified(
    m: &Module,
    target: Target,
    mode: Mode,
    opt: OptLevel,
) -> Result<Vec<u8>, String> {
    let opts = EmitOptions {
        mode,
        site_base: 0,
        opt_level: opt,
    };
    let obj = emit_object_verified(m, target, &opts).map_err(|e| e.to_string())?;
    if !obj.starts_with(b"\x7fELF") {
        return Err("the object is not an ELF file".into());
    }
    Ok(obj)
}
