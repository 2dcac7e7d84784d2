//! What a VM binds natively through the C API: its own attribute slow
//! paths (`gl_runtime_bind_attr_slow_paths`) and the native address of a
//! compiled function (`gl_func_addr`), called from C and through
//! `call_indirect` in another module.

mod common;

use common::{all_ok, compile, fails, func, ok, parse, runtime};
use guardlift::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};

/// Made by the model heap, put in dict mode, then read and written.
const ATTRS: &str = "\
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)
fn @main(%x: i64) -> i64 {
entry:
    %two = iconst.i64 2
    %o = call @obj_new(%two)
    call @obj_dictify(%o)
    store_attr %o, 1, %x
    %v = load_attr %o, 0
    return %v
}
";

/// (loads, stores, the last stored value) in the user data.
#[derive(Default)]
struct Seen {
    loads: u64,
    stores: u64,
    last: u64,
}

unsafe extern "C" fn load(user: *mut c_void, _obj: u64, index: u32) -> u64 {
    // SAFETY: the test passes a live `Seen` as user data.
    let s = unsafe { &mut *(user as *mut Seen) };
    s.loads += 1;
    1000 + index as u64
}

unsafe extern "C" fn store(user: *mut c_void, _obj: u64, _index: u32, value: u64) {
    // SAFETY: as in `load`.
    let s = unsafe { &mut *(user as *mut Seen) };
    s.stores += 1;
    s.last = value;
}

#[test]
fn bound_slow_paths_serve_dict_mode_objects() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let mut seen = Seen::default();
    let user = &mut seen as *mut Seen as *mut c_void;
    fails!(
        GL_ERR_NULL,
        gl_runtime_bind_attr_slow_paths(rt, None, Some(store), user)
    );
    ok!(gl_runtime_bind_attr_slow_paths(
        rt,
        Some(load),
        Some(store),
        user
    ));
    let msg = fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_bind_attr_slow_paths(rt, Some(load), Some(store), user)
    );
    assert!(msg.contains("already bound"), "{msg}");
    let m = parse(ATTRS);
    let code = compile(rt, m);
    let f = func(code, "main", &[GL_TYPE_I64], GL_TYPE_I64);
    let mut r = 0u64;
    ok!(gl_func_call(f, [42u64].as_ptr(), 1, &mut r));
    assert_eq!(r, 1000);
    assert_eq!((seen.loads, seen.stores, seen.last), (1, 1, 42));
    all_ok([
        gl_func_free(f),
        gl_code_free(code),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

#[test]
fn a_binding_after_a_compile_is_refused() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(ATTRS);
    let code = compile(rt, m);
    let msg = fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_bind_attr_slow_paths(rt, Some(load), Some(store), null_mut())
    );
    assert!(msg.contains("already compiled"), "{msg}");
    // Once the code is gone, the runtime may take a binding.
    ok!(gl_code_free(code));
    ok!(gl_runtime_bind_attr_slow_paths(
        rt,
        Some(load),
        Some(store),
        null_mut()
    ));
    all_ok([gl_module_free(m), gl_runtime_free(rt)])
}

#[test]
fn a_native_address_is_callable_from_c_and_through_call_indirect() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(
        "fn @triple(%x: i64) -> i64 {\nentry:\n    %k = iconst.i64 3\n    %y = imul %x, %k\n    return %y\n}\n",
    );
    let code = compile(rt, m);
    let f = func(code, "triple", &[GL_TYPE_I64], GL_TYPE_I64);
    fails!(GL_ERR_NULL, gl_func_addr(f, null_mut()));
    let mut addr: *const c_void = null();
    ok!(gl_func_addr(f, &mut addr));
    assert!(!addr.is_null());
    // SAFETY: `addr` is @triple's code, (i64) -> i64 under the C
    // convention, alive while `f` is.
    let triple: extern "C" fn(i64) -> i64 = unsafe { std::mem::transmute(addr) };
    assert_eq!(triple(-7), -21);

    // A second module calls it by address, as a VM's dispatch table would.
    let m2 = parse(
        "fn @apply(%f: ptr, %x: i64) -> i64 {\nentry:\n    %y = call_indirect %f(%x) : (i64) -> i64\n    %z = call_indirect %f(%y) : (i64) -> i64\n    return %z\n}\n",
    );
    let code2 = compile(rt, m2);
    let apply = func(code2, "apply", &[GL_TYPE_PTR, GL_TYPE_I64], GL_TYPE_I64);
    let mut r = 0u64;
    ok!(gl_func_call(apply, [addr as u64, 5].as_ptr(), 2, &mut r));
    assert_eq!(r, 45);
    // The address keeps working after the code handle goes: `f` holds it.
    ok!(gl_code_free(code));
    assert_eq!(triple(2), 6);
    all_ok([
        gl_func_free(apply),
        gl_code_free(code2),
        gl_func_free(f),
        gl_module_free(m2),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}
