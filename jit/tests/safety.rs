//! Issue 14 item 4: which functions safe Rust may call. `safe_func` and
//! `safe_call_dynamic` accept exactly the functions `guardlift_jit::safety`
//! proves memory-safe and refuse the others without running them.

mod common;
use common::*;
use guardlift_jit::{CompileOptions, Jit, JitError, Ptr};

const MIXED: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
fn @add(%a: i64, %b: i64) -> i64 {
entry:
    %r = iadd %a, %b
    return %r
}
fn @poke(%p: ptr, %v: i64) {
entry:
    store %v, %p
    return
}
fn @calls_poke(%p: ptr) {
entry:
    %v = iconst.i64 7
    call @poke(%p, %v)
    return
}
fn @peek_attr(%o: ptr) -> i64 {
entry:
    %r = load_attr %o, 0
    return %r
}
fn @builtins_only(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    guard.watch %o
    call @obj_free(%o)
    return %n
}
fn @unchecked_push() -> i64 {
entry:
    %s = adstack.alloc.i64 1
    %v = iconst.i64 1
    adstack.push %s, %v
    %n = adstack.len %s
    return %n
}
fn @checked_push() -> i64 {
entry:
    %s = adstack.alloc.i64 1
    %v = iconst.i64 1
    guard.adstack.push %s, %v
    guard.adstack.push %s, %v
    %n = adstack.len %s
    return %n
}
"#;

fn reason(e: JitError) -> String {
    match e {
        JitError::NotMemorySafe { reason, .. } => reason,
        other => panic!("not NotMemorySafe: {other:?}"),
    }
}

#[test]
fn arithmetic_and_builtins_are_callable_safely() {
    let m = jit(MIXED);
    assert_eq!(
        m.safe_func::<(i64, i64), i64>("add").unwrap().call((2, 3)),
        5
    );
    assert_eq!(m.safe_call_dynamic("add", &[4, 5]).unwrap(), Some(9));
    assert_eq!(m.safe_func::<i64, i64>("builtins_only").unwrap().call(2), 2);
    // A checked adstack op is safe: the overflow is reported and skipped.
    assert_eq!(m.safe_func::<(), i64>("checked_push").unwrap().call(()), 1);
    assert_eq!(kinds(&m.runtime().take_reports()).len(), 1);
    assert!(m.check_memory_safe("add").is_ok());
}

#[test]
fn a_raw_store_cannot_be_called_safely() {
    let m = jit(MIXED);
    let mut cell = 0i64;
    let p = Ptr(&mut cell as *mut i64 as u64);
    let r = reason(m.safe_func::<(Ptr, i64), ()>("poke").unwrap_err());
    assert_eq!(r, "11:5: `store` accesses a computed address");
    let e = m.safe_call_dynamic("poke", &[p.0, 1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "@poke cannot be called safely: 11:5: `store` accesses a computed address"
    );
    assert_eq!(cell, 0, "a refused call does not run");
    // Through a call: the callee's reason, placed at the call.
    let r = reason(m.safe_func::<Ptr, ()>("calls_poke").unwrap_err());
    assert_eq!(
        r,
        "17:5: calls @poke, which is not memory-safe (11:5: `store` accesses a computed address)"
    );
    // The unsafe entry point still runs it, on the caller's word.
    // SAFETY: `p` points to `cell`, a live i64 nothing else borrows.
    unsafe { m.func::<(Ptr, i64), ()>("poke").unwrap().call((p, 41)) };
    assert_eq!(cell, 41);
    // SAFETY: as above.
    unsafe { m.call_dynamic("calls_poke", &[p.0]).unwrap() };
    assert_eq!(cell, 7);
}

#[test]
fn object_ops_unchecked_adstack_and_host_symbols_are_not_safe() {
    let m = jit(MIXED);
    let r = reason(m.safe_func::<Ptr, i64>("peek_attr").unwrap_err());
    assert_eq!(r, "22:5: `load_attr` dereferences an object pointer");
    let r = reason(m.check_memory_safe("unchecked_push").unwrap_err());
    assert_eq!(r, "36:5: `adstack.push` has no `adstack` check");
    assert!(matches!(
        m.check_memory_safe("nope"),
        Err(JitError::NoSuchFunction(_))
    ));

    extern "C" fn host_twice(x: i64) -> i64 {
        2 * x
    }
    let text = "extern fn @twice(i64) -> i64\nfn @main(%x: i64) -> i64 {\nentry:\n    %r = call @twice(%x)\n    return %r\n}\n";
    // SAFETY: `host_twice` has the extern's signature and touches no memory.
    let opts = unsafe { CompileOptions::default().symbol("twice", host_twice as *const u8) };
    assert_eq!(opts.symbols().len(), 1);
    let c = Jit::compile(&parse(text), recover_rt(), &opts).unwrap();
    let r = reason(c.safe_func::<i64, i64>("main").unwrap_err());
    assert_eq!(r, "4:5: calls host function @twice");
    // SAFETY: as above.
    assert_eq!(unsafe { c.func::<i64, i64>("main").unwrap().call(21) }, 42);
}

#[test]
fn errors_keep_their_sources_and_carry_no_error_prefix() {
    use std::error::Error;
    let e = JitError::module("@f", cranelift_module::ModuleError::Undeclared("g".into()));
    assert_eq!(e.to_string(), "code generation failed: @f");
    let src = e.source().expect("the ModuleError is the source");
    assert_eq!(src.to_string(), "Undeclared identifier: g");
    assert_eq!(
        e.with_file("m.glir"),
        "m.glir: error: code generation failed: @f: Undeclared identifier: g"
    );
    let e = JitError::Internal("x".into());
    assert!(e.source().is_none());
    assert_eq!(e.to_string(), "internal error: x");
}

#[test]
fn unsafety_reaches_the_top_of_a_call_chain_declared_callers_first() {
    // @f0 calls @f1 ... calls @f5, which stores: each caller is declared
    // before its callee, so the reason climbs one function per round.
    // @two, declared first, calls @f4 before @poke: in the first round
    // @f4 is not marked yet when @two is looked at, @poke is (its own
    // store), so @two's reason is its call of @poke.
    let mut text = String::from(
        "fn @two(%p: ptr) {\nentry:\n    call @f4(%p)\n    %v = iconst.i64 1\n    call @poke(%p, %v)\n    return\n}\n",
    );
    for i in 0..5 {
        text += &format!(
            "fn @f{i}(%p: ptr) {{\nentry:\n    call @f{}(%p)\n    return\n}}\n",
            i + 1
        );
    }
    text += "fn @f5(%p: ptr) {\nentry:\n    %v = iconst.i64 1\n    store %v, %p\n    return\n}\n";
    text += "fn @poke(%p: ptr, %v: i64) {\nentry:\n    store %v, %p\n    return\n}\n";
    let m = jit(&text);
    let r = reason(m.check_memory_safe("f0").unwrap_err());
    assert_eq!(
        r,
        "10:5: calls @f1, which is not memory-safe (15:5: calls @f2, which is not memory-safe (20:5: calls @f3, which is not memory-safe (25:5: calls @f4, which is not memory-safe (30:5: calls @f5, which is not memory-safe (36:5: `store` accesses a computed address)))))"
    );
    let r = reason(m.check_memory_safe("two").unwrap_err());
    assert!(r.starts_with("5:5: calls @poke, "), "{r}");
}
