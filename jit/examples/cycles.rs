//! Compiles and drops a small module N times (default 10 000), calling it
//! each time, with handles outliving the module value. Run under valgrind
//! by the test suite (tests/tests/valgrind.rs): no leak, no invalid access.

use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::{Runtime, RuntimeConfig};

const SRC: &str = "
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
fn @main(%x: i64) -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    store_attr %o, 1, %x
    %y = load_attr %o, 1
    call @obj_free(%o)
    %one = iconst.i64 1
    %r = iadd %y, %one
    return %r
}
";

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let m = guardlift_ir::parse_and_verify(SRC).expect("valid module");
    let mut sum = 0i64;
    for i in 0..n {
        let rt = Runtime::new(RuntimeConfig::default());
        let f = {
            let code = Jit::compile(&m, rt, &CompileOptions::default()).expect("compiles");
            code.func::<(i64,), i64>("main").expect("typed lookup")
            // `code` drops here; `f` keeps the compiled code alive.
        };
        // SAFETY: @main accesses only the object it makes with @obj_new
        // (attribute 1 of 2) before freeing it.
        sum += unsafe { f.call((i as i64,)) };
        // `f` drops here: the last handle frees the JIT memory.
    }
    let want = (n as i64) * (n as i64 - 1) / 2 + n as i64;
    assert_eq!(sum, want);
    println!("{n} compile/drop cycles ok");
}
