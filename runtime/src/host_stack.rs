//! Allocation and free stacks of host objects (issue 29, item 7): the
//! host's own native return addresses, recorded when it registers an object
//! ([`crate::Runtime::register_object`]) and when it reports the object
//! freed ([`crate::Runtime::object_freed`]), as ASan keeps malloc and free
//! stacks.
//!
//! Capture is cheap and raw: at most [`HOST_STACK_FRAMES`] instruction
//! pointers from the unwinder (`backtrace::trace_unsynchronized`, which
//! needs no frame pointers in the host), starting at the host's frame that
//! called guardlift ([`HostCaller`]: guardlift's own frames are skipped by
//! their stack addresses, not by symbol). Nothing is symbolized then: a
//! [`HostStack`] symbolizes its frames the first time a report is rendered
//! and keeps the text ([`HostStack::frames`]). Stacks are immutable and
//! shared (`Arc`): a report holds the ones its object had when it was
//! recorded, whatever later happens to the record.
//!
//! Never called in a signal handler. A signal handler that prints a pending
//! report (`raw_frames_only`) prints the frames already symbolized, else
//! the raw addresses. `GUARDLIFT_OPTIONS=host_stacks=0` turns capture off
//! for a runtime ([`crate::Runtime::set_host_stacks`]; off by default:
//! the unwinder costs about 6–7 µs per capture, docs/EMBEDDING.md).

use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// At most this many host frames per stack, innermost first.
pub const HOST_STACK_FRAMES: usize = 12;

/// Where guardlift was entered from the host: an address inside the
/// outermost guardlift frame of the call (a local of the entry point). The
/// frames whose stack pointer lies above it are the host's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostCaller(usize);

impl HostCaller {
    /// The caller of the function this is written in (always inlined, so
    /// the address is of a local of that function's own frame). Call it in
    /// the entry point the host called, before anything else.
    #[inline(always)]
    pub fn here() -> HostCaller {
        let marker = 0u8;
        HostCaller(std::hint::black_box(&marker) as *const u8 as usize)
    }
}

/// The host's return addresses at a registration or a free, innermost
/// first, symbolized when first rendered.
pub struct HostStack {
    pcs: [usize; HOST_STACK_FRAMES],
    len: u8,
    symbols: OnceLock<Box<[String]>>,
}

impl HostStack {
    /// The host's stack below `caller` now (`None`: no host frame found).
    pub fn capture(caller: HostCaller) -> Option<Arc<HostStack>> {
        let mut pcs = [0usize; HOST_STACK_FRAMES];
        let mut len = 0usize;
        // SAFETY: on Linux the unwinder (`_Unwind_Backtrace`) is thread-safe;
        // the unsynchronized variant only skips the crate's global lock (a
        // registration on another thread may walk its own stack at the same
        // time). Never called from a signal handler (module doc).
        unsafe {
            backtrace::trace_unsynchronized(|frame| {
                // The frame's stack pointer (at its call of the frame
                // before): at or below the marker for guardlift's frames,
                // the entry point's included; above it from the host's
                // frame that called the entry point on.
                if (frame.sp() as usize) <= caller.0 {
                    return true;
                }
                let ip = frame.ip() as usize;
                if ip == 0 {
                    return false;
                }
                pcs[len] = ip;
                len += 1;
                len < HOST_STACK_FRAMES
            })
        };
        (len > 0).then(|| {
            Arc::new(HostStack {
                pcs,
                len: len as u8,
                symbols: OnceLock::new(),
            })
        })
    }

    /// A stack of the given return addresses (tests, and hosts that walk
    /// their own stacks); at most [`HOST_STACK_FRAMES`] are kept.
    pub fn from_return_addresses(ras: &[usize]) -> Arc<HostStack> {
        let mut pcs = [0usize; HOST_STACK_FRAMES];
        let len = ras.len().min(HOST_STACK_FRAMES);
        pcs[..len].copy_from_slice(&ras[..len]);
        Arc::new(HostStack {
            pcs,
            len: len as u8,
            symbols: OnceLock::new(),
        })
    }

    /// The return addresses, innermost first.
    pub fn return_addresses(&self) -> &[usize] {
        &self.pcs[..self.len as usize]
    }

    /// The frames as reports print them, innermost first: `0xPC in symbol
    /// file:line` (the call, `ra − 1`), or `0xPC ?` without a symbol.
    /// Symbolized on the first call, then kept.
    pub fn frames(&self) -> &[String] {
        self.symbols.get_or_init(|| {
            self.return_addresses()
                .iter()
                .map(|&ra| {
                    crate::backtrace::native_frame(ra)
                        .unwrap_or_else(|| format!("{:#x} ?", ra.wrapping_sub(1)))
                })
                .collect()
        })
    }

    /// Calls `f` with each frame's text: symbolized, or the raw call
    /// address when not symbolized yet and symbolizing is not allowed here
    /// ([`raw_frames_only`]).
    pub(crate) fn each_frame(
        &self,
        mut f: impl FnMut(&dyn fmt::Display) -> fmt::Result,
    ) -> fmt::Result {
        let symbols = if RAW_ONLY.with(Cell::get) {
            self.symbols.get().map(|s| &s[..])
        } else {
            Some(self.frames())
        };
        match symbols {
            Some(s) => s.iter().try_for_each(|t| f(t)),
            None => self
                .return_addresses()
                .iter()
                .try_for_each(|&ra| f(&RawFrame(ra))),
        }
    }
}

/// A return address as `0xPC ?` (the call), without allocating.
struct RawFrame(usize);

impl fmt::Display for RawFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x} ?", self.0.wrapping_sub(1))
    }
}

impl fmt::Debug for HostStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.return_addresses().iter().map(|a| RawHex(*a)))
            .finish()
    }
}

struct RawHex(usize);

impl fmt::Debug for RawHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl PartialEq for HostStack {
    fn eq(&self, other: &Self) -> bool {
        self.return_addresses() == other.return_addresses()
    }
}

impl Eq for HostStack {}

impl std::hash::Hash for HostStack {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.return_addresses().hash(state)
    }
}

/// The allocation and free stacks of a host object (`None`: not recorded —
/// an object IR code made, capture off, or not freed yet).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostStacks {
    /// Where the host registered it.
    pub alloc: Option<Arc<HostStack>>,
    /// Where the host reported it freed.
    pub free: Option<Arc<HostStack>>,
}

impl HostStacks {
    /// Is neither recorded?
    pub fn is_empty(&self) -> bool {
        self.alloc.is_none() && self.free.is_none()
    }
}

thread_local! {
    /// Set while a signal handler prints reports ([`raw_frames_only`]).
    static RAW_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Runs `body` (which prints reports from a signal handler) with host
/// stacks printed without symbolizing: frames symbolized before are
/// printed as text, the others as raw addresses.
pub(crate) fn raw_frames_only<R>(body: impl FnOnce() -> R) -> R {
    let old = RAW_ONLY.with(|r| r.replace(true));
    let out = body();
    RAW_ONLY.with(|r| r.set(old));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stack_is_128_bytes_as_docs_embedding_says() {
        assert_eq!(std::mem::size_of::<super::HostStack>(), 128);
    }
}
