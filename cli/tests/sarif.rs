//! `run --sarif OUT` (issue 16): the reports as a SARIF 2.1.0 log that
//! validates against the official schema (`tests/data/`, see its README),
//! on every engine and target, in every mode that ends the process through
//! guardlift's own code (abort, recover; trap and host faults where the
//! report comes back to the host).

mod common;

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Output;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_guardlift")
}

fn exit_code(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    o.status
        .code()
        .or_else(|| o.status.signal().map(|s| 128 + s))
        .expect("an exit status or a signal")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("guardlift-sarif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(&path).expect("the vendored SARIF schema");
    // The official schema's `run.language` pattern has a stray `]`, a
    // literal in ECMAScript's legacy syntax but rejected by the validator's
    // check of the schema itself; escape it (same meaning) in memory only.
    let text = text.replace(
        r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#,
        r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#,
    );
    let schema: Json = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles")
}

/// Runs `guardlift run FILE ARGS --sarif OUT`; returns the exit status and
/// the SARIF log, checked against the schema.
fn run_sarif(file: &Path, args: &[&str], what: &str) -> (i32, Json) {
    let out = tmp(&format!("{}.sarif", what.replace([' ', '-'], "_")));
    let _ = std::fs::remove_file(&out);
    let o = common::target_command(bin())
        .arg("run")
        .arg(file)
        .args(args)
        .arg("--sarif")
        .arg(&out)
        .env_remove("GUARDLIFT_OPTIONS")
        .output()
        .expect("run guardlift");
    let err = String::from_utf8_lossy(&o.stderr);
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("{what}: no SARIF file ({e}); stderr: {err}"));
    let log: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
    let v = validator();
    let errors: Vec<String> = v.iter_errors(&log).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{what}: invalid SARIF: {errors:?}\n{text}"
    );
    (exit_code(&o), log)
}

fn results(log: &Json) -> &Vec<Json> {
    log["runs"][0]["results"].as_array().expect("results array")
}

fn check_result(r: &Json, rule: &str, function: &str, line: u64, col: u64, what: &str) {
    assert_eq!(r["ruleId"], rule, "{what}: {r}");
    assert_eq!(r["level"], "error", "{what}");
    let loc = &r["locations"][0];
    assert_eq!(
        loc["physicalLocation"]["region"]["startLine"], line,
        "{what}: {r}"
    );
    assert_eq!(
        loc["physicalLocation"]["region"]["startColumn"], col,
        "{what}: {r}"
    );
    assert_eq!(loc["logicalLocations"][0]["name"], function, "{what}");
    assert!(
        loc["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .is_some_and(|u| u.ends_with(".glir")),
        "{what}: {r}"
    );
}

#[test]
fn reports_validate_on_every_engine_target_and_mode() {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs/guard_adstack_overflow.glir");
    let engines: [&[&str]; 4] = [
        &["--engine", "jit"],
        &["--engine", "interp"],
        &["--target", "x86_64"],
        &["--target", "aarch64"],
    ];
    for engine in engines {
        for (mode, code) in [("recover", 1), ("abort", 134), ("trap", 134)] {
            if engine == ["--engine", "jit"] && mode == "trap" {
                // The host JIT's trap handler ends the process from a signal
                // handler: no SARIF there (docs/INSTRUMENTATION.md, SARIF).
                continue;
            }
            let what = format!("{} {mode}", engine.join(" "));
            let mut args = engine.to_vec();
            args.extend(["--mode", mode]);
            let (status, log) = run_sarif(&p, &args, &what);
            assert_eq!(status, code, "{what}");
            assert_eq!(log["version"], "2.1.0");
            let rs = results(&log);
            assert_eq!(rs.len(), 1, "{what}: {log}");
            check_result(&rs[0], "adstack_overflow", "main", 19, 5, &what);
            let props = &rs[0]["properties"];
            assert_eq!(props["capacity"], 32, "{what}");
            assert_eq!(props["len"], 32, "{what}");
            let count = if mode == "recover" { 34 } else { 1 };
            assert_eq!(props["count"], count, "{what}");
            // The rule the result names is described in the run's rules.
            let i = rs[0]["ruleIndex"].as_u64().expect("ruleIndex") as usize;
            assert_eq!(
                log["runs"][0]["tool"]["driver"]["rules"][i]["id"],
                "adstack_overflow"
            );
        }
    }
}

/// A report, then a wild load: the interpreter's `host_fault` ends the run
/// in the CLI, which writes both reports.
#[test]
fn a_report_then_an_interpreter_fault_are_both_in_the_log() {
    let p = tmp("wild.glir");
    std::fs::write(
        &p,
        include_str!("../../tests/programs/faults/report_then_wild_load.glir"),
    )
    .unwrap();
    // The interpreter's fault, and the object paths' (the signal comes back
    // to the host over the protocol).
    for engine in [
        ["--engine", "interp"],
        ["--target", "x86_64"],
        ["--target", "aarch64"],
    ] {
        let what = format!("{} wild", engine.join(" "));
        let (status, log) = run_sarif(
            &p,
            &["16", "--mode", "recover", engine[0], engine[1]],
            &what,
        );
        assert_eq!(status, 134, "{what}");
        let rs = results(&log);
        assert_eq!(rs.len(), 2, "{what}: {log}");
        check_result(&rs[0], "adstack_overflow", "main", 5, 5, &what);
        check_result(&rs[1], "host_fault", "main", 6, 5, &what);
        assert_eq!(rs[1]["properties"]["op"], "load", "{what}");
    }
}

/// The validator used above rejects what the schema forbids (so a passing
/// test means something): a region starting at line 0.
#[test]
fn the_validator_rejects_an_invalid_log() {
    let bad = serde_json::json!({
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{
            "message": {"text": "m"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a"},
                "region": {"startLine": 0}}}],
        }]}],
    });
    assert!(!validator().is_valid(&bad));
}

/// Issue 28 item 10: the rules are derived from the one list of report
/// kinds, so results of the lifetime and bounds kinds name a rule too
/// (before, `double_free` and `invalid_free` results had no `ruleIndex`),
/// and every kind has one rule.
#[test]
fn every_result_has_a_rule_index_and_every_kind_a_rule() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/programs/lifetime_double_invalid_free.glir");
    for engine in [
        ["--engine", "jit"],
        ["--engine", "interp"],
        ["--target", "aarch64"],
    ] {
        let what = format!("{} frees", engine.join(" "));
        let (status, log) = run_sarif(
            &p,
            &[
                "5",
                "--instrument",
                "--mode",
                "recover",
                engine[0],
                engine[1],
            ],
            &what,
        );
        assert_eq!(status, 1, "{what}");
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules");
        let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
        for kind in [
            "dict_slot_tag",
            "adstack_overflow",
            "adstack_underflow",
            "slot_clobber",
            "use_after_free",
            "double_free",
            "invalid_free",
            "attr_out_of_bounds",
            "foreign_write",
            "host_fault",
            "stack_overflow",
        ] {
            assert_eq!(
                ids.iter().filter(|&&i| i == kind).count(),
                1,
                "{kind}: {ids:?}"
            );
        }
        let rs = results(&log);
        let kinds: Vec<&str> = rs.iter().filter_map(|r| r["ruleId"].as_str()).collect();
        assert_eq!(kinds, ["double_free", "invalid_free"], "{what}");
        for r in rs {
            let i = r["ruleIndex"]
                .as_u64()
                .unwrap_or_else(|| panic!("{what}: {r}")) as usize;
            assert_eq!(rules[i]["id"], r["ruleId"], "{what}");
        }
    }
}
