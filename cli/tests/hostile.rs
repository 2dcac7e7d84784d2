//! Issue 13: the binary under hostile input — closed pipes, NUL bytes,
//! byte-order marks, huge literals and ids, option spellings, `--entry @f`,
//! out-of-range floats. Each test fails on the code before the fix.

use std::path::{Path, PathBuf};
mod common;

use common::{bin, gl, stderr, stdout, tmp};
use std::process::{Command, Output, Stdio};

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs")
}

/// Exit 2 and a first stderr line `FILE:LINE:COL: error: ...` with `frag`.
#[track_caller]
fn assert_diag(o: &Output, file: &str, line_col: &str, frag: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    let first = e.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!("{file}:{line_col}: error: ")),
        "{first:?} is not at {line_col}"
    );
    assert!(first.contains(frag), "{first:?} lacks {frag:?}");
    assert!(!e.contains("panicked"), "{e}");
}

const MAIN: &str = "fn @main() -> i64 {\nentry:\n    %x = iconst.i64 42\n    return %x\n}\n";

/// Spec §6.3 (issue 28 item 11): a closed pipe is a failed write like a
/// full disk: one line on stderr, a non-zero exit, no panic and no death by
/// SIGPIPE.
#[test]
fn closed_stdout_pipe_is_one_line_and_a_nonzero_exit() {
    let p = programs().join("call_print.glir");
    let mut child = common::target_command(bin())
        .args(["run", p.to_str().unwrap(), "200000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once: every write of the child hits EPIPE.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(o.status.code(), Some(2), "{:?} {e}", o.status);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("cannot write output"), "{e}");
}

/// Spec §6.3 (issue 28 item 11): every command that prints, writing to a
/// full disk, ends with one line on stderr and a non-zero exit, never a
/// panic (exit 101).
#[test]
fn a_full_disk_is_one_line_and_a_nonzero_exit_for_every_command() {
    let p = programs().join("call_print.glir");
    let p = p.to_str().unwrap();
    let adstack = programs().join("guard_adstack_overflow.glir");
    let adstack = adstack.to_str().unwrap();
    let cases: [&[&str]; 9] = [
        &["run", p, "3"],
        &["run", p, "3", "--engine", "interp"],
        &["run", p, "3", "--json"],
        &["run", p, "3", "--target", "aarch64"],
        &["run", adstack, "--mode", "recover", "--json"],
        &["fmt", p],
        &["emit", p, "--what", "ir"],
        &["emit", p, "--what", "clif"],
        &["emit", p, "--what", "asm"],
    ];
    for args in cases {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let o = common::target_command(bin())
            .args(args)
            .stdout(full)
            .env_remove("GUARDLIFT_OPTIONS")
            .output()
            .unwrap();
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        let notes: Vec<&str> = e
            .lines()
            .filter(|l| l.contains("cannot write output"))
            .collect();
        assert_eq!(notes.len(), 1, "{args:?}: {e}");
        assert!(
            notes[0].contains("No space left on device"),
            "{args:?}: {e}"
        );
    }
    // `check` prints nothing, `compile` writes its file: a full disk there
    // is the same one line.
    let o = gl(&["compile", p, "--target", "x86_64", "-o", "/dev/full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// Issue 28 item 13: a missing entry is a `FILE:LINE:COL: error:` line.
#[test]
fn a_missing_entry_has_a_file_line_col() {
    let f = tmp(
        "no_main.glir",
        b"fn @f() -> i64 {\nentry:\n    %x = iconst.i64 1\n    return %x\n}\n",
    );
    let f = f.to_str().unwrap();
    for engine in ["jit", "interp"] {
        let o = gl(&["run", f, "--engine", engine]);
        assert_diag(&o, f, "1:1", "no function @main");
        let o = gl(&["run", f, "--engine", engine, "--entry", "nope"]);
        assert_diag(&o, f, "1:1", "no function @nope");
    }
}

/// Issue 28 item 13: `log_path` is created only when something is
/// written to it; a run that reports creates it.
#[test]
fn the_log_file_is_created_only_when_something_is_reported() {
    let dir = std::env::temp_dir().join(format!("guardlift-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let clean = programs().join("call_print.glir");
    let adstack = programs().join("guard_adstack_overflow.glir");
    for engine in [
        ["--engine", "jit"],
        ["--engine", "interp"],
        ["--target", "aarch64"],
    ] {
        let log = dir.join(format!("{}.log", engine[1]));
        let _ = std::fs::remove_file(&log);
        let opt = format!("log_path={}", log.display());
        let o = common::gl_env(
            &["run", clean.to_str().unwrap(), "3", engine[0], engine[1]],
            &[("GUARDLIFT_OPTIONS", &opt)],
        );
        assert_eq!(o.status.code(), Some(0), "{engine:?}: {}", stderr(&o));
        assert!(!log.exists(), "{engine:?}: an empty log was created");
        let o = common::gl_env(
            &[
                "run",
                adstack.to_str().unwrap(),
                "--mode",
                "recover",
                engine[0],
                engine[1],
            ],
            &[("GUARDLIFT_OPTIONS", &opt)],
        );
        assert_eq!(o.status.code(), Some(1), "{engine:?}: {}", stderr(&o));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("adstack_overflow"), "{engine:?}: {text:?}");
        // A log that existed stays, even when nothing is written.
        let o = common::gl_env(
            &["run", clean.to_str().unwrap(), "3", engine[0], engine[1]],
            &[("GUARDLIFT_OPTIONS", &opt)],
        );
        assert_eq!(o.status.code(), Some(0), "{engine:?}: {}", stderr(&o));
        assert!(log.exists(), "{engine:?}: the existing log was removed");
    }
}

/// `guardlift ARGS` (through [`common::target_command`]) under `ulimit -v KB`.
fn with_address_space_limit(kb: u64, args: &[&str]) -> Output {
    let gl = common::target_command(bin());
    Command::new("sh")
        .args(["-c", &format!("ulimit -v {kb}; exec \"$@\""), "sh"])
        .arg(gl.get_program())
        .args(gl.get_args())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn nul_bytes_are_not_text_for_any_command() {
    // Bounded memory: before the fix `check /dev/zero` grew without limit.
    for cmd in ["check", "fmt", "run"] {
        let o = with_address_space_limit(4_000_000, &[cmd, "/dev/zero"]);
        assert_diag(&o, "/dev/zero", "1:1", "NUL byte");
    }
    let o = gl(&["emit", "/dev/zero", "--what", "ir"]);
    assert_diag(&o, "/dev/zero", "1:1", "NUL byte");
    let p = tmp(
        "nul.glir",
        b"fn @main() -> i64 {\nentry:\n    %x = iconst.i64 1\0\n",
    );
    let ps = p.to_str().unwrap();
    assert_diag(&gl(&["check", ps]), ps, "3:22", "NUL byte");
}

#[test]
fn a_utf8_bom_is_accepted() {
    let p = tmp("bom.glir", format!("\u{feff}{MAIN}").as_bytes());
    let ps = p.to_str().unwrap();
    let o = gl(&["check", ps]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = gl(&["run", ps]);
    assert_eq!(stdout(&o).trim(), "42", "{}", stderr(&o));
    let o = gl(&["fmt", ps]);
    assert!(
        stdout(&o).starts_with("layout cpython312\n\nfn @main"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn entry_may_be_written_with_its_at_sign() {
    let p = tmp("entry.glir", MAIN.as_bytes());
    let ps = p.to_str().unwrap();
    for e in ["main", "@main"] {
        let o = gl(&["run", ps, "--entry", e]);
        assert_eq!(stdout(&o).trim(), "42", "--entry {e}: {}", stderr(&o));
    }
    let o = gl(&["run", ps, "--entry", "@nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no function @nope"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("@@"), "{}", stderr(&o));
}

#[test]
fn huge_literals_are_not_echoed_whole() {
    let big = "9".repeat(100_000);
    let text =
        format!("fn @main() -> i64 {{\nentry:\n    %x = iconst.i64 {big}\n    return %x\n}}\n");
    let p = tmp("big.glir", text.as_bytes());
    let ps = p.to_str().unwrap();
    let o = gl(&["check", ps]);
    assert_diag(&o, ps, "3:21", "more characters)");
    assert!(stderr(&o).len() < 400, "{}", stderr(&o));
    // Entry arguments likewise.
    let p2 = tmp(
        "f.glir",
        b"fn @main(%x: f64) -> f64 {\nentry:\n    return %x\n}\n",
    );
    let o = gl(&["run", p2.to_str().unwrap(), &big]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).len() < 400, "{}", stderr(&o));
}

#[test]
fn out_of_range_floats_are_rejected_as_arguments_and_literals() {
    let p = tmp(
        "f64.glir",
        b"fn @main(%x: f64) -> f64 {\nentry:\n    return %x\n}\n",
    );
    let ps = p.to_str().unwrap();
    let o = gl(&["run", ps, "1e309"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("out of range for f64"),
        "{}",
        stderr(&o)
    );
    let o = gl(&["run", ps, "inf"]);
    assert_eq!(stdout(&o).trim(), "inf", "{}", stderr(&o));
    let q = tmp(
        "lit.glir",
        b"fn @main() -> f64 {\nentry:\n    %x = fconst.f64 1e309\n    return %x\n}\n",
    );
    let qs = q.to_str().unwrap();
    assert_diag(&gl(&["check", qs]), qs, "3:21", "out of range for f64");
}

#[test]
fn boolean_options_accept_what_the_error_lists() {
    let p = tmp("opt.glir", MAIN.as_bytes());
    let ps = p.to_str().unwrap();
    for v in ["yes", "no", "true", "off", "1"] {
        let o = common::target_command(bin())
            .args(["run", ps])
            .env("GUARDLIFT_OPTIONS", format!("json={v}"))
            .output()
            .unwrap();
        assert_eq!(stdout(&o).trim(), "42", "json={v}: {}", stderr(&o));
    }
    let o = common::target_command(bin())
        .args(["run", ps])
        .env("GUARDLIFT_OPTIONS", "json=2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("yes/no") && !e.contains("expected 0 or 1"),
        "{e}"
    );
}

#[test]
fn huge_site_ids_cost_no_memory() {
    let p = programs().join("guard_site_huge_id.glir");
    let ps = p.to_str().unwrap();
    let o = gl(&["check", ps]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for engine in ["jit", "interp"] {
        // Before the fix: a 4294967296-entry site table (an abort).
        let o = with_address_space_limit(
            8_000_000,
            &["run", ps, "--engine", engine, "--mode", "recover", "--json"],
        );
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(j["result"], 32031, "{engine}");
        assert_eq!(j["reports"][0]["site"], 4294967295u64, "{engine}");
        assert_eq!(j["reports"][0]["line"], 19, "{engine}");
        assert_eq!(j["reports"][0]["count"], 34, "{engine}");
    }
    let o = gl(&["emit", ps, "--what", "ir", "--instrument"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("!site(4294967295, 19:5"),
        "{}",
        stdout(&o)
    );
}
