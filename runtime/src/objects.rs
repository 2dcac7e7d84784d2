//! Objects of the model heap and the object checks: the built-ins that
//! make and free them (`obj_new`, `obj_dictify`, `obj_free`, spec §7, with
//! their sites), what the watchpoints are told of them, and the lifetime,
//! bounds and redzone checks generated code and the interpreter call. An
//! `impl Runtime` block of its own, above [`crate::runtime`] like `abi` and
//! `fault`.

use crate::heap::FreeOutcome;
use crate::report::{Observed, ReportKind};
use crate::runtime::RuntimeInternals;
use crate::runtime::{lifetime_at, lock, Runtime, Verdict};
use crate::watch;
use std::sync::atomic::Ordering;

impl Runtime {
    /// Tells the watchpoints about a new object (by its allocation id;
    /// `host`: registered by the host, perhaps before its initialisation).
    pub(crate) fn object_created(&self, obj: u64, host: bool) {
        if obj == 0 || !watch::active() {
            return;
        }
        if let Some(r) = self.object_record(obj) {
            watch::on_object_created(self.watch_owner(), r.id, obj, host);
        }
    }

    /// IR code uses `obj` (a host object's initialisation is over).
    #[inline]
    pub(crate) fn object_used(&self, obj: u64) {
        if watch::active() {
            watch::on_object_used(obj);
        }
    }

    /// Tells the watchpoints an object goes (before its memory may be reused).
    pub(crate) fn object_going(&self, obj: u64) {
        if watch::active() {
            watch::on_object_freed(self.watch_owner(), obj);
        }
    }

    fn obj_dictify_site(&self, obj: u64, site: Option<u32>) {
        let r = lock(&self.heap).obj_dictify_at(obj, site);
        // The released values array is quarantined memory: the lifetime
        // checks' epoch moves as for a free (and the capacity word left
        // the watch list).
        self.unwatch_epoch.fetch_add(1, Ordering::SeqCst);
        self.values_epoch.fetch_add(1, Ordering::SeqCst);
        self.host(r, obj)
    }
}

/// The model heap's object built-ins (`obj_new`, `obj_dictify`,
/// `obj_free`, spec §7) and the object checks (lifetime, bounds, redzones,
/// stack areas) that generated code reaches through [`crate::abi`] and the
/// interpreter calls directly. Internals like [`crate::runtime::RuntimeInternals`]
/// (see [`crate::internals`]).
pub trait ObjectBuiltins {
    /// `@obj_new(n)`: a new object with `n` attribute values.
    fn obj_new(&self, n: i64) -> u64;

    /// `@obj_dictify(obj)`: gives `obj` a real dict.
    fn obj_dictify(&self, obj: u64);

    /// `@obj_dictify(obj)` at a guarded call: `site` (runtime-global) is
    /// the free site of the values array it releases (in quarantine).
    fn obj_dictify_at(&self, obj: u64, site: u32);

    /// `@obj_free(obj)`: frees `obj` (reports a double or invalid free).
    fn obj_free(&self, obj: u64);

    /// `@obj_new(n)` at a guarded call: `site` (runtime-global) is recorded
    /// as the object's allocation site.
    fn obj_new_at(&self, n: i64, site: u32) -> u64;

    /// `@obj_free(obj)` under the lifetime check at `site`: a live object
    /// goes to quarantine; a freed one is a `double_free`, anything else an
    /// `invalid_free` (reported; the free is ignored). `Err` carries the
    /// verdict of a report.
    fn obj_free_at(&self, obj: u64, site: u32) -> Result<(), Verdict>;

    /// The lifetime check of an object op (`load_attr`, `store_attr`,
    /// `dict_slot.*`) at `site`: `Ok` when `obj` is not a freed object
    /// (live, or unknown to the runtime); else `use_after_free` is reported.
    /// Takes no lock while nothing was ever freed.
    fn check_live(&self, obj: u64, site: u32) -> Result<(), Verdict>;

    /// The entry test of a clean loop that makes the bounds tests of `obj`
    /// once (`guardlift_ir::hoist`, `CleanLoop::attrs`): is `obj` a live
    /// object of this runtime whose managed-dict word is its own values
    /// array, holding more than `max` attributes in the runtime's record
    /// and in the capacity word in memory? Reads only the memory of a live
    /// object, whatever the word says; false for anything else (a host
    /// object, a dict, a foreign word), which keeps the loop checked.
    fn attr_fixed(&self, obj: u64, max: u32) -> bool;

    /// The lifetime check of a raw `load`/`store` of `width` bytes at
    /// `addr`: `use_after_free` when the bytes fall in a quarantined
    /// object's memory (header, dict slot, values array).
    fn check_mem(&self, addr: u64, width: u32, site: u32) -> Result<(), Verdict>;

    /// The bounds check of attribute `index` of `obj`, whose word points
    /// to the values array at `values`: against the capacity the runtime
    /// recorded for that array (`Heap::recorded_capacity`; 0 for an array
    /// it does not know), never the capacity word in memory. `Err` carries
    /// the verdict of the `attr_out_of_bounds` report.
    fn check_bounds(&self, site: u32, obj: u64, values: u64, index: u64) -> Result<(), Verdict>;

    /// The bounds check of a raw `load`/`store` of `width` bytes at `addr`
    /// (`value`: what a store writes): `heap_overflow` when the bytes touch
    /// a redzone of the model heap. `Err` carries the report's verdict.
    fn check_redzone(
        &self,
        addr: u64,
        width: u32,
        site: u32,
        value: Option<u64>,
    ) -> Result<(), Verdict>;

    /// A `stack_alloc` area of native code (a JIT frame's slot, `size`
    /// bytes at `addr`, with a pad of `REDZONE_BYTES` on each side): its
    /// pads are redzones, checked as any heap block's, until
    /// [`Runtime::stack_area_gone`] — what the interpreter's areas, heap
    /// blocks, have (spec §3.1, docs/IR.md).
    fn stack_area(&self, addr: u64, size: u32);

    /// The function that made the area at `addr` returns.
    fn stack_area_gone(&self, addr: u64, size: u32);

    /// Reports `attr_out_of_bounds`: `index` ≥ the values array's `capacity`.
    fn report_bounds(&self, site: u32, obj: u64, index: u64, capacity: u64) -> Verdict;
}

impl ObjectBuiltins for Runtime {
    fn obj_new(&self, n: i64) -> u64 {
        let r = lock(&self.heap).obj_new(n);
        let obj = self.host(r, 0);
        self.object_created(obj, false);
        obj
    }

    fn obj_dictify(&self, obj: u64) {
        self.obj_dictify_site(obj, None)
    }

    fn obj_dictify_at(&self, obj: u64, site: u32) {
        self.obj_dictify_site(obj, Some(site))
    }

    fn obj_free(&self, obj: u64) {
        self.object_going(obj);
        let mut heap = lock(&self.heap);
        let r = heap.obj_free(obj);
        // Freeing is the only way a slot leaves the watch list.
        self.unwatch_epoch.fetch_add(1, Ordering::SeqCst);
        self.values_epoch.fetch_add(1, Ordering::SeqCst);
        drop(heap);
        self.host(r, obj)
    }

    fn obj_new_at(&self, n: i64, site: u32) -> u64 {
        let r = lock(&self.heap).obj_new_at(n, Some(site));
        let obj = self.host(r, 0);
        self.object_created(obj, false);
        obj
    }

    fn obj_free_at(&self, obj: u64, site: u32) -> Result<(), Verdict> {
        if self.object_record(obj).is_some_and(|r| !r.freed) {
            self.object_going(obj);
        }
        let outcome = lock(&self.heap).obj_free_at(obj, Some(site));
        let kind = match outcome {
            FreeOutcome::Freed => {
                self.unwatch_epoch.fetch_add(1, Ordering::SeqCst);
                self.values_epoch.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            FreeOutcome::DoubleFree => ReportKind::DoubleFree,
            FreeOutcome::Invalid => ReportKind::InvalidFree,
        };
        Err(self.report(kind, site, lifetime_at(obj, obj, 0)))
    }

    fn check_live(&self, obj: u64, site: u32) -> Result<(), Verdict> {
        self.object_used(obj);
        if self.unwatch_epoch() == 0 || !lock(&self.heap).is_freed(obj) {
            return Ok(());
        }
        Err(self.report(ReportKind::UseAfterFree, site, lifetime_at(obj, obj, 0)))
    }

    fn attr_fixed(&self, obj: u64, max: u32) -> bool {
        self.note_attr_fixed_call();
        // The epoch first: a fill made from an answer the heap gave after
        // it moved again is stale at once (`crate::fixed_cache`).
        let epoch = self.values_epoch.load(Ordering::SeqCst);
        if let Some((word, n)) = self.fixed_cache.lookup(obj, epoch) {
            let slot = self.layout().slot_addr(obj);
            // SAFETY: the heap knew `obj` as a live object when it filled
            // the entry, and the values epoch has not moved since: no
            // object went, so its slot is still readable.
            if unsafe { (slot as *const u64).read_unaligned() } == word {
                return n > u64::from(max);
            }
        }
        let heap = lock(&self.heap);
        let rec = heap.fixed_record(obj);
        if let Some((word, n)) = rec {
            self.fixed_cache.fill(obj, word, n, epoch);
        }
        rec.is_some_and(|(_, n)| n > u64::from(max))
    }

    fn check_mem(&self, addr: u64, width: u32, site: u32) -> Result<(), Verdict> {
        if self.unwatch_epoch() == 0 {
            return Ok(());
        }
        let owner = lock(&self.heap).freed_memory_owner(addr, width as u64);
        match owner {
            None => Ok(()),
            Some(obj) => Err(self.report(
                ReportKind::UseAfterFree,
                site,
                lifetime_at(obj, addr, width.max(1)),
            )),
        }
    }

    fn check_bounds(&self, site: u32, obj: u64, values: u64, index: u64) -> Result<(), Verdict> {
        let mut heap = lock(&self.heap);
        let capacity = match heap.recorded_capacity(obj, values) {
            Some(c) => c,
            // An object the runtime never made and was never told of (a
            // host that does not register its objects): there is no record
            // to check against, and, as ASan on memory it does not know,
            // no report. Register host objects to have them checked.
            None if !heap.knows_object(obj) => return Ok(()),
            // A known object whose word points to an array the runtime does
            // not know (a forged or stray word): capacity 0.
            None => 0,
        };
        drop(heap);
        if index < capacity {
            return Ok(());
        }
        Err(self.report_bounds(site, obj, index, capacity))
    }

    fn check_redzone(
        &self,
        addr: u64,
        width: u32,
        site: u32,
        value: Option<u64>,
    ) -> Result<(), Verdict> {
        if lock(&self.heap).redzone_owner(addr, width as u64).is_none() {
            return Ok(());
        }
        let observed = Observed::Overflow {
            address: addr,
            width: width.max(1),
            value,
        };
        Err(self.report(ReportKind::HeapOverflow, site, observed))
    }

    fn stack_area(&self, addr: u64, size: u32) {
        lock(&self.heap).native_stack_area(addr, size)
    }

    fn stack_area_gone(&self, addr: u64, size: u32) {
        lock(&self.heap).native_stack_area_gone(addr, size)
    }

    fn report_bounds(&self, site: u32, obj: u64, index: u64, capacity: u64) -> Verdict {
        self.report(
            ReportKind::AttrOutOfBounds,
            site,
            Observed::Bounds {
                object: obj,
                index,
                capacity,
            },
        )
    }
}
