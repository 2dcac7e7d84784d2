//! The JIT: compiles a module for the host with cranelift-jit and hands out
//! entry points that keep the code alive: [`crate::TypedFunc`] and
//! [`CompiledModule::call_dynamic`] (`unsafe`: the code may touch any
//! address), and [`crate::SafeFunc`] / [`CompiledModule::safe_call_dynamic`] for
//! functions [`crate::safety`] proves memory-safe.

use crate::error::JitError;
use crate::lower::{self, Calls, Entry, ExternBinding, LowerConfig, Names, RtRef, StubInfo};
use crate::target::{build_isa, CodeModel, IsaSpec, OptLevel, Target, Tier, Verifier};
use crate::unit::{compile_unit, CompileTimes, CompiledUnit, FuncCode, UnitConfig};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId as ClFuncId, Module as _};
use guardlift_ir::{Type, Verified};
use guardlift_runtime::codemap::{CodeFunction, CodeRegistration};
use guardlift_runtime::internals::*;
use guardlift_runtime::{JitDebug, Mode, Runtime, SiteInfo, TrapRegistration, TrapSite};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Options of [`Jit::compile`].
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Cranelift's optimization level for the module's functions.
    pub opt_level: OptLevel,
    /// Cranelift's verifier on every compiled function: `None` in debug
    /// builds only (the default), `Some(on)` whatever the build profile.
    pub verifier: Option<bool>,
    /// Where the module's code and data are mapped (`None`: as
    /// `GUARDLIFT_JIT_PLACEMENT` says, by default wherever the OS puts
    /// them; [`crate::placement`]). Generated code works wherever they land.
    pub placement: Option<crate::Placement>,
    /// Host functions for externs that are not built-ins: (IR name without
    /// `@`, address). Added only through the `unsafe` [`Self::symbol`] and
    /// the typed [`Self::host_fn`].
    symbols: Vec<(String, *const u8)>,
    /// The Rust signatures of the host functions [`Self::host_fn`] added:
    /// (IR name, params, result), checked against the module's externs.
    typed: Vec<(String, Vec<Type>, Option<Type>)>,
    /// What to tell profilers and debuggers about the code (perf map,
    /// jitdump, GDB JIT interface: [`crate::debuginfo`]), on top of what the
    /// runtime asks (`GUARDLIFT_OPTIONS`' `perfmap`, `jitdump`, `gdb`).
    pub debug: JitDebug,
    /// The `.glir` file the module was read from, named in the line tables
    /// of jitdump and gdb (default: `module.glir`).
    pub source_file: Option<PathBuf>,
    /// Register the code's unwind info with the process's unwinder, so that
    /// backtraces and C++ exceptions' search walk through JIT frames
    /// ([`crate::unwind`]): `None` (the default) or `Some(true)` registers,
    /// `Some(false)` does not (for measurements, or an embedder that wants
    /// the unwinder to stop at JIT code).
    pub unwind: Option<bool>,
    /// Compile each function of more than twice this many instructions in
    /// pieces of about this many ([`crate::pieces`]; `Some(0)`: never).
    /// `None` (the default): as `GUARDLIFT_JIT_PIECES` says, by default
    /// [`crate::pieces::PIECE_INSTS`].
    pub pieces: Option<usize>,
    /// Let one test of the runtime's own-values marks stand for an
    /// attribute op's lifetime, watch, dict and bounds tests, and for a
    /// loop entry's fixed-attributes test, on the model heap's objects
    /// (docs/CODEGEN.md, "Own values"): `None` (the default) or
    /// `Some(true)`; `Some(false)` makes none (measurements, and tests of
    /// the checks and caches it stands in front of).
    pub own_values: Option<bool>,
}

impl CompileOptions {
    /// These options at optimization level `level`.
    pub fn with_opt_level(mut self, level: OptLevel) -> Self {
        self.opt_level = level;
        self
    }

    /// These options with the own-values tests on or off (see [`Self::own_values`]).
    pub fn with_own_values(mut self, on: bool) -> Self {
        self.own_values = Some(on);
        self
    }

    /// These options with code and data mapped as `p` says (see [`Self::placement`]).
    pub fn with_placement(mut self, p: crate::Placement) -> Self {
        self.placement = Some(p);
        self
    }

    /// These options with Cranelift's verifier on or off (see [`Self::verifier`]).
    pub fn with_verifier(mut self, on: bool) -> Self {
        self.verifier = Some(on);
        self
    }

    /// Adds a host symbol: the extern `@name` of the module calls `addr`
    /// with the extern's declared signature and the platform C calling
    /// convention (`i8` travels sign-extended). A built-in of the same name
    /// takes precedence.
    ///
    /// # Safety
    /// `addr` must be a function of exactly that signature, sound to call
    /// with any arguments the module's code may pass it, from any thread
    /// that calls into the module, for as long as the compiled module lives.
    /// A function that calls a host symbol is never memory-safe in the sense
    /// of [`crate::safety`]: it can only be called through the `unsafe`
    /// entry points, whose callers vouch for what the symbol does.
    pub unsafe fn symbol(mut self, name: impl Into<String>, addr: *const u8) -> Self {
        self.symbols.push((name.into(), addr));
        self
    }

    /// Adds a typed host function: the extern `@name` of the module calls
    /// `f`, a safe `extern "C" fn` (`name` may carry the `@`). Compiling a
    /// module checks that the extern is declared with exactly `f`'s
    /// signature ([`crate::NativeType`]s: `i8 i32 i64 f32 f64`, [`crate::Ptr`]
    /// for `ptr`) and fails with [`JitError::Link`] at the declaration
    /// otherwise; a built-in's name (spec §7) is refused the same way, as
    /// for [`Self::symbol`]. Registering a name again replaces it.
    ///
    /// ```
    /// use guardlift_jit::{CompileOptions, Jit};
    /// use guardlift_runtime::{Runtime, RuntimeConfig};
    ///
    /// extern "C" fn twice(x: i64) -> i64 {
    ///     2 * x
    /// }
    ///
    /// let m = guardlift_ir::parse_module(
    ///     "extern fn @twice(i64) -> i64\n\
    ///      fn @f(%x: i64) -> i64 {\nentry:\n    %y = call @twice(%x)\n    return %y\n}\n",
    /// )?;
    /// let opts = CompileOptions::default().host_fn("twice", twice as extern "C" fn(i64) -> i64);
    /// let code = Jit::compile(&m, Runtime::new(RuntimeConfig::default()), &opts)?;
    /// let f = code.func::<i64, i64>("f")?;
    /// // SAFETY: `f` touches no memory; `twice` is safe Rust.
    /// assert_eq!(unsafe { f.call(21) }, 42);
    ///
    /// // The IR's declaration must match the Rust signature.
    /// let wrong = guardlift_ir::parse_module("extern fn @twice(f64) -> i64\n")?;
    /// let err = Jit::compile(&wrong, Runtime::new(RuntimeConfig::default()), &opts).unwrap_err();
    /// assert!(err.to_string().contains("(i64) -> i64"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn host_fn<F: crate::HostFn>(mut self, name: &str, f: F) -> Self {
        let name = name.strip_prefix('@').unwrap_or(name).to_string();
        self.symbols.retain(|(n, _)| *n != name);
        self.typed.retain(|(n, ..)| *n != name);
        self.symbols.push((name.clone(), f.addr()));
        self.typed.push((name, F::ir_params(), F::ir_ret()));
        self
    }

    /// These options with `debug` (see [`Self::debug`]).
    pub fn with_debug(mut self, debug: JitDebug) -> Self {
        self.debug = debug;
        self
    }

    /// These options with unwind info registered or not (see [`Self::unwind`]).
    pub fn with_unwind(mut self, on: bool) -> Self {
        self.unwind = Some(on);
        self
    }

    /// These options naming `path` as the module's source (see
    /// [`Self::source_file`]).
    pub fn with_source_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.source_file = Some(path.into());
        self
    }

    /// The host symbols added so far, in order.
    pub fn symbols(&self) -> &[(String, *const u8)] {
        &self.symbols
    }
}

/// The JIT compiler.
pub struct Jit;

/// Linker names the JIT gives host externs, so they can clash neither with
/// built-ins nor with anything in the process.
fn host_symbol(name: &str) -> String {
    format!("guardlift.host.{name}")
}

impl Jit {
    /// Verifies `module`, links its externs (built-ins, then `opts.symbols`),
    /// registers its guard sites with `rt`, and compiles every function.
    ///
    /// The whole round trip — IR text, instrumentation, compile, a call,
    /// the report, teardown:
    ///
    /// ```
    /// use guardlift_instrument::{instrument, CheckSet};
    /// use guardlift_jit::{CompileOptions, Jit, Ptr};
    /// use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
    ///
    /// let text = "fn @get(%o: ptr) -> i64 {\nentry:\n    %v = load_attr %o, 0\n    return %v\n}\n";
    /// let module = instrument(&guardlift_ir::parse_and_verify(text)?, CheckSet::ALL);
    /// let rt = Runtime::new(RuntimeConfig { mode: Mode::Recover, ..Default::default() });
    /// let code = Jit::compile(&module, rt.clone(), &CompileOptions::default())?;
    /// let get = code.func::<Ptr, i64>("get")?;
    ///
    /// // A host object of the default layout (cpython312: the managed-dict
    /// // word 24 bytes before the object), registered as the host made it.
    /// let mut mem = vec![0u64; 8];
    /// let obj = mem.as_mut_ptr() as u64 + 32;
    /// rt.register_object(obj)?;
    /// mem[1] = 0x96; // a rogue writer leaves the word with its tag bit cleared
    /// // SAFETY: `obj` is a live registered object (`mem` outlives the call).
    /// let v = unsafe { get.call(Ptr(obj)) };
    /// assert_eq!(v, 0); // recover mode: the bad load gives 0...
    /// let reports = rt.take_reports(); // ...and is reported at its site
    /// assert_eq!(reports[0].kind.name(), "dict_slot_tag");
    /// assert_eq!((reports[0].info.line, reports[0].info.col), (3, 5));
    ///
    /// rt.object_freed(obj)?; // as the host's tp_dealloc would say
    /// drop(mem);
    ///
    /// // Teardown in any order: the code lives while a handle (`get`)
    /// // does; the runtime flushes reports nobody took, and never panics.
    /// drop(code);
    /// drop(rt);
    /// drop(get);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile(
        module: &guardlift_ir::Module,
        rt: Arc<Runtime>,
        opts: &CompileOptions,
    ) -> Result<CompiledModule, JitError> {
        guardlift_ir::verify_module(module)?;
        Jit::compile_cow(Cow::Borrowed(module), rt, opts)
    }

    /// [`Jit::compile`] of a module that carries the verifier's word
    /// ([`Verified`]: `guardlift_ir::parse_verified`,
    /// `guardlift_instrument::instrument_verified`), given up by the
    /// caller: it is not verified again, and a big function is cut into
    /// its pieces in place rather than copied ([`crate::pieces`]). What
    /// `guardlift run` does; the result is the same as [`Jit::compile`]'s.
    ///
    /// ```
    /// use guardlift_instrument::{instrument_verified, CheckSet};
    /// use guardlift_jit::{CompileOptions, Jit};
    /// use guardlift_runtime::{Runtime, RuntimeConfig};
    ///
    /// let text = "fn @add(%a: i64, %b: i64) -> i64 {\nentry:\n    %s = iadd %a, %b\n    return %s\n}\n";
    /// let module = instrument_verified(guardlift_ir::parse_verified(text)?, CheckSet::ALL);
    /// let rt = Runtime::new(RuntimeConfig::default());
    /// let code = Jit::compile_verified(module, rt, &CompileOptions::default())?;
    /// let add = code.safe_func::<(i64, i64), i64>("add")?;
    /// assert_eq!(add.call((2, 3)), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_verified(
        module: Verified,
        rt: Arc<Runtime>,
        opts: &CompileOptions,
    ) -> Result<CompiledModule, JitError> {
        Jit::compile_cow(Cow::Owned(module.into_module()), rt, opts)
    }

    /// Compiles a module that verifies (borrowed or given up).
    fn compile_cow(
        module: Cow<'_, guardlift_ir::Module>,
        rt: Arc<Runtime>,
        opts: &CompileOptions,
    ) -> Result<CompiledModule, JitError> {
        check_layout(&module, &rt)?;
        check_host_symbols(&module, opts)?;
        let host: HashMap<&str, *const u8> =
            opts.symbols.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        let externs =
            lower::resolve_externs(&module, |name| host.get(name).map(|_| host_symbol(name)))?;
        let isa = build_isa(&IsaSpec {
            target: Target::Host,
            opt: opts.opt_level,
            tier: Tier::Optimized,
            code: CodeModel::Absolute,
            verifier: Verifier::from_option(opts.verifier),
        })?;
        let placement = match opts.placement {
            Some(p) => p,
            None => crate::Placement::from_env()?,
        };
        let mut jm = jit_module(isa, opts, placement);
        // From here on, any early return must free the module's memory and
        // unregister its sites (once registered).
        let mut site_reg: Option<u32> = None;
        let debug = rt.jit_debug().union(opts.debug);
        let source = opts.source_file.as_deref();
        let unwind = opts.unwind.unwrap_or(true);
        let pieces = match opts.pieces {
            Some(n) => n,
            None => crate::pieces::piece_insts_from_env()?,
        };
        let how = BuildDebug {
            debug,
            source,
            unwind,
            pieces,
            own_values: opts.own_values != Some(false),
        };
        match build(&mut jm, module, &rt, externs, &mut site_reg, how) {
            Ok(built) => Ok(CompiledModule::new(built, rt, jm)),
            Err(e) => {
                if let Some(base) = site_reg {
                    rt.unregister_sites(base);
                }
                // SAFETY: `build` failed, so no function of this module was
                // handed out, and none ran (compiling runs no code).
                unsafe { jm.free_memory() };
                Err(e)
            }
        }
    }
}

/// The host symbols agree with the module: none is named like a built-in
/// (which always binds to the runtime: it would be silently ignored), and
/// each typed one ([`CompileOptions::host_fn`]) has its extern's signature.
fn check_host_symbols(
    module: &guardlift_ir::Module,
    opts: &CompileOptions,
) -> Result<(), JitError> {
    let decl = |name: &str| module.externs.iter().find(|e| e.name == name);
    for (name, _) in &opts.symbols {
        if guardlift_runtime::abi::builtin(name).is_some() {
            return Err(JitError::Link {
                loc: decl(name).map(|e| e.loc).unwrap_or_default(),
                msg: format!(
                    "host function `{name}` is named like a built-in (spec §7), which always binds to the runtime: declare your own extern under another name"
                ),
            });
        }
    }
    for (name, params, ret) in &opts.typed {
        if let Some(e) = decl(name).filter(|e| e.params != *params || e.ret != *ret) {
            return Err(JitError::Link {
                loc: e.loc,
                msg: format!(
                    "host function @{name} is {} in Rust, but the module declares it {}",
                    crate::typed::signature_text(params, *ret),
                    crate::typed::signature_text(&e.params, e.ret)
                ),
            });
        }
    }
    Ok(())
}

/// Objects would be built at one slot offset and read at another.
fn check_layout(module: &guardlift_ir::Module, rt: &Runtime) -> Result<(), JitError> {
    if module.layout == rt.layout() {
        return Ok(());
    }
    Err(JitError::Link {
        loc: Default::default(),
        msg: format!(
            "the module's layout ({}) is not the runtime's ({})",
            module.layout,
            rt.layout()
        ),
    })
}

/// A JIT module for `isa` that links the built-ins, the instrumentation
/// entry points and the host symbols of `opts`, its memory placed as
/// `placement` says.
fn jit_module(
    isa: OwnedTargetIsa,
    opts: &CompileOptions,
    placement: crate::Placement,
) -> JITModule {
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    if let Some(p) = placement.provider() {
        jb.memory_provider(Box::new(p));
    }
    for &e in Entry::ALL {
        jb.symbol(e.symbol(), guardlift_runtime::abi::entry_addr(e));
    }
    for (name, addr) in &opts.symbols {
        jb.symbol(host_symbol(name), *addr);
    }
    JITModule::new(jb)
}

/// A compiled, finalized and registered module, before it is handed out.
struct Built {
    funcs: Vec<FuncInfo>,
    site_base: u32,
    times: CompileTimes,
    traps: Option<TrapRegistration>,
    code: CodeRegistration,
    published: crate::debuginfo::Published,
    debug: JitDebug,
    unwind: crate::unwind::Registration,
    unwind_on: bool,
}

/// What [`build`] tells profilers, debuggers and the unwinder, and the
/// source it names.
#[derive(Copy, Clone)]
struct BuildDebug<'a> {
    debug: JitDebug,
    source: Option<&'a std::path::Path>,
    /// Register unwind info ([`crate::unwind`]).
    unwind: bool,
    /// The piece size ([`CompileOptions::pieces`]).
    pieces: usize,
    /// Own-values tests ([`CompileOptions::own_values`]).
    own_values: bool,
}

/// Registers the module's sites with `rt` (`*site_reg`: their base, as
/// soon as they are), then declares, lowers, compiles and finalizes every
/// function of `module` in `jm` (and the clean variants of the leaf
/// functions clean loops call, `lower::version`: [`compile_unit`]), and
/// registers its trap PCs and code ranges with `rt`. A clean variant's code
/// is registered under its IR function's name: its PCs map to the same IR
/// instructions.
fn build(
    jm: &mut JITModule,
    module: Cow<'_, guardlift_ir::Module>,
    rt: &Arc<Runtime>,
    externs: Vec<ExternBinding>,
    site_reg: &mut Option<u32>,
    how: BuildDebug<'_>,
) -> Result<Built, JitError> {
    let site_base = module
        .register_sites(|s| rt.register_sites(s))
        .map_err(|d| JitError::Link {
            loc: d.loc,
            msg: d.msg,
        })?;
    *site_reg = Some(site_base);
    let cfg = UnitConfig {
        target: Target::Host,
        lower: LowerConfig {
            rt: RtRef::Const(Arc::as_ptr(rt) as u64),
            mode: lowering_mode(rt),
            site_base,
            // JIT code lives in separately mapped chunks: no near calls.
            calls: Calls::Far,
            // With `perfmap=1` the functions are declared under the names
            // our perf map gives them: under `perf record` cranelift-jit
            // writes its own line for each (`.LfnN` for an anonymous one)
            // before ours, and perf keeps the first line of a range.
            names: match how.debug.perfmap {
                true => Names::Profiler,
                false => Names::Anonymous,
            },
            shadow: lower::ShadowRef::of(rt).map(|s| lower::ShadowRef {
                own_values: how.own_values,
                ..s
            }),
            // Read after the sites are registered: a binding made later is refused.
            host: guardlift_ir::hoist::HostModel {
                host_slow_paths: rt.attr_slow_paths_bound(),
            },
        },
        unwind: how.debug.gdb || how.unwind,
        stubs: match how.debug.any() || how.unwind {
            true => StubInfo::Keep,
            false => StubInfo::Skip,
        },
        pieces: how.pieces,
    };
    // Read of the whole functions, before a big one is cut into pieces.
    let unsafety = crate::safety::unsafety(&module);
    let tiers: Vec<Tier> = module.functions.iter().map(Tier::of).collect();
    // From here on `module` is the module as compiled: its first functions
    // keep the names, positions and signatures, its sites are the same.
    let (mut unit, module) = compile_unit(jm, module, &cfg, externs)?;
    let t = Instant::now();
    jm.finalize_definitions()
        .map_err(|e| JitError::module("finalizing", e))?;
    unit.times.codegen += t.elapsed();
    let funcs: Vec<FuncInfo> = (module.functions.iter().zip(&unit.funcs))
        .zip(unsafety.into_iter().zip(tiers))
        .map(|((f, code), (unsafety, tier))| FuncInfo {
            name: f.name.clone(),
            params: f.param_types(),
            ret: f.ret,
            id: code.id,
            tier,
            addr: jm.get_finalized_function(code.id) as usize,
            unsafety,
        })
        .collect();
    // Each code unit's address.
    let addrs: Vec<usize> = (unit.funcs.iter())
        .map(|c| jm.get_finalized_function(c.id) as usize)
        .collect();
    let traps = register_traps(rt, &module, &unit.funcs, &addrs, site_base)?;
    let unwind = if how.unwind {
        register_unwind(jm, &unit, &addrs)
    } else {
        Default::default()
    };
    let published = if how.debug.any() {
        publish(jm, &module, &unit, &addrs, how)?
    } else {
        Default::default()
    };
    let times = unit.times;
    let code = register_code(rt, &module, unit.funcs, &addrs)?;
    Ok(Built {
        funcs,
        site_base,
        times,
        traps,
        code,
        published,
        debug: how.debug,
        unwind,
        unwind_on: how.unwind,
    })
}

/// Registers the unwind info of the finalized code units of `unit` (at
/// `addrs`), then of its stubs, with the process's unwinder.
fn register_unwind(
    jm: &JITModule,
    unit: &CompiledUnit,
    addrs: &[usize],
) -> crate::unwind::Registration {
    use crate::unwind::UnwindUnit;
    let code: Vec<UnwindUnit<'_>> = (unit.funcs.iter().zip(addrs))
        .map(|(c, &start)| UnwindUnit {
            start,
            len: c.size,
            info: c.unwind.as_ref(),
        })
        .chain(unit.stubs.iter().map(|st| UnwindUnit {
            start: jm.get_finalized_function(st.id) as usize,
            len: st.size,
            info: st.unwind.as_ref(),
        }))
        .collect();
    // SAFETY: the units are this module's finalized code; the module keeps
    // the registration (`Inner::unwind`) and drops it before freeing the
    // code (and `compile` drops it with `build`'s error before freeing).
    unsafe { crate::unwind::register(jm.isa(), &code) }
}

/// Tells profilers and debuggers about the finalized code of `unit` (its
/// code units at `addrs`: the module's functions, then the clean variants;
/// then its stubs), as `how` asks ([`crate::debuginfo`]).
fn publish(
    jm: &JITModule,
    module: &guardlift_ir::Module,
    unit: &CompiledUnit,
    addrs: &[usize],
    how: BuildDebug<'_>,
) -> Result<crate::debuginfo::Published, JitError> {
    use crate::debuginfo::CodeUnit;
    let mut code_units: Vec<CodeUnit<'_>> = (unit.funcs.iter().zip(addrs))
        .map(|(c, &addr)| CodeUnit {
            name: CodeUnit::ir_name(&module.functions[c.func].name, c.variant),
            start: addr,
            len: c.size,
            locs: &c.locs,
            line: module.functions[c.func].loc.line,
            unwind: c.unwind.as_ref(),
        })
        .collect();
    code_units.extend(unit.stubs.iter().map(|st| CodeUnit {
        name: st.name.clone(),
        start: jm.get_finalized_function(st.id) as usize,
        len: st.size,
        locs: &[],
        line: 0,
        unwind: st.unwind.as_ref(),
    }));
    let source = how
        .source
        .unwrap_or_else(|| std::path::Path::new("module.glir"));
    // SAFETY: the units are this module's finalized code; the module keeps
    // the result (`Inner::published`) and drops it before freeing the code
    // (and `compile` drops it with `build`'s error before freeing).
    unsafe { crate::debuginfo::publish(how.debug, &code_units, source, jm.isa()) }
}

/// Registers the trap PCs of the module's code units (`funcs`, at `addrs`)
/// with the trap handler; `None` without traps.
fn register_traps(
    rt: &Arc<Runtime>,
    module: &guardlift_ir::Module,
    funcs: &[FuncCode],
    addrs: &[usize],
    site_base: u32,
) -> Result<Option<TrapRegistration>, JitError> {
    if funcs.iter().all(|c| c.traps.is_empty()) {
        return Ok(None);
    }
    let site_infos = module.site_infos();
    let sites = (funcs.iter().zip(addrs))
        .flat_map(|(c, &addr)| c.traps.iter().map(move |&t| (c.func, addr, t)))
        .map(|(func, addr, (off, site, kind))| TrapSite {
            pc: addr + off as usize,
            site,
            kind,
            info: site_infos
                .get(&(site - site_base))
                .cloned()
                .unwrap_or_else(|| SiteInfo {
                    function: module.functions[func].name.clone(),
                    line: 0,
                    col: 0,
                    op: "?".into(),
                }),
        })
        .collect();
    let reg = rt
        .register_trap_sites(sites)
        .map_err(|source| JitError::Runtime {
            context: "trap mode: installing the signal handler".into(),
            source,
        })?;
    Ok(Some(reg))
}

/// Registers the code ranges of the code units `funcs` (at `addrs`; with
/// their PC → IR-site maps) with the code registry (faults, backtraces,
/// watchpoints), each under its IR function's name.
fn register_code(
    rt: &Arc<Runtime>,
    module: &guardlift_ir::Module,
    funcs: Vec<FuncCode>,
    addrs: &[usize],
) -> Result<CodeRegistration, JitError> {
    let code = rt
        .register_code(
            (funcs.into_iter().zip(addrs))
                .map(|(c, &addr)| CodeFunction {
                    start: addr,
                    len: c.size,
                    function: module.functions[c.func].name.clone(),
                    locs: c.locs,
                    instrumented: module.is_instrumented(),
                })
                .collect(),
        )
        .map_err(|source| JitError::Runtime {
            context: "installing the fault handler".into(),
            source,
        })?;
    Ok(code)
}

/// The mode the guards of a module compiled against `rt` are lowered for:
/// the runtime's, except that trap mode is lowered like abort mode when
/// the process has no trap handler for this platform or the runtime must
/// not end the process (a trap cannot return a verdict).
pub fn lowering_mode(rt: &Runtime) -> Mode {
    match rt.mode() {
        Mode::Trap if !guardlift_runtime::trap::supported() || !rt.aborts_process() => Mode::Abort,
        m => m,
    }
}

/// One compiled function.
pub(crate) struct FuncInfo {
    pub(crate) name: String,
    pub(crate) params: Vec<Type>,
    pub(crate) ret: Option<Type>,
    /// Its Cranelift function in the JIT module.
    pub(crate) id: ClFuncId,
    tier: Tier,
    /// Finalized code address (valid while `Inner` lives).
    pub(crate) addr: usize,
    /// Why it is not memory-safe to call ([`crate::safety`]); `None` when it is.
    pub(crate) unsafety: Option<String>,
}

/// The mutable part of a compiled module.
pub(crate) struct State {
    /// `None` only during drop.
    pub(crate) module: Option<JITModule>,
    /// Dynamic-call trampolines by function index, compiled on first use.
    pub(crate) trampolines: HashMap<usize, usize>,
    /// What profilers and debuggers were told about the trampolines.
    pub(crate) published: Vec<crate::debuginfo::Published>,
    /// The trampolines' unwind info registrations.
    pub(crate) unwind: Vec<crate::unwind::Registration>,
}

/// A compiled module, shared by its handles; dropping it frees the code.
pub(crate) struct Inner {
    times: CompileTimes,
    /// Trap-mode sites of this module's code; unregistered before the code is freed.
    traps: Option<TrapRegistration>,
    /// The code's entry in the code registry (PC → IR site, for faults,
    /// backtraces and watchpoints); unregistered before the code is freed.
    code: Option<CodeRegistration>,
    /// What profilers and debuggers were told (the GDB JIT entry is
    /// withdrawn before the code is freed).
    published: crate::debuginfo::Published,
    /// What to tell them about code compiled later (trampolines).
    pub(crate) debug: JitDebug,
    /// The code's unwind info as the unwinder has it; deregistered before
    /// the code is freed.
    unwind: crate::unwind::Registration,
    /// Whether code compiled later (trampolines) registers its unwind info.
    pub(crate) unwind_on: bool,
    pub(crate) rt: Arc<Runtime>,
    pub(crate) funcs: Vec<FuncInfo>,
    by_name: HashMap<String, usize>,
    site_base: u32,
    pub(crate) state: Mutex<State>,
}

// The code is immutable once finalized and the JIT module is only touched
// under the mutex (JITModule is Send).
const _: fn() = || {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<JITModule>();
    sync::<Inner>();
};

impl Drop for Inner {
    fn drop(&mut self) {
        // First make the signal handler forget this code's trap PCs, and
        // the runtime this module's sites.
        drop(self.traps.take());
        // Watched writes from this code resolve to IR while it is registered.
        self.rt.drain_watch();
        drop(self.code.take());
        self.published.withdraw();
        self.rt.unregister_sites(self.site_base);
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        state.published.clear();
        // No unwinder may find tables of code that is about to go.
        state.unwind.clear();
        drop(std::mem::take(&mut self.unwind));
        if let Some(m) = state.module.take() {
            // SAFETY: `Inner` is dropped when the last `CompiledModule` and
            // `TypedFunc` are gone; every call borrows one of them, so no
            // code of this module is running or can be called again.
            unsafe { m.free_memory() };
        }
    }
}

/// Compiled code for one module. Cloning is cheap (an `Arc`); the code is
/// freed when the last clone and the last [`crate::TypedFunc`] are dropped.
///
/// Compiling a module is an act of trust: IR code reads and writes whatever
/// addresses it computes, as native code does.
#[derive(Clone)]
pub struct CompiledModule {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for CompiledModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModule")
            .field("functions", &self.inner.funcs.len())
            .field("site_base", &self.inner.site_base)
            .finish()
    }
}

pub(crate) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl CompiledModule {
    /// Hands out a built module: from now on `Inner`'s drop frees it.
    fn new(b: Built, rt: Arc<Runtime>, jm: JITModule) -> Self {
        let by_name = b
            .funcs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        CompiledModule {
            inner: Arc::new(Inner {
                times: b.times,
                traps: b.traps,
                code: Some(b.code),
                published: b.published,
                debug: b.debug,
                unwind: b.unwind,
                unwind_on: b.unwind_on,
                rt,
                funcs: b.funcs,
                by_name,
                site_base: b.site_base,
                state: Mutex::new(State {
                    module: Some(jm),
                    trampolines: HashMap::new(),
                    published: Vec::new(),
                    unwind: Vec::new(),
                }),
            }),
        }
    }

    /// Where compiling this module spent its time.
    pub fn compile_times(&self) -> CompileTimes {
        self.inner.times
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
    }

    /// (registered, missing): how many of the module's code units (its
    /// functions, clean variants and stubs; trampolines not counted) have
    /// their unwind info registered with the process's unwinder, and how
    /// many could not ([`crate::unwind`]); `(0, 0)` when it is off.
    pub fn unwind_registered(&self) -> (usize, usize) {
        (self.inner.unwind.registered(), self.inner.unwind.missing())
    }

    /// Added to the module's local site ids to get the runtime's site ids.
    pub fn site_base(&self) -> u32 {
        self.inner.site_base
    }

    /// Names of the compiled functions, in module order.
    pub fn function_names(&self) -> impl Iterator<Item = &str> {
        self.inner.funcs.iter().map(|f| f.name.as_str())
    }

    /// The tier `name` was compiled at (see [`Tier`]).
    pub fn tier(&self, name: &str) -> Result<Tier, JitError> {
        Ok(self.info(name)?.1.tier)
    }

    /// The IR signature of a function: (params, result).
    pub fn signature(&self, name: &str) -> Result<(Vec<Type>, Option<Type>), JitError> {
        let f = self.info(name)?.1;
        Ok((f.params.clone(), f.ret))
    }

    /// `Ok` when function `name` is memory-safe to call from safe Rust
    /// ([`crate::safety`]); otherwise [`JitError::NotMemorySafe`] saying
    /// which instruction makes it unsafe.
    pub fn check_memory_safe(&self, name: &str) -> Result<(), JitError> {
        let f = self.info(name)?.1;
        match &f.unsafety {
            None => Ok(()),
            Some(reason) => Err(JitError::NotMemorySafe {
                name: f.name.clone(),
                reason: reason.clone(),
            }),
        }
    }

    /// Function `name`'s index and record.
    pub(crate) fn info(&self, name: &str) -> Result<(usize, &FuncInfo), JitError> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let i = *self
            .inner
            .by_name
            .get(name)
            .ok_or_else(|| JitError::NoSuchFunction(name.to_string()))?;
        Ok((i, &self.inner.funcs[i]))
    }
}
