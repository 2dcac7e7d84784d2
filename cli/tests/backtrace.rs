//! Backtraces on reports (issue 16): the IR call chain, innermost first,
//! on the JIT and the interpreter; `GUARDLIFT_OPTIONS=backtrace=0` turns
//! them off.

mod common;

use std::path::PathBuf;

/// `@leaf` overflows an adstack at 5:5; `@main` calls it at 10:5.
const NESTED: &str = "fn @leaf(%p: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 1
    guard.adstack.push %s, %p
    guard.adstack.push %s, %p
    return %p
}
fn @main(%p: i64) -> i64 {
entry:
    %r = call @leaf(%p)
    return %r
}
";

/// The program, written once per test process (tests run in parallel
/// threads: none may read a file another is still writing).
fn program() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("guardlift-bt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("nested.glir");
        std::fs::write(&p, NESTED).unwrap();
        p
    })
    .clone()
}

fn run_json(engine: &str, options: &str) -> serde_json::Value {
    let o = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
        .arg("run")
        .arg(program())
        .args(["7", "--mode", "recover", "--json", "--engine", engine])
        .env("GUARDLIFT_OPTIONS", options)
        .output()
        .expect("run guardlift");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{engine}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let j: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    j["reports"][0].clone()
}

#[test]
fn both_ir_frames_in_order_on_jit_and_interp() {
    for engine in ["jit", "interp"] {
        let r = run_json(engine, "");
        let bt: Vec<&str> = r["backtrace"]
            .as_array()
            .unwrap_or_else(|| panic!("{engine}: no backtrace: {r}"))
            .iter()
            .map(|f| f.as_str().expect("frames are strings"))
            .collect();
        assert!(bt.len() >= 2, "{engine}: {bt:?}");
        assert_eq!(bt[0], "@leaf 5:5 (adstack.push)", "{engine}: {bt:?}");
        assert_eq!(bt[1], "@main 10:5 (call)", "{engine}: {bt:?}");
        // The JIT's walk ends at the native code that entered compiled
        // code: the entry trampoline, which has no symbol, is left out, so
        // both engines give exactly the IR call chain.
        assert_eq!(bt.len(), 2, "{engine}: {bt:?}");
    }
}

/// The object paths walk the target's frame records (the target runtime,
/// `aot/rt/src/code.rs`): the same IR call chain as the host JIT.
#[test]
fn object_paths_give_the_jit_s_ir_frames() {
    let jit = run_json("jit", "")["backtrace"].clone();
    for target in ["x86_64", "aarch64"] {
        let o = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
            .arg("run")
            .arg(program())
            .args(["7", "--mode", "recover", "--json", "--target", target])
            .env_remove("GUARDLIFT_OPTIONS")
            .output()
            .expect("run guardlift");
        let out = String::from_utf8_lossy(&o.stdout);
        let j: serde_json::Value =
            serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{target}: {e}: {out}"));
        assert_eq!(j["reports"][0]["backtrace"], jit, "{target}: {j}");
    }
    assert_eq!(jit.as_array().map(Vec::len), Some(2), "{jit}");
}

#[test]
fn human_form_lists_frames_after_what_was_observed() {
    for engine in ["jit", "interp"] {
        let o = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
            .arg("run")
            .arg(program())
            .args(["7", "--mode", "recover", "--engine", engine])
            .env_remove("GUARDLIFT_OPTIONS")
            .output()
            .expect("run guardlift");
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("ERROR: adstack_overflow at @leaf 5:5"))
            .unwrap_or_else(|| panic!("{engine}: {err}"));
        // What (the observation), then where (the frames), as ASan.
        assert_eq!(
            lines[at + 1],
            "    push into a full adstack: len 1, capacity 1",
            "{engine}: {err}"
        );
        assert_eq!(
            lines[at + 2],
            "    #0 @leaf 5:5 (adstack.push)",
            "{engine}: {err}"
        );
        assert_eq!(lines[at + 3], "    #1 @main 10:5 (call)", "{engine}: {err}");
    }
}

#[test]
fn backtrace_0_turns_them_off() {
    for engine in ["jit", "interp"] {
        let r = run_json(engine, "backtrace=0");
        assert_eq!(r["kind"], "adstack_overflow", "{engine}");
        assert!(r.get("backtrace").is_none(), "{engine}: {r}");
    }
}
