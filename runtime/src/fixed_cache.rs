//! A lock-free memo of [`crate::internals::ObjectBuiltins::attr_fixed`]'s
//! successes: the answer without the heap's mutex for an object asked
//! about before, while nothing has gone since.
//!
//! A loop's entry test asks `attr_fixed` for each object whose attributes
//! the clean copy fixes whenever the loop's own inline cache misses — at
//! every entry of a loop called with more receivers than that cache has
//! ways (docs/PERFORMANCE.md, "A megamorphic call site"). The heap's mutex
//! (a locked compare-and-swap and a release) was three quarters of such a
//! call. Each entry here holds `(object, its values word, its attribute
//! count, values epoch)` from a success, written under the heap's lock (so
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

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Entries (a power of two), direct-mapped by the object's address.
const ENTRIES: usize = 256;

#[derive(Default, Debug)]
struct Entry {
    /// Odd while a write is under way; +2 per write.
    seq: AtomicU64,
    obj: AtomicU64,
    word: AtomicU64,
    n_attrs: AtomicU64,
    epoch: AtomicU64,
}

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

/// The entry of `obj`: a multiplicative hash of its granule, top bits.
fn index(obj: u64) -> usize {
    ((obj >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - ENTRIES.trailing_zeros())) as usize
}

impl FixedCache {
    /// `(values word, attribute count)` of a success for `obj` filled at
    /// values epoch `epoch`, if the entry holds one (read consistently).
    pub(crate) fn lookup(&self, obj: u64, epoch: u64) -> Option<(u64, u64)> {
        let e = &self.entries[index(obj)];
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
    /// at values epoch `epoch`, read before the heap was asked. Callers
    /// hold the heap's lock: one writer at a time.
    pub(crate) fn fill(&self, obj: u64, word: u64, n_attrs: u64, epoch: u64) {
        let e = &self.entries[index(obj)];
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
        // Another object of the same entry replaces it.
        let other = (1..)
            .map(|k| 0x1000 + 8 * k)
            .find(|&o| index(o) == index(0x1000))
            .expect("a colliding address");
        c.fill(other, 0x3007, 2, 5);
        assert_eq!(c.lookup(0x1000, 5), None);
        assert_eq!(c.lookup(other, 5), Some((0x3007, 2)));
    }

    #[test]
    fn a_write_under_way_answers_nothing() {
        let c = FixedCache::default();
        c.fill(0x1000, 0x2007, 3, 5);
        let e = &c.entries[index(0x1000)];
        let s = e.seq.load(Ordering::Relaxed);
        e.seq.store(s + 1, Ordering::Relaxed);
        assert_eq!(c.lookup(0x1000, 5), None);
        e.seq.store(s + 2, Ordering::Relaxed);
        assert_eq!(c.lookup(0x1000, 5), Some((0x2007, 3)));
    }
}
