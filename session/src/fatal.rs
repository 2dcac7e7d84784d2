//! The endings written where the process ends: abort mode's first report
//! (the runtime's abort hook), a fatal signal (the runtime's fault handler,
//! with the members rendered here before the run), a fatal fault or trap
//! of the interpreter or a target (in ordinary context, here). Each writes
//! the SARIF log if asked, the run's one JSON object with `"aborted":
//! true` if asked, the reports to the log, and aborts (134).

use crate::end::RunMeta;
use crate::spec::Render;
use crate::RunError;
use guardlift_runtime::fault::FatalEnding;
use guardlift_runtime::internals::*;
use guardlift_runtime::runtime::AbortHook;
use guardlift_runtime::watch::WatchStatus;
use guardlift_runtime::{Report, Runtime};
use std::io::Write;
use std::sync::Arc;

pub(crate) fn reports_json(reports: &[Report]) -> serde_json::Value {
    serde_json::Value::Array(report_jsons(reports))
}

pub(crate) fn report_jsons(reports: &[Report]) -> Vec<serde_json::Value> {
    reports.iter().map(|r| r.to_json()).collect()
}

/// On a path that ends the process: writes the SARIF log if asked, or says
/// on stderr why it could not.
pub(crate) fn write_sarif_or_note(render: &Render, file: &str, reports: &[serde_json::Value]) {
    if let Some(Err(e)) = render
        .sarif
        .as_deref()
        .map(|out| crate::sarif::write(out, file, reports))
    {
        eprintln!("{e}");
    }
}

/// The end-of-run summary of a watch session on stderr (spec §6.1: how
/// many objects were watched, how many were freed unwritten).
pub(crate) fn print_watch_summary(watch: &Option<WatchStatus>) {
    if let Some(line) = watch.as_ref().and_then(WatchStatus::summary_line) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// The JSON object printed when abort mode ends the run (`"aborted": true`).
pub(crate) fn aborted_json(
    reports: Vec<serde_json::Value>,
    meta: &RunMeta,
    watch: &Option<WatchStatus>,
    stdout: String,
) -> serde_json::Value {
    let mut j = serde_json::json!({
        "result": null,
        "reports": reports,
        "engine": meta.engine,
        "target": meta.target,
        "instrumented": meta.instrumented,
        "aborted": true,
        "stdout": stdout,
    });
    if let Some(w) = watch {
        j["watch"] = w.to_json();
    }
    j
}

/// Before a host run: hands the runtime the ending of the paths that end
/// the process inside the run. With `--json`, the fault handler's JSON
/// members (pre-rendered: it must not allocate); with `--json` or
/// `--sarif`, abort mode's hook, which renders the same object; with a
/// watch session, the hook also ends the run as a run that returns does:
/// the reports, then the session's end-of-run summary (spec §6.1; issue
/// 29: without it, an aborted human-form run said nothing of what was
/// watched).
pub(crate) fn install(rt: &Arc<Runtime>, meta: &RunMeta, render: &Render, file: &str) {
    if !render.json && render.sarif.is_none() && rt.watch_status().is_none() {
        return;
    }
    // A fatal signal ends the process in the fault handler: it prints the
    // object with these members (it cannot render them there).
    let stdout_json_members = render.json.then(|| meta.json_members());
    let (meta, render, file) = (meta.clone(), render.clone(), file.to_string());
    let on_abort: AbortHook = Box::new(move |rt| {
        let reports = rt.peek_reports();
        write_sarif_or_note(&render, &file, &report_jsons(&reports));
        if render.json {
            let j = aborted_json(
                report_jsons(&reports),
                &meta,
                &rt.watch_status(),
                rt.take_output(),
            );
            crate::out::write_or_note(format_args!("{j}\n"));
        }
        rt.flush_reports();
        print_watch_summary(&rt.watch_status());
    });
    rt.set_fatal_ending(FatalEnding {
        stdout_json_members,
        on_abort: Some(on_abort),
    });
}

/// `--engine interp` with `--link`: a fatal signal in a library function
/// ends the run as the JIT's fault handler ends it, a `host_fault` report
/// at the IR call after the reports recorded before (`native_fault`).
pub(crate) fn install_native_fault_reporter(
    rt: &Arc<Runtime>,
    meta: &RunMeta,
    render: &Render,
    file: &str,
) -> Result<(), RunError> {
    use guardlift_runtime::fault::{FaultCause, FaultReport, OuterFrames};
    let (rt, meta, render, file) = (rt.clone(), meta.clone(), render.clone(), file.to_string());
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
        let watch = rt.watch_status();
        write_fault_report_and_abort(&rt, &render, &file, &meta, &reports, Some(report), &watch)
    });
    crate::native_fault::install(reporter)
        .map_err(|e| RunError::tool(format!("cannot install the fault handler: {e}")))
}

/// A fatal signal in a target's IR code or a host function it called, or
/// the interpreter's wild access or depth limit: what the host JIT's fault
/// handler writes (the reports recorded before it and the `host_fault` /
/// `stack_overflow` report, human or JSON lines, to the log or stderr; with
/// `--json` one object on stdout), the SARIF log if asked, then abort (134).
pub(crate) fn write_fault_report_and_abort(
    rt: &Runtime,
    render: &Render,
    file: &str,
    meta: &RunMeta,
    reports: &[Report],
    fault: Option<guardlift_runtime::fault::FaultReport<'_>>,
    watch: &Option<WatchStatus>,
) -> ! {
    let fault_json: Vec<serde_json::Value> = fault
        .iter()
        .filter_map(|f| serde_json::from_str(&f.json().to_string()).ok())
        .collect();
    let mut all = report_jsons(reports);
    all.extend(fault_json);
    write_sarif_or_note(render, file, &all);
    if render.json {
        let j = aborted_json(all, meta, watch, rt.take_output());
        crate::out::write_or_note(format_args!("{j}\n"));
    }
    rt.write_reports(reports);
    if let Some(f) = &fault {
        rt.write_fault_report(f);
    }
    let _ = std::io::stdout().flush();
    std::process::abort()
}

/// A target program ended by abort mode: as the runtime's die(), the
/// abort hook's JSON, the reports, abort.
pub(crate) fn write_target_aborted(end: &crate::RunEnd) -> ! {
    let all = report_jsons(&end.reports);
    write_sarif_or_note(&end.render, &end.file, &all);
    if end.render.json {
        let j = aborted_json(all, &end.meta, &end.watch, end.rt.take_output());
        crate::out::write_or_note(format_args!("{j}\n"));
    }
    end.rt.write_reports(&end.reports);
    let _ = std::io::stdout().flush();
    std::process::abort()
}

/// Trap mode on a target: what the runtime's trap handler writes (the
/// report with its trap note, human or a JSON line, to the log or stderr;
/// with `--json` the run's JSON object on stdout), then abort.
pub(crate) fn write_trap_report_and_abort(end: &crate::RunEnd, t: &crate::end::TrapEnd) -> ! {
    let (trap, r) = (&t.trap, &t.report);
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
    write_sarif_or_note(&end.render, &end.file, std::slice::from_ref(&j));
    if end.render.json {
        let all = aborted_json(vec![j.clone()], &end.meta, &None, end.rt.take_output());
        crate::out::write_or_note(format_args!("{all}\n"));
    }
    let text = if end.json_log {
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
    end.rt.write_log_text(&text);
    std::process::abort()
}
