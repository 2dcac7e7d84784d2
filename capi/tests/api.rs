//! The C API driven from Rust (the crate is also an rlib): status codes,
//! messages, handle misuse, the report callback, collected reports,
//! threads, layouts, signatures and raw-bit calls.

mod common;

use common::{all_ok, compile, fails, func, last_error, ok, parse, runtime};
use guardlift::*;
use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

/// A function that reads attribute 1 of an object whose tag bit a rogue
/// writer cleared: one dict_slot_tag report per call at 9:5.
const CORRUPT: &str = "\
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
extern fn @fault_clear_lsb(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    call @fault_clear_lsb(%o)
    %v = load_attr %o, 1
    call @obj_free(%o)
    return %v
}
";

#[derive(Debug, Clone, PartialEq)]
struct Seen {
    kind: u32,
    kind_name: String,
    function: String,
    line: u32,
    col: u32,
    op: String,
    count: u64,
    low_bits: u64,
    text: String,
    json: String,
    last_write_by: Option<String>,
}

unsafe fn seen(r: &gl_report) -> Seen {
    // SAFETY: the report's strings are valid NUL-terminated text during the callback.
    let s = |p: *const std::ffi::c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string();
    Seen {
        kind: r.kind,
        kind_name: s(r.kind_name),
        function: s(r.function),
        line: r.line,
        col: r.col,
        op: s(r.op),
        count: r.count,
        low_bits: r.value & 7,
        text: s(r.text),
        json: s(r.json),
        last_write_by: (!r.last_write_by.is_null()).then(|| s(r.last_write_by)),
    }
}

unsafe extern "C" fn collect(r: *const gl_report, user: *mut c_void) {
    // SAFETY: `user` is the `Mutex<Vec<Seen>>` the test registered, alive throughout.
    let v = unsafe { &*(user as *const Mutex<Vec<Seen>>) };
    // SAFETY: `r` is valid during the callback.
    v.lock().unwrap().push(unsafe { seen(&*r) });
}

#[test]
fn callback_and_collected_reports_name_the_site() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(CORRUPT);
    ok!(gl_module_instrument(m, GL_CHECK_DICT));
    let mut text = null();
    ok!(gl_module_print(m, &mut text));
    // SAFETY: gl_report_text's string is valid until the next call on this thread.
    let printed = unsafe { CStr::from_ptr(text) }
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        printed.contains("guard.load_attr %o, 1 !site(1, 9:5, dict)"),
        "{printed}"
    );

    let got: Box<Mutex<Vec<Seen>>> = Box::default();
    ok!(gl_runtime_set_report_callback(
        rt,
        Some(collect),
        &*got as *const _ as *mut c_void
    ));
    let code = compile(rt, m);
    let f = func(code, "main", &[], GL_TYPE_I64);
    for _ in 0..3 {
        let mut r = 99u64;
        ok!(gl_func_call(f, null(), 0, &mut r));
        assert_eq!(r, 0, "recover mode: load_attr gives 0");
    }
    let calls = got.lock().unwrap().clone();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls.iter().map(|s| s.count).collect::<Vec<_>>(), [1, 2, 3]);
    let s = &calls[0];
    assert_eq!(s.kind, GL_REPORT_DICT_SLOT_TAG);
    assert_eq!(s.kind_name, "dict_slot_tag");
    assert_eq!((s.function.as_str(), s.line, s.col), ("main", 9, 5));
    assert_eq!(s.op, "load_attr");
    assert_eq!(s.low_bits, 0b110);
    assert!(s
        .text
        .starts_with("==guardlift== ERROR: dict_slot_tag at @main 9:5 (load_attr)"));
    assert!(s.json.contains("\"kind\":\"dict_slot_tag\""), "{}", s.json);
    assert_eq!(s.last_write_by.as_deref(), Some("obj_new"));

    let mut pending = 0;
    ok!(gl_runtime_pending_reports(rt, &mut pending));
    assert_eq!(pending, 1);
    let (mut list, mut items, mut n) = (null_mut(), null(), 0usize);
    ok!(gl_runtime_take_reports(rt, &mut list, &mut items, &mut n));
    assert_eq!(n, 1);
    // SAFETY: `items` has `n` > 0 valid reports, owned by `list`.
    let r = unsafe { seen(&*items) };
    assert_eq!((r.line, r.count), (9, 3));
    // Taking again finds none.
    let (mut list2, mut n2) = (null_mut(), 99usize);
    ok!(gl_runtime_take_reports(rt, &mut list2, null_mut(), &mut n2));
    assert_eq!(n2, 0);
    ok!(gl_reports_free(list2));
    // Items stay valid after the runtime, code and function are gone.
    ok!(gl_func_free(f));
    ok!(gl_code_free(code));
    ok!(gl_runtime_free(rt));
    ok!(gl_module_free(m));
    // SAFETY: as above.
    assert_eq!(unsafe { seen(&*items) }, r);
    ok!(gl_reports_free(list));
    fails!(GL_ERR_HANDLE, gl_reports_free(list));
}

static REENTRANT_TAKEN: Mutex<usize> = Mutex::new(0);

unsafe extern "C" fn take_inside(_r: *const gl_report, user: *mut c_void) {
    // The callback may call back into the API (no lock is held).
    let rt = user as *mut gl_runtime;
    let (mut list, mut n) = (null_mut(), 0usize);
    // SAFETY: live runtime handle and pointers to live locals.
    let st = unsafe { gl_runtime_take_reports(rt, &mut list, null_mut(), &mut n) };
    assert_eq!(st, GL_OK);
    *REENTRANT_TAKEN.lock().unwrap() += n;
    gl_reports_free(list);
}

#[test]
fn the_callback_may_reenter_the_api() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(CORRUPT);
    ok!(gl_module_instrument(m, GL_CHECK_ALL));
    ok!(gl_runtime_set_report_callback(
        rt,
        Some(take_inside),
        rt as *mut c_void
    ));
    let code = compile(rt, m);
    let f = func(code, "main", &[], GL_TYPE_I64);
    ok!(gl_func_call(f, null(), 0, null_mut()));
    ok!(gl_func_call(f, null(), 0, null_mut()));
    assert_eq!(*REENTRANT_TAKEN.lock().unwrap(), 2);
    // Freeing the runtime handle removes the callback; the code still runs.
    ok!(gl_runtime_free(rt));
    ok!(gl_func_call(f, null(), 0, null_mut()));
    assert_eq!(*REENTRANT_TAKEN.lock().unwrap(), 2);
    all_ok([gl_func_free(f), gl_code_free(code), gl_module_free(m)])
}

#[test]
fn stale_double_foreign_and_null_handles_are_errors_not_crashes() {
    let (rt, m, code, f) = identity();
    ok!(gl_func_free(f));
    let msg = fails!(
        GL_ERR_HANDLE,
        gl_func_call(f, [1u64].as_ptr(), 1, null_mut())
    );
    assert!(msg.contains("gl_func used after it was freed"), "{msg}");
    fails!(GL_ERR_HANDLE, gl_func_free(f));
    fails!(GL_ERR_HANDLE, gl_func_call_i64(f, null(), 0, null_mut()));
    // Wrong kinds.
    let msg = fails!(GL_ERR_HANDLE, gl_code_free(m as *mut gl_code));
    assert!(
        msg.contains("a gl_module passed where a gl_code was expected"),
        "{msg}"
    );
    fails!(
        GL_ERR_HANDLE,
        gl_compile(code as *mut gl_runtime, m, &mut null_mut())
    );
    // Made-up values.
    for bogus in [1usize, 0xdead_beef, usize::MAX, 0x7fff_0000_1000] {
        fails!(GL_ERR_HANDLE, gl_module_free(bogus as *mut gl_module));
        fails!(GL_ERR_HANDLE, gl_runtime_free(bogus as *mut gl_runtime));
    }
    // NULLs.
    fails!(GL_ERR_NULL, gl_module_instrument(null_mut(), 1));
    fails!(GL_ERR_NULL, gl_compile(rt, m, null_mut()));
    fails!(
        GL_ERR_NULL,
        gl_module_parse(c"".as_ptr(), null(), null_mut())
    );
    fails!(
        GL_ERR_NULL,
        gl_code_get_func(code, null(), null(), 0, 0, &mut null_mut())
    );
    fails!(
        GL_ERR_NULL,
        gl_code_get_func(
            code,
            c"id".as_ptr(),
            null(),
            1,
            GL_TYPE_I64,
            &mut null_mut()
        )
    );
    fails!(
        GL_ERR_NULL,
        gl_runtime_take_reports(rt, null_mut(), null_mut(), null_mut())
    );
    ok!(gl_module_free(null_mut()));
    // Old handles stay dead after their slots are reused.
    let mut again = Vec::new();
    for _ in 0..16 {
        again.push(func(code, "id", &[GL_TYPE_I64], GL_TYPE_I64));
    }
    fails!(
        GL_ERR_HANDLE,
        gl_func_call(f, [1u64].as_ptr(), 1, null_mut())
    );
    for g in again {
        let mut r = 0;
        ok!(gl_func_call_i64(g, [-7i64].as_ptr(), 1, &mut r));
        assert_eq!(r, -7);
        ok!(gl_func_free(g));
    }
    ok!(gl_code_free(code));
    ok!(gl_module_free(m));
    ok!(gl_runtime_free(rt));
    fails!(GL_ERR_HANDLE, gl_code_free(code));
    fails!(GL_ERR_HANDLE, gl_runtime_free(rt));
}

#[test]
fn errors_carry_status_and_position() {
    let mut m = null_mut();
    let msg = fails!(
        GL_ERR_PARSE,
        gl_module_parse(c"fn @f( {\n".as_ptr(), c"bad.glir".as_ptr(), &mut m)
    );
    assert!(m.is_null());
    assert!(msg.starts_with("bad.glir:1:"), "{msg}");
    let msg = fails!(
        GL_ERR_VERIFY,
        gl_module_parse(
            c"fn @f() -> i8 {\nentry:\n    %z = iconst.i64 0\n    return %z\n}\n".as_ptr(),
            c"v.glir".as_ptr(),
            &mut m
        )
    );
    assert!(msg.starts_with("v.glir:4:"), "{msg}");
    assert!(m.is_null());
    ok!(gl_module_parse(
        c"fn @f() -> i64 {\nentry:\n    %z = iconst.i64 0\n    return %z\n}\n".as_ptr(),
        null(),
        &mut m
    ));
    assert_eq!(last_error(), "", "a success clears the message");

    fails!(GL_ERR_ARGUMENT, gl_module_instrument(m, 32));
    fails!(GL_ERR_ARGUMENT, gl_module_set_layout(m, c"pypy".as_ptr()));
    fails!(
        GL_ERR_ARGUMENT,
        gl_module_set_layout(m, c"dict_slot_offset = 5".as_ptr())
    );
    fails!(
        GL_ERR_ARGUMENT,
        gl_module_set_layout(m, c"dict_slot_offset = 8192".as_ptr())
    );
    let mut rt = null_mut();
    fails!(GL_ERR_ARGUMENT, gl_runtime_new(null(), 3, &mut rt));
    assert!(rt.is_null());
    let rt = runtime("cpython312", GL_MODE_ABORT);
    fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_configure(rt, c"bogus=1".as_ptr())
    );
    fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_configure(rt, c"mode=recover".as_ptr())
    );
    ok!(gl_runtime_configure(
        rt,
        c"mode=abort:report_limit=2".as_ptr()
    ));
    fails!(
        GL_ERR_IO,
        gl_runtime_configure(rt, c"log_path=/nonexistent/dir/x.log".as_ptr())
    );
    let msg = fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_add_symbol(rt, c"obj_new".as_ptr(), Some(noop))
    );
    assert!(msg.contains("built-in"), "{msg}");
    fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_add_symbol(rt, c"9lives".as_ptr(), Some(noop))
    );
    fails!(GL_ERR_NULL, gl_runtime_add_symbol(rt, c"f".as_ptr(), None));

    let code = compile(rt, m);
    let mut f = null_mut();
    let msg = fails!(
        GL_ERR_NO_FUNCTION,
        gl_code_get_func(code, c"g".as_ptr(), null(), 0, GL_TYPE_I64, &mut f)
    );
    assert!(msg.contains("@g"), "{msg}");
    let msg = fails!(
        GL_ERR_SIGNATURE,
        gl_code_get_func(code, c"f".as_ptr(), null(), 0, GL_TYPE_PTR, &mut f)
    );
    assert!(
        msg.contains("the function is () -> i64, the caller asked for () -> ptr"),
        "{msg}"
    );
    fails!(
        GL_ERR_SIGNATURE,
        gl_code_get_func(code, c"f".as_ptr(), null(), 0, GL_TYPE_VOID, &mut f)
    );
    fails!(
        GL_ERR_ARGUMENT,
        gl_code_get_func(code, c"f".as_ptr(), null(), 0, 42, &mut f)
    );
    assert!(f.is_null());
    let f = func(code, "@f", &[], GL_TYPE_I64);
    fails!(
        GL_ERR_ARGUMENT,
        gl_func_call(f, [1u64].as_ptr(), 1, null_mut())
    );
    all_ok([
        gl_func_free(f),
        gl_code_free(code),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

unsafe extern "C" fn noop() {}

#[test]
fn layouts_must_agree_or_be_overridden() {
    let text = "layout dict_slot_offset = -32\nextern fn @obj_new(i64) -> ptr\n\
                fn @slot(%n: i64) -> i64 {\nentry:\n    %o = call @obj_new(%n)\n    \
                %w = dict_slot.load %o\n    %t = iconst.i64 7\n    %b = band %w, %t\n    return %b\n}\n";
    let m = parse(text);
    let mut off = 0;
    ok!(gl_module_get_layout(m, &mut off));
    assert_eq!(off, -32);
    let cpy = runtime("cpython312", GL_MODE_RECOVER);
    let mut code = null_mut();
    let msg = fails!(GL_ERR_LAYOUT, gl_compile(cpy, m, &mut code));
    assert!(
        msg.contains("dict_slot_offset = -32") && msg.contains("gl_module_set_layout"),
        "{msg}"
    );
    let custom = runtime("dict_slot_offset=-0x20", GL_MODE_RECOVER);
    let code = compile(custom, m);
    let f = func(code, "slot", &[GL_TYPE_I64], GL_TYPE_I64);
    let mut r = 0;
    ok!(gl_func_call(f, [3u64].as_ptr(), 1, &mut r));
    assert_eq!(
        r, 7,
        "the model heap built the object at the runtime's offset"
    );
    ok!(gl_module_set_layout(m, c" phoenix ".as_ptr()));
    ok!(gl_module_get_layout(m, &mut off));
    assert_eq!(off, 24);
    let ph = runtime("phoenix", GL_MODE_RECOVER);
    let code2 = compile(ph, m);
    all_ok([
        gl_func_free(f),
        gl_code_free(code),
        gl_code_free(code2),
        gl_module_free(m),
        gl_runtime_free(cpy),
        gl_runtime_free(custom),
        gl_runtime_free(ph),
    ])
}

extern "C" fn host_scale(x: f64, k: i32) -> f64 {
    x * k as f64
}

#[test]
fn host_symbols_signatures_and_raw_bits() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(
        "extern fn @scale(f64, i32) -> f64\n\
         fn @f(%x: f64, %k: i32, %s: f32, %b: i8) -> f64 {\nentry:\n    \
         %y = call @scale(%x, %k)\n    %t = fpromote.f64 %s\n    %z = fadd %y, %t\n    \
         %bw = sext.i64 %b\n    %bf = fcvt_from_sint.f64 %bw\n    %r = fadd %z, %bf\n    return %r\n}\n\
         fn @neg(%b: i8) -> i8 {\nentry:\n    %z = iconst.i8 0\n    %r = isub %z, %b\n    return %r\n}\n",
    );
    let mut code = null_mut();
    let msg = fails!(GL_ERR_LINK, gl_compile(rt, m, &mut code));
    assert!(
        msg.starts_with("test.glir:1:1: error: undefined symbol @scale"),
        "{msg}"
    );
    let hf: unsafe extern "C" fn() =
        // SAFETY: gl_host_fn is a type-erased function pointer; the extern is declared with host_scale's signature.
        unsafe { std::mem::transmute(host_scale as extern "C" fn(f64, i32) -> f64) };
    ok!(gl_runtime_add_symbol(rt, c"@scale".as_ptr(), Some(hf)));
    let code = compile(rt, m);

    let (mut ps, mut np, mut ret) = ([0u32; 2], 0usize, 0u32);
    ok!(gl_code_signature(
        code,
        c"f".as_ptr(),
        ps.as_mut_ptr(),
        2,
        &mut np,
        &mut ret
    ));
    assert_eq!((np, ps, ret), (4, [GL_TYPE_F64, GL_TYPE_I32], GL_TYPE_F64));
    let f = func(
        code,
        "f",
        &[GL_TYPE_F64, GL_TYPE_I32, GL_TYPE_F32, GL_TYPE_I8],
        GL_TYPE_F64,
    );
    let args = [
        1.5f64.to_bits(),
        (-4i64) as u64,
        0.25f32.to_bits() as u64,
        (-1i64) as u64,
    ];
    let mut r = 0u64;
    ok!(gl_func_call(f, args.as_ptr(), 4, &mut r));
    assert_eq!(f64::from_bits(r), 1.5 * -4.0 + 0.25 - 1.0);
    fails!(GL_ERR_SIGNATURE, gl_func_call_i64(f, null(), 0, null_mut()));
    let neg = func(code, "neg", &[GL_TYPE_I8], GL_TYPE_I8);
    ok!(gl_func_call(neg, [5u64].as_ptr(), 1, &mut r));
    assert_eq!(r as i64, -5, "i8 results come back sign-extended");
    all_ok([
        gl_func_free(f),
        gl_func_free(neg),
        gl_code_free(code),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

#[test]
fn host_faults_are_reported_not_crashes() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(
        "extern fn @obj_new(i64) -> ptr\nextern fn @obj_free(ptr)\n\
         fn @twice() {\nentry:\n    %n = iconst.i64 1\n    %o = call @obj_new(%n)\n    \
         call @obj_free(%o)\n    call @obj_free(%o)\n    return\n}\n",
    );
    let code = compile(rt, m);
    let f = func(code, "twice", &[], GL_TYPE_VOID);
    let mut r = 7u64;
    ok!(gl_func_call(f, null(), 0, &mut r));
    assert_eq!(r, 0);
    let mut msg = null();
    ok!(gl_runtime_take_host_fault(rt, &mut msg));
    assert!(!msg.is_null());
    // SAFETY: the message is a valid NUL-terminated string.
    let text = unsafe { CStr::from_ptr(msg) }.to_str().unwrap().to_string();
    assert!(!text.is_empty());
    ok!(gl_runtime_take_host_fault(rt, &mut msg));
    assert!(msg.is_null(), "taken");
    all_ok([
        gl_func_free(f),
        gl_code_free(code),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

static THREAD_CALLBACKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

unsafe extern "C" fn count_cb(_r: *const gl_report, _u: *mut c_void) {
    THREAD_CALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn many_threads_share_handles_and_lose_no_report() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(CORRUPT);
    ok!(gl_module_instrument(m, GL_CHECK_DICT));
    ok!(gl_runtime_set_report_callback(
        rt,
        Some(count_cb),
        null_mut()
    ));
    let code = compile(rt, m);
    let f = func(code, "main", &[], GL_TYPE_I64) as usize;
    let code_h = code as usize;
    const THREADS: usize = 8;
    const CALLS: usize = 500;
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(move || {
                for i in 0..CALLS {
                    ok!(gl_func_call(f as *mut gl_func, null(), 0, null_mut()));
                    if i % 50 == 0 {
                        // Handle churn on the side: the table is shared.
                        let g = func(code_h as *mut gl_code, "main", &[], GL_TYPE_I64);
                        ok!(gl_func_free(g));
                        fails!(GL_ERR_HANDLE, gl_func_free(g));
                    }
                }
            });
        }
    });
    let (mut list, mut items, mut n) = (null_mut(), null(), 0usize);
    ok!(gl_runtime_take_reports(rt, &mut list, &mut items, &mut n));
    assert_eq!(n, 1);
    // SAFETY: `items` points at the list's first report (n > 0).
    assert_eq!(unsafe { (*items).count }, (THREADS * CALLS) as u64);
    assert_eq!(
        THREAD_CALLBACKS.load(std::sync::atomic::Ordering::Relaxed),
        (THREADS * CALLS) as u64
    );
    all_ok([
        gl_reports_free(list),
        gl_func_free(f as *mut gl_func),
        gl_code_free(code),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

#[test]
fn misc_entry_points() {
    assert_eq!(gl_abi_version(), GL_ABI_VERSION);
    assert_eq!(gl_report_struct_size(), std::mem::size_of::<gl_report>());
    // The header's layout of gl_report, no padding: 4+4 + 8+8 + 4+4 + 8 + 8 + 8*5 + 4+4 + 8+8 + 8*3
    // + 8+8 (objects, object_count: ABI version 2).
    assert_eq!(gl_report_struct_size(), 192);
    let name = |s| {
        // SAFETY: gl_status_name returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(gl_status_name(s)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(name(GL_OK), "GL_OK");
    assert_eq!(name(GL_ERR_SIGNATURE), "GL_ERR_SIGNATURE");
    assert_eq!(name(-1), "GL_ERR_UNKNOWN");
}

/// A recover-mode cpython312 runtime, the module of `fn @id(%x: i64) ->
/// i64`, its code and `@id`.
fn identity() -> (*mut gl_runtime, *mut gl_module, *mut gl_code, *mut gl_func) {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse("fn @id(%x: i64) -> i64 {\nentry:\n    return %x\n}\n");
    let code = compile(rt, m);
    let f = func(code, "id", &[GL_TYPE_I64], GL_TYPE_I64);
    (rt, m, code, f)
}

struct Handles {
    f: *mut gl_func,
    code: *mut gl_code,
    freed: bool,
}

unsafe extern "C" fn free_during_call(_r: *const gl_report, user: *mut c_void) {
    // SAFETY: `user` is the `Handles` the test registered, alive throughout.
    let h = unsafe { &mut *(user as *mut Handles) };
    if !h.freed {
        h.freed = true;
        assert_eq!(gl_func_free(h.f), GL_OK);
        assert_eq!(gl_code_free(h.code), GL_OK);
    }
}

#[test]
fn freeing_handles_during_a_call_never_unmaps_running_code() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    // Two violations in one call: the second runs after the callback freed
    // every handle to the code.
    let m = parse(
        "extern fn @obj_new(i64) -> ptr\nextern fn @fault_clear_lsb(ptr)\n\
         fn @main() -> i64 {\nentry:\n    %n = iconst.i64 2\n    %o = call @obj_new(%n)\n    \
         call @fault_clear_lsb(%o)\n    %a = load_attr %o, 0\n    %b = load_attr %o, 1\n    \
         %c = iconst.i64 5\n    return %c\n}\n",
    );
    ok!(gl_module_instrument(m, GL_CHECK_DICT));
    let code = compile(rt, m);
    let f = func(code, "main", &[], GL_TYPE_I64);
    let mut h = Box::new(Handles {
        f,
        code,
        freed: false,
    });
    ok!(gl_runtime_set_report_callback(
        rt,
        Some(free_during_call),
        &mut *h as *mut Handles as *mut c_void
    ));
    let mut r = 0;
    ok!(gl_func_call(f, null(), 0, &mut r));
    assert_eq!(r, 5);
    assert!(h.freed);
    fails!(GL_ERR_HANDLE, gl_func_call(f, null(), 0, &mut r));
    let (mut list, mut n) = (null_mut(), 0usize);
    ok!(gl_runtime_take_reports(rt, &mut list, null_mut(), &mut n));
    assert_eq!(n, 2);
    all_ok([
        gl_reports_free(list),
        gl_module_free(m),
        gl_runtime_free(rt),
    ])
}

/// Issue 13 (4): every entry validates pointers, lengths and handles before
/// it reads, allocates or copies: one case per class of bad argument.
#[test]
fn hostile_lengths_and_pointers_are_errors_before_any_copy() {
    let (rt, m, code, f) = identity();
    let one = [5i64];
    let mut r = 0i64;
    // Huge counts with a valid (short) array: rejected by the count, nothing copied.
    for n in [usize::MAX, usize::MAX / 8, 1 << 40, 2] {
        let msg = fails!(
            GL_ERR_ARGUMENT,
            gl_func_call_i64(f, one.as_ptr(), n, &mut r)
        );
        assert!(msg.contains("takes 1 argument(s)"), "{msg}");
        fails!(
            GL_ERR_ARGUMENT,
            gl_func_call(f, one.as_ptr() as *const u64, n, null_mut())
        );
        let codes = [GL_TYPE_I64];
        fails!(
            GL_ERR_SIGNATURE,
            gl_code_get_func(
                code,
                c"id".as_ptr(),
                codes.as_ptr(),
                n,
                GL_TYPE_I64,
                &mut null_mut()
            )
        );
    }
    // NULL array with a non-zero count.
    fails!(GL_ERR_NULL, gl_func_call_i64(f, null(), 1, &mut r));
    fails!(GL_ERR_NULL, gl_func_call(f, null(), 1, null_mut()));
    // Misaligned array and out pointers.
    let buf = [0u64; 4];
    // SAFETY: one byte into a live buffer of several words.
    let odd = unsafe { (buf.as_ptr() as *const u8).add(1) };
    let msg = fails!(
        GL_ERR_ARGUMENT,
        gl_func_call(f, odd as *const u64, 1, null_mut())
    );
    assert!(msg.contains("aligned"), "{msg}");
    let mut out = [0u64; 4];
    // SAFETY: four bytes into a live buffer of several words.
    let odd_out = unsafe { (out.as_mut_ptr() as *mut u8).add(4) };
    fails!(
        GL_ERR_ARGUMENT,
        gl_func_call(f, buf.as_ptr(), 1, odd_out as *mut u64)
    );
    fails!(
        GL_ERR_ARGUMENT,
        gl_runtime_pending_reports(rt, odd_out as *mut usize)
    );
    assert_eq!(out, [0; 4], "nothing was written through a bad out pointer");
    // A capacity that cannot describe memory.
    let mut np = 0usize;
    let mut ret = 0u32;
    let mut ps = [0u32; 1];
    fails!(
        GL_ERR_ARGUMENT,
        gl_code_signature(
            code,
            c"id".as_ptr(),
            ps.as_mut_ptr(),
            usize::MAX,
            &mut np,
            &mut ret
        )
    );
    // The function still works afterwards.
    ok!(gl_func_call_i64(f, one.as_ptr(), 1, &mut r));
    assert_eq!(r, 5);
    ok!(gl_func_free(f));
    ok!(gl_code_free(code));
    ok!(gl_module_free(m));
    ok!(gl_runtime_free(rt));
}

/// Issue 13 (2, 7): a hand-written huge site id costs one entry in
/// gl_compile (not 2^32); a second copy that cannot fit beside it is a
/// GL_ERR_LINK error with LINE:COL, and freeing the code frees its sites.
#[test]
fn huge_site_ids_compile_sparsely_and_leave_with_their_code() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let m = parse(
        "extern fn @obj_new(i64) -> ptr\nfn @f() -> i64 {\nentry:\n    %n = iconst.i64 1\n    \
         %o = call @obj_new(%n)\n    %r = guard.load_attr %o, 0 !site(4294967295, 6:5)\n    return %r\n}\n",
    );
    let code = compile(rt, m);
    let f = func(code, "f", &[], GL_TYPE_I64);
    let mut r = 7;
    ok!(gl_func_call_i64(f, null(), 0, &mut r));
    assert_eq!(r, 0);
    let msg = fails!(GL_ERR_LINK, gl_compile(rt, m, &mut null_mut()));
    assert!(msg.contains("test.glir:6:5: error: no room"), "{msg}");
    ok!(gl_func_free(f));
    ok!(gl_code_free(code));
    for _ in 0..3 {
        let c = compile(rt, m);
        ok!(gl_code_free(c));
    }
    ok!(gl_module_free(m));
    ok!(gl_runtime_free(rt));
}
