//! Unwind info of JIT code registered with the process's unwinder
//! (`guardlift_jit::unwind`): a host function that IR code calls walks the
//! stack (`std::backtrace` and the `backtrace` crate, both libgcc's
//! `_Unwind_Backtrace`) through the JIT frames into the Rust function that
//! called the module — and stops at the JIT frames when registration is
//! off; dropping a module withdraws its tables.

mod common;
use common::*;
use guardlift_jit::{unwind, CompileOptions, CompiledModule, Jit, TypedFunc};
use std::sync::Mutex;

/// `@enter` → `@inner` → the host's `@capture`.
const CALLS_HOST: &str = "extern fn @capture(i64) -> i64
fn @inner(%x: i64) -> i64 {
entry:
    %y = call @capture(%x)
    %one = iconst.i64 1
    %z = iadd %y, %one
    return %z
}
fn @enter(%x: i64) -> i64 {
entry:
    %y = call @inner(%x)
    %z = iadd %y, %x
    return %z
}
";

/// The tests of this binary count process-wide registrations: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// What the host function saw of its stack, innermost first.
#[derive(Default)]
struct Seen {
    /// `std::backtrace::Backtrace::force_capture()`, formatted.
    std_trace: String,
    /// Per frame of the `backtrace` crate's walk: the IR function when the
    /// return address is JIT code, else the symbol names.
    frames: Vec<Frame>,
}

#[derive(Debug)]
enum Frame {
    Jit { function: String, pc: usize },
    Host(Vec<String>),
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);

/// The Rust functions below the JIT frames that the walks must reach
/// (`called_from_rust_below_jit`, `dynamic_call_from_rust_below_jit`).
const MARKER: &str = "_from_rust_below_jit";

extern "C" fn capture(x: i64) -> i64 {
    let std_trace = format!("{}", std::backtrace::Backtrace::force_capture());
    let mut frames = Vec::new();
    backtrace::trace(|f| {
        // A return address: the call is the instruction before it.
        let pc = f.ip() as usize;
        let at = pc.saturating_sub(1);
        match guardlift_runtime::codemap::owner_of(at) {
            Some((code, _)) => frames.push(Frame::Jit {
                function: code.function.clone(),
                pc: at,
            }),
            None => {
                let mut names = Vec::new();
                backtrace::resolve(at as *mut std::ffi::c_void, |s| {
                    if let Some(n) = s.name() {
                        names.push(format!("{n:#}"));
                    }
                });
                frames.push(Frame::Host(names));
            }
        }
        frames.len() < 200
    });
    *SEEN.lock().unwrap() = Some(Seen { std_trace, frames });
    x * 2
}

fn compile_calls_host(opts: CompileOptions) -> CompiledModule {
    // SAFETY: `capture` has the extern's signature (i64) -> i64 and may be
    // called from any thread.
    let opts = unsafe { opts.symbol("capture", capture as *const u8) };
    let rt = recover_rt();
    Jit::compile(&parse(CALLS_HOST), rt, &opts).unwrap()
}

#[inline(never)]
fn called_from_rust_below_jit(f: &TypedFunc<(i64,), i64>, x: i64) -> i64 {
    // SAFETY: the module touches no memory; `capture` only records its stack.
    let r = unsafe { f.call((x,)) };
    // Not a tail call: this frame is on the stack during the call.
    std::hint::black_box(r)
}

#[inline(never)]
fn dynamic_call_from_rust_below_jit(m: &CompiledModule, x: i64) -> i64 {
    // SAFETY: as above.
    let r = unsafe { m.call_dynamic("enter", &[x as u64]) }.unwrap();
    std::hint::black_box(r.unwrap() as i64)
}

fn take_seen() -> Seen {
    SEEN.lock().unwrap().take().expect("the host function ran")
}

fn is_marker(f: &Frame) -> bool {
    matches!(f, Frame::Host(names) if names.iter().any(|n| n.contains(MARKER)))
}

/// Index of the first frame of IR function `name`.
fn jit_frame(s: &Seen, name: &str) -> Option<usize> {
    s.frames
        .iter()
        .position(|f| matches!(f, Frame::Jit { function, .. } if function == name))
}

/// The walk goes capture → @inner → @enter → the marker, in that order, and
/// std's backtrace names the marker too.
fn assert_walks_through(s: &Seen, how: &str) {
    let inner = jit_frame(s, "inner");
    let enter = jit_frame(s, "enter");
    let marker = s.frames.iter().position(is_marker);
    assert!(
        matches!((inner, enter, marker), (Some(i), Some(e), Some(m)) if i < e && e < m),
        "{how}: expected @inner, @enter, then {MARKER}; frames: {:#?}",
        s.frames
    );
    assert!(
        s.std_trace.contains(MARKER),
        "{how}: std::backtrace stops short of {MARKER}:\n{}",
        s.std_trace
    );
}

#[test]
fn backtraces_walk_through_jit_frames_into_the_host() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = compile_calls_host(CompileOptions::default());
    let (registered, missing) = m.unwind_registered();
    assert_eq!(missing, 0, "every code unit has its unwind info registered");
    assert!(registered >= 2, "@inner and @enter: {registered}");
    let f = m.func::<(i64,), i64>("enter").unwrap();
    assert_eq!(called_from_rust_below_jit(&f, 5), 5 * 2 + 1 + 5);
    assert_walks_through(&take_seen(), "typed call");
    // Through the dynamic-call trampoline (compiled, and registered, now).
    assert_eq!(dynamic_call_from_rust_below_jit(&m, 7), 7 * 2 + 1 + 7);
    let s = take_seen();
    assert_walks_through(&s, "dynamic call");
    assert!(
        s.frames.iter().any(
            |f| matches!(f, Frame::Host(names) if names.iter().any(|n| n.contains("call_dynamic")))
        ),
        "the walk passes the trampoline into call_dynamic: {:#?}",
        s.frames
    );
}

/// Without registration the unwinder stops at the first JIT frame: what the
/// test above would see if registration were broken.
#[test]
fn without_registration_the_walk_stops_at_jit_code() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = unwind::registered_count();
    let m = compile_calls_host(CompileOptions::default().with_unwind(false));
    assert_eq!(m.unwind_registered(), (0, 0));
    assert_eq!(unwind::registered_count(), before);
    let f = m.func::<(i64,), i64>("enter").unwrap();
    assert_eq!(called_from_rust_below_jit(&f, 1), 4);
    let s = take_seen();
    assert!(
        jit_frame(&s, "inner").is_some(),
        "the walk starts in the host function and sees @inner's return address: {:#?}",
        s.frames
    );
    assert!(
        jit_frame(&s, "enter").is_none() && !s.frames.iter().any(is_marker),
        "unregistered JIT code ends the walk: {:#?}",
        s.frames
    );
    assert!(!s.std_trace.contains(MARKER), "{}", s.std_trace);
}

/// Every module's tables go with it: after many compile / call / drop
/// rounds the unwinder finds nothing at the freed code, the count of live
/// registrations is back where it was, and walks still work.
#[test]
fn dropping_a_module_deregisters_its_unwind_info() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = unwind::registered_count();
    for round in 0..150 {
        let m = compile_calls_host(CompileOptions::default());
        let (registered, _) = m.unwind_registered();
        assert_eq!(unwind::registered_count(), before + registered);
        let f = m.func::<(i64,), i64>("enter").unwrap();
        assert_eq!(called_from_rust_below_jit(&f, round), round * 3 + 1);
        let s = take_seen();
        assert_walks_through(&s, &format!("round {round}"));
        let pcs: Vec<usize> = (s.frames.iter())
            .filter_map(|f| match f {
                Frame::Jit { pc, .. } => Some(*pc),
                Frame::Host(_) => None,
            })
            .collect();
        assert!(pcs.iter().all(|&pc| unwind::is_registered(pc)));
        drop((f, m));
        assert_eq!(unwind::registered_count(), before, "round {round}");
        for pc in pcs {
            assert!(
                !unwind::is_registered(pc),
                "round {round}: the unwinder still has a table for freed code at {pc:#x}"
            );
        }
    }
    // Instrumented code has stubs (the report paths): registered too.
    let text = "fn @f(%o: ptr) -> i64 {\nentry:\n    %v = load_attr %o, 0\n    return %v\n}\n";
    let mi = guardlift_instrument::instrument(&parse(text), guardlift_instrument::CheckSet::ALL);
    let m = Jit::compile(&mi, recover_rt(), &CompileOptions::default()).unwrap();
    let (registered, missing) = m.unwind_registered();
    assert_eq!(missing, 0);
    assert!(registered > 1, "@f and its stubs: {registered}");
    drop(m);
    assert_eq!(unwind::registered_count(), before);
}
