//! The `guardlift` command line (spec §8): `check`, `fmt`, `emit`,
//! `compile`, `run`. Exit status: 0 ok; 1 a recover-mode run recorded
//! reports; 2 usage, parse, verify or link error; 134 abort/trap after a
//! violation (and host faults: what would have been a crash).

mod bench;
mod out;
mod run;
mod source;

use clap::{Args, Parser, Subcommand, ValueEnum};
use guardlift_instrument::CheckSet;
use source::CliError;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "guardlift",
    version,
    about = "JIT code generation on Cranelift with safety instrumentation"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Engine {
    Jit,
    Interp,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Target {
    Host,
    #[value(name = "x86_64")]
    X86_64,
    Aarch64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModeArg {
    Abort,
    Recover,
    Trap,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum What {
    Ir,
    Clif,
    Asm,
}

/// Instrumentation flags shared by run, emit and compile.
#[derive(Args, Clone, Debug)]
pub(crate) struct InstrumentArgs {
    /// Insert every check (dict, adstack, clobber, bounds, lifetime).
    #[arg(long, conflicts_with = "checks")]
    instrument: bool,
    /// Insert the listed checks, comma-separated: dict, adstack, clobber, bounds, lifetime.
    #[arg(long, value_name = "LIST")]
    checks: Option<String>,
    /// What a failed check does [default: GUARDLIFT_OPTIONS mode, else abort].
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
}

impl InstrumentArgs {
    pub(crate) fn check_set(&self) -> Result<CheckSet, CliError> {
        if self.instrument {
            return Ok(CheckSet::ALL);
        }
        match &self.checks {
            None => Ok(CheckSet::default()),
            Some(l) => CheckSet::parse(l).map_err(CliError::tool),
        }
    }
    /// `--mode`, if given.
    pub fn mode_arg(&self) -> Option<guardlift_runtime::Mode> {
        self.mode.map(|m| match m {
            ModeArg::Abort => guardlift_runtime::Mode::Abort,
            ModeArg::Recover => guardlift_runtime::Mode::Recover,
            ModeArg::Trap => guardlift_runtime::Mode::Trap,
        })
    }
    /// The mode: `--mode`, else `GUARDLIFT_OPTIONS`'s, else abort.
    pub fn mode(&self, options: &guardlift_runtime::Options) -> guardlift_runtime::Mode {
        self.mode_arg()
            .unwrap_or_else(|| options.mode.unwrap_or_default())
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a function of a module.
    Run(run::RunOpts),
    /// Parse and verify.
    Check { file: String },
    /// Print the canonical text.
    Fmt { file: String },
    /// Print the IR (after instrumentation), Cranelift IR, or disassembly.
    Emit {
        file: String,
        #[arg(long, value_enum)]
        what: What,
        #[arg(long, value_enum, default_value = "host")]
        target: Target,
        #[command(flatten)]
        inst: InstrumentArgs,
    },
    /// Measure guardlift against the interpreter, CPython, gcc and ASan.
    Bench {
        /// One JSON object on stdout.
        #[arg(long)]
        json: bool,
        /// Fewer and shorter repeats.
        #[arg(long)]
        quick: bool,
        /// Run only these row groups (store_attr, adstack, ctxmgr, watch,
        /// compile, debuginfo); repeatable or comma-separated. Default: all.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Write an ELF object file for a target.
    Compile {
        file: String,
        #[arg(long, value_enum)]
        target: Target,
        #[arg(short = 'o', value_name = "OUT.o")]
        out: String,
        #[command(flatten)]
        inst: InstrumentArgs,
    },
}

/// Marks entry arguments that look like negative numbers (`-5`, `-2.5e-3`,
/// `-inf`, `-nan`) so clap does not read them as flags; `run` unmarks them.
pub const NEG_MARK: char = '\u{1}';

fn protect_negative_numbers(argv: Vec<String>) -> Vec<String> {
    argv.into_iter()
        .map(|a| {
            let rest = a.strip_prefix('-').unwrap_or("");
            let numeric = rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                || rest == "inf"
                || rest == "nan";
            if numeric {
                format!("{NEG_MARK}{a}")
            } else {
                a
            }
        })
        .collect()
}

fn main() -> ExitCode {
    // SIGPIPE stays ignored (Rust's default): writing to a closed pipe
    // (`guardlift run … | head -1`) is a failed write like any other, one
    // line on stderr and a non-zero exit (spec §6.3; `out`).
    let argv = protect_negative_numbers(std::env::args().collect());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let r = match cli.cmd {
        Cmd::Bench { json, quick, only } => bench::bench(json, quick, &only),
        Cmd::Check { file } => source::load(&file).map(|_| 0),
        Cmd::Fmt { file } => source::load(&file).and_then(|m| {
            out::write_fmt(format_args!("{}", guardlift_ir::print_module(&m)))?;
            Ok(0)
        }),
        Cmd::Emit {
            file,
            what,
            target,
            inst,
        } => run::emit(&file, what, target, &inst),
        Cmd::Compile {
            file,
            target,
            out,
            inst,
        } => run::compile(&file, target, &out, &inst),
        Cmd::Run(mut o) => {
            for a in &mut o.args {
                *a = a.trim_start_matches(NEG_MARK).to_string();
            }
            // `--entry @main` names the function as IR text does.
            if let Some(e) = o.entry.strip_prefix('@') {
                o.entry = e.to_string();
            }
            run::run(o)
        }
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(CliError(msg)) => {
            eprintln!("{msg}");
            ExitCode::from(2)
        }
    }
}
