//! Reports that cannot be lost (issue 13 defect 5, issue 16): a log that
//! cannot be written falls back to stderr with a note, on every engine and
//! target, in every mode, human and JSON; each report is written once.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

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
const ENGINES: [&[&str]; 4] = [
    &["--engine", "jit"],
    &["--engine", "interp"],
    &["--target", "x86_64"],
    &["--target", "aarch64"],
];

#[test]
fn log_path_dev_full_falls_back_to_stderr_everywhere() {
    let p = program("guard_adstack_overflow.glir");
    for engine in ENGINES {
        for (mode, code) in [("abort", 134), ("recover", 1), ("trap", 134)] {
            for json in [0, 1] {
                let o = common::target_command(bin())
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
        let o = common::target_command(bin())
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

fn write_tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("guardlift-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Line 5 overflows an adstack (recorded in recover mode); line 6 loads
/// from the argument, a wild address.
const REPORT_THEN_WILD_LOAD: &str =
    include_str!("../../tests/programs/faults/report_then_wild_load.glir");

/// `@leaf` loads from its argument (a wild address) at 3:5; `@main`
/// calls it at 8:5.
const WILD_IN_CALLEE: &str = "fn @leaf(%p: i64) -> i64 {
entry:
    %v = load.i64 %p, 8
    return %v
}
fn @main(%p: i64) -> i64 {
entry:
    %r = call @leaf(%p)
    return %r
}
";

/// Recursion as deep as the argument.
const DEEP: &str = "fn @down(%n: i64) -> i64 {
entry:
    %z = iconst.i64 0
    %done = icmp.eq %n, %z
    brif %done, base, rec
base:
    return %z
rec:
    %one = iconst.i64 1
    %m = isub %n, %one
    %r = call @down(%m)
    %s = iadd %r, %one
    return %s
}
fn @main(%n: i64) -> i64 {
entry:
    %r = call @down(%n)
    return %r
}
";

fn run(p: &Path, args: &[&str]) -> Output {
    common::target_command(bin())
        .arg("run")
        .arg(p)
        .args(args)
        .env_remove("GUARDLIFT_OPTIONS")
        .output()
        .expect("run guardlift")
}

/// Every engine and target reports faults, as `run` flags.
const FAULT_ENGINES: [[&str; 2]; 4] = [
    ["--engine", "jit"],
    ["--engine", "interp"],
    ["--target", "x86_64"],
    ["--target", "aarch64"],
];

/// The `"engine"` of the JSON object a run with these flags prints.
fn engine_name(flags: [&str; 2]) -> &str {
    match flags {
        ["--engine", e] => e,
        _ => "jit",
    }
}

#[test]
fn a_report_then_a_wild_load_prints_both_and_exits_134() {
    let p = write_tmp("wild.glir", REPORT_THEN_WILD_LOAD);
    for flags in FAULT_ENGINES {
        let engine = flags.join(" ");
        let engine = engine.as_str();
        let o = run(&p, &["16", "--mode", "recover", flags[0], flags[1]]);
        let err = stderr(&o);
        assert_eq!(exit_code(&o), 134, "{engine}: {err}");
        let a = err
            .find("ERROR: adstack_overflow at @main 5:5 (adstack.push)")
            .unwrap_or_else(|| panic!("{engine}: {err}"));
        let b = err
            .find("ERROR: host_fault at @main 6:5 (load)")
            .unwrap_or_else(|| panic!("{engine}: {err}"));
        assert!(a < b, "{engine}: the earlier report first: {err}");
        // --json: one valid object on stdout with both reports.
        let o = run(
            &p,
            &["16", "--mode", "recover", flags[0], flags[1], "--json"],
        );
        assert_eq!(exit_code(&o), 134, "{engine}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let j: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{engine}: {e}: {out}"));
        let kinds: Vec<&str> = j["reports"]
            .as_array()
            .unwrap_or_else(|| panic!("{engine}: {j}"))
            .iter()
            .map(|r| r["kind"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(kinds, ["adstack_overflow", "host_fault"], "{engine}: {j}");
        let fault = &j["reports"][1];
        assert_eq!(fault["function"], "main", "{engine}");
        assert_eq!(fault["line"], 6, "{engine}");
        assert_eq!(fault["op"], "load", "{engine}");
        assert_eq!(j["engine"], engine_name(flags));
    }
}

/// The human text with the addresses that differ between processes and
/// targets (`pc 0x...`) blanked.
fn without_pcs(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("pc 0x") {
        out.push_str(&rest[..i + 5]);
        rest = rest[i + 5..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        out.push('…');
    }
    out.push_str(rest);
    out
}

/// The object paths print what the host JIT prints (human text and the
/// JSON reports), but for the PC.
#[test]
fn object_paths_print_what_the_jit_prints_for_a_fault() {
    let p = write_tmp("wild3.glir", REPORT_THEN_WILD_LOAD);
    let jit = run(&p, &["16", "--mode", "recover"]);
    let jit_json = run(&p, &["16", "--mode", "recover", "--json"]);
    let reports = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout);
        let mut j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        // The PC differs (the JIT's fault handler writes backtraces too).
        for r in j["reports"].as_array_mut().unwrap() {
            let r = r.as_object_mut().unwrap();
            r.remove("pc");
        }
        j["reports"].clone()
    };
    for t in ["x86_64", "aarch64"] {
        let o = run(&p, &["16", "--mode", "recover", "--target", t]);
        assert_eq!(exit_code(&o), 134, "{t}");
        assert_eq!(without_pcs(&stderr(&o)), without_pcs(&stderr(&jit)), "{t}");
        let o = run(&p, &["16", "--mode", "recover", "--target", t, "--json"]);
        assert_eq!(reports(&o), reports(&jit_json), "{t}");
    }
}

#[test]
fn a_wild_load_in_jit_code_names_signal_and_address() {
    let p = write_tmp("wild2.glir", REPORT_THEN_WILD_LOAD);
    let o = run(&p, &["16", "--mode", "recover", "--json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["reports"][1]["signal"], "SIGSEGV", "{j}");
    assert_eq!(j["reports"][1]["address"], "0x18", "{j}");
    assert_eq!(j["aborted"], true, "{j}");
}

#[test]
fn recursion_1e8_deep_is_a_stack_overflow_report() {
    let p = write_tmp("deep.glir", DEEP);
    for flags in FAULT_ENGINES {
        let engine = flags.join(" ");
        let o = run(&p, &["100000000", flags[0], flags[1]]);
        let err = stderr(&o);
        assert_eq!(exit_code(&o), 134, "{engine}: {err}");
        assert!(
            err.contains("==guardlift== ERROR: stack_overflow at @down 11:5 (call)"),
            "{engine}: {err}"
        );
        assert!(!err.contains("has overflowed its stack"), "{engine}: {err}");
    }
}

/// The documented depth every engine runs (docs/IR.md): 100 000 nested
/// calls, less the entry's own frame.
#[test]
fn deep_but_legal_recursion_runs_the_same_everywhere() {
    let p = write_tmp("deep_ok.glir", DEEP);
    for engine in ENGINES {
        let o = common::target_command(bin())
            .arg("run")
            .arg(&p)
            .arg("99998")
            .args(engine)
            .output()
            .expect("run guardlift");
        assert_eq!(exit_code(&o), 0, "{engine:?}: {}", stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "99998",
            "{engine:?}"
        );
    }
}

/// A fault report's backtrace is the IR call chain, as other reports' are
/// (the JIT and the object paths walk the frame records from the faulting
/// frame, the interpreter reads its frames), after what happened (ASan's
/// order); `backtrace=0` turns it off.
#[test]
fn a_fault_in_a_callee_has_the_ir_call_chain_as_backtrace() {
    let p = write_tmp("wild_callee.glir", WILD_IN_CALLEE);
    for flags in FAULT_ENGINES {
        let engine = flags.join(" ");
        let o = run(&p, &["16", flags[0], flags[1]]);
        let err = stderr(&o);
        assert_eq!(exit_code(&o), 134, "{engine}: {err}");
        assert!(
            err.contains("ERROR: host_fault at @leaf 3:5 (load)\n    SIGSEGV at address 0x18"),
            "{engine}: {err}"
        );
        assert!(
            err.contains(
                "\n    #0 @leaf 3:5 (load)\n    #1 @main 8:5 (call)\n    seen 1 time(s)\n"
            ),
            "{engine}: {err}"
        );
        let o = run(&p, &["16", flags[0], flags[1], "--json"]);
        let out = String::from_utf8_lossy(&o.stdout);
        let j: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{engine}: {e}: {out}"));
        assert_eq!(
            j["reports"][0]["backtrace"],
            serde_json::json!(["@leaf 3:5 (load)", "@main 8:5 (call)"]),
            "{engine}: {j}"
        );
    }
    for flags in FAULT_ENGINES {
        let o = common::target_command(bin())
            .arg("run")
            .arg(&p)
            .args(["16", flags[0], flags[1]])
            .env("GUARDLIFT_OPTIONS", "backtrace=0")
            .output()
            .expect("run guardlift");
        let err = stderr(&o);
        assert_eq!(exit_code(&o), 134, "{flags:?}: {err}");
        assert!(
            err.contains("ERROR: host_fault at @leaf 3:5 (load)"),
            "{flags:?}: {err}"
        );
        assert!(!err.contains("    #0 "), "{flags:?}: {err}");
    }
}

/// Issue 28 item 9: a stack overflow in a callee's prologue (a big frame's
/// stack probe) names the IR call that overflowed on every engine and
/// target (cli/tests/fault_parity.rs compares the whole reports).
#[test]
fn an_overflow_in_a_callee_prologue_names_the_ir_call() {
    let p = program("faults/overflow_in_prologue.glir");
    for engine in [
        &["--engine", "interp"][..],
        &["--engine", "jit"],
        &["--target", "x86_64"],
        &["--target", "aarch64"],
    ] {
        let o = common::target_command(bin())
            .arg("run")
            .arg(&p)
            .arg("100000000")
            .args(engine)
            .env_remove("GUARDLIFT_OPTIONS")
            .output()
            .expect("run guardlift");
        let err = stderr(&o);
        assert_eq!(exit_code(&o), 134, "{engine:?}: {err}");
        assert_eq!(
            err.lines().next(),
            Some("==guardlift== ERROR: stack_overflow at @rec 12:5 (call)"),
            "{engine:?}: {err}"
        );
        assert!(
            err.contains("    #0 @rec 12:5 (call)\n    #1 @rec 12:5 (call)"),
            "{engine:?}: {err}"
        );
    }
}

/// Issue 28 item 7 (second half): `--mode trap --json` prints the run's
/// one JSON object on stdout on every engine and target (the JIT's from its
/// trap handler, the object targets' from the host), with the report the
/// interpreter prints, and exits 134.
#[test]
fn trap_mode_json_is_one_object_on_every_engine() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ctxmgr_tagflip.glir");
    let key = |j: &serde_json::Value| {
        let r = &j["reports"][0];
        (
            r["kind"].clone(),
            r["function"].clone(),
            r["line"].clone(),
            r["op"].clone(),
            r["value_low_bits"].clone(),
            j["reports"].as_array().map(Vec::len),
        )
    };
    let mut want = None;
    for flags in FAULT_ENGINES {
        let o = run(
            &p,
            &[
                "10",
                "--instrument",
                "--mode",
                "trap",
                "--json",
                flags[0],
                flags[1],
            ],
        );
        assert_eq!(exit_code(&o), 134, "{flags:?}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        let j: serde_json::Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{flags:?}: not one JSON object ({e}): {out}"));
        assert_eq!(j["aborted"], true, "{flags:?}: {j}");
        assert_eq!(j["engine"], engine_name(flags), "{flags:?}: {j}");
        assert_eq!(j["result"], serde_json::Value::Null, "{flags:?}: {j}");
        let k = key(&j);
        assert_eq!(k.0, "dict_slot_tag", "{flags:?}: {j}");
        match &want {
            None => want = Some(k),
            Some(w) => assert_eq!(&k, w, "{flags:?}: {j}"),
        }
    }
}

/// Issue 36: the x86_64 object under qemu-x86_64 (what an aarch64 host
/// does with `--target x86_64`; here forced on any host with
/// `GUARDLIFT_RUNNER_X86_64`) prints the host JIT's reports from its
/// signal handlers: trap mode's SIGILL, a wild load's SIGSEGV after a
/// recorded report, a stack overflow's SIGSEGV on the alternate stack.
/// qemu-x86_64 7.2 (Debian 12's) enters a handler with a misaligned stack
/// (rsp % 16 == 0), and a handler dies of SIGSEGV at its first aligned
/// SSE store unless it realigns the stack, as the target runtime's
/// handler entries do (aot/rt/src/signals.rs, docs/TARGETS.md). Needs qemu-user (scripts/install-deps), like the
/// aarch64 cases.
#[test]
fn x86_64_objects_under_qemu_x86_64_print_the_jits_fault_reports() {
    let tagflip = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ctxmgr_tagflip.glir");
    let wild = write_tmp("wild_qemu.glir", REPORT_THEN_WILD_LOAD);
    let deep = write_tmp("deep_qemu.glir", DEEP);
    let cases: [(&Path, &[&str]); 4] = [
        (&tagflip, &["10", "--instrument", "--mode", "trap"]),
        (
            &tagflip,
            &["10", "--instrument", "--mode", "trap", "--json"],
        ),
        (&wild, &["16", "--mode", "recover"]),
        (&deep, &["100000000"]),
    ];
    for (p, args) in cases {
        let what = format!("{} {args:?}", p.display());
        let jit = run(p, args);
        let o = common::target_command(bin())
            .arg("run")
            .arg(p)
            .args(args)
            .args(["--target", "x86_64"])
            .env_remove("GUARDLIFT_OPTIONS")
            .env("GUARDLIFT_RUNNER_X86_64", "qemu-x86_64")
            .output()
            .expect("run guardlift");
        let err = stderr(&o);
        assert!(
            !err.contains("died of signal"),
            "{what}: the handler died (install qemu-user: scripts/install-deps): {err}"
        );
        assert_eq!(exit_code(&o), 134, "{what}: {err}");
        assert_eq!(
            common::mask_hex(&err),
            common::mask_hex(&stderr(&jit)),
            "{what}"
        );
        if args.contains(&"--json") {
            let j: serde_json::Value =
                serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            let mut jit_j: serde_json::Value =
                serde_json::from_str(String::from_utf8_lossy(&jit.stdout).trim())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            jit_j["target"] = j["target"].clone();
            assert_eq!(
                common::mask_hex(&j.to_string()),
                common::mask_hex(&jit_j.to_string()),
                "{what}"
            );
        }
    }
}
