//! guardlift-session: running a module to its end, one door for every
//! front end (the `guardlift` command line, and anything that runs a whole
//! module the way it does).
//!
//! A [`RunSpec`] names the module, the entry and its arguments, the engine
//! ([`Engine`]: the reference interpreter or native code; native code for
//! another target is an object file run in its own process) and how the end is rendered ([`Render`]: human text,
//! one JSON object, a SARIF log). [`run`] runs it and returns one
//! [`RunEnd`], whatever engine ran it; [`RunEnd::print`] renders it (spec
//! §8) and gives the exit status.
//!
//! Some runs end inside the run: abort mode's first report, a fatal signal
//! in compiled code. Those paths cannot return a [`RunEnd`]; before the run
//! starts the session hands the runtime a pre-rendered ending
//! ([`guardlift_runtime::fault::FatalEnding`]): the JSON members the
//! signal handler appends without allocating, and the abort hook that
//! renders the same object in ordinary context. Both come from the
//! renderings here ([`end::RunMeta::json_members`]), so a run prints the
//! same object however it ends.
//!
//! Module map: [`end`] (the one ending type), `host` (interpreter and JIT
//! on this process), `target` (object targets through `guardlift-aot`),
//! `finish` (the renderings of an ending), `fatal` (the endings written
//! where the process ends), [`sarif`], `link`/`native`/`native_fault`
//! (`--link` libraries and the interpreter's native calls), [`out`].

mod error;
mod fatal;
mod finish;
mod host;
mod interp;
mod interp_fault;
mod link;
mod native;
mod native_fault;
mod target;

pub mod end;
pub mod out;
pub mod sarif;
pub mod spec;

pub use end::{Ending, RunEnd, RunMeta};
pub use error::RunError;
pub use spec::{Engine, Render, RunSpec};

/// Runs `spec` to its end.
///
/// Errors are failures before or outside the program's own execution (an
/// unknown entry, a bad argument, a link error, a library that cannot be
/// loaded), already presented as `FILE:LINE:COL: error: ...` lines. A run
/// that ends the process (abort mode, a fatal fault, trap mode) prints its
/// ending itself and never returns.
pub fn run(spec: RunSpec) -> Result<RunEnd, RunError> {
    let prepared = spec::Prepared::new(&spec)?;
    if spec.target == guardlift_jit::Target::Host {
        host::run(spec, prepared)
    } else {
        target::run(&spec, prepared)
    }
}
