//! Helpers shared by the runtime's integration tests: starting a process
//! of this test binary's own target (the test binary again, for the cases
//! that end the process).
#![allow(dead_code)]

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
