//! Where a PC is and what is on the run thread's stack: the program's
//! tables (generated per program in `gl_traps.c`: each IR function's code,
//! each guard's trap instruction), the IR call chains read from frame
//! records, and the stack bounds the fault handler needs
//! (docs/TARGETS.md, "Faults on a target" and "Backtraces on the object
//! paths"). Everything here only reads: the signal handlers use it.

use crate::out;
use guardlift_runtime::backtrace::MAX_FRAMES;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// How far up the stack a scan looks for the IR call that entered the
/// runtime, or a report for its stub's frame record (as the host's fault
/// handler does).
pub const SCAN_BYTES: u64 = 1 << 20;

/// One guard's trap instruction (`gl_traps[]`).
#[repr(C)]
pub struct GlTrap {
    /// Its address.
    pub pc: *const u8,
    /// The guard's site id.
    pub site: u32,
    /// The guard's `ReportKind` code.
    pub kind: u32,
}

/// One IR function's code (`gl_code[]`): its index is the function's in
/// the host's code table.
#[repr(C)]
pub struct GlCode {
    /// The function's first byte.
    pub start: *const u8,
    /// Its size in bytes.
    pub size: u64,
}

/// The entry wrapper `__gl_start(args, ret)`.
pub type StartFn = unsafe extern "C" fn(*const u64, *mut u64);

/// What `gl_traps.c` hands [`crate::gl_target_main`]: the program.
#[repr(C)]
pub struct GlModule {
    /// The entry wrapper.
    pub start: StartFn,
    /// The guards' trap instructions (trap mode).
    pub traps: *const GlTrap,
    /// How many.
    pub ntraps: usize,
    /// The IR functions' code.
    pub code: *const GlCode,
    /// How many.
    pub ncode: usize,
    /// The module's managed-dict slot offset.
    pub dict_slot_offset: i64,
}

// The three structs are the contract's tables (`guardlift_abi::program`,
// which the generated C declares them from and the ABI stamp hashes):
// the same fields, in the same order, at the same offsets.
const _: () = {
    use guardlift_abi::program::{Table, CODE, MODULE, TRAP};
    use std::mem::{offset_of, size_of};
    const fn same(t: &Table, fields: &[(&str, usize)], size: usize) -> bool {
        if t.fields.len() != fields.len() || t.size() != size {
            return false;
        }
        let mut i = 0;
        while i < fields.len() {
            if !t.field_is(i, fields[i].0) || t.offset(i) != fields[i].1 {
                return false;
            }
            i += 1;
        }
        true
    }
    assert!(same(
        &TRAP,
        &[
            ("pc", offset_of!(GlTrap, pc)),
            ("site", offset_of!(GlTrap, site)),
            ("kind", offset_of!(GlTrap, kind)),
        ],
        size_of::<GlTrap>(),
    ));
    assert!(same(
        &CODE,
        &[
            ("start", offset_of!(GlCode, start)),
            ("size", offset_of!(GlCode, size)),
        ],
        size_of::<GlCode>(),
    ));
    assert!(same(
        &MODULE,
        &[
            ("start", offset_of!(GlModule, start)),
            ("traps", offset_of!(GlModule, traps)),
            ("ntraps", offset_of!(GlModule, ntraps)),
            ("code", offset_of!(GlModule, code)),
            ("ncode", offset_of!(GlModule, ncode)),
            ("dict_slot_offset", offset_of!(GlModule, dict_slot_offset)),
        ],
        size_of::<GlModule>(),
    ));
};

static MODULE: AtomicPtr<GlModule> = AtomicPtr::new(std::ptr::null_mut());
/// Where the run thread called the entry (IR frames lie below), 0 outside the run.
pub static ENTRY_SP: AtomicU64 = AtomicU64::new(0);
/// The run thread's stack's low end (0: unknown).
pub static STACK_LO: AtomicU64 = AtomicU64::new(0);

/// The link register and frame pointer with which IR code last called an
/// entry point of the library (aarch64; [`note_caller!`]): the call's
/// return address, and the frame record of the caller (an IR function, or
/// a report stub whose record returns into IR code).
static CALLER_LR: AtomicU64 = AtomicU64::new(0);
static CALLER_FP: AtomicU64 = AtomicU64::new(0);

/// Notes the caller's link register and frame pointer, read first thing
/// in an entry point (before any call changes the link register). On
/// aarch64 a return address and a saved frame record left on the stack by
/// earlier calls look like the current ones to a stack scan; the registers
/// do not. Elsewhere nothing (x86_64's scan finds the return address the
/// `call` pushed).
#[macro_export]
macro_rules! note_caller {
    () => {
        #[cfg(target_arch = "aarch64")]
        {
            let (lr, fp): (u64, u64);
            // SAFETY: reads two registers.
            unsafe {
                std::arch::asm!("mov {0}, x30", "mov {1}, x29", out(reg) lr, out(reg) fp,
                    options(nomem, nostack, preserves_flags))
            };
            $crate::code::set_caller(lr, fp);
        }
    };
}

/// Records the caller [`note_caller!`] read: when the entry point set up
/// its own frame record already (`fp` is it, saving `lr`), the caller's
/// is the one it saved.
pub fn set_caller(lr: u64, fp: u64) {
    CALLER_LR.store(lr, Ordering::Relaxed);
    CALLER_FP.store(fp, Ordering::Relaxed);
}

/// The IR call that called the entry point running now, directly or
/// through a stub (a report stub, a slow path's cold call: code outside
/// the IR functions whose frame record returns into IR code), and the
/// frame record of the IR function that made it (its callers follow), from
/// the registers [`note_caller!`] read. `None` where they are not noted
/// (x86_64) or lead nowhere.
pub fn noted_caller() -> Option<(u64, u64)> {
    if !cfg!(target_arch = "aarch64") {
        return None;
    }
    let (lr, mut fp) = (
        CALLER_LR.load(Ordering::Relaxed),
        CALLER_FP.load(Ordering::Relaxed),
    );
    let top = ENTRY_SP.load(Ordering::SeqCst);
    let on_stack = |a: u64| a != 0 && a.is_multiple_of(8) && a + 16 <= top;
    if lr == 0 || !on_stack(fp) {
        return None;
    }
    if stack_word(fp + 8) == lr {
        // The entry point's own record: the caller's is the one it saved.
        fp = stack_word(fp);
    }
    if lr > 1 && in_code(lr - 1) {
        return Some((lr - 1, fp));
    }
    // A stub: its record returns into IR code.
    if !on_stack(fp) {
        return None;
    }
    let ra = stack_word(fp + 8);
    (ra > 1 && in_code(ra - 1)).then(|| (ra - 1, stack_word(fp)))
}

/// Makes `m` the program (before the run; it lives as long as the process).
pub fn set_module(m: *const GlModule) {
    MODULE.store(m.cast_mut(), Ordering::SeqCst);
}

fn module() -> Option<&'static GlModule> {
    // SAFETY: set once from `gl_target_main`'s argument, static data of
    // the program.
    unsafe { MODULE.load(Ordering::SeqCst).as_ref() }
}

fn code() -> &'static [GlCode] {
    match module() {
        // SAFETY: `code` holds `ncode` entries (generated together).
        Some(m) if !m.code.is_null() => unsafe { std::slice::from_raw_parts(m.code, m.ncode) },
        _ => &[],
    }
}

/// The guards' trap instructions.
pub fn traps() -> &'static [GlTrap] {
    match module() {
        // SAFETY: `traps` holds `ntraps` entries (generated together).
        Some(m) if !m.traps.is_null() => unsafe { std::slice::from_raw_parts(m.traps, m.ntraps) },
        _ => &[],
    }
}

/// The IR function containing `pc` (its index) and the offset in it.
pub fn code_index(pc: u64) -> Option<(usize, u64)> {
    code().iter().enumerate().find_map(|(i, c)| {
        let start = c.start as u64;
        (pc >= start && pc - start < c.size).then_some((i, pc - start))
    })
}

/// Is `pc` in IR code?
pub fn in_code(pc: u64) -> bool {
    code_index(pc).is_some()
}

/// ` FN OFF` of a PC in IR code, else ` - -`.
pub fn write_pc(pc: u64) {
    match (pc != 0).then(|| code_index(pc)).flatten() {
        Some((i, off)) => {
            out::field(i as u64);
            out::field(off);
        }
        None => out::bytes(b" - -"),
    }
}

/// ` N` and N PCs.
pub fn write_pcs(pcs: &[u64]) {
    out::field(pcs.len() as u64);
    for &pc in pcs {
        write_pc(pc);
    }
}

/// A word of the run thread's stack.
pub fn stack_word(a: u64) -> u64 {
    // SAFETY: callers read only within [sp, entry) of the run thread's
    // stack, 8-aligned (a conservative scan reads any slot).
    unsafe { std::ptr::read_volatile(a as *const u64) }
}

/// `[from, top)` capped at [`SCAN_BYTES`]; 0 when empty.
fn scan_end(from: u64, top: u64) -> u64 {
    if top == 0 || from >= top {
        return 0;
    }
    top.min(from.saturating_add(SCAN_BYTES))
}

/// The first frame record `[fp, return address]` in `[from, top)` whose
/// return address is in IR code, or 0.
pub fn first_ir_record(from: u64, top: u64) -> u64 {
    let end = scan_end(from, top);
    let mut a = (from + 7) & !7;
    while a + 16 <= end {
        let (fp, ra) = (stack_word(a), stack_word(a + 8));
        if fp > a && fp < top && ra > 1 && in_code(ra - 1) {
            return a;
        }
        a += 8;
    }
    0
}

/// Appends to `out` (up to `max`) the calls (return address − 1) of the
/// chain of frame records from `rec`, until a return address leaves IR code
/// (the entry wrapper is not in the table) or the chain leaves `[rec, top)`
/// or goes down.
pub fn walk_records(mut rec: u64, top: u64, out: &mut Vec<u64>, max: usize) {
    while out.len() < max && rec != 0 && rec.is_multiple_of(8) && rec + 16 <= top {
        let ra = stack_word(rec + 8);
        if ra <= 1 || !in_code(ra - 1) {
            break;
        }
        out.push(ra - 1);
        let next = stack_word(rec);
        if next <= rec {
            break;
        }
        rec = next;
    }
}

/// The same walk into a fixed array (no allocation: the fault handler's);
/// the new count.
pub fn walk_records_into(mut rec: u64, top: u64, out: &mut [u64], mut n: usize) -> usize {
    while n < out.len() && rec != 0 && rec.is_multiple_of(8) && rec + 16 <= top {
        let ra = stack_word(rec + 8);
        if ra <= 1 || !in_code(ra - 1) {
            break;
        }
        out[n] = ra - 1;
        n += 1;
        let next = stack_word(rec);
        if next <= rec {
            break;
        }
        rec = next;
    }
    n
}

/// The IR call chain of a report being recorded, seen from `here` (an
/// address in the recording frame), innermost first: the first frame
/// record up the stack whose return address is in IR code is the one the
/// report stub (or the runtime's entry point) pushed; then the chain. The
/// host checks that the first PC is the report's site.
pub fn capture_frames(here: u64) -> Vec<u64> {
    let top = ENTRY_SP.load(Ordering::SeqCst);
    let mut v = Vec::new();
    match noted_caller() {
        // The call, then the IR function's callers.
        Some((site, rec)) => {
            v.push(site);
            walk_records(rec, top, &mut v, MAX_FRAMES);
        }
        None => walk_records(first_ir_record(here, top), top, &mut v, MAX_FRAMES),
    }
    v
}

/// The innermost return address into IR code on the stack in `[sp, top)`:
/// the IR call through which the thread entered the runtime (minus 1) and
/// where it is stored.
pub fn call_on_stack(sp: u64, top: u64) -> Option<(u64, u64)> {
    let end = scan_end(sp, top);
    let mut a = (sp + 7) & !7;
    while a + 8 <= end {
        let w = stack_word(a);
        if w > 1 && in_code(w - 1) {
            return Some((w - 1, a));
        }
        a += 8;
    }
    None
}

/// The IR call that entered the runtime on this thread (seen from `here`)
/// and the IR calls outside it, innermost first: the frame record of the
/// IR function making the call is the first record at or above the call's
/// return slot whose return address is in IR code, or the one that record
/// saved when it is the called function's own (returning to the call).
pub fn host_call_site(here: u64) -> Option<(u64, Vec<u64>)> {
    let top = ENTRY_SP.load(Ordering::SeqCst);
    if let Some((site, rec)) = noted_caller() {
        let mut outer = Vec::new();
        walk_records(rec, top, &mut outer, MAX_FRAMES - 1);
        return Some((site, outer));
    }
    let (site, slot) = call_on_stack(here, top)?;
    let mut rec = first_ir_record(slot - 8, top);
    if rec != 0 && stack_word(rec + 8) - 1 == site {
        rec = stack_word(rec);
    }
    let mut outer = Vec::new();
    walk_records(rec, top, &mut outer, MAX_FRAMES - 1);
    Some((site, outer))
}
