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

/// The watchpoint tests take turns: a watch session arms the process's
/// debug registers, which the tests of this file share.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A runtime with `watch=object:1`, [`PROGRAM`] compiled against it with
/// `c_host_clear_bit` as its host function, `@main` run (the host cleared
/// the tag bit), and the reports taken.
struct ClearBitRun {
    rt: *mut gl_runtime,
    m: *mut gl_module,
    code: *mut gl_code,
    f: *mut gl_func,
    list: *mut gl_reports,
    items: *const gl_report,
    n: usize,
}

fn run_clear_bit() -> ClearBitRun {
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
    ClearBitRun {
        rt,
        m,
        code,
        f,
        list,
        items,
        n,
    }
}

#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watch_says_unavailable_elsewhere checks the C API's answer"
)]
fn c_host_writer_is_named_by_its_symbol() {
    let _serial = serial();
    let ClearBitRun {
        rt,
        m,
        code,
        f,
        list,
        items,
        n,
    } = run_clear_bit();
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

/// `@touch` stores and loads attribute 0 (IR code using the object);
/// `@read` loads the word of its argument (one dict-check site for every
/// object); `@corrupt` has the host clear the tag bit.
const HOST_IR: &CStr = c"\
extern fn @c_host_clear_bit(ptr)
fn @touch(%o: ptr, %v: i64) -> i64 {
entry:
    store_attr %o, 0, %v
    %r = load_attr %o, 0
    return %r
}
fn @read(%o: ptr) -> i64 {
entry:
    %w = dict_slot.load %o
    return %w
}
fn @corrupt(%o: ptr) {
entry:
    call @c_host_clear_bit(%o)
    return
}
fn @inner(%o: ptr) -> i64 {
entry:
    call @c_host_clear_bit(%o)
    %one = iconst.i64 1
    return %one
}
fn @middle(%o: ptr) -> i64 {
entry:
    %r = call @inner(%o)
    %two = iconst.i64 2
    %s = iadd %r, %two
    return %s
}
fn @outer(%o: ptr) -> i64 {
entry:
    %r = call @middle(%o)
    %three = iconst.i64 3
    %s = iadd %r, %three
    return %s
}
";

/// A host object's memory (cpython312): dict slot at word 0, the object at
/// word 3, a values array of 1 attribute (capacity word at word 5).
struct Block(Box<[u64; 8]>);

impl Block {
    fn base(&self) -> u64 {
        self.0.as_ptr() as u64
    }
    fn obj(&self) -> u64 {
        self.base() + 24
    }
    /// The host's allocation: what malloc left, a zeroing memset, then the
    /// values-tagged word (the capacity word first).
    #[inline(never)]
    fn fill(&self, v: u64) {
        let p = self.base() as *mut u64;
        for i in 0..8 {
            // SAFETY: the test's own block.
            unsafe { p.add(i).write_volatile(v) };
        }
    }
    #[inline(never)]
    fn init(&self) {
        self.fill(0);
        let p = self.base() as *mut u64;
        // SAFETY: the test's own block: capacity 1 at word 5, values at word 6.
        unsafe {
            p.add(5).write_volatile(1);
            p.write_volatile(self.base() + 48 - 1); // values - 1: low bits 0b111
        }
    }
}

struct HostRig {
    rt: *mut gl_runtime,
    m: *mut gl_module,
    code: *mut gl_code,
    touch: *mut gl_func,
    read: *mut gl_func,
    corrupt: *mut gl_func,
    outer: *mut gl_func,
}

fn host_rig(watch: Option<&CStr>) -> HostRig {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    if let Some(w) = watch {
        ok!(gl_runtime_configure(rt, w.as_ptr()));
    }
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
        HOST_IR.as_ptr(),
        c"host.glir".as_ptr(),
        &mut m
    ));
    ok!(gl_module_instrument(m, GL_CHECK_ALL));
    let mut code = null_mut();
    ok!(gl_compile(rt, m, &mut code));
    let f = |name: &CStr, params: &[u32], ret: u32| {
        let mut f = null_mut();
        ok!(gl_code_get_func(
            code,
            name.as_ptr(),
            params.as_ptr(),
            params.len(),
            ret,
            &mut f
        ));
        f
    };
    HostRig {
        rt,
        m,
        code,
        touch: f(c"touch", &[GL_TYPE_PTR, GL_TYPE_I64], GL_TYPE_I64),
        read: f(c"read", &[GL_TYPE_PTR], GL_TYPE_I64),
        corrupt: f(c"corrupt", &[GL_TYPE_PTR], GL_TYPE_VOID),
        outer: f(c"outer", &[GL_TYPE_PTR], GL_TYPE_I64),
    }
}

/// A report as the tests read it: kind name, `object_id`, `objects` pairs.
type TakenReport = (String, u64, Vec<(u64, u64)>);

impl HostRig {
    fn call(&self, f: *mut gl_func, args: &[u64]) -> u64 {
        let mut r = 0u64;
        ok!(gl_func_call(f, args.as_ptr(), args.len(), &mut r));
        r
    }
    /// (kind name, object_id, objects) of each report taken.
    fn reports(&self) -> Vec<TakenReport> {
        let (mut list, mut items, mut n) = (null_mut(), std::ptr::null(), 0usize);
        ok!(gl_runtime_take_reports(
            self.rt, &mut list, &mut items, &mut n
        ));
        let mut out = Vec::new();
        for i in 0..n {
            // SAFETY: `items` holds `n` reports owned by the list.
            let r = unsafe { &*items.add(i) };
            // SAFETY: a NUL-terminated string owned by the list.
            let kind = unsafe { CStr::from_ptr(r.kind_name) }
                .to_string_lossy()
                .into_owned();
            let mut objs = Vec::new();
            for k in 0..r.object_count as usize {
                let (mut id, mut count) = (0u64, 0u64);
                ok!(gl_report_get_object(r, k, &mut id, &mut count));
                objs.push((id, count));
            }
            let (mut id, mut count) = (0u64, 0u64);
            // SAFETY: a live report; the outputs are live locals.
            let st =
                unsafe { gl_report_get_object(r, r.object_count as usize, &mut id, &mut count) };
            assert_eq!(st, GL_ERR_ARGUMENT, "past the end");
            out.push((kind, r.object_id, objs));
        }
        ok!(gl_reports_free(list));
        out
    }
    /// (kind name, `object_id`, the report's JSON, its text) of each report taken.
    fn reports_json(&self) -> Vec<(String, u64, serde_json::Value, String)> {
        let (mut list, mut items, mut n) = (null_mut(), std::ptr::null(), 0usize);
        ok!(gl_runtime_take_reports(
            self.rt, &mut list, &mut items, &mut n
        ));
        let mut out = Vec::new();
        for i in 0..n {
            // SAFETY: `items` holds `n` reports owned by the list.
            let r = unsafe { &*items.add(i) };
            // SAFETY: NUL-terminated strings owned by the list.
            let (kind, json, text) = unsafe {
                (
                    CStr::from_ptr(r.kind_name).to_string_lossy().into_owned(),
                    CStr::from_ptr(r.json).to_string_lossy().into_owned(),
                    CStr::from_ptr(r.text).to_string_lossy().into_owned(),
                )
            };
            let j: serde_json::Value = serde_json::from_str(&json).expect("report JSON");
            out.push((kind, r.object_id, j, text));
        }
        ok!(gl_reports_free(list));
        out
    }
    /// Registers the object of `b` (initialised first, as most hosts
    /// do) and has IR code use it (its initialisation is over): its id.
    fn register_used(&self, b: &Block) -> u64 {
        b.init();
        let mut id = 0;
        ok!(gl_runtime_register_object(
            self.rt,
            b.obj() as *const _,
            &mut id
        ));
        assert_eq!(self.call(self.touch, &[b.obj(), 5]), 5);
        id
    }
}

impl Drop for HostRig {
    fn drop(&mut self) {
        common::all_ok([
            gl_func_free(self.touch),
            gl_func_free(self.read),
            gl_func_free(self.corrupt),
            gl_func_free(self.outer),
            gl_code_free(self.code),
            gl_module_free(self.m),
            gl_runtime_free(self.rt),
        ]);
    }
}

/// Issue 29 items 2 and 3 through the C API, with `watch=recent`: a host
/// that registers each object before initialising it (tp_alloc's order),
/// lets IR code use it, frees it and reuses the memory at once (a memset),
/// 200 times at one address, gets no `foreign_write`; a corruption of a
/// live object after that is still caught (watchpoints were on).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watch_says_unavailable_elsewhere checks the C API's answer"
)]
fn host_register_init_free_reuse_is_never_foreign() {
    let _serial = serial();
    let r = host_rig(Some(c"watch=recent"));
    let b = Block(Box::new([0; 8]));
    for round in 0..200u64 {
        b.fill(0xdead_0000_0000_0003 ^ round); // what malloc left
        let mut id = 0;
        ok!(gl_runtime_register_object(
            r.rt,
            b.obj() as *const _,
            &mut id
        ));
        assert_eq!(id, round + 1);
        b.init();
        assert_eq!(r.call(r.touch, &[b.obj(), round]), round);
        ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
        b.fill(round); // reused at once
    }
    assert_eq!(r.reports(), vec![], "no report over 200 rounds");
    let mut id = 0;
    b.init();
    ok!(gl_runtime_register_object(
        r.rt,
        b.obj() as *const _,
        &mut id
    ));
    assert_eq!(r.call(r.touch, &[b.obj(), 7]), 7);
    r.call(r.corrupt, &[b.obj()]);
    let reps = r.reports();
    assert_eq!(
        reps.iter().filter(|x| x.0 == "foreign_write").count(),
        1,
        "the corruption is caught (none: hardware watchpoints unavailable here): {reps:?}"
    );
    assert_eq!(reps[0].1, 201, "{reps:?}");
    ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
}

/// Issue 29 item 6 through the C API: two objects corrupted, read at one
/// dict-check site: one report, `objects` = both ids with their counts
/// (`gl_report.objects` and `gl_report_get_object`).
#[test]
fn two_objects_at_one_site_are_listed_in_the_report_struct() {
    let _serial = serial();
    let r = host_rig(None);
    let (a, b) = (Block(Box::new([0; 8])), Block(Box::new([0; 8])));
    for x in [&a, &b] {
        x.init();
        let mut id = 0;
        ok!(gl_runtime_register_object(
            r.rt,
            x.obj() as *const _,
            &mut id
        ));
        r.call(r.corrupt, &[x.obj()]);
    }
    for x in [&a, &b, &b] {
        assert_eq!(r.call(r.read, &[x.obj()]) & 7, 0b110);
    }
    let reps = r.reports();
    assert_eq!(
        reps,
        vec![("dict_slot_tag".to_string(), 1, vec![(1, 1), (2, 2)])],
        "{reps:?}"
    );
    for x in [&a, &b] {
        ok!(gl_runtime_object_freed(r.rt, x.obj() as *const _));
    }
}

/// Issue 29 item 1 through the C API: the host's rogue C function clears
/// the tag bit of watched object 1, the host frees it and registers a new
/// object (id 2) at the same address at once; the `foreign_write` names
/// object 1 (`gl_report.object_id`, JSON, text and its trailer) — with no
/// other report before the reports are taken, and with a dict report about
/// object 2 recorded first.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watch_says_unavailable_elsewhere checks the C API's answer"
)]
fn foreign_write_keeps_its_object_id_after_the_host_reuses_the_address() {
    for other_report in [false, true] {
        let _serial = serial();
        let r = host_rig(Some(c"watch=object:1"));
        let b = Block(Box::new([0; 8]));
        assert_eq!(r.register_used(&b), 1);
        r.call(r.corrupt, &[b.obj()]);
        ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
        assert_eq!(r.register_used(&b), 2, "the same address, a new object");
        if other_report {
            // Object 2 (not watched) corrupted and read: a dict report.
            r.call(r.corrupt, &[b.obj()]);
            assert_eq!(r.call(r.read, &[b.obj()]) & 7, 0b110);
        }
        let reps = r.reports_json();
        let what = format!("other report: {other_report}");
        let fw: Vec<_> = reps.iter().filter(|x| x.0 == "foreign_write").collect();
        assert_eq!(
            fw.len(),
            1,
            "{what}: one foreign_write (none: hardware watchpoints unavailable here): {reps:?}"
        );
        let (_, id, j, text) = fw[0];
        assert_eq!(*id, 1, "{what}: gl_report.object_id: {j}");
        assert_eq!(j["object_id"], 1, "{what}: {j}");
        assert!(text.contains("(object_id 1)"), "{what}: {text}");
        assert!(text.contains("object id 1,"), "{what}: trailer: {text}");
        assert!(!text.contains("object id 2"), "{what}: {text}");
        if other_report {
            let d = reps.iter().find(|x| x.0 == "dict_slot_tag").expect(&what);
            assert_eq!(d.1, 2, "{what}: the dict report is about the new object");
            assert_eq!(reps.len(), 2, "{what}: {reps:?}");
        } else {
            assert_eq!(reps.len(), 1, "{what}: {reps:?}");
        }
        ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
    }
}

/// Issue 29 item 4 through the C API: `watch=sample:3@2` watches the host
/// objects whose ids are 2 (mod 3) — every object here is corrupted by the
/// host, only ids 2, 5, 8 are reported; `watch=sample:3` draws a phase and
/// watches one residue class, the same for the whole run.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watch_says_unavailable_elsewhere checks the C API's answer"
)]
fn sample_with_and_without_a_phase_through_configure() {
    for spec in [c"watch=sample:3@2", c"watch=sample:3"] {
        let _serial = serial();
        let r = host_rig(Some(spec));
        let b = Block(Box::new([0; 8]));
        for want in 1..=9 {
            assert_eq!(r.register_used(&b), want);
            r.call(r.corrupt, &[b.obj()]);
            ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
        }
        let mut ids: Vec<u64> = Vec::new();
        for (kind, id, objs) in r.reports() {
            assert_eq!(kind, "foreign_write", "{spec:?}");
            if objs.is_empty() {
                ids.push(id);
            } else {
                ids.extend(objs.iter().map(|o| o.0));
            }
        }
        ids.sort_unstable();
        let p = ids.first().map_or(99, |i| i % 3);
        if spec == c"watch=sample:3@2" {
            assert_eq!(ids, [2, 5, 8], "{spec:?}");
        } else {
            let want: Vec<u64> = (1..=9).filter(|i| i % 3 == p).collect();
            assert_eq!(ids, want, "{spec:?}: one residue class, phase {p}");
        }
    }
}

/// Issue 29 item 5 through the C API: the host's rogue C function called
/// three IR calls below the entry (`@outer` → `@middle` → `@inner` →
/// `c_host_clear_bit`): the backtrace of the `foreign_write` is the
/// writer, then every JIT frame innermost first at its IR call (`@fn L:C
/// (call)`), then the host's frames below the JIT entry down to the test
/// function that called `gl_func_call` — as gdb walks it (Cranelift's
/// unwind info registered with the process's unwinder).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watch_says_unavailable_elsewhere checks the C API's answer"
)]
fn a_host_writer_three_ir_calls_deep_has_every_jit_frame_and_the_host_below() {
    let _serial = serial();
    let r = host_rig(Some(c"watch=object:1"));
    let b = Block(Box::new([0; 8]));
    assert_eq!(r.register_used(&b), 1);
    assert_eq!(r.call(r.outer, &[b.obj()]), 6);
    let reps = r.reports_json();
    assert_eq!(
        reps.len(),
        1,
        "one foreign_write (none: hardware watchpoints unavailable here): {reps:?}"
    );
    let (kind, id, j, text) = &reps[0];
    assert_eq!((kind.as_str(), *id), ("foreign_write", 1), "{j}");
    let bt: Vec<&str> = j["backtrace"]
        .as_array()
        .unwrap_or_else(|| panic!("no backtrace: {j}"))
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    let at = |pat: &str| {
        bt.iter()
            .position(|f| f.contains(pat))
            .unwrap_or_else(|| panic!("no frame {pat:?} in {bt:#?}"))
    };
    // HOST_IR's calls: @inner 20:5, @middle 26:5, @outer 33:5.
    let ir = [
        at("@inner 20:5 (call)"),
        at("@middle 26:5 (call)"),
        at("@outer 33:5 (call)"),
    ];
    assert!(
        ir[0] > 0 && ir[0] < ir[1] && ir[1] < ir[2],
        "innermost first: {bt:#?}"
    );
    assert!(
        bt[..ir[0]].iter().any(|f| f.contains("c_host_clear_bit")),
        "the writer (and what it inlined) first: {bt:#?}"
    );
    let ir_frames = bt.iter().filter(|f| f.contains(" @")).count();
    assert_eq!(ir_frames, 3, "no other IR frame, none unresolved: {bt:#?}");
    // Below the JIT entry: the C API's call, then this test (the host).
    let host = at("a_host_writer_three_ir_calls_deep");
    assert!(host > ir[2], "the host below the IR frames: {bt:#?}");
    assert!(at("gl_func_call") > ir[2], "{bt:#?}");
    assert!(text.contains("@outer 33:5 (call)"), "{text}");
    ok!(gl_runtime_object_freed(r.rt, b.obj() as *const _));
}

/// Where watchpoints are not built (an aarch64 host), `watch=` is accepted,
/// the session is unavailable (the reason on stderr, header's
/// `gl_runtime_configure`), and the run goes on: the same result, no
/// `foreign_write`.
#[test]
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn watch_says_unavailable_elsewhere() {
    let _serial = serial();
    let ClearBitRun {
        rt,
        m,
        code,
        f,
        list,
        items: _,
        n,
    } = run_clear_bit();
    assert_eq!(n, 0, "no watchpoint, no foreign_write");
    ok!(gl_reports_free(list));
    ok!(gl_func_free(f));
    ok!(gl_code_free(code));
    ok!(gl_module_free(m));
    ok!(gl_runtime_free(rt));
}
