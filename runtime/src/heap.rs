//! The model heap behind the built-in host functions of spec §7.
//!
//! Objects are real memory laid out byte for byte as the [`DictLayout`] says,
//! so JIT code and the interpreter read the same words. The heap keeps its own
//! record of every block it handed out; the slow paths trust that record, never
//! the (possibly corrupted) words in memory, to decide what a word points to.
//!
//! Every object gets an allocation id (1, 2, 3, … per heap) and, when an IR
//! call made it, its allocation site. Objects the host makes are registered
//! ([`Heap::register_host_object`]) and share the id sequence. A freed object
//! goes to **quarantine**: its blocks stay allocated (never reused, never
//! written by guardlift) and are marked freed, so the lifetime check can
//! tell a stale pointer or a raw access into freed memory, until more than
//! the quarantine limit of freed bytes is held (oldest out first, as in
//! ASan). Lookups are O(1) (by object pointer) or O(log n) (by address).
//!
//! tidy: long because the records of objects, host objects, values arrays, the quarantine and the redzones share one set of invariants; splitting it by record is the next clean-up.

use crate::host_stack::{HostStack, HostStacks};
use crate::layout::{self, DictLayout};
use crate::report::LastWrite;
use crate::shadow;
use std::alloc::{self, Layout as AllocLayout};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The heap's maps are keyed by addresses: `FxHash` (a multiply and a
/// rotate) instead of SipHash, which took a quarter of a loop entry's
/// `attr_fixed` call (docs/PERFORMANCE.md). Addresses are not chosen by
/// an attacker of the hash.
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Bytes of an object's body at and after its address (refcount, type word).
pub const OBJ_BODY_BYTES: i64 = 16;
/// Alignment of every heap block.
pub const BLOCK_ALIGN: usize = 16;
/// Bytes of the redzone before and after every block the heap allocates
/// (objects, values arrays, dicts): ASan-style, marked in the shadow
/// ([`crate::shadow::REDZONE`]); a raw access touching one is a
/// `heap_overflow` under the `bounds` check (spec §6). A multiple of
/// [`BLOCK_ALIGN`], so blocks stay aligned.
pub const REDZONE_BYTES: usize = 16;
const _: () = assert!(REDZONE_BYTES >= 16 && REDZONE_BYTES.is_multiple_of(BLOCK_ALIGN));
/// How many spare object-and-values allocations of one size a heap keeps.
const SPARE_PAIRS: usize = 16;
/// Bytes of a model dict object (its contents live on the Rust side).
pub const DICT_OBJECT_BYTES: usize = 16;
/// Largest attribute count `obj_new` accepts.
pub const MAX_OBJ_ATTRS: i64 = 1 << 20;
/// Magic in a model dict's first word.
pub const DICT_MAGIC: u64 = 0x6c67_5f64_6963_7421;
/// Default quarantine size (`quarantine_mb` of `GUARDLIFT_OPTIONS`).
pub const DEFAULT_QUARANTINE_MB: u64 = 64;
/// What a freed host object's record counts for in the quarantine (the
/// host owns its memory; the runtime keeps only the record), plus the size
/// of each host stack recorded with it ([`crate::host_stack`]).
pub const HOST_RECORD_BYTES: usize = 64;

/// What a heap block is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// An object's body (with its dict slot).
    Object,
    /// A values array, with its capacity word before it.
    Values,
    /// A model dict object.
    Dict,
    /// A `stack_alloc` area of an interpreter frame (no object).
    Stack,
    /// A `stack_alloc` area of a native frame (JIT code): the frame's
    /// memory, never the heap's to free.
    NativeStack,
}

#[derive(Debug)]
struct HeapBlock {
    size: usize,
    kind: BlockKind,
    /// The object this block belongs to (its pointer; 0 for none).
    owner: u64,
    /// In quarantine: the object was freed.
    freed: bool,
    /// Start of the allocation the block lies in (its redzone before it),
    /// a key of `Heap::allocs`; 0 for memory the heap does not own.
    alloc: u64,
}

#[derive(Debug)]
struct ObjMeta {
    /// Start of the allocation (≤ obj).
    base: u64,
    n_attrs: u32,
    /// The values array (its capacity word is at `values - 8`).
    values: Option<u64>,
    dict: Option<u64>,
    id: u64,
    alloc_site: Option<u32>,
}

/// A live object the host made and registered.
#[derive(Debug)]
struct HostMeta {
    id: u64,
    /// The values array whose capacity the runtime recorded for it.
    values: Option<u64>,
    /// The host's stack at its registration ([`crate::host_stack`]).
    alloc_stack: Option<Arc<HostStack>>,
}

/// The recorded capacity of a live values array (the bounds check's
/// truth: never the capacity word in memory, which code can rewrite).
#[derive(Copy, Clone, Debug)]
struct ValuesRec {
    capacity: u64,
    /// The object it belongs to.
    owner: u64,
}

/// What the heap remembers of a freed object while it is in quarantine.
#[derive(Debug)]
struct FreedObj {
    id: u64,
    alloc_site: Option<u32>,
    free_site: Option<u32>,
    /// Block starts still held (empty for host objects).
    blocks: Vec<u64>,
    /// Bytes counted against the quarantine limit.
    bytes: usize,
    /// A host object's stacks at its registration and free.
    stacks: HostStacks,
}

/// A values array `obj_dictify` released, held in quarantine like a freed
/// object's memory (spec §6: a use through it is a `use_after_free`
/// whose `free_site` is the dictify call).
#[derive(Debug)]
struct Released {
    id: u64,
    alloc_site: Option<u32>,
    free_site: Option<u32>,
    bytes: usize,
}

/// Quarantine entries with this id are values arrays `obj_dictify`
/// released, keyed by their block (allocation ids start at 1).
const RELEASED_VALUES: u64 = 0;

/// Provenance of an object the heap knows (live or in quarantine), in
/// runtime-global site ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    /// Allocation id (1, 2, 3, … per heap).
    pub id: u64,
    /// Where an IR `call @obj_new` made it.
    pub alloc_site: Option<u32>,
    /// Where an IR `call @obj_free` freed it.
    pub free_site: Option<u32>,
    /// The object was freed (it is in quarantine).
    pub freed: bool,
    /// A host object's native stacks at its registration and free (empty
    /// for objects IR code made).
    pub stacks: HostStacks,
}

/// What `obj_free` found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FreeOutcome {
    /// A live object of the heap: now in quarantine.
    Freed,
    /// An object already freed (still in quarantine).
    DoubleFree,
    /// Not an object the heap allocated (never was, a host object, or
    /// freed long ago and out of quarantine).
    Invalid,
}

/// Misuse of the host-object API.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostObjectError {
    /// Zero or not 8-aligned.
    #[error("object address must be non-zero and 8-aligned, got {0:#x}")]
    BadAddress(u64),
    /// Registered twice: the address and the live object's id.
    #[error("{0:#x} is already a live object (id {1})")]
    AlreadyLive(u64, u64),
    /// Freed but not live.
    #[error("{0:#x} is not a live registered object (never registered, or already freed)")]
    NotLive(u64),
}

/// A host-side failure: the host was asked to do something impossible
/// (a corrupted word reached a slow path, a double free, ...). In a real
/// interpreter this is where the crash would be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{func}: {msg}")]
pub struct HostFault {
    /// The host function that failed (one of [`HOST_FAULT_FUNCS`]).
    pub func: &'static str,
    /// What was wrong ([`HostFaultKind::message`] of the two below).
    pub msg: String,
    /// What went wrong, as a code.
    pub kind: HostFaultKind,
    /// Its operands (`A`, `B` of [`HostFaultKind`]).
    pub operands: [u64; 2],
}

mod fault;
use fault::fault;
pub use fault::{HostFaultKind, BY_DICT_CODE, BY_OBJ_NEW, HOST_FAULT_FUNCS};

/// The model heap. Not synchronized: the runtime keeps it behind a mutex.
#[derive(Debug)]
pub struct Heap {
    layout: DictLayout,
    /// Every live block: start address → size and kind.
    blocks: BTreeMap<u64, HeapBlock>,
    /// The allocations the blocks lie in, by start: their layout, how
    /// many blocks are still in each, and whether it is an object and its
    /// own values array ([`Heap::own_values_offset`]).
    allocs: HashMap<u64, (AllocLayout, u8, bool)>,
    /// Object-and-values allocations whose blocks are all gone, by size,
    /// kept for the next `obj_new` of that size (most recent first, at
    /// most [`SPARE_PAIRS`] per size): the next object reuses the memory
    /// of the last one freed, whatever else the process allocates.
    spare: HashMap<usize, Vec<u64>>,
    objects: HashMap<u64, ObjMeta>,
    dicts: HashMap<u64, BTreeMap<u32, i64>>,
    /// Watched dict slots (clobber check): slot address → object.
    watched: BTreeMap<u64, u64>,
    /// The last known write to each dict slot (kept after a free, so a
    /// recycled address shows which object the write was to).
    last_write: HashMap<u64, LastWrite>,
    /// Live host objects by address.
    host: HashMap<u64, HostMeta>,
    /// Live values arrays (of heap and host objects) by values pointer:
    /// their recorded capacities.
    values: HashMap<u64, ValuesRec>,
    /// Freed objects in quarantine, by object pointer.
    freed: HashMap<u64, FreedObj>,
    /// Values arrays released by `obj_dictify`, in quarantine, by block start.
    released: HashMap<u64, Released>,
    /// Quarantine order: (object, id) — or (values block,
    /// [`RELEASED_VALUES`]) — oldest first.
    quarantine: VecDeque<(u64, u64)>,
    quarantine_bytes: usize,
    quarantine_limit: usize,
    /// The last allocation id handed out.
    last_id: u64,
    /// This heap's id in the watch field of the shadow ([`crate::shadow`]).
    watch_id: u8,
}

impl Heap {
    /// An empty heap laying objects out as `layout` says.
    pub fn new(layout: DictLayout) -> Self {
        Heap {
            layout,
            blocks: BTreeMap::new(),
            allocs: HashMap::default(),
            spare: HashMap::default(),
            objects: HashMap::default(),
            dicts: HashMap::default(),
            watched: BTreeMap::new(),
            last_write: HashMap::default(),
            host: HashMap::default(),
            values: HashMap::default(),
            freed: HashMap::default(),
            released: HashMap::default(),
            quarantine: VecDeque::new(),
            quarantine_bytes: 0,
            quarantine_limit: (DEFAULT_QUARANTINE_MB as usize) << 20,
            last_id: 0,
            watch_id: shadow::take_watch_id(),
        }
    }

    /// This heap's id in the watch field of the shadow bytes
    /// ([`shadow::WATCH_SHARED`]: none, its watched slots always take the
    /// slow path).
    pub fn watch_id(&self) -> u8 {
        self.watch_id
    }

    /// Puts `slot` (the dict slot of `obj`) on the watch list and in the shadow.
    fn watch_slot(&mut self, slot: u64, obj: u64) {
        self.watched.insert(slot, obj);
        shadow::watch(self.watch_id, slot);
    }

    /// Takes `slot` off the watch list; true when it was on it.
    fn unwatch_slot(&mut self, slot: u64) -> bool {
        let was = self.watched.remove(&slot).is_some();
        if was {
            shadow::unwatch(self.watch_id, slot);
        }
        was
    }

    /// Records the capacity of the values array at `values` of `owner`
    /// (the capacity table and the record) and watches its capacity word.
    fn record_values(&mut self, values: u64, capacity: u64, owner: u64) {
        self.values.insert(values, ValuesRec { capacity, owner });
        shadow::set_capacity(values, capacity);
        self.watch_slot(layout::capacity_word_addr(values), owner);
    }

    /// Drops the record of the values array at `values` (released, or its
    /// owner gone).
    fn forget_values(&mut self, values: u64) {
        if self.values.remove(&values).is_some() {
            shadow::clear_capacity(values);
            self.unwatch_slot(layout::capacity_word_addr(values));
        }
    }

    /// The capacity the runtime recorded for the values array at `values`
    /// that the word of `obj` points to: the array's record; for a host
    /// object registered before its word pointed to a values array, the
    /// capacity word read the first time its own word is seen pointing
    /// there (recorded from then on). `None`: no array the runtime knows
    /// (the bounds check then takes capacity 0).
    pub fn recorded_capacity(&mut self, obj: u64, values: u64) -> Option<u64> {
        if let Some(r) = self.values.get(&values) {
            return Some(r.capacity);
        }
        let m = self.host.get(&obj)?;
        if m.values.is_some() || !layout::tag_ok(values.wrapping_sub(1)) {
            return None;
        }
        // SAFETY: `obj` is a live object the host registered, laid out as
        // the layout says (the host's contract, spec §4): its slot is
        // readable, and when it holds the values word of `values`, so is
        // the capacity word before that array.
        let word = unsafe { (self.slot(obj) as *const u64).read_unaligned() };
        if word != layout::values_word(values) {
            return None;
        }
        // SAFETY: as above.
        let capacity =
            unsafe { (layout::capacity_word_addr(values) as *const u64).read_unaligned() };
        if let Some(m) = self.host.get_mut(&obj) {
            m.values = Some(values);
        }
        self.record_values(values, capacity, obj);
        Some(capacity)
    }

    /// Does the runtime know `obj` at all: an object of the model heap (live
    /// or in quarantine) or one the host registered?
    pub fn knows_object(&self, obj: u64) -> bool {
        self.objects.contains_key(&obj)
            || self.host.contains_key(&obj)
            || self.freed.contains_key(&obj)
    }

    /// The object owning the recorded values array at `values`.
    pub fn values_owner(&self, values: u64) -> Option<u64> {
        self.values.get(&values).map(|r| r.owner)
    }

    /// Records the freed object `obj` (its shadow byte counts it).
    fn insert_freed(&mut self, obj: u64, f: FreedObj) -> Option<FreedObj> {
        let old = self.freed.insert(obj, f);
        if old.is_none() {
            shadow::count_freed_obj(obj, true);
        }
        old
    }

    /// Forgets the freed object `obj`.
    fn remove_freed(&mut self, obj: u64) -> Option<FreedObj> {
        let f = self.freed.remove(&obj);
        if f.is_some() {
            shadow::count_freed_obj(obj, false);
        }
        f
    }

    /// Sets the quarantine size; shrinking it releases the oldest objects.
    pub fn set_quarantine_mb(&mut self, mb: u64) {
        self.quarantine_limit = usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        self.evict();
    }

    /// Bytes of freed memory held in quarantine.
    pub fn quarantine_bytes(&self) -> usize {
        self.quarantine_bytes
    }

    fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// The dict-slot layout of this heap's objects.
    pub fn layout(&self) -> DictLayout {
        self.layout
    }

    /// The allocation of a block of `size` bytes: its redzones around it.
    fn raw_layout(size: usize) -> Option<AllocLayout> {
        AllocLayout::from_size_align(size.checked_add(2 * REDZONE_BYTES)?, BLOCK_ALIGN).ok()
    }

    /// A zeroed block of `size` bytes (rounded up to whole granules) between
    /// two redzones, marked in the shadow.
    fn alloc(&mut self, size: usize, kind: BlockKind) -> Option<u64> {
        let size = size.max(8).next_multiple_of(8);
        let l = Self::raw_layout(size)?;
        // SAFETY: the size is non-zero.
        let raw = unsafe { alloc::alloc_zeroed(l) };
        if raw.is_null() {
            return None;
        }
        let (raw, rz) = (raw as u64, REDZONE_BYTES as u64);
        let p = raw + rz;
        shadow::set_freed_mem(raw, rz, true);
        shadow::set_freed_mem(p + size as u64, rz, true);
        self.allocs.insert(raw, (l, 1, false));
        self.insert_block(p, size, kind, raw);
        Some(p)
    }

    fn insert_block(&mut self, p: u64, size: usize, kind: BlockKind, alloc: u64) {
        let b = HeapBlock {
            size,
            kind,
            owner: 0,
            freed: false,
            alloc,
        };
        self.blocks.insert(p, b);
    }

    /// An object block of `obj_size` bytes and, in the same allocation, a
    /// values block of `values_size` bytes, each between its own two
    /// redzones (the gap that keeps the second block 16-aligned is
    /// marked too): the values block starts at
    /// `round_up(obj_size, BLOCK_ALIGN) + 2 * REDZONE_BYTES` from the
    /// object block ([`Heap::own_values_offset`]). Zeroed, marked.
    fn alloc_pair(&mut self, obj_size: usize, values_size: usize) -> Option<(u64, u64)> {
        let obj_size = obj_size.max(8).next_multiple_of(8);
        let values_size = values_size.max(8).next_multiple_of(8);
        let rz = REDZONE_BYTES;
        let first = obj_size.next_multiple_of(BLOCK_ALIGN);
        let total = first.checked_add(values_size)?.checked_add(4 * rz)?;
        let l = AllocLayout::from_size_align(total, BLOCK_ALIGN).ok()?;
        // The last spare of this size first (see `spare`), else new memory.
        let raw = match self.spare.get_mut(&total).and_then(Vec::pop) {
            Some(raw) => raw as *mut u8,
            // SAFETY: the size is non-zero.
            None => unsafe { alloc::alloc(l) },
        };
        if raw.is_null() {
            return None;
        }
        // SAFETY: `raw` holds `total` bytes, allocated with `l`.
        unsafe { std::ptr::write_bytes(raw, 0, total) };
        let raw = raw as u64;
        let p = raw + rz as u64;
        let q = p + (first + 2 * rz) as u64;
        shadow::set_freed_mem(raw, rz as u64, true);
        shadow::set_freed_mem(p + obj_size as u64, q - p - obj_size as u64, true);
        shadow::set_freed_mem(q + values_size as u64, rz as u64, true);
        self.allocs.insert(raw, (l, 2, true));
        self.insert_block(p, obj_size, BlockKind::Object, raw);
        self.insert_block(q, values_size, BlockKind::Values, raw);
        Some((p, q))
    }

    fn dealloc(&mut self, start: u64) {
        let Some(b) = self.blocks.remove(&start) else {
            return;
        };
        let rz = REDZONE_BYTES as u64;
        shadow::set_freed_mem(start - rz, b.size as u64 + 2 * rz, false);
        let Some((l, left, pair)) = self.allocs.get_mut(&b.alloc) else {
            return;
        };
        *left -= 1;
        if *left > 0 {
            return;
        }
        let (l, pair) = (*l, *pair);
        self.allocs.remove(&b.alloc);
        // The whole allocation, gaps included, is unmarked once it goes.
        shadow::set_freed_mem(b.alloc, l.size() as u64, false);
        if pair {
            let spare = self.spare.entry(l.size()).or_default();
            if spare.len() < SPARE_PAIRS {
                spare.push(b.alloc);
                return;
            }
        }
        // SAFETY: allocated by `alloc` or `alloc_pair` with this layout;
        // its last block just left the map, so it is freed once.
        unsafe { alloc::dealloc(b.alloc as *mut u8, l) };
    }

    /// The distance from a model-heap object to its own values array in
    /// `layout` (`values = obj + offset`): `obj_new` allocates both as one
    /// `Heap::alloc_pair`, so that JIT code can find an object's own
    /// array, and its mark ([`shadow::own_values_mark`]), from the object
    /// pointer alone (docs/CODEGEN.md, "Own values").
    pub fn own_values_offset(layout: DictLayout) -> i64 {
        let (lo, size) = Self::object_block(layout);
        let first = size.next_multiple_of(BLOCK_ALIGN) as i64;
        lo + first + 2 * REDZONE_BYTES as i64 + layout::VALUES_HEADER_BYTES as i64
    }

    /// An object's block in `layout`: its start's offset from the object
    /// (`≤ 0`) and its size (the dict slot and the body).
    fn object_block(layout: DictLayout) -> (i64, usize) {
        let off = layout.dict_slot_offset() as i64;
        let lo = off.min(0);
        let hi = (off + 8).max(OBJ_BODY_BYTES);
        (lo, ((hi - lo) as usize).next_multiple_of(8))
    }

    /// The block whose redzone `[addr, addr + width)` touches, as its
    /// owner object (0: none, e.g. a dict not yet given to an object):
    /// O(log n). Redzones are never part of a block, live or freed.
    pub fn redzone_owner(&self, addr: u64, width: u64) -> Option<u64> {
        let end = addr.saturating_add(width.max(1));
        let rz = REDZONE_BYTES as u64;
        for (&start, b) in self.blocks.range(..end.saturating_add(rz)).rev() {
            let stop = start.saturating_add(b.size as u64);
            if stop.saturating_add(rz) <= addr {
                break;
            }
            let before = addr < start && end > start - rz;
            let after = addr < stop + rz && end > stop;
            if before || after {
                return Some(b.owner);
            }
        }
        None
    }

    /// The block containing `[addr, addr + width)`, if any.
    fn block_of(&self, addr: u64, width: u64) -> Option<(u64, &HeapBlock)> {
        let (&start, b) = self.blocks.range(..=addr).next_back()?;
        let end = start.checked_add(b.size as u64)?;
        (addr.checked_add(width)? <= end).then_some((start, b))
    }

    /// The kind of the live block containing `[addr, addr + width)`.
    pub fn block_kind(&self, addr: u64, width: u64) -> Option<BlockKind> {
        self.block_of(addr, width).map(|(_, b)| b.kind)
    }

    /// Is `[addr, addr + width)` inside one live heap block?
    pub fn is_valid(&self, addr: u64, width: u64) -> bool {
        self.block_of(addr, width).is_some()
    }

    fn slot(&self, obj: u64) -> u64 {
        self.layout.slot_addr(obj)
    }

    fn read_word(&self, addr: u64) -> u64 {
        debug_assert!(self.is_valid(addr, 8));
        // SAFETY: callers only pass slots of live objects (checked through `objects`).
        unsafe { (addr as *const u64).read_unaligned() }
    }

    fn write_word(&self, addr: u64, v: u64) {
        debug_assert!(self.is_valid(addr, 8));
        // SAFETY: as in `read_word`.
        unsafe { (addr as *mut u64).write_unaligned(v) }
    }

    /// A `stack_alloc` area of `size` bytes for the interpreter: zeroed,
    /// 16-aligned, a block raw accesses may touch until
    /// [`Heap::free_stack_area`] (`None`: out of memory).
    pub fn alloc_stack_area(&mut self, size: u32) -> Option<u64> {
        self.alloc(size as usize, BlockKind::Stack)
    }

    /// Zeroes the `stack_alloc` area at `p` again (the instruction ran again).
    pub fn zero_stack_area(&mut self, p: u64) {
        if let Some(b) = self.blocks.get(&p).filter(|b| b.kind == BlockKind::Stack) {
            // SAFETY: a live block of this heap, `size` bytes from `p`.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, b.size) };
        }
    }

    /// Gives back the `stack_alloc` area at `p` (its frame returned): at
    /// once, no quarantine — a stack frame is reused at once too.
    pub fn free_stack_area(&mut self, p: u64) {
        if self
            .blocks
            .get(&p)
            .is_some_and(|b| b.kind == BlockKind::Stack)
        {
            self.dealloc(p);
        }
    }

    /// A `stack_alloc` area of a native frame at `p` (`size` bytes asked;
    /// its slot has [`REDZONE_BYTES`] of pad on each side): a block whose
    /// redzones are checked until [`Heap::native_stack_area_gone`], marked
    /// in the shadow. An older area it overlaps (of a frame that never
    /// returned: its thread died) is forgotten first.
    pub fn native_stack_area(&mut self, p: u64, size: u32) {
        let size = (size as usize).max(8).next_multiple_of(8);
        let rz = REDZONE_BYTES as u64;
        let (lo, hi) = (p.saturating_sub(rz), p.saturating_add(size as u64 + rz));
        let stale: Vec<(u64, usize)> = (self.blocks.range(..hi).rev())
            .take_while(|&(&s, b)| s.saturating_add(b.size as u64 + rz) > lo)
            .filter(|(_, b)| b.kind == BlockKind::NativeStack)
            .map(|(&s, b)| (s, b.size))
            .collect();
        for (s, n) in stale {
            self.native_stack_area_gone(s, n as u32);
        }
        self.insert_block(p, size, BlockKind::NativeStack, 0);
        shadow::set_freed_mem(lo, rz, true);
        shadow::set_freed_mem(p + size as u64, rz, true);
    }

    /// The frame of the native area at `p` returns: it is no block any
    /// more, and its redzones are clear in the shadow.
    pub fn native_stack_area_gone(&mut self, p: u64, _size: u32) {
        let Some(b) = (self.blocks.get(&p)).filter(|b| b.kind == BlockKind::NativeStack) else {
            return;
        };
        let rz = REDZONE_BYTES as u64;
        let all = b.size as u64 + 2 * rz;
        self.blocks.remove(&p);
        shadow::set_freed_mem(p.saturating_sub(rz), all, false);
    }

    /// `@obj_new(n)`: a values-tagged object with `n` zeroed attributes.
    pub fn obj_new(&mut self, n: i64) -> Result<u64, HostFault> {
        self.obj_new_at(n, None)
    }

    /// `@obj_new(n)` called at `site` (runtime-global), recorded as its allocation site.
    pub fn obj_new_at(&mut self, n: i64, site: Option<u32>) -> Result<u64, HostFault> {
        if !(0..=MAX_OBJ_ATTRS).contains(&n) {
            return fault("obj_new", HostFaultKind::CountRange, n as u64, 0);
        }
        let (lo, size) = Self::object_block(self.layout);
        let header = layout::VALUES_HEADER_BYTES as usize;
        let Some((base, vblock)) = self.alloc_pair(size, header + n as usize * 8) else {
            return fault("obj_new", HostFaultKind::OutOfMemory, 0, 0);
        };
        let obj = base.wrapping_add((-lo) as u64);
        let values = vblock + header as u64;
        debug_assert_eq!(values - obj, Self::own_values_offset(self.layout) as u64);
        // Body: word 0 refcount 1, word 1 the attribute count (a stand-in for
        // ob_type); the values array's capacity word (spec §4).
        // SAFETY: the words lie inside the blocks just allocated.
        unsafe {
            (obj as *mut u64).write(1);
            ((obj + 8) as *mut u64).write(n as u64);
            (layout::capacity_word_addr(values) as *mut u64).write(n as u64);
        }
        for b in [base, vblock] {
            if let Some(blk) = self.blocks.get_mut(&b) {
                blk.owner = obj;
            }
        }
        let id = self.next_id();
        self.objects.insert(
            obj,
            ObjMeta {
                base,
                n_attrs: n as u32,
                values: Some(values),
                dict: None,
                id,
                alloc_site: site,
            },
        );
        self.write_word(self.slot(obj), layout::values_word(values));
        self.note_write(obj, BY_OBJ_NEW, None, layout::values_word(values));
        self.watch_slot(self.slot(obj), obj);
        self.record_values(values, n as u64, obj);
        // The object is live, its slot watched and `values` its own array
        // until `forget_values` (its free, or the dictify that releases
        // the array) clears the mark with the record.
        shadow::set_own_values_mark(values, self.watch_id);
        Ok(obj)
    }

    /// Registers an object the host made at `obj` (laid out as the heap's
    /// layout says): it gets the next allocation id. A freed object's
    /// record at the same address is dropped (the address was reused).
    pub fn register_host_object(&mut self, obj: u64) -> Result<u64, HostObjectError> {
        self.register_host_object_at(obj, None)
    }

    /// [`Heap::register_host_object`], recording the host's stack at the
    /// registration (kept with the record, quarantine included).
    pub fn register_host_object_at(
        &mut self,
        obj: u64,
        alloc_stack: Option<Arc<HostStack>>,
    ) -> Result<u64, HostObjectError> {
        if obj == 0 || !obj.is_multiple_of(8) {
            return Err(HostObjectError::BadAddress(obj));
        }
        if let Some(id) = self.live_id(obj) {
            return Err(HostObjectError::AlreadyLive(obj, id));
        }
        if let Some(f) = self.freed.get(&obj) {
            if f.blocks.is_empty() {
                let f = self.remove_freed(obj).map_or(0, |f| f.bytes);
                self.quarantine_bytes -= f;
            }
        }
        let id = self.next_id();
        self.host.insert(
            obj,
            HostMeta {
                id,
                values: None,
                alloc_stack,
            },
        );
        Ok(id)
    }

    /// The host freed the object at `obj`: it leaves the watch list and its
    /// record goes to quarantine (the host's memory is the host's: nothing
    /// is held or written). An address that was watched but never
    /// registered only leaves the watch list.
    pub fn host_object_freed(&mut self, obj: u64) -> Result<(), HostObjectError> {
        self.host_object_freed_at(obj, None)
    }

    /// [`Heap::host_object_freed`], recording the host's stack at the free
    /// with the freed record.
    pub fn host_object_freed_at(
        &mut self,
        obj: u64,
        free_stack: Option<Arc<HostStack>>,
    ) -> Result<(), HostObjectError> {
        let was_watched = self.unwatch_slot(self.slot(obj));
        match self.host.remove(&obj) {
            Some(m) => {
                if let Some(v) = m.values {
                    self.forget_values(v);
                }
                // The record, and its stacks when the host's were recorded.
                let stacks = [&m.alloc_stack, &free_stack];
                let stack_bytes = stacks.iter().filter(|s| s.is_some()).count()
                    * std::mem::size_of::<HostStack>();
                self.enqueue_freed(
                    obj,
                    FreedObj {
                        id: m.id,
                        alloc_site: None,
                        free_site: None,
                        blocks: Vec::new(),
                        bytes: HOST_RECORD_BYTES + stack_bytes,
                        stacks: HostStacks {
                            alloc: m.alloc_stack,
                            free: free_stack,
                        },
                    },
                );
                Ok(())
            }
            None if was_watched => Ok(()),
            None => Err(HostObjectError::NotLive(obj)),
        }
    }

    fn live_id(&self, obj: u64) -> Option<u64> {
        self.objects
            .get(&obj)
            .map(|m| m.id)
            .or_else(|| self.host.get(&obj).map(|m| m.id))
    }

    /// What the heap knows of the object at `obj` (live or in quarantine).
    pub fn object_record(&self, obj: u64) -> Option<ObjectRecord> {
        if let Some(m) = self.objects.get(&obj) {
            return Some(ObjectRecord {
                id: m.id,
                alloc_site: m.alloc_site,
                free_site: None,
                freed: false,
                stacks: HostStacks::default(),
            });
        }
        if let Some(m) = self.host.get(&obj) {
            return Some(ObjectRecord {
                id: m.id,
                alloc_site: None,
                free_site: None,
                freed: false,
                stacks: HostStacks {
                    alloc: m.alloc_stack.clone(),
                    free: None,
                },
            });
        }
        self.freed.get(&obj).map(|f| ObjectRecord {
            id: f.id,
            alloc_site: f.alloc_site,
            free_site: f.free_site,
            freed: true,
            stacks: f.stacks.clone(),
        })
    }

    /// What the heap knows of the owner of the quarantined memory that
    /// `[addr, addr + width)` touches: the freed object's record, or for a
    /// values array `obj_dictify` released, its object's with the dictify
    /// call as the free site (`freed`: the array was).
    pub fn freed_memory_record(&self, addr: u64, width: u64) -> Option<ObjectRecord> {
        let owner = self.freed_memory_owner(addr, width)?;
        let (start, _) = self.block_of(addr, 1).or_else(|| {
            let last = addr.saturating_add(width.max(1) - 1);
            self.block_of(last, 1)
        })?;
        match self.released.get(&start) {
            Some(r) => Some(ObjectRecord {
                id: r.id,
                alloc_site: r.alloc_site,
                free_site: r.free_site,
                freed: true,
                stacks: HostStacks::default(),
            }),
            None => self.object_record(owner),
        }
    }

    /// What the heap knows of the object with allocation id `id` (live or
    /// in quarantine), and its address: O(n), for the rare report whose
    /// object was captured by id (a watchpoint's write).
    pub fn object_record_by_id(&self, id: u64) -> Option<(u64, ObjectRecord)> {
        let at = self
            .objects
            .iter()
            .find(|(_, m)| m.id == id)
            .map(|(&o, _)| o)
            .or_else(|| self.host.iter().find(|(_, m)| m.id == id).map(|(&o, _)| o))
            .or_else(|| self.freed.iter().find(|(_, f)| f.id == id).map(|(&o, _)| o))?;
        self.object_record(at)
            .filter(|r| r.id == id)
            .map(|r| (at, r))
    }

    /// Is `obj` a freed object still in quarantine?
    pub fn is_freed(&self, obj: u64) -> bool {
        self.freed.contains_key(&obj)
    }

    /// The freed object (in quarantine) whose memory `[addr, addr + width)`
    /// overlaps, if any: O(log n).
    pub fn freed_memory_owner(&self, addr: u64, width: u64) -> Option<u64> {
        let end = addr.saturating_add(width.max(1));
        for (&start, b) in self.blocks.range(..end).rev() {
            if start.saturating_add(b.size as u64) <= addr {
                break;
            }
            if b.freed {
                return Some(b.owner);
            }
        }
        None
    }

    /// The object whose watched slot `[addr, addr + width)` overlaps, if any.
    pub fn watched_owner(&self, addr: u64, width: u32) -> Option<u64> {
        let lo = addr.saturating_sub(layout::DICT_WORD_BYTES as u64 - 1);
        let hi = addr.saturating_add(width as u64);
        self.watched.range(lo..hi).next().map(|(_, &o)| o)
    }

    fn enqueue_freed(&mut self, obj: u64, f: FreedObj) {
        self.quarantine.push_back((obj, f.id));
        self.quarantine_bytes += f.bytes;
        // A host record at a reused address replaces the older one.
        if let Some(old) = self.insert_freed(obj, f) {
            self.quarantine_bytes -= old.bytes;
            for b in old.blocks {
                self.dealloc(b);
            }
        }
        self.evict();
    }

    /// Releases the oldest quarantined objects while more than the limit is held.
    fn evict(&mut self) {
        while self.quarantine_bytes > self.quarantine_limit {
            let Some((obj, id)) = self.quarantine.pop_front() else {
                break;
            };
            if id == RELEASED_VALUES {
                if let Some(r) = self.released.remove(&obj) {
                    self.quarantine_bytes -= r.bytes;
                    self.dealloc(obj);
                }
                continue;
            }
            if self.freed.get(&obj).is_none_or(|f| f.id != id) {
                continue;
            }
            let Some(f) = self.remove_freed(obj) else {
                continue;
            };
            self.quarantine_bytes -= f.bytes;
            for b in f.blocks {
                self.dicts.remove(&b);
                self.dealloc(b);
            }
            if self.live_id(obj).is_none() {
                self.last_write.remove(&self.slot(obj));
            }
        }
    }

    fn meta(&self, func: &'static str, obj: u64) -> Result<&ObjMeta, HostFault> {
        match self.objects.get(&obj) {
            Some(m) => Ok(m),
            None => fault(func, HostFaultKind::NotLive, obj, 0),
        }
    }

    fn new_dict(&mut self, attrs: BTreeMap<u32, i64>) -> Result<u64, HostFault> {
        let Some(d) = self.alloc(DICT_OBJECT_BYTES, BlockKind::Dict) else {
            return fault("dict", HostFaultKind::OutOfMemory, 0, 0);
        };
        self.write_word(d, DICT_MAGIC);
        self.dicts.insert(d, attrs);
        Ok(d)
    }

    /// What the host believes `word` is for `obj`.
    /// `Err` when the word is neither the object's values array nor its
    /// dict, or `obj` is not live (the callers checked it is).
    fn classify(&self, obj: u64, word: u64) -> Result<WordIs, ()> {
        let m = self.objects.get(&obj).ok_or(())?;
        if word == 0 {
            return Ok(WordIs::Empty);
        }
        if let Some(v) = m.values {
            if word == layout::values_word(v) {
                return Ok(WordIs::Values(v, m.n_attrs));
            }
        }
        if Some(word) == m.dict && self.dicts.contains_key(&word) {
            return Ok(WordIs::Dict(word));
        }
        Err(())
    }

    /// What [`crate::internals::ObjectBuiltins::attr_fixed`] decides from
    /// (the record alone: the capacity word in memory is not read), for a
    /// live heap object whose word is its own values array's: that values
    /// word and the object's attribute count (`None` otherwise).
    pub fn fixed_record(&self, obj: u64) -> Option<(u64, u64)> {
        let m = self.objects.get(&obj)?;
        let word = layout::values_word(m.values?);
        (self.read_word(self.slot(obj)) == word).then_some((word, u64::from(m.n_attrs)))
    }

    /// What an own-values mark ([`shadow::own_values_mark`]) stands for,
    /// from the records alone: `obj` is a live object of this heap whose
    /// slot the heap watches, with its own values array — returned with
    /// its recorded capacity (`None` otherwise).
    pub fn own_values_record(&self, obj: u64) -> Option<(u64, u64)> {
        let m = self.objects.get(&obj)?;
        let v = m.values?;
        let watched = self.watched.get(&self.slot(obj)) == Some(&obj);
        let capacity = self.values.get(&v)?.capacity;
        watched.then_some((v, capacity))
    }

    /// `@obj_dictify(obj)`: move the attributes into a dict and point the word at it.
    pub fn obj_dictify(&mut self, obj: u64) -> Result<(), HostFault> {
        self.obj_dictify_at(obj, None)
    }

    /// `@obj_dictify(obj)` called at `site` (runtime-global): a values array
    /// it releases goes to quarantine (held, marked freed), with `site` as
    /// its free site.
    pub fn obj_dictify_at(&mut self, obj: u64, site: Option<u32>) -> Result<(), HostFault> {
        self.meta("obj_dictify", obj)?;
        let word = self.read_word(self.slot(obj));
        match self.classify(obj, word) {
            Err(()) => fault("obj_dictify", HostFaultKind::Corrupted, obj, word),
            Ok(WordIs::Dict(_)) => Ok(()),
            Ok(WordIs::Empty) => {
                let d = self.new_dict(BTreeMap::new())?;
                self.set_dict(obj, d);
                Ok(())
            }
            Ok(WordIs::Values(v, n)) => {
                let mut attrs = BTreeMap::new();
                for i in 0..n {
                    // SAFETY: i < n, inside the values block of this live object.
                    let x = unsafe { ((v + 8 * i as u64) as *const i64).read() };
                    attrs.insert(i, x);
                }
                let d = self.new_dict(attrs)?;
                self.forget_values(v);
                self.release_values(obj, layout::capacity_word_addr(v), site);
                if let Some(m) = self.objects.get_mut(&obj) {
                    m.values = None;
                }
                self.set_dict(obj, d);
                Ok(())
            }
        }
    }

    /// Puts the values block `vblock` of live object `obj`, released by a
    /// dictify at `site`, in quarantine.
    fn release_values(&mut self, obj: u64, vblock: u64, site: Option<u32>) {
        let Some(m) = self.objects.get(&obj) else {
            return;
        };
        let (id, alloc_site) = (m.id, m.alloc_site);
        let Some(b) = self.blocks.get_mut(&vblock) else {
            return;
        };
        b.freed = true;
        b.owner = obj;
        let bytes = b.size;
        shadow::set_freed_mem(vblock, bytes as u64, true);
        self.released.insert(
            vblock,
            Released {
                id,
                alloc_site,
                free_site: site,
                bytes,
            },
        );
        self.quarantine.push_back((vblock, RELEASED_VALUES));
        self.quarantine_bytes += bytes;
        self.evict();
    }

    fn set_dict(&mut self, obj: u64, d: u64) {
        if let Some(m) = self.objects.get_mut(&obj) {
            m.dict = Some(d);
        }
        if let Some(b) = self.blocks.get_mut(&d) {
            b.owner = obj;
        }
        crate::watch::runtime_write(|| self.write_word(self.slot(obj), d));
        self.note_write(obj, BY_DICT_CODE, None, d);
    }

    /// Records the last known write to the dict slot of the object at `obj`.
    pub fn note_write(&mut self, obj: u64, by: &str, site: Option<u32>, value: u64) {
        let object_id = self.live_id(obj);
        self.last_write.insert(
            self.slot(obj),
            LastWrite {
                by: by.to_string(),
                site,
                value,
                object_id,
            },
        );
    }

    /// The last known write to the slot at `slot`.
    pub fn last_write(&self, slot: u64) -> Option<LastWrite> {
        self.last_write.get(&slot).cloned()
    }

    /// `@obj_free(obj)`: into quarantine; anything but a live object of
    /// this heap is a host fault.
    pub fn obj_free(&mut self, obj: u64) -> Result<(), HostFault> {
        match self.obj_free_at(obj, None) {
            FreeOutcome::Freed => Ok(()),
            FreeOutcome::DoubleFree => fault("obj_free", HostFaultKind::DoubleFree, obj, 0),
            FreeOutcome::Invalid => fault("obj_free", HostFaultKind::NotLive, obj, 0),
        }
    }

    /// `@obj_free(obj)` at `site` (runtime-global): a live object goes to
    /// quarantine with its free site; anything else is left alone and the
    /// outcome says why.
    pub fn obj_free_at(&mut self, obj: u64, site: Option<u32>) -> FreeOutcome {
        let Some(m) = self.objects.remove(&obj) else {
            return if self.freed.get(&obj).is_some_and(|f| !f.blocks.is_empty()) {
                FreeOutcome::DoubleFree
            } else {
                FreeOutcome::Invalid
            };
        };
        self.unwatch_slot(self.slot(obj));
        if let Some(v) = m.values {
            self.forget_values(v);
        }
        let vblock = m.values.map(layout::capacity_word_addr);
        let blocks: Vec<u64> = [Some(m.base), vblock, m.dict]
            .into_iter()
            .flatten()
            .collect();
        let mut bytes = 0;
        for b in &blocks {
            if let Some(blk) = self.blocks.get_mut(b) {
                blk.freed = true;
                blk.owner = obj;
                bytes += blk.size;
                shadow::set_freed_mem(*b, blk.size as u64, true);
            }
        }
        self.enqueue_freed(
            obj,
            FreedObj {
                id: m.id,
                alloc_site: m.alloc_site,
                free_site: site,
                blocks,
                bytes,
                stacks: HostStacks::default(),
            },
        );
        FreeOutcome::Freed
    }

    /// `@fault_clear_lsb(obj)`: the rogue writer.
    pub fn fault_clear_lsb(&mut self, obj: u64) -> Result<(), HostFault> {
        self.meta("fault_clear_lsb", obj)?;
        let s = self.slot(obj);
        // One 8-byte store of the whole word (volatile: the compiler may not
        // narrow it to a byte `and`), so watchpoints see a fixed width.
        // SAFETY: the slot of a live object (checked by `meta`).
        unsafe { (s as *mut u64).write_volatile(self.read_word(s) & !1) };
        Ok(())
    }

    /// `load_attr_slow(obj, i)`: what an interpreter's LoadAttr does off the fast path.
    pub fn load_attr_slow(&mut self, obj: u64, i: u32) -> Result<i64, HostFault> {
        self.meta("load_attr_slow", obj)?;
        let word = self.read_word(self.slot(obj));
        match self.classify(obj, word) {
            Err(()) => fault("load_attr_slow", HostFaultKind::Corrupted, obj, word),
            Ok(WordIs::Empty) => Ok(0),
            Ok(WordIs::Dict(d)) => Ok(self
                .dicts
                .get(&d)
                .and_then(|a| a.get(&i))
                .copied()
                .unwrap_or(0)),
            Ok(WordIs::Values(v, n)) if i < n => {
                // SAFETY: i < n, inside the live values block.
                Ok(unsafe { ((v + 8 * i as u64) as *const i64).read() })
            }
            Ok(WordIs::Values(_, n)) => fault(
                "load_attr_slow",
                HostFaultKind::AttrRange,
                i as u64,
                n as u64,
            ),
        }
    }

    /// `store_attr_slow(obj, i, v)`.
    pub fn store_attr_slow(&mut self, obj: u64, i: u32, x: i64) -> Result<(), HostFault> {
        self.meta("store_attr_slow", obj)?;
        let word = self.read_word(self.slot(obj));
        match self.classify(obj, word) {
            Err(()) => fault("store_attr_slow", HostFaultKind::Corrupted, obj, word),
            Ok(WordIs::Empty) => {
                let d = self.new_dict(BTreeMap::from([(i, x)]))?;
                self.set_dict(obj, d);
                Ok(())
            }
            Ok(WordIs::Dict(d)) => {
                if let Some(a) = self.dicts.get_mut(&d) {
                    a.insert(i, x);
                }
                Ok(())
            }
            Ok(WordIs::Values(v, n)) if i < n => {
                // SAFETY: i < n, inside the live values block.
                unsafe { ((v + 8 * i as u64) as *mut i64).write(x) };
                Ok(())
            }
            Ok(WordIs::Values(_, n)) => fault(
                "store_attr_slow",
                HostFaultKind::AttrRange,
                i as u64,
                n as u64,
            ),
        }
    }

    /// Adds the dict slot of `obj` to the clobber watch list.
    /// A freed object is never watched (its memory may be the host's again).
    pub fn watch(&mut self, obj: u64) {
        if self.freed.contains_key(&obj) {
            return;
        }
        self.watch_slot(self.slot(obj), obj);
    }

    /// Does `[addr, addr + width)` overlap a watched 8-byte slot?
    pub fn overlaps_watched(&self, addr: u64, width: u32) -> bool {
        self.watched_owner(addr, width).is_some()
    }

    /// Number of live objects (for leak checks in tests).
    pub fn live_objects(&self) -> usize {
        self.objects.len()
    }
}

enum WordIs {
    Empty,
    Values(u64, u32),
    Dict(u64),
}

impl Drop for Heap {
    /// Takes this heap's marks out of the shadow and gives its memory back.
    fn drop(&mut self) {
        for &v in self.values.keys() {
            shadow::clear_capacity(v);
        }
        let slots: Vec<u64> = self.watched.keys().copied().collect();
        for slot in slots {
            self.unwatch_slot(slot);
        }
        let freed: Vec<u64> = self.freed.keys().copied().collect();
        for obj in freed {
            self.remove_freed(obj);
        }
        shadow::release_watch_id(self.watch_id);
        let starts: Vec<u64> = self.blocks.keys().copied().collect();
        for s in starts {
            self.dealloc(s);
        }
        for (size, raws) in self.spare.drain() {
            let Ok(l) = AllocLayout::from_size_align(size, BLOCK_ALIGN) else {
                continue;
            };
            for raw in raws {
                // SAFETY: a spare allocation of `size` bytes (`alloc_pair`'s
                // layout), in no block and in no other list.
                unsafe { alloc::dealloc(raw as *mut u8, l) };
            }
        }
    }
}

// SAFETY: the heap's addresses are plain integers; all access goes through &mut self
// (the runtime serializes it with a mutex).
unsafe impl Send for Heap {}

#[cfg(test)]
mod tests;
