//! The JIT: compiles a module for the host with cranelift-jit and hands out
//! typed and dynamic entry points that keep the code alive.

use crate::error::JitError;
use crate::lower::{self, Entry, Lowerer, RtRef};
use crate::target::{build_isa, OptLevel, Target, Tier, TierIsas};
use crate::typed::{signature_text, Params, Results};
use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, InstBuilder, MemFlagsData, Signature,
    UserExternalName, UserFuncName,
};
use cranelift_codegen::CompiledCode;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId as ClFuncId, Module as _};
use guardlift_ir::{FuncId, Type};
use guardlift_runtime::codemap::{CodeFunction, CodeRegistration};
use guardlift_runtime::{Mode, ReportKind, Runtime, SiteInfo, TrapRegistration, TrapSite};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Options of [`Jit::compile`].
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    pub opt_level: OptLevel,
    /// Host functions for externs that are not built-ins: (IR name without
    /// `@`, address). Each is called with the extern's declared signature
    /// and the platform C calling convention; `i8` travels sign-extended.
    pub symbols: Vec<(String, *const u8)>,
}

impl CompileOptions {
    /// Adds a host symbol.
    pub fn symbol(mut self, name: impl Into<String>, addr: *const u8) -> Self {
        self.symbols.push((name.into(), addr));
        self
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
    pub fn compile(
        module: &guardlift_ir::Module,
        rt: Arc<Runtime>,
        opts: &CompileOptions,
    ) -> Result<CompiledModule, JitError> {
        guardlift_ir::verify_module(module)?;
        if module.layout != rt.layout() {
            // Objects would be built at one slot offset and read at another.
            return Err(JitError::Link {
                loc: Default::default(),
                msg: format!(
                    "the module's layout ({}) is not the runtime's ({})",
                    module.layout,
                    rt.layout()
                ),
            });
        }
        let host: HashMap<&str, *const u8> =
            opts.symbols.iter().map(|(n, p)| (n.as_str(), *p)).collect();
        let externs =
            lower::resolve_externs(module, |name| host.get(name).map(|_| host_symbol(name)))?;

        let isa = build_isa(Target::Host, opts.opt_level, Tier::Optimized, false)?;
        let call_conv = isa.default_call_conv();
        let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        for &e in Entry::ALL {
            jb.symbol(e.symbol(), guardlift_runtime::abi::entry_addr(e));
        }
        for (name, addr) in &opts.symbols {
            jb.symbol(host_symbol(name), *addr);
        }
        let mut jm = JITModule::new(jb);

        // From here on, any early return must free the module's memory.
        let mut times = CompileTimes::default();
        // The module's sites, once registered (unregistered on failure).
        let mut site_reg: Option<u32> = None;
        let result = (|| {
            let mut funcs = Vec::with_capacity(module.functions.len());
            for (i, f) in module.functions.iter().enumerate() {
                let sig = lower::ir_signature(call_conv, &f.param_types(), f.ret);
                let id = jm.declare_anonymous_function(&sig).map_err(|e| {
                    JitError::Codegen(format!("@{}: declaring: {e}", module.functions[i].name))
                })?;
                funcs.push(id);
            }
            let site_base = module
                .register_sites(|s| rt.register_sites(s))
                .map_err(|d| JitError::Link {
                    loc: d.loc,
                    msg: d.msg,
                })?;
            site_reg = Some(site_base);
            let rt_addr = Arc::as_ptr(&rt) as u64;
            let mut lw = Lowerer::new(
                module,
                RtRef::Const(rt_addr),
                lowering_mode(&rt),
                site_base,
                call_conv,
                funcs.clone(),
                externs,
                // JIT code lives in separately mapped chunks: no near calls.
                false,
            );
            lw.shadow = lower::ShadowRef::of(&rt);
            let mut ctx = jm.make_context();
            let mut fctx = FunctionBuilderContext::new();
            let mut tiers = TierIsas::new(Target::Host, false);
            // (function index, code offset, site, kind) of every trap.
            let mut traps: Vec<(usize, u32, u32, ReportKind)> = Vec::new();
            // (PC → IR-site map, code size) of each function, for the fault
            // handler and watchpoints.
            let mut pcmaps = Vec::with_capacity(module.functions.len());
            let all_sites = module.site_infos();
            for (i, f) in module.functions.iter().enumerate() {
                let id = funcs[i];
                let t = Instant::now();
                lw.lower_function(
                    &mut jm,
                    FuncId(i as u32),
                    UserFuncName::user(0, id.as_u32()),
                    &mut ctx.func,
                    &mut fctx,
                )?;
                let t2 = Instant::now();
                times.lower += t2 - t;
                tiers
                    .define(&mut jm, id, &mut ctx, Tier::of(f))
                    .map_err(|e| JitError::Codegen(format!("@{}: {e}", f.name)))?;
                times.codegen += t2.elapsed();
                {
                    let code = ctx.compiled_code().ok_or_else(|| {
                        JitError::Codegen(format!("@{}: no compiled code", f.name))
                    })?;
                    let locs =
                        crate::codemap::pc_locs(code, f, lw.trap_sites(), &all_sites, site_base);
                    pcmaps.push((locs, code.code_info().total_size as usize));
                }
                if !lw.trap_sites().is_empty() {
                    // cranelift-jit drops trap metadata: read it before the
                    // context is cleared.
                    let code = ctx.compiled_code().ok_or_else(|| {
                        JitError::Codegen(format!("@{}: no compiled code", f.name))
                    })?;
                    for (off, site, kind) in trap_offsets(code, lw.trap_sites())
                        .map_err(|e| JitError::Codegen(format!("@{}: {e}", f.name)))?
                    {
                        traps.push((i, off, site, kind));
                    }
                }
                jm.clear_context(&mut ctx);
            }
            let t = Instant::now();
            lw.define_stubs(&mut jm, &mut fctx)?;
            jm.finalize_definitions()
                .map_err(|e| JitError::Codegen(format!("finalizing: {e}")))?;
            times.codegen += t.elapsed();
            let infos: Vec<FuncInfo> = module
                .functions
                .iter()
                .zip(&funcs)
                .map(|(f, &id)| FuncInfo {
                    name: f.name.clone(),
                    params: f.param_types(),
                    ret: f.ret,
                    id,
                    tier: Tier::of(f),
                    addr: jm.get_finalized_function(id) as usize,
                })
                .collect();
            let registration = if traps.is_empty() {
                None
            } else {
                let site_infos = module.site_infos();
                let sites = traps
                    .iter()
                    .map(|&(i, off, site, kind)| {
                        let local = site - site_base;
                        TrapSite {
                            pc: infos[i].addr + off as usize,
                            site,
                            kind,
                            info: site_infos.get(&local).cloned().unwrap_or_else(|| SiteInfo {
                                function: infos[i].name.clone(),
                                line: 0,
                                col: 0,
                                op: "?".into(),
                            }),
                        }
                    })
                    .collect();
                Some(rt.register_trap_sites(sites).map_err(|e| {
                    JitError::Codegen(format!("trap mode: installing the signal handler: {e}"))
                })?)
            };
            let code_reg = rt
                .register_code(
                    infos
                        .iter()
                        .zip(pcmaps)
                        .map(|(fi, (locs, len))| CodeFunction {
                            start: fi.addr,
                            len,
                            function: fi.name.clone(),
                            locs,
                        })
                        .collect(),
                )
                .map_err(|e| JitError::Codegen(format!("installing the fault handler: {e}")))?;
            Ok((infos, site_base, registration, code_reg))
        })();
        let (funcs, site_base, traps, code_reg) = match result {
            Ok(x) => x,
            Err(e) => {
                if let Some(base) = site_reg {
                    rt.unregister_sites(base);
                }
                // SAFETY: nothing from this module was handed out or run.
                unsafe { jm.free_memory() };
                return Err(e);
            }
        };
        let by_name = funcs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        Ok(CompiledModule {
            inner: Arc::new(Inner {
                times,
                traps,
                code: Some(code_reg),
                rt,
                funcs,
                by_name,
                site_base,
                state: Mutex::new(State {
                    module: Some(jm),
                    trampolines: HashMap::new(),
                }),
            }),
        })
    }
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

/// (code offset, site, kind) of every guard trap in `code`: a trap whose
/// code is one of the report kinds' user codes, mapped to its site through
/// the source location the lowering gave it ([`lower::trap_index`]).
pub fn trap_offsets(
    code: &CompiledCode,
    sites: &[(u32, ReportKind)],
) -> Result<Vec<(u32, u32, ReportKind)>, String> {
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
            .ok_or_else(|| format!("trap at offset {:#x} has no source location", t.offset))?;
        let &(site, k) = lower::trap_index(loc)
            .and_then(|ix| sites.get(ix))
            .ok_or_else(|| format!("trap at offset {:#x} maps to no guard site", t.offset))?;
        if k != kind {
            return Err(format!(
                "trap at offset {:#x}: code says {}, site {site} is {}",
                t.offset,
                kind.name(),
                k.name()
            ));
        }
        out.push((t.offset, site, kind));
    }
    Ok(out)
}

struct FuncInfo {
    name: String,
    params: Vec<Type>,
    ret: Option<Type>,
    id: ClFuncId,
    tier: Tier,
    /// Finalized code address (valid while `Inner` lives).
    addr: usize,
}

struct State {
    /// `None` only during drop.
    module: Option<JITModule>,
    /// Dynamic-call trampolines by function index, compiled on first use.
    trampolines: HashMap<usize, usize>,
}

struct Inner {
    times: CompileTimes,
    /// Trap-mode sites of this module's code; unregistered before the code is freed.
    traps: Option<TrapRegistration>,
    /// The code's entry in the code registry (PC → IR site, for faults,
    /// backtraces and watchpoints); unregistered before the code is freed.
    code: Option<CodeRegistration>,
    rt: Arc<Runtime>,
    funcs: Vec<FuncInfo>,
    by_name: HashMap<String, usize>,
    site_base: u32,
    state: Mutex<State>,
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
        self.rt.unregister_sites(self.site_base);
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = state.module.take() {
            // SAFETY: `Inner` is dropped when the last `CompiledModule` and
            // `TypedFunc` are gone; every call borrows one of them, so no
            // code of this module is running or can be called again.
            unsafe { m.free_memory() };
        }
    }
}

/// Compiled code for one module. Cloning is cheap (an `Arc`); the code is
/// freed when the last clone and the last [`TypedFunc`] are dropped.
///
/// Compiling a module is an act of trust: IR code reads and writes whatever
/// addresses it computes, as native code does.
#[derive(Clone)]
pub struct CompiledModule {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CompiledModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModule")
            .field("functions", &self.inner.funcs.len())
            .field("site_base", &self.inner.site_base)
            .finish()
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where [`Jit::compile`] spent its time.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// guardlift's lowering: IR to Cranelift IR (`lower/`).
    pub lower: Duration,
    /// Cranelift: optimization, register allocation, emission, and
    /// cranelift-jit's linking and finalizing (stubs included).
    pub codegen: Duration,
}

impl CompiledModule {
    /// Where compiling this module spent its time.
    pub fn compile_times(&self) -> CompileTimes {
        self.inner.times
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
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

    fn info(&self, name: &str) -> Result<(usize, &FuncInfo), JitError> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let i = *self
            .inner
            .by_name
            .get(name)
            .ok_or_else(|| JitError::NoSuchFunction(name.to_string()))?;
        Ok((i, &self.inner.funcs[i]))
    }

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

    /// Calls `name` with raw argument bits: integers sign-extended to 64 bits
    /// from their width, `f32` as `to_bits() as u64`, `f64` as `to_bits()`,
    /// `ptr` as the address. The result comes back the same way (`None` for
    /// a function without a result).
    pub fn call_dynamic(&self, name: &str, args: &[u64]) -> Result<Option<u64>, JitError> {
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
        // reads `params.len()` words from `args` and writes one to `ret`.
        unsafe {
            let t: unsafe extern "C" fn(*const u64, *mut u64) =
                std::mem::transmute(tramp as *const ());
            t(args.as_ptr(), &mut ret);
        }
        Ok(f.ret.map(|_| ret))
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
            .ok_or_else(|| JitError::Codegen("module already freed".into()))?;
        let addr = build_trampoline(jm, f)?;
        st.trampolines.insert(i, addr);
        Ok(addr)
    }
}

/// `extern "C" fn(args: *const u64, ret: *mut u64)` that unpacks raw bits,
/// calls `f`, and packs its result.
fn build_trampoline(jm: &mut JITModule, f: &FuncInfo) -> Result<usize, JitError> {
    let cc = jm.isa().default_call_conv();
    let mut sig = Signature::new(cc);
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    let id = jm
        .declare_anonymous_function(&sig)
        .map_err(|e| JitError::Codegen(format!("trampoline of @{}: {e}", f.name)))?;
    let mut ctx = jm.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let callee_sig = b.import_signature(lower::ir_signature(cc, &f.params, f.ret));
        let name = b.func.declare_imported_user_function(UserExternalName {
            namespace: 0,
            index: f.id.as_u32(),
        });
        let callee = b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: callee_sig,
            colocated: false,
            patchable: false,
        });
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (args_p, ret_p) = (b.block_params(entry)[0], b.block_params(entry)[1]);
        let flags = MemFlagsData::trusted();
        let mut args = Vec::with_capacity(f.params.len());
        for (k, &t) in f.params.iter().enumerate() {
            let raw = b.ins().load(types::I64, flags, args_p, (k * 8) as i32);
            let v = match lower::cl_type(t) {
                types::I8 => b.ins().ireduce(types::I8, raw),
                types::I32 => b.ins().ireduce(types::I32, raw),
                types::F32 => {
                    let w = b.ins().ireduce(types::I32, raw);
                    b.ins().bitcast(types::F32, MemFlagsData::new(), w)
                }
                types::F64 => b.ins().bitcast(types::F64, MemFlagsData::new(), raw),
                _ => raw,
            };
            args.push(v);
        }
        let call = b.ins().call(callee, &args);
        if let (Some(t), Some(&r)) = (f.ret, b.inst_results(call).first()) {
            let bits = match lower::cl_type(t) {
                types::I8 | types::I32 => b.ins().sextend(types::I64, r),
                types::F32 => {
                    let w = b.ins().bitcast(types::I32, MemFlagsData::new(), r);
                    b.ins().uextend(types::I64, w)
                }
                types::F64 => b.ins().bitcast(types::I64, MemFlagsData::new(), r),
                _ => r,
            };
            b.ins().store(flags, bits, ret_p, 0);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(jm.isa().frontend_config());
    }
    jm.define_function(id, &mut ctx)
        .map_err(|e| JitError::Codegen(format!("trampoline of @{}: {e:?}", f.name)))?;
    jm.finalize_definitions()
        .map_err(|e| JitError::Codegen(format!("finalizing trampoline of @{}: {e}", f.name)))?;
    Ok(jm.get_finalized_function(id) as usize)
}

/// A typed entry point. It keeps the module's code alive.
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
    pub fn call(&self, args: A) -> R {
        // Faults inside are placed at their IR site (see `fault`).
        let _entry = guardlift_runtime::codemap::enter_compiled_code();
        // SAFETY: `func` checked that the IR signature is exactly (A) -> R,
        // and `inner` keeps the code mapped.
        unsafe { A::invoke::<R>(self.addr, args) }
    }

    /// The runtime the code reports to.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
    }
}
