//! Faults on the object paths (issue 16): a fatal signal in IR code or in
//! a host function it called is a `host_fault` (or `stack_overflow`) report
//! at its IR site, after the reports recorded before it, formatted as the
//! host JIT's fault handler formats it (its texts are pinned by
//! jit/tests/fault.rs); reports carry the IR call chain as on the host.
//! The programs and C host functions are in `tests/data/`.

use guardlift_aot::{build_with_host, End, TargetRun};
use guardlift_jit::Target;
use guardlift_runtime::{Mode, ReportKind};
use std::path::{Path, PathBuf};

/// x86_64 natively, aarch64 under qemu-user (on an x86_64 host).
const TARGETS: [Target; 2] = [Target::X86_64, Target::Aarch64];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs `@main(arg)` of `program` in recover mode, linked with `host_c`.
fn run_on(t: Target, program: &str, arg: u64, host_c: &[&str]) -> TargetRun {
    let text = std::fs::read_to_string(data(program)).unwrap();
    let m = guardlift_ir::parse_and_verify(&text)
        .unwrap_or_else(|e| panic!("{}", e.with_file(program)));
    let host_c: Vec<PathBuf> = host_c.iter().map(|c| data(c)).collect();
    let b = build_with_host(&m, "main", t, Mode::Recover, &host_c)
        .unwrap_or_else(|e| panic!("{t}: {e}"));
    b.run(&[arg]).unwrap_or_else(|e| panic!("{t}: {e}"))
}

/// One fault case: the program, its argument, its C host functions, the
/// adstack report's line before the fault (if any), the signal, whether
/// the fault is in the host function, and how the report starts.
struct Case {
    program: &'static str,
    arg: u64,
    host_c: &'static [&'static str],
    report_line: Option<u32>,
    signal: (u32, &'static str),
    in_host: bool,
    head: &'static str,
}

const CASES: [Case; 4] = [
    Case {
        program: "report_wild_load.glir",
        arg: 16,
        host_c: &[],
        report_line: Some(6),
        signal: (11, "SIGSEGV"),
        in_host: false,
        head: "==guardlift== ERROR: host_fault at @main 7:5 (load)\n    SIGSEGV at address 0x18, pc 0x",
    },
    Case {
        program: "report_wild_store.glir",
        arg: 16,
        host_c: &[],
        report_line: Some(6),
        signal: (11, "SIGSEGV"),
        in_host: false,
        head: "==guardlift== ERROR: host_fault at @main 7:5 (store)\n    SIGSEGV at address 0x20, pc 0x",
    },
    // A null dereference in a host function is placed at the IR call.
    Case {
        program: "report_host_null.glir",
        arg: 0,
        host_c: &["deref.c"],
        report_line: Some(7),
        signal: (11, "SIGSEGV"),
        in_host: true,
        head: "==guardlift== ERROR: host_fault at @main 8:5 (call)\n    SIGSEGV at address 0x0, pc 0x",
    },
    // A SIGILL that is not a guard's trap is a host_fault like a segfault.
    Case {
        program: "host_illegal.glir",
        arg: 3,
        host_c: &["illegal.c"],
        report_line: None,
        signal: (4, "SIGILL"),
        in_host: true,
        head: "==guardlift== ERROR: host_fault at @main 5:5 (call)\n    SIGILL at address 0x",
    },
];

#[test]
fn faults_are_reports_at_their_ir_site_after_the_earlier_reports() {
    for c in &CASES {
        for t in TARGETS {
            let what = format!("{t} {}", c.program);
            let r = run_on(t, c.program, c.arg, c.host_c);
            assert_eq!(r.end, End::Crashed { signal: c.signal.0 }, "{what}: {r:?}");
            let kinds: Vec<(ReportKind, u32)> =
                r.reports.iter().map(|r| (r.kind, r.info.line)).collect();
            let want: Vec<(ReportKind, u32)> = c
                .report_line
                .map(|l| (ReportKind::AdstackOverflow, l))
                .into_iter()
                .collect();
            assert_eq!(kinds, want, "{what}");
            let f = r.fault.unwrap_or_else(|| panic!("{what}: no fault"));
            assert_eq!(f.in_host, c.in_host, "{what}");
            let text = f.report().to_string();
            assert!(text.starts_with(c.head), "{what}: {text}");
            // What, then where: the site as frame #0 (main's caller is the
            // entry wrapper, not an IR frame).
            let site = format!(
                "@{} {}:{} ({})",
                f.at.function, f.at.line, f.at.col, f.at.op
            );
            assert!(
                text.ends_with(&format!("    #0 {site}\n    seen 1 time(s)\n")),
                "{what}: {text}"
            );
            assert_eq!(
                text.contains("    in a host function called by this IR call\n"),
                c.in_host,
                "{what}: {text}"
            );
            // The JSON line is valid JSON with the same fields.
            let j: serde_json::Value =
                serde_json::from_str(&f.report().json().to_string()).unwrap();
            assert_eq!(j["kind"], "host_fault", "{what}");
            assert_eq!(j["signal"], c.signal.1, "{what}");
            assert_eq!(j["in_host"], c.in_host, "{what}");
        }
    }
}

#[test]
fn recursion_1e8_deep_is_a_stack_overflow_at_the_call() {
    for t in TARGETS {
        let r = run_on(t, "deep.glir", 100_000_000, &[]);
        let f = r.fault.unwrap_or_else(|| panic!("{t}: {:?}", r.end));
        assert!(f.stack_overflow, "{t}: {f:?}");
        let text = f.report().to_string();
        assert!(
            text.starts_with(
                "==guardlift== ERROR: stack_overflow at @down 12:5 (call)\n    \
                 the stack is exhausted (SIGSEGV at address 0x"
            ),
            "{t}: {text}"
        );
        // The backtrace: the site and 63 recursive calls (64 frames at most).
        assert_eq!(f.outer, vec!["@down 12:5 (call)"; 63], "{t}");
        // The documented legal depth runs.
        let r = run_on(t, "deep.glir", 99_998, &[]);
        assert_eq!((r.end, r.result), (End::Exited, Some(99_998)), "{t}");
    }
}

#[test]
fn reports_carry_the_ir_call_chain() {
    for t in TARGETS {
        let r = run_on(t, "nested.glir", 7, &[]);
        assert_eq!(r.end, End::Exited, "{t}");
        assert_eq!(
            r.reports[0].backtrace,
            [
                "@leaf 6:5 (adstack.push)",
                "@mid 11:5 (call)",
                "@main 16:5 (call)"
            ],
            "{t}"
        );
    }
}

/// A fault inside a host function lists the IR call chain above the call
/// that entered it, as the host JIT does: the frame-record walk from the
/// interrupted stack (the host function's own record, if it keeps one, is
/// skipped).
#[test]
fn a_fault_in_a_host_function_lists_the_ir_call_chain() {
    for t in TARGETS {
        let r = run_on(t, "nested_host_null.glir", 0, &["deref.c"]);
        assert_eq!(r.end, End::Crashed { signal: 11 }, "{t}: {r:?}");
        let f = r.fault.unwrap_or_else(|| panic!("{t}: no fault"));
        assert!(f.in_host, "{t}");
        assert_eq!(f.outer, ["@main 10:5 (call)"], "{t}");
        let text = f.report().to_string();
        assert!(
            text.contains("    in a host function called by this IR call\n    #0 @mid 5:5 (call)\n    #1 @main 10:5 (call)\n    seen 1 time(s)\n"),
            "{t}: {text}"
        );
        let j: serde_json::Value = serde_json::from_str(&f.report().json().to_string()).unwrap();
        assert_eq!(
            j["backtrace"],
            serde_json::json!(["@mid 5:5 (call)", "@main 10:5 (call)"]),
            "{t}"
        );
    }
}
