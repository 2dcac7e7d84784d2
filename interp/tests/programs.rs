//! The cross-engine corpus in `tests/programs/*.glir`, checked on the
//! reference interpreter.
//!
//! Every file must:
//! - start with the header `; args: A B ...` (possibly empty) and define `@main`;
//! - parse and verify, be under 80 lines, and run quickly;
//! - run to completion (no fault, no host fault) both uninstrumented and
//!   instrumented with every check, in recover mode.
//!
//! The interpreter's answers are pinned by further header comments:
//! - `; expect: R`: the result of both runs (formatted like `guardlift run`
//!   prints it; `none` for a function without a result);
//! - `; reports: K@LINE*COUNT ...` (or `none`): the reports of the
//!   instrumented run, in order;
//! - `; reports-plain: ...` (optional, default `none`): the reports of the
//!   uninstrumented run (programs with hand-written `guard.` instructions).
//!
//! Both runs must also print the same output. Programs whose result is a
//! float say so in a `; float result ...` comment.

use guardlift_instrument::{instrument, CheckSet};
use guardlift_interp::Interpreter;
use guardlift_ir::literal::{format_value, parse_arg};
use guardlift_ir::{parse_and_verify, Module};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MIN_PROGRAMS: usize = 35;
const MAX_LINES: usize = 80;
/// Generous per-run bound (the programs take well under 50 ms; the machine is shared).
const MAX_RUN_TIME: Duration = Duration::from_secs(2);

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs")
}

fn corpus() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/programs exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    files.sort();
    files
}

/// The value of a `; KEY: VALUE` header comment, if present.
fn header<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let prefix = format!("; {key}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::trim)
}

struct Outcome {
    result: String,
    reports: String,
    output: String,
    time: Duration,
}

fn run(file: &str, m: &Module, args: &[u64]) -> Result<Outcome, String> {
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    });
    let it = Interpreter::new(m, rt.clone(), &HashMap::new())
        .map_err(|e| format!("{file}: link error: {e}"))?;
    let start = Instant::now();
    let r = it.call("main", args);
    let time = start.elapsed();
    let r = r.map_err(|e| format!("{file}: run failed: {e}"))?;
    if let Some(f) = rt.take_host_fault() {
        return Err(format!("{file}: host fault: {f}"));
    }
    let main = m.func(m.func_by_name("main").expect("@main"));
    let result = match (main.ret, r) {
        (Some(t), Some(bits)) => format_value(t, bits),
        (None, None) => "none".to_string(),
        (t, r) => return Err(format!("{file}: result {r:?} for return type {t:?}")),
    };
    let reports: Vec<String> = rt
        .take_reports()
        .iter()
        .map(|r| format!("{}@{}*{}", r.kind.name(), r.info.line, r.count))
        .collect();
    let reports = if reports.is_empty() {
        "none".to_string()
    } else {
        reports.join(" ")
    };
    Ok(Outcome {
        result,
        reports,
        output: rt.take_output(),
        time,
    })
}

fn check(path: &Path) -> Result<(Duration, Duration), String> {
    let file = path.file_name().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let lines = text.lines().count();
    if lines >= MAX_LINES {
        return Err(format!(
            "{file}: {lines} lines (keep programs under {MAX_LINES})"
        ));
    }
    let first = text.lines().next().unwrap_or("");
    let args_text = first
        .strip_prefix("; args:")
        .ok_or_else(|| format!("{file}: first line must be `; args: ...`, got `{first}`"))?;
    let m = parse_and_verify(&text).map_err(|e| format!("{file}: does not verify:\n{e}"))?;
    let fid = m
        .func_by_name("main")
        .ok_or_else(|| format!("{file}: no @main"))?;
    if m.func(fid).ret.is_some_and(|t| t.is_float()) && !text.contains("; float result") {
        return Err(format!(
            "{file}: returns a float: mark it with a `; float result` comment"
        ));
    }
    let params = m.func(fid).param_types();
    let words: Vec<&str> = args_text.split_whitespace().collect();
    if words.len() != params.len() {
        return Err(format!(
            "{file}: header gives {} argument(s), @main takes {}",
            words.len(),
            params.len()
        ));
    }
    let args: Vec<u64> = params
        .iter()
        .zip(&words)
        .map(|(t, w)| parse_arg(*t, w).map_err(|e| format!("{file}: argument `{w}`: {e}")))
        .collect::<Result<_, _>>()?;

    let plain = run(&file, &m, &args)?;
    let guarded = run(&file, &instrument(&m, CheckSet::ALL), &args)
        .map_err(|e| format!("{e} (instrumented)"))?;

    let mut problems = Vec::new();
    let mut want =
        |key: &str, default: Option<&str>, got: &str| match header(&text, key).or(default) {
            Some(w) if w == got => {}
            Some(w) => problems.push(format!("`; {key}: {w}` but got `{got}`")),
            None => problems.push(format!("missing header `; {key}: {got}`")),
        };
    want("expect", None, &plain.result);
    want("reports-plain", Some("none"), &plain.reports);
    want("reports", None, &guarded.reports);
    if guarded.result != plain.result {
        problems.push(format!(
            "instrumented result `{}` differs from uninstrumented `{}`",
            guarded.result, plain.result
        ));
    }
    if guarded.output != plain.output {
        problems.push(format!(
            "instrumented output differs:\n{}\nvs uninstrumented:\n{}",
            guarded.output, plain.output
        ));
    }
    for (what, t) in [
        ("uninstrumented", plain.time),
        ("instrumented", guarded.time),
    ] {
        if t > MAX_RUN_TIME {
            problems.push(format!("{what} run took {t:?}"));
        }
    }
    if problems.is_empty() {
        Ok((plain.time, guarded.time))
    } else {
        Err(format!("{file}:\n  {}", problems.join("\n  ")))
    }
}

#[test]
fn corpus_runs_uninstrumented_and_instrumented() {
    let files = corpus();
    assert!(
        files.len() >= MIN_PROGRAMS,
        "tests/programs holds {} programs, want at least {MIN_PROGRAMS}",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        match check(f) {
            Ok((a, b)) => eprintln!(
                "ok {:40} {:>8.2?} {:>8.2?}",
                f.file_name().unwrap().to_string_lossy(),
                a,
                b
            ),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_covers_every_op_family() {
    let all: String = corpus()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let code: String = all
        .lines()
        .map(|l| l.split(';').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    for op in [
        "iconst.i8",
        "iconst.i32",
        "iconst.i64",
        "fconst.f32",
        "fconst.f64",
        "iadd",
        "isub",
        "imul",
        "band",
        "bor",
        "bxor",
        "ishl",
        "ushr",
        "sshr",
        "icmp.eq",
        "icmp.ne",
        "icmp.slt",
        "icmp.sle",
        "icmp.sgt",
        "icmp.sge",
        "icmp.ult",
        "icmp.ule",
        "icmp.ugt",
        "icmp.uge",
        "fadd",
        "fsub",
        "fmul",
        "fdiv",
        "fmin",
        "fmax",
        "fneg",
        "fabs",
        "fsqrt",
        "fcmp.eq",
        "fcmp.ne",
        "fcmp.lt",
        "fcmp.le",
        "fcmp.gt",
        "fcmp.ge",
        "select",
        "sext.",
        "uext.",
        "ireduce.",
        "fcvt_from_sint.",
        "fcvt_to_sint.",
        "fpromote.f64",
        "fdemote.f32",
        "bitcast.",
        "load.i8",
        "load.i32",
        "load.i64",
        "load.f32",
        "load.f64",
        "load.ptr",
        "store ",
        "call @",
        "jump ",
        "brif ",
        "return",
        "dict_slot.load",
        "dict_slot.store",
        "load_attr",
        "store_attr",
        "adstack.alloc.f32",
        "adstack.alloc.f64",
        "adstack.alloc.i64",
        "adstack.push",
        "adstack.pop",
        "adstack.top ",
        "adstack.top_adj",
        "adstack.acc_adj",
        "adstack.len",
        "guard.store",
        "guard.adstack.push",
        "guard.dict_slot.store",
        "guard.store_attr",
        "guard.load_attr",
        "layout phoenix",
        "layout dict_slot_offset",
        "@obj_dictify(",
        "@fault_clear_lsb(",
        "@sin(",
        "@cos(",
        "@print_i64(",
        "@print_f64(",
        "@obj_free(",
    ] {
        assert!(code.contains(op), "no program in the corpus uses `{op}`");
    }
    for kind in [
        "dict_slot_tag",
        "adstack_overflow",
        "adstack_underflow",
        "slot_clobber",
        "use_after_free",
        "double_free",
        "invalid_free",
        "attr_out_of_bounds",
    ] {
        assert!(
            all.contains(&format!("; reports: {kind}")) || all.contains(&format!(" {kind}@")),
            "no program triggers `{kind}`"
        );
    }
}
