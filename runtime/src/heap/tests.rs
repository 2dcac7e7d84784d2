//! Tests of the model heap (`heap.rs`).
use super::*;

fn word(h: &Heap, obj: u64) -> u64 {
    h.read_word(h.slot(obj))
}

#[test]
fn objects_are_laid_out_as_the_layout_says() {
    for layout in [
        DictLayout::Cpython312,
        DictLayout::Phoenix,
        DictLayout::Custom(-64),
        DictLayout::Custom(64),
    ] {
        let mut h = Heap::new(layout);
        let o = h.obj_new(3).unwrap();
        assert_eq!(o % 8, 0);
        let w = word(&h, o);
        assert_eq!(w & 7, 7, "values-tagged word {w:#x}");
        assert!(h.is_valid(h.slot(o), 8));
        assert!(h.is_valid(layout::values_ptr(w), 24));
        assert!(!h.is_valid(layout::values_ptr(w), 32));
        h.store_attr_slow(o, 2, 77).unwrap();
        assert_eq!(h.load_attr_slow(o, 2).unwrap(), 77);
        h.obj_dictify(o).unwrap();
        let d = word(&h, o);
        assert_eq!(d & 7, 0);
        assert_eq!(h.load_attr_slow(o, 2).unwrap(), 77);
        h.store_attr_slow(o, 9, 5).unwrap();
        assert_eq!(h.load_attr_slow(o, 9).unwrap(), 5);
        assert!(h.overlaps_watched(h.slot(o), 1));
        assert!(h.overlaps_watched(h.slot(o) + 7, 1));
        assert!(!h.overlaps_watched(h.slot(o) + 8, 8));
        assert!(!h.overlaps_watched(h.slot(o).wrapping_sub(8), 8));
        h.obj_free(o).unwrap();
        assert!(h.obj_free(o).is_err(), "double free is a host fault");
        assert_eq!(h.live_objects(), 0);
        assert!(h.is_freed(o), "in quarantine");
    }
}

#[test]
fn ids_sites_quarantine_and_eviction() {
    let mut h = Heap::new(DictLayout::Cpython312);
    let a = h.obj_new_at(2, Some(7)).unwrap();
    let b = h.obj_new(1).unwrap();
    let rec = |h: &Heap, o| h.object_record(o).unwrap();
    assert_eq!((rec(&h, a).id, rec(&h, a).alloc_site), (1, Some(7)));
    assert_eq!((rec(&h, b).id, rec(&h, b).alloc_site), (2, None));
    // The capacity word precedes the values array (spec §4).
    let values = layout::values_ptr(word(&h, a));
    assert_eq!(h.read_word(values - 8), 2);
    let slot = h.slot(a);
    assert_eq!(h.obj_free_at(a, Some(9)), FreeOutcome::Freed);
    assert_eq!(h.obj_free_at(a, Some(10)), FreeOutcome::DoubleFree);
    assert_eq!(h.obj_free_at(a + 8, None), FreeOutcome::Invalid);
    let r = rec(&h, a);
    assert_eq!((r.id, r.freed, r.free_site), (1, true, Some(9)));
    assert!(!h.overlaps_watched(slot, 8), "a freed object is unwatched");
    h.watch(a);
    assert!(!h.overlaps_watched(slot, 8), "and never watched again");
    // Its memory (header, slot, values) is held and marked freed.
    assert_eq!(h.freed_memory_owner(values + 8, 8), Some(a));
    assert_eq!(h.freed_memory_owner(slot, 1), Some(a));
    assert_eq!(h.freed_memory_owner(values - 1, 2), Some(a));
    assert_eq!(h.freed_memory_owner(h.slot(b), 8), None);
    assert!(h.is_valid(values, 8), "quarantined memory stays mapped");
    assert!(h.quarantine_bytes() > 0);
    // Shrinking the quarantine releases it, oldest first.
    h.obj_free(b).unwrap();
    h.set_quarantine_mb(0);
    assert_eq!(h.quarantine_bytes(), 0);
    assert!(h.object_record(a).is_none() && h.object_record(b).is_none());
    assert!(!h.is_valid(values, 8));
    assert_eq!(h.obj_free_at(a, None), FreeOutcome::Invalid);
}

#[test]
fn host_objects_share_ids_and_are_unwatched_when_freed() {
    let mut h = Heap::new(DictLayout::Phoenix);
    let o = h.obj_new(1).unwrap();
    let host = 0x10_0000u64;
    assert_eq!(h.register_host_object(host), Ok(2));
    assert_eq!(
        h.register_host_object(host),
        Err(HostObjectError::AlreadyLive(host, 2))
    );
    assert!(h.register_host_object(3).is_err());
    h.watch(host);
    assert!(h.overlaps_watched(h.slot(host), 8));
    h.note_write(host, "test", None, 0x97);
    h.host_object_freed(host).unwrap();
    assert!(!h.overlaps_watched(h.slot(host), 8));
    assert!(h.is_freed(host));
    assert_eq!(
        h.host_object_freed(host),
        Err(HostObjectError::NotLive(host))
    );
    // The address is recycled for a new object: new id, live, and the
    // slot's last write still names the old object.
    assert_eq!(h.register_host_object(host), Ok(3));
    assert!(!h.is_freed(host));
    assert_eq!(h.last_write(h.slot(host)).unwrap().object_id, Some(2));
    // Never registered but watched: only unwatched.
    h.watch(0x20_0000);
    assert_eq!(h.host_object_freed(0x20_0000), Ok(()));
    assert!(h.obj_free(o).is_ok());
}

/// The shadow bytes the JIT's inline checks read follow the heap:
/// a clear bit is exact (see `crate::shadow`).
#[test]
fn shadow_follows_watch_list_and_quarantine() {
    use shadow::{read, FREED_MEM, FREED_OBJ, WATCH_MASK};
    assert!(
        shadow::base().is_some(),
        "no shadow mapping (see crate::shadow)"
    );
    let mut h = Heap::new(DictLayout::Cpython312);
    let id = h.watch_id();
    assert!((1..=62).contains(&id), "watch id {id}");
    let o = h.obj_new(2).unwrap();
    let keep = h.obj_new(1).unwrap();
    let (slot, values) = (h.slot(o), layout::values_ptr(word(&h, o)));
    assert_eq!(read(slot) & WATCH_MASK, id, "watched at creation");
    assert_eq!(read(o) & FREED_OBJ, 0);
    assert_eq!(read(values) & FREED_MEM, 0);
    h.obj_free(o).unwrap();
    assert_eq!(read(slot) & WATCH_MASK, 0, "unwatched by the free");
    assert_eq!(read(o) & FREED_OBJ, FREED_OBJ);
    for a in [slot, o, values - 8, values + 8] {
        assert_eq!(read(a) & FREED_MEM, FREED_MEM, "{a:#x} is quarantined");
    }
    // Out of quarantine: the marks go with the memory.
    h.set_quarantine_mb(0);
    assert_eq!(read(o) & FREED_OBJ, 0);
    assert_eq!(read(values) & FREED_MEM, 0);
    h.set_quarantine_mb(DEFAULT_QUARANTINE_MB);
    // A host object freed: its record is counted, its memory is the host's.
    let host = Box::new([0u64; 4]);
    let ho = host.as_ptr() as u64 + 24;
    h.register_host_object(ho).unwrap();
    h.watch(ho);
    assert_eq!(read(h.slot(ho)) & WATCH_MASK, id);
    h.host_object_freed(ho).unwrap();
    assert_eq!(read(ho) & (FREED_OBJ | FREED_MEM), FREED_OBJ);
    assert_eq!(read(h.slot(ho)) & WATCH_MASK, 0);
    h.register_host_object(ho).unwrap();
    assert_eq!(read(ho) & FREED_OBJ, 0, "registered again: live");
    h.host_object_freed(ho).unwrap();
    let keep_slot = h.slot(keep);
    drop(h);
    assert_eq!(read(ho) & FREED_OBJ, 0, "a dropped heap leaves no mark");
    assert_eq!(read(keep_slot) & WATCH_MASK, 0);
}

#[test]
fn corrupted_word_is_a_host_fault_not_a_wild_access() {
    let mut h = Heap::new(DictLayout::Phoenix);
    let o = h.obj_new(2).unwrap();
    h.fault_clear_lsb(o).unwrap();
    assert_eq!(word(&h, o) & 7, 0b110);
    let e = h.store_attr_slow(o, 0, 1).unwrap_err();
    assert!(e.msg.contains("corrupted"), "{e}");
    assert!(h.load_attr_slow(o, 0).is_err());
    assert!(h.obj_dictify(o).is_err());
}

/// Issue 28: the bounds check's record survives a forged capacity word,
/// every block has redzones, and a values array obj_dictify released is
/// quarantined under the dictify's site.
#[test]
fn recorded_capacity_redzones_and_released_values() {
    assert!(shadow::base().is_some(), "no shadow mapping");
    let mut h = Heap::new(DictLayout::Cpython312);
    let o = h.obj_new_at(2, Some(3)).unwrap();
    let values = layout::values_ptr(word(&h, o));
    let cap = layout::capacity_word_addr(values);
    // SAFETY: the capacity word of a live object's values block.
    unsafe { (cap as *mut u64).write(1000) };
    assert_eq!(h.recorded_capacity(o, values), Some(2));
    assert_eq!(shadow::read_capacity(values), 2);
    assert_eq!(h.recorded_capacity(o, values + 8), None, "no such array");
    assert_eq!(
        h.watched_owner(cap, 8),
        Some(o),
        "the capacity word is watched"
    );
    // Redzones: 16 bytes before and after each block, exact to the byte.
    assert_eq!(h.redzone_owner(values + 16, 1), Some(o));
    assert_eq!(h.redzone_owner(values + 8, 8), None);
    assert_eq!(h.redzone_owner(cap - 1, 1), Some(o));
    assert_eq!(h.redzone_owner(cap, 8), None);
    assert_eq!(h.redzone_owner(cap - 16, 16), Some(o));
    assert_eq!(h.redzone_owner(cap - 17, 1), None);
    assert_eq!(shadow::read(values + 16) & shadow::REDZONE, shadow::REDZONE);
    assert_eq!(shadow::read(values) & shadow::REDZONE, 0);
    // obj_dictify: the array goes to quarantine, its record and byte go.
    h.obj_dictify_at(o, Some(9)).unwrap();
    assert_eq!(shadow::read_capacity(values), 0);
    assert_eq!(h.recorded_capacity(o, values), None);
    assert_eq!(h.watched_owner(cap, 8), None);
    let r = h.freed_memory_record(values, 8).unwrap();
    assert_eq!(
        (r.id, r.alloc_site, r.free_site, r.freed),
        (1, Some(3), Some(9), true)
    );
    assert!(h.is_valid(values, 8), "held, not reused");
    assert_eq!(h.quarantine_bytes(), 24);
    assert!(!h.is_freed(o), "the object lives on");
    h.set_quarantine_mb(0);
    assert!(!h.is_valid(values, 8));
    assert_eq!(h.quarantine_bytes(), 0);
}

/// Issue 33: `obj_new` places each object's own values array at
/// `Heap::own_values_offset` from it, in one allocation whose blocks keep
/// their redzones; the allocation goes back only with its last block (to
/// the heap's spares, which the next object of its size reuses).
#[test]
fn own_values_sit_at_a_fixed_offset_in_one_allocation() {
    for layout in LAYOUTS {
        let mut h = Heap::new(layout);
        let k = Heap::own_values_offset(layout) as u64;
        let (a, b) = (h.obj_new(3).unwrap(), h.obj_new(300).unwrap());
        for o in [a, b] {
            let values = o_values(&h, o);
            assert_eq!(values - o, k, "{layout:?}");
            let cap = layout::capacity_word_addr(values);
            assert_eq!(h.redzone_owner(cap - 16, 16), Some(o));
            assert_eq!(h.redzone_owner(cap, 8), None);
        }
        h.obj_dictify(a).unwrap();
        h.obj_free(b).unwrap();
        h.obj_free(a).unwrap();
        h.set_quarantine_mb(0);
        assert!(h.allocs.is_empty(), "{layout:?}: {:?}", h.allocs.len());
        assert_eq!(h.obj_new(3).unwrap(), a, "{layout:?}: the spare is reused");
    }
}

/// Issue 33, with the shadow mapping: each own array is marked in the
/// capacity table with the heap's watch id while the object lives and
/// the array is its own; the dictify that releases the array and the
/// object's free clear the mark, and the allocation's redzone marks go
/// with the allocation.
#[test]
fn own_values_are_marked_while_theirs() {
    assert!(shadow::base().is_some(), "no shadow mapping");
    for layout in LAYOUTS {
        let mut h = Heap::new(layout);
        let mark = shadow::own_values_mark(h.watch_id()).expect("a watch id of its own");
        let (a, b) = (h.obj_new(3).unwrap(), h.obj_new(300).unwrap());
        for o in [a, b] {
            let values = o_values(&h, o);
            assert_eq!(shadow::read_own_values_mark(values), mark);
            // Neither the mark nor a capacity byte reads as the other.
            assert!(shadow::read_capacity(values) <= shadow::CAPACITY_BYTE_MAX as u8);
            let cap = layout::capacity_word_addr(values);
            assert_eq!(shadow::read(cap - 8) & shadow::REDZONE, shadow::REDZONE);
        }
        let (va, vb) = (o_values(&h, a), o_values(&h, b));
        assert_eq!(shadow::read_capacity(vb), shadow::CAPACITY_BYTE_MAX as u8);
        h.obj_dictify(a).unwrap();
        assert_eq!(shadow::read_own_values_mark(va), 0, "released");
        h.obj_free(b).unwrap();
        assert_eq!(shadow::read_own_values_mark(vb), 0, "freed");
        h.obj_free(a).unwrap();
        h.set_quarantine_mb(0);
        assert_eq!(shadow::read(va - 16), 0, "unmarked with the allocation");
        assert_eq!(h.obj_new(3).unwrap(), a);
        assert_eq!(shadow::read_own_values_mark(va), mark);
    }
}

const LAYOUTS: [DictLayout; 4] = [
    DictLayout::Cpython312,
    DictLayout::Phoenix,
    DictLayout::Custom(-64),
    DictLayout::Custom(64),
];

fn o_values(h: &Heap, o: u64) -> u64 {
    layout::values_ptr(word(h, o))
}
