//! Functions compiled in pieces (the JIT's `pieces`, docs/CODEGEN.md
//! "Big functions in pieces") run exactly as compiled whole: every program
//! of the corpus (uninstrumented, in recover mode and in trap mode) and
//! every fault program, cut into pieces of three
//! instructions (`GUARDLIFT_JIT_PIECES=3`, so that nearly every function
//! with straight-line code is cut, reports, calls, faults and loops
//! included), prints what it prints whole — result, reports with their
//! sites, counts and backtraces (the first piece's frame left out), fatal
//! reports with their frames. Only heap addresses may differ (and a value
//! read from one), as between any two runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn programs(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut ps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    ps.sort();
    ps
}

/// The words of the program's `; PREFIX` header line (empty without one).
fn header(p: &Path, prefix: &str) -> Vec<String> {
    let text = std::fs::read_to_string(p).unwrap();
    (text.lines().find_map(|l| l.strip_prefix(prefix)))
        .map(|l| l.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

fn run(p: &Path, args: &[String], pieces: Option<&str>) -> Output {
    let mut c = std::process::Command::new(common::bin());
    c.arg("run")
        .arg(p)
        .args(args)
        .env_remove("GUARDLIFT_OPTIONS")
        .env_remove("GUARDLIFT_JIT_PIECES");
    if let Some(n) = pieces {
        c.env("GUARDLIFT_JIT_PIECES", n);
    }
    c.output().expect("run guardlift")
}

/// `text` with every hex number of 8 digits or more (an address) masked,
/// and the `"value"` of a report (read from the heap) dropped.
fn masked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("0x") {
        out.push_str(&rest[..at]);
        let digits = rest[at + 2..]
            .bytes()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if digits >= 8 {
            out.push_str("ADDR");
        } else {
            out.push_str(&rest[at..at + 2 + digits]);
        }
        rest = &rest[at + 2 + digits..];
    }
    out.push_str(rest);
    // `"value":"0x56"` / `(value 0x56)`: the low byte of a heap pointer.
    let mut v = String::new();
    for line in out.lines() {
        let mut l = line.to_string();
        for (open, close) in [("\"value\":\"", '"'), ("(value ", ')')] {
            if let Some(s) = l.find(open) {
                if let Some(e) = l[s + open.len()..].find(close) {
                    l.replace_range(s + open.len()..s + open.len() + e, "V");
                }
            }
        }
        v.push_str(&l);
        v.push('\n');
    }
    v
}

fn same(p: &Path, args: &[String]) -> Result<(), String> {
    let whole = run(p, args, Some("0"));
    let cut = run(p, args, Some("3"));
    let what = format!("{} {}", p.display(), args.join(" "));
    if whole.status.code() != cut.status.code() {
        return Err(format!(
            "{what}: exit {:?} whole, {:?} in pieces\n{}",
            whole.status.code(),
            cut.status.code(),
            String::from_utf8_lossy(&cut.stderr)
        ));
    }
    for (a, b, stream) in [
        (&whole.stdout, &cut.stdout, "stdout"),
        (&whole.stderr, &cut.stderr, "stderr"),
    ] {
        let (a, b) = (
            masked(&String::from_utf8_lossy(a)),
            masked(&String::from_utf8_lossy(b)),
        );
        if a != b {
            return Err(format!(
                "{what}: {stream} differs\n--- whole\n{a}\n--- in pieces\n{b}"
            ));
        }
    }
    Ok(())
}

#[test]
fn every_program_runs_the_same_in_pieces() {
    let progs = programs("../tests/programs");
    assert!(progs.len() >= 53, "{} programs", progs.len());
    let mut failures = Vec::new();
    let mut backtraces = 0;
    for p in &progs {
        let args = header(p, "; args:");
        for flags in [
            &["--json"][..],
            &["--json", "--instrument", "--mode", "recover"],
            &["--json", "--instrument", "--mode", "trap"],
        ] {
            let mut a = args.clone();
            a.extend(flags.iter().map(|s| s.to_string()));
            if let Err(e) = same(p, &a) {
                failures.push(e);
            }
            let out = run(p, &a, Some("3"));
            backtraces += String::from_utf8_lossy(&out.stdout)
                .matches("\"backtrace\":[\"@")
                .count();
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(backtraces >= 20, "reports with backtraces: {backtraces}");
}

#[test]
fn every_fault_program_reports_the_same_in_pieces() {
    let progs = programs("../tests/programs/faults");
    assert!(progs.len() >= 3, "{} programs", progs.len());
    let failures: Vec<String> = (progs.iter())
        .filter_map(|p| same(p, &header(p, "; run:")).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A bad piece size is an error that names the variable, never a panic.
#[test]
fn a_bad_piece_size_is_a_clear_error() {
    let p = &programs("../tests/programs")[0];
    let out = std::process::Command::new(common::bin())
        .arg("run")
        .arg(p)
        .args(header(p, "; args:"))
        .env("GUARDLIFT_JIT_PIECES", "lots")
        .output()
        .expect("run guardlift");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("GUARDLIFT_JIT_PIECES=lots"), "{err}");
}
