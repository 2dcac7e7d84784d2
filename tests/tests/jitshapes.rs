//! The method-JIT-shaped programs of `tests/programs/jitshapes/` (the
//! `guardlift bench --only jitshapes` rows: richards, nbody, spectral_norm
//! a loop of leaf calls with a cold host call and a method loop entered
//! with three receivers in turn, and with eight; too long for the
//! corpus's 80 lines): the interpreter and the JIT, uninstrumented,
//! `--checks dict` and `--instrument` (recover mode), give the result of
//! the `; expect:` header bit for bit and no report. The aarch64 object
//! path runs them in `cli/tests/parity.rs`.

use guardlift_instrument::CheckSet;
use guardlift_ir::literal::format_value;
use guardlift_runtime::Mode;
use guardlift_tests::{load, run, with_checks, Engine, Program};
use std::path::{Path, PathBuf};

fn programs() -> Vec<Program> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/jitshapes");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable");
            let args = (text.lines().next())
                .and_then(|l| l.strip_prefix("; args:"))
                .map(|a| a.split_whitespace().map(String::from).collect())
                .unwrap_or_default();
            Program { path, text, args }
        })
        .collect()
}

fn header<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let prefix = format!("; {key}:");
    (text.lines().find_map(|l| l.strip_prefix(&prefix))).map(str::trim)
}

#[test]
fn jit_shaped_programs_agree_with_the_interpreter_under_every_check_set() {
    let progs = programs();
    assert_eq!(
        progs.len(),
        6,
        "richards, nbody, spectral_norm, cold call loop, method loop, megamorphic method loop"
    );
    for p in &progs {
        let m = load(p);
        let ret = m.func(m.func_by_name("main").expect("@main")).ret;
        let want = header(&p.text, "expect").expect("an `; expect:` header");
        assert_eq!(header(&p.text, "reports"), Some("none"));
        let dict = CheckSet {
            dict: true,
            ..Default::default()
        };
        for checks in [CheckSet::default(), dict, CheckSet::ALL] {
            let mi = with_checks(&m, checks);
            let a = run(&mi, &p.args, Engine::Interp, Mode::Recover);
            let b = run(&mi, &p.args, Engine::Jit, Mode::Recover);
            let name = p.path.display();
            assert_eq!(a, b, "{name} [{checks}]: interp vs jit");
            let bits = a.result.clone().unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = match (ret, bits) {
                (Some(t), Some(bits)) => format_value(t, bits),
                _ => "none".to_string(),
            };
            assert_eq!(got, want, "{name} [{checks}]: result");
            assert!(a.reports.is_empty(), "{name} [{checks}]: {:?}", a.reports);
            assert!(!a.host_fault, "{name} [{checks}]: host fault");
        }
    }
}
