//! Runs on an object target (`--target x86_64|aarch64`): the module
//! is compiled ahead of time for the target, linked with the target
//! runtime library, run in its own process (under qemu-user when this machine
//! cannot run it), and what the target reported becomes the [`RunEnd`] a
//! host run would have ended with (see the `guardlift-aot` crate).

use crate::end::{Ending, FaultEnd, FaultSource, RunEnd, RunMeta, TrapEnd};
use crate::spec::{Engine, Prepared, RunSpec};
use crate::RunError;
use guardlift_runtime::internals::*;
use guardlift_runtime::watch::WatchStatus;
use guardlift_runtime::{Runtime, RuntimeConfig};

/// `--watch` on a target: the program runs in another process (under
/// qemu-user for a foreign architecture), out of reach of perf breakpoints.
/// Says so on stderr; the run goes on.
fn watch_unavailable(t: guardlift_jit::Target) -> WatchStatus {
    let reason = match t {
        t if t.name() == std::env::consts::ARCH => format!(
            "--target {} runs a separately linked program without guardlift's runtime",
            t.name()
        ),
        _ => format!(
            "--target {} runs the program under qemu-user, which has no hardware watchpoints",
            t.name()
        ),
    };
    eprintln!("{}", WatchStatus::unavailable_line(&reason));
    WatchStatus::Unavailable { reason }
}

pub(crate) fn run(spec: &RunSpec, p: Prepared) -> Result<RunEnd, RunError> {
    let (m, t) = (&spec.module, spec.target);
    let watch = p.watch.map(|_| watch_unavailable(t));
    if spec.engine == Engine::Interp {
        return Err(RunError::tool(format!(
            "--target {} runs compiled code; the interpreter (--engine interp) runs on the host only",
            t.name()
        )));
    }
    let run = guardlift_aot::library::read_all(&spec.link, t)
        .and_then(|libs| guardlift_aot::build_with_libraries(m, &spec.entry, t, p.mode, &libs))
        .and_then(|mut b| {
            b.set_quarantine_mb(
                p.options
                    .quarantine_mb
                    .unwrap_or(guardlift_runtime::heap::DEFAULT_QUARANTINE_MB),
            );
            b.run(&p.args)
        })
        .map_err(|e| RunError::new(e.with_file(&spec.file)))?;
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: p.mode,
        abort_process: false,
        capture_output: spec.render.json,
    });
    rt.configure(&p.options)
        .map_err(|e| RunError::tool(format!("GUARDLIFT_OPTIONS log_path: {e}")))?;
    for print in &run.prints {
        match *print {
            guardlift_aot::Print::I64(v) => rt.print_i64(v),
            guardlift_aot::Print::F64(v) => rt.print_f64(v),
        }
    }
    let target = t.name();
    let ending = match run.end {
        guardlift_aot::End::Exited => match run.host_fault {
            // A host fault is where native code would have crashed: no result.
            Some(f) => Ending::Fatal(format!("host fault in {f}")),
            None => Ending::Returned(run.result),
        },
        guardlift_aot::End::Aborted => Ending::Aborted,
        guardlift_aot::End::Trapped(trap) => match trap.report.clone() {
            Some(report) => Ending::Trapped(TrapEnd { trap, report }),
            None => Ending::Fatal(format!(
                "{target}: {} at pc {:#x} (a trap instruction that is not a guard's)",
                guardlift_aot::signal_name(trap.signal),
                trap.pc
            )),
        },
        // In IR code or a host function it called: the JIT fault handler's report.
        guardlift_aot::End::Crashed { .. } if run.fault.is_some() => {
            Ending::Fault(FaultEnd(FaultSource::Target(run.fault.map(Box::new))))
        }
        // Elsewhere (the runtime library itself): a fatal error, as the interpreter reports it.
        guardlift_aot::End::Crashed { signal } => Ending::Fatal(format!(
            "the {target} program died of signal {signal} ({})",
            guardlift_aot::signal_name(signal)
        )),
    };
    Ok(RunEnd {
        meta: RunMeta {
            engine: "jit",
            target,
            instrumented: m.is_instrumented(),
            mode: p.mode,
            ret_ty: p.ret_ty,
        },
        ending,
        reports: run.reports,
        watch,
        json_log: p.options.json,
        rt,
        render: spec.render.clone(),
        file: spec.file.clone(),
    })
}
