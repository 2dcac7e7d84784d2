//! Backtraces of reports (issue 16): the IR call chain of the first
//! occurrence of each (site, kind), innermost first, as strings —
//! `@fn L:C (op)` per IR frame, then the host function that called into
//! compiled code as a symbolized native frame (`0xPC in symbol file:line`).
//!
//! Captured only in the report slow path, on the first occurrence of a
//! (site, kind) (`crate::ReportSink::record`), never on the check's fast
//! path. Where the frames come from:
//!
//! - **The interpreter** hands its frame vector over for the duration of a
//!   report ([`with_outer_frames`]).
//! - **JIT code** is walked through its frame records (Cranelift sets up a
//!   frame pointer in every function that calls, so every frame on the
//!   chain has one; `[fp]` = the caller's fp, `[fp + 8]` = the return
//!   address, the same on x86_64 and aarch64). The walk starts at the frame
//!   record whose return address maps to the report's own site (the call
//!   of the report stub), found by scanning up from the current stack
//!   pointer, and stops at the first return address outside compiled code
//!   (the host's caller), at the thread's entry into compiled code
//!   ([`crate::codemap::enter_compiled_code`]), or after [`MAX_FRAMES`].
//!   Each return address is mapped through the PC → IR-site map
//!   ([`crate::codemap::site_of_pc`]). The fault handler walks the same
//!   chain from the interrupted frame pointer (`walk_records`, no
//!   allocation) and prints each return address as a [`ReturnFrame`].
//!
//! `GUARDLIFT_OPTIONS=backtrace=0` turns capture off ([`set_enabled`]).

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// At most this many frames per backtrace (deep recursion is cut here).
pub const MAX_FRAMES: usize = 64;

/// How far above the capturing frame the report stub's frame record is
/// looked for (the runtime's own frames in between are small).
const SCAN_BYTES: usize = 64 << 10;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns capture on or off for the process (`backtrace=0|1`; on by default).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is capture on?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

type FramesFn = dyn Fn() -> Vec<String>;

thread_local! {
    /// The outer IR frames of the engine running on this thread, while it
    /// reports ([`with_outer_frames`]).
    static OUTER: Cell<Option<*const FramesFn>> = const { Cell::new(None) };
}

/// Runs `body` (which reports) with `frames` giving the IR frames outside
/// the reporting one, innermost first: how an engine that keeps its frames
/// in memory (the interpreter) supplies its backtrace.
pub fn with_outer_frames<R>(frames: &dyn Fn() -> Vec<String>, body: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const FramesFn>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OUTER.with(|o| o.set(self.0));
        }
    }
    let short: *const (dyn Fn() -> Vec<String> + '_) = frames;
    // SAFETY: only the lifetime is erased; the pointer is read only while
    // `body` runs (`Restore` takes it out again, also on unwinding).
    let ptr: *const FramesFn = unsafe { std::mem::transmute(short) };
    let _restore = Restore(OUTER.with(|o| o.replace(Some(ptr))));
    body()
}

pub use crate::codemap::IrFrame;

/// A return address into compiled code, printed as the IR call it returns
/// to (`ra − 1` through [`crate::codemap::site_of_pc`]), without
/// allocating: the fault handler's outer frames.
#[derive(Copy, Clone, Debug)]
pub struct ReturnFrame(pub usize);

impl fmt::Display for ReturnFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pc = self.0.wrapping_sub(1);
        crate::codemap::site_of_pc(pc, |s| s.frame.fmt(f)).unwrap_or_else(|| write!(f, "{pc:#x} ?"))
    }
}

/// One IR frame as backtraces print it.
pub fn ir_frame(function: &str, line: u32, col: u32, op: &str) -> String {
    IrFrame {
        function,
        line,
        col,
        op,
    }
    .to_string()
}

/// The backtrace of a report at `site` being recorded now (empty when
/// capture is off).
pub fn capture(site: IrFrame<'_>) -> Vec<String> {
    if !enabled() {
        return Vec::new();
    }
    let mut frames = vec![site.to_string()];
    if let Some(outer) = OUTER.with(|o| o.get()) {
        // SAFETY: set by `with_outer_frames`, whose borrow is live.
        frames.extend(unsafe { &*outer }());
    } else {
        frames.extend(jit_outer_frames(site));
    }
    frames.truncate(MAX_FRAMES);
    frames
}

/// Walks the frame-record chain `[fp, return address]` from the record at
/// `rec` outward, calling `f` with each return address (innermost first)
/// until `f` returns `false`, the chain leaves `[rec, top)` or goes down,
/// or `max` addresses were given. No allocation: the fault handler uses it.
///
/// # Safety
/// `[rec, top)` must be readable (the thread's own stack).
pub(crate) unsafe fn walk_records(
    mut rec: usize,
    top: usize,
    max: usize,
    mut f: impl FnMut(usize) -> bool,
) {
    let mut n = 0;
    while n < max && rec.is_multiple_of(8) && rec.saturating_add(16) <= top {
        // SAFETY: `rec` and `rec + 8` lie in `[rec0, top)` (checked above;
        // records only move up the stack, checked below).
        let (next, ra) = unsafe { (read(rec), read(rec + 8)) };
        if !f(ra) {
            return;
        }
        n += 1;
        if next <= rec {
            return;
        }
        rec = next;
    }
}

/// The frames outside the reporting JIT function, innermost first.
fn jit_outer_frames(site: IrFrame<'_>) -> Vec<String> {
    let top = crate::codemap::entry_sp();
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    if top <= here {
        return Vec::new(); // not running compiled code
    }
    // SAFETY: [here, top) is this thread's live stack.
    let Some(first) = (unsafe { find_site_record(here, top, site) }) else {
        return Vec::new();
    };
    // SAFETY: `find_site_record` returned a record inside [here, top).
    let caller = unsafe { read(first) };
    if caller <= first {
        return Vec::new();
    }
    let mut frames = Vec::new();
    // SAFETY: [caller, top) is part of [here, top).
    unsafe {
        // Twice as deep as kept (`capture` truncates): the calls of a
        // function's next piece are walked, not kept.
        walk_records(caller, top, 2 * MAX_FRAMES, |ra| match pc_site(ra) {
            // A function's call of its next piece: the function already
            // shows (module doc of the JIT's `pieces`).
            Some(_) if crate::codemap::is_piece_call(ra - 1) => true,
            Some(f) => {
                frames.push(f);
                true
            }
            None => {
                // The host code that entered compiled code; left out when
                // it has no symbol (cranelift-jit's entry trampoline), so
                // the JIT's backtrace is the IR call chain, as the
                // interpreter's is.
                frames.extend(native_frame(ra));
                false
            }
        })
    };
    frames
}

/// `ra − 1` (the call) as an IR frame, if it is in compiled code. Frames in
/// code without source locations (stubs) have line 0 and are kept as such.
fn pc_site(ra: usize) -> Option<String> {
    let pc = ra.checked_sub(1)?;
    crate::codemap::site_of_pc(pc, |s| s.frame.to_string())
}

/// A host frame: its return address, symbolized; `None` without a symbol.
pub(crate) fn native_frame(ra: usize) -> Option<String> {
    let pc = ra.wrapping_sub(1);
    let mut text = None;
    backtrace::resolve(pc as *mut std::ffi::c_void, |sym| {
        let (Some(name), None) = (sym.name(), &text) else {
            return;
        };
        let mut t = format!("{pc:#x} in {name:#}");
        if let (Some(file), Some(line)) = (sym.filename(), sym.lineno()) {
            t.push_str(&format!(" {}:{line}", file.display()));
        }
        text = Some(t);
    });
    text
}

/// The frame record `[fp, return address]` in `[sp, top)` whose return
/// address is the call of the report at `site`, i.e. the record the report
/// stub pushed (the frame walk starts there).
///
/// # Safety
/// `[sp, top)` must be readable (the thread's own stack).
unsafe fn find_site_record(sp: usize, top: usize, site: IrFrame<'_>) -> Option<usize> {
    let mut a = (sp + 7) & !7;
    let end = top.min(sp.saturating_add(SCAN_BYTES));
    while a + 16 <= end {
        // SAFETY: per the contract.
        let (fp, ra) = unsafe { (read(a), read(a + 8)) };
        if fp > a && fp < top && is_site(ra, site) {
            return Some(a);
        }
        a += 8;
    }
    None
}

fn is_site(ra: usize, site: IrFrame<'_>) -> bool {
    let Some(pc) = ra.checked_sub(1) else {
        return false;
    };
    crate::codemap::site_of_pc(pc, |s| {
        let s = s.frame;
        s.function == site.function && s.line == site.line && s.col == site.col
    })
    .unwrap_or(false)
}

/// One stack word ([`crate::codemap::read_stack_word`]).
///
/// # Safety
/// `a` must be readable and 8-aligned.
unsafe fn read(a: usize) -> usize {
    // SAFETY: per the contract.
    unsafe { crate::codemap::read_stack_word(a) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> IrFrame<'static> {
        IrFrame {
            function: "leaf",
            line: 4,
            col: 5,
            op: "adstack.push",
        }
    }

    #[test]
    fn outer_frames_follow_the_site_and_are_scoped() {
        let outer = || vec![ir_frame("main", 9, 5, "call")];
        let bt = with_outer_frames(&outer, || capture(site()));
        assert_eq!(bt, ["@leaf 4:5 (adstack.push)", "@main 9:5 (call)"]);
        // Outside the scope, and outside compiled code: the site alone.
        assert_eq!(capture(site()), ["@leaf 4:5 (adstack.push)"]);
    }
}
