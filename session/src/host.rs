//! Runs on this process: the interpreter or the JIT, on a thread with a
//! large stack, with the `--link` libraries loaded and the watch started;
//! the fatal paths' ending is handed to the runtime before the run.

use crate::end::{Ending, RunEnd, RunMeta};
use crate::error::ExecError;
use crate::spec::{Engine, Prepared, RunSpec};
use crate::RunError;
use guardlift_ir::Verified;
use guardlift_runtime::internals::*;
use guardlift_runtime::watch::WatchStatus;
use guardlift_runtime::{Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::sync::Arc;

/// Stack for the thread that runs programs (adstack frames can be large).
const RUN_STACK_BYTES: usize = 512 << 20;

/// Starts the watch session, saying on stderr what the user must know
/// (spec §6.1: why it is unavailable, the phase drawn for `sample:K`).
fn start_watch(rt: &Runtime, spec: guardlift_runtime::watch::WatchSpec) {
    match rt.enable_watch(spec) {
        WatchStatus::Unavailable { reason } => {
            eprintln!("{}", WatchStatus::unavailable_line(&reason))
        }
        // `sample:K` without `@P`: the phase drawn, to repeat the run.
        status => {
            if let Some(line) = status.phase_line() {
                eprintln!("{line}");
            }
        }
    }
}

pub(crate) fn run(spec: RunSpec, p: Prepared) -> Result<RunEnd, RunError> {
    let m = &spec.module;
    // The libraries stay loaded until the run returns, after the engines
    // that call into them.
    let libs = crate::link::Libraries::open(&spec.link)
        .map_err(|e| RunError::new(e.with_file(&spec.file)))?;
    let linked = libs.resolve(m);
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: p.mode,
        abort_process: true,
        capture_output: spec.render.json,
    });
    // A host fault is where native code would have crashed: in every mode.
    rt.set_host_faults_fatal(true);
    rt.configure(&p.options)
        .map_err(|e| RunError::tool(format!("GUARDLIFT_OPTIONS log_path: {e}")))?;
    if let Some(w) = p.watch {
        start_watch(&rt, w);
    }
    let meta = RunMeta {
        engine: match spec.engine {
            Engine::Jit => "jit",
            Engine::Interp => "interp",
        },
        target: std::env::consts::ARCH,
        instrumented: m.is_instrumented(),
        mode: p.mode,
        ret_ty: p.ret_ty,
    };
    crate::fatal::install(&rt, &meta, &spec.render, &spec.file);
    if spec.engine == Engine::Interp && !linked.is_empty() {
        crate::fatal::install_native_fault_reporter(&rt, &meta, &spec.render, &spec.file)?;
    }
    let ending = {
        let (rt2, args) = (rt.clone(), &p.args);
        let linked = &linked;
        // The run takes the module: the JIT compiles it in place.
        let module = spec.module;
        let run = Run {
            engine: spec.engine,
            entry: &spec.entry,
            file: &spec.file,
        };
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(RUN_STACK_BYTES)
                .spawn_scoped(s, move || execute(module, run, rt2, args, linked))
                .map_err(|e| RunError::tool(format!("cannot start the run thread: {e}")))?
                .join()
                .map_err(|_| RunError::tool("the run thread panicked (a bug in guardlift)"))
        })
    };
    let ending = ending?.map_err(|e| RunError::new(e.with_file(&spec.file)))?;
    let reports = rt.take_reports();
    let host_fault = rt.take_host_fault().map(|f| format!("host fault in {f}"));
    Ok(RunEnd {
        meta,
        // A host fault is where native code would have crashed: no result.
        ending: match (ending, host_fault) {
            (Ending::Returned(_), Some(fault)) => Ending::Fatal(fault),
            (ending, _) => ending,
        },
        reports,
        watch: rt.watch_status(),
        json_log: p.options.json,
        rt,
        render: spec.render.clone(),
        file: spec.file.clone(),
    })
}

/// What [`execute`] reads of the run's spec besides its module.
#[derive(Copy, Clone)]
struct Run<'s> {
    engine: Engine,
    entry: &'s str,
    file: &'s str,
}

/// Runs the entry of `m` on the spec's engine; `linked`: the addresses of
/// the externs the `--link` libraries provide.
fn execute(
    m: Verified,
    run: Run<'_>,
    rt: Arc<Runtime>,
    args: &[u64],
    linked: &HashMap<String, usize>,
) -> Result<Ending, ExecError> {
    match run.engine {
        Engine::Interp => {
            let hosts = crate::link::Libraries::host_fns(&m, linked).map_err(ExecError::Diag)?;
            crate::interp::execute(&m, rt, run.entry, args, &hosts)
        }
        Engine::Jit => jit_execute(m, rt, run.entry, args, run.file, linked),
    }
}

fn jit_execute(
    m: Verified,
    rt: Arc<Runtime>,
    entry: &str,
    args: &[u64],
    file: &str,
    linked: &HashMap<String, usize>,
) -> Result<Ending, ExecError> {
    // The file names the line tables of `perfmap`/`jitdump`/`gdb` (GUARDLIFT_OPTIONS).
    let mut opts = guardlift_jit::CompileOptions::default().with_source_file(file);
    for (name, &addr) in linked {
        // SAFETY: `addr` is the `--link` library's definition of `name`,
        // which stays loaded until the run returns (after the compiled code
        // is dropped); the extern's declaration is the user's word for its
        // C type, as an embedder's is for the symbols it adds.
        opts = unsafe { opts.symbol(name.clone(), addr as *const u8) };
    }
    let code = guardlift_jit::Jit::compile_verified(m, rt, &opts).map_err(ExecError::Jit)?;
    // SAFETY: not provable, and not needed: `guardlift run` exists to run
    // the user's program as native code (spec §8), trusted with this
    // process as a compiled C program would be. A wild access is the
    // program's bug, reported as `host_fault` when it faults (spec §6.2).
    unsafe { code.call_dynamic(entry, args) }
        .map(Ending::Returned)
        .map_err(ExecError::Jit)
}
