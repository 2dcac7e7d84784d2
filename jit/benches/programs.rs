//! The loops the guard benchmarks time (shared by `benches/guards.rs` and
//! `examples/guard_overhead.rs`), and how to build each configuration.
#![allow(dead_code)]

use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{CompileOptions, Jit, Ptr, TypedFunc};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::sync::Arc;

/// `store_attr` in a loop: one guarded attribute store per iteration.
pub const STORE_ATTR: &str = r#"
extern fn @obj_new(i64) -> ptr
fn @main(%o: ptr, %n: i64) -> i64 {
entry:
    %zero = iconst.i64 0
    jump loop(%zero)
loop(%i: i64):
    %more = icmp.slt %i, %n
    brif %more, body, done
body:
    store_attr %o, 1, %i
    %one = iconst.i64 1
    %next = iadd %i, %one
    jump loop(%next)
done:
    return %n
}
"#;

/// push / top / acc_adj / top_adj / pop in a loop: five guarded adstack ops
/// per iteration (one op = one iteration in the tables).
pub const ADSTACK: &str = r#"
fn @main(%o: ptr, %n: i64) -> i64 {
entry:
    %s = adstack.alloc.f64 8
    %zero = iconst.i64 0
    %fz = fconst.f64 0.0
    jump loop(%zero, %fz)
loop(%i: i64, %acc: f64):
    %more = icmp.slt %i, %n
    brif %more, body, done
body:
    %x = fcvt_from_sint.f64 %i
    adstack.push %s, %x
    %t = adstack.top %s
    adstack.acc_adj %s, %t
    %a = adstack.top_adj %s
    adstack.pop %s
    %acc1 = fadd %acc, %a
    %one = iconst.i64 1
    %next = iadd %i, %one
    jump loop(%next, %acc1)
done:
    %r = fcvt_to_sint.i64 %acc
    return %r
}
"#;

/// One configuration: uninstrumented, or instrumented with `checks` and
/// compiled for `mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Config {
    /// Uninstrumented.
    Plain,
    /// Instrumented with these checks, lowered for this mode.
    Guarded(CheckSet, Mode),
}

/// Every mode a guarded configuration is compiled for.
pub const MODES: [Mode; 3] = [Mode::Abort, Mode::Recover, Mode::Trap];

/// The `dict` check alone.
pub fn dict_checks() -> CheckSet {
    CheckSet {
        dict: true,
        ..Default::default()
    }
}

/// The `adstack` check alone.
pub fn adstack_checks() -> CheckSet {
    CheckSet {
        adstack: true,
        ..Default::default()
    }
}

impl Config {
    /// `uninstrumented`, or `MODE/CHECKS`.
    pub fn name(self) -> String {
        match self {
            Config::Plain => "uninstrumented".into(),
            Config::Guarded(c, m) => format!("{}/{c}", m.name()),
        }
    }
}

/// A compiled loop ready to run: `f(obj, n)`.
pub struct Bench {
    /// The runtime the code reports to.
    pub rt: Arc<Runtime>,
    /// The object the loop works on (2 attributes).
    pub obj: u64,
    /// The loop, `@main(obj, n)`.
    pub f: TypedFunc<(Ptr, i64), i64>,
}

/// Compiles `text` for `config`. Abort and trap runtimes end the process
/// on a violation, as in production (none happens in these loops).
pub fn build(text: &str, config: Config) -> Bench {
    let m = guardlift_ir::parse_and_verify(text).expect("benchmark program");
    let (m, mode) = match config {
        Config::Plain => (m, Mode::Abort),
        Config::Guarded(checks, mode) => (instrument(&m, checks), mode),
    };
    let rt = Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode,
        abort_process: true,
        capture_output: true,
    });
    let obj = rt.obj_new(2);
    let code = Jit::compile(&m, rt.clone(), &CompileOptions::default()).expect("compile");
    let f = code.func::<(Ptr, i64), i64>("main").expect("@main");
    Bench { rt, obj, f }
}

impl Bench {
    /// Runs the loop `n` times.
    pub fn run(&self, n: i64) -> i64 {
        // SAFETY: `obj` is a live object of `rt`'s model heap (two
        // attributes), the only memory the benchmark loops access.
        unsafe { self.f.call((Ptr(self.obj), n)) }
    }
}
