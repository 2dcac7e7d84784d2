//! The scenario programs of `tests/programs/scenarios/` through the
//! `guardlift` binary, in the modes that end the process: abort and trap
//! (and recover, for the exit status and JSON), on both engines. In trap
//! mode the JIT's guard executes a real trap instruction and the signal
//! handler reports; the interpreter's trap mode behaves as abort.

use std::path::PathBuf;
mod common;

use common::{exit_134, gl, gl_env, stderr};
use std::process::Output;

fn scenario(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/programs/scenarios")
        .join(format!("{name}.glir"));
    assert!(p.exists(), "{} missing", p.display());
    p
}

/// Exit status 134: killed by SIGABRT (or exited with 134).
fn assert_134(o: &Output, what: &str) {
    assert!(exit_134(o), "{what}: {:?}\n{}", o.status, stderr(o));
}

/// Runs scenario `name` with `args` on both engines in abort and trap mode,
/// and checks that each stops with status 134 and reports `want` on stderr.
fn stops_in_abort_and_trap(name: &str, args: &[&str], want: &[&str]) {
    let file = scenario(name);
    let file = file.to_str().unwrap();
    for engine in ["jit", "interp"] {
        for mode in ["abort", "trap"] {
            let mut a = vec!["run", file];
            a.extend_from_slice(args);
            a.extend_from_slice(&["--instrument", "--mode", mode, "--engine", engine]);
            let o = gl(&a);
            let what = format!("{name} {engine} {mode}");
            assert_134(&o, &what);
            let err = stderr(&o);
            for w in want {
                assert!(err.contains(w), "{what}: stderr lacks {w:?}:\n{err}");
            }
            assert_eq!(
                err.matches("==guardlift== ERROR").count(),
                1,
                "{what}: {err}"
            );
            let trapped = err.contains("trap mode: SIGILL at pc 0x");
            assert_eq!(
                trapped,
                engine == "jit" && mode == "trap",
                "{what}: only the JIT traps:\n{err}"
            );
            assert!(o.stdout.is_empty(), "{what}: no result after a violation");
        }
    }
}

#[test]
fn tagflip_nested_managers_stop_at_the_first_bad_store_attr() {
    stops_in_abort_and_trap(
        "ctxmgr_nested_tagflip",
        &["50000", "25000"],
        &[
            "dict_slot_tag",
            "at @enter 24:5 (store_attr)",
            "low bits 0b110",
            "seen 1 time(s)",
        ],
    );
}

#[test]
fn one_byte_clobber_stops_in_abort_and_trap() {
    stops_in_abort_and_trap(
        "clobber_byte_lsb",
        &[],
        &[
            "slot_clobber",
            "at @main 31:5 (store)",
            "raw store of 1 byte(s)",
        ],
    );
}

#[test]
fn adstack_overflow_stops_in_abort_and_trap() {
    stops_in_abort_and_trap(
        "grad_overflow_recover",
        &[],
        &[
            "adstack_overflow",
            "at @main 23:5 (adstack.push)",
            "len 32, capacity 32",
        ],
    );
}

#[test]
fn tagflip_nested_managers_recover_via_the_cli() {
    let file = scenario("ctxmgr_nested_tagflip");
    for engine in ["jit", "interp"] {
        let o = gl_env(
            &[
                "run",
                file.to_str().unwrap(),
                "50000",
                "25000",
                "--instrument",
                "--mode",
                "recover",
                "--json",
                "--engine",
                engine,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["result"], 1_000_100_000i64);
        let lines: Vec<(u64, u64)> = j["reports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["line"].as_u64().unwrap(), r["count"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            lines,
            [(24, 25_000), (26, 25_000), (33, 25_000), (34, 25_000)]
        );
    }
}

#[test]
fn trap_mode_honours_the_json_log_option() {
    let dir = std::env::temp_dir().join(format!("guardlift-trap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("reports.jsonl");
    let _ = std::fs::remove_file(&log);
    let opts = format!("json=1:log_path={}", log.display());
    let file = scenario("ctxmgr_nested_tagflip");
    let o = gl_env(
        &[
            "run",
            file.to_str().unwrap(),
            "100",
            "50",
            "--instrument",
            "--mode",
            "trap",
        ],
        &[("GUARDLIFT_OPTIONS", &opts)],
    );
    assert_134(&o, "trap with a JSON log");
    let text = std::fs::read_to_string(&log).unwrap();
    let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(j["kind"], "dict_slot_tag");
    assert_eq!(j["function"], "enter");
    assert_eq!(j["line"], 24);
    assert_eq!(j["op"], "store_attr");
    assert_eq!(j["value_low_bits"], "0b110");
    assert_eq!(j["trap_signal"], "SIGILL");
}

#[test]
fn trap_mode_without_violation_runs_to_the_end() {
    let file = scenario("ctxmgr_nested_tagflip");
    let o = gl_env(
        &[
            "run",
            file.to_str().unwrap(),
            "1000",
            "1000",
            "--instrument",
            "--mode",
            "trap",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "1000003000");
}
