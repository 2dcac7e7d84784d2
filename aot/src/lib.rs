//! guardlift ahead of time: run a module on an explicit architecture
//! (`--target aarch64` under qemu-user on an x86_64 host, `--target x86_64`
//! natively) and get back exactly what the host JIT run would have
//! produced.
//!
//! 1. [`wrap::wrap_entry`] renames the IR functions and appends the entry
//!    wrapper `@__gl_start(%args: ptr, %ret: ptr)`, written in guardlift IR
//!    (raw u64 argument bits in, raw result bits out).
//! 2. [`guardlift_jit::emit_object`] compiles it for the target with the
//!    same lowering as the JIT.
//! 3. [`toolchain::link`] links it statically with the program's generated
//!    `gl_traps.c` ([`support::program_main`]: its trap and code tables and
//!    `main`) and guardlift's Rust runtime built as a static library for
//!    the target (`aot/rt`, `libguardlift_target_rt.a`, found and checked
//!    by [`target_rt`]; docs/TARGETS.md, "One runtime").
//! 4. [`Build::run`] runs it and parses the line protocol
//!    ([`protocol`]) into prints, reports, host faults and the result, in
//!    the runtime's own types, so the host formats them as it formats its own.
//!
//! [`build_with_libraries`] also links shared libraries ([`library`], `run
//! --link LIB.so`): the program is then linked dynamically, finds them
//! through its rpath, and runs under qemu-user with the target's sysroot.
//!
//! ```no_run
//! # let module: guardlift_ir::Module = unimplemented!();
//! use guardlift_aot::{build, End};
//! let b = build(&module, "main", guardlift_jit::Target::Aarch64, guardlift_runtime::Mode::Recover)?;
//! let run = b.run(&[5])?;
//! assert_eq!(run.end, End::Exited);
//! # Ok::<(), guardlift_aot::AotError>(())
//! ```

pub mod library;
pub mod protocol;
pub mod support;
pub mod target_rt;
pub mod toolchain;
pub mod wrap;

pub use protocol::{End, IrPc, Print, TargetFault, TargetRun, Trap, TrapReport};
pub use toolchain::{install_hint, Toolchain, INSTALL_HINT};

use guardlift_ir::{Module, Type};
use guardlift_jit::{EmitOptions, JitError, Target};
use guardlift_runtime::codemap::CodeFunction;
use guardlift_runtime::heap::DEFAULT_QUARANTINE_MB;
use guardlift_runtime::{Mode, ModuleSites};
use std::path::{Path, PathBuf};
use toolchain::WorkDir;

/// Why a target build or run failed.
#[derive(Debug, thiserror::Error)]
pub enum AotError {
    /// Verification, link (undefined extern) or code generation.
    #[error(transparent)]
    Jit(#[from] JitError),
    /// Bad entry or arguments.
    #[error("{0}")]
    Usage(String),
    /// A shared library to link (`run --link`) cannot be: missing, not an
    /// ELF shared library, built for another architecture, or refused by
    /// the host's loader.
    #[error("{path}: {msg}")]
    Library {
        /// The library as given.
        path: String,
        /// What is wrong with it.
        msg: String,
    },
    /// A compiler or emulator is missing.
    #[error("{0}")]
    Tools(String),
    /// The guardlift runtime library for the target is missing or unusable.
    #[error(transparent)]
    TargetRt(#[from] target_rt::TargetRtError),
    /// Linking failed.
    #[error("{0}")]
    Build(String),
    /// The program could not be run, or said something unexpected.
    #[error("{0}")]
    Run(String),
    /// A file or process operation failed (writing the object, running a
    /// tool or the program).
    #[error("{context}")]
    Io {
        /// What was being done (`cannot run qemu-aarch64`).
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An invariant of guardlift's own does not hold (a bug in guardlift).
    #[error("internal error: {0}")]
    Internal(String),
}

impl AotError {
    /// An [`AotError::Io`] error about `context`.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        AotError::Io {
            context: context.into(),
            source,
        }
    }

    /// The CLI's error line(s) for `file`, with the chain of sources.
    pub fn with_file(&self, file: &str) -> String {
        match self {
            AotError::Jit(e) => e.with_file(file),
            AotError::Usage(m) => format!("{file}: error: {m}"),
            AotError::Library { path, msg } => format!("{path}: error: {msg}"),
            other => format!("guardlift: error: {}", guardlift_jit::error::chain(other)),
        }
    }
}

/// A module compiled and linked for a target, ready to run (many times).
#[derive(Debug)]
pub struct Build {
    toolchain: Toolchain,
    mode: Mode,
    sites: ModuleSites,
    /// The IR functions' code (`gl_code`): PCs the target names are mapped with it.
    code: Vec<CodeFunction>,
    params: Vec<Type>,
    ret: Option<Type>,
    exe: PathBuf,
    /// Linked dynamically (with shared libraries) and run under an
    /// emulator: the target's sysroot, where the emulator finds the
    /// dynamic loader and libc.
    sysroot: Option<PathBuf>,
    /// Freed memory the target holds in quarantine (`quarantine_mb`).
    quarantine_bytes: u64,
    _work: WorkDir,
}

/// Compiles `m` (already instrumented as wanted) for `target` with the
/// guard lowering of `mode`, and links it with the target runtime library.
pub fn build(m: &Module, entry: &str, target: Target, mode: Mode) -> Result<Build, AotError> {
    build_with_host(m, entry, target, mode, &[])
}

/// [`build`], also compiling and linking the C files `host_c`, which
/// define host functions: every extern of `m` that is not a built-in is
/// the C function of its name (`extern fn @deref(i64) -> i64` is
/// `int64_t deref(int64_t)`, no hidden runtime argument), as
/// `CompileOptions::symbol` gives the JIT one. A fault in them is placed
/// at the IR call, as on the host.
pub fn build_with_host(
    m: &Module,
    entry: &str,
    target: Target,
    mode: Mode,
    host_c: &[PathBuf],
) -> Result<Build, AotError> {
    build_linked(m, entry, target, mode, host_c, &[])
}

/// [`build`], also linking the shared libraries `libs` (read with
/// [`library::read_all`]): every extern of `m` that is not a built-in is
/// the symbol of its name in the first library that defines it (as the
/// host engines take it, `run --link`); one that none defines is the link
/// error `LINE:COL: undefined symbol @name`, as without libraries. A
/// library built for another architecture is an error.
pub fn build_with_libraries(
    m: &Module,
    entry: &str,
    target: Target,
    mode: Mode,
    libs: &[library::SharedLibrary],
) -> Result<Build, AotError> {
    build_linked(m, entry, target, mode, &[], libs)
}

fn build_linked(
    m: &Module,
    entry: &str,
    target: Target,
    mode: Mode,
    host_c: &[PathBuf],
    libs: &[library::SharedLibrary],
) -> Result<Build, AotError> {
    // The link runs in its own directory.
    let host_c: Vec<PathBuf> = host_c
        .iter()
        .map(|p| std::env::current_dir().map(|d| d.join(p)))
        .collect::<Result<_, _>>()
        .map_err(|e| AotError::Build(format!("the current directory: {e}")))?;
    if host_c.is_empty() {
        // Only built-ins and the libraries' symbols exist on the target:
        // any other extern is the same link error (LINE:COL: undefined
        // symbol @name) as in the JIT.
        guardlift_jit::check_externs(m, |name| library::provider(libs, name).is_some())?;
    }
    let fid = m
        .func_by_name(entry)
        .ok_or_else(|| AotError::Usage(format!("no function @{entry}")))?;
    let f = m.func(fid);
    let (params, ret) = (f.param_types(), f.ret);
    let wrapped = wrap::wrap_entry(m, entry)?;
    let object = guardlift_jit::emit_object_with_code(
        &wrapped,
        target,
        &EmitOptions {
            mode,
            site_base: 0,
            ..Default::default()
        },
    )?;
    // The entry wrapper is not an IR frame of the program (a backtrace
    // ends where it called the entry, as the host JIT's ends at its caller).
    let code: Vec<CodeFunction> = object
        .functions
        .into_iter()
        .filter(|f| f.function != wrap::START_SYMBOL)
        .collect();
    let toolchain = Toolchain::find(target)?;
    for l in libs {
        l.check_arch(toolchain.target)?;
    }
    let lib_paths: Vec<PathBuf> = libs.iter().map(|l| l.path.clone()).collect();
    let work = WorkDir::new()?;
    let exe = toolchain::link(
        &toolchain,
        &object.bytes,
        &object.traps,
        &code,
        &host_c,
        &lib_paths,
        m.layout,
        work.path(),
    )?;
    let sysroot = match (&toolchain.runner, libs.is_empty()) {
        (Some(_), false) => Some(toolchain::sysroot(&toolchain)?),
        _ => None,
    };
    Ok(Build {
        toolchain,
        mode,
        sites: m.site_infos(),
        code,
        params,
        ret,
        exe,
        sysroot,
        quarantine_bytes: DEFAULT_QUARANTINE_MB << 20,
        _work: work,
    })
}

impl Build {
    /// The target it runs on.
    pub fn target(&self) -> Target {
        self.toolchain.target
    }

    /// Sets the quarantine size of the runs (`quarantine_mb` of
    /// `GUARDLIFT_OPTIONS`; default [`DEFAULT_QUARANTINE_MB`]), as
    /// `Runtime::configure` sets the host runtime's.
    pub fn set_quarantine_mb(&mut self, mb: u64) {
        self.quarantine_bytes = mb.saturating_mul(1 << 20);
    }

    /// The linked executable (removed when the build drops).
    pub fn executable(&self) -> &Path {
        &self.exe
    }

    /// Runs the entry with raw argument bits (`guardlift_ir::literal`).
    pub fn run(&self, args: &[u64]) -> Result<TargetRun, AotError> {
        if args.len() != self.params.len() {
            return Err(AotError::Usage(format!(
                "the entry takes {} argument(s), got {}",
                self.params.len(),
                args.len()
            )));
        }
        let mut argv = vec![
            self.mode.name().to_string(),
            format!("{:x}", self.quarantine_bytes),
        ];
        argv.extend(args.iter().map(|a| format!("{a:x}")));
        let out = toolchain::execute(&self.toolchain, &self.exe, self.sysroot.as_deref(), &argv)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (mut run, complete) =
            protocol::parse(&stdout, &self.sites, &self.code).map_err(|e| {
                AotError::Run(format!(
                    "the {} program's output is not the protocol: {e}; stderr: {}",
                    self.target(),
                    toolchain::output_tail(&out.stderr, 1000)
                ))
            })?;
        if !complete {
            use std::os::unix::process::ExitStatusExt;
            match out.status.signal() {
                Some(sig) => run.end = End::Crashed { signal: sig as u32 },
                None => {
                    return Err(AotError::Run(format!(
                        "the {} program ended ({}) without an end marker; stderr: {}",
                        self.target(),
                        out.status,
                        toolchain::output_tail(&out.stderr, 1000)
                    )))
                }
            }
        }
        if self.ret.is_none() {
            run.result = None;
        }
        Ok(run)
    }
}

/// The conventional name of a signal number (for messages).
pub fn signal_name(sig: u32) -> &'static str {
    match sig {
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => "signal",
    }
}
