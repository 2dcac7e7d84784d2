//! A lock-free memo of [`crate::internals::ObjectBuiltins::attr_fixed`]'s
//! successes: the answer without the heap's mutex for an object asked
//! about before, while nothing has gone since.
//!
//! A loop's entry test asks `attr_fixed` for each object whose attributes
//! the clean copy fixes whenever the loop's own inline cache misses — at
//! every entry of a loop called with more receivers than that cache has
//! ways (docs/PERFORMANCE.md, "A megamorphic call site"). The heap's mutex
//! (a locked compare-and-swap and a release) was three quarters of such a
//! call; the JIT now probes this memo inline before it calls at all
//! (`jit/src/lower/entrycache.rs`), reading the layout the contract fixes
//! (`guardlift_abi::offsets::FIXED_MEMO_*`): sets of two ways (an object
//! is in one of its set's; with one way, two receivers of a call site
//! sharing an entry — one run in ten with eight receivers — evicted each
//! other at every entry), each way a cache line. Each entry here holds
//! `(object, its values word, its attribute count, values epoch)` from a
//! success, written under the heap's lock (so
//! one writer at a time) with a sequence number around the writes (a
//! seqlock: a reader that saw the number change retries nothing, it just
//! asks the heap). An entry answers while the runtime's values epoch is
//! the one it was filled at — no object went and no values array was
//! released since, so the object is still the live heap object it was and
//! its slot readable — and the object's word is still the values word
//! recorded: exactly when the heap would answer the same (the record
//! alone decides there too; attribute counts never change). A free on
//! another thread between the heap's change and the epoch's move is the
//! window the JIT's own entry cache has too: another thread freeing a
//! loop's object while it is entered is outside the claims
//! (`guardlift_ir::hoist`).

use guardlift_abi::offsets::{
    fixed_memo_set, FIXED_MEMO_ENTRIES as ENTRIES, FIXED_MEMO_ENTRY_BYTES_LOG2, FIXED_MEMO_WAYS,
};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// One entry, as the JIT's loop entries read it too (the contract's
/// `FIXED_MEMO_*` offsets, pinned by a test below).
#[derive(Default, Debug)]
#[repr(C, align(64))]
struct Entry {
    /// Odd while a write is under way; +2 per write.
    seq: AtomicU64,
    obj: AtomicU64,
    word: AtomicU64,
    n_attrs: AtomicU64,
    epoch: AtomicU64,
    /// In a set's first entry only: the way the next fill of a new object
    /// replaces when both hold one (written and read under the heap's
    /// lock; generated code never reads it).
    victim: AtomicU64,
}
const _: () = assert!(std::mem::size_of::<Entry>() == 1 << FIXED_MEMO_ENTRY_BYTES_LOG2);

/// See the module doc.
#[derive(Debug)]
pub(crate) struct FixedCache {
    entries: Box<[Entry]>,
}

impl Default for FixedCache {
    fn default() -> Self {
        FixedCache {
            entries: (0..ENTRIES).map(|_| Entry::default()).collect(),
        }
    }
}

impl FixedCache {
    /// The address of the first entry, fixed for the memo's life: what the
    /// runtime holds at `FIXED_MEMO_OFFSET` for generated code, which
    /// probes the memo as [`Self::lookup`] does (the way whose object is
    /// `obj`, then an acquire load of each of its fields in turn, the
    /// sequence number first and last).
    pub(crate) fn base(&self) -> u64 {
        self.entries.as_ptr() as u64
    }

    /// The ways of the set of `obj`.
    fn set(&self, obj: u64) -> &[Entry] {
        let first = fixed_memo_set(obj) * FIXED_MEMO_WAYS;
        &self.entries[first..first + FIXED_MEMO_WAYS]
    }

    /// `(values word, attribute count)` of a success for `obj` filled at
    /// values epoch `epoch`, if a way of its set holds one (read
    /// consistently).
    pub(crate) fn lookup(&self, obj: u64, epoch: u64) -> Option<(u64, u64)> {
        let set = self.set(obj);
        // The way that names `obj` (a hint: read again under the sequence
        // number below).
        let e = set.iter().find(|e| e.obj.load(Ordering::Relaxed) == obj)?;
        let s = e.seq.load(Ordering::Acquire);
        // Never filled (0: its zeroes would answer for the null pointer)
        // or a write under way (odd).
        if s == 0 || s & 1 != 0 {
            return None;
        }
        let (o, word, n, ep) = (
            e.obj.load(Ordering::Relaxed),
            e.word.load(Ordering::Relaxed),
            e.n_attrs.load(Ordering::Relaxed),
            e.epoch.load(Ordering::Relaxed),
        );
        fence(Ordering::Acquire);
        let unchanged = e.seq.load(Ordering::Relaxed) == s;
        (unchanged && o == obj && ep == epoch).then_some((word, n))
    }

    /// Records a success for `obj` (its values word and attribute count)
    /// at values epoch `epoch`, read before the heap was asked, in the way
    /// of its set that holds `obj`, else in one never filled, else in the
    /// set's victim (the ways in turn). Callers hold the heap's lock: one
    /// writer at a time.
    pub(crate) fn fill(&self, obj: u64, word: u64, n_attrs: u64, epoch: u64) {
        let set = self.set(obj);
        let way = (set.iter())
            .position(|e| e.obj.load(Ordering::Relaxed) == obj)
            .or_else(|| set.iter().position(|e| e.seq.load(Ordering::Relaxed) == 0))
            .unwrap_or_else(|| {
                let v = set[0].victim.load(Ordering::Relaxed) as usize % FIXED_MEMO_WAYS;
                set[0]
                    .victim
                    .store((v as u64 + 1) % FIXED_MEMO_WAYS as u64, Ordering::Relaxed);
                v
            });
        let e = &set[way];
        let s = e.seq.load(Ordering::Relaxed);
        e.seq.store(s.wrapping_add(1) | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        e.obj.store(obj, Ordering::Relaxed);
        e.word.store(word, Ordering::Relaxed);
        e.n_attrs.store(n_attrs, Ordering::Relaxed);
        e.epoch.store(epoch, Ordering::Relaxed);
        e.seq.store((s | 1).wrapping_add(1), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_answers_for_its_object_at_its_epoch_only() {
        let c = FixedCache::default();
        assert_eq!(c.lookup(0x1000, 0), None, "empty");
        assert_eq!(c.lookup(0, 0), None, "an empty entry's zeroes");
        c.fill(0x1000, 0x2007, 3, 5);
        assert_eq!(c.lookup(0x1000, 5), Some((0x2007, 3)));
        assert_eq!(c.lookup(0x1000, 6), None, "the epoch moved");
        assert_eq!(c.lookup(0x1008, 5), None, "another object");
        // Objects of the same set: the second takes the other way, a
        // third replaces one, in turn.
        let mut same = (1..)
            .map(|k| 0x1000 + 8 * k)
            .filter(|&o| fixed_memo_set(o) == fixed_memo_set(0x1000));
        let mut next = || same.next().expect("an address of the same set");
        let (b, c3, d) = (next(), next(), next());
        c.fill(b, 0x3007, 2, 5);
        assert_eq!(c.lookup(0x1000, 5), Some((0x2007, 3)), "two ways");
        assert_eq!(c.lookup(b, 5), Some((0x3007, 2)));
        c.fill(b, 0x3107, 2, 5);
        assert_eq!(c.lookup(b, 5), Some((0x3107, 2)), "refilled in place");
        assert_eq!(c.lookup(0x1000, 5), Some((0x2007, 3)));
        c.fill(c3, 0x4007, 1, 5);
        assert_eq!(c.lookup(c3, 5), Some((0x4007, 1)));
        assert_eq!(c.lookup(0x1000, 5), None, "way 0 was the victim");
        assert_eq!(c.lookup(b, 5), Some((0x3107, 2)));
        c.fill(d, 0x5007, 1, 5);
        assert_eq!(c.lookup(d, 5), Some((0x5007, 1)));
        assert_eq!(c.lookup(b, 5), None, "then way 1");
        assert_eq!(c.lookup(c3, 5), Some((0x4007, 1)));
    }

    /// The layout generated code reads is the contract's.
    #[test]
    fn entries_are_laid_out_as_the_contract_says() {
        use guardlift_abi::offsets::*;
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<Entry>(), 1 << FIXED_MEMO_ENTRY_BYTES_LOG2);
        assert_eq!(offset_of!(Entry, seq), FIXED_MEMO_SEQ as usize);
        assert_eq!(offset_of!(Entry, obj), FIXED_MEMO_OBJ as usize);
        assert_eq!(offset_of!(Entry, word), FIXED_MEMO_WORD as usize);
        assert_eq!(offset_of!(Entry, n_attrs), FIXED_MEMO_N_ATTRS as usize);
        assert_eq!(offset_of!(Entry, epoch), FIXED_MEMO_EPOCH as usize);
        let c = FixedCache::default();
        assert_eq!(c.entries.len(), FIXED_MEMO_ENTRIES);
        c.fill(0x1230, 0x4567, 2, 9);
        // An empty set's first way.
        let first = (fixed_memo_set(0x1230) * FIXED_MEMO_WAYS) as u64;
        let at = c.base() + (first << FIXED_MEMO_ENTRY_BYTES_LOG2);
        // SAFETY: `at` is the entry of 0x1230 inside `c.entries`.
        let read = |off: i32| unsafe { ((at + off as u64) as *const u64).read() };
        assert_eq!(read(FIXED_MEMO_SEQ), 2);
        assert_eq!(read(FIXED_MEMO_OBJ), 0x1230);
        assert_eq!(read(FIXED_MEMO_WORD), 0x4567);
        assert_eq!(read(FIXED_MEMO_N_ATTRS), 2);
        assert_eq!(read(FIXED_MEMO_EPOCH), 9);
    }

    #[test]
    fn a_write_under_way_answers_nothing() {
        let c = FixedCache::default();
        c.fill(0x1000, 0x2007, 3, 5);
        let e = &c.set(0x1000)[0];
        let s = e.seq.load(Ordering::Relaxed);
        e.seq.store(s + 1, Ordering::Relaxed);
        assert_eq!(c.lookup(0x1000, 5), None);
        e.seq.store(s + 2, Ordering::Relaxed);
        assert_eq!(c.lookup(0x1000, 5), Some((0x2007, 3)));
    }
}
