//! Shared helpers for the cross-engine tests: the program corpus in
//! `tests/programs/`, and running a module on an engine into a comparable
//! [`Outcome`].

// A test crate, not a library for others: its public items are documented
// where it helps, not as an API.
#![allow(missing_docs)]

use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::literal::parse_arg;
use guardlift_ir::{parse_and_verify, Module};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Observed, Report, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A corpus program: its path, text and entry arguments (`; args:` header).
pub struct Program {
    pub path: PathBuf,
    pub text: String,
    pub args: Vec<String>,
}

/// Every `.glir` file in `tests/programs/`, sorted.
pub fn corpus() -> Vec<Program> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    paths.sort();
    paths.into_iter().map(read_program).collect()
}

/// The corpus program `tests/programs/NAME.glir`.
pub fn program(name: &str) -> Program {
    read_program(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("programs")
            .join(format!("{name}.glir")),
    )
}

/// The program at `path`, its entry arguments from its `; args:` header
/// (the first line).
fn read_program(path: PathBuf) -> Program {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let args = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("; args:"))
        .map(|a| a.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    Program { path, text, args }
}

/// Which engine runs a module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    Interp,
    Jit,
}

/// A report with the parts that must agree across engines: heap addresses
/// differ between runs, so dict and clobber observations keep only what
/// does not depend on where the heap put the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmpReport {
    pub kind: &'static str,
    pub function: String,
    pub line: u32,
    pub col: u32,
    pub op: String,
    pub count: u64,
    pub observed: String,
    pub last_write: Option<(String, bool)>,
    /// The object's allocation id, whether it was freed, and the lines of
    /// its allocation and free sites.
    pub object: Option<(u64, bool, Option<u32>, Option<u32>)>,
    /// The allocation id of the object the last write went to.
    pub last_write_object: Option<u64>,
}

impl CmpReport {
    pub fn from(r: &Report) -> Self {
        let observed = match r.observed {
            Observed::Dict { value, .. } => format!("dict low bits {:03b}", value & 7),
            Observed::Adstack { capacity, len } => format!("adstack {capacity} {len}"),
            // The stored value may be derived from an address (a word with a bit cleared).
            Observed::Clobber { width, .. } => format!("clobber w{width}"),
            // The address depends on where the heap put the block.
            Observed::Overflow { width, value, .. } => {
                format!("overflow w{width} value {value:?}")
            }
            Observed::Write { width, new, .. } => {
                format!("write w{width} low bits {:03b}", new & 7)
            }
            // The values array is a block of its own: only the width is address-free.
            Observed::Lifetime { width, .. } => format!("lifetime w{width}"),
            Observed::Bounds {
                index, capacity, ..
            } => format!("bounds {index} {capacity}"),
        };
        let object = r.object.as_ref().map(|o| {
            let line = |s: &Option<guardlift_runtime::SiteInfo>| s.as_ref().map(|s| s.line);
            (o.id, o.freed, line(&o.alloc_site), line(&o.free_site))
        });
        let last_write = match (&r.last_write, r.observed) {
            (Some(w), Observed::Dict { value, .. }) => Some((w.by.clone(), w.value != value)),
            _ => None,
        };
        CmpReport {
            kind: r.kind.name(),
            function: r.info.function.clone(),
            line: r.info.line,
            col: r.info.col,
            op: r.info.op.clone(),
            count: r.count,
            observed,
            last_write,
            object,
            last_write_object: r.last_write.as_ref().and_then(|w| w.object_id),
        }
    }
}

/// Everything a run produced that engines must agree on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub result: Result<Option<u64>, String>,
    pub output: String,
    pub reports: Vec<CmpReport>,
    pub host_fault: bool,
}

/// Parses and verifies a corpus program (panics with the diagnostic).
pub fn load(p: &Program) -> Module {
    parse_and_verify(&p.text).unwrap_or_else(|e| panic!("{}: {e}", p.path.display()))
}

/// Instruments `m` with `checks` (none: unchanged).
pub fn with_checks(m: &Module, checks: CheckSet) -> Module {
    if checks.is_empty() {
        m.clone()
    } else {
        instrument(m, checks)
    }
}

/// Runs `@main` of `m` with text arguments on `engine`, in `mode`, on a fresh runtime.
pub fn run(m: &Module, args: &[String], engine: Engine, mode: Mode) -> Outcome {
    run_on(m, args, engine, mode, None).0
}

/// [`run`] and [`run_with_reports`]: on this thread, or on a new one with
/// a `stack_bytes` stack.
fn run_on(
    m: &Module,
    args: &[String],
    engine: Engine,
    mode: Mode,
    stack_bytes: Option<usize>,
) -> (Outcome, Vec<Report>) {
    let f = m.func(m.func_by_name("main").expect("@main"));
    let bits: Vec<u64> = f
        .param_types()
        .into_iter()
        .zip(args)
        .map(|(t, a)| parse_arg(t, a).expect("argument"))
        .collect();
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: false,
        capture_output: true,
    });
    let call = || match engine {
        Engine::Interp => guardlift_interp::Interpreter::new(m, rt.clone(), &HashMap::new())
            .and_then(|it| it.call("main", &bits))
            .map_err(|e| e.to_string()),
        Engine::Jit => jit_main(m, &rt, &bits),
    };
    let result = match stack_bytes {
        None => call(),
        Some(bytes) => std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(bytes)
                .spawn_scoped(s, call)
                .expect("spawn the run thread")
                .join()
                .expect("the run thread panicked")
        }),
    };
    let reports = rt.take_reports();
    let outcome = Outcome {
        result,
        output: rt.take_output(),
        reports: reports.iter().map(CmpReport::from).collect(),
        host_fault: rt.take_host_fault().is_some(),
    };
    (outcome, reports)
}

/// Compiles `m` for the host and calls its `@main` with raw argument bits.
fn jit_main(m: &Module, rt: &Arc<Runtime>, bits: &[u64]) -> Result<Option<u64>, String> {
    let code = guardlift_jit::Jit::compile(m, rt.clone(), &Default::default())
        .map_err(|e| e.to_string())?;
    // SAFETY: the programs run here are the project's own corpus: their raw
    // and object accesses stay inside the objects and buffers they allocate
    // (the corrupting ones write only inside those objects' slots).
    unsafe { code.call_dynamic("main", bits) }.map_err(|e| e.to_string())
}

/// A scenario program from `tests/programs/scenarios/NAME.glir` (entry
/// arguments from its `; args:` header, which callers may override).
pub fn scenario(name: &str) -> Program {
    read_program(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("programs/scenarios")
            .join(format!("{name}.glir")),
    )
}

/// As [`run`], on a thread with a `stack_bytes` stack (large adstack
/// frames), also returning the full reports (with addresses and values).
pub fn run_with_reports(
    m: &Module,
    args: &[String],
    engine: Engine,
    mode: Mode,
    stack_bytes: usize,
) -> (Outcome, Vec<Report>) {
    run_on(m, args, engine, mode, Some(stack_bytes))
}
