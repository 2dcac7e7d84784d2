//! `run`, `emit` and `compile`: instrument, pick an engine, run, and print
//! the result and reports as spec §8 says.

use crate::source::{self, CliError};
use crate::{Engine, InstrumentArgs, Target, What};
use guardlift_interp::{InterpError, Interpreter};
use guardlift_ir::literal::{format_value, json_value, parse_arg};
use guardlift_ir::Module;
use guardlift_runtime::internals::*;
use guardlift_runtime::watch::{WatchSpec, WatchStatus};
use guardlift_runtime::{Report, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

/// Stack for the thread that runs programs (adstack frames can be large).
const RUN_STACK_BYTES: usize = 512 << 20;

#[derive(clap::Args, Clone)]
pub struct RunOpts {
    pub file: String,
    /// Arguments for the entry function, parsed by its parameter types.
    pub args: Vec<String>,
    #[arg(long, default_value = "main")]
    pub entry: String,
    #[arg(long, value_enum, default_value = "jit")]
    pub engine: Engine,
    #[arg(long, value_enum, default_value = "host")]
    pub target: Target,
    #[command(flatten)]
    pub inst: InstrumentArgs,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Hardware watchpoints on dict words: object:N[+M...], sample:K or recent.
    #[arg(long, value_name = "SPEC")]
    pub watch: Option<String>,
    /// Also write the reports as a SARIF 2.1.0 log to this file.
    #[arg(long, value_name = "OUT")]
    pub sarif: Option<String>,
    /// Resolve externs that are not built-ins from this shared library
    /// (repeatable: the first that defines a name provides it).
    #[arg(long, value_name = "LIB.so")]
    pub link: Vec<String>,
}

fn load_instrumented(file: &str, inst: &InstrumentArgs) -> Result<Module, CliError> {
    let m = source::load(file)?;
    let checks = inst.check_set()?;
    Ok(if checks.is_empty() {
        m
    } else {
        guardlift_instrument::instrument_owned(m, checks)
    })
}

fn target_name(t: Target) -> &'static str {
    match t {
        Target::Host => std::env::consts::ARCH,
        Target::X86_64 => "x86_64",
        Target::Aarch64 => "aarch64",
        Target::Riscv64 => "riscv64",
    }
}

/// How a run ended.
enum Outcome {
    Value(Option<u64>),
    /// A host fault or a wild access in the interpreter: what would have crashed.
    Fatal(String),
    /// The interpreter's wild access or depth limit: it ends the run as
    /// native code's fault handler does (`host_fault` / `stack_overflow`).
    Fault(Box<InterpFault>),
}

/// An interpreter fault placed at its IR instruction.
struct InterpFault {
    stack_overflow: bool,
    /// A fatal arithmetic fault (`div_by_zero`, `int_overflow`).
    arith: Option<guardlift_runtime::ReportKind>,
    function: String,
    line: u32,
    col: u32,
    op: &'static str,
    msg: String,
    /// A wild access's address (else the fault is no memory access).
    address: Option<u64>,
    /// What a host function of the model heap found (the fault is at the
    /// instruction that called it).
    host: Option<guardlift_runtime::fault::HostCallFault>,
    /// The IR frames outside the faulting one, innermost first.
    outer: Vec<String>,
}

impl InterpFault {
    /// The instruction on `loc`'s line (one instruction per line; of an
    /// instrumented access, the access, not the `guard.watch` put on its
    /// line before it: the last, as the JIT's code map has it) and its
    /// function; `backtrace` is the interpreter's, the site first.
    fn new(
        m: &Module,
        loc: guardlift_ir::SrcLoc,
        msg: String,
        address: Option<u64>,
        mut backtrace: Vec<String>,
    ) -> Self {
        let found = m.functions.iter().find_map(|f| {
            f.blocks
                .iter()
                .flat_map(|b| &b.insts)
                .rev()
                .find(|i| i.loc == loc)
                .map(|i| (f.name.clone(), i.kind.opcode()))
        });
        let (function, op) = found.unwrap_or_else(|| ("?".into(), "?"));
        if !backtrace.is_empty() {
            backtrace.remove(0);
        }
        InterpFault {
            stack_overflow: false,
            arith: None,
            function,
            line: loc.line,
            col: loc.col,
            op,
            msg,
            address,
            host: None,
            outer: backtrace,
        }
    }

    /// The report native code's fault handler prints for this fault: a
    /// wild access or the depth limit is the SIGSEGV native code dies of,
    /// without a PC (docs/INSTRUMENTATION.md, "Faults").
    fn report(&self) -> guardlift_runtime::fault::FaultReport<'_> {
        use guardlift_runtime::fault::{FaultCause, FaultReport, OuterFrames};
        let cause = match self.address {
            _ if let Some(k) = self.arith => FaultCause::Arith(k),
            _ if let Some(h) = &self.host => FaultCause::Host(h),
            _ if self.stack_overflow => FaultCause::Signal {
                signal: "SIGSEGV",
                address: None,
                pc: None,
                in_host: false,
            },
            Some(a) => FaultCause::Signal {
                signal: "SIGSEGV",
                address: Some(a as usize),
                pc: None,
                // A wild `call_indirect` faults at its target, outside IR
                // code, as native code does.
                in_host: self.op == "call_indirect",
            },
            None => FaultCause::Interp(&self.msg),
        };
        FaultReport {
            stack_overflow: self.stack_overflow,
            function: &self.function,
            line: self.line,
            col: self.col,
            op: self.op,
            cause,
            backtrace: guardlift_runtime::backtrace::enabled()
                .then_some(OuterFrames::Frames(&self.outer)),
        }
    }
}

fn reports_json(reports: &[Report]) -> serde_json::Value {
    serde_json::Value::Array(report_jsons(reports))
}

fn report_jsons(reports: &[Report]) -> Vec<serde_json::Value> {
    reports.iter().map(|r| r.to_json()).collect()
}

/// On a path that ends the process: writes the SARIF log if asked, or says
/// on stderr why it could not.
fn write_sarif_or_note(out: Option<&str>, file: &str, reports: &[serde_json::Value]) {
    if let Some(Err(e)) = out.map(|out| crate::sarif::write(out, file, reports)) {
        eprintln!("{e}");
    }
}

pub fn run(o: RunOpts) -> Result<u8, CliError> {
    let m = load_instrumented(&o.file, &o.inst)?;
    let instrumented = m.is_instrumented();
    let fid = m.func_by_name(&o.entry).ok_or_else(|| {
        let name = guardlift_ir::error::shorten_long_words(&o.entry);
        // No line to point at: the module's start, so that the error has
        // the `FILE:LINE:COL: error:` form of every other one (spec §8).
        CliError::at(format!("{}:1:1", o.file), format!("no function @{name}"))
    })?;
    let f = m.func(fid);
    let loc = f.loc;
    let ret_ty = f.ret;
    if f.params.len() != o.args.len() {
        return Err(CliError::at(
            format!("{}:{loc}", o.file),
            format!(
                "@{} takes {} argument(s), got {}",
                o.entry,
                f.params.len(),
                o.args.len()
            ),
        ));
    }
    let mut args = Vec::with_capacity(o.args.len());
    for (ty, text) in f.param_types().into_iter().zip(&o.args) {
        args.push(parse_arg(ty, text).map_err(|e| {
            CliError::tool(format!(
                "argument: {}",
                guardlift_ir::error::shorten_long_words(&e)
            ))
        })?);
    }
    let mut options = guardlift_runtime::Options::from_env().map_err(CliError::tool)?;
    // `--watch` wins over GUARDLIFT_OPTIONS' watch=; the CLI starts it below.
    let watch = match &o.watch {
        Some(text) => Some(WatchSpec::parse(text).map_err(CliError::tool)?),
        None => options.watch.take(),
    };
    if o.target != Target::Host {
        // An explicit architecture always runs ahead of time (also x86_64 on x86_64).
        let watch = watch.map(|_| target_watch_unavailable(o.target));
        return target_run(&o, &m, &args, ret_ty, watch);
    }
    // The libraries stay loaded until the run returns, after the engines
    // that call into them.
    let libs =
        crate::link::Libraries::open(&o.link).map_err(|e| CliError::new(e.with_file(&o.file)))?;
    let linked = libs.resolve(&m);
    let mode = o.inst.mode(&options);
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: true,
        capture_output: o.json,
    });
    // A host fault is where native code would have crashed: in every mode.
    rt.set_host_faults_fatal(true);
    rt.configure(&options)
        .map_err(|e| CliError::tool(format!("GUARDLIFT_OPTIONS log_path: {e}")))?;
    if let Some(spec) = watch {
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
    let engine = match o.engine {
        Engine::Jit => "jit",
        Engine::Interp => "interp",
    };
    let target = target_name(o.target);
    if o.json || o.sarif.is_some() {
        // In abort mode the process ends inside the run: still print one JSON object.
        let (engine, target) = (engine.to_string(), target.to_string());
        let (json, sarif, file) = (o.json, o.sarif.clone(), o.file.clone());
        if json {
            // A fatal signal ends the process in the fault handler: it prints the object.
            guardlift_runtime::fault::set_stdout_json_tail(format!(
                "\"engine\":{},\"target\":{},\"instrumented\":{instrumented}",
                serde_json::Value::from(engine.as_str()),
                serde_json::Value::from(target.as_str())
            ));
        }
        rt.set_abort_hook(Box::new(move |rt| {
            let reports = rt.peek_reports();
            write_sarif_or_note(sarif.as_deref(), &file, &report_jsons(&reports));
            if json {
                let mut j =
                    aborted_json(&reports, &engine, &target, instrumented, rt.take_output());
                if let Some(w) = rt.watch_status() {
                    j["watch"] = w.to_json();
                }
                crate::out::write_or_note(format_args!("{j}\n"));
            }
            print_watch_summary(&rt.watch_status());
        }));
    }
    if o.engine == Engine::Interp && !linked.is_empty() {
        install_native_fault_reporter(&rt, &o, instrumented)?;
    }
    let outcome = {
        let (m, rt2, entry, engine_kind) = (&m, rt.clone(), o.entry.clone(), o.engine);
        let (file, linked) = (o.file.as_str(), &linked);
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(RUN_STACK_BYTES)
                .spawn_scoped(s, move || {
                    execute(m, rt2, &entry, &args, engine_kind, file, linked)
                })
                .map_err(|e| CliError::tool(format!("cannot start the run thread: {e}")))?
                .join()
                .map_err(|_| CliError::tool("the run thread panicked (a bug in guardlift)"))?
        })
    };
    let outcome = outcome?.map_err(|e| CliError::new(e.with_file(&o.file)))?;
    let reports = rt.take_reports();
    let fault = rt.take_host_fault().map(|f| format!("host fault in {f}"));
    let ctx = Finish {
        o: &o,
        engine,
        target,
        instrumented,
        mode,
        ret_ty,
        watch: rt.watch_status(),
    };
    finish(&ctx, &rt, reports, fault, outcome)
}

/// `--engine interp` with `--link`: a fatal signal in a library function
/// ends the run as the JIT's fault handler ends it, a `host_fault` report
/// at the IR call after the reports recorded before (`native_fault`).
fn install_native_fault_reporter(
    rt: &Arc<Runtime>,
    o: &RunOpts,
    instrumented: bool,
) -> Result<(), CliError> {
    use guardlift_runtime::fault::{FaultCause, FaultReport, OuterFrames};
    let (rt, o) = (rt.clone(), o.clone());
    let reporter: crate::native_fault::Reporter = Box::new(move |f, site| {
        let site = site.unwrap_or_else(|| guardlift_interp::HostCallSite {
            function: "?".into(),
            loc: guardlift_ir::SrcLoc { line: 0, col: 0 },
            op: "?",
            outer: Vec::new(),
        });
        let report = FaultReport {
            stack_overflow: false,
            function: &site.function,
            line: site.loc.line,
            col: site.loc.col,
            op: site.op,
            cause: FaultCause::Signal {
                signal: guardlift_runtime::fault::signal_name(f.sig),
                address: Some(f.address),
                pc: Some(f.pc),
                in_host: true,
            },
            backtrace: guardlift_runtime::backtrace::enabled()
                .then_some(OuterFrames::Frames(&site.outer)),
        };
        let reports = rt.take_reports();
        let ends = ("interp", target_name(o.target), instrumented);
        write_fault_report_and_abort(&rt, &o, &reports, Some(report), ends, &rt.watch_status())
    });
    crate::native_fault::install(reporter)
        .map_err(|e| CliError::tool(format!("cannot install the fault handler: {e}")))
}

/// The end-of-run summary of a watch session on stderr (spec §6.1: how
/// many objects were watched, how many were freed unwritten).
fn print_watch_summary(watch: &Option<WatchStatus>) {
    if let Some(line) = watch.as_ref().and_then(WatchStatus::summary_line) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// `--watch` with `--target`: the program runs in another process (under
/// qemu-user for a foreign architecture), out of reach of perf breakpoints.
/// Says so on stderr; the run goes on.
fn target_watch_unavailable(t: Target) -> WatchStatus {
    let reason = match t {
        t if target_name(t) == std::env::consts::ARCH => format!(
            "--target {} runs a separately linked program without guardlift's runtime",
            target_name(t)
        ),
        _ => format!(
            "--target {} runs the program under qemu-user, which has no hardware watchpoints",
            target_name(t)
        ),
    };
    eprintln!("{}", WatchStatus::unavailable_line(&reason));
    WatchStatus::Unavailable { reason }
}

/// The JSON object printed when abort mode ends the run (`"aborted": true`).
fn aborted_json(
    reports: &[Report],
    engine: &str,
    target: &str,
    instrumented: bool,
    stdout: String,
) -> serde_json::Value {
    serde_json::json!({
        "result": null,
        "reports": reports_json(reports),
        "engine": engine,
        "target": target,
        "instrumented": instrumented,
        "aborted": true,
        "stdout": stdout,
    })
}

/// What the end of a run prints, whatever ran it.
struct Finish<'a> {
    /// The run's options (the file, `--json`, `--sarif`).
    o: &'a RunOpts,
    engine: &'a str,
    target: &'a str,
    instrumented: bool,
    mode: guardlift_runtime::Mode,
    ret_ty: Option<guardlift_ir::Type>,
    /// The `"watch"` object, when `--watch` was asked for.
    watch: Option<WatchStatus>,
}

/// Prints the result (or JSON object), the reports and any fatal error as
/// spec §8 says, and returns the exit status (exits with 134 itself).
fn finish(
    c: &Finish,
    rt: &Runtime,
    reports: Vec<Report>,
    fault: Option<String>,
    outcome: Outcome,
) -> Result<u8, CliError> {
    let (file, engine, target, instrumented, mode, ret_ty) = (
        &*c.o.file,
        c.engine,
        c.target,
        c.instrumented,
        c.mode,
        c.ret_ty,
    );
    let (result, fatal) = match outcome {
        // A host fault is where native code would have crashed: no result.
        Outcome::Value(v) => (if fault.is_some() { None } else { v }, fault),
        Outcome::Fatal(msg) => (None, Some(msg)),
        Outcome::Fault(f) => {
            let ends = (engine, target, instrumented);
            write_fault_report_and_abort(rt, c.o, &reports, Some(f.report()), ends, &c.watch)
        }
    };
    let fatal = fatal.map(|m| format!("{file}: fatal: {m}"));
    let code = if fatal.is_some() {
        134
    } else if !reports.is_empty() {
        1
    } else {
        0
    };
    let all = reports_json(&reports);
    let sarif = match (c.o.sarif.as_deref(), &all) {
        (Some(out), serde_json::Value::Array(a)) => crate::sarif::write(out, file, a).err(),
        _ => None,
    };
    // A failed write of the output (spec §6.3) ends the run with an error
    // once the reports are written.
    let written = if c.o.json {
        let result_json = match (result, ret_ty) {
            (Some(bits), Some(ty)) => json_value(ty, bits),
            _ => "null".into(),
        };
        let result_json: serde_json::Value =
            serde_json::from_str(&result_json).unwrap_or(serde_json::Value::Null);
        let mut j = serde_json::json!({
            "result": result_json,
            "reports": all,
            "engine": engine,
            "target": target,
            "instrumented": instrumented,
            "mode": mode.name(),
        });
        let out = rt.take_output();
        if !out.is_empty() {
            j["stdout"] = serde_json::Value::String(out);
        }
        if let Some(f) = &fatal {
            j["fatal"] = serde_json::Value::String(f.clone());
        }
        if let Some(w) = &c.watch {
            j["watch"] = w.to_json();
        }
        crate::out::write_fmt(format_args!("{j}\n"))
    } else if let (Some(bits), Some(ty)) = (result, ret_ty) {
        crate::out::write_fmt(format_args!("{}\n", format_value(ty, bits)))
    } else {
        Ok(())
    };
    rt.write_reports(&reports);
    print_watch_summary(&c.watch);
    let mut err = std::io::stderr().lock();
    if let Some(f) = &fatal {
        let _ = writeln!(err, "{f}");
    }
    if let Some(e) = &sarif {
        let _ = writeln!(err, "{e}");
    }
    // Everything is reported: a log file nothing was written to goes.
    rt.close_log();
    if code == 134 {
        if let Err(CliError(e)) = &written {
            let _ = writeln!(err, "{e}");
        }
        let _ = std::io::stdout().flush();
        let _ = err.flush();
        drop(err);
        std::process::exit(134);
    }
    drop(err);
    written?;
    match sarif {
        Some(e) => Err(CliError::new(e)),
        None => Ok(code),
    }
}

/// `run --target x86_64|aarch64|riscv64`: compile the module ahead of time for the
/// target, link it with the target-side support, run it (under qemu-user
/// when the host cannot), and print what the host run would have printed
/// from what the target reported (see the `guardlift-aot` crate).
fn target_run(
    o: &RunOpts,
    m: &Module,
    args: &[u64],
    ret_ty: Option<guardlift_ir::Type>,
    watch: Option<WatchStatus>,
) -> Result<u8, CliError> {
    let t = jit_target(o.target);
    if o.engine == Engine::Interp {
        return Err(CliError::tool(format!(
            "--target {} runs compiled code; the interpreter (--engine interp) runs on the host only",
            t.name()
        )));
    }
    let mut options = guardlift_runtime::Options::from_env().map_err(CliError::tool)?;
    // Already answered by `target_watch_unavailable`.
    options.watch = None;
    let mode = o.inst.mode(&options);
    let run = guardlift_aot::library::read_all(&o.link, t)
        .and_then(|libs| guardlift_aot::build_with_libraries(m, &o.entry, t, mode, &libs))
        .and_then(|mut b| {
            b.set_quarantine_mb(
                options
                    .quarantine_mb
                    .unwrap_or(guardlift_runtime::heap::DEFAULT_QUARANTINE_MB),
            );
            b.run(args)
        })
        .map_err(|e| CliError::new(e.with_file(&o.file)))?;
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: false,
        capture_output: o.json,
    });
    rt.configure(&options)
        .map_err(|e| CliError::tool(format!("GUARDLIFT_OPTIONS log_path: {e}")))?;
    for p in &run.prints {
        match *p {
            guardlift_aot::Print::I64(v) => rt.print_i64(v),
            guardlift_aot::Print::F64(v) => rt.print_f64(v),
        }
    }
    let (engine, target, instrumented) = ("jit", t.name(), m.is_instrumented());
    let outcome = match run.end {
        guardlift_aot::End::Exited => Outcome::Value(run.result),
        guardlift_aot::End::Aborted => {
            // As the runtime's die(): the abort hook's JSON, the reports, abort.
            write_sarif_or_note(o.sarif.as_deref(), &o.file, &report_jsons(&run.reports));
            if o.json {
                let mut j =
                    aborted_json(&run.reports, engine, target, instrumented, rt.take_output());
                if let Some(w) = &watch {
                    j["watch"] = w.to_json();
                }
                crate::out::write_or_note(format_args!("{j}\n"));
            }
            rt.write_reports(&run.reports);
            let _ = std::io::stdout().flush();
            std::process::abort()
        }
        guardlift_aot::End::Trapped(trap) => match &trap.report {
            Some(r) => {
                let ends = (engine, target, instrumented);
                write_trap_report_and_abort(&rt, &options, &trap, r, o, ends)
            }
            None => Outcome::Fatal(format!(
                "{target}: {} at pc {:#x} (a trap instruction that is not a guard's)",
                guardlift_aot::signal_name(trap.signal),
                trap.pc
            )),
        },
        // In IR code or a host function it called: the JIT fault handler's report.
        guardlift_aot::End::Crashed { .. } if run.fault.is_some() => {
            let fault = run.fault.as_ref().map(|f| f.report());
            let ends = (engine, target, instrumented);
            write_fault_report_and_abort(&rt, o, &run.reports, fault, ends, &watch)
        }
        // Elsewhere (the support itself): a fatal error, as the interpreter reports it.
        guardlift_aot::End::Crashed { signal } => Outcome::Fatal(format!(
            "the {target} program died of signal {signal} ({})",
            guardlift_aot::signal_name(signal)
        )),
    };
    let fault = run.host_fault.map(|f| format!("host fault in {f}"));
    let ctx = Finish {
        o,
        engine,
        target,
        instrumented,
        mode,
        ret_ty,
        watch,
    };
    finish(&ctx, &rt, run.reports, fault, outcome)
}

/// A fatal signal in a target's IR code or a host function it called, or
/// the interpreter's wild access or depth limit: what the host JIT's fault
/// handler writes (the reports recorded before it and the `host_fault` /
/// `stack_overflow` report, human or JSON lines, to the log or stderr; with
/// `--json` one object on stdout), the SARIF log if asked, then abort (134).
fn write_fault_report_and_abort(
    rt: &Runtime,
    o: &RunOpts,
    reports: &[Report],
    fault: Option<guardlift_runtime::fault::FaultReport<'_>>,
    (engine, target, instrumented): (&str, &str, bool),
    watch: &Option<WatchStatus>,
) -> ! {
    let fault_json: Vec<serde_json::Value> = fault
        .iter()
        .filter_map(|f| serde_json::from_str(&f.json().to_string()).ok())
        .collect();
    let mut all = report_jsons(reports);
    all.extend(fault_json);
    write_sarif_or_note(o.sarif.as_deref(), &o.file, &all);
    if o.json {
        let mut j = aborted_json(reports, engine, target, instrumented, rt.take_output());
        j["reports"] = serde_json::Value::Array(all);
        if let Some(w) = watch {
            j["watch"] = w.to_json();
        }
        crate::out::write_or_note(format_args!("{j}\n"));
    }
    rt.write_reports(reports);
    if let Some(f) = &fault {
        rt.write_fault_report(f);
    }
    let _ = std::io::stdout().flush();
    std::process::abort()
}

/// Trap mode on a target: what the runtime's trap handler writes (the
/// report with its trap note, human or a JSON line, to the log or stderr;
/// with `--json` the run's JSON object on stdout), then abort.
fn write_trap_report_and_abort(
    rt: &Runtime,
    options: &guardlift_runtime::Options,
    trap: &guardlift_aot::Trap,
    r: &guardlift_aot::TrapReport,
    o: &RunOpts,
    (engine, target, instrumented): (&str, &str, bool),
) -> ! {
    let note = guardlift_runtime::TrapNote {
        signal: if guardlift_aot::signal_name(trap.signal) == "SIGTRAP" {
            "SIGTRAP"
        } else {
            "SIGILL"
        },
        pc: trap.pc,
    };
    let j = {
        let mut j = match r.observed {
            Some(observed) => Report {
                kind: r.kind,
                site: r.site,
                info: r.info.clone(),
                observed,
                last_write: None,
                object: None,
                objects: Vec::new(),
                count: 1,
                backtrace: Vec::new(),
            }
            .to_json(),
            None => serde_json::json!({
                "kind": r.kind.name(), "site": r.site, "function": r.info.function,
                "line": r.info.line, "col": r.info.col, "op": r.info.op, "count": 1,
            }),
        };
        j["trap_signal"] = note.signal.into();
        j["trap_pc"] = format!("{:#x}", note.pc).into();
        j
    };
    write_sarif_or_note(o.sarif.as_deref(), &o.file, std::slice::from_ref(&j));
    if o.json {
        let mut all = aborted_json(&[], engine, target, instrumented, rt.take_output());
        all["reports"] = serde_json::Value::Array(vec![j.clone()]);
        crate::out::write_or_note(format_args!("{all}\n"));
    }
    let text = if options.json {
        format!("{j}\n")
    } else {
        guardlift_runtime::HumanReport {
            kind: r.kind,
            site: r.site,
            function: &r.info.function,
            line: r.info.line,
            col: r.info.col,
            op: &r.info.op,
            observed: r.observed,
            last_write: None,
            object: None,
            objects: &[],
            count: 1,
            trap: Some(note),
            backtrace: &[],
        }
        .to_string()
    };
    let _ = std::io::stdout().flush();
    rt.write_log_text(&text);
    std::process::abort()
}

/// A failure before or outside the program's own execution, with a source position.
enum ExecError {
    Diag(guardlift_ir::Diagnostic),
    Plain(String),
    Jit(guardlift_jit::JitError),
}

impl ExecError {
    fn with_file(&self, file: &str) -> String {
        match self {
            ExecError::Diag(d) => d.with_file(file),
            ExecError::Plain(s) => format!("{file}: error: {s}"),
            ExecError::Jit(e) => e.with_file(file),
        }
    }
}

/// Runs `entry` on `engine`; `linked`: the addresses of the externs the
/// `--link` libraries provide.
fn execute(
    m: &Module,
    rt: Arc<Runtime>,
    entry: &str,
    args: &[u64],
    engine: Engine,
    file: &str,
    linked: &HashMap<String, usize>,
) -> Result<Result<Outcome, ExecError>, CliError> {
    Ok(match engine {
        Engine::Interp => {
            let hosts = match crate::link::Libraries::host_fns(m, linked) {
                Ok(h) => h,
                Err(d) => return Ok(Err(ExecError::Diag(d))),
            };
            let it = match Interpreter::new(m, rt.clone(), &hosts) {
                Ok(it) => it,
                Err(InterpError::Link(d)) => return Ok(Err(ExecError::Diag(d))),
                Err(e) => return Ok(Err(ExecError::Plain(e.to_string()))),
            };
            match it.call(entry, args) {
                Ok(v) => Ok(Outcome::Value(v)),
                Err(InterpError::Fault {
                    loc,
                    msg,
                    address,
                    backtrace,
                }) => Ok(Outcome::Fault(Box::new(InterpFault::new(
                    m, loc, msg, address, backtrace,
                )))),
                Err(InterpError::HostFault { loc, backtrace }) => {
                    let host = rt.take_host_call_fault();
                    let msg = host
                        .as_ref()
                        .map(|h| h.fault.to_string())
                        .unwrap_or_default();
                    Ok(Outcome::Fault(Box::new(InterpFault {
                        host,
                        ..InterpFault::new(m, loc, msg, None, backtrace)
                    })))
                }
                Err(InterpError::StackOverflow {
                    loc,
                    limit,
                    backtrace,
                }) => {
                    let msg = format!("call depth limit {limit} exceeded");
                    Ok(Outcome::Fault(Box::new(InterpFault {
                        stack_overflow: true,
                        ..InterpFault::new(m, loc, msg, None, backtrace)
                    })))
                }
                Err(InterpError::Arith {
                    loc,
                    kind,
                    backtrace,
                }) => {
                    let msg = guardlift_runtime::fault::arith_message(kind).to_string();
                    Ok(Outcome::Fault(Box::new(InterpFault {
                        arith: Some(kind),
                        ..InterpFault::new(m, loc, msg, None, backtrace)
                    })))
                }
                Err(InterpError::Aborted) => Ok(Outcome::Fatal("aborted".into())),
                Err(InterpError::Link(d)) => Err(ExecError::Diag(d)),
                Err(e) => Err(ExecError::Plain(e.to_string())),
            }
        }
        Engine::Jit => jit_execute(m, rt, entry, args, file, linked),
    })
}

fn jit_execute(
    m: &Module,
    rt: Arc<Runtime>,
    entry: &str,
    args: &[u64],
    file: &str,
    linked: &HashMap<String, usize>,
) -> Result<Outcome, ExecError> {
    // The file names the line tables of `perfmap`/`jitdump`/`gdb` (GUARDLIFT_OPTIONS).
    let mut opts = guardlift_jit::CompileOptions::default().with_source_file(file);
    for (name, &addr) in linked {
        // SAFETY: `addr` is the `--link` library's definition of `name`,
        // which stays loaded until the run returns (after the compiled code
        // is dropped); the extern's declaration is the user's word for its
        // C type, as an embedder's is for the symbols it adds.
        opts = unsafe { opts.symbol(name.clone(), addr as *const u8) };
    }
    let code = guardlift_jit::Jit::compile(m, rt, &opts).map_err(ExecError::Jit)?;
    // SAFETY: not provable, and not needed: `guardlift run` exists to run
    // the user's program as native code (spec §8), trusted with this
    // process as a compiled C program would be. A wild access is the
    // program's bug, reported as `host_fault` when it faults (spec §6.2).
    unsafe { code.call_dynamic(entry, args) }
        .map(Outcome::Value)
        .map_err(ExecError::Jit)
}

fn jit_target(t: Target) -> guardlift_jit::Target {
    match t {
        Target::Host => guardlift_jit::Target::Host,
        Target::X86_64 => guardlift_jit::Target::X86_64,
        Target::Aarch64 => guardlift_jit::Target::Aarch64,
        Target::Riscv64 => guardlift_jit::Target::Riscv64,
    }
}

fn emit_options(inst: &InstrumentArgs) -> Result<guardlift_jit::EmitOptions, CliError> {
    let options = guardlift_runtime::Options::from_env().map_err(CliError::tool)?;
    Ok(guardlift_jit::EmitOptions {
        mode: inst.mode(&options),
        ..Default::default()
    })
}

pub fn emit(file: &str, what: What, target: Target, inst: &InstrumentArgs) -> Result<u8, CliError> {
    let m = load_instrumented(file, inst)?;
    let text = match what {
        What::Ir => guardlift_ir::print_module(&m),
        What::Clif => guardlift_jit::emit_clif(&m, jit_target(target), &emit_options(inst)?)
            .map_err(|e| CliError::new(e.with_file(file)))?,
        What::Asm => guardlift_jit::emit_asm(&m, jit_target(target), &emit_options(inst)?)
            .map_err(|e| CliError::new(e.with_file(file)))?,
    };
    crate::out::write_fmt(format_args!("{text}"))?;
    Ok(0)
}

pub fn compile(
    file: &str,
    target: Target,
    out: &str,
    inst: &InstrumentArgs,
) -> Result<u8, CliError> {
    let m = load_instrumented(file, inst)?;
    let bytes = guardlift_jit::emit_object(&m, jit_target(target), &emit_options(inst)?)
        .map_err(|e| CliError::new(e.with_file(file)))?;
    std::fs::write(out, bytes).map_err(|e| CliError::at(out, format!("cannot write: {e}")))?;
    Ok(0)
}
