//! Trap mode in the JIT: real trap instructions, the signal handler's
//! reports, the trap-site registry's lifetime, chaining to a previously
//! installed handler, and several threads trapping at once.
//!
//! A trap ends the process, so each trapping case runs in a child process:
//! this test binary re-executed with `GL_TEST_CHILD=<case>`, `--ignored` and
//! a filter selecting the `child_*` test of that name. The `child_*` tests
//! are `#[ignore]`d helpers: a plain `cargo test` runs only their parents
//! (which assert on the child's exit and output), and a `child_*` run any
//! other way fails saying so.

mod common;

use common::{
    assert_aborted, call, call_raw, child, compile, install_previous_handler, parse, run_child,
    signal_of, stderr, PREVIOUS_HANDLER_RAN,
};
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, ReportKind, Runtime, RuntimeConfig};
use std::sync::Arc;

/// A trap-mode runtime that ends the process on a violation (phoenix
/// layout, as every module here).
fn trap_rt() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Trap,
        abort_process: true,
        capture_output: true,
        layout: guardlift_runtime::layout::DictLayout::preset("phoenix").unwrap(),
    })
}

/// Every kind of guard, each reachable by a selector argument.
const ALL_KINDS: &str = "
layout phoenix
extern fn @obj_new(i64) -> ptr
extern fn @fault_clear_lsb(ptr)
fn @main(%sel: i64) -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    %z = iconst.i64 0
    %is0 = icmp.eq %sel, %z
    brif %is0, dict, n1
n1:
    %one = iconst.i64 1
    %is1 = icmp.eq %sel, %one
    brif %is1, over, n2
n2:
    %two2 = iconst.i64 2
    %is2 = icmp.eq %sel, %two2
    brif %is2, under, n3
n3:
    %three = iconst.i64 3
    %is3 = icmp.eq %sel, %three
    brif %is3, clob, fine
dict:
    call @fault_clear_lsb(%o)
    %v = iconst.i64 5
    guard.store_attr %o, 1, %v
    return %v
over:
    %s = adstack.alloc.i64 2
    guard.adstack.push %s, %sel
    guard.adstack.push %s, %sel
    guard.adstack.push %s, %sel
    %n = adstack.len %s
    return %n
under:
    %u = adstack.alloc.f64 4
    %t = guard.adstack.top %u
    %ti = fcvt_to_sint.i64 %t
    return %ti
clob:
    %b = iconst.i8 -2
    guard.store %b, %o, 0x18
    return %z
fine:
    %w = guard.load_attr %o, 0
    return %w
}
";

#[test]
fn trap_mode_traps_and_reports_every_kind() {
    let cases: &[(&str, &[&str])] = &[
        (
            "dict",
            &[
                "ERROR: dict_slot_tag at @main 27:5 (store_attr), site 0",
                "low bits 0b110",
                "trap mode: SIGILL at pc 0x",
                "seen 1 time(s)",
            ],
        ),
        (
            "over",
            &[
                "ERROR: adstack_overflow at @main 33:5 (adstack.push), site 3",
                "push into a full adstack: len 2, capacity 2",
            ],
        ),
        (
            "under",
            &[
                "ERROR: adstack_underflow at @main 38:5 (adstack.top), site 4",
                "access to an empty adstack: len 0, capacity 4",
            ],
        ),
        (
            "clob",
            &[
                "ERROR: slot_clobber at @main 43:5 (store), site 5",
                "raw store of 1 byte(s) at 0x",
                "(value 0xfe) overlaps a watched managed-dict slot",
            ],
        ),
    ];
    for (case, want) in cases {
        let o = run_child(&format!("kind_{case}"), &[]);
        assert_aborted(&o);
        let err = stderr(&o);
        for w in *want {
            assert!(err.contains(w), "{case}: stderr lacks {w:?}:\n{err}");
        }
        assert_eq!(err.matches("==guardlift==").count(), 1, "{case}: {err}");
        assert!(
            !err.contains("NOT REACHED"),
            "{case}: code ran after the trap"
        );
    }
}

fn kind_child(sel: u64) {
    let rt = trap_rt();
    let m = compile(ALL_KINDS, &rt);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new (its raw store is to that object's dict slot).
    unsafe { call_raw(&m, "main", &[sel]) };
    eprintln!("NOT REACHED");
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_kind_dict() {
    child("child_kind_dict");
    kind_child(0)
}
#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_kind_over() {
    child("child_kind_over");
    kind_child(1)
}
#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_kind_under() {
    child("child_kind_under");
    kind_child(2)
}
#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_kind_clob() {
    child("child_kind_clob");
    kind_child(3)
}

#[test]
fn dict_report_object_and_word_are_the_observed_ones() {
    let o = run_child("dict_values", &[]);
    assert_aborted(&o);
    let err = stderr(&o);
    let obj_line = err
        .lines()
        .find(|l| l.starts_with("OBJ "))
        .unwrap_or_else(|| panic!("no OBJ line: {err}"));
    let obj = obj_line.trim_start_matches("OBJ ");
    // phoenix: the word is at obj + 0x18; the object was built values-tagged.
    assert!(
        err.contains(&format!("object {obj}: managed-dict word 0x")),
        "{err}"
    );
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_dict_values() {
    child("child_dict_values");
    let text = "
layout phoenix
extern fn @fault_clear_lsb(ptr)
fn @main(%o: ptr) -> i64 {
entry:
    call @fault_clear_lsb(%o)
    %w = guard.load_attr %o, 0
    return %w
}
";
    let rt = trap_rt();
    let obj = rt.obj_new(2);
    eprintln!("OBJ {obj:#x}");
    let m = compile(text, &rt);
    // SAFETY: `obj` is a live object of `rt` with 2 attributes; @main
    // accesses its dict slot and attribute 0.
    unsafe { call_raw(&m, "main", &[obj]) };
    eprintln!("NOT REACHED");
}

#[test]
fn no_violation_means_no_trap_and_the_right_result() {
    let rt = trap_rt();
    let m = compile(ALL_KINDS, &rt);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new (its raw store is to that object's dict slot).
    assert_eq!(unsafe { call_raw(&m, "main", &[9]) }, Some(0));
    assert!(rt.take_reports().is_empty());
}

#[test]
fn trap_sites_are_registered_while_the_code_lives() {
    // In a child: no other test registers concurrently there.
    let o = run_child("registry", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("REGISTRY OK"), "{}", stderr(&o));
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_registry() {
    child("child_registry");
    use guardlift_runtime::trap::registered_pcs;
    assert!(registered_pcs().is_empty());
    let rt = trap_rt();
    let m = compile(ALL_KINDS, &rt);
    let f = m.func::<i64, i64>("main").unwrap();
    let pcs = registered_pcs();
    // One trap per guard whose failure Cranelift could not rule out (the
    // first two pushes onto the fresh stack provably fit: their cold
    // blocks are folded away).
    assert!((5..=7).contains(&pcs.len()), "{pcs:x?}");
    let m2 = compile(ALL_KINDS, &rt);
    assert_eq!(registered_pcs().len(), 2 * pcs.len());
    drop(m2);
    assert_eq!(registered_pcs(), pcs);
    drop(m);
    // A typed handle keeps the code, and so the registration.
    assert_eq!(registered_pcs(), pcs);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new.
    assert_eq!(unsafe { f.call(9) }, 0);
    drop(f);
    assert!(registered_pcs().is_empty());
    // Recover and abort modes register nothing.
    for mode in [Mode::Recover, Mode::Abort] {
        let rt = Runtime::new(RuntimeConfig {
            mode,
            abort_process: false,
            capture_output: true,
            layout: trap_rt().layout(),
        });
        let _m = compile(ALL_KINDS, &rt);
        assert!(registered_pcs().is_empty());
    }
    eprintln!("REGISTRY OK");
}

#[test]
fn uninstrumented_code_registers_nothing_and_has_no_trap_code() {
    let text = "
layout phoenix
extern fn @obj_new(i64) -> ptr
fn @main() -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    %v = iconst.i64 5
    store_attr %o, 1, %v
    %w = load_attr %o, 1
    return %w
}
";
    let m = parse(text);
    let asm = guardlift_jit::emit_asm(
        &m,
        guardlift_jit::Target::Host,
        &guardlift_jit::EmitOptions {
            mode: Mode::Trap,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!asm.contains("ud2") && !asm.contains("udf"), "{asm}");
    assert!(!asm.contains("trap=user"), "{asm}");
    let rt = trap_rt();
    let code = Jit::compile(&m, rt, &CompileOptions::default()).unwrap();
    // SAFETY: @main accesses only the object it makes with @obj_new.
    assert_eq!(unsafe { code.call_dynamic("main", &[]) }.unwrap(), Some(5));
}

#[test]
fn trap_mode_without_abort_process_is_lowered_like_abort() {
    // A trap cannot return a verdict: a runtime that must not end the
    // process gets the report-call lowering and records the violation.
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Trap,
        abort_process: false,
        capture_output: true,
        layout: trap_rt().layout(),
    });
    let m = compile(ALL_KINDS, &rt);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new (its raw store is to that object's dict slot).
    unsafe { call_raw(&m, "main", &[0]) };
    let r = rt.take_reports();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].kind, ReportKind::DictSlotTag);
}

#[test]
fn trap_mode_asm_has_the_same_fast_path_and_a_trap() {
    let m = parse(ALL_KINDS);
    let opts = |mode| guardlift_jit::EmitOptions {
        mode,
        ..Default::default()
    };
    for target in [
        guardlift_jit::Target::X86_64,
        guardlift_jit::Target::Aarch64,
    ] {
        let trap = guardlift_jit::emit_asm(&m, target, &opts(Mode::Trap)).unwrap();
        let abort = guardlift_jit::emit_asm(&m, target, &opts(Mode::Abort)).unwrap();
        assert!(trap.contains("udf") || trap.contains("ud2"), "{trap}");
        assert!(
            !trap.contains("gl_report_"),
            "trap mode calls no report entry"
        );
        assert!(abort.contains("gl_report_dict"));
        assert!(trap.contains("gl_clobber_overlaps"));
    }
}

#[test]
fn json_log_gets_a_json_line() {
    let dir = std::env::temp_dir().join(format!("gl-trap-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log.jsonl");
    let _ = std::fs::remove_file(&log);
    let log_path = log.to_str().expect("a UTF-8 temp path");
    let o = run_child("json_log", &[("GL_TRAP_LOG", log_path)]);
    assert_aborted(&o);
    let text = std::fs::read_to_string(&log).unwrap();
    let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!("{e}: {text:?}");
    });
    assert_eq!(j["kind"], "dict_slot_tag");
    assert_eq!(j["line"], 27);
    assert_eq!(j["op"], "store_attr");
    assert_eq!(j["value_low_bits"], "0b110");
    assert_eq!(j["trap_signal"], "SIGILL");
    assert!(
        !stderr(&o).contains("==guardlift=="),
        "the report went to the log"
    );
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_json_log() {
    child("child_json_log");
    let rt = trap_rt();
    let opts = guardlift_runtime::Options {
        log_path: Some(std::env::var("GL_TRAP_LOG").unwrap()),
        json: true,
        ..Default::default()
    };
    rt.configure(&opts).unwrap();
    let m = compile(ALL_KINDS, &rt);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new (its raw store is to that object's dict slot).
    unsafe { call_raw(&m, "main", &[0]) };
}

/// Runs guardlift code that traps nothing (its handler is installed),
/// then a trap instruction that is not guardlift's; should not return.
fn foreign_trap_after_guardlift_code() {
    let rt = trap_rt();
    let m = compile(ALL_KINDS, &rt);
    // SAFETY: ALL_KINDS's @main accesses only the object it makes with
    // @obj_new (its raw store is to that object's dict slot).
    assert_eq!(unsafe { call_raw(&m, "main", &[9]) }, Some(0));
    // SAFETY: deliberately raises SIGILL.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::asm!("ud2");
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("udf #0");
    }
    eprintln!("NOT REACHED");
}

#[test]
fn a_foreign_trap_goes_to_the_previous_handler() {
    let o = run_child("chain_handler", &[]);
    assert_eq!(o.status.code(), Some(42), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains(PREVIOUS_HANDLER_RAN), "{}", stderr(&o));
    assert!(!stderr(&o).contains("==guardlift=="));
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_chain_handler() {
    child("child_chain_handler");
    install_previous_handler(libc::SIGILL);
    foreign_trap_after_guardlift_code();
}

#[test]
fn a_foreign_trap_without_previous_handler_dies_of_sigill() {
    let o = run_child("chain_default", &[]);
    assert_eq!(
        signal_of(&o),
        Some(libc::SIGILL),
        "{:?}\n{}",
        o.status,
        stderr(&o)
    );
    assert!(!stderr(&o).contains("==guardlift=="));
    assert!(!stderr(&o).contains("NOT REACHED"));
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_chain_default() {
    child("child_chain_default");
    foreign_trap_after_guardlift_code();
}

#[test]
fn eight_threads_trapping_at_once_give_one_consistent_report() {
    for _ in 0..3 {
        let o = run_child("threads", &[]);
        assert_aborted(&o);
        let err = stderr(&o);
        assert_eq!(err.matches("==guardlift==").count(), 1, "{err}");
        // The values shown are the reporting site's own: each thread's
        // adstack has capacity (thread + 1), and it reports len == capacity.
        let line = err
            .lines()
            .find(|l| l.contains("push into a full adstack"))
            .unwrap_or_else(|| panic!("{err}"));
        let nums: Vec<u64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect();
        assert_eq!(nums.len(), 2, "{line}");
        assert_eq!(nums[0], nums[1], "len == capacity: {line}");
        let site: u64 = err
            .lines()
            .next()
            .and_then(|l| l.rsplit("site ").next())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("{err}"));
        assert_eq!(nums[1], site + 1, "capacity of the reporting site: {err}");
    }
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_threads() {
    child("child_threads");
    // Function @f<k> overflows an adstack of capacity k + 1 (site k).
    let mut text = String::from("layout phoenix\n");
    for k in 0..8 {
        text.push_str(&format!(
            "fn @f{k}() -> i64 {{\nentry:\n    %s = adstack.alloc.i64 {cap}\n    %z = iconst.i64 0\n    jump l(%z)\nl(%i: i64):\n    guard.adstack.push %s, %i\n    %one = iconst.i64 1\n    %i1 = iadd %i, %one\n    jump l(%i1)\n}}\n",
            cap = k + 1
        ));
    }
    let rt = trap_rt();
    let m = compile(&text, &rt);
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let hs: Vec<_> = (0..8)
        .map(|k| {
            let f = m.safe_func::<(), i64>(&format!("f{k}")).unwrap();
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                let r = f.call(());
                panic!("@f{k} returned {r} instead of trapping");
            })
        })
        .collect();
    // The first trap ends the process: no thread may get here.
    for (k, h) in hs.into_iter().enumerate() {
        assert!(h.join().is_err(), "thread {k} ended without a trap");
    }
    panic!("NOT REACHED: every thread returned and none trapped");
}

/// Overflows a capacity-1 adstack when `%sel` ≠ 0; `@NAME` is the function.
fn overflow_when_nonzero(name: &str) -> String {
    format!(
        "layout phoenix
fn @{name}(%sel: i64) -> i64 {{
entry:
    %s = adstack.alloc.i64 1
    %z = iconst.i64 0
    %go = icmp.ne %sel, %z
    brif %go, push, done
push:
    guard.adstack.push %s, %sel
    guard.adstack.push %s, %sel
    jump done
done:
    %n = adstack.len %s
    return %n
}}
"
    )
}

/// Issue 13 #9: a name of any length is printed whole by the handler (it
/// was cut at 128 characters without a marker).
#[test]
fn a_long_function_name_is_reported_whole() {
    let o = run_child("long_name", &[]);
    assert_aborted(&o);
    let name = format!("f{}", "n".repeat(400));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("adstack_overflow at @{name} 10:5")),
        "{err}"
    );
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_long_name() {
    child("child_long_name");
    let name = format!("f{}", "n".repeat(400));
    let rt = trap_rt();
    let m = compile(&overflow_when_nonzero(&name), &rt);
    call(&m, &name, &[1]);
    eprintln!("NOT REACHED");
}

/// Issue 13 #9: the handler runs on an alternate signal stack, so a trap on
/// a thread with little stack left (a host thread without an alternate
/// stack of its own) is still reported instead of dying of SIGSEGV.
#[test]
fn a_trap_with_little_stack_left_is_reported() {
    let o = run_child("low_stack", &[]);
    assert_aborted(&o);
    let err = stderr(&o);
    assert!(err.contains("adstack_overflow at @f 10:5"), "{err}");
    assert!(err.contains("deep enough"), "{err}");
}

/// Stack bytes left below `here` on the calling thread.
fn stack_left(here: usize) -> usize {
    // SAFETY: querying the calling thread's attributes.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size = 0usize;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        here - addr as usize
    }
}

/// Eats stack until fewer than `left` bytes remain, then runs `f` there.
#[inline(never)]
fn with_stack_left(left: usize, f: &dyn Fn()) {
    let pad = std::hint::black_box([0u8; 256]);
    if stack_left(pad.as_ptr() as usize) > left {
        with_stack_left(left, f);
    } else {
        eprintln!("deep enough");
        f();
    }
    std::hint::black_box(pad);
}

extern "C" fn low_stack_thread(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: the parent passes a SafeFunc that outlives the thread.
    let f = unsafe { &*(arg as *const guardlift_jit::SafeFunc<(i64,), i64>) };
    // The first call (no violation) sets the thread up; the trapping one
    // runs with under 1.5 KiB of stack below it.
    assert_eq!(f.call((0,)), 0);
    with_stack_left(1536, &|| {
        f.call((1,));
    });
    std::ptr::null_mut()
}

#[test]
#[ignore = "helper: run in a child process by its parent test"]
fn child_low_stack() {
    child("child_low_stack");
    let rt = trap_rt();
    let m = compile(&overflow_when_nonzero("f"), &rt);
    let f = m.safe_func::<(i64,), i64>("f").unwrap();
    // A raw pthread: unlike std threads it has no alternate signal stack.
    // SAFETY: plain pthread calls; `f` outlives the joined thread.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 256 << 10);
        let mut t: libc::pthread_t = std::mem::zeroed();
        let arg = &f as *const _ as *mut libc::c_void;
        assert_eq!(
            libc::pthread_create(&mut t, &attr, low_stack_thread, arg),
            0
        );
        libc::pthread_join(t, std::ptr::null_mut());
    }
    eprintln!("NOT REACHED");
}
