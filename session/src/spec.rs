//! What a run is asked to do ([`RunSpec`]) and what the session works out
//! from it before anything runs (`Prepared`): the entry, its arguments
//! parsed by their types, `GUARDLIFT_OPTIONS`, the mode, the watch.

use crate::RunError;
use guardlift_ir::literal::parse_arg;
use guardlift_ir::{Type, Verified};
use guardlift_runtime::watch::WatchSpec;
use guardlift_runtime::{Mode, Options};

/// Which engine runs the module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The reference interpreter (the oracle), on this process.
    Interp,
    /// Native code: the JIT on this process for [`guardlift_jit::Target::Host`],
    /// else an object file for the target, linked with the target runtime
    /// library and run in its own process (under qemu-user when this
    /// machine cannot run it).
    Jit,
}

/// How the end of the run is rendered (spec §8).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Render {
    /// One JSON object on stdout instead of the result line.
    pub json: bool,
    /// Also write the reports as a SARIF 2.1.0 log to this file.
    pub sarif: Option<String>,
}

/// A run: a module (instrumented or not), where it came from, the entry
/// and its arguments, the engine and target, and the rendering.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The module to run, verified (the JIT compiles it as it is).
    pub module: Verified,
    /// The file it was read from (errors and reports name it).
    pub file: String,
    /// The entry function's name.
    pub entry: String,
    /// The entry's arguments as text, parsed by its parameter types.
    pub args: Vec<String>,
    /// The engine.
    pub engine: Engine,
    /// The target: [`guardlift_jit::Target::Host`] runs on this process; an
    /// explicit architecture always runs ahead of time (x86_64 on x86_64 too).
    pub target: guardlift_jit::Target,
    /// The mode (`--mode`); `None`: `GUARDLIFT_OPTIONS`' mode, else abort.
    pub mode: Option<Mode>,
    /// Hardware watchpoints (`--watch` text); it wins over `GUARDLIFT_OPTIONS`' `watch=`.
    pub watch: Option<String>,
    /// Shared libraries that resolve externs that are not built-ins.
    pub link: Vec<String>,
    /// The rendering of the end.
    pub render: Render,
}

/// What is known before the run starts.
pub(crate) struct Prepared {
    /// The entry's arguments as bits.
    pub args: Vec<u64>,
    /// The entry's result type.
    pub ret_ty: Option<Type>,
    /// `GUARDLIFT_OPTIONS`, its `watch=` taken out.
    pub options: Options,
    /// The mode the run uses.
    pub mode: Mode,
    /// The watch to start, if any.
    pub watch: Option<WatchSpec>,
}

impl Prepared {
    pub(crate) fn new(spec: &RunSpec) -> Result<Prepared, RunError> {
        let m = &spec.module;
        let fid = m.func_by_name(&spec.entry).ok_or_else(|| {
            let name = guardlift_ir::error::shorten_long_words(&spec.entry);
            // No line to point at: the module's start, so that the error has
            // the `FILE:LINE:COL: error:` form of every other one (spec §8).
            RunError::at(format!("{}:1:1", spec.file), format!("no function @{name}"))
        })?;
        let f = m.func(fid);
        if f.params.len() != spec.args.len() {
            return Err(RunError::at(
                format!("{}:{}", spec.file, f.loc),
                format!(
                    "@{} takes {} argument(s), got {}",
                    spec.entry,
                    f.params.len(),
                    spec.args.len()
                ),
            ));
        }
        let mut args = Vec::with_capacity(spec.args.len());
        for (ty, text) in f.param_types().into_iter().zip(&spec.args) {
            args.push(parse_arg(ty, text).map_err(|e| {
                RunError::tool(format!(
                    "argument: {}",
                    guardlift_ir::error::shorten_long_words(&e)
                ))
            })?);
        }
        let mut options = Options::from_env().map_err(RunError::tool)?;
        let watch = match &spec.watch {
            Some(text) => Some(WatchSpec::parse(text).map_err(RunError::tool)?),
            None => options.watch.take(),
        };
        let mode = spec
            .mode
            .unwrap_or_else(|| options.mode.unwrap_or_default());
        Ok(Prepared {
            args,
            ret_ty: f.ret,
            options,
            mode,
            watch,
        })
    }
}
