//! Linking externs, host symbols, and the typed/dynamic signature checks.

mod common;
use common::*;
use guardlift_jit::{CompileOptions, Jit, JitError, Ptr};
use guardlift_runtime::layout::DictLayout;
use guardlift_runtime::{Runtime, RuntimeConfig};

#[test]
fn undefined_extern_is_a_link_error() {
    let text = "extern fn @obj_new(i64) -> ptr\nextern fn @mystery(i64) -> i64\nfn @main() -> i64 {\nentry:\n    %x = iconst.i64 1\n    %y = call @mystery(%x)\n    return %y\n}\n";
    let err = try_compile(text, &recover_rt()).unwrap_err();
    assert!(matches!(err, JitError::Link { .. }), "{err:?}");
    assert_eq!(err.to_string(), "2:1: undefined symbol @mystery");
    assert_eq!(
        err.with_file("p.gl"),
        "p.gl:2:1: error: undefined symbol @mystery"
    );
}

#[test]
fn unused_undefined_extern_is_still_an_error() {
    let err = try_compile(
        "extern fn @nope()\nfn @main() {\nentry:\n    return\n}\n",
        &recover_rt(),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "1:1: undefined symbol @nope");
}

#[test]
fn builtin_with_a_wrong_signature_is_a_link_error() {
    for decl in [
        "extern fn @obj_new(i32) -> ptr",
        "extern fn @obj_new(i64)",
        "extern fn @sin(f32) -> f32",
        "extern fn @obj_free(ptr, ptr)",
        "extern fn @print_f64(i64)",
    ] {
        let text = format!("{decl}\nfn @main() {{\nentry:\n    return\n}}\n");
        let err = try_compile(&text, &recover_rt()).unwrap_err();
        assert!(matches!(err, JitError::Link { .. }), "{decl}: {err:?}");
        let s = err.to_string();
        assert!(s.starts_with("1:1: extern @"), "{s}");
        assert!(s.contains("built-in"), "{s}");
    }
    // ptr and i64 are the same ABI class: both spellings link.
    for decl in [
        "extern fn @obj_new(ptr) -> i64",
        "extern fn @obj_new(i64) -> ptr",
    ] {
        let text = format!("{decl}\nfn @main() {{\nentry:\n    return\n}}\n");
        try_compile(&text, &recover_rt()).unwrap();
    }
}

extern "C" fn host_mix(a: i64, b: f64, c: i8) -> f64 {
    a as f64 * b + c as f64
}
extern "C" fn host_neg8(a: i8) -> i8 {
    a.wrapping_neg()
}
static HOST_HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
extern "C" fn host_count(p: u64) {
    HOST_HITS.fetch_add(p, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn host_symbols_resolve_externs() {
    let text = r#"
extern fn @mix(i64, f64, i8) -> f64
extern fn @neg8(i8) -> i8
extern fn @count(ptr)
fn @main(%x: i64) -> f64 {
entry:
    %h = fconst.f64 0.5
    %c = iconst.i8 -3
    %r = call @mix(%x, %h, %c)
    %p = iconst.ptr 5
    call @count(%p)
    return %r
}
fn @n(%x: i8) -> i32 {
entry:
    %r = call @neg8(%x)
    %w = sext.i32 %r
    return %w
}
"#;
    let m = parse(text);
    // SAFETY: each host function has exactly its extern's signature and
    // touches no memory but its own arguments and an atomic counter.
    let opts = unsafe {
        CompileOptions::default()
            .symbol("mix", host_mix as *const u8)
            .symbol("neg8", host_neg8 as *const u8)
            .symbol("count", host_count as *const u8)
    };
    let c = Jit::compile(&m, recover_rt(), &opts).unwrap();
    // Calling host symbols: not memory-safe in general.
    assert!(matches!(
        c.safe_func::<i64, f64>("main"),
        Err(JitError::NotMemorySafe { .. })
    ));
    // SAFETY: the host functions touch only their arguments and a counter
    // (see `opts`).
    unsafe {
        assert_eq!(c.func::<i64, f64>("main").unwrap().call(10), 2.0);
        assert_eq!(HOST_HITS.load(std::sync::atomic::Ordering::SeqCst), 5);
        assert_eq!(c.func::<i8, i32>("n").unwrap().call(-128), -128);
        assert_eq!(c.func::<i8, i32>("n").unwrap().call(100), -100);
    }
    // A host symbol named like a built-in is refused (it could never
    // replace it: built-ins always bind to the runtime).
    // SAFETY: never called: the compile fails.
    let opts = unsafe { CompileOptions::default().symbol("sin", host_mix as *const u8) };
    let m = parse("extern fn @sin(f64) -> f64\nfn @s(%x: f64) -> f64 {\nentry:\n    %r = call @sin(%x)\n    return %r\n}\n");
    let err = Jit::compile(&m, recover_rt(), &opts).unwrap_err();
    assert!(
        matches!(&err, JitError::Link { msg, .. } if msg.contains("named like a built-in")),
        "{err}"
    );
}

const SIGS: &str = r#"
fn @f(%a: i64, %p: ptr, %x: f32) -> f64 {
entry:
    %r = fpromote.f64 %x
    return %r
}
fn @g() {
entry:
    return
}
fn @h(%a: i8, %b: i32, %c: i64, %d: f32, %e: f64, %f: ptr) -> i8 {
entry:
    return %a
}
"#;

#[test]
fn typed_signatures_are_checked() {
    let m = jit(SIGS);
    assert_eq!(
        m.safe_func::<(i64, Ptr, f32), f64>("f")
            .unwrap()
            .call((1, Ptr(2), 0.5)),
        0.5
    );
    assert_eq!(
        m.safe_func::<(i64, Ptr, f32), f64>("@f")
            .unwrap()
            .call((1, Ptr(2), 1.5)),
        1.5
    );
    m.safe_func::<(), ()>("g").unwrap().call(());
    let h = m
        .safe_func::<(i8, i32, i64, f32, f64, Ptr), i8>("h")
        .unwrap();
    assert_eq!(h.call((-7, 0, 0, 0.0, 0.0, Ptr(0))), -7);

    let err = m.safe_func::<(i64, i64, f32), f64>("f").unwrap_err();
    assert!(
        matches!(
            &err,
            JitError::Signature { name, expected, got }
                if name == "f" && expected == "(i64, ptr, f32) -> f64" && got == "(i64, i64, f32) -> f64"
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("signature mismatch for @f"),
        "{err}"
    );
    assert!(matches!(
        m.safe_func::<(i64, Ptr, f32), f32>("f"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<(i64, Ptr), f64>("f"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<(i64, Ptr, f32), ()>("f"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<(), i64>("g"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<i64, ()>("g"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<(i8, i32, i64, f32, f64, i64), i8>("h"),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_func::<(), ()>("nope").unwrap_err(),
        JitError::NoSuchFunction(n) if n == "nope"
    ));
    assert_eq!(
        m.safe_func::<(), ()>("nope").unwrap_err().to_string(),
        "no function named @nope"
    );

    // Dynamic calls check the argument count.
    assert!(matches!(
        m.safe_call_dynamic("f", &[1, 2]),
        Err(JitError::Signature { .. })
    ));
    assert!(matches!(
        m.safe_call_dynamic("zz", &[]),
        Err(JitError::NoSuchFunction(_))
    ));
    assert_eq!(m.safe_call_dynamic("g", &[]).unwrap(), None);
    assert_eq!(
        m.safe_call_dynamic("f", &[0, 0, 2.0f32.to_bits() as u64])
            .unwrap(),
        Some(2.0f64.to_bits())
    );
    assert_eq!(m.signature("h").unwrap().1, Some(guardlift_ir::Type::I8));
    assert_eq!(m.function_names().collect::<Vec<_>>(), ["f", "g", "h"]);
}

#[test]
fn handles_keep_code_alive() {
    let f = {
        let m = jit("fn @k() -> i64 {\nentry:\n    %x = iconst.i64 77\n    return %x\n}\n");
        let f = m.safe_func::<(), i64>("k").unwrap();
        let m2 = m.clone();
        drop(m);
        assert_eq!(call(&m2, "k", &[]), Some(77));
        f
    };
    // The module handles are gone; the typed function still owns the code.
    assert_eq!(f.call(()), 77);
    let g = f.clone();
    drop(f);
    assert_eq!(g.call(()), 77);
}

#[test]
fn compiled_modules_are_send_and_sync() {
    let m = jit("fn @k(%x: i64) -> i64 {\nentry:\n    %y = iadd %x, %x\n    return %y\n}\n");
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let m = m.clone();
            std::thread::spawn(move || {
                let f = m.safe_func::<i64, i64>("k").unwrap();
                (0..1000).map(|j| f.call(i * 1000 + j)).sum::<i64>()
                    + call(&m, "k", &[1]).unwrap() as i64
            })
        })
        .collect();
    let total: i64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 2 * (0..4000).sum::<i64>() + 8);
}

#[test]
fn layout_mismatch_is_refused() {
    let rt = Runtime::new(RuntimeConfig {
        layout: DictLayout::Phoenix,
        ..Default::default()
    });
    let err = try_compile("fn @main() {\nentry:\n    return\n}\n", &rt).unwrap_err();
    assert!(err.to_string().contains("layout"), "{err}");
}

#[test]
fn verify_errors_come_back_with_positions() {
    let mut m = parse("fn @main() -> i64 {\nentry:\n    %x = iconst.i64 1\n    return %x\n}\n");
    // Break the module behind the parser's back: return an f64 from an i64 function.
    m.functions[0].ret = Some(guardlift_ir::Type::F64);
    let err = Jit::compile(&m, recover_rt(), &CompileOptions::default()).unwrap_err();
    assert!(matches!(err, JitError::Verify(_)), "{err:?}");
    // Display is the message with its position; presenting it adds `error:`.
    assert!(
        err.to_string().starts_with("4:5: return type mismatch"),
        "{err}"
    );
    assert!(!err.to_string().contains("error:"), "{err}");
    assert!(
        err.present(None)
            .starts_with("4:5: error: return type mismatch"),
        "{}",
        err.present(None)
    );
}
