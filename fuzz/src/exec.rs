//! Running a module on an engine into an [`Outcome`] that engines must
//! agree on (results, captured output, reports as
//! [`guardlift_tests::CmpReport`] compares them, host faults). The
//! interpreter runs with `set_verify_elision`: an underflow check the
//! elision analysis claimed cannot fail that fails is an error.

use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::literal::norm_int;
use guardlift_ir::{Module, Type};
use guardlift_jit::{CompileOptions, OptLevel};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Report, Runtime, RuntimeConfig};
use guardlift_tests::CmpReport;
use std::collections::HashMap;
use std::sync::Arc;

/// Which engine runs a module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    Interp,
    Jit,
}

/// The check sets every module runs with (when its needs allow): none
/// (uninstrumented), each check alone, dict+adstack, lifetime+bounds, and
/// all five. Lifetime+bounds is the one set whose versioned loops drop
/// lifetime tests of objects no `guard.watch` covers (with every check,
/// the clobber check watches each object an attribute op uses, and a
/// check alone versions no loop for lifetime): the dispatch's shadow test
/// of them is reached only there.
pub const CHECK_SETS: [CheckSet; 9] = [
    set(false, false, false, false, false),
    set(false, true, false, false, false),
    set(false, false, false, true, false),
    set(false, false, false, false, true),
    set(false, true, false, true, false),
    set(true, false, false, false, false),
    set(false, false, true, false, false),
    set(true, false, true, false, false),
    CheckSet::ALL,
];

/// A check set from its flags, in spec order (lifetime, dict, bounds, adstack, clobber).
const fn set(lifetime: bool, dict: bool, bounds: bool, adstack: bool, clobber: bool) -> CheckSet {
    CheckSet {
        lifetime,
        dict,
        bounds,
        adstack,
        clobber,
    }
}

/// `m` instrumented with `checks` (unchanged for the empty set).
pub fn with_checks(m: &Module, checks: CheckSet) -> Module {
    if checks.is_empty() {
        m.clone()
    } else {
        instrument(m, checks)
    }
}

/// Everything a run produced that engines must agree on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The entry's result in canonical bits, every NaN the same NaN.
    pub result: Option<u64>,
    pub output: String,
    pub reports: Vec<CmpReport>,
    pub host_fault: bool,
}

/// A run's raw products (for targets that check reports themselves).
pub struct RawRun {
    pub result: Result<Option<u64>, String>,
    pub output: String,
    pub reports: Vec<Report>,
    pub host_fault: bool,
}

/// Canonical bits of a result of type `ty`: ints sign-extended from their
/// width, f32 in the low 32 bits, and every NaN the canonical NaN.
pub fn canon_result(ty: Type, bits: u64) -> u64 {
    match ty {
        Type::F32 => {
            let f = f32::from_bits(bits as u32);
            if f.is_nan() {
                f32::NAN.to_bits() as u64
            } else {
                f.to_bits() as u64
            }
        }
        Type::F64 => {
            if f64::from_bits(bits).is_nan() {
                f64::NAN.to_bits()
            } else {
                bits
            }
        }
        t => norm_int(t, bits),
    }
}

/// Runs `entry(args)` of `m` on `engine` against a fresh runtime in `mode`
/// (abort mode never ends the process: the runtime only records).
pub fn run_raw(m: &Module, entry: &str, args: &[u64], engine: Engine, mode: Mode) -> RawRun {
    run_raw_opt(m, entry, args, engine, mode, OptLevel::default())
}

/// [`run_raw`] with the JIT's Cranelift optimization level `opt`.
pub fn run_raw_opt(
    m: &Module,
    entry: &str,
    args: &[u64],
    engine: Engine,
    mode: Mode,
    opt: OptLevel,
) -> RawRun {
    let jit = CompileOptions::default().with_opt_level(opt);
    run_raw_with(m, entry, args, engine, mode, &jit)
}

/// [`run_raw`] with the JIT's compile options `jit`.
pub fn run_raw_with(
    m: &Module,
    entry: &str,
    args: &[u64],
    engine: Engine,
    mode: Mode,
    jit: &CompileOptions,
) -> RawRun {
    run_raw_bound(
        m,
        entry,
        args,
        engine,
        mode,
        jit,
        SlowPathBinding::ModelHeap,
    )
}

/// The host's attribute slow paths as a VM binds them
/// (`Runtime::bind_attr_slow_paths`): its own dict per object, which
/// starts empty (a load of an attribute never stored gives a value made
/// from the index alone, so two engines' runtimes agree though their
/// objects' addresses differ). With [`HostSlowPaths::freeing`], every
/// [`FREE_EVERY`]th store also frees the object, as a VM's dict code may
/// (a `__setattr__` that drops the last reference): the engines then
/// meet a use after free the loop analysis must not have assumed away.
#[derive(Default)]
pub struct HostSlowPaths {
    attrs: std::sync::Mutex<HashMap<(u64, u32), i64>>,
    calls: std::sync::atomic::AtomicU64,
    stores: std::sync::atomic::AtomicU64,
    freed: std::sync::atomic::AtomicU64,
    /// The runtime whose objects a store frees (none: it frees nothing).
    frees: Option<std::sync::Weak<Runtime>>,
}

/// One store in this many through [`HostSlowPaths::freeing`] frees its object.
pub const FREE_EVERY: u64 = 3;

impl HostSlowPaths {
    /// Slow paths whose every [`FREE_EVERY`]th store frees the object in `rt`.
    pub fn freeing(rt: &Arc<Runtime>) -> Self {
        HostSlowPaths {
            frees: Some(Arc::downgrade(rt)),
            ..Default::default()
        }
    }

    /// How many times IR code called the slow paths.
    pub fn calls(&self) -> u64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many objects the slow paths freed.
    pub fn freed(&self) -> u64 {
        self.freed.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn called(&self) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl guardlift_runtime::AttrSlowPaths for HostSlowPaths {
    fn load_attr(&self, obj: u64, index: u32) -> i64 {
        self.called();
        let attrs = self.attrs.lock().unwrap_or_else(|e| e.into_inner());
        (attrs.get(&(obj, index)).copied()).unwrap_or(0x5100 + index as i64)
    }

    fn store_attr(&self, obj: u64, index: u32, value: i64) {
        self.called();
        self.attrs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((obj, index), value);
        let n = 1 + self
            .stores
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n.is_multiple_of(FREE_EVERY) {
            if let Some(rt) = self.frees.as_ref().and_then(std::sync::Weak::upgrade) {
                rt.obj_free(obj);
                self.freed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// How many slow-path calls `entry(args)` of `m` makes on the interpreter
/// in recover mode with the host's slow paths bound, freeing (the reach of
/// [`crate::targets::pick_slow_paths`]), how many objects they freed, and
/// how many reports the run made.
pub fn slow_path_calls(m: &Module, entry: &str, args: &[u64]) -> (u64, u64, usize) {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let paths = Arc::new(HostSlowPaths::freeing(&rt));
    if rt.bind_attr_slow_paths(paths.clone()).is_err() {
        return (0, 0, 0);
    }
    let jit = CompileOptions::default();
    let _ = run_on(m, entry, args, Engine::Interp, &jit, &rt);
    (paths.calls(), paths.freed(), rt.take_reports().len())
}

/// What the runtime's attribute slow paths are bound to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SlowPathBinding {
    /// Nothing: the model heap's slow paths.
    ModelHeap,
    /// A [`HostSlowPaths`] that frees nothing.
    HostDict,
    /// A [`HostSlowPaths::freeing`] (only where the lifetime checks make a
    /// later use of the freed object defined).
    HostDictFreeing,
}

/// [`run_raw_with`], the runtime's attribute slow paths bound as `slow_paths` says.
pub fn run_raw_bound(
    m: &Module,
    entry: &str,
    args: &[u64],
    engine: Engine,
    mode: Mode,
    jit: &CompileOptions,
    slow_paths: SlowPathBinding,
) -> RawRun {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: false,
        capture_output: true,
    });
    let paths = match slow_paths {
        SlowPathBinding::ModelHeap => None,
        SlowPathBinding::HostDict => Some(HostSlowPaths::default()),
        SlowPathBinding::HostDictFreeing => Some(HostSlowPaths::freeing(&rt)),
    };
    if let Some(paths) = paths {
        rt.bind_attr_slow_paths(Arc::new(paths))
            .expect("a fresh runtime takes a binding");
    }
    let result = run_on(m, entry, args, engine, jit, &rt);
    RawRun {
        result,
        output: rt.take_output(),
        reports: rt.take_reports(),
        host_fault: rt.take_host_fault().is_some(),
    }
}

fn run_on(
    m: &Module,
    entry: &str,
    args: &[u64],
    engine: Engine,
    jit: &CompileOptions,
    rt: &Arc<Runtime>,
) -> Result<Option<u64>, String> {
    match engine {
        // The interpreter also checks every claim of the elision analysis.
        Engine::Interp => guardlift_interp::Interpreter::new(m, rt.clone(), &HashMap::new())
            .and_then(|mut it| {
                it.set_verify_elision(true);
                it.call(entry, args)
            })
            .map_err(|e| format!("interp: {e}")),
        // Inputs compiled in pieces go the way `guardlift run` does: a
        // verified module given up, cut in place; the others are borrowed
        // (verified by the JIT, cut in a copy).
        Engine::Jit => match jit.pieces {
            Some(_) => guardlift_ir::Verified::new(m.clone())
                .map_err(guardlift_jit::JitError::from)
                .and_then(|v| guardlift_jit::Jit::compile_verified(v, rt.clone(), jit)),
            None => guardlift_jit::Jit::compile(m, rt.clone(), jit),
        }
        // SAFETY: the generators (`gen`, `guards`) emit raw and object
        // accesses only to objects and adstack buffers the program itself
        // allocates, within their sizes, and no host symbol.
        .and_then(|c| unsafe { c.call_dynamic(entry, args) })
        .map_err(|e| format!("jit: {e}")),
    }
}

/// As [`run_raw`], with the result canonicalized and reports made comparable.
pub fn run(
    m: &Module,
    entry: &str,
    args: &[u64],
    engine: Engine,
    mode: Mode,
) -> Result<Outcome, String> {
    comparable(m, entry, run_raw(m, entry, args, engine, mode))
}

/// What engines must agree on in `r`, a run of `entry` of `m`
/// ([`run_raw`], [`run_raw_opt`]): the result canonicalized, the reports
/// made comparable; a failed run is its error.
pub fn comparable(m: &Module, entry: &str, r: RawRun) -> Result<Outcome, String> {
    let ret = m
        .func_by_name(entry)
        .map(|f| m.func(f).ret)
        .ok_or_else(|| format!("no function @{entry}"))?;
    let result = r.result?;
    Ok(Outcome {
        result: match (ret, result) {
            (Some(t), Some(bits)) => Some(canon_result(t, bits)),
            _ => None,
        },
        output: r.output,
        reports: r.reports.iter().map(CmpReport::from).collect(),
        host_fault: r.host_fault,
    })
}
