//! Watchpoints through the C API: `gl_runtime_configure(rt, "watch=...")`
//! and a C-ABI host function that clears the tag bit with a 1-byte store,
//! reported as GL_REPORT_FOREIGN_WRITE naming the host function's symbol.
//!
//! Needs `perf_event_open` hardware breakpoints (Linux x86_64,
//! `kernel.perf_event_paranoid` <= 2): FAILS where they are unavailable.

mod common;

use common::{ok, runtime};
use guardlift::*;
use std::ffi::CStr;
use std::ptr::null_mut;

/// The host's rogue writer: clears bit 0 of the managed-dict word
/// (cpython312: at obj - 24) with one byte store.
#[no_mangle]
pub extern "C" fn c_host_clear_bit(obj: i64) {
    let slot = (obj - 24) as *mut u8;
    // SAFETY: the dict slot of an object the runtime created.
    unsafe { slot.write_volatile(slot.read_volatile() & !1) };
}

const PROGRAM: &CStr = c"\
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
extern fn @c_host_clear_bit(ptr)
fn @main() -> i64 {
entry:
    %n = iconst.i64 2
    %o = call @obj_new(%n)
    call @c_host_clear_bit(%o)
    %w = dict_slot.load %o
    %seven = iconst.i64 7
    %t = band %w, %seven
    call @obj_free(%o)
    return %t
}
";

#[test]
fn c_host_writer_is_named_by_its_symbol() {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    ok!(gl_runtime_configure(rt, c"watch=object:1".as_ptr()));
    let hf: unsafe extern "C" fn() =
        // SAFETY: gl_host_fn is a type-erased function pointer; the extern is declared with this signature.
        unsafe { std::mem::transmute(c_host_clear_bit as extern "C" fn(i64)) };
    ok!(gl_runtime_add_symbol(
        rt,
        c"c_host_clear_bit".as_ptr(),
        Some(hf)
    ));
    let mut m = null_mut();
    ok!(gl_module_parse(
        PROGRAM.as_ptr(),
        c"watch.glir".as_ptr(),
        &mut m
    ));
    let mut code = null_mut();
    ok!(gl_compile(rt, m, &mut code));
    let mut f = null_mut();
    ok!(gl_code_get_func(
        code,
        c"main".as_ptr(),
        std::ptr::null(),
        0,
        GL_TYPE_I64,
        &mut f
    ));
    let mut r = 0i64;
    ok!(gl_func_call_i64(f, std::ptr::null(), 0, &mut r));
    assert_eq!(r, 0b110, "the host cleared the tag bit");
    let (mut list, mut items, mut n) = (null_mut(), std::ptr::null(), 0usize);
    ok!(gl_runtime_take_reports(rt, &mut list, &mut items, &mut n));
    assert_eq!(
        n, 1,
        "one foreign_write (none means hardware watchpoints are unavailable here: \
         they need Linux x86_64 with perf_event_open breakpoints)"
    );
    // SAFETY: `items` points at the list's first report (n > 0).
    let rep = unsafe { &*items };
    assert_eq!(rep.kind, GL_REPORT_FOREIGN_WRITE);
    assert_eq!(rep.site, GL_NO_SITE, "no guard site made it");
    assert_eq!(rep.width, 1);
    assert_eq!(rep.value & 7, 0b110);
    // SAFETY: the report's JSON is NUL-terminated and owned by the list.
    let json = unsafe { CStr::from_ptr(rep.json) }.to_string_lossy();
    for want in [
        "\"symbol\":\"c_host_clear_bit+0x",
        "\"object_id\":1,",
        "\"function\":\"main\"",
        "\"kind\":\"foreign_write\"",
    ] {
        assert!(json.contains(want), "{want} in {json}");
    }
    ok!(gl_reports_free(list));
    ok!(gl_func_free(f));
    ok!(gl_code_free(code));
    ok!(gl_module_free(m));
    ok!(gl_runtime_free(rt));
}
