//! Faults on the object paths (issue 16): a fatal signal in IR code or in
//! a host function it called is a `host_fault` (or `stack_overflow`) report
//! at its IR site, after the reports recorded before it, formatted as the
//! host JIT's fault handler formats it (its texts are pinned by
//! jit/tests/fault.rs); reports carry the IR call chain as on the host.

use guardlift_aot::{build, build_with_host, End, TargetRun};
use guardlift_jit::Target;
use guardlift_runtime::{Mode, ReportKind};
use std::path::PathBuf;

/// x86_64 natively, aarch64 and riscv64 under qemu-user.
const TARGETS: [Target; 3] = [Target::X86_64, Target::Aarch64, Target::Riscv64];

fn parse(text: &str) -> guardlift_ir::Module {
    guardlift_ir::parse_and_verify(text).unwrap_or_else(|e| panic!("{}", e.with_file("test")))
}

/// Line 5 overflows an adstack (recorded in recover mode), line 6 is `line6`.
fn report_then(line6: &str) -> String {
    format!(
        "fn @main(%p: i64) -> i64 {{
entry:
    %s = adstack.alloc.i64 1
    guard.adstack.push %s, %p
    guard.adstack.push %s, %p
    {line6}
    %n = adstack.len %s
    return %n
}}
"
    )
}

fn run_on(t: Target, text: &str, arg: u64, host_c: &[PathBuf]) -> TargetRun {
    let b = build_with_host(&parse(text), "main", t, Mode::Recover, host_c)
        .unwrap_or_else(|e| panic!("{t}: {e}"));
    b.run(&[arg]).unwrap_or_else(|e| panic!("{t}: {e}"))
}

/// The adstack report at `@main report_line:5`, then the fault whose human
/// form starts with `head` and contains each of `more`.
fn assert_report_then_fault(t: Target, r: &TargetRun, report_line: u32, head: &str, more: &[&str]) {
    assert_eq!(r.end, End::Crashed { signal: 11 }, "{t}: {r:?}");
    let kinds: Vec<(ReportKind, u32)> = r.reports.iter().map(|r| (r.kind, r.info.line)).collect();
    assert_eq!(kinds, [(ReportKind::AdstackOverflow, report_line)], "{t}");
    let f = r
        .fault
        .as_ref()
        .unwrap_or_else(|| panic!("{t}: no fault: {r:?}"));
    let text = f.report().to_string();
    assert!(text.starts_with(head), "{t}: {text}");
    for m in more {
        assert!(text.contains(m), "{t}: {m:?} not in {text}");
    }
    // The JSON line is valid JSON with the same fields.
    let j: serde_json::Value = serde_json::from_str(&f.report().json().to_string()).unwrap();
    assert_eq!(j["kind"], "host_fault", "{t}");
    assert_eq!(j["signal"], "SIGSEGV", "{t}");
}

#[test]
fn a_report_then_a_wild_load() {
    for t in TARGETS {
        let r = run_on(t, &report_then("%v = load.i64 %p, 8"), 16, &[]);
        assert_report_then_fault(
            t,
            &r,
            5,
            "==guardlift== ERROR: host_fault at @main 6:5 (load)\n    SIGSEGV at address 0x18, pc 0x",
            &["seen 1 time(s)"],
        );
        assert!(!r.fault.unwrap().in_host, "{t}");
    }
}

#[test]
fn a_wild_store() {
    for t in TARGETS {
        let r = run_on(t, &report_then("store %p, %p, 16"), 16, &[]);
        assert_report_then_fault(
            t,
            &r,
            5,
            "==guardlift== ERROR: host_fault at @main 6:5 (store)\n    SIGSEGV at address 0x20",
            &[],
        );
    }
}

/// A host function in C that dereferences its argument.
fn deref_c() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("guardlift-aot-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("deref.c");
    std::fs::write(
        &p,
        "#include <stdint.h>\nint64_t deref(int64_t p) { return *(volatile int64_t *)(intptr_t)p; }\n",
    )
    .unwrap();
    p
}

#[test]
fn a_null_dereference_in_a_host_function_is_placed_at_the_call() {
    let c = deref_c();
    // One line more at the top: the overflow is line 6, the call line 7.
    let text = format!(
        "extern fn @deref(i64) -> i64\n{}",
        report_then("%v = call @deref(%p)")
    );
    for t in TARGETS {
        let r = run_on(t, &text, 0, std::slice::from_ref(&c));
        assert_report_then_fault(
            t,
            &r,
            6,
            "==guardlift== ERROR: host_fault at @main 7:5 (call)\n    SIGSEGV at address 0x0, pc 0x",
            &["    in a host function called by this IR call\n"],
        );
        assert!(r.fault.unwrap().in_host, "{t}");
    }
}

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

#[test]
fn recursion_1e8_deep_is_a_stack_overflow_at_the_call() {
    for t in TARGETS {
        let r = run_on(t, DEEP, 100_000_000, &[]);
        let f = r.fault.unwrap_or_else(|| panic!("{t}: {:?}", r.end));
        assert!(f.stack_overflow, "{t}: {f:?}");
        let text = f.report().to_string();
        assert!(
            text.starts_with("==guardlift== ERROR: stack_overflow at @down 11:5 (call)\n    the stack is exhausted (SIGSEGV at address 0x"),
            "{t}: {text}"
        );
        // Legal depth runs.
        let r = run_on(t, DEEP, 99_998, &[]);
        assert_eq!((r.end, r.result), (End::Exited, Some(99_998)), "{t}");
    }
}

/// `@leaf` overflows an adstack at 5:5; `@mid` calls it at 10:5, `@main` `@mid` at 15:5.
const NESTED: &str = "fn @leaf(%p: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 1
    guard.adstack.push %s, %p
    guard.adstack.push %s, %p
    return %p
}
fn @mid(%p: i64) -> i64 {
entry:
    %r = call @leaf(%p)
    return %r
}
fn @main(%p: i64) -> i64 {
entry:
    %r = call @mid(%p)
    return %r
}
";

#[test]
fn reports_carry_the_ir_call_chain() {
    for t in TARGETS {
        let r = build(&parse(NESTED), "main", t, Mode::Recover)
            .unwrap()
            .run(&[7])
            .unwrap();
        assert_eq!(r.end, End::Exited, "{t}");
        assert_eq!(
            r.reports[0].backtrace,
            [
                "@leaf 5:5 (adstack.push)",
                "@mid 10:5 (call)",
                "@main 15:5 (call)"
            ],
            "{t}"
        );
    }
}

/// A host function in C that executes an illegal instruction (not a
/// guard's trap: it is not in the program's trap table).
fn illegal_c() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("guardlift-aot-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("illegal.c");
    std::fs::write(
        &p,
        "#include <stdint.h>\n\
         int64_t illegal(int64_t p) {\n\
         #if defined(__x86_64__)\n  __asm__ volatile(\"ud2\");\n\
         #elif defined(__aarch64__)\n  __asm__ volatile(\".inst 0x00000000\");\n\
         #else\n  __asm__ volatile(\".4byte 0x00000000\");\n#endif\n  return p;\n}\n",
    )
    .unwrap();
    p
}

/// A SIGILL that is not a guard's trap is a host_fault like a segfault
/// (before: a bare fatal "trap instruction that is not a guard's").
#[test]
fn an_illegal_instruction_in_a_host_function_is_a_host_fault() {
    let c = illegal_c();
    let text = "extern fn @illegal(i64) -> i64\nfn @main(%p: i64) -> i64 {\nentry:\n    %v = call @illegal(%p)\n    return %v\n}\n";
    for t in TARGETS {
        let r = run_on(t, text, 3, std::slice::from_ref(&c));
        assert_eq!(r.end, End::Crashed { signal: 4 }, "{t}: {r:?}");
        let f = r.fault.unwrap_or_else(|| panic!("{t}: no fault"));
        let text = f.report().to_string();
        assert!(
            text.starts_with(
                "==guardlift== ERROR: host_fault at @main 4:5 (call)\n    SIGILL at address 0x"
            ),
            "{t}: {text}"
        );
        assert!(f.in_host, "{t}");
    }
}
