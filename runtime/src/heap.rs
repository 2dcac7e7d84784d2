//! The model heap behind the built-in host functions of spec §7.
//!
//! Objects are real memory laid out byte for byte as the [`DictLayout`] says,
//! so JIT code and the interpreter read the same words. The heap keeps its own
//! record of every block it handed out; the slow paths trust that record, never
//! the (possibly corrupted) words in memory, to decide what a word points to.

use crate::layout::{self, DictLayout};
use crate::report::LastWrite;
use std::alloc::{self, Layout as AllocLayout};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// What a heap block is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Object,
    Values,
    Dict,
}

#[derive(Debug)]
struct HeapBlock {
    size: usize,
    kind: BlockKind,
}

#[derive(Debug)]
struct ObjMeta {
    /// Start of the allocation (≤ obj).
    base: u64,
    n_attrs: u32,
    values: Option<u64>,
    dict: Option<u64>,
}

/// A host-side failure: the host was asked to do something impossible
/// (a corrupted word reached a slow path, a double free, ...). In a real
/// interpreter this is where the crash would be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{func}: {msg}")]
pub struct HostFault {
    pub func: &'static str,
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
    /// Addresses of watched dict slots (clobber check).
    watched: BTreeSet<u64>,
    /// The last known write to each live object's dict slot.
    last_write: HashMap<u64, LastWrite>,
}

impl Heap {
    pub fn new(layout: DictLayout) -> Self {
        Heap {
            layout,
            blocks: BTreeMap::new(),
            objects: HashMap::new(),
            dicts: HashMap::new(),
            watched: BTreeSet::new(),
            last_write: HashMap::new(),
        }
    }

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
        self.blocks.insert(p as u64, HeapBlock { size, kind });
        Some(p as u64)
    }

    fn dealloc(&mut self, start: u64) {
        if let Some(b) = self.blocks.remove(&start) {
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
        let Some(values) = self.alloc(n as usize * 8, BlockKind::Values) else {
            self.dealloc(base);
            return fault("obj_new", "out of memory".into());
        };
        // Body: word 0 refcount 1, word 1 the attribute count (a stand-in for ob_type).
        // SAFETY: both words lie inside the object block just allocated.
        unsafe {
            (obj as *mut u64).write(1);
            ((obj + 8) as *mut u64).write(n as u64);
        }
        self.write_word(self.slot(obj), layout::values_word(values));
        self.note_write(self.slot(obj), "obj_new", None, layout::values_word(values));
        self.objects.insert(
            obj,
            ObjMeta {
                base,
                n_attrs: n as u32,
                values: Some(values),
                dict: None,
            },
        );
        self.watched.insert(self.slot(obj));
        Ok(obj)
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
                self.dealloc(v);
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
        crate::watch::runtime_write(|| self.write_word(self.slot(obj), d));
        self.note_write(self.slot(obj), "the host's dict code", None, d);
    }

    /// Records the last known write to the slot at `slot`.
    pub fn note_write(&mut self, slot: u64, by: &str, site: Option<u32>, value: u64) {
        self.last_write.insert(
            slot,
            LastWrite {
                by: by.to_string(),
                site,
                value,
            },
        );
    }

    /// The last known write to the slot at `slot`.
    pub fn last_write(&self, slot: u64) -> Option<LastWrite> {
        self.last_write.get(&slot).cloned()
    }

    /// `@obj_free(obj)`.
    pub fn obj_free(&mut self, obj: u64) -> Result<(), HostFault> {
        let Some(m) = self.objects.remove(&obj) else {
            return fault(
                "obj_free",
                format!("{obj:#x} is not a live object (double free?)"),
            );
        };
        self.watched.remove(&self.slot(obj));
        self.last_write.remove(&self.slot(obj));
        if let Some(v) = m.values {
            self.dealloc(v);
        }
        if let Some(d) = m.dict {
            self.dicts.remove(&d);
            self.dealloc(d);
        }
        self.dealloc(m.base);
        Ok(())
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
    pub fn watch(&mut self, obj: u64) {
        self.watched.insert(self.slot(obj));
    }

    /// Does `[addr, addr + width)` overlap a watched 8-byte slot?
    pub fn overlaps_watched(&self, addr: u64, width: u32) -> bool {
        let lo = addr.saturating_sub(layout::DICT_WORD_BYTES as u64 - 1);
        let hi = addr.saturating_add(width as u64);
        self.watched.range(lo..hi).next().is_some()
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
    fn drop(&mut self) {
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
        }
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
