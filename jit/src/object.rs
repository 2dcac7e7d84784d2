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
use crate::lower::{self, Calls, ExternBinding, LowerConfig, Lowerer, Names, RtRef, StubInfo};
use crate::target::{build_isa, CodeModel, IsaSpec, OptLevel, Target, Tier, TierIsas, Verifier};
use crate::unit::{compile_unit, Unit, UnitConfig};
use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::Module as _;
use cranelift_object::{ObjectBuilder, ObjectModule};
use guardlift_ir::FuncId;
use guardlift_runtime::Mode;
use std::fmt::Write as _;

/// Options of the ahead-of-time outputs.
#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// Decides the guard lowering: a guard's cold block calls the report
    /// entry point (abort, recover), or stores what it observed in the
    /// runtime's trap scratch area and traps (trap).
    pub mode: Mode,
    /// Added to local site ids: the base the program's runtime will hand out
    /// when it registers this module's sites (0 for the first module).
    pub site_base: u32,
    /// Cranelift's optimization level.
    pub opt_level: OptLevel,
}

/// Checks that every extern of `module` can be bound in an object file
/// linked without host C code: a built-in of spec §7 (its declared
/// signature checked against the entry table), or a symbol `defined` says
/// the link provides. Otherwise the link error `LINE:COL: undefined symbol
/// @name`, as [`crate::Jit::compile`] gives for a host function it was not
/// given.
///
/// ```
/// let m = guardlift_ir::parse_module(
///     "extern fn @sin(f64) -> f64\nextern fn @helper(i64) -> i64\n",
/// )?;
/// assert!(guardlift_jit::check_externs(&m, |name| name == "helper").is_ok());
/// let err = guardlift_jit::check_externs(&m, |_| false).unwrap_err();
/// assert!(err.to_string().contains("undefined symbol @helper"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_externs(
    module: &guardlift_ir::Module,
    mut defined: impl FnMut(&str) -> bool,
) -> Result<(), JitError> {
    lower::resolve_externs(module, |name| defined(name).then(String::new)).map(drop)
}

/// An object module for `module` (verified) with its ISA `isa`, and the
/// binding of its externs: every extern that is not a built-in is imported
/// under its own name.
fn object_module(
    module: &guardlift_ir::Module,
    isa: cranelift_codegen::isa::OwnedTargetIsa,
) -> Result<(ObjectModule, Vec<ExternBinding>), JitError> {
    guardlift_ir::verify_module(module)?;
    let externs = lower::resolve_externs(module, |name| Some(name.to_string()))?;
    let ob = ObjectBuilder::new(isa, "guardlift", cranelift_module::default_libcall_names())
        .map_err(|e| JitError::module("creating the object file", e))?;
    Ok((ObjectModule::new(ob), externs))
}

/// The ISA of `target`'s object files at `opts`' level, with Cranelift's
/// verifier as `verifier` says.
fn object_isa(
    target: Target,
    opts: &EmitOptions,
    verifier: Verifier,
) -> Result<cranelift_codegen::isa::OwnedTargetIsa, JitError> {
    build_isa(&IsaSpec {
        target,
        opt: opts.opt_level,
        tier: Tier::Optimized,
        code: CodeModel::Pic,
        verifier,
    })
}

/// How object files are lowered: the runtime is the imported data symbol
/// [`crate::RUNTIME_SYMBOL`], calls between the module's functions are
/// near (one text section), functions are exported under their IR names,
/// and no shadow is assumed.
fn object_lowering(opts: &EmitOptions) -> LowerConfig {
    LowerConfig {
        rt: RtRef::Symbol,
        mode: opts.mode,
        site_base: opts.site_base,
        calls: Calls::Near,
        names: Names::Export,
        shadow: None,
        host: Default::default(),
    }
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
    let isa = object_isa(target, opts, Verifier::Profile)?;
    emit_with(module, target, opts, isa)
}

/// [`emit_object`] with Cranelift's verifier on whatever the build profile
/// ([`emit_object`] turns it on only with debug assertions): every lowered
/// function and stub is verified as it compiles (the fuzz targets' path).
pub fn emit_object_verified(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
) -> Result<Vec<u8>, JitError> {
    let isa = object_isa(target, opts, Verifier::On)?;
    emit_with(module, target, opts, isa).map(|o| o.bytes)
}

/// Compiles `module` for `target` into an object file ([`compile_unit`])
/// with `isa` as the module's ISA.
fn emit_with(
    module: &guardlift_ir::Module,
    target: Target,
    opts: &EmitOptions,
    isa: cranelift_codegen::isa::OwnedTargetIsa,
) -> Result<ObjectCode, JitError> {
    let (mut om, externs) = object_module(module, isa)?;
    let cfg = UnitConfig {
        target,
        lower: object_lowering(opts),
        unwind: false,
        stubs: StubInfo::Skip,
        // Object files keep every function whole: the target runtime's
        // trap table and frame walk know one code range per function
        // (compiling in pieces is the host JIT's, `crate::pieces`).
        pieces: 0,
    };
    let (unit, _) = compile_unit(&mut om, std::borrow::Cow::Borrowed(module), &cfg, externs)?;
    let traps = (unit.funcs.iter())
        .flat_map(|c| {
            let function = &module.functions[c.func].name;
            (c.traps.iter()).map(|&(offset, site, kind)| ObjectTrap {
                function: function.clone(),
                offset,
                site,
                kind,
            })
        })
        .collect();
    let functions = (unit.funcs.into_iter())
        .map(|c| guardlift_runtime::codemap::CodeFunction {
            start: 0,
            len: c.size,
            function: module.functions[c.func].name.clone(),
            locs: c.locs,
            instrumented: module.is_instrumented(),
        })
        .collect();
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
    let (mut om, externs) = object_module(module, object_isa(target, opts, Verifier::Profile)?)?;
    let Unit { mut lw, .. } = Unit::declare(&mut om, module, &object_lowering(opts), externs)?;
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
    let mut tiers = TierIsas::new(target);
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
