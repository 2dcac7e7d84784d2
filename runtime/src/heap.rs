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

use crate::layout::{self, DictLayout};
use crate::report::LastWrite;
use crate::shadow;
use std::alloc::{self, Layout as AllocLayout};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Bytes of an object's body at and after its address (refcount, type word).
pub const OBJ_BODY_BYTES: i64 = 16;
/// Alignment of every heap block.
pub const BLOCK_ALIGN: usize = 16;
/// Bytes of a model dict object (its contents live on the Rust side).
pub const DICT_OBJECT_BYTES: usize = 16;
/// Largest attribute count `obj_new` accepts.
pub const MAX_OBJ_ATTRS: i64 = 1 << 20;
/// Magic in a model dict's first word.
pub const DICT_MAGIC: u64 = 0x6c67_5f64_6963_7421;
/// Default quarantine size (`quarantine_mb` of `GUARDLIFT_OPTIONS`).
pub const DEFAULT_QUARANTINE_MB: u64 = 64;
/// What a freed host object's record counts for in the quarantine (the
/// host owns its memory; the runtime keeps only the record).
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
}

#[derive(Debug)]
struct HeapBlock {
    size: usize,
    kind: BlockKind,
    /// The object this block belongs to (its pointer; 0 for none).
    owner: u64,
    /// In quarantine: the object was freed.
    freed: bool,
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
}

/// Provenance of an object the heap knows (live or in quarantine), in
/// runtime-global site ids.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    /// Allocation id (1, 2, 3, … per heap).
    pub id: u64,
    /// Where an IR `call @obj_new` made it.
    pub alloc_site: Option<u32>,
    /// Where an IR `call @obj_free` freed it.
    pub free_site: Option<u32>,
    /// The object was freed (it is in quarantine).
    pub freed: bool,
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
    /// The host function that failed.
    pub func: &'static str,
    /// What was wrong.
    pub msg: String,
}

fn fault<T>(func: &'static str, msg: String) -> Result<T, HostFault> {
    Err(HostFault { func, msg })
}

/// The model heap. Not synchronized: the runtime keeps it behind a mutex.
#[derive(Debug)]
pub struct Heap {
    layout: DictLayout,
    /// Every live block: start address → size and kind.
    blocks: BTreeMap<u64, HeapBlock>,
    objects: HashMap<u64, ObjMeta>,
    dicts: HashMap<u64, BTreeMap<u32, i64>>,
    /// Watched dict slots (clobber check): slot address → object.
    watched: BTreeMap<u64, u64>,
    /// The last known write to each dict slot (kept after a free, so a
    /// recycled address shows which object the write was to).
    last_write: HashMap<u64, LastWrite>,
    /// Live host objects by address.
    host: HashMap<u64, HostMeta>,
    /// Freed objects in quarantine, by object pointer.
    freed: HashMap<u64, FreedObj>,
    /// Quarantine order: (object, id), oldest first.
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
            objects: HashMap::new(),
            dicts: HashMap::new(),
            watched: BTreeMap::new(),
            last_write: HashMap::new(),
            host: HashMap::new(),
            freed: HashMap::new(),
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

    fn alloc(&mut self, size: usize, kind: BlockKind) -> Option<u64> {
        let size = size.max(8);
        let l = AllocLayout::from_size_align(size, BLOCK_ALIGN).ok()?;
        // SAFETY: size is non-zero.
        let p = unsafe { alloc::alloc_zeroed(l) };
        if p.is_null() {
            return None;
        }
        self.blocks.insert(
            p as u64,
            HeapBlock {
                size,
                kind,
                owner: 0,
                freed: false,
            },
        );
        Some(p as u64)
    }

    fn dealloc(&mut self, start: u64) {
        if let Some(b) = self.blocks.remove(&start) {
            if b.freed {
                shadow::set_freed_mem(start, b.size as u64, false);
            }
            if let Ok(l) = AllocLayout::from_size_align(b.size, BLOCK_ALIGN) {
                // SAFETY: allocated by `alloc` with this layout, removed from the map once.
                unsafe { alloc::dealloc(start as *mut u8, l) };
            }
        }
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

    /// `@obj_new(n)`: a values-tagged object with `n` zeroed attributes.
    pub fn obj_new(&mut self, n: i64) -> Result<u64, HostFault> {
        self.obj_new_at(n, None)
    }

    /// `@obj_new(n)` called at `site` (runtime-global), recorded as its allocation site.
    pub fn obj_new_at(&mut self, n: i64, site: Option<u32>) -> Result<u64, HostFault> {
        if !(0..=MAX_OBJ_ATTRS).contains(&n) {
            return fault(
                "obj_new",
                format!("attribute count {n} out of range 0..={MAX_OBJ_ATTRS}"),
            );
        }
        let off = self.layout.dict_slot_offset() as i64;
        let lo = off.min(0);
        let hi = (off + 8).max(OBJ_BODY_BYTES);
        let Some(base) = self.alloc((hi - lo) as usize, BlockKind::Object) else {
            return fault("obj_new", "out of memory".into());
        };
        let obj = base.wrapping_add((-lo) as u64);
        let header = layout::VALUES_HEADER_BYTES as usize;
        let Some(vblock) = self.alloc(header + n as usize * 8, BlockKind::Values) else {
            self.dealloc(base);
            return fault("obj_new", "out of memory".into());
        };
        let values = vblock + header as u64;
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
        self.note_write(obj, "obj_new", None, layout::values_word(values));
        self.watch_slot(self.slot(obj), obj);
        Ok(obj)
    }

    /// Registers an object the host made at `obj` (laid out as the heap's
    /// layout says): it gets the next allocation id. A freed object's
    /// record at the same address is dropped (the address was reused).
    pub fn register_host_object(&mut self, obj: u64) -> Result<u64, HostObjectError> {
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
        self.host.insert(obj, HostMeta { id });
        Ok(id)
    }

    /// The host freed the object at `obj`: it leaves the watch list and its
    /// record goes to quarantine (the host's memory is the host's: nothing
    /// is held or written). An address that was watched but never
    /// registered only leaves the watch list.
    pub fn host_object_freed(&mut self, obj: u64) -> Result<(), HostObjectError> {
        let was_watched = self.unwatch_slot(self.slot(obj));
        match self.host.remove(&obj) {
            Some(m) => {
                self.enqueue_freed(
                    obj,
                    FreedObj {
                        id: m.id,
                        alloc_site: None,
                        free_site: None,
                        blocks: Vec::new(),
                        bytes: HOST_RECORD_BYTES,
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
            });
        }
        if let Some(m) = self.host.get(&obj) {
            return Some(ObjectRecord {
                id: m.id,
                alloc_site: None,
                free_site: None,
                freed: false,
            });
        }
        self.freed.get(&obj).map(|f| ObjectRecord {
            id: f.id,
            alloc_site: f.alloc_site,
            free_site: f.free_site,
            freed: true,
        })
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
            None => fault(func, format!("{obj:#x} is not a live object")),
        }
    }

    fn new_dict(&mut self, attrs: BTreeMap<u32, i64>) -> Result<u64, HostFault> {
        let Some(d) = self.alloc(DICT_OBJECT_BYTES, BlockKind::Dict) else {
            return fault("dict", "out of memory".into());
        };
        self.write_word(d, DICT_MAGIC);
        self.dicts.insert(d, attrs);
        Ok(d)
    }

    /// What the host believes `word` is for `obj`.
    fn classify(&self, obj: u64, word: u64) -> Result<WordIs, String> {
        let m = self
            .objects
            .get(&obj)
            .ok_or_else(|| format!("{obj:#x} is not a live object"))?;
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
        Err(format!(
            "object {obj:#x}: managed-dict word {word:#x} (low bits {}) is neither its values array nor its dict: the word was corrupted",
            layout::low_bits(word)
        ))
    }

    /// [`crate::Runtime::attr_fixed`].
    pub fn attr_fixed(&self, obj: u64, max: u32) -> bool {
        let Some(m) = self.objects.get(&obj) else {
            return false;
        };
        let Some(v) = m.values else {
            return false;
        };
        if m.n_attrs <= max || self.read_word(self.slot(obj)) != layout::values_word(v) {
            return false;
        }
        let cap_addr = layout::capacity_word_addr(v);
        // SAFETY: the capacity word of the values block of a live object
        // of this heap.
        let capacity = unsafe { (cap_addr as *const u64).read() };
        capacity > max as u64
    }

    /// `@obj_dictify(obj)`: move the attributes into a dict and point the word at it.
    pub fn obj_dictify(&mut self, obj: u64) -> Result<(), HostFault> {
        self.meta("obj_dictify", obj)?;
        let word = self.read_word(self.slot(obj));
        match self.classify(obj, word) {
            Err(e) => fault("obj_dictify", e),
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
                self.dealloc(layout::capacity_word_addr(v));
                if let Some(m) = self.objects.get_mut(&obj) {
                    m.values = None;
                }
                self.set_dict(obj, d);
                Ok(())
            }
        }
    }

    fn set_dict(&mut self, obj: u64, d: u64) {
        if let Some(m) = self.objects.get_mut(&obj) {
            m.dict = Some(d);
        }
        if let Some(b) = self.blocks.get_mut(&d) {
            b.owner = obj;
        }
        crate::watch::runtime_write(|| self.write_word(self.slot(obj), d));
        self.note_write(obj, "the host's dict code", None, d);
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
            FreeOutcome::DoubleFree => fault(
                "obj_free",
                format!("{obj:#x} is not a live object (double free)"),
            ),
            FreeOutcome::Invalid => fault("obj_free", format!("{obj:#x} is not a live object")),
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
            Err(e) => fault("load_attr_slow", e),
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
                format!("attribute {i} of an object with {n}"),
            ),
        }
    }

    /// `store_attr_slow(obj, i, v)`.
    pub fn store_attr_slow(&mut self, obj: u64, i: u32, x: i64) -> Result<(), HostFault> {
        self.meta("store_attr_slow", obj)?;
        let word = self.read_word(self.slot(obj));
        match self.classify(obj, word) {
            Err(e) => fault("store_attr_slow", e),
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
                format!("attribute {i} of an object with {n}"),
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
    }
}

// SAFETY: the heap's addresses are plain integers; all access goes through &mut self
// (the runtime serializes it with a mutex).
unsafe impl Send for Heap {}

#[cfg(test)]
mod tests {
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
}
