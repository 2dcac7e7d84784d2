//! `run`, `emit` and `compile`: the command-line arguments of a run become
//! a [`guardlift_session::RunSpec`]; the session runs it and renders its
//! end (spec §8). `emit` and `compile` instrument and lower.

use crate::source::{self, CliError};
use crate::{Engine, InstrumentArgs, Target, What};
use guardlift_ir::Verified;

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

fn load_instrumented(file: &str, inst: &InstrumentArgs) -> Result<Verified, CliError> {
    let m = source::load(file)?;
    let checks = inst.check_set()?;
    Ok(if checks.is_empty() {
        m
    } else {
        guardlift_instrument::instrument_verified(m, checks)
    })
}

pub fn run(o: RunOpts) -> Result<u8, CliError> {
    let module = load_instrumented(&o.file, &o.inst)?;
    let spec = guardlift_session::RunSpec {
        module,
        file: o.file,
        entry: o.entry,
        args: o.args,
        engine: match o.engine {
            Engine::Jit => guardlift_session::Engine::Jit,
            Engine::Interp => guardlift_session::Engine::Interp,
        },
        target: jit_target(o.target),
        mode: o.inst.mode_arg(),
        watch: o.watch,
        link: o.link,
        render: guardlift_session::Render {
            json: o.json,
            sarif: o.sarif,
        },
    };
    Ok(guardlift_session::run(spec)?.print()?)
}

fn jit_target(t: Target) -> guardlift_jit::Target {
    match t {
        Target::Host => guardlift_jit::Target::Host,
        Target::X86_64 => guardlift_jit::Target::X86_64,
        Target::Aarch64 => guardlift_jit::Target::Aarch64,
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
