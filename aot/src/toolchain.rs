//! Finding the target's C compiler, runner and runtime library, linking,
//! and running the program.

use crate::support;
use crate::target_rt::TargetRtError;
use crate::AotError;
use guardlift_jit::Target;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the tests and the CLI tell a user who lacks the aarch64 tools.
pub const INSTALL_HINT: &str =
    "install qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross: run scripts/install-deps";

/// The install hint for a target that `scripts/install-deps` provides the
/// tools of (aarch64), when the host cannot run its code.
pub fn install_hint(target: Target) -> Option<&'static str> {
    match target {
        Target::Aarch64 => Some(INSTALL_HINT),
        _ => None,
    }
}

/// The C compiler that links for a target and, when the host cannot run
/// its code, the user-mode emulator that can.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The architecture it builds for.
    pub target: Target,
    /// The C compiler (and linker driver).
    pub cc: PathBuf,
    /// `None`: run natively.
    pub runner: Option<PathBuf>,
    /// The guardlift runtime library the program links
    /// (`libguardlift_target_rt.a`, found and checked by
    /// [`crate::target_rt`]; its stripped copy, [`link_copy`]).
    pub runtime: PathBuf,
}

/// Looks `name` up in `PATH` (or takes it as a path when it has a `/`).
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn env_name(what: &str, target: Target) -> String {
    format!("GUARDLIFT_{what}_{}", target.name().to_ascii_uppercase())
}

impl Toolchain {
    /// The tools for `target` (an explicit architecture; `Host` means this
    /// machine's). Overrides: `GUARDLIFT_CC_AARCH64`, `GUARDLIFT_RUNNER_AARCH64`
    /// (empty: run natively), likewise `..._X86_64`.
    ///
    /// The link is static, so the emulator needs no sysroot (`-L`), unless
    /// shared libraries are linked ([`sysroot`]).
    pub fn find(target: Target) -> Result<Toolchain, AotError> {
        let target = match target {
            Target::Host => Target::host_arch()
                .ok_or_else(|| AotError::Tools("this host is neither x86_64 nor aarch64".into()))?,
            t => t,
        };
        let native = target.is_native();
        let (cc_default, runner_default, packages) = match (target, native) {
            (_, true) => ("cc", None, "gcc"),
            (Target::Aarch64, false) => (
                "aarch64-linux-gnu-gcc",
                Some("qemu-aarch64"),
                "qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross",
            ),
            (_, false) => (
                "x86_64-linux-gnu-gcc",
                Some("qemu-x86_64"),
                "qemu-user, gcc-x86-64-linux-gnu, libc6-dev-amd64-cross",
            ),
        };
        let cc_name = std::env::var(env_name("CC", target)).unwrap_or_else(|_| cc_default.into());
        let runner_name = match std::env::var(env_name("RUNNER", target)) {
            Ok(s) if s.is_empty() => None,
            Ok(s) => Some(s),
            Err(_) => runner_default.map(String::from),
        };
        let cc = find_in_path(&cc_name);
        let runner = runner_name.as_deref().map(|r| (r, find_in_path(r)));
        let mut missing = Vec::new();
        if cc.is_none() {
            missing.push(cc_name.clone());
        }
        if let Some((name, None)) = &runner {
            missing.push(name.to_string());
        }
        if !missing.is_empty() {
            let hint = match install_hint(target) {
                Some(h) => h.to_string(),
                None => format!("install {packages}"),
            };
            return Err(AotError::Tools(format!(
                "--target {} needs {}, not found in PATH: {hint}",
                target.name(),
                missing.join(" and ")
            )));
        }
        let cc = cc.unwrap_or_default();
        let runtime = link_copy(&cc, &crate::target_rt::locate(target)?, target)?;
        Ok(Toolchain {
            target,
            cc,
            runner: runner.and_then(|(_, p)| p),
            runtime,
        })
    }
}

/// The copy of the runtime library `lib` (found by
/// [`crate::target_rt::locate`]) that programs for `target` link, checked
/// ([`crate::target_rt::check`]): the library stripped of its debug
/// information (`strip --strip-debug` of the target's binutils, as `cc
/// -print-prog-name=strip` names it) in the cache (`rt-link/`, keyed by the
/// library's triple, size and time), made on first use; the library itself
/// when that fails (no cache, no strip). The debug information is most of
/// the archive (75 MB of which 26 MB stay) and most of a static link's
/// time; checking the copy instead of the library reads a third of it.
pub fn link_copy(cc: &Path, lib: &Path, target: Target) -> Result<PathBuf, TargetRtError> {
    link_copy_in(cache_dir().as_deref(), cc, lib, target)
}

/// [`link_copy`] with the cache directory `dir`.
pub fn link_copy_in(
    dir: Option<&Path>,
    cc: &Path,
    lib: &Path,
    target: Target,
) -> Result<PathBuf, TargetRtError> {
    let copy = dir.and_then(|d| copy_path(d, lib, target));
    if let Some(c) = copy.as_ref().filter(|c| c.is_file()) {
        if crate::target_rt::check(c, target).is_ok() {
            return Ok(c.clone());
        }
    }
    // The library itself decides (its errors name it).
    let rt = crate::target_rt::check(lib, target)?;
    Ok(copy
        .filter(|c| strip_into(cc, lib, c, &rt.triple))
        .unwrap_or(rt.path))
}

/// `DIR/rt-link/TRIPLE-SIZE-TIME.a` for the library `lib`.
fn copy_path(dir: &Path, lib: &Path, target: Target) -> Option<PathBuf> {
    let md = std::fs::metadata(lib).ok()?;
    let time = md
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let t = match target {
        Target::Host => Target::host_arch()?,
        t => t,
    };
    Some(
        dir.join("rt-link")
            .join(format!("{}-{}-{time}.a", t.triple(), md.len())),
    )
}

/// Strips `lib` into `copy` (atomically: a private name, then a rename) and
/// removes the copies of earlier builds of the library; false when it
/// could not.
fn strip_into(cc: &Path, lib: &Path, copy: &Path, triple: &str) -> bool {
    let strip = Command::new(cc)
        .arg("-print-prog-name=strip")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "strip".into());
    let Some(parent) = copy.parent() else {
        return false;
    };
    if std::fs::create_dir_all(parent).is_err() {
        return false;
    }
    let name = copy.file_name().unwrap_or_default().to_string_lossy();
    let tmp = parent.join(format!("{name}.{}.tmp", std::process::id()));
    let stripped = Command::new(&strip)
        .arg("--strip-debug")
        .arg("-o")
        .arg(&tmp)
        .arg(lib)
        .output()
        .is_ok_and(|o| o.status.success());
    if !(stripped && std::fs::rename(&tmp, copy).is_ok()) {
        let _ = std::fs::remove_file(&tmp);
        return false;
    }
    let prefix = format!("{triple}-");
    for old in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let n = old.file_name().to_string_lossy().into_owned();
        if n.starts_with(&prefix) && n.ends_with(".a") && old.path() != copy {
            let _ = std::fs::remove_file(old.path());
        }
    }
    true
}

/// A scratch directory, removed on drop (kept when `GUARDLIFT_AOT_KEEP` is set).
#[derive(Debug)]
pub struct WorkDir(PathBuf);

impl WorkDir {
    /// A fresh directory under the system's temporary directory.
    pub fn new() -> Result<WorkDir, AotError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let p = base.join(format!(
                "guardlift-aot-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(WorkDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(AotError::Build(format!(
                        "cannot create a directory in {}: {e}",
                        base.display()
                    )))
                }
            }
        }
        Err(AotError::Build("cannot create a scratch directory".into()))
    }
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::env::var_os("GUARDLIFT_AOT_KEEP").is_some() {
            eprintln!("guardlift: kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), AotError> {
    std::fs::write(path, bytes)
        .map_err(|e| AotError::io(format!("cannot write {}", path.display()), e))
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<Output, AotError> {
    cmd.output()
        .map_err(|e| AotError::io(format!("cannot run {what}"), e))
}

fn tail(bytes: &[u8], n: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim_end();
    match s.char_indices().rev().nth(n) {
        Some((i, _)) => format!("...{}", &s[i..]),
        None => s.to_string(),
    }
}

/// Where the runtime library's stripped copies are kept
/// (`rt-link/`): `GUARDLIFT_CACHE_DIR`, else `$XDG_CACHE_HOME/guardlift`,
/// else `$HOME/.cache/guardlift`.
fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GUARDLIFT_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("guardlift"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("guardlift"))
}

/// Writes the program object and its `gl_traps.c` and links them with the
/// runtime library into a static executable in `work`; with shared libraries `libs` (absolute paths), a
/// dynamic one that finds them at run time through its rpath (their
/// directories), also under qemu-user.
#[allow(clippy::too_many_arguments)]
pub fn link(
    tc: &Toolchain,
    object: &[u8],
    traps: &[guardlift_jit::ObjectTrap],
    code: &[guardlift_runtime::codemap::CodeFunction],
    host_c: &[PathBuf],
    libs: &[PathBuf],
    layout: guardlift_runtime::layout::DictLayout,
    work: &Path,
) -> Result<PathBuf, AotError> {
    let traps_c = work.join("gl_traps.c");
    write(
        &traps_c,
        support::program_main(traps, code, layout).as_bytes(),
    )?;
    let prog_o = work.join("program.o");
    write(&prog_o, object)?;
    let exe = work.join("program");
    let attempt = |static_: bool| {
        let mut c = Command::new(&tc.cc);
        c.current_dir(work);
        if static_ {
            c.arg("-static");
        }
        c.arg("-o")
            .arg(&exe)
            .arg(&prog_o)
            .arg(&traps_c)
            .arg(&tc.runtime)
            .args(host_c)
            .args(libs);
        for dir in libs.iter().filter_map(|l| l.parent()) {
            // The loader finds each library where it was linked from
            // (without a SONAME its path is recorded; with one, the rpath
            // finds it); qemu-user looks under its sysroot first.
            c.arg(format!("-Wl,-rpath,{}", dir.display()));
        }
        // Rust's std (in the runtime library) uses the dynamic loader's
        // API; the program needs no debug information of the runtime (and
        // a link without it is faster when the library has it).
        c.args(["-lm", "-pthread", "-ldl", "-Wl,--strip-debug"]);
        run_tool(&mut c, &tc.cc.display().to_string())
    };
    // A shared library cannot be linked statically.
    let mut out = attempt(libs.is_empty())?;
    if !out.status.success() && tc.runner.is_none() {
        // Natively, a dynamic link will do when there is no static libc.
        out = attempt(false)?;
    }
    if !out.status.success() {
        let hint = match install_hint(tc.target) {
            Some(h) if tc.runner.is_some() => format!(" ({h})"),
            _ => String::new(),
        };
        return Err(AotError::Build(format!(
            "linking for {} with {} failed{hint}: {}",
            tc.target.name(),
            tc.cc.display(),
            tail(&out.stderr, 2000)
        )));
    }
    Ok(exe)
}

/// The sysroot of a cross compiler (where the target's dynamic loader and
/// libc are: `/usr/aarch64-linux-gnu` on Debian), for an emulator to run a
/// dynamically linked program (`qemu-aarch64 -L SYSROOT`).
pub fn sysroot(tc: &Toolchain) -> Result<PathBuf, AotError> {
    let out = run_tool(
        Command::new(&tc.cc).arg("-print-file-name=libc.so.6"),
        &tc.cc.display().to_string(),
    )?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // `lib/libc.so.6` under the sysroot; a bare name: the compiler has none.
    let libc = std::fs::canonicalize(&text).ok();
    match libc
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
    {
        Some(root) if out.status.success() => Ok(root.to_path_buf()),
        _ => Err(AotError::Tools(format!(
            "{} has no libc.so.6 for {} (a dynamically linked program needs the target's libc){}",
            tc.cc.display(),
            tc.target.name(),
            install_hint(tc.target)
                .map(|h| format!(": {h}"))
                .unwrap_or_default()
        ))),
    }
}

/// Runs the executable (under the runner when there is one, given the
/// target's `sysroot` when it is linked dynamically).
pub fn execute(
    tc: &Toolchain,
    exe: &Path,
    sysroot: Option<&Path>,
    argv: &[String],
) -> Result<Output, AotError> {
    let mut c = match &tc.runner {
        Some(r) => {
            let mut c = Command::new(r);
            if let Some(root) = sysroot {
                // The loader and the libraries of the sysroot, never a
                // multiarch copy of the host's (`/lib/aarch64-linux-gnu`, a
                // different glibc build that hangs with the sysroot's loader),
                // which the host's ld.so.cache would name first.
                let lib = root.join("lib");
                c.arg("-L").arg(root);
                c.arg("-E")
                    .arg(format!("LD_LIBRARY_PATH={}", lib.display()));
            }
            c.arg(exe);
            c
        }
        None => Command::new(exe),
    };
    c.args(argv);
    c.output().map_err(|e| {
        let what = tc.runner.as_deref().unwrap_or(exe).display();
        AotError::io(format!("cannot run {what}"), e)
    })
}

/// The last `n` characters of a tool's output, for error messages.
pub fn output_tail(bytes: &[u8], n: usize) -> String {
    tail(bytes, n)
}
