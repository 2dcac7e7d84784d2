//! Rendering a [`RunEnd`] (spec §8): the result line or the run's JSON
//! object on stdout, the reports to the log or stderr, the watch summary,
//! the fatal message, the SARIF log; and the exit status.

use crate::end::{Ending, RunEnd};
use crate::fatal::{print_watch_summary, reports_json};
use crate::RunError;
use guardlift_ir::literal::{format_value, json_value};
use guardlift_runtime::internals::*;
use std::io::Write;

impl RunEnd {
    /// The run's JSON object (spec §8) for an ending that returns to the
    /// caller: `result`, `reports`, `engine`, `target`, `instrumented`,
    /// `mode`, and `stdout`, `fatal`, `watch` when they apply. Takes the
    /// output the runtime captured.
    fn json_object(&self, result: Option<u64>, fatal: &Option<String>) -> serde_json::Value {
        let result_json = match (result, self.meta.ret_ty) {
            (Some(bits), Some(ty)) => json_value(ty, bits),
            _ => "null".into(),
        };
        let result_json: serde_json::Value =
            serde_json::from_str(&result_json).unwrap_or(serde_json::Value::Null);
        let mut j = serde_json::json!({
            "result": result_json,
            "reports": reports_json(&self.reports),
            "engine": self.meta.engine,
            "target": self.meta.target,
            "instrumented": self.meta.instrumented,
            "mode": self.meta.mode.name(),
        });
        let out = self.rt.take_output();
        if !out.is_empty() {
            j["stdout"] = serde_json::Value::String(out);
        }
        if let Some(f) = fatal {
            j["fatal"] = serde_json::Value::String(f.clone());
        }
        if let Some(w) = &self.watch {
            j["watch"] = w.to_json();
        }
        j
    }

    /// Prints the end as spec §8 says and returns the exit status: 0, or 1
    /// when reports were recorded. A fatal end exits with 134 (or aborts,
    /// after a fault or a trap) here; a failed write of the output is an
    /// error once the reports are written (spec §6.3).
    pub fn print(self) -> Result<u8, RunError> {
        let file = self.file.clone();
        let (result, fatal) = match &self.ending {
            Ending::Returned(v) => (*v, None),
            Ending::Fatal(msg) => (None, Some(msg.clone())),
            Ending::Fault(f) => {
                let watch = &self.watch;
                let report = f.report();
                crate::fatal::write_fault_report_and_abort(
                    &self.rt,
                    &self.render,
                    &file,
                    &self.meta,
                    &self.reports,
                    report,
                    watch,
                )
            }
            Ending::Aborted => crate::fatal::write_target_aborted(&self),
            Ending::Trapped(t) => crate::fatal::write_trap_report_and_abort(&self, t),
        };
        let fatal = fatal.map(|m| format!("{file}: fatal: {m}"));
        let code = self.exit_status();
        let sarif = match (self.render.sarif.as_deref(), reports_json(&self.reports)) {
            (Some(out), serde_json::Value::Array(a)) => crate::sarif::write(out, &file, &a).err(),
            _ => None,
        };
        let written = if self.render.json {
            let j = self.json_object(result, &fatal);
            crate::out::write_fmt(format_args!("{j}\n"))
        } else if let (Some(bits), Some(ty)) = (result, self.meta.ret_ty) {
            crate::out::write_fmt(format_args!("{}\n", format_value(ty, bits)))
        } else {
            Ok(())
        };
        self.rt.write_reports(&self.reports);
        print_watch_summary(&self.watch);
        let mut err = std::io::stderr().lock();
        if let Some(f) = &fatal {
            let _ = writeln!(err, "{f}");
        }
        if let Some(e) = &sarif {
            let _ = writeln!(err, "{e}");
        }
        // Everything is reported: a log file nothing was written to goes.
        self.rt.close_log();
        if code == 134 {
            if let Err(RunError(e)) = &written {
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
            Some(e) => Err(RunError::new(e)),
            None => Ok(code),
        }
    }
}
