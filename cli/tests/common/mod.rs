//! Helpers shared by the `guardlift` binary's tests: running it, reading
//! what it printed, temporary input files.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Output;

/// The `guardlift` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_guardlift")
}

/// Runs `guardlift ARGS` with no `GUARDLIFT_OPTIONS` from the environment.
pub fn gl(args: &[&str]) -> Output {
    gl_env(args, &[])
}

/// [`gl`] with the variables `env` set.
pub fn gl_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    target_command(bin())
        .args(args)
        .env_remove("GUARDLIFT_OPTIONS")
        .envs(env.iter().copied())
        .output()
        .expect("run guardlift")
}

/// A file `name` holding `bytes` in this test process's temporary folder.
pub fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("guardlift-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the temporary folder");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write the temporary file");
    p
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 134: killed by SIGABRT (or exited with 134).
pub fn exit_134(o: &Output) -> bool {
    use std::os::unix::process::ExitStatusExt;
    o.status.signal() == Some(libc::SIGABRT) || o.status.code() == Some(134)
}

/// Heap addresses differ between runs and architectures: `0x…` → `0x?`.
pub fn mask_hex(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        out.push_str("0x?");
        rest = rest[i + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
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
