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

// ---- issue 28 item 8: a host's own handler sees faults in host functions first ----

/// What the host handlers below write when they run.
const HOST_FIXED: &str = "host handler fixed the page";
const HOST_DECLINED: &str = "host handler left the fault alone";

fn write_stderr(msg: &str) {
    // SAFETY: write(2) is async-signal-safe; `msg` is valid for its length.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// A host's SIGSEGV handler (installed before guardlift's) that resolves
/// the fault: makes the faulting page readable and returns.
extern "C" fn fixing_handler(
    _sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _uc: *mut libc::c_void,
) {
    // SAFETY: the kernel's siginfo of a SIGSEGV; mprotect is
    // async-signal-safe and the page is the test's own mapping.
    unsafe {
        let page = (*info).si_addr() as usize & !4095;
        libc::mprotect(
            page as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        );
    }
    write_stderr(HOST_FIXED);
}

/// A host's SIGSEGV handler that does not resolve the fault.
extern "C" fn declining_handler(
    _sig: libc::c_int,
    _info: *mut libc::siginfo_t,
    _uc: *mut libc::c_void,
) {
    write_stderr(HOST_DECLINED);
}

fn install_host_handler(h: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)) {
    // SAFETY: a zeroed sigaction filled in with an SA_SIGINFO handler that
    // only calls async-signal-safe functions is a valid disposition.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = h as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
}

/// The host function: reads the i64 at `p`.
extern "C" fn host_read(p: i64) -> i64 {
    // SAFETY: deliberately not always: `p` is a PROT_NONE page the host's
    // handler may make readable.
    unsafe { std::ptr::read_volatile(p as usize as *const i64) }
}

/// `@main(p)` calls the host function `@read(p)` (line 4).
const CALLS_HOST_READ: &str = "extern fn @read(i64) -> i64
fn @main(%p: i64) -> i64 {
entry:
    %v = call @read(%p)
    return %v
}
";

/// Runs [`CALLS_HOST_READ`] on a fresh PROT_NONE page with `handler`
/// installed before guardlift's; prints the result.
fn run_host_read_on_protected_page(
    handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
) {
    install_host_handler(handler);
    // SAFETY: an anonymous private mapping of one page, no access.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: `host_read` has the extern's signature.
    let opts = unsafe { CompileOptions::default().symbol("read", host_read as *const u8) };
    let m = Jit::compile(&parse(CALLS_HOST_READ), recover_rt(), &opts).unwrap();
    // SAFETY: the read of the protected page faults on purpose; the host's
    // handler resolves it, or guardlift's reports it and ends the process.
    let r = unsafe { call_raw(&m, "main", &[page as u64]) };
    eprintln!("RESULT {r:?}");
}

/// A fault in a host function that the host's own handler (installed
/// before guardlift) resolves is not guardlift's: the run finishes.
#[test]
fn a_host_handler_that_resolves_a_fault_in_a_host_function_lets_the_run_finish() {
    let o = run_child("host_fixes", &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.matches(HOST_FIXED).count(), 1, "{err}");
    assert!(err.contains("RESULT Some(0)"), "{err}");
    assert!(!err.contains("==guardlift=="), "{err}");
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_host_fixes() {
    child("child_host_fixes");
    run_host_read_on_protected_page(fixing_handler);
}

/// One the host's handler does not resolve is a `host_fault` at the IR call.
#[test]
fn a_fault_the_host_handler_leaves_is_a_host_fault() {
    let o = run_child("host_declines", &[]);
    assert_aborted(&o);
    let err = stderr(&o);
    assert_eq!(err.matches(HOST_DECLINED).count(), 1, "{err}");
    assert!(
        err.contains("==guardlift== ERROR: host_fault at @main 4:5 (call)"),
        "{err}"
    );
    assert!(
        err.contains("in a host function called by this IR call"),
        "{err}"
    );
    assert!(!err.contains("RESULT"), "{err}");
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_host_declines() {
    child("child_host_declines");
    run_host_read_on_protected_page(declining_handler);
}
