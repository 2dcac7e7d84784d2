//! Helpers shared by the JIT tests.
#![allow(dead_code)]

mod chain;
#[allow(unused_imports)]
pub use chain::push_chain;

use guardlift_jit::{CompileOptions, CompiledModule, Jit, JitError};
use guardlift_runtime::{Mode, Report, ReportKind, Runtime, RuntimeConfig};
use std::sync::Arc;

/// Parses and verifies IR text, panicking with the diagnostics.
pub fn parse(text: &str) -> guardlift_ir::Module {
    match guardlift_ir::parse_and_verify(text) {
        Ok(m) => m,
        Err(e) => panic!("test module does not verify:\n{e}\n---\n{text}"),
    }
}

/// A runtime in recover mode that never ends the process and captures prints.
pub fn recover_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

/// A runtime in abort mode that does not end the process (checks return Abort).
pub fn quiet_abort_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Abort,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

pub fn try_compile(text: &str, rt: &Arc<Runtime>) -> Result<CompiledModule, JitError> {
    Jit::compile(&parse(text), rt.clone(), &CompileOptions::default())
}

pub fn compile(text: &str, rt: &Arc<Runtime>) -> CompiledModule {
    try_compile(text, rt).unwrap_or_else(|e| panic!("compile failed: {e}\n---\n{text}"))
}

/// Compiles with a fresh recover-mode runtime.
pub fn jit(text: &str) -> CompiledModule {
    compile(text, &recover_rt())
}

/// Calls a memory-safe function through the dynamic trampoline and unwraps.
pub fn call(m: &CompiledModule, name: &str, args: &[u64]) -> Option<u64> {
    m.safe_call_dynamic(name, args)
        .unwrap_or_else(|e| panic!("call @{name}: {e}"))
}

/// [`call`] for any function.
///
/// # Safety
/// As [`CompiledModule::call_dynamic`]: every memory access of the call is
/// to memory valid for it.
pub unsafe fn call_raw(m: &CompiledModule, name: &str, args: &[u64]) -> Option<u64> {
    // SAFETY: forwarded to the caller.
    unsafe { m.call_dynamic(name, args) }.unwrap_or_else(|e| panic!("call @{name}: {e}"))
}

pub fn kinds(reports: &[Report]) -> Vec<(ReportKind, u64)> {
    reports.iter().map(|r| (r.kind, r.count)).collect()
}

/// The shadow mapping exists unless `GUARDLIFT_NO_SHADOW` is set (then the
/// JIT emits the call form of the lifetime, clobber and watch checks).
pub fn assert_shadow_as_the_environment_says() {
    let off = std::env::var_os("GUARDLIFT_NO_SHADOW").is_some();
    assert_eq!(
        guardlift_runtime::shadow::base().is_none(),
        off,
        "no shadow mapping although GUARDLIFT_NO_SHADOW is unset: the tests need a \
         16 TiB MAP_NORESERVE reservation (vm.overcommit_memory 0 or 1)"
    );
}

/// Runs every test of this test binary again in a child process with
/// `GUARDLIFT_NO_SHADOW=1` and asserts they pass (a no-op in the child).
pub fn rerun_without_shadow() {
    if std::env::var_os("GUARDLIFT_NO_SHADOW").is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = target_command(exe)
        .env("GUARDLIFT_NO_SHADOW", "1")
        .args(["--test-threads", "1"])
        .output()
        .expect("runs the test binary again");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "without the shadow:\n{text}");
    assert!(text.contains("test result: ok"), "{text}");
}

/// The two tests of a test binary whose JIT code takes the shadow hot
/// paths: the shadow is what the environment says, and every test of the
/// binary passes again without it.
#[allow(unused_macros)]
macro_rules! shadow_tests {
    () => {
        #[test]
        fn shadow_is_what_the_environment_says() {
            assert_shadow_as_the_environment_says();
        }

        #[test]
        fn every_test_without_the_shadow() {
            rerun_without_shadow();
        }
    };
}
#[allow(unused_imports)]
pub(crate) use shadow_tests;

/// The variable naming the `child_*` case a child process runs.
const CHILD_ENV: &str = "GL_TEST_CHILD";

/// The guard of an ignored `child_*` helper: it runs only in the child
/// process its parent test starts ([`run_child`]), and fails loudly when
/// run any other way (e.g. by `cargo test -- --ignored`), since the case
/// ends the process.
pub fn child(name: &str) {
    assert_eq!(
        std::env::var(CHILD_ENV).as_deref(),
        Ok(name),
        "{name} is a helper: its parent test runs it in a child process with {CHILD_ENV}={name}"
    );
}

/// Runs the `child_<name>` test of this binary in a child process, with
/// `extra_env` set.
pub fn run_child(name: &str, extra_env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary's path");
    target_command(exe)
        .args([
            &format!("child_{name}"),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("child_{name}"))
        .envs(extra_env.iter().copied())
        .output()
        .expect("re-run the test binary")
}

/// A child's standard error.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The signal that ended a child, if one did.
pub fn signal_of(o: &std::process::Output) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    o.status.signal()
}

/// The child died of SIGABRT (exit 134), as a guardlift abort ends it.
pub fn assert_aborted(o: &std::process::Output) {
    assert_eq!(
        signal_of(o),
        Some(libc::SIGABRT),
        "want SIGABRT (134), got {:?}; stderr:\n{}",
        o.status,
        stderr(o)
    );
}

/// What [`install_previous_handler`]'s handler writes before `_exit(42)`.
pub const PREVIOUS_HANDLER_RAN: &str = "previous handler ran";

extern "C" fn previous_handler(_sig: libc::c_int) {
    let msg = b"previous handler ran\n";
    // SAFETY: write and _exit are async-signal-safe.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(42);
    }
}

/// Installs, for `sig`, a plain handler (a host's, installed before
/// guardlift's) that writes [`PREVIOUS_HANDLER_RAN`] and exits with 42.
pub fn install_previous_handler(sig: libc::c_int) {
    // SAFETY: a zeroed sigaction with a handler that only calls
    // async-signal-safe functions is a valid disposition.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = previous_handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

/// Cargo's runner variable for the target these tests were built for.
const TARGET_RUNNER_VAR: &str = if cfg!(target_arch = "aarch64") {
    "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER"
} else {
    "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"
};

/// A command that runs `program`, an executable built for the same target
/// as this test binary (the test binary itself, `guardlift`, an example),
/// the way cargo ran this test binary: through cargo's runner for the
/// target when one is set (`scripts/qemu-aarch64-runner` when the aarch64
/// tests run under qemu-user, which cannot execve an aarch64 binary by
/// itself: docs/TARGETS.md), directly otherwise.
pub fn target_command(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let runner = std::env::var(TARGET_RUNNER_VAR).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(first) => {
            let mut c = std::process::Command::new(first);
            c.args(words).arg(program);
            c
        }
        None => std::process::Command::new(program),
    }
}

/// The target directory and, for a cross build (`--target TRIPLE`: this
/// test binary is in target/TRIPLE/<profile>/deps), the triple, of the
/// profile directory `dir` (target/<profile> or target/TRIPLE/<profile>):
/// what a `cargo build` from a test needs to reuse this build.
pub fn target_dir_of(dir: &std::path::Path) -> (std::path::PathBuf, Option<String>) {
    let parent = dir.parent().expect("target dir");
    let name = parent.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with(std::env::consts::ARCH) && name.contains("-linux") {
        let top = parent.parent().expect("target dir");
        (top.to_path_buf(), Some(name.to_string()))
    } else {
        (parent.to_path_buf(), None)
    }
}
