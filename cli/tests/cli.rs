//! End-to-end tests of the `guardlift` binary: malformed input of every kind
//! gives exit 2 with `FILE:LINE:COL: error: ...` from `check`, `fmt` and
//! `run`; valid programs (the shared examples, large generated ones) run.

use std::path::{Path, PathBuf};
mod common;

use common::{bin, gl, stderr, stdout, tmp};
use std::process::Output;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

fn examples() -> Vec<PathBuf> {
    let dir = shared().join("examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: check out ../shared beside the repository",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    v.sort();
    assert!(
        v.len() >= 4,
        "expected the shared examples in {}",
        dir.display()
    );
    v
}

/// Asserts exit 2 and a first stderr line `FILE:LINE:COL: error: ...` containing `frag`.
fn assert_diag(o: &Output, file: &Path, line: Option<u32>, frag: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "want exit 2, stderr: {err}");
    let first = err.lines().next().unwrap_or("");
    let f = file.to_str().unwrap();
    let rest = first
        .strip_prefix(&format!("{f}:"))
        .unwrap_or_else(|| panic!("no FILE: prefix in {first:?}"));
    let mut parts = rest.splitn(3, ':');
    let l: u32 = parts
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("no LINE in {first:?}"));
    let _c: u32 = parts
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("no COL in {first:?}"));
    assert!(parts.next().unwrap().starts_with(" error: "), "{first:?}");
    if let Some(want) = line {
        assert_eq!(l, want, "{first:?}");
    }
    assert!(first.contains(frag), "{first:?} lacks {frag:?}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn shared_examples_check_and_fmt_round_trip() {
    for ex in examples() {
        let p = ex.to_str().unwrap();
        let o = gl(&["check", p]);
        assert_eq!(o.status.code(), Some(0), "check {p}: {}", stderr(&o));
        let o = gl(&["fmt", p]);
        assert_eq!(o.status.code(), Some(0), "fmt {p}: {}", stderr(&o));
        let once = stdout(&o);
        let f1 = tmp("fmt1.glir", once.as_bytes());
        let o2 = gl(&["fmt", f1.to_str().unwrap()]);
        assert_eq!(o2.status.code(), Some(0), "fmt of fmt {p}: {}", stderr(&o2));
        assert_eq!(stdout(&o2), once, "fmt of fmt differs for {p}");
    }
}

const MALFORMED: &[(&str, &str, Option<u32>, &str)] = &[
    ("syntax", "fn @main() -> i64 {\nentry:\n    %x = iconst.i64\n    return %x\n}\n", Some(3), ""),
    ("types", "fn @main() -> i64 {\nentry:\n    %a = iconst.i64 1\n    %b = fconst.f64 1.0\n    %c = iadd %a, %b\n    return %c\n}\n", Some(5), ""),
    (
        "dominance",
        "fn @main(%n: i64) -> i64 {\nentry:\n    brif %n, a, b\na:\n    %x = iconst.i64 1\n    jump c\nb:\n    jump c\nc:\n    return %x\n}\n",
        Some(10),
        "",
    ),
    ("arity", "fn @f(%a: i64) -> i64 {\nentry:\n    return %a\n}\nfn @main() -> i64 {\nentry:\n    %r = call @f()\n    return %r\n}\n", Some(7), ""),
    ("unknown value", "fn @main() -> i64 {\nentry:\n    return %nope\n}\n", Some(3), ""),
    ("unknown block", "fn @main() {\nentry:\n    jump nowhere\n}\n", Some(3), ""),
    ("unknown function", "fn @main() {\nentry:\n    call @nope()\n    return\n}\n", Some(3), ""),
    ("huge number", "fn @main() -> i64 {\nentry:\n    %x = iconst.i64 123456789012345678901234567890\n    return %x\n}\n", Some(3), ""),
    ("unclosed function", "fn @main() -> i64 {\nentry:\n    %x = iconst.i64 1\n    return %x\n", Some(1), ""),
    ("bad layout", "layout dict_slot_offset = 3\nfn @main() {\nentry:\n    return\n}\n", Some(1), ""),
    ("adstack param", "fn @main(%s: adstack.f64) {\nentry:\n    return\n}\n", Some(1), ""),
];

#[test]
fn malformed_input_gives_file_line_col_errors_from_every_command() {
    for (name, text, line, frag) in MALFORMED {
        let p = tmp(&format!("{}.glir", name.replace(' ', "_")), text.as_bytes());
        let ps = p.to_str().unwrap();
        for cmd in [
            &["check", ps][..],
            &["fmt", ps],
            &["run", ps, "--engine", "interp"],
            &["run", ps],
        ] {
            let o = gl(cmd);
            assert_diag(&o, &p, *line, frag);
            assert!(o.stdout.is_empty(), "{name}: {cmd:?} printed on stdout");
        }
    }
}

#[test]
fn non_utf8_input_is_an_error_at_its_position() {
    let p = tmp("nonutf8.glir", b"fn @main() {\nentry:\n    ret\xffurn\n}\n");
    for cmd in ["check", "fmt", "run"] {
        assert_diag(&gl(&[cmd, p.to_str().unwrap()]), &p, Some(3), "UTF-8");
    }
}

#[test]
fn deep_nesting_and_endless_functions_error_quickly() {
    let deep = "{".repeat(100_000);
    let p = tmp("deep.glir", format!("fn @main() {deep}\n").as_bytes());
    for cmd in ["check", "fmt", "run"] {
        assert_diag(&gl(&[cmd, p.to_str().unwrap()]), &p, Some(1), "");
    }
    let many = "fn @f() {\n".repeat(100_000);
    let p = tmp("manyfn.glir", many.as_bytes());
    assert_diag(&gl(&["check", p.to_str().unwrap()]), &p, None, "");
    let p = tmp("empty.glir", b"");
    let o = gl(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A function with `n` blocks in a chain, each adding its index to a counter.
fn chain(n: usize) -> String {
    let mut s =
        String::from("fn @main() -> i64 {\nentry:\n    %z = iconst.i64 0\n    jump b0(%z)\n");
    for i in 0..n {
        let next = if i + 1 == n {
            "done".to_string()
        } else {
            format!("b{}", i + 1)
        };
        s += &format!("b{i}(%x{i}: i64):\n    %c{i} = iconst.i64 {i}\n    %y{i} = iadd %x{i}, %c{i}\n    jump {next}(%y{i})\n");
    }
    s += "done(%r: i64):\n    return %r\n}\n";
    s
}

#[test]
fn a_20000_block_function_runs() {
    let n = 20_000usize;
    let p = tmp("chain.glir", chain(n).as_bytes());
    let want = (n * (n - 1) / 2).to_string();
    let o = gl(&["run", p.to_str().unwrap(), "--engine", "interp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), want);
    let o = gl(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn bad_arguments_and_flags_are_usage_errors() {
    let ex = shared().join("examples/tagflip.glir");
    let e = ex.to_str().unwrap();
    for args in [
        &["run", e][..],
        &["run", e, "1", "2"],
        &["run", e, "x"],
        &["run", e, "1", "--mode", "bogus"],
        &["run", e, "1", "--checks", "dict,bogus"],
        &["run", e, "1", "--entry", "nope"],
        &["run", "/nonexistent/file.glir"],
        &["frobnicate"],
    ] {
        let o = gl(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
}

/// riscv64 was retired with the C runtime twin (docs/TARGETS.md): `--target
/// riscv64` (and its old aliases) is a usage error of every command that
/// takes a target, naming the valid ones, never a panic.
#[test]
fn retired_riscv64_target_is_a_usage_error_listing_the_valid_targets() {
    let ex = shared().join("examples/tagflip.glir");
    let e = ex.to_str().unwrap();
    let out = std::env::temp_dir().join(format!("guardlift-rv-{}.o", std::process::id()));
    let o_path = out.to_str().unwrap();
    for name in ["riscv64", "riscv64gc", "riscv64gc-unknown-linux-gnu"] {
        for args in [
            &["run", e, "1", "--target", name][..],
            &["emit", e, "--what", "asm", "--target", name],
            &["compile", e, "--target", name, "-o", o_path],
        ] {
            let o = gl(args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(
                err.contains(&format!("invalid value '{name}' for '--target <TARGET>'")),
                "{args:?}: {err}"
            );
            assert!(
                err.contains("[possible values: host, x86_64, aarch64]"),
                "{args:?}: {err}"
            );
            assert!(o.stdout.is_empty(), "{args:?}");
        }
    }
    assert!(!out.exists(), "no object written");
}

#[test]
fn demo_program_shows_a_report_when_instrumented() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ctxmgr_tagflip.glir");
    let d = demo.to_str().unwrap();
    for engine in ["interp", "jit"] {
        let o = gl(&[
            "run",
            d,
            "1000",
            "--engine",
            engine,
            "--instrument",
            "--mode",
            "recover",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        // 500 clean iterations give 1+2 each; after the flip the inner loads give 0.
        assert_eq!(j["result"], 500 * 3 + 500);
        let reps = j["reports"].as_array().unwrap();
        assert!(reps.iter().any(|r| r["kind"] == "dict_slot_tag"
            && r["op"] == "store_attr"
            && r["function"] == "enter"));
        assert!(stderr(&o).contains("dict_slot_tag"));
        // Uninstrumented, the corrupted word reaches the host: a fault, never silence.
        // It is reported as the host's crash, at the store_attr whose slow
        // path got the word: exit status 134 (SIGABRT, as a shell shows it).
        let o = gl(&["run", d, "1000", "--engine", engine]);
        use std::os::unix::process::ExitStatusExt;
        let code = o
            .status
            .code()
            .or_else(|| o.status.signal().map(|s| 128 + s));
        assert_eq!(code, Some(134), "{}", stderr(&o));
        assert!(stderr(&o).contains("corrupted"), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("ERROR: host_fault at @enter 21:5 (store_attr)"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn negative_and_special_float_arguments() {
    let p = tmp(
        "neg.glir",
        b"fn @main(%a: i64, %x: f64) -> f64 {\nentry:\n    %f = fcvt_from_sint.f64 %a\n    %r = fadd %f, %x\n    return %r\n}\n",
    );
    let ps = p.to_str().unwrap();
    let o = gl(&["run", ps, "-5", "-2.5e-1", "--engine", "interp"]);
    assert_eq!(stdout(&o).trim(), "-5.25", "{}", stderr(&o));
    let o = gl(&["run", ps, "1", "-inf", "--engine", "interp", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["result"], "-inf");
    assert_eq!(j["instrumented"], false);
}

#[test]
fn guardlift_options_set_mode_log_and_json() {
    let ex = shared().join("examples/tagflip.glir");
    let log = std::env::temp_dir().join(format!("guardlift-log-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let o = common::target_command(bin())
        .args([
            "run",
            ex.to_str().unwrap(),
            "10",
            "--engine",
            "interp",
            "--instrument",
        ])
        .env(
            "GUARDLIFT_OPTIONS",
            format!("mode=recover:json=1:log_path={}", log.display()),
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "0");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["kind"], "dict_slot_tag");
    assert_eq!(lines[0]["count"], 7);
    // The word changed behind the JIT's back: the last known write was obj_new's.
    assert_eq!(lines[0]["last_write"]["by"], "obj_new");
    assert_eq!(lines[0]["last_write"]["changed_behind"], true);
    let o = common::target_command(bin())
        .args(["run", ex.to_str().unwrap(), "10", "--engine", "interp"])
        .env("GUARDLIFT_OPTIONS", "mode=sometimes")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("GUARDLIFT_OPTIONS"));
}

/// A `dict_slot.store` report's word is the value the store was about to
/// write, not the slot's: it carries no `last_write` (whose
/// `changed_behind` would wrongly blame a writer outside the JIT), on the
/// interpreter, the JIT and the object targets alike; a report about a
/// word read from the slot still does.
#[test]
fn a_dict_slot_store_report_names_no_last_write() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/programs/guard_dict_store_bad_word.glir");
    for engine in [
        &["--engine", "interp"][..],
        &[],
        &["--target", "x86_64"],
        &["--target", "aarch64"],
    ] {
        let mut args = vec!["run", p.to_str().unwrap(), "--mode", "recover", "--json"];
        args.extend_from_slice(engine);
        let o = gl(&args);
        assert_eq!(o.status.code(), Some(1), "{engine:?}: {}", stderr(&o));
        let first = stdout(&o).lines().next().unwrap_or_default().to_string();
        let j: serde_json::Value = serde_json::from_str(&first).unwrap();
        let r = &j["reports"][0];
        assert_eq!(r["op"], "dict_slot.store", "{engine:?}: {first}");
        assert!(r.get("last_write").is_none(), "{engine:?}: {first}");
        assert!(
            !stderr(&o).contains("last known write"),
            "{engine:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn emitted_code_does_not_depend_on_hash_order() {
    // Each process hashes with other keys: the own-variant lowering once
    // reset its vouching variables in a hash map's order, and the CLIF's
    // value numbers changed from run to run (4 texts in 7 runs).
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs/own_variant.glir");
    let p = p.to_str().unwrap();
    let texts: Vec<String> = (0..6)
        .map(|_| {
            let o = gl(&["emit", p, "--what", "clif", "--instrument"]);
            assert!(o.status.success(), "{}", stderr(&o));
            stdout(&o)
        })
        .collect();
    assert!(texts[0].contains("block"), "{}", texts[0]);
    for t in &texts[1..] {
        assert!(*t == texts[0], "two runs emitted different CLIF");
    }
}
