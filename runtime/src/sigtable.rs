//! A process-global table that signal handlers read without locks or
//! allocation, and ordinary code replaces.
//!
//! The table is an immutable snapshot behind an `AtomicPtr`. Writers
//! (serialized by a mutex) build a new snapshot, swap it in, then wait
//! until no reader is inside [`SigTable::read`] before freeing the old
//! one: snapshots are freed, never leaked, and never freed under a reader.
//! Readers copy what they need out of the snapshot (e.g. clone an `Arc`,
//! which does not allocate) before they return.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

/// See the module docs.
pub struct SigTable<T> {
    table: AtomicPtr<Vec<T>>,
    readers: AtomicUsize,
    writer: Mutex<()>,
}

impl<T: Clone> SigTable<T> {
    /// An empty table.
    pub const fn new() -> Self {
        SigTable {
            table: AtomicPtr::new(std::ptr::null_mut()),
            readers: AtomicUsize::new(0),
            writer: Mutex::new(()),
        }
    }

    /// Replaces the snapshot by `f(copy of it)`; frees the old one once no
    /// reader can see it.
    pub fn update(&self, f: impl FnOnce(&mut Vec<T>)) {
        let _g = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let old = self.table.load(SeqCst);
        let mut v = if old.is_null() {
            Vec::new()
        } else {
            // SAFETY: `old` is the published snapshot, and only writers
            // (serialized above) free snapshots: it is alive.
            unsafe { (*old).clone() }
        };
        f(&mut v);
        let new = if v.is_empty() {
            std::ptr::null_mut()
        } else {
            Box::into_raw(Box::new(v))
        };
        self.table.store(new, SeqCst);
        // A reader that saw `old` incremented `readers` before loading it.
        while self.readers.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
        if !old.is_null() {
            // SAFETY: unpublished, no reader left; allocated by Box above.
            drop(unsafe { Box::from_raw(old) });
        }
    }

    /// Runs `f` on the current snapshot (empty when there is none).
    /// Async-signal-safe when `f` is: no lock, no allocation.
    pub fn read<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        self.readers.fetch_add(1, SeqCst);
        let t = self.table.load(SeqCst);
        // SAFETY: a published snapshot is not freed while readers > 0.
        let r = f(if t.is_null() { &[] } else { unsafe { &*t } });
        self.readers.fetch_sub(1, SeqCst);
        r
    }
}

/// Keeps entries registered in a [`SigTable`]; dropping it removes them
/// (the code registry's [`crate::codemap::CodeRegistration`], trap mode's
/// [`crate::trap::TrapRegistration`]). Do that before the code they
/// describe is unmapped.
pub struct Registration {
    id: u64,
    len: usize,
    /// Removes the entries registered under an id from their table.
    remove: fn(u64),
}

impl Registration {
    /// A registration of `len` entries tagged `id`, removed by `remove(id)`.
    pub(crate) fn new(id: u64, len: usize, remove: fn(u64)) -> Self {
        Registration { id, len, remove }
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Does it hold none?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        (self.remove)(self.id)
    }
}

impl<T: Clone> Default for SigTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_are_seen_by_readers() {
        let t: SigTable<u32> = SigTable::new();
        assert_eq!(t.read(|v| v.len()), 0);
        t.update(|v| v.extend([3, 1]));
        t.update(|v| v.retain(|&x| x != 3));
        assert_eq!(t.read(|v| v.to_vec()), vec![1]);
        t.update(|v| v.clear());
        assert_eq!(t.read(|v| v.len()), 0);
    }
}
