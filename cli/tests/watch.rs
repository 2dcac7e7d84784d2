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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
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
                // The host's crash, reported where the slow path was called.
                let hf = &r[1];
                assert_eq!(hf["kind"], "host_fault", "{what}: {r}");
                assert_eq!(hf["op"], "store_attr", "{what}: {hf}");
                assert_eq!(hf["object_id"], 2, "{what}: {hf}");
                assert!(
                    hf["message"].as_str().unwrap().contains("corrupted"),
                    "{what}"
                );
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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn clean_run_with_watchpoints_reports_nothing() {
    let legit = repo("tests/watch/legit_writes.glir");
    for engine in ["jit", "interp"] {
        // Instrumented: its stores are guardlift's own (spec §6.1).
        let o = gl_env(
            &[
                "run", &legit, "--watch", "object:1", "--json", "--engine", engine, "--checks",
                "dict",
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
    // Only the end-of-run summary.
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("guardlift: watch recent: ")
            && lines[0].contains("allocations watched, ")
            && lines[0].contains(" foreign)"),
        "{err}"
    );
}

/// Issue 28 item 12b / spec §6.1: only guardlift's runtime and
/// instrumented JIT code are guardlift's own writers: the same well-formed
/// `dict_slot.store` by an uninstrumented module is a `foreign_write`
/// naming the IR store, on both engines.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn uninstrumented_ir_code_is_a_foreign_writer() {
    let legit = repo("tests/watch/legit_writes.glir");
    for engine in ["jit", "interp"] {
        let o = gl_env(
            &[
                "run", &legit, "--watch", "object:1", "--json", "--engine", engine,
            ],
            &[],
        );
        let j = json_with_watch(&o, engine);
        assert_eq!(j["result"], 107, "{engine}: {j}");
        let r = j["reports"].as_array().unwrap();
        assert!(!r.is_empty(), "{engine}: {j}");
        for fw in r {
            assert_eq!(fw["kind"], "foreign_write", "{engine}: {fw}");
            assert_eq!(fw["object_id"], 1, "{engine}: {fw}");
            assert_eq!(fw["new_low_bits"].as_str().unwrap().len(), 5, "{fw}");
            assert_eq!(
                fw["writer"]["site"]["op"], "dict_slot.store",
                "{engine}: {fw}"
            );
        }
        // obj_dictify (the runtime) stays legitimate.
        assert!(j["watch"]["legitimate"].as_u64().unwrap() >= 1, "{j}");
    }
}

fn two_objects() -> String {
    repo("tests/watch/two_objects.glir")
}

/// (kind, function, line, count, object_id, objects) of each report.
fn report_objects(j: &Value) -> Vec<(String, String, u64, u64, u64, Value)> {
    j["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["function"].as_str().unwrap().to_string(),
                r["line"].as_u64().unwrap(),
                r["count"].as_u64().unwrap(),
                r["object_id"].as_u64().unwrap_or(0),
                r["objects"].clone(),
            )
        })
        .collect()
}

/// Issue 29 item 6 / spec §6: a deduplicated report that saw several
/// objects lists them (`objects`, first seen first, with counts;
/// `object_id` stays the first) — dict, bounds and lifetime kinds, the
/// same on the interpreter, the JIT and the aarch64 object target, in
/// JSON, the human form and SARIF.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn several_objects_at_one_site_are_listed_on_every_engine() {
    let file = two_objects();
    let dir = std::env::temp_dir().join(format!("gl-watch-objects-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let objs = |l: &[(u64, u64)]| -> Value {
        l.iter()
            .map(|&(id, n)| serde_json::json!({"object_id": id, "count": n}))
            .collect()
    };
    let want = vec![
        (
            "dict_slot_tag".to_string(),
            "get".to_string(),
            15,
            3,
            1,
            objs(&[(1, 2), (2, 1)]),
        ),
        (
            "attr_out_of_bounds".into(),
            "far".into(),
            27,
            2,
            3,
            objs(&[(3, 1), (4, 1)]),
        ),
        (
            "use_after_free".into(),
            "get".into(),
            15,
            3,
            5,
            objs(&[(5, 1), (6, 2)]),
        ),
    ];
    for engine in [
        ["--engine", "interp"],
        ["--engine", "jit"],
        ["--target", "aarch64"],
    ] {
        let what = engine.join(" ");
        let sarif = dir.join(format!("{}.sarif", engine[1]));
        let sarif_s = sarif.to_string_lossy().into_owned();
        let mut a = vec![
            "run",
            &file,
            "--checks",
            "dict,bounds,lifetime",
            "--mode",
            "recover",
            "--json",
            "--sarif",
            &sarif_s,
        ];
        a.extend_from_slice(&engine);
        let o = gl(&a);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        let j: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["result"], 0, "{what}: {j}");
        assert_eq!(report_objects(&j), want, "{what}: {j}");
        // The human form (stderr) lists them too.
        let err = stderr(&o);
        assert!(
            err.contains("objects seen here: id 1 (2 time(s)), id 2 (1 time(s))"),
            "{what}: {err}"
        );
        let s: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
        let results = s["runs"][0]["results"].as_array().unwrap();
        assert_eq!(
            results[0]["properties"]["objects"], want[0].5,
            "{what}: {s}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 6 for `foreign_write`: one writing call site corrupting two
/// watched objects is one report listing both, on both engines.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn one_writer_of_two_watched_objects_lists_both() {
    let file = two_objects();
    for engine in ["jit", "interp"] {
        let o = gl(&[
            "run",
            &file,
            "--checks",
            "dict,bounds,lifetime",
            "--mode",
            "recover",
            "--json",
            "--watch",
            "object:1+2",
            "--engine",
            engine,
        ]);
        let j = json_with_watch(&o, engine);
        let fw = &j["reports"][0];
        assert_eq!(fw["kind"], "foreign_write", "{engine}: {j}");
        assert_eq!(
            (
                fw["function"].clone(),
                fw["line"].clone(),
                fw["count"].clone()
            ),
            ("corrupt".into(), 21.into(), 2.into()),
            "{engine}: {fw}"
        );
        assert_eq!(fw["object_id"], 1, "{engine}: {fw}");
        assert_eq!(
            fw["objects"],
            serde_json::json!([{"object_id": 1, "count": 1}, {"object_id": 2, "count": 1}]),
            "{engine}: {fw}"
        );
        assert_eq!(j["watch"]["watched"], 2, "{engine}: {j}");
    }
}

/// Issue 29 item 4: `sample:K@P` watches exactly the ids ≡ P (mod K);
/// without `@P` the phase drawn is printed (stderr and JSON) and the run
/// repeats with it; the end-of-run summary counts the watched objects and
/// those freed unwritten.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn sample_phase_is_given_or_printed_and_repeatable() {
    let many = repo("tests/watch/many_objects.glir");
    let o = gl(&["run", &many, "--watch", "sample:3@2", "--json"]);
    let j = json_with_watch(&o, "sample:3@2");
    assert_eq!(j["result"], 10);
    let w = &j["watch"];
    assert_eq!(w["spec"], "sample:3@2", "{w}");
    assert_eq!(w["phase"], 2, "{w}");
    // ids 2, 5, 8 of 1..=10.
    assert_eq!(
        (w["watched"].clone(), w["allocations"].clone()),
        (3.into(), 10.into()),
        "{w}"
    );
    assert_eq!(w["freed_unwritten"], 3, "{w}");
    let err = stderr(&o);
    assert!(!err.contains("drawn at random"), "{err}");
    assert!(
        err.contains("guardlift: watch sample:3@2: 3 of 10 allocations watched, 3 freed unwritten"),
        "{err}"
    );
    // No phase: drawn, printed, repeatable.
    let o = gl(&["run", &many, "--watch", "sample:4", "--json"]);
    let j = json_with_watch(&o, "sample:4");
    let p = j["watch"]["phase"].as_u64().expect("phase in JSON");
    assert!(p < 4, "{j}");
    let err = stderr(&o);
    let line = format!(
        "guardlift: watch sample:4: phase {p} (drawn at random; repeat with --watch sample:4@{p})"
    );
    assert!(
        err.lines().any(|l| l == line),
        "{line}
{err}"
    );
    let n = (1..=10u64).filter(|i| i % 4 == p).count();
    assert_eq!(j["watch"]["watched"], n, "{j}");
    let spec = format!("sample:4@{p}");
    let again = gl(&["run", &many, "--watch", &spec, "--json"]);
    let k = json_with_watch(&again, &spec);
    assert_eq!(k["watch"]["phase"], p);
    assert_eq!(k["watch"]["watched"], j["watch"]["watched"]);
    assert_eq!(k["watch"]["freed_unwritten"], j["watch"]["freed_unwritten"]);
    for bad in ["sample:3@3", "sample:3@x", "sample:3@"] {
        let o = gl(&["run", &many, "--watch", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("watch spec"), "{bad}");
    }
}

#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
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
    // On an aarch64 host `--target aarch64` is native: a separately
    // linked program, out of reach of guardlift's runtime.
    let why = if cfg!(target_arch = "aarch64") {
        "separately linked program"
    } else {
        "qemu"
    };
    assert!(
        lines[0].starts_with("guardlift: watchpoints unavailable: ") && lines[0].contains(why),
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
    assert!(j["watch"]["reason"].as_str().unwrap().contains(why), "{j}");
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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
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
/// targets, and a `--watch` run traps four writes, on the JIT as on the
/// interpreter. The module is uninstrumented, so every one of them is
/// foreign (spec §6.1: only the runtime and instrumented JIT code are
/// guardlift's own), each with the word it replaced: the good and the bad
/// word alternate.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
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
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let j = json_with_watch(&o, engine);
        let w = &j["watch"];
        assert_eq!(
            (
                w["hits"].as_u64(),
                w["foreign"].as_u64(),
                w["legitimate"].as_u64()
            ),
            (Some(4), Some(4), Some(0)),
            "{engine}: {w}"
        );
        let reports = j["reports"].as_array().expect("reports").clone();
        let count: u64 = reports.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        assert_eq!(count, 4, "{engine}: four foreign writes: {reports:?}");
        let mut lines = Vec::new();
        for r in &reports {
            lines.push(r["line"].as_u64().unwrap());
            assert_eq!(r["kind"], "foreign_write", "{engine}: {r}");
            let (old, new) = (r["old"].as_str().unwrap(), r["new"].as_str().unwrap());
            let (old, new) = (
                u64::from_str_radix(&old[2..], 16).unwrap(),
                u64::from_str_radix(&new[2..], 16).unwrap(),
            );
            // Lines 15 and 17 write the bad word over the good one, 16 and
            // 18 the good word back.
            let bad_write = r["line"] == 15 || r["line"] == 17;
            assert_eq!(
                (old & 7, old ^ new),
                (if bad_write { 0b111 } else { 0b110 }, 1),
                "{engine}: old is the word before the write: {r}"
            );
        }
        lines.sort_unstable();
        assert_eq!(lines, [15, 16, 17, 18], "{engine}: one report per store");
        seen.push((j["result"].clone(), !reports.is_empty()));
    }
    assert_eq!(seen[0], seen[1]);
}

/// The IR frames of a backtrace (`@fn L:C (op)`), without addresses.
fn ir_frames(bt: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for l in bt
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let f = match l.split_once(' ') {
            Some((addr, rest)) if addr.starts_with("0x") => rest,
            _ => l,
        };
        let ir = f
            .strip_prefix('@')
            .and_then(|r| r.split_once(' '))
            .is_some_and(|(_, lc)| {
                lc.split_once(' ').is_some_and(|(lc, op)| {
                    lc.split_once(':')
                        .is_some_and(|(l, c)| l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok())
                        && op.starts_with('(')
                        && op.ends_with(')')
                })
            });
        if ir {
            out.push(f.to_string());
        }
    }
    out
}

/// Issue 29 item 5: a rogue host call three IR calls below the entry
/// (`tests/watch/nested_writer.glir`: @main → @outer → @middle → @inner →
/// `@fault_clear_lsb`). The writer's backtrace has every IR frame, innermost
/// first, at its call's `L:C` — the same four on the JIT (return addresses
/// walked through the JIT frames with Cranelift's registered unwind info,
/// resolved through the code registry) and the interpreter (its own
/// frames). On the JIT the walk goes on below the entry into the host: the
/// JIT's call and the run session that made it.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn a_writer_three_ir_calls_deep_has_every_ir_frame_on_both_engines() {
    let file = repo("tests/watch/nested_writer.glir");
    let want = [
        "@inner 14:5 (call)",
        "@middle 22:5 (call)",
        "@outer 30:5 (call)",
        "@main 41:5 (call)",
    ];
    for engine in ["jit", "interp"] {
        let o = gl(&[
            "run", &file, "--watch", "object:1", "--json", "--engine", engine,
        ]);
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let j = json_with_watch(&o, engine);
        assert_eq!(
            j["result"], 616,
            "{engine}: 16 + the cleared tag (6) * 100: {j}"
        );
        let r = j["reports"].as_array().unwrap();
        assert_eq!(r.len(), 1, "{engine}: {j}");
        let fw = &r[0];
        assert_eq!(fw["kind"], "foreign_write", "{engine}: {fw}");
        assert_eq!(fw["object_id"], 1, "{engine}: {fw}");
        assert_eq!(
            (fw["function"].clone(), fw["line"].clone()),
            ("inner".into(), 14.into()),
            "{engine}: the report's site is the innermost IR call: {fw}"
        );
        let bt = &fw["backtrace"];
        assert_eq!(ir_frames(bt), want, "{engine}: {bt:#}");
        let lines: Vec<&str> = bt
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            lines[0].contains("write_volatile"),
            "{engine}: the writer first: {bt:#}"
        );
        if engine == "jit" {
            // Below the entry: the host's frames, as gdb shows them.
            let main = lines.iter().position(|l| l.ends_with(want[3])).unwrap();
            let below = &lines[main + 1..];
            for host in ["guardlift_jit::", "guardlift_session::host::execute"] {
                assert!(
                    below.iter().any(|l| l.contains(host)),
                    "{engine}: no host frame {host:?} below the JIT entry: {bt:#}"
                );
            }
        }
        // The human form lists the same frames, in the same order.
        let err = stderr(&o);
        let at: Vec<usize> = want
            .iter()
            .map(|f| {
                err.find(f)
                    .unwrap_or_else(|| panic!("{engine}: {f}: {err}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{engine}: {err}");
    }
}

/// Issue 29 item 5, the call path: one host writer (the same PC) writing
/// one watched object from two IR call paths (`tests/watch/two_paths.glir`:
/// @main → @first → `@fault_clear_lsb`, then @main → @second → the same).
/// Two reports, each with its own IR frames, on both engines (the second
/// used to carry the first's backtrace: writers were interned by PC and
/// object id alone).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn one_writer_reached_by_two_call_paths_has_each_path_s_backtrace() {
    let file = repo("tests/watch/two_paths.glir");
    for engine in ["jit", "interp"] {
        let o = gl(&[
            "run", &file, "--watch", "object:1", "--json", "--engine", engine,
        ]);
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        let j = json_with_watch(&o, engine);
        let paths: Vec<(String, u64, Vec<String>)> = j["reports"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["op"] == "call")
            .map(|r| {
                (
                    r["function"].as_str().unwrap().to_string(),
                    r["count"].as_u64().unwrap(),
                    ir_frames(&r["backtrace"]),
                )
            })
            .collect();
        let path = |f: &str, l: u32, m: u32| {
            (
                f.to_string(),
                1,
                vec![format!("@{f} {l}:5 (call)"), format!("@main {m}:5 (call)")],
            )
        };
        assert_eq!(
            paths,
            [path("first", 13, 27), path("second", 19, 30)],
            "{engine}: {j}"
        );
    }
}

/// The hunt as a user types it: `guardlift` found through `PATH` (the
/// loader then names the program by its bare `argv[0]`). The writer is
/// still `symbol+0xOFF` (the symbol table read through /proc/self/exe; it
/// used to lose the offset: the bare name is no path from the run's
/// directory).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn the_writer_keeps_its_offset_when_guardlift_is_found_through_path() {
    let dir = std::path::Path::new(common::bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = common::target_command("guardlift")
        .args([
            "run",
            &tagflip(),
            "50",
            "10",
            "--watch",
            "object:2",
            "--json",
        ])
        .env("PATH", path)
        .env_remove("GUARDLIFT_OPTIONS")
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run guardlift through PATH");
    let j = json_with_watch(&o, "through PATH");
    let fw = &j["reports"][0];
    assert_eq!(fw["kind"], "foreign_write", "{j}");
    let symbol = fw["writer"]["symbol"].as_str().unwrap();
    assert!(symbol.contains("fault_clear_lsb+0x"), "{symbol}");
    assert!(
        stderr(&o).contains("writer: guardlift_runtime::heap::Heap::fault_clear_lsb+0x"),
        "{}",
        stderr(&o)
    );
}

/// Issue 29 item 1 on the command line (`tests/watch/recycled_address.glir`,
/// `quarantine_mb=0`): watched object 2 is written by a rogue host call,
/// freed, and its address taken by a new object before anything is
/// reported. The `foreign_write` names object 2 (JSON `object_id`, the
/// human line and trailer) — reported at the end of the run (no checks)
/// and when the dict check's report about the new object, at the same
/// address, comes first (`--checks dict`). On the JIT the new object lands
/// at the freed address (the run's result is 1); the interpreter's own
/// allocations take that block first, so there the case is only the
/// freed-object one.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn foreign_write_keeps_its_object_id_after_the_address_is_reused() {
    let file = repo("tests/watch/recycled_address.glir");
    for engine in ["jit", "interp"] {
        for checks in [None, Some("dict")] {
            let what = format!("{engine} checks={checks:?}");
            let mut a = vec![
                "run", &file, "--watch", "object:2", "--json", "--engine", engine,
            ];
            if let Some(c) = checks {
                a.extend_from_slice(&["--checks", c, "--mode", "recover"]);
            }
            let o = gl_env(&a, &[("GUARDLIFT_OPTIONS", "quarantine_mb=0")]);
            assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
            let j = json_with_watch(&o, &what);
            let reused = j["result"] == 1;
            if engine == "jit" {
                assert!(reused, "{what}: the freed address was not reused: {j}");
            }
            let r = j["reports"].as_array().unwrap();
            let fw = &r[0];
            assert_eq!(fw["kind"], "foreign_write", "{what}: {j}");
            assert_eq!(fw["object_id"], 2, "{what}: {fw}");
            assert_eq!(fw["function"], "main", "{what}: {fw}");
            assert_eq!(fw["line"], 23, "{what}: {fw}");
            if reused && checks.is_some() {
                let d = &r[1];
                assert_eq!(d["kind"], "dict_slot_tag", "{what}: {j}");
                assert_eq!(d["object"], fw["object"], "{what}: the same address: {j}");
                assert!(
                    d["object_id"].as_u64().unwrap() > 2,
                    "{what}: the new object: {j}"
                );
                assert_eq!(r.len(), 2, "{what}: {j}");
            } else {
                assert_eq!(r.len(), 1, "{what}: {j}");
            }
            let err = stderr(&o);
            let human = err
                .split("==guardlift== ERROR: ")
                .find(|b| b.starts_with("foreign_write"))
                .unwrap_or_else(|| panic!("{what}: {err}"));
            assert!(human.contains("(object_id 2)"), "{what}: {human}");
            assert!(human.contains("object id 2,"), "{what}: trailer: {human}");
            assert!(!human.contains("object id 3"), "{what}: {human}");
        }
    }
}

/// Issue 29 item 3 on the command line (`tests/watch/write_after_free.glir`):
/// each object's word is written (malformed) by IR code right after the
/// object is freed. A slot stops being watched the moment its object is
/// freed: with `object:3` and with `recent` (every object armed), nothing
/// traps and nothing is reported, and each watched object counts as freed
/// unwritten, on both engines.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn a_write_right_after_the_free_is_never_trapped() {
    let file = repo("tests/watch/write_after_free.glir");
    for engine in ["jit", "interp"] {
        for (spec, watched) in [("object:3", 1), ("recent", 10)] {
            let what = format!("{engine} {spec}");
            let o = gl(&["run", &file, "--watch", spec, "--json", "--engine", engine]);
            assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
            let j = json_with_watch(&o, &what);
            assert_eq!(j["result"], 10, "{what}: {j}");
            assert_eq!(j["reports"], serde_json::json!([]), "{what}: {j}");
            let w = &j["watch"];
            assert_eq!(
                (
                    w["watched"].as_u64(),
                    w["freed_unwritten"].as_u64(),
                    w["hits"].as_u64()
                ),
                (Some(watched), Some(watched), Some(0)),
                "{what}: {w}"
            );
        }
    }
}

/// Issue 29 ("what silence means"): the hunt's usual run — `--checks
/// dict`, abort mode — watching the wrong object (`object:1`, the outer
/// manager; the writer clears object 2's word). No `foreign_write`; the
/// dict report, then the end-of-run summary saying what was watched and
/// that nothing was trapped — also when abort mode ends the run, in the
/// human form and with `--json`, on both engines (it used to be printed
/// only with `--json` or `--sarif`).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              host_watch_says_unavailable_elsewhere checks the status"
)]
fn an_aborted_run_ends_with_the_watch_summary() {
    let summary = "guardlift: watch object:1: 1 of 2 allocations watched, 0 freed unwritten, \
                   0 write(s) trapped (0 legitimate, 0 foreign)";
    let file = tagflip();
    for engine in ["jit", "interp"] {
        for json in [false, true] {
            let what = format!("{engine} json={json}");
            let mut a = vec![
                "run", &file, "50", "10", "--checks", "dict", "--watch", "object:1", "--engine",
                engine,
            ];
            if json {
                a.push("--json");
            }
            let o = gl(&a);
            assert!(exit_134(&o), "{what}: {:?}\n{}", o.status, stderr(&o));
            let err = stderr(&o);
            assert!(!err.contains("foreign_write"), "{what}: {err}");
            let d = err
                .find("==guardlift== ERROR: dict_slot_tag at @enter 24:5")
                .unwrap_or_else(|| panic!("{what}: {err}"));
            let s = err
                .find(summary)
                .unwrap_or_else(|| panic!("{what}: no summary: {err}"));
            assert!(d < s, "{what}: the summary comes last: {err}");
            assert_eq!(err.matches("guardlift: watch ").count(), 1, "{what}: {err}");
        }
    }
}

/// Where watchpoints are not built (an aarch64 host), `--watch` says they
/// are unavailable and why, on one stderr line and in the JSON object, and
/// the run is the run without it, on both engines.
#[test]
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn host_watch_says_unavailable_elsewhere() {
    let legit = repo("tests/watch/legit_writes.glir");
    for engine in ["jit", "interp"] {
        let plain = gl(&["run", &legit, "--engine", engine]);
        assert_eq!(plain.status.code(), Some(0), "{engine}: {}", stderr(&plain));
        let o = gl(&["run", &legit, "--engine", engine, "--watch", "object:1"]);
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        assert_eq!(o.stdout, plain.stdout, "{engine}");
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{engine}: {err}");
        assert!(
            lines[0].starts_with("guardlift: watchpoints unavailable: ")
                && lines[0].contains("hardware watchpoints need Linux on x86_64"),
            "{engine}: {err}"
        );
        let o = gl(&[
            "run", &legit, "--engine", engine, "--watch", "object:1", "--json",
        ]);
        let j: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["watch"]["active"], false, "{engine}: {j}");
        assert!(
            j["watch"]["reason"]
                .as_str()
                .unwrap()
                .contains(std::env::consts::ARCH),
            "{engine}: {j}"
        );
        assert_eq!(j["result"], 107, "{engine}");
    }
}
