//! `guardlift run --watch` (spec §6.1) end to end: the rogue writer of the
//! nested tag-flip scenario named with its width and a backtrace through
//! its IR caller, on the JIT and the interpreter, with dict checks and with
//! none; 1-byte and 8-byte writers told apart; a clean run reports
//! nothing; `--target aarch64` says watchpoints are unavailable and gives
//! the same result.
//!
//! Needs `perf_event_open` hardware breakpoints on the host (Linux x86_64,
//! `kernel.perf_event_paranoid` <= 2 or CAP_PERFMON): without them the
//! tests FAIL with the reason guardlift printed.

mod common;

use common::{exit_134, gl, gl_env, stderr};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

fn repo(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    assert!(p.exists(), "{} missing", p.display());
    p.to_string_lossy().into_owned()
}

fn tagflip() -> String {
    repo("../tests/programs/scenarios/ctxmgr_nested_tagflip.glir")
}

/// The JSON object on stdout; fails (not skips) when watchpoints were unavailable.
fn json_with_watch(o: &Output, what: &str) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let j: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON object ({e}):\n{out}\n{}",
            stderr(o)
        )
    });
    if j["watch"]["active"] != true {
        panic!(
            "{what}: hardware watchpoints are unavailable here: {}\n(these tests need Linux on \
             x86_64 with perf_event_open breakpoints: kernel.perf_event_paranoid <= 2, not \
             qemu-user)",
            j["watch"]
        );
    }
    j
}

fn has_line(bt: &Value, pat: &str) -> bool {
    bt.as_array().is_some_and(|a| {
        a.iter()
            .any(|l| l.as_str().is_some_and(|s| s.contains(pat)))
    })
}

#[test]
fn rogue_writer_is_named_on_both_engines_with_and_without_checks() {
    let file = tagflip();
    for engine in ["jit", "interp"] {
        for checks in [Some("dict"), None] {
            let what = format!("{engine} checks={checks:?}");
            let mut a = vec!["run", &file, "50", "10", "--watch", "object:2", "--json"];
            a.extend_from_slice(&["--engine", engine]);
            if let Some(c) = checks {
                a.extend_from_slice(&["--checks", c]);
            }
            let o = gl(&a);
            // Dict checks abort at the first bad store_attr; without checks
            // the corrupted word kills the run in the host's slow path.
            assert!(exit_134(&o), "{what}: {:?}\n{}", o.status, stderr(&o));
            let j = json_with_watch(&o, &what);
            let r = &j["reports"];
            let fw = &r[0];
            assert_eq!(fw["kind"], "foreign_write", "{what}: writer first: {r}");
            assert_eq!(fw["object_id"], 2, "{what}: the inner manager");
            assert_eq!(fw["width"], 8, "{what}: {fw}");
            assert_eq!(fw["new_low_bits"], "0b110", "{what}");
            let (old, new) = (fw["old"].as_str().unwrap(), fw["new"].as_str().unwrap());
            let (old, new) = (
                u64::from_str_radix(&old[2..], 16).unwrap(),
                u64::from_str_radix(&new[2..], 16).unwrap(),
            );
            assert_eq!((old & 7, new), (0b111, old & !1), "{what}");
            let symbol = fw["writer"]["symbol"].as_str().unwrap();
            assert!(symbol.contains("fault_clear_lsb+0x"), "{what}: {symbol}");
            let bt = &fw["backtrace"];
            assert!(has_line(bt, "fault_clear_lsb"), "{what}: {bt}");
            // The IR caller: `call @fault_clear_lsb(%inner)` in @main, the
            // same IR frame on both engines (the JIT's return address is
            // resolved through the code registry's PC → IR-site map).
            let ir = "@main 72:5 (call)";
            assert!(has_line(bt, ir), "{what}: no IR frame {ir:?}: {bt}");
            assert!(
                !has_line(bt, "@main +0x"),
                "{what}: an unresolved IR frame: {bt}"
            );
            assert_eq!(fw["function"], "main", "{what}");
            if checks.is_some() {
                assert_eq!(r[1]["kind"], "dict_slot_tag", "{what}: {r}");
                assert_eq!(r.as_array().unwrap().len(), 2, "{what}: {r}");
            } else {
                assert!(j["fatal"].as_str().unwrap().contains("corrupted"), "{what}");
            }
            // The human form goes to stderr in the same order (JIT: after the
            // JSON object of the abort hook; the fatal line is last).
            let err = stderr(&o);
            let first = err.find("==guardlift== ERROR: foreign_write").expect(&err);
            assert!(err.contains("a 8-byte store"), "{what}: {err}");
            if let Some(d) = err.find("ERROR: dict_slot_tag") {
                assert!(first < d, "{what}: writer reported first:\n{err}");
            }
        }
    }
}

#[test]
fn one_byte_and_eight_byte_writers_are_told_apart() {
    // clobber_byte_lsb: an uninstrumented 1-byte `store` in IR code.
    let byte = repo("../tests/programs/scenarios/clobber_byte_lsb.glir");
    for engine in ["jit", "interp"] {
        let o = gl_env(
            &[
                "run", &byte, "--watch", "object:1", "--json", "--engine", engine,
            ],
            &[],
        );
        let j = json_with_watch(&o, engine);
        let fw = &j["reports"][0];
        assert_eq!(fw["kind"], "foreign_write", "{engine}: {j}");
        assert_eq!(fw["width"], 1, "{engine}: {fw}");
        // The writer is IR code: the raw store at @main 31:5, on both
        // engines (the JIT's writer PC goes through the code registry).
        let site = &fw["writer"]["site"];
        assert_eq!(site["function"], "main", "{engine}: {fw}");
        assert_eq!(
            (site["line"].clone(), site["op"].clone()),
            (31.into(), "store".into()),
            "{engine}: {fw}"
        );
        assert_eq!(
            (fw["line"].clone(), fw["col"].clone()),
            (31.into(), 5.into()),
            "{engine}: the report's site is the writer's: {fw}"
        );
        let bt = &fw["backtrace"];
        assert!(has_line(bt, "@main 31:5 (store)"), "{engine}: {bt}");
        let err = stderr(&o);
        assert!(
            err.contains("IR code @main 31:5 (store)"),
            "{engine}: {err}"
        );
    }
    // The heap's rogue writer stores the whole word.
    let o = gl_env(
        &[
            "run",
            &tagflip(),
            "50",
            "10",
            "--watch",
            "object:2",
            "--json",
        ],
        &[],
    );
    assert_eq!(json_with_watch(&o, "tagflip")["reports"][0]["width"], 8);
}

#[test]
fn clean_run_with_watchpoints_reports_nothing() {
    let legit = repo("tests/watch/legit_writes.glir");
    for engine in ["jit", "interp"] {
        let o = gl_env(
            &[
                "run", &legit, "--watch", "object:1", "--json", "--engine", engine,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        let j = json_with_watch(&o, engine);
        assert_eq!(j["result"], 107, "{engine}: {j}");
        assert_eq!(j["reports"], serde_json::json!([]), "{engine}: {j}");
        let w = &j["watch"];
        assert!(
            w["hits"].as_u64().unwrap() >= 2,
            "{engine}: trapped writes: {w}"
        );
        assert_eq!(w["legitimate"], w["hits"], "{engine}: {w}");
        assert_eq!(w["armed"], 1, "{engine}: {w}");
        assert!(!stderr(&o).contains("ERROR"), "{engine}: {}", stderr(&o));
    }
    // The tag-flip program with the rogue writer never reached, every new
    // object watched: same result as without watchpoints, nothing reported.
    let plain = gl_env(&["run", &tagflip(), "40", "40"], &[]);
    let o = gl_env(&["run", &tagflip(), "40", "40", "--watch", "recent"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, plain.stdout);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn guardlift_options_watch_is_the_same_as_the_flag() {
    let o = gl_env(
        &[
            "run",
            &tagflip(),
            "50",
            "10",
            "--json",
            "--engine",
            "interp",
        ],
        &[("GUARDLIFT_OPTIONS", "watch=object:2")],
    );
    let j = json_with_watch(&o, "GUARDLIFT_OPTIONS");
    assert_eq!(j["watch"]["spec"], "object:2");
    assert_eq!(j["reports"][0]["kind"], "foreign_write");
    assert_eq!(j["reports"][0]["object_id"], 2);
}

#[test]
fn aarch64_says_unavailable_and_gives_the_same_result() {
    let legit = repo("tests/watch/legit_writes.glir");
    let plain = gl(&["run", &legit, "--target", "aarch64"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let o = gl_env(
        &["run", &legit, "--target", "aarch64", "--watch", "object:1"],
        &[],
    );
    assert_eq!(o.status.code(), plain.status.code(), "{}", stderr(&o));
    assert_eq!(o.stdout, plain.stdout);
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("guardlift: watchpoints unavailable: ") && lines[0].contains("qemu"),
        "{err}"
    );
    let o = gl_env(
        &[
            "run", &legit, "--target", "aarch64", "--watch", "object:1", "--json",
        ],
        &[],
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["watch"]["active"], false, "{j}");
    assert!(
        j["watch"]["reason"].as_str().unwrap().contains("qemu"),
        "{j}"
    );
    assert_eq!(j["result"], 107);
}

#[test]
fn bad_watch_specs_are_usage_errors() {
    for spec in ["object:", "object:0", "sample:x", "everything"] {
        let o = gl_env(&["run", &tagflip(), "1", "2", "--watch", spec], &[]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", stderr(&o));
        assert!(stderr(&o).contains("watch spec"), "{spec}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
}

/// Regression: with trap mode's handler installed after ours, a foreign
/// write reached our handler through its chain on the alternate signal
/// stack, and the unwinder's first (lazily bound) use overflowed it:
/// SIGSEGV. Now the run ends as trap mode says (134, the guard's report);
/// the interpreter, which has no trap handler, still names the writer.
#[test]
fn trap_mode_and_watchpoints_do_not_crash() {
    let byte = repo("../tests/programs/scenarios/clobber_byte_lsb.glir");
    for engine in ["jit", "interp"] {
        let o = gl_env(
            &[
                "run", &byte, "--mode", "trap", "--checks", "dict", "--watch", "object:1",
                "--engine", engine,
            ],
            &[],
        );
        let err = stderr(&o);
        assert!(exit_134(&o), "{engine}: {:?}\n{err}", o.status);
        assert!(
            err.contains("ERROR: dict_slot_tag at @main 32:5"),
            "{engine}: {err}"
        );
        // The writer, caught before the guard trapped, is printed with the
        // trap report, first, on both engines.
        let fw = err
            .find("ERROR: foreign_write at @main 31:5 (store)")
            .unwrap_or_else(|| panic!("{engine}: no writer: {err}"));
        let trap = err.find("ERROR: dict_slot_tag at @main 32:5").unwrap();
        assert!(fw < trap, "{engine}: the writer first: {err}");
        assert!(err.contains("a 1-byte store"), "{engine}: {err}");
        assert_eq!(
            err.matches("ERROR: foreign_write").count(),
            1,
            "{engine}: {err}"
        );
    }
    // The same as JSON lines in the log.
    let o = gl_env(
        &[
            "run", &byte, "--mode", "trap", "--checks", "dict", "--watch", "object:1",
        ],
        &[("GUARDLIFT_OPTIONS", "json=1")],
    );
    assert!(exit_134(&o), "{:?}\n{}", o.status, stderr(&o));
    let kinds: Vec<String> = stderr(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|j| j["kind"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(kinds, ["foreign_write", "dict_slot_tag"], "{}", stderr(&o));
}

/// Issue 28, item 12: four `dict_slot.store`s to one slot in a row
/// (`tests/watch/consecutive_slot_stores.glir`: bad, good, bad, good).
/// Each one is a write a watchpoint sees, so the JIT keeps all four
/// (Cranelift's alias analysis used to drop each store the next one
/// overwrites): the emitted code stores the slot four times on both
/// targets, and a `--watch` run traps four writes, two of them foreign
/// (old: the good word, new: the bad one), on the JIT as on the
/// interpreter.
#[test]
fn consecutive_dict_slot_stores_are_all_kept_and_all_watched() {
    let file = repo("tests/watch/consecutive_slot_stores.glir");
    for target in ["x86_64", "aarch64"] {
        let o = gl(&["emit", &file, "--what", "asm", "--target", target]);
        assert_eq!(o.status.code(), Some(0), "{target}: {}", stderr(&o));
        let asm = String::from_utf8_lossy(&o.stdout).into_owned();
        let slot_stores = (asm.lines())
            .filter(|l| {
                let l = l.trim();
                // The slot is at object - 24 (cpython312); a store has it
                // as its destination.
                match target {
                    "x86_64" => {
                        l.starts_with("mov")
                            && l.rsplit(',').next().is_some_and(|d| d.contains("-0x18(%"))
                    }
                    _ => (l.starts_with("stur ") || l.starts_with("str ")) && l.ends_with("#-24]"),
                }
            })
            .count();
        assert_eq!(
            slot_stores, 4,
            "{target}: the slot is stored 4 times:\n{asm}"
        );
    }
    let mut seen = Vec::new();
    for engine in ["interp", "jit"] {
        let o = gl(&[
            "run", &file, "--watch", "object:1", "--json", "--engine", engine,
        ]);
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        let j = json_with_watch(&o, engine);
        let w = &j["watch"];
        assert_eq!(
            (
                w["hits"].as_u64(),
                w["foreign"].as_u64(),
                w["legitimate"].as_u64()
            ),
            (Some(4), Some(2), Some(2)),
            "{engine}: {w}"
        );
        let reports = j["reports"].as_array().expect("reports").clone();
        let count: u64 = reports.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        assert_eq!(count, 2, "{engine}: two foreign writes: {reports:?}");
        for r in &reports {
            assert_eq!(r["kind"], "foreign_write", "{engine}: {r}");
            let (old, new) = (r["old"].as_str().unwrap(), r["new"].as_str().unwrap());
            let (old, new) = (
                u64::from_str_radix(&old[2..], 16).unwrap(),
                u64::from_str_radix(&new[2..], 16).unwrap(),
            );
            assert_eq!(
                (old & 7, old ^ new),
                (0b111, 1),
                "{engine}: old is the good word: {r}"
            );
        }
        seen.push((j["result"].clone(), !reports.is_empty()));
    }
    assert_eq!(seen[0], seen[1]);
}
