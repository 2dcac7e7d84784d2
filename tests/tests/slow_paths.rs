//! The host's own attribute slow paths (`Runtime::bind_attr_slow_paths`):
//! both engines send a `load_attr`/`store_attr` on a word that is not
//! values-tagged to the host's functions, with the same arguments in the
//! same order, and neither claims a loop with an attribute op clean (the
//! host's slow path may free); a binding after a module is live is refused.

use guardlift_instrument::CheckSet;
use guardlift_interp::Interpreter;
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::internals::*;
use guardlift_runtime::{AttrSlowPaths, BindError, Mode, Runtime, RuntimeConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// An object made by the model heap, put in dict mode, then read and
/// written through the slow path, in a loop too.
const TEXT: &str = "\
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)

fn @main(%n: i64) -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    %five = iconst.i64 5
    store_attr %o, 0, %five
    call @obj_dictify(%o)
    store_attr %o, 1, %n
    %a = load_attr %o, 1
    %z = iconst.i64 0
    jump head(%z)
head(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done
body:
    %v = load_attr %o, 0
    %w = iadd %i, %v
    store_attr %o, 1, %w
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump head(%i2)
done:
    %r = load_attr %o, 1
    %s = iadd %r, %a
    return %s
}
";

/// What the host's slow paths saw: (load?, index, value stored).
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(bool, u32, i64)>>,
}

impl AttrSlowPaths for Recorder {
    fn load_attr(&self, _obj: u64, index: u32) -> i64 {
        self.calls.lock().unwrap().push((true, index, 0));
        100 + index as i64
    }
    fn store_attr(&self, _obj: u64, index: u32, value: i64) {
        self.calls.lock().unwrap().push((false, index, value));
    }
}

fn runtime() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

/// Runs `main(3)` of `m` on the interpreter or the JIT against a fresh
/// runtime with a recorder bound: (result, the recorder's calls, reports).
fn run(m: &guardlift_ir::Module, jit: bool) -> (u64, Vec<(bool, u32, i64)>, usize) {
    let rt = runtime();
    let rec = Arc::new(Recorder::default());
    rt.bind_attr_slow_paths(rec.clone()).expect("bind");
    let r = if jit {
        let code = Jit::compile(m, rt.clone(), &CompileOptions::default()).expect("compile");
        // SAFETY: the program touches only the model heap's object.
        unsafe { code.call_dynamic("main", &[3]) }.expect("call")
    } else {
        let mut it = Interpreter::new(m, rt.clone(), &HashMap::new()).expect("interp");
        it.set_verify_elision(true);
        it.call("main", &[3]).expect("run")
    };
    let calls = rec.calls.lock().unwrap().clone();
    (r.expect("a result"), calls, rt.take_reports().len())
}

#[test]
fn both_engines_call_the_bound_slow_paths_alike() {
    let plain = guardlift_ir::parse_module(TEXT).expect("parse");
    for m in [
        plain.clone(),
        guardlift_instrument::instrument(&plain, CheckSet::ALL),
    ] {
        let (ri, ci, ni) = run(&m, false);
        let (rj, cj, nj) = run(&m, true);
        assert_eq!(ri, rj);
        assert_eq!(ci, cj);
        assert_eq!((ni, nj), (0, 0));
        // store 1 := 3, load 1 (101), 3 rounds of load 0 (100) and
        // store 1 := i + 100, then load 1 (101).
        let mut want = vec![(false, 1, 3), (true, 1, 0)];
        for i in 0..3 {
            want.extend([(true, 0, 0), (false, 1, i + 100)]);
        }
        want.push((true, 1, 0));
        assert_eq!(ci, want);
        assert_eq!(ri, 101 + 101);
    }
}

#[test]
fn a_loop_with_an_attribute_op_is_not_clean_under_host_slow_paths() {
    let m = guardlift_ir::parse_module(TEXT).expect("parse");
    let f = &m.functions[0];
    let host = guardlift_ir::hoist::HostModel {
        host_slow_paths: true,
    };
    assert_eq!(guardlift_ir::hoist::clean_loops(&m, f).len(), 1);
    assert!(guardlift_ir::hoist::clean_loops_for(&m, f, host).is_empty());
}

#[test]
fn a_binding_is_refused_twice_or_after_a_module_is_live() {
    let m = guardlift_ir::parse_module(TEXT).expect("parse");
    let rt = runtime();
    let code = Jit::compile(&m, rt.clone(), &CompileOptions::default()).expect("compile");
    let rec = Arc::new(Recorder::default());
    assert_eq!(
        rt.bind_attr_slow_paths(rec.clone()),
        Err(BindError::ModulesLive(1))
    );
    {
        let _it = Interpreter::new(&m, rt.clone(), &HashMap::new()).expect("interp");
        drop(code);
        assert_eq!(
            rt.bind_attr_slow_paths(rec.clone()),
            Err(BindError::ModulesLive(1))
        );
    }
    assert!(!rt.attr_slow_paths_bound());
    assert_eq!(rt.bind_attr_slow_paths(rec.clone()), Ok(()));
    assert!(rt.attr_slow_paths_bound());
    assert_eq!(rt.bind_attr_slow_paths(rec), Err(BindError::AlreadyBound));
}

/// A loop over two objects of the model heap: `%a` values-tagged, `%b` in
/// dict mode; the host's store slow path on `%b` frees `%a` (whose address
/// is the value stored) the first time. The later `load_attr %a` are uses
/// after free that both engines must report: a clean copy of the loop,
/// without `%a`'s lifetime check, would miss them.
const FREES_IN_SLOW_PATH: &str = "\
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)

fn @main(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %a = call @obj_new(%one)
    %b = call @obj_new(%one)
    call @obj_dictify(%b)
    %z = iconst.i64 0
    jump head(%z)
head(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done
body:
    %v = load_attr %a, 0
    store_attr %b, 0, %a
    %i2 = iadd %i, %one
    jump head(%i2)
done:
    return %n
}
";

/// Frees the object whose address a store passes, once.
struct Freer {
    rt: std::sync::Weak<Runtime>,
    done: std::sync::atomic::AtomicBool,
}

impl AttrSlowPaths for Freer {
    fn load_attr(&self, _obj: u64, _index: u32) -> i64 {
        0
    }
    fn store_attr(&self, _obj: u64, _index: u32, value: i64) {
        if !self.done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            if let Some(rt) = self.rt.upgrade() {
                rt.obj_free(value as u64);
            }
        }
    }
}

#[test]
fn a_slow_path_that_frees_is_seen_by_the_checks_of_the_loop() {
    let plain = guardlift_ir::parse_module(FREES_IN_SLOW_PATH).expect("parse");
    let m = guardlift_instrument::instrument(&plain, CheckSet::ALL);
    // Without host slow paths the loop is clean: the test has teeth.
    assert_eq!(
        guardlift_ir::hoist::clean_loops(&m, &m.functions[0]).len(),
        1
    );
    let mut seen = Vec::new();
    for jit in [false, true] {
        let rt = runtime();
        let freer = Arc::new(Freer {
            rt: Arc::downgrade(&rt),
            done: Default::default(),
        });
        rt.bind_attr_slow_paths(freer).expect("bind");
        let r = if jit {
            let code = Jit::compile(&m, rt.clone(), &CompileOptions::default()).expect("compile");
            // SAFETY: the program touches only the model heap's objects.
            unsafe { code.call_dynamic("main", &[4]) }.expect("call")
        } else {
            let mut it = Interpreter::new(&m, rt.clone(), &HashMap::new()).expect("interp");
            // A free inside a loop claimed clean would be an internal error.
            it.set_verify_elision(true);
            it.call("main", &[4]).expect("run")
        };
        assert_eq!(r, Some(4));
        let reports: Vec<(String, u64)> = (rt.take_reports().iter())
            .map(|r| {
                (
                    format!("{:?}@{}:{}", r.kind, r.info.line, r.info.op),
                    r.count,
                )
            })
            .collect();
        seen.push(reports);
    }
    assert_eq!(seen[0], seen[1], "interpreter vs JIT");
    let uaf: u64 = (seen[0].iter())
        .filter(|(k, _)| k.starts_with("UseAfterFree"))
        .map(|(_, n)| n)
        .sum();
    // Iterations 2..4 read the freed `%a` (and store its address).
    assert!(uaf >= 3, "{:?}", seen[0]);
}
