//! The `guards` target's lifetime and bounds part (spec §6 `lifetime`,
//! `bounds`): a few fresh objects, and the input's sequence of frees and
//! uses of them run against a model of which objects are freed and what
//! their attributes hold.
//!
//! Each tested op is guarded (by hand, or by the pass with `lifetime` and
//! `bounds` on) and must report exactly when the model says: a use of a
//! freed object (`load_attr`, `store_attr`, `dict_slot.load`, a raw
//! `load`/`store` through the values pointer kept from before the free)
//! is `use_after_free`; a second free `double_free`; a free of an address
//! inside an object `invalid_free` (and the object stays live); an
//! attribute index at or past the capacity `attr_out_of_bounds`. The
//! trust shapes of issue 28 (each check decides from the runtime's
//! records, never from memory the program can rewrite): a raw store
//! forging the capacity word (`values - 8`) to more than the attribute
//! ops reach, which must still be out of bounds by the recorded
//! capacity; `obj_dictify`, after which the values pointer kept from
//! before is a pointer into a released array (`use_after_free`) and the
//! attribute ops take the dict slow path (any index a key); raw accesses
//! touching the redzones before and after the values array and the
//! object's block (`heap_overflow`). In
//! recover mode the op is skipped (loads give 0), which the model checks
//! through the values printed; at the end every attribute of every object
//! still live is read back (an out-of-bounds store that was not skipped
//! would have written a neighbour's).

use super::{canary, Fire, Want, B, MAX_LIFE_OPS};
use arbitrary::{Arbitrary, Unstructured};
use guardlift_ir::{BinOp, ExternId, Type, Value};
use guardlift_runtime::heap::REDZONE_BYTES;
use guardlift_runtime::layout::{self, DictLayout};
use guardlift_runtime::ReportKind;

/// Objects the lifetime part allocates.
const LIFE_OBJS: usize = 3;

/// One op of the lifetime part, on object `k % 3`; attribute indices of
/// `load_attr`/`store_attr` go up to two past the capacity, those of raw
/// accesses stay inside the values array.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum LifeOp {
    /// `call @obj_free` of the object.
    Free(u8),
    /// `call @obj_free` of the object's address plus 8 (not an object).
    FreeInterior(u8),
    /// `load_attr` of attribute `i`.
    LoadAttr(u8, u8),
    /// `store_attr` to attribute `i`.
    StoreAttr(u8, u8),
    /// `dict_slot.load`.
    SlotLoad(u8),
    /// A raw `load` of attribute `i` through the values pointer.
    RawLoad(u8, u8),
    /// A raw `store` to attribute `i` through the values pointer.
    RawStore(u8, u8),
    /// A raw `store` of a forged capacity (`capacity + 2 + x % 8`: past
    /// every index the attribute ops use) into the capacity word at
    /// `values - 8`, read back raw; the bounds checks must go on comparing
    /// with the recorded capacity. Through a released or freed array: a
    /// `use_after_free`.
    ForgeCapacity(u8, u8),
    /// `call @obj_dictify` of a live object: its values array is released
    /// (quarantined, the call its free site); the attributes move to a
    /// dict, which the attribute ops then reach through the slow path.
    Dictify(u8),
    /// A raw access on object `k` touching a redzone (`where % 6`: just past the values
    /// array, the end of its redzone, just before its capacity word, the
    /// start of the redzone before it, just past the object's block, just
    /// before it) of `1`, `4` or `8` bytes (`width % 3`), a store or a load:
    /// `heap_overflow`.
    Redzone(u8, u8, u8, bool),
}

impl LifeOp {
    /// The op family, as `tests/coverage.rs` prints it.
    pub fn family(self) -> &'static str {
        match self {
            LifeOp::Free(_) => "life.free",
            LifeOp::FreeInterior(_) => "life.free_interior",
            LifeOp::LoadAttr(..) => "life.load_attr",
            LifeOp::StoreAttr(..) => "life.store_attr",
            LifeOp::SlotLoad(_) => "life.dict_slot_load",
            LifeOp::RawLoad(..) => "life.raw_load",
            LifeOp::RawStore(..) => "life.raw_store",
            LifeOp::ForgeCapacity(..) => "life.forge_capacity",
            LifeOp::Dictify(_) => "life.dictify",
            LifeOp::Redzone(..) => "life.redzone",
        }
    }
}

/// The lifetime part's ops of an input: a count byte (at most
/// `MAX_LIFE_OPS`), then that many ops.
pub(super) fn arbitrary_ops(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<LifeOp>> {
    let n = u.arbitrary::<u8>()? as usize % (MAX_LIFE_OPS + 1);
    (0..n).map(|_| u.arbitrary()).collect()
}

/// The model of one object: freed or not, dictified or not, and its attributes.
struct Obj {
    v: Value,
    /// The values pointer (`dict word + 1`), taken while the object was live.
    values: Value,
    freed: bool,
    /// `obj_dictify` released its values array: attribute ops take the
    /// slow path (no bounds), raw accesses through `values` are uses of
    /// a released array.
    dictified: bool,
    /// The capacity `obj_new` recorded.
    capacity: u32,
    /// Its attributes: `capacity` of them, or, once dictified, every key
    /// the attribute ops reach (`capacity + 2`; absent keys read 0).
    attrs: Vec<i64>,
}

/// The externs the lifetime part calls.
pub(super) struct Externs {
    pub obj_new: ExternId,
    pub obj_free: ExternId,
    pub obj_dictify: ExternId,
}

/// Emits the lifetime part: `LIFE_OBJS` objects of `1 + nattrs % 4`
/// attributes, then `ops`, then the read-back of the live objects.
pub(super) fn emit(b: &mut B, ext: &Externs, layout: DictLayout, nattrs: u8, ops: &[LifeOp]) {
    let nattrs = 1 + (nattrs % 4) as u32;
    let mut objs: Vec<Obj> = (0..LIFE_OBJS).map(|k| new_obj(b, ext, k, nattrs)).collect();
    for (step, &op) in ops.iter().enumerate() {
        emit_op(b, ext, layout, &mut objs, nattrs, step, op);
    }
    for o in objs.iter().filter(|o| !o.freed) {
        for (i, &x) in o.attrs.iter().enumerate() {
            b.n += 1;
            let r = b.fb.load_attr(o.v, i as u32);
            let c = b.c(Type::I64, x);
            b.print_eq(r, c);
        }
    }
}

/// Object `k`: allocated, every attribute set, its values pointer taken.
fn new_obj(b: &mut B, ext: &Externs, k: usize, nattrs: u32) -> Obj {
    let n = b.c(Type::I64, nattrs as i64);
    b.n += 1;
    let v = b.fb.call(ext.obj_new, &[n]).expect("obj_new returns");
    let attrs: Vec<i64> = (0..nattrs)
        .map(|i| canary(8 + k, 0x300 + i as i64))
        .collect();
    for (i, &x) in attrs.iter().enumerate() {
        let c = b.c(Type::I64, x);
        b.n += 1;
        b.fb.store_attr(v, i as u32, c);
    }
    // A fresh object's word is values-tagged: the array is at word + 1.
    b.n += 1;
    let word = b.fb.dict_slot_load(v);
    let one = b.c(Type::I64, 1);
    let values = b.bin(BinOp::Iadd, word, one);
    Obj {
        v,
        values,
        freed: false,
        dictified: false,
        capacity: nattrs,
        attrs,
    }
}

/// What a use of `o` at attribute `i` (`None`: not an attribute access)
/// must report: `use_after_free` when freed, else `attr_out_of_bounds`
/// when `i` is at or past the capacity.
fn use_fire(o: &Obj, k: usize, i: Option<u32>, raw: bool) -> Option<Fire> {
    // A raw access through the values pointer of a dictified object is in
    // its released array.
    if o.freed || (raw && o.dictified) {
        let width = if raw { 8 } else { 0 };
        let want = Want::Life {
            obj: k,
            delta: 0,
            raw,
            width,
        };
        return Some((ReportKind::UseAfterFree, want));
    }
    let i = i?;
    // In dict mode any index is a key of the slow path.
    let capacity = o.capacity;
    (!o.dictified && i >= capacity).then_some((
        ReportKind::AttrOutOfBounds,
        Want::Bounds {
            obj: k,
            index: i as u64,
            capacity: capacity as u64,
        },
    ))
}

/// Prints whether `r`, a load of attribute `i` of `o`, is what the
/// model holds (0 when the guard fired: the load was skipped).
fn expect_loaded(b: &mut B, r: Value, fire: Option<Fire>, o: &Obj, i: u32) {
    let want = match fire {
        Some(_) => 0,
        None => o.attrs[i as usize],
    };
    let c = b.c(Type::I64, want);
    b.print_eq(r, c);
}

/// Emits one op, updates the model and records what it must report and print.
fn emit_op(
    b: &mut B,
    ext: &Externs,
    layout: DictLayout,
    objs: &mut [Obj],
    nattrs: u32,
    step: usize,
    op: LifeOp,
) {
    let (LifeOp::Free(k)
    | LifeOp::FreeInterior(k)
    | LifeOp::LoadAttr(k, _)
    | LifeOp::StoreAttr(k, _)
    | LifeOp::SlotLoad(k)
    | LifeOp::RawLoad(k, _)
    | LifeOp::RawStore(k, _)
    | LifeOp::ForgeCapacity(k, _)
    | LifeOp::Dictify(k)
    | LifeOp::Redzone(k, ..)) = op;
    let k = k as usize % LIFE_OBJS;
    let o = &mut objs[k];
    // Attribute indices: up to two past the capacity for attribute ops,
    // inside the array for raw ones.
    let attr = |i: u8| i as u32 % (nattrs + 2);
    let raw_attr = |i: u8| i as u32 % nattrs;
    let value = canary(8 + k, 0x400 + step as i64);
    match op {
        LifeOp::Free(_) => {
            b.n += 1;
            b.fb.call(ext.obj_free, &[o.v]);
            let fire = o.freed.then_some((
                ReportKind::DoubleFree,
                Want::Life {
                    obj: k,
                    delta: 0,
                    raw: false,
                    width: 0,
                },
            ));
            b.test(fire);
            o.freed = true;
        }
        LifeOp::FreeInterior(_) => {
            let eight = b.c(Type::I64, 8);
            let p = b.bin(BinOp::Iadd, o.v, eight);
            b.n += 1;
            b.fb.call(ext.obj_free, &[p]);
            b.test(Some((
                ReportKind::InvalidFree,
                Want::Life {
                    obj: k,
                    delta: 8,
                    raw: false,
                    width: 0,
                },
            )));
        }
        LifeOp::LoadAttr(_, i) | LifeOp::RawLoad(_, i) => {
            // Through `load_attr`, or a raw load from the values array.
            let raw = matches!(op, LifeOp::RawLoad(..));
            let i = if raw { raw_attr(i) } else { attr(i) };
            b.n += 1;
            let r = if raw {
                b.fb.load(Type::I64, o.values, 8 * i as i32)
            } else {
                b.fb.load_attr(o.v, i)
            };
            let fire = use_fire(o, k, (!raw).then_some(i), raw);
            b.test(fire);
            expect_loaded(b, r, fire, o, i);
        }
        LifeOp::StoreAttr(_, i) | LifeOp::RawStore(_, i) => {
            let raw = matches!(op, LifeOp::RawStore(..));
            let i = if raw { raw_attr(i) } else { attr(i) };
            let c = b.c(Type::I64, value);
            b.n += 1;
            if raw {
                b.fb.store(c, o.values, 8 * i as i32);
            } else {
                b.fb.store_attr(o.v, i, c);
            }
            let fire = use_fire(o, k, (!raw).then_some(i), raw);
            b.test(fire);
            if fire.is_none() {
                o.attrs[i as usize] = value;
            }
        }
        LifeOp::ForgeCapacity(_, x) => forge_capacity(b, o, k, x),
        LifeOp::Dictify(_) => {
            if o.freed {
                return;
            }
            b.n += 1;
            b.fb.call(ext.obj_dictify, &[o.v]);
            if !o.dictified {
                // The dict holds the attributes; the keys past them read 0.
                o.attrs.resize(o.capacity as usize + 2, 0);
                o.dictified = true;
            }
        }
        LifeOp::Redzone(_, at, width, store) => redzone(b, layout, o, at, width, store, value),
        LifeOp::SlotLoad(_) => {
            b.n += 1;
            let w = b.fb.dict_slot_load(o.v);
            let fire = use_fire(o, k, None, false);
            b.test(fire);
            // The word's low bits: the values tag, the dict's 0, or 0
            // (the skipped load).
            let seven = b.c(Type::I64, 7);
            let low = b.bin(BinOp::Band, w, seven);
            let live_low = if o.dictified { 0 } else { 7 };
            let c = b.c(Type::I64, if fire.is_some() { 0 } else { live_low });
            b.print_eq(low, c);
        }
    }
}

/// [`LifeOp::ForgeCapacity`] on object `k`: a raw store into the
/// capacity word. On a live array it is not guarded by hand (a
/// hand-written guard of a store also checks `clobber`, which refuses a
/// watched object's capacity word) and must not report under the pass's
/// `lifetime,bounds` (the word is inside the array's block); the raw read
/// back sees the forged word. Through a released or freed array it is a
/// `use_after_free`, skipped.
fn forge_capacity(b: &mut B, o: &mut Obj, k: usize, x: u8) {
    let forged = (o.capacity + 2 + (x % 8) as u32) as i64;
    let c = b.c(Type::I64, forged);
    b.n += 1;
    b.fb.store(c, o.values, CAP);
    if o.freed || o.dictified {
        let want = Want::Life {
            obj: k,
            delta: 0,
            raw: true,
            width: 8,
        };
        b.test(Some((ReportKind::UseAfterFree, want)));
        return;
    }
    b.n += 1;
    let r = b.fb.load(Type::I64, o.values, CAP);
    let c = b.c(Type::I64, forged);
    b.print_eq(r, c);
}

/// [`LifeOp::Redzone`] on object `k` (live; the values array's redzones
/// only while it has one: a dictified object's accesses go to its
/// block's redzones): a raw access touching a redzone, `heap_overflow`,
/// skipped (a load gives 0).
fn redzone(b: &mut B, layout: DictLayout, o: &Obj, at: u8, width: u8, store: bool, value: i64) {
    if o.freed {
        return;
    }
    let (ty, w) = [(Type::I8, 1), (Type::I32, 4), (Type::I64, 8)][(width % 3) as usize];
    let at = if o.dictified { 4 + at % 2 } else { at % 6 };
    let end = 8 * o.capacity as i32;
    let off = layout.dict_slot_offset();
    let (lo, hi) = (off.min(0), (off + 8).max(16));
    let (base, off) = match at {
        0 => (o.values, end),
        1 => (o.values, end + REDZONE - w),
        2 => (o.values, CAP - w),
        3 => (o.values, CAP - REDZONE),
        4 => (o.v, hi),
        _ => (o.v, lo - w),
    };
    let stored = if store {
        let c = b.c(ty, value);
        b.n += 1;
        b.fb.store(c, base, off);
        Some(value as u64 & (u64::MAX >> (64 - 8 * w as u32)))
    } else {
        None
    };
    if !store {
        b.n += 1;
        let r = b.fb.load(ty, base, off);
        b.test(Some(overflow(w as u32, None)));
        let z = b.c(ty, 0);
        b.print_eq(r, z);
        return;
    }
    b.test(Some(overflow(w as u32, stored)));
}

/// A `heap_overflow` of `width` bytes (`value`: what a store wrote).
fn overflow(width: u32, value: Option<u64>) -> Fire {
    (ReportKind::HeapOverflow, Want::Overflow { width, value })
}

/// Bytes of the heap's redzones (spec §6: at least 16).
const REDZONE: i32 = REDZONE_BYTES as i32;

/// The capacity word's offset from the values pointer (spec §4).
const CAP: i32 = layout::VALUES_CAPACITY_OFFSET;
