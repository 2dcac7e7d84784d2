//! Faults read the same on every engine (issue 16): each program of
//! `tests/programs/faults/` (its `; run: ARGS FLAGS` line says how to run
//! it) runs on the interpreter, the host JIT and the x86_64 and aarch64
//! objects, and every engine prints what the interpreter, the
//! oracle, prints — human text and the `--json` object — but for what is
//! legitimately native: the faulting PC, and where the stack ran out (a
//! stack overflow's address). The exit status is 134 everywhere.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// Every engine and target but the interpreter, as `run` flags.
const OTHERS: [[&str; 2]; 3] = [
    ["--engine", "jit"],
    ["--target", "x86_64"],
    ["--target", "aarch64"],
];

fn exit_code(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    o.status
        .code()
        .or_else(|| o.status.signal().map(|s| 128 + s))
        .expect("an exit status or a signal")
}

fn programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs/faults");
    let mut ps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    ps.sort();
    assert!(ps.len() >= 3, "the fault programs: {ps:?}");
    ps
}

/// The words of the program's `; run:` line.
fn run_line(p: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(p).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("; run:"))
        .unwrap_or_else(|| panic!("{}: no `; run:` line", p.display()));
    line.split_whitespace().map(String::from).collect()
}

fn run(p: &Path, args: &[String], flags: &[&str]) -> Output {
    common::target_command(env!("CARGO_BIN_EXE_guardlift"))
        .arg("run")
        .arg(p)
        .args(args)
        .args(flags)
        .env_remove("GUARDLIFT_OPTIONS")
        .output()
        .expect("run guardlift")
}

/// `text` with the first hex number after each `pat` removed with `pat`.
fn drop_hex_after(text: &str, pat: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(pat) {
        out.push_str(&rest[..i]);
        rest = rest[i + pat.len()..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// `text` with every hex number of 9 digits or more (a heap address: an
/// object, a managed-dict word) as `0xADDR`: each engine's heap lies
/// elsewhere.
fn mask_addresses(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i + 2]);
        rest = &rest[i + 2..];
        let n = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_hexdigit())
                .len();
        if n >= 9 {
            out.push_str("ADDR");
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

/// The human text without what is native: `, pc 0x…` (the interpreter
/// has no PC), a stack overflow's ` at address 0x…`, heap addresses.
fn human(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stderr);
    let text = drop_hex_after(&text, ", pc 0x");
    text.lines()
        .map(|l| match l.strip_prefix("    the stack is exhausted (") {
            Some(rest) => format!(
                "    the stack is exhausted ({}",
                drop_hex_after(rest, " at address 0x")
            ),
            None => l.to_string(),
        })
        .map(|l| mask_addresses(&l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `--json` object without what is native (a fault's `pc`, a stack
/// overflow's `address`, heap addresses) and without `engine` and `target` (which name the
/// engine).
fn json(o: &Output) -> serde_json::Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let mut j: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let obj = j.as_object_mut().expect("a JSON object");
    obj.remove("engine");
    obj.remove("target");
    for r in j["reports"].as_array_mut().expect("reports") {
        let r = r.as_object_mut().expect("a report object");
        if r["kind"] == "host_fault" && r["signal"].is_null() {
            // A host function's fault (no signal, no PC): the heap's
            // addresses in the object and the message are the engine's.
            for k in ["object", "message"] {
                let v = r[k].as_str().map(mask_addresses).expect(k);
                r.insert(k.into(), v.into());
            }
        } else if r["kind"] == "host_fault" || r["kind"] == "stack_overflow" {
            assert!(r.remove("pc").is_some(), "{r:?}");
        }
        if r["kind"] == "host_fault" && r["address"].is_string() {
            // A wild address derived from a heap pointer is the engine's
            // (wild_offset_near_heap.glir); a small one stays exact.
            let v = r["address"].as_str().map(mask_addresses).expect("address");
            r.insert("address".into(), v.into());
        }
        if r["kind"] == "stack_overflow" {
            r.insert("address".into(), serde_json::Value::Null);
        }
    }
    j
}

#[test]
fn every_engine_prints_the_interpreters_fault_reports() {
    for p in programs() {
        let args = run_line(&p);
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let oracle = run(&p, &args, &["--engine", "interp"]);
        assert_eq!(exit_code(&oracle), 134, "{name}: {}", human(&oracle));
        let oracle_json = run(&p, &args, &["--engine", "interp", "--json"]);
        assert_eq!(exit_code(&oracle_json), 134, "{name}");
        let want = (human(&oracle), json(&oracle_json));
        assert!(
            want.0.contains("    #0 @"),
            "{name}: a backtrace: {}",
            want.0
        );
        for flags in OTHERS {
            let o = run(&p, &args, &flags);
            assert_eq!(exit_code(&o), 134, "{name} {flags:?}: {}", human(&o));
            let oj = run(&p, &args, &[flags[0], flags[1], "--json"]);
            assert_eq!(exit_code(&oj), 134, "{name} {flags:?}");
            let (h, j) = (human(&o), json(&oj));
            assert_eq!(h, want.0, "{name} {flags:?}: human form");
            assert_eq!(j, want.1, "{name} {flags:?}: JSON");
        }
    }
}
