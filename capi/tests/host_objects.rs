//! Host objects through the C API: objects the host allocates itself are
//! registered (they get allocation ids) and reported freed, as a
//! `tp_alloc`/`tp_dealloc` hook would. A freed host object is never watched
//! (issue 13, defect 3); instrumented code using it is a `use_after_free`;
//! an address recycled for a new object shows two different object ids.

mod common;

use common::{fails, last_error, ok, runtime};
use guardlift::*;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

/// `@touch` writes and reads attribute 0; `@setw` stores a dict word;
/// `@poke` is an ordinary raw store.
const IR: &str = "\
fn @touch(%o: ptr, %v: i64) -> i64 {
entry:
    store_attr %o, 0, %v
    %r = load_attr %o, 0
    return %r
}
fn @setw(%o: ptr, %w: i64) {
entry:
    dict_slot.store %o, %w
    return
}
fn @poke(%p: ptr, %v: i64) {
entry:
    store %v, %p, 0
    return
}
";

/// A host object in CPython 3.12's layout (dict slot at obj − 24) with a
/// values array of `n` attributes whose capacity word precedes it.
struct HostObj {
    body: Box<[u64; 5]>,
    values: Box<[u64]>,
}

impl HostObj {
    fn new(n: usize) -> Self {
        let mut values = vec![0u64; n + 1].into_boxed_slice();
        values[0] = n as u64;
        let mut o = HostObj {
            body: Box::new([0; 5]),
            values,
        };
        o.body[0] = o.values_word();
        o.body[3] = 1;
        o
    }
    fn obj(&self) -> u64 {
        &self.body[3] as *const u64 as u64
    }
    fn slot(&self) -> u64 {
        &self.body[0] as *const u64 as u64
    }
    fn values_word(&self) -> u64 {
        (&self.values[1] as *const u64 as u64) - 1
    }
}

struct Rig {
    rt: *mut gl_runtime,
    m: *mut gl_module,
    code: *mut gl_code,
    touch: *mut gl_func,
    setw: *mut gl_func,
    poke: *mut gl_func,
}

fn rig() -> Rig {
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let (mut m, mut code) = (null_mut(), null_mut());
    let text = CString::new(IR).unwrap();
    ok!(gl_module_parse(
        text.as_ptr(),
        c"host.glir".as_ptr(),
        &mut m
    ));
    ok!(gl_module_instrument(m, GL_CHECK_ALL));
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
    let touch = f(c"touch", &[GL_TYPE_PTR, GL_TYPE_I64], GL_TYPE_I64);
    let setw = f(c"setw", &[GL_TYPE_PTR, GL_TYPE_I64], GL_TYPE_VOID);
    let poke = f(c"poke", &[GL_TYPE_PTR, GL_TYPE_I64], GL_TYPE_VOID);
    Rig {
        rt,
        m,
        code,
        touch,
        setw,
        poke,
    }
}

impl Rig {
    fn call(&self, f: *mut gl_func, a: u64, b: u64) -> u64 {
        let mut r = 0u64;
        ok!(gl_func_call(f, [a, b].as_ptr(), 2, &mut r));
        r
    }
    /// (kind name, object id, JSON) of each pending report.
    fn reports(&self) -> Vec<(String, u64, String)> {
        let (mut list, mut items, mut n) = (null_mut(), null(), 0usize);
        ok!(gl_runtime_take_reports(
            self.rt, &mut list, &mut items, &mut n
        ));
        let v = (0..n)
            .map(|i| {
                // SAFETY: `i` < n: a report of the list, which outlives this iterator.
                let r = unsafe { &*items.add(i) };
                // SAFETY: the report's strings are NUL-terminated and owned by the list.
                let s = |p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
                (s(r.kind_name), r.object_id, s(r.json))
            })
            .collect();
        ok!(gl_reports_free(list));
        v
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        gl_func_free(self.touch);
        gl_func_free(self.setw);
        gl_func_free(self.poke);
        gl_code_free(self.code);
        gl_module_free(self.m);
        gl_runtime_free(self.rt);
    }
}

/// Issue 13, defect 3: after the host frees an object and reuses its
/// memory, an ordinary raw store there is not a `slot_clobber` and is not
/// dropped.
#[test]
fn a_freed_host_object_is_never_watched() {
    let r = rig();
    let mut o = HostObj::new(2);
    let mut id = 0;
    ok!(gl_runtime_register_object(
        r.rt,
        o.obj() as *const _,
        &mut id
    ));
    assert_eq!(id, 1);
    assert_eq!(r.call(r.touch, o.obj(), 42), 42);
    assert!(r.reports().is_empty());
    // Before the free, a raw store over the slot is a clobber (dropped).
    r.call(r.poke, o.slot(), 5);
    let reps = r.reports();
    assert_eq!(reps.len(), 1, "{reps:?}");
    assert_eq!((reps[0].0.as_str(), reps[0].1), ("slot_clobber", 1));
    assert_eq!(o.body[0], o.values_word(), "the clobber was skipped");
    // The host frees it and reuses the memory for plain data.
    ok!(gl_runtime_object_freed(r.rt, o.obj() as *const _));
    r.call(r.poke, o.slot(), 5);
    assert!(r.reports().is_empty(), "no report on reused memory");
    assert_eq!(o.body[0], 5, "the store happened");
    // The watch does not come back by itself, even after many stores.
    for k in 0..100 {
        r.call(r.poke, o.slot(), k);
    }
    assert!(r.reports().is_empty());
    o.body[0] = o.values_word();
}

#[test]
fn stale_host_pointer_is_use_after_free_and_a_recycled_address_shows_two_ids() {
    let r = rig();
    let o = HostObj::new(1);
    let mut id1 = 0;
    ok!(gl_runtime_register_object(
        r.rt,
        o.obj() as *const _,
        &mut id1
    ));
    // A guarded dict_slot.store records the last write (to object id1).
    r.call(r.setw, o.obj(), o.values_word());
    ok!(gl_runtime_object_freed(r.rt, o.obj() as *const _));
    // The stale pointer: refused and reported with the object's id.
    assert_eq!(r.call(r.touch, o.obj(), 9), 0, "load_attr gives 0");
    assert_eq!(o.values[1], 0, "the store_attr was skipped");
    let reps = r.reports();
    assert_eq!(reps.len(), 2, "{reps:?}");
    for (kind, id, json) in &reps {
        assert_eq!((kind.as_str(), *id), ("use_after_free", id1), "{json}");
        assert!(json.contains("\"alloc_site\":null"), "{json}");
    }
    // The host recycles the address for a new object: a new id, live again.
    let mut id2 = 0;
    ok!(gl_runtime_register_object(
        r.rt,
        o.obj() as *const _,
        &mut id2
    ));
    assert_eq!(id2, id1 + 1);
    assert_eq!(r.call(r.touch, o.obj(), 9), 9);
    assert!(r.reports().is_empty());
    // A rogue writer clears the tag bit: the report is about the new
    // object, and the last recorded write was to the old one.
    let p = o.slot() as *mut u64;
    // SAFETY: `p` is the dict slot of `o`, a live host object this test owns.
    unsafe { p.write_volatile(p.read_volatile() & !1) };
    r.call(r.touch, o.obj(), 1);
    let reps = r.reports();
    assert!(!reps.is_empty());
    let (kind, id, json) = &reps[0];
    assert_eq!((kind.as_str(), *id), ("dict_slot_tag", id2), "{json}");
    let j: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(j["object_id"], id2);
    assert_eq!(j["last_write"]["object_id"], id1, "{json}");
    // SAFETY: as above.
    unsafe { p.write_volatile(o.values_word()) };
}

#[test]
fn host_object_api_misuse_is_an_error() {
    let r = rig();
    let o = HostObj::new(1);
    let mut id = 7;
    // SAFETY: a live runtime handle, NULL (rejected) and a live local.
    let st = unsafe { gl_runtime_register_object(r.rt, null(), &mut id) };
    assert_eq!(st, GL_ERR_ARGUMENT);
    assert_eq!(id, 0);
    // SAFETY: as above; a misaligned address is rejected before any access.
    let st = unsafe { gl_runtime_register_object(r.rt, (o.obj() + 3) as *const _, &mut id) };
    assert_eq!(st, GL_ERR_ARGUMENT, "unaligned");
    ok!(gl_runtime_register_object(
        r.rt,
        o.obj() as *const _,
        &mut id
    ));
    // SAFETY: a live runtime handle, a live object and a live local.
    let st = unsafe { gl_runtime_register_object(r.rt, o.obj() as *const _, &mut id) };
    assert_eq!(st, GL_ERR_ARGUMENT, "already live");
    assert!(
        last_error().contains("already a live object"),
        "{}",
        last_error()
    );
    // SAFETY: as above; a NULL out pointer is rejected.
    let st = unsafe { gl_runtime_register_object(r.rt, o.obj() as *const _, null_mut()) };
    assert_eq!(st, GL_ERR_NULL);
    ok!(gl_runtime_object_freed(r.rt, o.obj() as *const _));
    // SAFETY: as above: a second free of the same object is rejected.
    let st = unsafe { gl_runtime_object_freed(r.rt, o.obj() as *const _) };
    assert_eq!(st, GL_ERR_ARGUMENT, "freed twice");
    // SAFETY: a NULL runtime handle is rejected before anything is read.
    let st = unsafe { gl_runtime_object_freed(null_mut(), o.obj() as *const _) };
    assert_ne!(st, GL_OK, "bad handle");
}

/// A C host's allocator (tp_alloc): registers the object it made. Its
/// frame is what the allocation stacks of reports must start with.
#[inline(never)]
#[no_mangle]
extern "C" fn glhost_tp_alloc(rt: *mut gl_runtime, obj: u64) -> u64 {
    let mut id = 0;
    ok!(gl_runtime_register_object(rt, obj as *const _, &mut id));
    std::hint::black_box(id)
}

/// The C host's deallocator (tp_dealloc): reports the object freed.
#[inline(never)]
#[no_mangle]
extern "C" fn glhost_tp_dealloc(rt: *mut gl_runtime, obj: u64) {
    ok!(gl_runtime_object_freed(rt, obj as *const _));
    std::hint::black_box(obj);
}

/// Every frame of a report's `which` stack through the accessor.
fn object_stack(r: &gl_report, which: u32) -> Vec<String> {
    let (mut frame, mut n) = (null(), 0usize);
    ok!(gl_report_get_object_stack(r, which, 0, &mut frame, &mut n));
    let v: Vec<String> = (0..n)
        .map(|i| {
            ok!(gl_report_get_object_stack(r, which, i, &mut frame, &mut n));
            assert!(!frame.is_null());
            // SAFETY: a frame string owned with the report, NUL-terminated.
            unsafe { CStr::from_ptr(frame) }
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // Past the last frame: NULL, and still the count.
    ok!(gl_report_get_object_stack(r, which, n, &mut frame, &mut n));
    assert!(frame.is_null() && n == v.len());
    v
}

/// What the report callback saw: each report's allocation and free stacks.
type SeenStacks = std::sync::Mutex<Vec<(Vec<String>, Vec<String>)>>;

unsafe extern "C" fn keep_stacks(r: *const gl_report, user: *mut std::ffi::c_void) {
    // SAFETY: the test passes a live `SeenStacks`; `r` is live during the call.
    let (seen, r) = unsafe { (&*(user as *const SeenStacks), &*r) };
    let stacks = (
        object_stack(r, GL_STACK_ALLOC),
        object_stack(r, GL_STACK_FREE),
    );
    seen.lock().unwrap().push(stacks);
}

/// Issue 29, item 7: a use after free of a host object names the host's
/// functions that registered and freed it — in the report's text and JSON,
/// through `gl_report_get_object_stack` in a callback and in a taken list —
/// innermost first, without guardlift's own frames.
#[test]
fn reports_about_host_objects_name_where_the_host_registered_and_freed_them() {
    let r = rig();
    ok!(gl_runtime_configure(r.rt, c"host_stacks=1".as_ptr()));
    let seen = SeenStacks::default();
    ok!(gl_runtime_set_report_callback(
        r.rt,
        Some(keep_stacks),
        &seen as *const SeenStacks as *mut _
    ));
    let o = HostObj::new(1);
    let id = glhost_tp_alloc(r.rt, o.obj());
    glhost_tp_dealloc(r.rt, o.obj());
    assert_eq!(r.call(r.touch, o.obj(), 9), 0);
    let (mut list, mut items, mut n) = (null_mut(), null(), 0usize);
    ok!(gl_runtime_take_reports(r.rt, &mut list, &mut items, &mut n));
    assert_eq!(n, 2, "store_attr and load_attr");
    for i in 0..n {
        // SAFETY: `i` < n: a report of the live list.
        let rep = unsafe { &*items.add(i) };
        assert_eq!(rep.object_id, id);
        let alloc = object_stack(rep, GL_STACK_ALLOC);
        let free = object_stack(rep, GL_STACK_FREE);
        assert!(alloc[0].contains("glhost_tp_alloc"), "{alloc:?}");
        assert!(free[0].contains("glhost_tp_dealloc"), "{free:?}");
        assert!(
            alloc[1].contains("reports_about_host_objects_name")
                && alloc[1].contains("host_objects.rs:"),
            "{alloc:?}"
        );
        for f in alloc.iter().chain(&free) {
            assert!(!f.contains("gl_runtime_"), "guardlift's frame {f}");
        }
        // SAFETY: the report's strings are NUL-terminated and owned by the list.
        let text = unsafe { CStr::from_ptr(rep.text) }.to_string_lossy();
        assert!(
            text.contains(&format!(
                "registered by the host at:\n      #0 {}\n",
                alloc[0]
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "reported freed by the host at:\n      #0 {}\n",
                free[0]
            )),
            "{text}"
        );
        // SAFETY: as above.
        let json = unsafe { CStr::from_ptr(rep.json) }.to_string_lossy();
        let j: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(j["alloc_stack"], serde_json::json!(alloc), "{json}");
        assert_eq!(j["free_stack"], serde_json::json!(free), "{json}");
        // A copy of the struct (as C code makes one) finds the same stacks.
        // SAFETY: `gl_report` is plain data (numbers and borrowed
        // pointers); the copy is used while the list lives.
        let copy = unsafe { std::ptr::read(rep) };
        assert_eq!(object_stack(&copy, GL_STACK_ALLOC), alloc);
        let (mut frame, mut count) = (null(), 1usize);
        let msg = fails!(
            GL_ERR_ARGUMENT,
            gl_report_get_object_stack(rep, 7, 0, &mut frame, &mut count)
        );
        assert!(frame.is_null() && count == 0, "cleared on failure");
        assert!(msg.contains("GL_STACK_ALLOC"), "{msg}");
        fails!(
            GL_ERR_NULL,
            gl_report_get_object_stack(rep, GL_STACK_ALLOC, 0, &mut frame, null_mut())
        );
    }
    ok!(gl_reports_free(list));
    ok!(gl_runtime_set_report_callback(r.rt, None, null_mut()));
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 2, "one callback per report");
    for (alloc, free) in seen {
        assert!(alloc[0].contains("glhost_tp_alloc"), "{alloc:?}");
        assert!(free[0].contains("glhost_tp_dealloc"), "{free:?}");
    }
}

/// A live host object's report has its allocation stack and no free
/// stack; `host_stacks=0` (the default): nothing is recorded, the accessor
/// finds no frame.
#[test]
fn host_stacks_option_and_live_objects() {
    let r = rig();
    ok!(gl_runtime_configure(r.rt, c"host_stacks=1".as_ptr()));
    let o = HostObj::new(1);
    // A live host object's word corrupted: a dict_slot_tag report with the
    // allocation stack only.
    glhost_tp_alloc(r.rt, o.obj());
    let p = o.slot() as *mut u64;
    // SAFETY: `p` is the dict slot of `o`, a live host object this test owns.
    unsafe { p.write_volatile(p.read_volatile() & !1) };
    r.call(r.touch, o.obj(), 1);
    let (mut list, mut items, mut n) = (null_mut(), null(), 0usize);
    ok!(gl_runtime_take_reports(r.rt, &mut list, &mut items, &mut n));
    assert!(n >= 1);
    // SAFETY: a report of the live list.
    let rep = unsafe { &*items };
    assert!(object_stack(rep, GL_STACK_ALLOC)[0].contains("glhost_tp_alloc"));
    assert!(object_stack(rep, GL_STACK_FREE).is_empty());
    // SAFETY: as above.
    let json = unsafe { CStr::from_ptr(rep.json) }.to_string_lossy();
    assert!(
        json.contains("\"alloc_stack\":[") && !json.contains("free_stack"),
        "{json}"
    );
    ok!(gl_reports_free(list));
    // SAFETY: as above.
    unsafe { p.write_volatile(o.values_word()) };
    glhost_tp_dealloc(r.rt, o.obj());
    // Off: the next object has no stacks.
    ok!(gl_runtime_configure(r.rt, c"host_stacks=0".as_ptr()));
    glhost_tp_alloc(r.rt, o.obj());
    glhost_tp_dealloc(r.rt, o.obj());
    r.call(r.touch, o.obj(), 1);
    ok!(gl_runtime_take_reports(r.rt, &mut list, &mut items, &mut n));
    assert_eq!(n, 2);
    // SAFETY: a report of the live list.
    let rep = unsafe { &*items };
    assert!(object_stack(rep, GL_STACK_ALLOC).is_empty());
    assert!(object_stack(rep, GL_STACK_FREE).is_empty());
    // SAFETY: as above.
    let json = unsafe { CStr::from_ptr(rep.json) }.to_string_lossy();
    assert!(!json.contains("_stack"), "{json}");
    ok!(gl_reports_free(list));
}
