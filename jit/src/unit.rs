//! The one compile driver: a module's functions, over any
//! `cranelift_module::Module`. [`compile_unit`] declares the module's
//! functions (and the clean variants the loop versioning plans,
//! `lower::version`), lowers each ([`crate::lower`]), compiles it at its
//! tier ([`crate::target::Tier`]) and defines it, defines the stubs, and
//! reads from each compiled function what the module's container does not
//! keep: its code size, its PC → IR-site map ([`crate::codemap`]), the
//! offsets of its guard traps (trap mode) and, when asked, Cranelift's
//! unwind info. Data (the runtime symbol of object files) and imports
//! (entry points, built-ins, host functions) are declared by the lowering
//! on first use.
//!
//! Both containers call it: the host JIT ([`crate::engine`], over
//! `cranelift_jit::JITModule`, then finalizes and registers the code) and
//! the object emitter ([`crate::object`], over
//! `cranelift_object::ObjectModule`, then writes the object file). What
//! differs between them is a [`UnitConfig`].

use crate::error::JitError;
use crate::lower::{self, ExternBinding, LowerConfig, Lowerer, Names, StubCode, StubInfo, Variant};
use crate::target::{Target, Tier, TierIsas};
use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::CompiledCode;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{FuncId as ClFuncId, Linkage, Module};
use guardlift_abi::ReportKind;
use guardlift_ir::FuncId;
use guardlift_runtime::codemap::PcLoc;
use std::borrow::Cow;
use std::time::Instant;

/// Where [`Jit::compile`](crate::Jit::compile) spent its time.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// guardlift's lowering: IR to Cranelift IR (`lower/`).
    pub lower: std::time::Duration,
    /// Cranelift: optimization, register allocation, emission, and
    /// cranelift-jit's linking and finalizing (stubs included).
    pub codegen: std::time::Duration,
}

/// How [`compile_unit`] compiles a module, and what it collects.
#[derive(Copy, Clone, Debug)]
pub(crate) struct UnitConfig {
    /// The architecture (the big tier's ISA is built for it).
    pub(crate) target: Target,
    /// How the functions are lowered and declared.
    pub(crate) lower: LowerConfig,
    /// Collect Cranelift's unwind info of every function (the unwinder,
    /// the GDB JIT interface).
    pub(crate) unwind: bool,
    /// What to keep of the compiled stubs.
    pub(crate) stubs: StubInfo,
    /// Cut functions of more than twice this many instructions into
    /// pieces of about this many ([`crate::pieces`]; 0: never).
    pub(crate) pieces: usize,
}

/// A module's functions declared in a Cranelift module, with the lowerer
/// that lowers them ([`Unit::declare`]); [`Unit::compile`] compiles them.
pub(crate) struct Unit<'m> {
    /// The lowerer, bound to the declared functions.
    pub(crate) lw: Lowerer<'m>,
    /// The code units to compile: (IR function, which code of it, its
    /// Cranelift function), the functions of the split module (`lw.ir`)
    /// in order — the module's own, then the later pieces of those cut
    /// into pieces — then the clean variants and the entry variants.
    units: Vec<(usize, Variant, ClFuncId)>,
    /// By function of `lw.ir`: the function of the module as given and
    /// which piece of it ([`crate::pieces::Split::origin`]).
    origin: Vec<(usize, u32)>,
}

/// What [`compile_unit`] read of one compiled code unit.
pub(crate) struct FuncCode {
    /// The IR function (its index in the module as given: a piece's is
    /// its function's).
    pub(crate) func: usize,
    /// The function as written, its clean or entry variant, or a later
    /// piece of it.
    pub(crate) variant: Variant,
    /// Its function in the Cranelift module.
    pub(crate) id: ClFuncId,
    /// Its code size in bytes.
    pub(crate) size: usize,
    /// Its PC → IR-site map (offsets from its start).
    pub(crate) locs: Vec<PcLoc>,
    /// (code offset, runtime-global site, kind) of each guard trap (trap
    /// mode; otherwise empty).
    pub(crate) traps: Vec<(u32, u32, ReportKind)>,
    /// Cranelift's unwind info ([`UnitConfig::unwind`]; `None` without it,
    /// or where Cranelift cannot describe the frame).
    pub(crate) unwind: Option<UnwindInfo>,
}

/// A compiled (defined, not yet finalized or emitted) module.
pub(crate) struct CompiledUnit {
    /// The code units: the module's functions in order, then the later
    /// pieces of the functions cut into pieces, then the clean and entry
    /// variants.
    pub(crate) funcs: Vec<FuncCode>,
    /// The stubs ([`UnitConfig::stubs`]).
    pub(crate) stubs: Vec<StubCode>,
    /// Where the time went (the container's own finalizing not included).
    pub(crate) times: CompileTimes,
}

/// Declares, lowers, compiles and defines every function of `module` in
/// `m` (and the clean variants of the leaf functions clean loops call,
/// `lower::version`), then the stubs they use, as `cfg` says; `externs`
/// binds the module's externs ([`lower::resolve_externs`]). A big
/// function is compiled in pieces ([`crate::pieces`]: in place when the
/// module is given by value). Also gives back the module as compiled: its
/// first functions are the module's (a cut function's first piece keeps
/// its name, position and signature), its sites the same.
pub(crate) fn compile_unit<'m, M: Module>(
    m: &mut M,
    module: Cow<'m, guardlift_ir::Module>,
    cfg: &UnitConfig,
    externs: Vec<ExternBinding>,
) -> Result<(CompiledUnit, Cow<'m, guardlift_ir::Module>), JitError> {
    let crate::pieces::Split {
        module,
        origin,
        tiers,
    } = crate::pieces::split(module, cfg.pieces);
    let unit =
        Unit::declare_split(m, &module, origin, &cfg.lower, externs)?.compile(m, cfg, &tiers)?;
    Ok((unit, module))
}

impl<'m> Unit<'m> {
    /// Declares the functions of `module` in `m` as `cfg.names` says and
    /// plans and declares the clean variants (with a shadow that tests
    /// watches only: otherwise there are none).
    pub(crate) fn declare<M: Module>(
        m: &mut M,
        module: &'m guardlift_ir::Module,
        cfg: &LowerConfig,
        externs: Vec<ExternBinding>,
    ) -> Result<Unit<'m>, JitError> {
        let whole: Vec<(usize, u32)> = (0..module.functions.len()).map(|i| (i, 0)).collect();
        Unit::declare_split(m, module, whole, cfg, externs)
    }

    /// [`Unit::declare`] of a split module ([`crate::pieces::Split`],
    /// `origin` its origins): its later pieces are declared with
    /// Cranelift's `tail` calling convention, under names of their own,
    /// and get no variant.
    fn declare_split<M: Module>(
        m: &mut M,
        module: &'m guardlift_ir::Module,
        origin: Vec<(usize, u32)>,
        cfg: &LowerConfig,
        externs: Vec<ExternBinding>,
    ) -> Result<Unit<'m>, JitError> {
        let call_conv = m.isa().default_call_conv();
        let variant_of = |i: usize| match origin[i] {
            (_, 0) => Variant::Checked,
            (_, k) => Variant::Piece(k),
        };
        let ids = (module.functions.iter().enumerate())
            .map(|(i, f)| declare(m, cfg.names, call_conv, f, variant_of(i)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut units: Vec<(usize, Variant, ClFuncId)> = (ids.iter().enumerate())
            .map(|(i, &id)| (i, variant_of(i), id))
            .collect();
        let later: Vec<bool> = origin.iter().map(|&(_, k)| k > 0).collect();
        let mut lw = Lowerer::new(module, cfg, call_conv, ids, externs);
        lw.set_later_pieces(later);
        lw.plan_clean_variants();
        lw.plan_entry_variants();
        for (i, f) in module.functions.iter().enumerate() {
            if lw.variant_drops(FuncId(i as u32)).is_some() {
                let id = declare(m, cfg.names, call_conv, f, Variant::Clean)?;
                lw.clean_funcs[i] = Some(id);
                units.push((i, Variant::Clean, id));
            }
        }
        for (i, f) in module.functions.iter().enumerate() {
            if lw.entry_plan(FuncId(i as u32)).is_some() {
                let id = declare(m, cfg.names, call_conv, f, Variant::Entry)?;
                lw.entry_funcs[i] = Some(id);
                units.push((i, Variant::Entry, id));
            }
            if lw.own_plan(FuncId(i as u32)).is_some() {
                let id = declare(m, cfg.names, call_conv, f, Variant::Own)?;
                lw.own_funcs[i] = Some(id);
                units.push((i, Variant::Own, id));
            }
        }
        lw.has_own_funcs = lw.own_funcs.iter().any(Option::is_some);
        Ok(Unit { lw, units, origin })
    }

    /// Lowers and compiles every code unit, then the stubs, reading what
    /// the container does not keep before each context is cleared.
    /// `tiers`: by function, the tier it compiles at (a piece: its
    /// function's).
    pub(crate) fn compile<M: Module>(
        mut self,
        m: &mut M,
        cfg: &UnitConfig,
        tiers_of: &[Tier],
    ) -> Result<CompiledUnit, JitError> {
        let module = self.lw.ir;
        let mut ctx = m.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut tiers = TierIsas::new(cfg.target);
        let all_sites = module.site_infos();
        let mut out = CompiledUnit {
            funcs: Vec::with_capacity(self.units.len()),
            stubs: Vec::new(),
            times: CompileTimes::default(),
        };
        for &(i, variant, id) in &self.units {
            let f = &module.functions[i];
            let (func, _) = self.origin[i];
            let t = Instant::now();
            let name = UserFuncName::user(0, id.as_u32());
            (self.lw).lower_as(m, FuncId(i as u32), name, &mut ctx.func, &mut fctx, variant)?;
            let t2 = Instant::now();
            out.times.lower += t2 - t;
            // A piece compiles at its whole function's tier.
            let tier = tiers_of.get(i).copied().unwrap_or_else(|| Tier::of(f));
            tiers.define(m, id, &mut ctx, tier, &f.name)?;
            out.times.codegen += t2.elapsed();
            // cranelift-jit and cranelift-object drop this metadata: read
            // it before the context is cleared.
            let code = ctx
                .compiled_code()
                .ok_or_else(|| JitError::Internal(format!("@{}: no compiled code", f.name)))?;
            let traps = self.lw.trap_sites();
            let site_base = self.lw.site_base;
            out.funcs.push(FuncCode {
                func,
                variant,
                id,
                size: code.code_info().total_size as usize,
                locs: crate::codemap::pc_locs(code, f, traps, &all_sites, site_base),
                traps: match traps.is_empty() {
                    true => Vec::new(),
                    false => trap_offsets(code, traps, &f.name)?,
                },
                // None when Cranelift cannot describe the frame: the
                // function is left out of the unwinder's and gdb's tables,
                // never an error.
                unwind: match cfg.unwind {
                    true => code.create_unwind_info(m.isa()).ok().flatten(),
                    false => None,
                },
            });
            m.clear_context(&mut ctx);
        }
        let t = Instant::now();
        out.stubs = self.lw.define_stubs(m, &mut fctx, cfg.stubs)?;
        out.times.codegen += t.elapsed();
        Ok(out)
    }
}

/// Declares `variant` of IR function `f` in `m` as `names` says.
fn declare<M: Module>(
    m: &mut M,
    names: Names,
    call_conv: cranelift_codegen::isa::CallConv,
    f: &guardlift_ir::Function,
    variant: Variant,
) -> Result<ClFuncId, JitError> {
    let call_conv = match variant {
        Variant::Piece(_) => cranelift_codegen::isa::CallConv::Tail,
        _ => call_conv,
    };
    let sig = lower::ir_signature(call_conv, &f.param_types(), f.ret);
    match names {
        // A variant is no export: a name of its own, local to the object.
        Names::Export if variant != Variant::Checked => {
            let name = format!("{}.{}", f.name, variant.suffix());
            m.declare_function(&name, Linkage::Local, &sig)
                .map_err(|e| JitError::module(format!("@{}: declaring", f.name), e))
        }
        Names::Export => m
            .declare_function(&f.name, Linkage::Export, &sig)
            .map_err(|e| JitError::Link {
                loc: f.loc,
                msg: format!("cannot export @{}: {e}", f.name),
            }),
        Names::Anonymous => m
            .declare_anonymous_function(&sig)
            .map_err(|e| JitError::module(format!("@{}: declaring", f.name), e)),
        Names::Profiler => {
            let name = format!(
                "guardlift:{}",
                crate::debuginfo::CodeUnit::ir_name(&f.name, variant)
            );
            m.declare_function(&name, Linkage::Local, &sig)
                .map_err(|e| JitError::module(format!("@{}: declaring", f.name), e))
        }
    }
}

/// (code offset, site, kind) of every guard trap in `code` (IR function
/// `@fname`): a trap whose code is one of the report kinds' user codes,
/// mapped to its site through the source location the lowering gave it
/// ([`lower::trap_index`]). A trap that maps to no site is an internal error.
fn trap_offsets(
    code: &CompiledCode,
    sites: &[(u32, ReportKind)],
    fname: &str,
) -> Result<Vec<(u32, u32, ReportKind)>, JitError> {
    let internal = |off: u32, what: String| {
        JitError::Internal(format!("@{fname}: trap at offset {off:#x} {what}"))
    };
    let srclocs = code.buffer.get_srclocs_sorted();
    let mut out = Vec::new();
    for t in code.buffer.traps() {
        let Some(kind) = ReportKind::from_trap_code(t.code.as_raw().get()) else {
            continue;
        };
        // The source-location range that contains the trap instruction.
        let i = srclocs.partition_point(|l| l.end <= t.offset);
        let loc = srclocs
            .get(i)
            .filter(|l| l.start <= t.offset)
            .map(|l| l.loc)
            .ok_or_else(|| internal(t.offset, "has no source location".into()))?;
        let &(site, k) = lower::trap_index(loc)
            .and_then(|ix| sites.get(ix))
            .ok_or_else(|| internal(t.offset, "maps to no guard site".into()))?;
        if k != kind {
            return Err(internal(
                t.offset,
                format!("says {}, site {site} is {}", kind.name(), k.name()),
            ));
        }
        out.push((t.offset, site, kind));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lower::{Calls, RtRef, ShadowRef};
    use guardlift_instrument::{instrument, CheckSet};
    use guardlift_runtime::Mode;

    /// Two leaf functions a clean loop of `@main` calls (each gets a clean
    /// variant when the shadow tests watches).
    const PROGRAM: &str = "fn @enter(%cm: ptr, %d: i64) {\nentry:\n    store_attr %cm, 0, %d\n    return\n}\n\
        fn @exit(%cm: ptr) -> i64 {\nentry:\n    %d = load_attr %cm, 1\n    return %d\n}\n\
        fn @main(%a: ptr, %b: ptr, %n: i64) -> i64 {\nentry:\n    %z = iconst.i64 0\n    jump loop(%z)\n\
        loop(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, exit, body\n\
        body:\n    call @enter(%a, %i)\n    %x = call @exit(%b)\n    %one = iconst.i64 1\n    %i2 = iadd %i, %one\n    jump loop(%i2)\n\
        exit:\n    return %n\n}\n";

    fn config(mode: Mode, names: Names, shadow: Option<ShadowRef>, stubs: StubInfo) -> UnitConfig {
        UnitConfig {
            target: Target::X86_64,
            lower: LowerConfig {
                rt: RtRef::Const(0x1000),
                mode,
                site_base: 7,
                calls: Calls::Far,
                names,
                shadow,
                host: Default::default(),
            },
            unwind: true,
            stubs,
            pieces: 0,
        }
    }

    /// `m` compiled into an object module in recover mode, with a shadow
    /// that watches (so clean variants are planned), profiler names and
    /// stub records, in pieces of `pieces` instructions (`0`: whole).
    fn compile_watching(
        m: &guardlift_ir::Module,
        pieces: usize,
    ) -> (CompiledUnit, cranelift_object::ObjectModule) {
        let mut om = crate::target::test_object_module();
        let mut cfg = config(
            Mode::Recover,
            Names::Profiler,
            Some(WATCHING),
            StubInfo::Keep,
        );
        cfg.pieces = pieces;
        let (unit, _) =
            compile_unit(&mut om, Cow::Borrowed(m), &cfg, Vec::new()).expect("compiles");
        (unit, om)
    }

    /// (IR function, variant) of each code unit of `unit`, in order.
    fn units(unit: &CompiledUnit) -> Vec<(usize, Variant)> {
        unit.funcs.iter().map(|c| (c.func, c.variant)).collect()
    }

    const WATCHING: ShadowRef = ShadowRef {
        base: 1 << 40,
        watch_id: Some(1),
        own_values: true,
    };

    /// A callee whose object param every caller tests gets an own
    /// variant (after its entry variant) when the runtime marks its own
    /// values arrays — with this runtime's watch id, not a shared one —
    /// and its code addresses the param's attributes without a test: it
    /// is smaller than the entry variant's.
    #[test]
    fn an_own_variant_follows_the_entry_variant_and_drops_the_tests() {
        let text = "fn @get(%o: ptr) -> i64 {\nentry:\n    %a = load_attr %o, 0\n    %b = load_attr %o, 2\n    %s = iadd %a, %b\n    return %s\n}\n\
            fn @main(%o: ptr) -> i64 {\nentry:\n    %a = load_attr %o, 1\n    %r = call @get(%o)\n    return %r\n}\n";
        let m = instrument(
            &guardlift_ir::parse_and_verify(text).expect("valid"),
            CheckSet::ALL,
        );
        let (unit, _) = compile_watching(&m, 0);
        assert_eq!(
            units(&unit),
            [
                (0, Variant::Checked),
                (1, Variant::Checked),
                (0, Variant::Entry),
                (0, Variant::Own),
            ]
        );
        let size = |v| (unit.funcs.iter().find(|c| c.variant == v)).map(|c| c.size);
        let (entry, own) = (size(Variant::Entry), size(Variant::Own));
        assert!(own < entry, "own {own:?}, entry {entry:?}");
        // A shared watch id: no mark to test, no own variant.
        let mut om = crate::target::test_object_module();
        let shared = ShadowRef {
            watch_id: None,
            ..WATCHING
        };
        let cfg = config(Mode::Recover, Names::Profiler, Some(shared), StubInfo::Keep);
        let (unit, _) =
            compile_unit(&mut om, Cow::Borrowed(&m), &cfg, Vec::new()).expect("compiles");
        assert!(units(&unit).iter().all(|&(_, v)| v != Variant::Own));
    }

    /// The code units come in one order, whatever the container: the
    /// module's functions, then the clean variants (which only a shadow
    /// that tests watches plans), each with its code read before the
    /// context was cleared; functions are declared as the config names them.
    #[test]
    fn code_units_are_the_functions_then_the_clean_variants() {
        let m = instrument(
            &guardlift_ir::parse_and_verify(PROGRAM).expect("valid"),
            CheckSet::ALL,
        );
        let (unit, om) = compile_watching(&m, 0);
        assert_eq!(
            units(&unit),
            [
                (0, Variant::Checked),
                (1, Variant::Checked),
                (2, Variant::Checked),
                (0, Variant::Clean),
                (1, Variant::Clean),
            ]
        );
        for c in &unit.funcs {
            assert!(
                c.size > 0 && !c.locs.is_empty(),
                "@{}",
                m.functions[c.func].name
            );
            assert!(c.unwind.is_some(), "@{}", m.functions[c.func].name);
            assert!(c.traps.is_empty(), "recover mode has no traps");
            let name = om.declarations().get_function_decl(c.id).name.clone();
            let want = crate::debuginfo::CodeUnit::ir_name(&m.functions[c.func].name, c.variant);
            assert_eq!(name, Some(format!("guardlift:{want}")));
        }
        assert!(!unit.stubs.is_empty());
        assert!(unit.stubs.iter().all(|s| s.size > 0), "every stub has code");

        // Cut into pieces of two instructions: `@main`'s entry, its loop
        // (whole, and still calling the leaves' clean variants from its
        // clean copy), its exit; the later pieces come after the module's
        // functions and before the variants, as code units of `@main`
        // with their own code and maps.
        let (unit, om) = compile_watching(&m, 2);
        assert_eq!(
            units(&unit),
            [
                (0, Variant::Checked),
                (1, Variant::Checked),
                (2, Variant::Checked),
                (2, Variant::Piece(1)),
                (2, Variant::Piece(2)),
                (0, Variant::Clean),
                (1, Variant::Clean),
            ]
        );
        let piece = &unit.funcs[3];
        assert!(piece.size > 0 && !piece.locs.is_empty());
        let name = om.declarations().get_function_decl(piece.id).name.clone();
        assert_eq!(name.as_deref(), Some("guardlift:@main [piece 1]"));
        let sig = &om.declarations().get_function_decl(piece.id).signature;
        assert_eq!(sig.call_conv, cranelift_codegen::isa::CallConv::Tail);

        // An object file's lowering: no shadow, so no variant; exported
        // names; trap mode's traps at the unit's sites; no stub records.
        let mut om = crate::target::test_object_module();
        let cfg = config(Mode::Trap, Names::Export, None, StubInfo::Skip);
        let (unit, _) =
            compile_unit(&mut om, Cow::Borrowed(&m), &cfg, Vec::new()).expect("compiles");
        assert_eq!(unit.funcs.len(), m.functions.len());
        assert!(unit.stubs.is_empty());
        let site_base = 7;
        let is_site = |site: u32| m.sites.keys().any(|k| k.0 + site_base == site);
        for (i, c) in unit.funcs.iter().enumerate() {
            assert_eq!((c.func, c.variant), (i, Variant::Checked));
            let name = om.declarations().get_function_decl(c.id).name.clone();
            assert_eq!(name.as_deref(), Some(m.functions[i].name.as_str()));
            for &(off, site, _) in &c.traps {
                assert!((off as usize) < c.size && is_site(site), "{off} {site}");
            }
        }
        assert!(
            unit.funcs
                .iter()
                .all(|c| !c.traps.is_empty() || c.func == 2),
            "the leaves' object accesses are guarded"
        );
    }
}
