//! Reports that cannot be lost (issue 13 defect 5, issue 16): a log that
//! cannot be written falls back to stderr with a note, on every engine and
//! target, in every mode, human and JSON; each report is written once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_guardlift")
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/programs")
        .join(name)
}

/// The exit status as a shell shows it: 128 + signal for a signal death
/// (SIGABRT: 134).
fn exit_code(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    o.status
        .code()
        .or_else(|| o.status.signal().map(|s| 128 + s))
        .expect("an exit status or a signal")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every engine and target, as `run` flags.
const ENGINES: [&[&str]; 5] = [
    &["--engine", "jit"],
    &["--engine", "interp"],
    &["--target", "x86_64"],
    &["--target", "aarch64"],
    &["--target", "riscv64"],
];

#[test]
fn log_path_dev_full_falls_back_to_stderr_everywhere() {
    let p = program("guard_adstack_overflow.glir");
    for engine in ENGINES {
        for (mode, code) in [("abort", 134), ("recover", 1), ("trap", 134)] {
            for json in [0, 1] {
                let o = Command::new(bin())
                    .arg("run")
                    .arg(&p)
                    .args(engine)
                    .args(["--instrument", "--mode", mode])
                    .env(
                        "GUARDLIFT_OPTIONS",
                        format!("log_path=/dev/full:json={json}"),
                    )
                    .output()
                    .expect("run guardlift");
                let err = stderr(&o);
                let what = format!("{engine:?} {mode} json={json}");
                assert_eq!(exit_code(&o), code, "{what}: {err}");
                assert_eq!(
                    err.matches("cannot write reports to log_path").count(),
                    1,
                    "{what}: one note: {err}"
                );
                assert_eq!(
                    err.matches("adstack_overflow").count(),
                    1,
                    "{what}: the report, once: {err}"
                );
                if json == 1 {
                    let line = err
                        .lines()
                        .find(|l| l.starts_with('{'))
                        .unwrap_or_else(|| panic!("{what}: no JSON line: {err}"));
                    let j: serde_json::Value = serde_json::from_str(line)
                        .unwrap_or_else(|e| panic!("{what}: {e}: {line}"));
                    assert_eq!(j["kind"], "adstack_overflow", "{what}");
                    assert_eq!(j["len"], 32, "{what}");
                }
            }
        }
    }
}

#[test]
fn a_writable_log_gets_the_report_and_stderr_no_note() {
    let p = program("guard_adstack_overflow.glir");
    let log = std::env::temp_dir().join(format!("guardlift-faults-{}.log", std::process::id()));
    for mode in ["abort", "recover", "trap"] {
        let _ = std::fs::remove_file(&log);
        let o = Command::new(bin())
            .arg("run")
            .arg(&p)
            .args(["--instrument", "--mode", mode])
            .env("GUARDLIFT_OPTIONS", format!("log_path={}", log.display()))
            .output()
            .expect("run guardlift");
        let err = stderr(&o);
        assert!(!err.contains("cannot write reports"), "{mode}: {err}");
        assert!(!err.contains("adstack_overflow"), "{mode}: {err}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.matches("adstack_overflow").count(),
            1,
            "{mode}: {text}"
        );
    }
    let _ = std::fs::remove_file(&log);
}
