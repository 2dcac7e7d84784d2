//! The example VM with side exits (`jit/examples/minivm.rs`), run as a user
//! runs it: its JIT must agree with its own interpreter whether or not a
//! guard fails mid-loop and the side exit resumes interpretation, plain and
//! under `--instrument`, with the VM's slow paths bound and `call_indirect`
//! through type slots; a use after free of the VM's is reported at its IR
//! site.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// target/<profile> of this test binary (target/<profile>/deps/<test>).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|p| p.parent())
        .expect("target/<profile>")
        .to_path_buf()
}

/// The example's binary, built once with this test binary's profile.
fn minivm() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = profile_dir();
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(p) => p.to_string(),
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("root");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let (target_dir, target) = common::target_dir_of(&dir);
        let out = Command::new(cargo)
            .current_dir(root)
            .args(["build", "-q", "--profile", &profile, "--target-dir"])
            .arg(target_dir)
            .args(target.iter().flat_map(|t| ["--target", t]))
            // Every example of the workspace, not `-p guardlift-jit`: the
            // workspace's test build unifies features across all members,
            // and a narrower build would compile Cranelift again with other
            // features (minutes in CI); after `cargo test --workspace` this
            // build has nothing to do.
            .args(["--workspace", "--lib", "--examples"])
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "cargo build --example minivm failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("examples/minivm")
    })
}

fn run(args: &[&str]) -> Output {
    common::target_command(minivm())
        .args(args)
        .output()
        .expect("run minivm")
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "minivm {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines that state the program's outcome (score, attributes, reports).
fn outcome(s: &str) -> Vec<&str> {
    s.lines()
        .filter(|l| {
            l.starts_with("minivm: score")
                || l.starts_with("minivm: p.y")
                || l.starts_with("minivm: objects")
                || l.ends_with("report(s)")
        })
        .collect()
}

/// A number in `line` just before `word`.
fn count_before(s: &str, word: &str) -> u64 {
    let line = s
        .lines()
        .find(|l| l.contains(word))
        .unwrap_or_else(|| panic!("no line with `{word}` in:\n{s}"));
    let head = &line[..line.find(word).expect("word")];
    head.split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count before `{word}` in `{line}`"))
}

#[test]
fn a_guard_failing_mid_loop_resumes_in_the_interpreter_with_the_same_result() {
    let interp = stdout(&["--no-jit"]);
    for extra in [&[][..], &["--instrument"][..]] {
        let jit = stdout(extra);
        assert_eq!(outcome(&jit), outcome(&interp), "{extra:?}\n{jit}");
        assert!(
            jit.contains("side exit 3 at bytecode 17 (Mul: integer overflow) in iteration i=12"),
            "{extra:?}: the overflow guard of `acc * 31` must fail at i=12:\n{jit}"
        );
        assert!(jit.contains("0 report(s)"), "{jit}");
        // Iterations 0..12 ran compiled: objects 1 and 4 (of 5) are in
        // dict mode, so 5 of them took the VM's bound slow path twice.
        assert_eq!(count_before(&jit, "attribute slow paths"), 10, "{jit}");
        assert_eq!(count_before(&jit, "weight() calls"), 20, "{jit}");
    }
}

#[test]
fn without_a_failing_guard_the_compiled_code_runs_to_the_end() {
    for n in ["0", "1", "6", "11"] {
        let interp = stdout(&["--no-jit", "--n", n]);
        let jit = stdout(&["--instrument", "--n", n]);
        assert_eq!(outcome(&jit), outcome(&interp), "n={n}\n{jit}");
        assert!(jit.contains("no side exit"), "n={n}:\n{jit}");
    }
}

#[test]
fn other_shapes_agree_with_the_interpreter() {
    for args in [
        &["--d", "-3"][..],
        &["--d", "7", "--objects", "1"][..],
        &["--d", "-1", "--objects", "9", "--n", "24"][..],
        &["--n", "13", "--objects", "2"][..],
    ] {
        let mut plain = vec!["--no-jit"];
        plain.extend_from_slice(args);
        let interp = stdout(&plain);
        let mut inst = vec!["--instrument"];
        inst.extend_from_slice(args);
        assert_eq!(outcome(&stdout(args)), outcome(&interp), "{args:?}");
        assert_eq!(outcome(&stdout(&inst)), outcome(&interp), "{args:?}");
    }
}

#[test]
fn a_zero_divisor_leaves_through_the_side_exit_and_the_interpreter_raises() {
    for extra in [&[][..], &["--instrument"][..]] {
        let mut args = vec!["--d", "0"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("ZeroDivisionError"), "{err}");
    }
}

#[test]
fn a_use_after_free_of_the_vm_is_reported_at_the_ir_site() {
    let out = stdout(&["--instrument", "--use-after-free"]);
    let n = count_before(&out, "report(s)");
    assert!(n >= 2, "{out}");
    assert!(out.contains("use_after_free at @score"), "{out}");
    assert!(
        out.contains("(load_attr)") && out.contains("(store_attr)"),
        "{out}"
    );
}
