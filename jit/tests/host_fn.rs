//! Typed host functions (`CompileOptions::host_fn`): IR code calls safe
//! `extern "C" fn`s of every value type, the Rust signature is checked
//! against the module's `extern` declaration when the module is compiled,
//! and a host function named like a built-in is refused, typed or not.

use guardlift_jit::{CompileOptions, Jit, JitError, Ptr};
use guardlift_runtime::{Runtime, RuntimeConfig};

extern "C" fn mix(a: i8, b: i32, c: i64, d: f32, e: f64, p: Ptr) -> f64 {
    a as f64 + b as f64 + c as f64 + d as f64 + e + (p.0 & 0xff) as f64
}

extern "C" fn narrow(x: i64) -> i8 {
    x as i8
}

static SEEN: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

extern "C" fn note(x: i64) {
    SEEN.store(x, std::sync::atomic::Ordering::SeqCst);
}

const TEXT: &str = "\
extern fn @mix(i8, i32, i64, f32, f64, ptr) -> f64
extern fn @narrow(i64) -> i8
extern fn @note(i64)

fn @f(%x: i64) -> f64 {
entry:
    %a = iconst.i8 -2
    %b = iconst.i32 30
    %d = fconst.f32 0.5
    %e = fconst.f64 0.25
    %p = iconst.i64 259
    %r = call @mix(%a, %b, %x, %d, %e, %p)
    call @note(%x)
    return %r
}

fn @g(%x: i64) -> i8 {
entry:
    %r = call @narrow(%x)
    return %r
}
";

fn opts() -> CompileOptions {
    CompileOptions::default()
        .host_fn(
            "mix",
            mix as extern "C" fn(i8, i32, i64, f32, f64, Ptr) -> f64,
        )
        .host_fn("@narrow", narrow as extern "C" fn(i64) -> i8)
        .host_fn("note", note as extern "C" fn(i64))
}

fn rt() -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeConfig::default())
}

#[test]
fn typed_host_functions_are_called_with_the_declared_types() {
    let m = guardlift_ir::parse_module(TEXT).expect("parse");
    let code = Jit::compile(&m, rt(), &opts()).expect("compile");
    let f = code.func::<i64, f64>("f").expect("f");
    // SAFETY: the code touches no memory; the host functions are safe Rust.
    let r = unsafe { f.call(100) };
    assert_eq!(r, -2.0 + 30.0 + 100.0 + 0.5 + 0.25 + 3.0);
    assert_eq!(SEEN.load(std::sync::atomic::Ordering::SeqCst), 100);
    let g = code.func::<i64, i8>("g").expect("g");
    // SAFETY: as above.
    assert_eq!(unsafe { g.call(0x1ff) }, -1);
}

fn link_error(text: &str, opts: &CompileOptions) -> (u32, String) {
    let m = guardlift_ir::parse_module(text).expect("parse");
    match Jit::compile(&m, rt(), opts) {
        Err(JitError::Link { loc, msg }) => (loc.line, msg),
        Err(e) => panic!("not a link error: {e}"),
        Ok(_) => panic!("compiled"),
    }
}

#[test]
fn a_signature_that_differs_from_the_extern_is_a_link_error_at_the_declaration() {
    let (line, msg) = link_error("\nextern fn @narrow(i64) -> i64\n", &opts());
    assert_eq!(line, 2, "{msg}");
    assert!(
        msg.contains("@narrow is (i64) -> i8 in Rust, but the module declares it (i64) -> i64"),
        "{msg}"
    );
    let (_, msg) = link_error("extern fn @note(i64) -> i64\n", &opts());
    assert!(msg.contains("(i64) in Rust"), "{msg}");
    let (_, msg) = link_error(
        "extern fn @mix(i8, i32, i64, f64, f64, ptr) -> f64\n",
        &opts(),
    );
    assert!(msg.contains("f32"), "{msg}");
}

#[test]
fn a_host_function_named_like_a_built_in_is_refused() {
    let typed = CompileOptions::default().host_fn("print_i64", note as extern "C" fn(i64));
    let (line, msg) = link_error("extern fn @print_i64(i64)\n", &typed);
    assert_eq!(line, 1);
    assert!(msg.contains("named like a built-in"), "{msg}");
    // SAFETY: never called: the compile fails.
    let raw = unsafe { CompileOptions::default().symbol("sin", note as *const u8) };
    let (_, msg) = link_error("fn @f() {\nentry:\n    return\n}\n", &raw);
    assert!(msg.contains("`sin` is named like a built-in"), "{msg}");
}
