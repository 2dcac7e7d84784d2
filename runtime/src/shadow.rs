//! Shadow state of the checks' hot paths: one byte per 8-byte granule of
//! the address space, ASan-style, so that JIT code can tell "nothing to
//! do here" with one load and a test — no runtime call, no lock.
//!
//! The shadow is one process-wide `MAP_NORESERVE` mapping (only the pages
//! written are backed) between two inaccessible guards ([`GUARD_BYTES`]), shared by every [`crate::Runtime`]: the byte of
//! address `a` is at `base + ((a >> 3) & INDEX_MASK)` (addresses above
//! 2^47 alias lower granules; that only costs a slow-path call). A set bit
//! never decides anything by itself: it sends the check to the runtime's
//! slow path, which classifies exactly as before (and as the interpreter
//! does). A clear bit must be exact: the heaps keep these invariants.
//!
//! - [`FREED_MEM`]: the granule belongs to a heap block in quarantine (set
//!   when an object is freed, cleared when its blocks are released), or to
//!   the redzones around a heap block ([`REDZONE`], set while the block is
//!   allocated). Blocks are held while marked, so exactly one heap owns
//!   each mark.
//! - [`FREED_OBJ`]: a freed object (in some runtime's quarantine) starts in
//!   this granule. Counted per granule (several runtimes may record the
//!   same host object), set while the count is non-zero.
//! - the watch field ([`WATCH_MASK`]): 0 = no watched dict slot overlaps
//!   the granule; `k` in `1..=62` = exactly one watched slot, 8-aligned at
//!   this granule, watched by the heap of watch id `k` only;
//!   [`WATCH_SHARED`] = anything else (several watchers, unaligned slots):
//!   sticky (a watch list may keep any address), always a slow-path call.
//!   A heap clears its own id's marks when it unwatches and when it goes.
//!
//! The same mapping holds, at [`CAPACITY_TABLE_OFFSET`], the capacity
//! table of the bounds check: the recorded capacity of each live values
//! array, keyed by its pointer (a clear byte, 0, is "ask the runtime"),
//! and the **own-values marks** ([`own_values_mark`]): a model-heap object
//! whose values array the heap placed at a fixed distance from it
//! (`Heap::own_values_offset`) has `0x80 | id` at the granule of that
//! array's capacity word while the object lives and the array is its own
//! (not released). A capacity byte never reaches `0x80`
//! ([`CAPACITY_BYTE_MAX`]), so read as a signed byte a mark is negative:
//! the bounds check's signed compare never takes one for a capacity.
//!
//! When the mapping cannot be had (a 32 TiB reservation: strict
//! overcommit, a small address space, valgrind) [`base`] is `None` and
//! code generators keep the call form of every check.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

/// log2 of the bytes one shadow byte covers.
pub const GRANULE_SHIFT: u32 = 3;
/// Address bits the shadow covers (x86_64 and aarch64 user space).
pub const ADDR_BITS: u32 = 47;
/// Mask of a granule index: `index = (addr >> GRANULE_SHIFT) & INDEX_MASK`.
pub const INDEX_MASK: u64 = (1 << (ADDR_BITS - GRANULE_SHIFT)) - 1;
/// Bits of an address that the shadow does not cover, and the offset bits
/// of a granule: an address with none of these set is an 8-aligned
/// granule start the shadow maps one to one.
pub const UNMAPPED_OR_UNALIGNED: u64 = !((1u64 << ADDR_BITS) - 1) | 7;
/// The granule belongs to a freed (quarantined) heap block.
pub const FREED_MEM: u8 = 0x80;
/// A heap redzone (the bytes around every block a heap allocates):
/// the same bit as [`FREED_MEM`], since both only send a raw access to the
/// slow path, which tells them apart (`use_after_free` under `lifetime`,
/// `heap_overflow` under `bounds`).
pub const REDZONE: u8 = FREED_MEM;
/// A freed object starts in the granule.
pub const FREED_OBJ: u8 = 0x40;
/// The watch field of a shadow byte.
pub const WATCH_MASK: u8 = 0x3f;
/// Watch field: watched, but not by exactly one heap at this aligned
/// granule (the runtime must look).
pub const WATCH_SHARED: u8 = WATCH_MASK;
/// Bytes of one table: every index, plus the byte after the last one (a
/// 16-bit shadow load at the last index reads it).
const TABLE_BYTES: usize = (INDEX_MASK as usize + 1) + 4096;
/// Offset of the **capacity table** from [`base`]: one byte per granule,
/// keyed by a values array's pointer, that the runtime alone writes. It
/// holds `min(capacity, CAPACITY_BYTE_MAX)` of the live values array starting in that
/// granule as the runtime recorded it (`obj_new`, a host object's
/// registration); 0 = no record (ask the runtime). An attribute index
/// below the byte is in bounds; anything else goes to the runtime's slow
/// path, which decides from its record (docs/INSTRUMENTATION.md, "What
/// each check trusts").
pub const CAPACITY_TABLE_OFFSET: u64 = TABLE_BYTES as u64;
/// The largest capacity byte: a capacity table byte is `min(capacity,
/// 127)`, non-negative as an `i8`; the bytes from `0x80` on are
/// own-values marks ([`own_values_mark`]).
pub const CAPACITY_BYTE_MAX: u64 = 127;
/// The bit of an own-values mark: `OWN_VALUES | id` (heap watch id `id`
/// in `1..=62`).
pub const OWN_VALUES: u8 = 0x80;

/// The own-values mark of the heap of watch id `id`: the byte of the
/// capacity table at the granule of the capacity word of an object's own
/// values array (see the module docs); `None` for [`WATCH_SHARED`].
pub const fn own_values_mark(id: u8) -> Option<u8> {
    if id >= 1 && id < WATCH_SHARED {
        Some(OWN_VALUES | id)
    } else {
        None
    }
}
/// Bytes reserved: the shadow, then the capacity table.
const MAP_BYTES: usize = 2 * TABLE_BYTES;
/// Inaccessible bytes reserved on each side of the tables (`PROT_NONE`):
/// more than any `i32` offset from an address outside the reservation, so
/// that a raw access at a constant offset from a heap pointer — the wild
/// access a JIT's bad offset makes — faults instead of reading or writing
/// the runtime's records (the OS may place the heap right next to the
/// reservation). Address space only, no memory.
pub const GUARD_BYTES: usize = 4 << 30;

struct Shadow {
    base: u64,
    /// Per granule, how many quarantine records of freed objects start there.
    freed_objs: Mutex<HashMap<u64, u32>>,
    /// Watch ids in use (bit k = id k).
    ids: AtomicU64,
}

/// Set by [`disable`]: the process has no shadow.
static DISABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// No shadow for this process, when called before the first heap is made
/// (later it changes nothing): an object target's runtime, whose code
/// calls the runtime for every check and never reads the shadow, and which
/// under qemu-user could not afford the reservation (docs/TARGETS.md).
pub fn disable() {
    DISABLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn shadow() -> Option<&'static Shadow> {
    static SHADOW: OnceLock<Option<Shadow>> = OnceLock::new();
    SHADOW
        .get_or_init(|| {
            if DISABLED.load(std::sync::atomic::Ordering::SeqCst)
                || std::env::var_os("GUARDLIFT_NO_SHADOW").is_some()
            {
                return None;
            }
            reserve().map(|base| Shadow {
                base,
                freed_objs: Mutex::new(HashMap::new()),
                ids: AtomicU64::new(1),
            })
        })
        .as_ref()
}

/// Reserves the guards and the tables between them (`MAP_NORESERVE`: only
/// the pages written are backed); the tables' start, or `None` when the
/// reservation fails.
fn reserve() -> Option<u64> {
    let total = MAP_BYTES + 2 * GUARD_BYTES;
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing; it overlaps nothing, starts inaccessible and, once
    // complete, is never unmapped.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let tables = p as usize + GUARD_BYTES;
    // SAFETY: the range lies inside the mapping just made, which nothing
    // else knows of yet.
    let ok = unsafe {
        libc::mprotect(
            tables as *mut libc::c_void,
            MAP_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    } == 0;
    if !ok {
        // SAFETY: unmaps exactly the mapping made above, unused.
        unsafe { libc::munmap(p, total) };
        return None;
    }
    Some(tables as u64)
}

/// The shadow's base address (the byte of granule index 0), or `None`
/// when there is no shadow (see the module docs): generated code adds
/// `(addr >> GRANULE_SHIFT) & INDEX_MASK`.
pub fn base() -> Option<u64> {
    shadow().map(|s| s.base)
}

/// The granule index of `addr`.
pub const fn index(addr: u64) -> u64 {
    (addr >> GRANULE_SHIFT) & INDEX_MASK
}

fn byte(s: &Shadow, addr: u64) -> &'static AtomicU8 {
    // SAFETY: the index is masked into the mapping, which lives as long as
    // the process; AtomicU8 has the layout of u8 and every access to the
    // shadow from Rust is atomic (generated code only reads it).
    unsafe { &*((s.base + index(addr)) as *const AtomicU8) }
}

/// The shadow byte of `addr` (0 without a shadow).
pub fn read(addr: u64) -> u8 {
    shadow().map_or(0, |s| byte(s, addr).load(Ordering::Relaxed))
}

/// The granules `[start, start + size)` touches.
fn granules(start: u64, size: u64) -> impl Iterator<Item = u64> {
    let first = start >> GRANULE_SHIFT;
    let last = start.saturating_add(size.max(1) - 1) >> GRANULE_SHIFT;
    (first..=last).map(|g| g << GRANULE_SHIFT)
}

/// Marks (`on`) or clears the [`FREED_MEM`] bit of the block `[start, start + size)`.
pub fn set_freed_mem(start: u64, size: u64, on: bool) {
    let Some(s) = shadow() else { return };
    for g in granules(start, size) {
        if on {
            byte(s, g).fetch_or(FREED_MEM, Ordering::Relaxed);
        } else {
            byte(s, g).fetch_and(!FREED_MEM, Ordering::Relaxed);
        }
    }
}

/// One more (`add`) or one fewer quarantine record of a freed object at `obj`.
pub fn count_freed_obj(obj: u64, add: bool) {
    let Some(s) = shadow() else { return };
    let g = index(obj);
    let mut counts = s.freed_objs.lock().unwrap_or_else(|e| e.into_inner());
    let n = counts.entry(g).or_insert(0);
    *n = if add { *n + 1 } else { n.saturating_sub(1) };
    if *n == 0 {
        counts.remove(&g);
        byte(s, obj).fetch_and(!FREED_OBJ, Ordering::Relaxed);
    } else {
        byte(s, obj).fetch_or(FREED_OBJ, Ordering::Relaxed);
    }
}

/// A heap's watch id: `1..=62`, or [`WATCH_SHARED`] when all are taken
/// (or there is no shadow): its watched slots then always take the slow
/// path. Give it back with [`release_watch_id`].
pub fn take_watch_id() -> u8 {
    let Some(s) = shadow() else {
        return WATCH_SHARED;
    };
    let mut cur = s.ids.load(Ordering::Relaxed);
    loop {
        let free = !cur & (((1u64 << WATCH_SHARED) - 1) & !1);
        if free == 0 {
            return WATCH_SHARED;
        }
        let id = free.trailing_zeros();
        match s
            .ids
            .compare_exchange(cur, cur | 1 << id, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => return id as u8,
            Err(now) => cur = now,
        }
    }
}

/// Gives back a watch id from [`take_watch_id`].
pub fn release_watch_id(id: u8) {
    if let (Some(s), 1..=62) = (shadow(), id) {
        s.ids.fetch_and(!(1u64 << id), Ordering::AcqRel);
    }
}

fn capacity_byte(s: &Shadow, values: u64) -> &'static AtomicU8 {
    // SAFETY: as in `byte`: the index is masked into the capacity table,
    // which lies inside the mapping (CAPACITY_TABLE_OFFSET + TABLE_BYTES =
    // MAP_BYTES).
    unsafe { &*((s.base + CAPACITY_TABLE_OFFSET + index(values)) as *const AtomicU8) }
}

/// Records the capacity of the live values array at `values` in the
/// capacity table (`min(capacity, CAPACITY_BYTE_MAX)`). When another record already
/// holds the granule (the same host array registered by two runtimes), the
/// smaller stays: the byte only ever claims a capacity some record has.
pub fn set_capacity(values: u64, capacity: u64) {
    let Some(s) = shadow() else { return };
    let v = capacity.min(CAPACITY_BYTE_MAX) as u8;
    let _ = capacity_byte(s, values).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
        Some(if old == 0 { v } else { old.min(v) })
    });
}

/// The values array at `values` is released (or its record dropped): its
/// byte goes back to 0 (ask the runtime), and so does an own-values mark
/// at its capacity word's granule (only ever this array's: no other
/// array's capacity word can be there).
pub fn clear_capacity(values: u64) {
    let Some(s) = shadow() else { return };
    capacity_byte(s, values).store(0, Ordering::Relaxed);
    let mark = capacity_byte(s, values.wrapping_sub(8));
    let _ = mark.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
        (b & OWN_VALUES != 0).then_some(0)
    });
}

/// Marks the values array at `values` as the own array of a live object
/// of the heap of watch id `id` ([`own_values_mark`]; nothing for a shared
/// id). The caller (the heap's `obj_new`) placed the array at
/// `Heap::own_values_offset` from its object and watches the object's
/// slot; [`clear_capacity`] takes the mark away with the record.
pub fn set_own_values_mark(values: u64, id: u8) {
    let (Some(s), Some(mark)) = (shadow(), own_values_mark(id)) else {
        return;
    };
    capacity_byte(s, values.wrapping_sub(8)).store(mark, Ordering::Relaxed);
}

/// The capacity table's byte at the granule of `values`' capacity word:
/// its own-values mark, or 0 (without a shadow too).
pub fn read_own_values_mark(values: u64) -> u8 {
    shadow().map_or(0, |s| {
        capacity_byte(s, values.wrapping_sub(8)).load(Ordering::Relaxed)
    })
}

/// The capacity table's byte of `values` (0 without a shadow).
pub fn read_capacity(values: u64) -> u8 {
    shadow().map_or(0, |s| capacity_byte(s, values).load(Ordering::Relaxed))
}

/// Heap `id` watches the 8-byte slot at `slot`.
pub fn watch(id: u8, slot: u64) {
    let Some(s) = shadow() else { return };
    if slot & UNMAPPED_OR_UNALIGNED != 0 {
        for g in granules(slot, 8) {
            byte(s, g).fetch_or(WATCH_SHARED, Ordering::Relaxed);
        }
        return;
    }
    let b = byte(s, slot);
    let _ = b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        let field = match v & WATCH_MASK {
            0 => id,
            f if f == id => return None,
            _ => WATCH_SHARED,
        };
        Some(v & !WATCH_MASK | field)
    });
}

/// Heap `id` no longer watches the slot at `slot` (an aligned slot it
/// alone watched goes back to 0; a shared mark stays).
pub fn unwatch(id: u8, slot: u64) {
    let Some(s) = shadow() else { return };
    if id == WATCH_SHARED || slot & UNMAPPED_OR_UNALIGNED != 0 {
        return;
    }
    let _ = byte(s, slot).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        (v & WATCH_MASK == id).then_some(v & !WATCH_MASK)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base_or_fail() -> u64 {
        base().expect(
            "no shadow mapping: the test needs a 32 TiB MAP_NORESERVE reservation \
             (vm.overcommit_memory 0 or 1, unset GUARDLIFT_NO_SHADOW)",
        )
    }

    #[test]
    fn bits_follow_marks() {
        base_or_fail();
        let block = Box::new([0u64; 8]);
        let a = block.as_ptr() as u64;
        set_freed_mem(a, 24, true);
        assert_eq!(read(a) & FREED_MEM, FREED_MEM);
        assert_eq!(read(a + 16) & FREED_MEM, FREED_MEM);
        assert_eq!(read(a + 24) & FREED_MEM, 0, "past the block");
        count_freed_obj(a + 8, true);
        count_freed_obj(a + 8, true);
        count_freed_obj(a + 8, false);
        assert_eq!(read(a + 8) & FREED_OBJ, FREED_OBJ, "one record left");
        count_freed_obj(a + 8, false);
        assert_eq!(read(a + 8) & FREED_OBJ, 0);
        set_freed_mem(a, 24, false);
        assert_eq!(read(a) | read(a + 16), 0);
    }

    /// The permissions of the mapping that holds `addr`, from
    /// `/proc/self/maps` (`None`: unmapped).
    fn perms_at(maps: &str, addr: u64) -> Option<String> {
        maps.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            let (s, e) = w.next()?.split_once('-')?;
            let (s, e) = (
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(e, 16).ok()?,
            );
            (s <= addr && addr < e).then(|| w.next().unwrap_or("").to_string())
        })
    }

    #[test]
    fn no_i32_offset_from_outside_reaches_the_tables() {
        let base = base_or_fail();
        let end = base + MAP_BYTES as u64;
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        assert_eq!(perms_at(&maps, base).as_deref(), Some("rw-p"));
        assert_eq!(perms_at(&maps, end - 1).as_deref(), Some("rw-p"));
        // The nearest addresses another mapping can have, on each side, and
        // the farthest a constant offset (i32) plus an 8-byte access reaches
        // from them: inside the guards, which stay inaccessible.
        let (below, above) = (base - GUARD_BYTES as u64 - 1, end + GUARD_BYTES as u64);
        for a in [
            below + i32::MAX as u64 + 8,
            above - (1u64 << 31),
            base - 1,
            end,
        ] {
            assert_eq!(perms_at(&maps, a).as_deref(), Some("---p"), "{a:#x}");
        }
    }

    #[test]
    fn watch_field_is_exact_or_shared() {
        base_or_fail();
        let block = Box::new([0u64; 4]);
        let a = block.as_ptr() as u64;
        let (i, j) = (take_watch_id(), take_watch_id());
        assert!(i != j && (1..=62).contains(&i) && (1..=62).contains(&j));
        watch(i, a);
        assert_eq!(read(a) & WATCH_MASK, i);
        unwatch(j, a);
        assert_eq!(read(a) & WATCH_MASK, i, "only the watcher unwatches");
        unwatch(i, a);
        assert_eq!(read(a) & WATCH_MASK, 0);
        watch(i, a + 8);
        watch(j, a + 8);
        assert_eq!(read(a + 8) & WATCH_MASK, WATCH_SHARED, "two watchers");
        unwatch(i, a + 8);
        assert_eq!(read(a + 8) & WATCH_MASK, WATCH_SHARED, "sticky");
        watch(i, a + 20);
        assert_eq!(read(a + 16) & WATCH_MASK, WATCH_SHARED, "unaligned");
        assert_eq!(read(a + 24) & WATCH_MASK, WATCH_SHARED);
        release_watch_id(i);
        release_watch_id(j);
    }
}
