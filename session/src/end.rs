//! How a run ended: one [`RunEnd`] whatever engine or target ran it.

use crate::spec::Render;
use guardlift_ir::Type;
use guardlift_runtime::watch::WatchStatus;
use guardlift_runtime::{Mode, Report, Runtime};
use std::sync::Arc;

/// What every rendering of a run names besides its result and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunMeta {
    /// `"jit"` or `"interp"`.
    pub engine: &'static str,
    /// The architecture the code ran for (`x86_64`, `aarch64`).
    pub target: &'static str,
    /// Whether the module carried checks.
    pub instrumented: bool,
    /// The mode of the run.
    pub mode: Mode,
    /// The entry's result type.
    pub ret_ty: Option<Type>,
}

impl RunMeta {
    /// The members every JSON object of the run carries, without braces:
    /// `"engine":...,"target":...,"instrumented":...`. The fatal paths'
    /// pre-rendered ending and the ordinary renderings both use it.
    pub fn json_members(&self) -> String {
        format!(
            "\"engine\":{},\"target\":{},\"instrumented\":{}",
            serde_json::Value::from(self.engine),
            serde_json::Value::from(self.target),
            self.instrumented
        )
    }
}

/// How the program's execution ended.
#[derive(Debug)]
pub enum Ending {
    /// The entry returned (its result bits, if it has a result).
    Returned(Option<u64>),
    /// Where native code would have crashed or the run was cut short, and
    /// the process ends with status 134: a host fault in a built-in (the
    /// message names it), the interpreter's abort, a target that died
    /// outside IR code.
    Fatal(String),
    /// A fatal signal in IR code or a host function it called (or the
    /// interpreter's wild access or depth limit): the `host_fault` /
    /// `stack_overflow` report, then abort.
    Fault(FaultEnd),
    /// A target program ended by abort mode after a report.
    Aborted,
    /// A target program's guard trapped in trap mode.
    Trapped(TrapEnd),
}

/// A fatal fault placed at its IR instruction.
#[derive(Debug)]
pub struct FaultEnd(pub(crate) FaultSource);

#[derive(Debug)]
pub(crate) enum FaultSource {
    /// The interpreter's fault.
    Interp(Box<crate::interp_fault::InterpFault>),
    /// What a target's fault handler sent (`None`: it sent nothing).
    Target(Option<Box<guardlift_aot::TargetFault>>),
}

impl FaultEnd {
    /// The fault report (spec §6.2) as the fault handler renders it.
    pub fn report(&self) -> Option<guardlift_runtime::fault::FaultReport<'_>> {
        match &self.0 {
            FaultSource::Interp(f) => Some(f.report()),
            FaultSource::Target(f) => f.as_ref().map(|f| f.report()),
        }
    }
}

/// A target's trap in trap mode.
#[derive(Debug)]
pub struct TrapEnd {
    pub(crate) trap: guardlift_aot::Trap,
    pub(crate) report: guardlift_aot::TrapReport,
}

/// The end of a run: how it ended, the reports recorded before, the
/// watch session's status, and what is needed to render it.
pub struct RunEnd {
    /// The engine, target, instrumentation, mode and result type.
    pub meta: RunMeta,
    /// How the execution ended.
    pub ending: Ending,
    /// The reports recorded during the run, in order.
    pub reports: Vec<Report>,
    /// The watch session's status (`--watch`), if one was asked for.
    pub watch: Option<WatchStatus>,
    /// The runtime of the run: its log settings and captured output.
    pub(crate) rt: Arc<Runtime>,
    pub(crate) render: Render,
    pub(crate) file: String,
    /// `GUARDLIFT_OPTIONS`' `json` (reports as JSON lines).
    pub(crate) json_log: bool,
}

impl RunEnd {
    /// The exit status the end gives (spec §8): 0 no report, 1 reports
    /// recorded, 134 a fatal end.
    pub fn exit_status(&self) -> u8 {
        match &self.ending {
            Ending::Returned(_) if self.reports.is_empty() => 0,
            Ending::Returned(_) => 1,
            _ => 134,
        }
    }
}

impl std::fmt::Debug for RunEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEnd")
            .field("meta", &self.meta)
            .field("ending", &self.ending)
            .field("reports", &self.reports.len())
            .finish_non_exhaustive()
    }
}
