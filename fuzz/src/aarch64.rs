//! Compiling for aarch64 with Cranelift's verifier on, whatever the build
//! profile: the same lowering as `guardlift_jit::emit_object` (its public
//! [`Lowerer`]), an ISA built here with `enable_verifier`, and
//! `verify_function` on every lowered function before it is compiled.
//! (`emit_object` itself turns the verifier on only in debug builds.)

use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::isa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use guardlift_ir::{FuncId, Module};
use guardlift_jit::lower::{self, Lowerer, RtRef};
use guardlift_jit::{OptLevel, Target};
use guardlift_runtime::Mode;

/// Lowers and compiles every function of `m` for `target` with the
/// verifier on; returns the object's bytes.
pub fn compile_verified(
    m: &Module,
    target: Target,
    mode: Mode,
    opt: OptLevel,
) -> Result<Vec<u8>, String> {
    guardlift_ir::verify_module(m).map_err(|e| format!("IR verifier: {e}"))?;
    let mut fb = settings::builder();
    for (k, v) in [
        ("opt_level", opt.name()),
        ("is_pic", "true"),
        ("enable_verifier", "true"),
        ("enable_probestack", "true"),
        ("probestack_strategy", "inline"),
        ("use_colocated_libcalls", "false"),
    ] {
        fb.set(k, v).map_err(|e| format!("setting {k}={v}: {e}"))?;
    }
    let isa = isa::lookup_by_name(&target.triple())
        .map_err(|e| e.to_string())?
        .finish(settings::Flags::new(fb))
        .map_err(|e| e.to_string())?;
    let cc = isa.default_call_conv();
    let externs = lower::resolve_externs(m, |name| Some(name.to_string()))
        .map_err(|e| format!("link: {e}"))?;
    let ob = ObjectBuilder::new(isa, "guardlift", cranelift_module::default_libcall_names())
        .map_err(|e| e.to_string())?;
    let mut om = ObjectModule::new(ob);
    let mut funcs = Vec::new();
    for f in &m.functions {
        let sig = lower::ir_signature(cc, &f.param_types(), f.ret);
        funcs.push(
            om.declare_function(&f.name, Linkage::Export, &sig)
                .map_err(|e| e.to_string())?,
        );
    }
    let mut lw = Lowerer::new(m, RtRef::Symbol, mode, 0, cc, funcs.clone(), externs, true);
    let mut ctx = om.make_context();
    let mut fctx = FunctionBuilderContext::new();
    for (i, f) in m.functions.iter().enumerate() {
        let id = funcs[i];
        lw.lower_function(
            &mut om,
            FuncId(i as u32),
            UserFuncName::user(0, id.as_u32()),
            &mut ctx.func,
            &mut fctx,
        )
        .map_err(|e| format!("@{}: lowering: {e}", f.name))?;
        if let Err(errs) = cranelift_codegen::verify_function(&ctx.func, om.isa()) {
            return Err(format!(
                "@{}: Cranelift verifier: {errs}\n{}",
                f.name,
                ctx.func.display()
            ));
        }
        om.define_function(id, &mut ctx)
            .map_err(|e| format!("@{}: compiling: {e:?}", f.name))?;
        om.clear_context(&mut ctx);
    }
    // The module-local stubs the lowered functions call (report entry
    // points, slow paths, the trap-scratch hand-off); the ISA's verifier
    // setting checks them as they compile.
    lw.define_stubs(&mut om, &mut fctx)
        .map_err(|e| format!("stubs: {e}"))?;
    drop(lw);
    om.finish().emit().map_err(|e| e.to_string())
}
