//! Ahead-of-time output through the same lowering as the JIT: relocatable
//! ELF objects (cranelift-object), and the text of `guardlift emit --what
//! clif|asm`.
//!
//! In an object file, IR functions are exported under their names, built-ins
//! and report entry points are imported as their `gl_*` symbols, other
//! externs as their own names, and the runtime pointer is the address of the
//! imported data symbol [`crate::RUNTIME_SYMBOL`]. The code is
//! position-independent (calls and data go through the GOT/PLT).

use crate::error::JitError;
use crate::lower::{self, Lowerer, RtRef};
use crate::target::{build_isa, build_isa_verified, OptLevel, Target, Tier, TierIsas};
use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{FuncId as ClFuncId, Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use guardlift_ir::FuncId;
use guardlift_runtime::Mode;
use std::fmt::Write as _;

/// Options of the ahead-of-time outputs.
#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// Decides the guard lowering (see [`crate::lower::guard_strategy`]).
    pub mode: Mode,
    /// Added to local site ids: the base the program's runtime will hand out
    /// when it registers this module's sites (0 for the first module).
    pub site_base: u32,
    /// Cranelift's optimization level.
    pub opt_level: OptLevel,
}

struct Setup<'m> {
    om: ObjectModule,
    lw: Lowerer<'m>,
    funcs: Vec<ClFuncId>,
}

fn setup<'m>(
    module: &'m guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<Setup<'m>, JitError> {
    setup_with_isa(
        module,
        build_isa(target, opts.opt_level, Tier::Optimized, true)?,
        opts,
    )
}

fn setup_with_isa<'m>(
    module: &'m guardlift_ir::Module,
    isa: cranelift_codegen::isa::OwnedTargetIsa,
    opts: &EmitOptions,
) -> Result<Setup<'m>, JitError> {
    guardlift_ir::verify_module(module)?;
    let externs = lower::resolve_externs(module, |name| Some(name.to_string()))?;
    let call_conv = isa.default_call_conv();
    let ob = ObjectBuilder::new(isa, "guardlift", cranelift_module::default_libcall_names())
        .map_err(|e| JitError::module("creating the object file", e))?;
    let mut om = ObjectModule::new(ob);
    let mut funcs = Vec::with_capacity(module.functions.len());
    for f in &module.functions {
        let sig = lower::ir_signature(call_conv, &f.param_types(), f.ret);
        let id = om
            .declare_function(&f.name, Linkage::Export, &sig)
            .map_err(|e| JitError::Link {
                loc: f.loc,
                msg: format!("cannot export @{}: {e}", f.name),
            })?;
        funcs.push(id);
    }
    let lw = Lowerer::new(
        module,
        RtRef::Symbol,
        opts.mode,
        opts.site_base,
        call_conv,
        funcs.clone(),
        externs,
        true,
    );
    Ok(Setup { om, lw, funcs })
}

/// A relocatable object file (ELF for the explicit targets).
pub fn emit_object(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<Vec<u8>, JitError> {
    emit_object_with_traps(module, target, opts).map(|(bytes, _)| bytes)
}

/// A guard's trap instruction in an object file (trap mode): where it is
/// and which site and kind it reports. An object's host maps a trapping PC
/// back with these (`function`'s symbol address + `offset`); the observed
/// values are in the `guardlift_runtime::TrapScratch` layout at the address of
/// [`crate::RUNTIME_SYMBOL`] (see `guardlift_runtime::trap`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectTrap {
    /// The exported IR function (its symbol name).
    pub function: String,
    /// Offset of the trap instruction from the function's start.
    pub offset: u32,
    /// Site id (`opts.site_base` + local id).
    pub site: u32,
    /// What the guard reports.
    pub kind: guardlift_runtime::ReportKind,
}

/// [`emit_object`], plus the trap sites of trap mode (empty otherwise),
/// which the object format does not carry.
pub fn emit_object_with_traps(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<(Vec<u8>, Vec<ObjectTrap>), JitError> {
    emit_object_with_code(module, target, opts).map(|o| (o.bytes, o.traps))
}

/// An object file with what its host needs to place a PC in it.
#[derive(Clone, Debug)]
pub struct ObjectCode {
    /// The relocatable object.
    pub bytes: Vec<u8>,
    /// The guards' trap instructions (trap mode; empty otherwise).
    pub traps: Vec<ObjectTrap>,
    /// Per IR function, in module order: its code size and PC → IR-site map,
    /// as offsets from the function's symbol (`start` is 0; `function` is
    /// the symbol name).
    pub functions: Vec<guardlift_runtime::codemap::CodeFunction>,
}

/// [`emit_object_with_traps`], plus each function's PC → IR-site map (the
/// source locations Cranelift kept per instruction), which the object
/// format does not carry either: a fault on the object's target is placed
/// at its IR site with it.
pub fn emit_object_with_code(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<ObjectCode, JitError> {
    emit_with(setup(module, target, opts)?, module, target, opts.site_base)
}

/// [`emit_object`] with Cranelift's verifier on whatever the build profile
/// ([`emit_object`] turns it on only with debug assertions): every lowered
/// function and stub is verified as it compiles (the fuzz targets' path).
pub fn emit_object_verified(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<Vec<u8>, JitError> {
    let isa = build_isa_verified(target, opts.opt_level, Tier::Optimized, true, true)?;
    emit_with(
        setup_with_isa(module, isa, opts)?,
        module,
        target,
        opts.site_base,
    )
    .map(|o| o.bytes)
}

fn emit_with(
    setup: Setup<'_>,
    module: &guardlift_ir::Module,
    target: Target,
    site_base: u32,
) -> Result<ObjectCode, JitError> {
    let mut traps = Vec::new();
    let mut functions = Vec::with_capacity(module.functions.len());
    let all_sites = module.site_infos();
    let Setup {
        mut om,
        mut lw,
        funcs,
    } = setup;
    let mut ctx = om.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut tiers = TierIsas::new(target, true);
    for (i, f) in module.functions.iter().enumerate() {
        let id = funcs[i];
        lw.lower_function(
            &mut om,
            FuncId(i as u32),
            UserFuncName::user(0, id.as_u32()),
            &mut ctx.func,
            &mut fctx,
        )?;
        tiers.define(&mut om, id, &mut ctx, Tier::of(f), &f.name)?;
        let code = ctx
            .compiled_code()
            .ok_or_else(|| JitError::Internal(format!("@{}: no compiled code", f.name)))?;
        functions.push(guardlift_runtime::codemap::CodeFunction {
            start: 0,
            len: code.code_info().total_size as usize,
            function: f.name.clone(),
            locs: crate::codemap::pc_locs(code, f, lw.trap_sites(), &all_sites, site_base),
            instrumented: module.is_instrumented(),
        });
        if !lw.trap_sites().is_empty() {
            for (offset, site, kind) in crate::engine::trap_offsets(code, lw.trap_sites(), &f.name)?
            {
                traps.push(ObjectTrap {
                    function: f.name.clone(),
                    offset,
                    site,
                    kind,
                });
            }
        }
        om.clear_context(&mut ctx);
    }
    lw.define_stubs(&mut om, &mut fctx)?;
    drop(lw);
    let bytes = om
        .finish()
        .emit()
        .map_err(|e| JitError::Object(Box::new(e)))?;
    Ok(ObjectCode {
        bytes,
        traps,
        functions,
    })
}

/// What the external names of a lowered function stand for, as CLIF
/// comments (`; userextname0 = u0:3 = gl_report_dict`).
fn name_comments(
    om: &ObjectModule,
    lw: &Lowerer,
    func: &cranelift_codegen::ir::Function,
) -> String {
    let mut s = String::new();
    for (r, n) in func.params.user_named_funcs().iter() {
        let name = match n.namespace {
            0 => cranelift_module::FuncId::from_u32(n.index),
            _ => {
                let d = cranelift_module::DataId::from_u32(n.index);
                let name = om
                    .declarations()
                    .get_data_decl(d)
                    .name
                    .as_deref()
                    .unwrap_or("?");
                let _ = writeln!(s, "; {r} = u{}:{} = {name} (data)", n.namespace, n.index);
                continue;
            }
        };
        let decl = om.declarations().get_function_decl(name);
        let _ = writeln!(
            s,
            "; {r} = u{}:{} = {}",
            n.namespace,
            n.index,
            decl.name
                .clone()
                .or_else(|| lw.stub_name(name))
                .unwrap_or_else(|| "?".into())
        );
    }
    s
}

/// Lowers every function of `module` for `target` into a fresh context,
/// in order, and hands each to `each` with the object module and the
/// lowerer (for the names of what it references).
fn each_lowered(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
    mut each: impl FnMut(
        &ObjectModule,
        &Lowerer<'_>,
        &guardlift_ir::Function,
        &mut Context,
    ) -> Result<(), JitError>,
) -> Result<(), JitError> {
    let Setup { mut om, mut lw, .. } = setup(module, target, opts)?;
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = Context::new();
    for (i, f) in module.functions.iter().enumerate() {
        ctx.clear();
        ctx.set_disasm(true);
        lw.lower_function(
            &mut om,
            FuncId(i as u32),
            UserFuncName::testcase(&f.name),
            &mut ctx.func,
            &mut fctx,
        )?;
        each(&om, &lw, f, &mut ctx)?;
    }
    Ok(())
}

/// The text of an `emit`: the target line, then `bodies`.
fn with_target_line(target: Target, bodies: &str) -> String {
    format!("; target {} ({})\n\n{bodies}", target, target.triple())
}

/// The Cranelift IR of every function, as lowered (before Cranelift's own
/// optimizations), preceded by a table of the external names it uses.
pub fn emit_clif(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<String, JitError> {
    let mut bodies = String::new();
    each_lowered(module, target, opts, |om, lw, f, ctx| {
        let _ = writeln!(bodies, "; @{}", f.name);
        bodies.push_str(&name_comments(om, lw, &ctx.func));
        let _ = writeln!(bodies, "{}", ctx.func.display());
        Ok(())
    })?;
    Ok(with_target_line(target, &bodies))
}

/// Machine code of every function as Cranelift's disassembly of its final
/// instructions (after register allocation).
pub fn emit_asm(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<String, JitError> {
    let mut bodies = String::new();
    let mut tiers = TierIsas::new(target, true);
    each_lowered(module, target, opts, |om, lw, f, ctx| {
        let tier = Tier::of(f);
        let code = tiers.compile(om.isa(), ctx, tier, &f.name)?;
        let text = code.vcode.clone().unwrap_or_default();
        let size = code.code_info().total_size;
        let note = match tier {
            Tier::Optimized => "",
            Tier::Big => ", big tier",
        };
        let _ = writeln!(bodies, "@{}:  ; {size} bytes{note}", f.name);
        bodies.push_str(&name_comments(om, lw, &ctx.func));
        bodies.push_str(&text);
        bodies.push('\n');
        Ok(())
    })?;
    Ok(with_target_line(target, &bodies))
}
