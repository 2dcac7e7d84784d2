//! The run-session layer from outside: one `RunEnd` whatever engine ran
//! the module (the interpreter is the oracle), the errors before a run in
//! the `FILE:LINE:COL: error:` form, and the JSON members every rendering
//! carries.

use guardlift_runtime::Mode;
use guardlift_session::{Ending, Engine, Render, RunError, RunSpec};

const PROGRAMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/programs");

fn spec(file: &str, engine: Engine, instrument: bool) -> RunSpec {
    let path = format!("{PROGRAMS}/{file}");
    let text = std::fs::read_to_string(&path).expect("program");
    let m = guardlift_ir::parse_verified(&text).expect("valid program");
    let module = if instrument {
        guardlift_instrument::instrument_verified(m, guardlift_instrument::CheckSet::ALL)
    } else {
        m
    };
    let args = text
        .lines()
        .find_map(|l| l.strip_prefix("; args:"))
        .map(|a| a.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    RunSpec {
        module,
        file: path,
        entry: "main".into(),
        args,
        engine,
        target: guardlift_jit::Target::Host,
        mode: Some(Mode::Recover),
        watch: None,
        link: Vec::new(),
        render: Render::default(),
    }
}

/// The ending, the report kinds and sites, and the exit status.
fn summary(s: RunSpec) -> (String, Vec<(String, u32, u64)>, u8) {
    let end = guardlift_session::run(s).expect("runs");
    let ending = match &end.ending {
        Ending::Returned(v) => format!("returned {v:?}"),
        other => format!("{other:?}"),
    };
    let reports = end
        .reports
        .iter()
        .map(|r| (r.kind.name().to_string(), r.site, r.count))
        .collect();
    (ending, reports, end.exit_status())
}

#[test]
fn both_host_engines_end_the_same_way() {
    for (file, instrument, status) in [
        ("call_factorial.glir", false, 0),
        ("guard_dict_store_bad_word.glir", false, 1),
        ("guard_tagflip_attrs.glir", true, 1),
    ] {
        let interp = summary(spec(file, Engine::Interp, instrument));
        let jit = summary(spec(file, Engine::Jit, instrument));
        assert_eq!(interp, jit, "{file}: the interpreter and the JIT differ");
        assert_eq!(interp.2, status, "{file}: exit status");
        assert!(
            interp.0.starts_with("returned Some("),
            "{file}: {}",
            interp.0
        );
        assert_eq!(interp.1.is_empty(), status == 0, "{file}: {:?}", interp.1);
    }
}

#[test]
fn the_result_is_the_entrys() {
    let mut s = spec("call_factorial.glir", Engine::Jit, false);
    s.module = guardlift_ir::parse_verified(
        "fn @main(%a: i64, %b: i64) -> i64 {\nentry:\n    %s = iadd %a, %b\n    return %s\n}\n",
    )
    .expect("valid");
    s.args = vec!["40".into(), "2".into()];
    let end = guardlift_session::run(s).expect("runs");
    assert!(matches!(end.ending, Ending::Returned(Some(42))), "{end:?}");
    assert_eq!(end.meta.engine, "jit");
    assert_eq!(end.meta.target, std::env::consts::ARCH);
    assert!(!end.meta.instrumented);
}

#[test]
fn errors_before_the_run_name_the_file() {
    let mut s = spec("call_factorial.glir", Engine::Jit, false);
    let file = s.file.clone();
    s.entry = "nope".into();
    assert_eq!(
        guardlift_session::run(s).unwrap_err(),
        RunError(format!("{file}:1:1: error: no function @nope"))
    );
    let mut s = spec("call_factorial.glir", Engine::Interp, false);
    s.target = guardlift_jit::Target::Aarch64;
    let e = guardlift_session::run(s).unwrap_err();
    assert!(
        e.0.starts_with("guardlift: error: --target aarch64 runs compiled code"),
        "{e}"
    );
    let mut s = spec("call_factorial.glir", Engine::Jit, false);
    s.args.push("3".into());
    let e = guardlift_session::run(s).unwrap_err();
    assert!(e.0.contains(": error: @main takes"), "{e}");
}

#[test]
fn json_members_are_the_renderings_members() {
    let end =
        guardlift_session::run(spec("call_factorial.glir", Engine::Interp, false)).expect("runs");
    let members: serde_json::Value =
        serde_json::from_str(&format!("{{{}}}", end.meta.json_members())).expect("JSON members");
    assert_eq!(
        members,
        serde_json::json!({
            "engine": "interp",
            "target": std::env::consts::ARCH,
            "instrumented": false,
        })
    );
}
