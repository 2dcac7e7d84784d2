//! Faults in JIT code (spec §6.2, issue 16): a fatal signal in generated
//! code, or in a host function it called, is a `host_fault` report placed
//! at its IR site, printed after the reports recorded before it; exit 134.
//! Faults elsewhere go to the handler installed before guardlift's.
//!
//! A fault ends the process, so each case runs in a child process: this
//! binary re-executed with `GL_TEST_CHILD=<case>` and `--ignored`. The
//! `child_*` tests are `#[ignore]`d helpers: a plain `cargo test` runs only
//! their parents (which assert on the child's exit and output), and a
//! `child_*` run any other way fails saying so.

mod common;

use common::{
    assert_aborted, call, call_raw, child, install_previous_handler, parse, run_child, stderr,
    PREVIOUS_HANDLER_RAN,
};
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::process::Output;
use std::sync::Arc;

/// A recover-mode runtime (reports are recorded, the run goes on).
fn recover_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: true,
        capture_output: true,
        ..Default::default()
    })
}

/// Line 5 overflows an adstack (recorded), line 6 is `LINE6` at `%p`.
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

/// Runs `@main(arg)` of `text` in a child process that exists to take a
/// fault there.
fn run_ir(text: &str, opts: &CompileOptions, arg: u64) {
    let rt = recover_rt();
    let m = Jit::compile(&parse(text), rt, opts).unwrap();
    // SAFETY: not sound, on purpose: the wild access at line 6 (an address
    // that is not mapped) faults, and the fault handler ends this child
    // process before anything can observe what the access did.
    unsafe { call_raw(&m, "main", &[arg]) };
    eprintln!("NOT REACHED");
}

/// Asserts the recorded report (at `@main REPORT_AT`), then the fault at
/// `site`, each once.
fn assert_report_then_fault(o: &Output, report_at: &str, site: &str, more: &[&str]) {
    assert_aborted(o);
    let err = stderr(o);
    let first = err
        .find(&format!("ERROR: adstack_overflow at @main {report_at}"))
        .unwrap_or_else(|| panic!("the earlier report is missing:\n{err}"));
    let fault = err
        .find(&format!("ERROR: host_fault at {site}"))
        .unwrap_or_else(|| panic!("no host_fault at {site}:\n{err}"));
    assert!(first < fault, "the earlier report comes first:\n{err}");
    assert_eq!(err.matches("==guardlift== ERROR").count(), 2, "{err}");
    for m in more {
        assert!(err.contains(m), "stderr lacks {m:?}:\n{err}");
    }
    assert!(!err.contains("NOT REACHED"), "{err}");
}

#[test]
fn a_report_then_a_wild_load() {
    let o = run_child("wild_load", &[]);
    assert_report_then_fault(&o, "5:5", "@main 6:5 (load)", &["SIGSEGV at address 0x18"]);
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_wild_load() {
    child("child_wild_load");
    run_ir(
        &report_then("%v = load.i64 %p, 8"),
        &CompileOptions::default(),
        16,
    );
}

#[test]
fn a_wild_store() {
    let o = run_child("wild_store", &[]);
    assert_report_then_fault(&o, "5:5", "@main 6:5 (store)", &["SIGSEGV at address 0x20"]);
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_wild_store() {
    child("child_wild_store");
    run_ir(
        &report_then("store %p, %p, 16"),
        &CompileOptions::default(),
        16,
    );
}

extern "C" fn host_null_deref(p: i64) -> i64 {
    // SAFETY: deliberately not: reads from address `p` (0 in the test).
    unsafe { std::ptr::read_volatile(p as usize as *const i64) }
}

/// A null dereference inside a host function called from IR is placed at
/// the IR call.
#[test]
fn a_null_dereference_in_a_host_function_is_placed_at_the_call() {
    let o = run_child("host_null", &[]);
    assert_report_then_fault(
        &o,
        "6:5",
        "@main 7:5 (call)",
        &[
            "SIGSEGV at address 0x0",
            "in a host function called by this IR call",
        ],
    );
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_host_null() {
    child("child_host_null");
    // One line more at the top: the overflow is line 6, the call line 7.
    let text = format!(
        "extern fn @deref(i64) -> i64\n{}",
        report_then("%v = call @deref(%p)")
    );
    // SAFETY: `host_null_deref` has the extern's signature; its null
    // read is the fault this child process exists to take (it dies of
    // it, reported, before anything could observe the bad access).
    let opts = unsafe { CompileOptions::default().symbol("deref", host_null_deref as *const u8) };
    run_ir(&text, &opts, 0);
}

/// A fault outside guardlift code goes to the handler installed before
/// guardlift's (here a host's; Rust's own or the default otherwise).
#[test]
fn a_fault_outside_guardlift_code_goes_to_the_previous_handler() {
    let o = run_child("chain", &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(42), "{err}");
    assert!(err.contains(PREVIOUS_HANDLER_RAN), "{err}");
    assert!(!err.contains("==guardlift=="), "{err}");
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_chain() {
    child("child_chain");
    install_previous_handler(libc::SIGSEGV);
    let m = Jit::compile(
        &parse(&report_then("%v = iadd %p, %p")),
        recover_rt(),
        &CompileOptions::default(),
    )
    .unwrap();
    assert_eq!(call(&m, "main", &[3]), Some(1));
    // A wild read from Rust code, outside any call into compiled code.
    host_null_deref(0);
    eprintln!("NOT REACHED");
}

/// The fault handler runs on the alternate stack: recursion in JIT code
/// past the end of a thread's stack is a `stack_overflow` report.
#[test]
fn jit_recursion_past_the_stack_is_a_stack_overflow_report() {
    let o = run_child("overflow", &[]);
    assert_aborted(&o);
    let err = stderr(&o);
    assert!(
        err.contains("==guardlift== ERROR: stack_overflow at @down 4:5 (call)"),
        "{err}"
    );
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_overflow() {
    child("child_overflow");
    let text = "fn @down(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %r = call @down(%n)
    %s = iadd %r, %one
    return %s
}
";
    let m = Jit::compile(&parse(text), recover_rt(), &CompileOptions::default()).unwrap();
    let f = m.safe_func::<(i64,), i64>("down").unwrap();
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || f.call((0,)))
        .unwrap()
        .join()
        .unwrap();
    eprintln!("NOT REACHED");
}
