//! Golden files of the instrumentation pass: every `golden/X.glir` (with a
//! `; checks: LIST` header, as `--instrument LIST`) is parsed, verified,
//! instrumented and printed, and must equal `golden/X.instrumented.glir`
//! byte for byte. The output must verify and print back to itself.
//!
//! After an intended change of the pass or the printer, regenerate the
//! expected files with `GUARDLIFT_BLESS=1 cargo test -p guardlift-instrument
//! --test golden` and review the diff; without it a difference fails.

use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::{parse_module, print_module, verify_module};
use std::path::{Path, PathBuf};

const BLESS: &str = "GUARDLIFT_BLESS";

/// The inputs: `golden/*.glir` but the `.instrumented.glir` outputs, sorted.
fn inputs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".glir") && !name.ends_with(".instrumented.glir")
        })
        .collect();
    v.sort();
    assert!(
        v.len() >= 5,
        "only {} golden inputs in {}",
        v.len(),
        dir.display()
    );
    v
}

/// The `; checks: LIST` header line of `text`.
fn checks_of(text: &str) -> Result<CheckSet, String> {
    let list = text
        .lines()
        .map_while(|l| l.strip_prefix(';'))
        .find_map(|c| c.trim_start().strip_prefix("checks:"))
        .ok_or("no `; checks: LIST` header line")?;
    CheckSet::parse(list.trim()).map_err(|e| format!("bad check list: {e}"))
}

/// The instrumented text of `input`, checked to verify and print stably.
fn instrumented(input: &str) -> Result<String, String> {
    let checks = checks_of(input)?;
    let m = parse_module(input).map_err(|e| format!("input does not parse: {e}"))?;
    verify_module(&m).map_err(|e| format!("input does not verify: {e}"))?;
    let out = instrument(&m, checks);
    verify_module(&out).map_err(|e| format!("output does not verify: {e}"))?;
    let text = print_module(&out);
    let again = parse_module(&text).map_err(|e| format!("output does not parse: {e}"))?;
    if print_module(&again) != text {
        return Err("the output does not print back to itself".into());
    }
    Ok(text)
}

/// The first line where `want` and `got` differ, for the failure message.
fn first_difference(want: &str, got: &str) -> String {
    let (mut w, mut g) = (want.lines(), got.lines());
    for n in 1.. {
        match (w.next(), g.next()) {
            (None, None) => return "they differ only in line endings".into(),
            (a, b) if a == b => continue,
            (a, b) => return format!("line {n}:\n  expected: {a:?}\n  actual:   {b:?}"),
        }
    }
    unreachable!("the loop returns")
}

#[test]
fn instrumented_output_matches_the_golden_files() {
    let bless = std::env::var_os(BLESS).is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for input in inputs() {
        let out_path = input.with_extension("instrumented.glir");
        let text = std::fs::read_to_string(&input).expect("read input");
        let got = match instrumented(&text) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: {e}", input.display()));
                continue;
            }
        };
        if bless {
            std::fs::write(&out_path, &got).expect("write golden file");
            continue;
        }
        match std::fs::read_to_string(&out_path) {
            Ok(want) if want == got => {}
            Ok(want) => failures.push(format!(
                "{} differs from the pass's output; {}",
                out_path.display(),
                first_difference(&want, &got)
            )),
            Err(e) => failures.push(format!("{}: {e}", out_path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(after an intended change: {BLESS}=1 cargo test -p guardlift-instrument --test golden, and review the diff)",
        failures.join("\n")
    );
}

#[test]
fn headers_and_differences() {
    let c = checks_of("; about\n; checks: dict, adstack\nfn").unwrap();
    assert!(c.dict && c.adstack && !c.clobber);
    assert!(checks_of("; about\nfn @f() {\n; checks: dict\n").is_err());
    assert!(checks_of("; checks: dict,bogus\n").is_err());
    assert_eq!(
        first_difference("a\nb\nc\n", "a\nB\nc\n"),
        "line 2:\n  expected: Some(\"b\")\n  actual:   Some(\"B\")"
    );
    assert!(first_difference("a\n", "a\nb\n").contains("line 2"));
}
