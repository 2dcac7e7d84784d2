//! `Runtime::attr_fixed`, the entry test of a clean loop's fixed
//! attributes, as a hostile caller sees it: anything but a live object of
//! the runtime whose word is its own values array with room for the index
//! is refused without reading the memory a wild pointer or word names, and
//! the values epoch moves whenever an object or its values array goes.

use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};

fn runtime() -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    })
}

/// The values epoch, read where generated code reads it.
fn values_epoch(rt: &Runtime) -> u64 {
    let p = rt as *const Runtime as *const u8;
    // SAFETY: VALUES_EPOCH_OFFSET is the offset of an AtomicU64 inside the
    // live runtime (pinned by runtime::abi's tests).
    unsafe {
        (p.add(guardlift_runtime::VALUES_EPOCH_OFFSET as usize) as *const u64).read_volatile()
    }
}

#[test]
fn only_live_objects_with_their_own_values_and_room_pass() {
    let rt = runtime();
    let o = rt.obj_new(3);
    let other = rt.obj_new(1);
    assert!(rt.attr_fixed(o, 0) && rt.attr_fixed(o, 2));
    assert!(!rt.attr_fixed(o, 3), "index 3 of 3 attributes");
    assert!(!rt.attr_fixed(o, u32::MAX));
    // Not objects: null, a wild address, an address inside an object.
    for wild in [0, 0x1000, u64::MAX - 7, o + 8] {
        assert!(!rt.attr_fixed(wild, 0), "{wild:#x}");
    }
    // A word pointed at another object's values array.
    let slot = rt.layout().slot_addr(o);
    // SAFETY: the dict slots of the live objects `o` and `other`.
    let own = unsafe { (slot as *const u64).read() };
    // SAFETY: as above.
    let theirs = unsafe { (rt.layout().slot_addr(other) as *const u64).read() };
    // SAFETY: the dict slot of the live object `o`.
    unsafe { (slot as *mut u64).write(theirs) };
    assert!(!rt.attr_fixed(o, 0), "a forged word");
    // SAFETY: as above.
    unsafe { (slot as *mut u64).write(own) };
    assert!(rt.attr_fixed(o, 2));
    // A capacity word lowered in memory changes nothing: the record decides
    // (spec §6: never a capacity word code could have rewritten).
    let values = guardlift_runtime::layout::values_ptr(own);
    let cap = guardlift_runtime::layout::capacity_word_addr(values);
    // SAFETY: the capacity word of `o`'s live values block.
    unsafe { (cap as *mut u64).write(1) };
    assert!(rt.attr_fixed(o, 0) && rt.attr_fixed(o, 2) && !rt.attr_fixed(o, 3));
    // SAFETY: as above.
    unsafe { (cap as *mut u64).write(3) };
    // A dict instead of the values array, then a freed object: both refused,
    // and each moves the values epoch.
    let e0 = values_epoch(&rt);
    rt.obj_dictify(o);
    assert!(!rt.attr_fixed(o, 0));
    let e1 = values_epoch(&rt);
    assert!(e1 > e0);
    rt.obj_free(other);
    assert!(!rt.attr_fixed(other, 0));
    assert!(values_epoch(&rt) > e1);
}
