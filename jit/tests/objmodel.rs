//! dict_slot.*, load_attr/store_attr (values mode and slow path), and the
//! dict / clobber / watch guards in recover mode; every test also without
//! the runtime's shadow (a child process, `GUARDLIFT_NO_SHADOW=1`).

mod common;
use common::*;
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::internals::*;
use guardlift_runtime::layout::{self, DictLayout};
use guardlift_runtime::{Mode, Observed, ReportKind, Runtime, RuntimeConfig};

const PRELUDE: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)
extern fn @obj_free(ptr)
extern fn @fault_clear_lsb(ptr)
"#;

fn word_of(rt: &Runtime, obj: u64) -> u64 {
    let slot = rt.layout().slot_addr(obj);
    // SAFETY: `obj` is a live model object of this runtime.
    rt.with_heap(|h| assert!(h.is_valid(slot, 8)));
    // SAFETY: the heap says the 8 bytes at `slot` are part of a live object.
    unsafe { (slot as *const u64).read_unaligned() }
}

#[test]
fn dict_slot_load_and_store() {
    let m = jit(&format!(
        "{PRELUDE}
fn @new(%n: i64) -> ptr {{
entry:
    %o = call @obj_new(%n)
    return %o
}}
fn @word(%o: ptr) -> i64 {{
entry:
    %w = dict_slot.load %o
    return %w
}}
fn @set(%o: ptr, %w: i64) {{
entry:
    dict_slot.store %o, %w
    return
}}
"
    ));
    let rt = m.runtime().clone();
    let new = m.safe_func::<i64, Ptr>("new").unwrap();
    let word = m.func::<Ptr, i64>("word").unwrap();
    let set = m.func::<(Ptr, i64), ()>("set").unwrap();
    let o = new.call(3);
    // SAFETY: `o` is a live object of the model heap; the functions read
    // and write its dict slot only.
    let w = unsafe { word.call(o) } as u64;
    assert_eq!(w & layout::TAG_MASK, layout::VALUES_TAG);
    assert_eq!(w, word_of(&rt, o.0));
    // SAFETY: as above.
    unsafe {
        set.call((o, 0x1234_5670));
        assert_eq!(word_of(&rt, o.0), 0x1234_5670);
        assert_eq!(word.call(o), 0x1234_5670);
        set.call((o, w as i64));
        assert_eq!(word.call(o) as u64, w);
    }
    assert!(rt.take_reports().is_empty());
}

const ATTRS: &str = r#"
fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}
fn @dictify(%o: ptr) {
entry:
    call @obj_dictify(%o)
    return
}
fn @clear(%o: ptr) {
entry:
    call @fault_clear_lsb(%o)
    return
}
fn @get2(%o: ptr) -> i64 {
entry:
    %v = load_attr %o, 2
    return %v
}
fn @set2(%o: ptr, %v: i64) {
entry:
    store_attr %o, 2, %v
    return
}
fn @get0(%o: ptr) -> i64 {
entry:
    %v = load_attr %o, 0
    return %v
}
fn @set0(%o: ptr, %v: ptr) {
entry:
    store_attr %o, 0, %v
    return
}
"#;

#[test]
fn attrs_in_values_mode_and_after_dictify() {
    for layout in [
        DictLayout::Cpython312,
        DictLayout::Phoenix,
        DictLayout::Custom(-40),
    ] {
        let text = format!("layout {layout}\n{PRELUDE}{ATTRS}");
        let rt = Runtime::new(RuntimeConfig {
            layout,
            mode: Mode::Recover,
            abort_process: false,
            ..Default::default()
        });
        let m = compile(&text, &rt);
        let new = m.safe_func::<i64, Ptr>("new").unwrap();
        let get2 = m.func::<Ptr, i64>("get2").unwrap();
        let set2 = m.func::<(Ptr, i64), ()>("set2").unwrap();
        let get0 = m.func::<Ptr, i64>("get0").unwrap();
        let set0 = m.func::<(Ptr, Ptr), ()>("set0").unwrap();
        let o = new.call(4);
        // SAFETY: `o` is a live object of the model heap with 4
        // attributes; the accessors use attributes 0 and 2 of it.
        unsafe {
            assert_eq!(get2.call(o), 0, "attributes start at 0");
            set2.call((o, -99));
            set0.call((o, Ptr(7)));
            assert_eq!(get2.call(o), -99);
            assert_eq!(get0.call(o), 7);
        }
        // The fast path wrote the values array: attribute 2 at values + 16.
        let w = word_of(&rt, o.0);
        let values = layout::values_ptr(w);
        // SAFETY: attribute 2 of the live values array of `o` (4 attributes).
        let a2 = unsafe { ((values + layout::attr_offset(2) as u64) as *const i64).read() };
        assert_eq!(a2, -99);
        // Dict mode: the slow path, attributes kept.
        m.safe_func::<Ptr, ()>("dictify").unwrap().call(o);
        assert_eq!(word_of(&rt, o.0) & layout::TAG_MASK, layout::DICT_TAG);
        // SAFETY: `o` is still live; its dict word sends the accessors to
        // the model heap's slow paths.
        unsafe {
            assert_eq!(get2.call(o), -99);
            set2.call((o, 12345));
            assert_eq!(get2.call(o), 12345);
            assert_eq!(get0.call(o), 7);
        }
        assert!(rt.take_host_fault().is_none());
        assert!(
            rt.take_reports().is_empty(),
            "{layout}: uninstrumented code never reports"
        );
    }
}

#[test]
fn uninstrumented_corruption_reaches_the_host() {
    let rt = recover_rt();
    let m = compile(&format!("{PRELUDE}{ATTRS}"), &rt);
    let o = m.safe_func::<i64, Ptr>("new").unwrap().call(3);
    m.safe_func::<Ptr, ()>("clear").unwrap().call(o);
    // LSB cleared: the word now looks like a dict pointer; the slow path
    // gets it unchecked (the host "crashes": a recorded host fault).
    // SAFETY: `o` is a live object; `get2` reads its dict slot and hands
    // the corrupted word to the model heap's slow path, which checks it.
    let _ = unsafe { m.func::<Ptr, i64>("get2").unwrap().call(o) };
    assert!(rt.take_host_fault().is_some());
    assert!(rt.take_reports().is_empty());
}

const GUARDED: &str = r#"
fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}
fn @clear(%o: ptr) {
entry:
    call @fault_clear_lsb(%o)
    return
}
fn @dictify(%o: ptr) {
entry:
    call @obj_dictify(%o)
    return
}
fn @gword(%o: ptr) -> i64 {
entry:
    %w = guard.dict_slot.load %o
    return %w
}
fn @gset(%o: ptr, %w: i64) {
entry:
    guard.dict_slot.store %o, %w
    return
}
fn @gget(%o: ptr) -> i64 {
entry:
    %v = guard.load_attr %o, 1
    return %v
}
fn @gput(%o: ptr, %v: i64) {
entry:
    guard.store_attr %o, 1, %v
    return
}
fn @gput_loop(%o: ptr, %n: i64) {
entry:
    %z = iconst.i64 0
    jump l(%z)
l(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done
body:
    guard.store_attr %o, 1, %i
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump l(%i2)
done:
    return
}
"#;

#[test]
fn dict_guards_pass_valid_words() {
    let rt = recover_rt();
    let m = compile(&format!("{PRELUDE}{GUARDED}"), &rt);
    let o = m.safe_func::<i64, Ptr>("new").unwrap().call(2);
    let gword = m.func::<Ptr, i64>("gword").unwrap();
    let gset = m.func::<(Ptr, i64), ()>("gset").unwrap();
    let gget = m.func::<Ptr, i64>("gget").unwrap();
    let gput = m.func::<(Ptr, i64), ()>("gput").unwrap();
    // SAFETY: `o` is a live object of the model heap with 2 attributes; the
    // guarded accessors use its dict slot and attribute 1, and every word
    // stored is one the object had (or 0).
    unsafe {
        gput.call((o, 5));
        assert_eq!(gget.call(o), 5);
        let w = gword.call(o);
        gset.call((o, w)); // 0b111: fine
        m.safe_func::<Ptr, ()>("dictify").unwrap().call(o);
        gput.call((o, 6)); // 0b000 dict pointer: fine, slow path
        assert_eq!(gget.call(o), 6);
        let d = gword.call(o);
        gset.call((o, 0)); // 0: fine
        gset.call((o, d));
        assert_eq!(gget.call(o), 6);
    }
    assert!(rt.take_reports().is_empty());
    assert!(rt.take_host_fault().is_none());
}

#[test]
fn dict_guards_report_and_recover() {
    let rt = recover_rt();
    let m = compile(&format!("{PRELUDE}{GUARDED}"), &rt);
    let base = m.site_base();
    let new = m.safe_func::<i64, Ptr>("new").unwrap();
    let gword = m.func::<Ptr, i64>("gword").unwrap();
    let gset = m.func::<(Ptr, i64), ()>("gset").unwrap();
    let gget = m.func::<Ptr, i64>("gget").unwrap();
    let gput = m.func::<(Ptr, i64), ()>("gput").unwrap();
    let gput_loop = m.func::<(Ptr, i64), ()>("gput_loop").unwrap();

    // dict_slot.store of a bad word: reported before the write, slot unchanged.
    let o = new.call(2);
    let good = word_of(&rt, o.0);
    for bad in [good & !1, 0x1001, 0x1002, 0x1003, 0x1004, 0x1005, 0x1006] {
        // SAFETY: `o` is live; the dict guard skips each bad store.
        unsafe { gset.call((o, bad as i64)) };
        assert_eq!(word_of(&rt, o.0), good, "store of {bad:#x} skipped");
    }
    let r = rt.take_reports();
    assert_eq!(kinds(&r), vec![(ReportKind::DictSlotTag, 7)]);
    assert_eq!(
        r[0].observed,
        Observed::Dict {
            object: o.0,
            value: good & !1
        }
    );
    assert_eq!(r[0].info.function, "gset");
    assert_eq!(r[0].info.op, "dict_slot.store");
    assert!(r[0].site >= base);

    // The rogue writer clears the LSB.
    m.safe_func::<Ptr, ()>("clear").unwrap().call(o);
    let bad = word_of(&rt, o.0);
    assert_eq!(bad, good & !1);

    // SAFETY: `o` is live; the guards stop every use of its bad word.
    unsafe {
        // dict_slot.load: reported, returns the word as read.
        assert_eq!(gword.call(o) as u64, bad);
        // load_attr: reported, returns 0, no slow path (no host fault).
        assert_eq!(gget.call(o), 0);
        // store_attr: reported, skipped (no slow path, slot and values unchanged).
        gput.call((o, 77));
        gput_loop.call((o, 10));
    }
    assert_eq!(word_of(&rt, o.0), bad);
    assert!(
        rt.take_host_fault().is_none(),
        "no corrupted word reached the host"
    );
    let r = rt.take_reports();
    let got: Vec<(ReportKind, &str, u64, Observed)> = r
        .iter()
        .map(|r| (r.kind, r.info.op.as_str(), r.count, r.observed))
        .collect();
    let obs = Observed::Dict {
        object: o.0,
        value: bad,
    };
    assert_eq!(
        got,
        vec![
            (ReportKind::DictSlotTag, "dict_slot.load", 1, obs),
            (ReportKind::DictSlotTag, "load_attr", 1, obs),
            (ReportKind::DictSlotTag, "store_attr", 1, obs),
            (ReportKind::DictSlotTag, "store_attr", 10, obs),
        ]
    );
    // Sites are distinct, and map back to their functions.
    let fns: Vec<&str> = r.iter().map(|r| r.info.function.as_str()).collect();
    assert_eq!(fns, ["gword", "gget", "gput", "gput_loop"]);
    // The values array still holds 0 at attribute 1 (nothing was written).
    let values = layout::values_ptr(good);
    // SAFETY: attribute 1 of `o`'s values array, held by the model heap.
    assert_eq!(unsafe { ((values + 8) as *const i64).read() }, 0);
}

#[test]
fn abort_mode_without_exit_still_keeps_writes_inside() {
    // abort mode, but the runtime does not end the process: the report call
    // returns and the recover path is taken.
    let rt = quiet_abort_rt();
    let m = compile(&format!("{PRELUDE}{GUARDED}"), &rt);
    let o = m.safe_func::<i64, Ptr>("new").unwrap().call(2);
    m.safe_func::<Ptr, ()>("clear").unwrap().call(o);
    let bad = word_of(&rt, o.0);
    // SAFETY: `o` is live; the guards stop every use of its bad word.
    unsafe {
        m.func::<(Ptr, i64), ()>("gput").unwrap().call((o, 1));
        assert_eq!(m.func::<Ptr, i64>("gget").unwrap().call(o), 0);
    }
    assert_eq!(word_of(&rt, o.0), bad);
    assert!(rt.take_host_fault().is_none());
    assert_eq!(rt.take_reports().len(), 2);
}

const CLOBBER: &str = r#"
fn @new(%n: i64) -> ptr {
entry:
    %o = call @obj_new(%n)
    return %o
}
fn @raw64(%p: ptr, %v: i64) {
entry:
    guard.store %v, %p, 0
    return
}
fn @raw8_off(%p: ptr, %v: i8) {
entry:
    guard.store %v, %p, 7
    return
}
fn @rawf32(%p: ptr, %v: f32) {
entry:
    guard.store %v, %p, -4
    return
}
fn @unguarded(%p: ptr, %v: i64) {
entry:
    store %v, %p
    return
}
fn @watch(%o: ptr) {
entry:
    guard.watch %o
    return
}
"#;

#[test]
fn clobber_guard_skips_stores_over_watched_slots() {
    let rt = recover_rt();
    let m = compile(&format!("{PRELUDE}{CLOBBER}"), &rt);
    let o = m.safe_func::<i64, Ptr>("new").unwrap().call(2);
    let slot = rt.layout().slot_addr(o.0);
    let good = word_of(&rt, o.0);
    let raw64 = m.func::<(Ptr, i64), ()>("raw64").unwrap();
    let raw8 = m.func::<(Ptr, i8), ()>("raw8_off").unwrap();
    let rawf32 = m.func::<(Ptr, f32), ()>("rawf32").unwrap();
    // obj_new's slots are watched.
    // SAFETY: each store would write inside `o`'s dict slot; the clobber
    // guard skips all three.
    unsafe {
        raw64.call((Ptr(slot), 0x96));
        raw8.call((Ptr(slot), -2)); // writes slot + 7
        rawf32.call((Ptr(slot + 8), -1.0)); // writes slot + 4 .. slot + 8
    }
    assert_eq!(word_of(&rt, o.0), good, "all three stores were skipped");
    let r = rt.take_reports();
    let got: Vec<(ReportKind, u64, Observed)> =
        r.iter().map(|r| (r.kind, r.count, r.observed)).collect();
    assert_eq!(
        got,
        vec![
            (
                ReportKind::SlotClobber,
                1,
                Observed::Clobber {
                    address: slot,
                    width: 8,
                    value: 0x96
                }
            ),
            (
                ReportKind::SlotClobber,
                1,
                Observed::Clobber {
                    address: slot + 7,
                    width: 1,
                    value: 0xfe
                }
            ),
            (
                ReportKind::SlotClobber,
                1,
                Observed::Clobber {
                    address: slot + 4,
                    width: 4,
                    value: (-1.0f32).to_bits() as u64
                }
            ),
        ]
    );
    // A store next to the slot (not overlapping) goes through.
    let mut cell = [0u64; 2];
    let p = cell.as_mut_ptr() as u64;
    // SAFETY: both stores write inside `cell[0]`, which the test owns.
    unsafe {
        raw64.call((Ptr(p), 5));
        raw8.call((Ptr(p), 9));
    }
    assert_eq!(cell[0], 5 | (9 << 56));
    assert!(rt.take_reports().is_empty());
    // guard.watch registers any address as an object: then its slot is guarded.
    let fake_obj = (p as i64 - layout::DictLayout::default().dict_slot_offset() as i64) as u64 + 8;
    m.safe_func::<Ptr, ()>("watch").unwrap().call(Ptr(fake_obj));
    // SAFETY: the store would write `cell[1]` (the slot `watch` just
    // registered) and is skipped.
    unsafe { raw64.call((Ptr(p + 8), 42)) };
    assert_eq!(cell[1], 0, "store over the newly watched slot skipped");
    let r = rt.take_reports();
    assert_eq!(kinds(&r), vec![(ReportKind::SlotClobber, 1)]);
    // Unguarded stores are never checked.
    // SAFETY: writes `o`'s dict slot, which is live (the bad word is what
    // the test wants; only the model heap reads it, and checks it).
    unsafe {
        m.func::<(Ptr, i64), ()>("unguarded")
            .unwrap()
            .call((Ptr(slot), good as i64 & !1))
    };
    assert_eq!(word_of(&rt, o.0), good & !1);
    assert!(rt.take_reports().is_empty());
}

#[test]
fn guarded_dict_slot_store_records_the_last_write() {
    let rt = recover_rt();
    let m = compile(&format!("{PRELUDE}{GUARDED}"), &rt);
    let o = m.safe_func::<i64, Ptr>("new").unwrap().call(2);
    let good = word_of(&rt, o.0);
    // Re-store the same word through instrumented code: the runtime now
    // knows dict_slot.store in @gset wrote it.
    // SAFETY: `o` is live; `gset` stores its own word back and `gword`
    // reads its dict slot.
    unsafe {
        m.func::<(Ptr, i64), ()>("gset")
            .unwrap()
            .call((o, good as i64));
        m.safe_func::<Ptr, ()>("clear").unwrap().call(o);
        let _ = m.func::<Ptr, i64>("gword").unwrap().call(o);
    }
    let r = rt.take_reports();
    assert_eq!(r.len(), 1);
    let lw = r[0].last_write.clone().expect("last write known");
    assert_eq!(lw.value, good);
    assert!(
        lw.by.contains("dict_slot.store") && lw.by.contains("@gset"),
        "{}",
        lw.by
    );
    assert!(lw.site.is_some_and(|s| s >= m.site_base()));
}

thread_local! {
    /// The runtime `host_dealloc` tells (JIT code runs on the test's thread).
    static HOST_RT: std::cell::RefCell<Option<std::sync::Arc<Runtime>>> =
        const { std::cell::RefCell::new(None) };
}

/// A host's `tp_dealloc` hook: the object at `obj` is gone.
extern "C" fn host_dealloc(obj: u64) {
    HOST_RT.with(|h| {
        let rt = h.borrow();
        rt.as_ref()
            .expect("HOST_RT set")
            .object_freed(obj)
            .expect("watched");
    });
}

/// The JIT's per-frame watch cache skips a repeated `guard.watch` of the
/// same object at the same site; it must still watch every new object a
/// site sees, and watch again after a free unwatched (the runtime's unwatch
/// epoch moved), exactly as the interpreter, which watches every time.
#[test]
fn watch_cache_watches_each_new_object_and_again_after_a_free() {
    let rt = recover_rt();
    HOST_RT.with(|h| *h.borrow_mut() = Some(rt.clone()));
    let text = format!(
        "{PRELUDE}
extern fn @host_dealloc(ptr)
fn @watch_each(%base: ptr, %n: i64) {{
entry:
    %z = iconst.i64 0
    jump body(%z)
body(%i: i64):
    %done = icmp.sge %i, %n
    brif %done, out, next(%i)
next(%j: i64):
    %sixteen = iconst.i64 16
    %off = imul %j, %sixteen
    %o = iadd %base, %off
    guard.watch %o
    guard.watch %o
    %one = iconst.i64 1
    %j2 = iadd %j, %one
    jump body(%j2)
out:
    return
}}
fn @refree(%o: ptr) {{
entry:
    %z = iconst.i64 0
    jump body(%z)
body(%i: i64):
    guard.watch %o
    %one = iconst.i64 1
    %done = icmp.sge %i, %one
    brif %done, out, free(%i)
free(%j: i64):
    call @host_dealloc(%o)
    %j2 = iadd %j, %one
    jump body(%j2)
out:
    return
}}
"
    );
    // SAFETY: `host_dealloc(u64)` matches `extern fn @host_dealloc(ptr)` and
    // only tells the runtime (a safe call) that an object went away.
    let opts =
        unsafe { CompileOptions::default().symbol("host_dealloc", host_dealloc as *const u8) };
    let m = Jit::compile(&parse(&text), rt.clone(), &opts).unwrap();
    let off = DictLayout::default().dict_slot_offset() as i64;
    // Eight fake objects 16 bytes apart: every slot gets watched.
    let cells = vec![0u64; 16];
    let base = (cells.as_ptr() as i64 - off) as u64;
    // `guard.watch` only records slot addresses in the runtime: safe.
    m.safe_func::<(Ptr, i64), ()>("watch_each")
        .unwrap()
        .call((Ptr(base), 8));
    for i in 0..8u64 {
        let slot = cells.as_ptr() as u64 + 16 * i;
        assert!(rt.clobber_overlaps(slot, 8), "slot {i} watched");
        assert!(!rt.clobber_overlaps(slot + 8, 8), "gap after slot {i}");
    }
    // Watch, free (the host's tp_dealloc: unwatches, bumps the epoch),
    // watch again at the same site. (A freed object of the model heap is
    // never watched again: a host object whose address the host reuses is.)
    let o = Ptr(base);
    let slot = rt.layout().slot_addr(o.0);
    let before = rt.unwatch_epoch();
    // SAFETY: `guard.watch` records the slot address; `host_dealloc` only
    // tells the runtime the object went.
    unsafe { m.func::<Ptr, ()>("refree").unwrap().call(o) };
    assert_eq!(rt.unwatch_epoch(), before + 1, "a free bumps the epoch");
    assert!(
        rt.clobber_overlaps(slot, 8),
        "the second watch after the free registered the slot again"
    );
    assert!(rt.take_reports().is_empty());
    drop(cells);
}

shadow_tests!();
