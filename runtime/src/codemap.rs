//! The code registry: every range of compiled code in the process, with
//! its PC → IR-site map, behind one async-signal-safe lookup.
//!
//! The JIT registers, once per compiled module, each function's code range
//! and the source locations Cranelift kept per machine instruction, each
//! resolved to the IR instruction's line, column and opcode
//! ([`CodeFunction`], `Runtime::register_code` in [`crate::fault`]).
//! Every feature that meets a PC asks here:
//!
//! - the fault handler: is the faulting PC guardlift code, which IR
//!   instruction is it, which IR call entered the host function that
//!   faulted ([`site_of_pc`], [`call_site_on_stack`]);
//! - backtraces: the IR site of each return address ([`site_of_pc`]);
//! - watchpoints: is the writer JIT code (a legitimate writer when the word
//!   is well-formed, [`is_code`]), and its IR site `@fn L:C`.
//!
//! The registry is a [`SigTable`] snapshot sorted by start address: lookups
//! take no lock and allocate nothing. Each entry keeps its registrant's
//! *owner* (the `Runtime`, opaque here so that this module sits below it)
//! alive; the fault handler finds the runtime whose log and pending reports
//! it prints through [`owner_of`].
//!
//! It also tracks where each thread entered compiled code
//! ([`enter_compiled_code`]), so that stack scans stop at the host's frames.

use crate::sigtable::SigTable;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// The IR instruction that one range of machine code implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcLoc {
    /// Start of the range: code offset from the function's start.
    pub start: u32,
    /// End of the range (exclusive).
    pub end: u32,
    /// The IR instruction's line (0: unknown).
    pub line: u32,
    /// The IR instruction's column.
    pub col: u32,
    /// The IR instruction's opcode.
    pub op: &'static str,
}

/// One compiled function: its code range and PC → IR-site map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFunction {
    /// Absolute address of the first instruction.
    pub start: usize,
    /// Code size in bytes.
    pub len: usize,
    /// The IR function's name.
    pub function: String,
    /// Sorted by `start`, not overlapping.
    pub locs: Vec<PcLoc>,
    /// Compiled from an instrumented module (one with guard sites): its
    /// writes of a watched dict word are guardlift's own (spec §6.1).
    pub instrumented: bool,
}

/// One IR position: function, source position, opcode; printed as
/// backtraces print an IR frame, `@fn L:C (op)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IrFrame<'a> {
    /// The IR function.
    pub function: &'a str,
    /// Line of the IR instruction (0 where it is not known).
    pub line: u32,
    /// Column of the IR instruction.
    pub col: u32,
    /// Opcode of the IR instruction (`?` when unknown).
    pub op: &'a str,
}

impl std::fmt::Display for IrFrame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "@{} {}:{} ({})",
            self.function, self.line, self.col, self.op
        )
    }
}

/// The IR site found for a PC.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PcSite<'a> {
    /// The IR instruction (line 0, op `?` where Cranelift kept no location).
    pub frame: IrFrame<'a>,
    /// Offset of the PC from the function's start.
    pub offset: usize,
}

impl CodeFunction {
    /// The source location of `pc` (which must be in this function), if mapped.
    pub fn loc(&self, pc: usize) -> Option<&PcLoc> {
        let off32 = u32::try_from(pc.checked_sub(self.start)?).ok()?;
        let i = self.locs.partition_point(|l| l.end <= off32);
        self.locs.get(i).filter(|l| l.start <= off32)
    }

    /// The IR site of `pc` (which must be in this function), if mapped.
    pub fn site(&self, pc: usize) -> Option<PcSite<'_>> {
        let off = pc.checked_sub(self.start)?;
        let l = self.loc(pc)?;
        Some(PcSite {
            frame: IrFrame {
                function: &self.function,
                line: l.line,
                col: l.col,
                op: l.op,
            },
            offset: off,
        })
    }

    /// [`CodeFunction::site`], or the function alone (line 0, op `?`);
    /// `pc` must be in this function.
    pub fn site_or_function(&self, pc: usize) -> PcSite<'_> {
        self.site(pc).unwrap_or(PcSite {
            frame: IrFrame {
                function: &self.function,
                line: 0,
                col: 0,
                op: "?",
            },
            offset: pc - self.start,
        })
    }

    fn contains(&self, pc: usize) -> bool {
        self.start <= pc && pc < self.start + self.len
    }
}

/// What the registry holds opaquely for a registrant (its runtime).
pub type Owner = Arc<dyn Any + Send + Sync>;

#[derive(Clone)]
struct Entry {
    func: Arc<CodeFunction>,
    owner: Owner,
    reg: u64,
}

static CODE: SigTable<Entry> = SigTable::new();
static NEXT_REG: AtomicU64 = AtomicU64::new(1);

/// Keeps compiled code registered; dropping it removes it (do that before
/// the code is unmapped). Its length is the number of functions.
pub type CodeRegistration = crate::sigtable::Registration;

fn unregister(id: u64) {
    CODE.update(|v| v.retain(|e| e.reg != id));
}

/// Registers compiled functions on behalf of `owner` (kept alive until the
/// registration is dropped). Signal handlers are the caller's business
/// (`Runtime::register_code` installs the fault handler).
pub fn register(funcs: Vec<CodeFunction>, owner: Owner) -> CodeRegistration {
    let id = NEXT_REG.fetch_add(1, SeqCst);
    let functions = funcs.len();
    let entries: Vec<Entry> = funcs
        .into_iter()
        .map(|f| Entry {
            func: Arc::new(f),
            owner: owner.clone(),
            reg: id,
        })
        .collect();
    CODE.update(move |v| {
        v.extend(entries);
        v.sort_by_key(|e| e.func.start);
    });
    CodeRegistration::new(id, functions, unregister)
}

/// Runs `f` on the registered entry containing `pc`. Async-signal-safe
/// when `f` is.
fn with_entry<R>(pc: usize, f: impl FnOnce(&Entry) -> R) -> Option<R> {
    CODE.read(|es| {
        let i = es.partition_point(|e| e.func.start <= pc).checked_sub(1)?;
        let e = &es[i];
        e.func.contains(pc).then(|| f(e))
    })
}

/// Runs `f` on the IR site of `pc` if it is in registered code (the site's
/// line is 0 and its op `?` where Cranelift kept no source location).
/// Async-signal-safe when `f` is.
pub fn site_of_pc<R>(pc: usize, f: impl FnOnce(PcSite<'_>) -> R) -> Option<R> {
    with_entry(pc, |e| f(e.func.site_or_function(pc)))
}

/// The function containing `pc` and its registrant, as new references
/// (atomic increments, no allocation): for a signal handler that ends the
/// process and so may keep them past the lookup. Async-signal-safe.
pub fn owner_of(pc: usize) -> Option<(Arc<CodeFunction>, Owner)> {
    with_entry(pc, |e| (e.func.clone(), e.owner.clone()))
}

/// Is `pc` inside registered code? Async-signal-safe.
pub fn is_code(pc: usize) -> bool {
    with_entry(pc, |_| ()).is_some()
}

/// Could `ra` be the return address of a call in registered code? The
/// call (`ra - 1`) and the instruction after it (`ra`) lie in the same
/// registered function: a call never ends a function (Cranelift ends
/// every block with a branch, a return or a trap), so a word equal to a
/// function's first address — a code pointer a host function left on its
/// stack — is not taken for a return into the function before it (laid
/// out right before it, `ra - 1` is that function's last byte).
/// Async-signal-safe.
pub fn is_return_address(ra: usize) -> bool {
    ra > 1 && with_entry(ra - 1, |e| e.func.contains(ra)).unwrap_or(false)
}

/// Is `pc` a function's call of its next piece (a function compiled in
/// pieces: its line is [`guardlift_abi::PIECE_CALL_LINE`])? Such a frame
/// is the function's own, shown once by the frame of the piece it called:
/// backtraces and the fault handler leave it out. Async-signal-safe.
pub fn is_piece_call(pc: usize) -> bool {
    site_of_pc(pc, |s| s.frame.line == guardlift_abi::PIECE_CALL_LINE).unwrap_or(false)
}

/// Is `pc` inside registered code of an instrumented module?
/// Async-signal-safe.
pub fn is_instrumented_code(pc: usize) -> bool {
    with_entry(pc, |e| e.func.instrumented).unwrap_or(false)
}

thread_local! {
    /// The stack pointer (roughly) where the thread's outermost call into
    /// compiled code began; 0 when it runs no compiled code.
    static ENTRY_SP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as running compiled code until the guard is
/// dropped (and gives it an alternate signal stack,
/// [`crate::sigstack::ensure_current_thread`]). Stack scans (the fault
/// handler's search for the IR call that entered a host function,
/// backtraces) look only between the current SP and this entry point, so a
/// fault in host code that is not running on behalf of compiled code is
/// never taken for one. The JIT's entry points (`call_dynamic`,
/// `TypedFunc::call`) do this.
#[inline]
pub fn enter_compiled_code() -> EntryGuard {
    let _ = crate::sigstack::ensure_current_thread();
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    let prev = ENTRY_SP.with(|e| {
        let prev = e.get();
        if prev == 0 {
            e.set(here);
        }
        prev
    });
    EntryGuard { prev }
}

/// See [`enter_compiled_code`].
#[must_use]
pub struct EntryGuard {
    prev: usize,
}

impl Drop for EntryGuard {
    fn drop(&mut self) {
        ENTRY_SP.with(|e| e.set(self.prev));
    }
}

/// Where the calling thread entered compiled code (0: it is not in any).
/// Async-signal-safe (a constant-initialized thread-local).
pub fn entry_sp() -> usize {
    ENTRY_SP.with(|e| e.get())
}

/// One word of this thread's stack, read for a conservative scan (the
/// fault handler's call-site search, the backtrace's frame-record search).
/// The scan reads slots no Rust object owns (padding, dead spills, a
/// sanitizer's redzones) and only compares them with registered code
/// ranges, so the load is a plain machine load that no sanitizer
/// instruments: AddressSanitizer would otherwise report the redzones the
/// scan crosses as a stack-buffer-overflow.
///
/// # Safety
/// `a` must be readable and 8-aligned.
#[inline]
pub(crate) unsafe fn read_stack_word(a: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let w: usize;
        // SAFETY: per the contract; a load, no other effect.
        unsafe {
            std::arch::asm!("mov {w}, qword ptr [{a}]", a = in(reg) a, w = lateout(reg) w,
                options(nostack, readonly, preserves_flags));
        }
        w
    }
    #[cfg(target_arch = "aarch64")]
    {
        let w: usize;
        // SAFETY: per the contract; a load, no other effect.
        unsafe {
            std::arch::asm!("ldr {w}, [{a}]", a = in(reg) a, w = lateout(reg) w,
                options(nostack, readonly, preserves_flags));
        }
        w
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    // SAFETY: per the contract.
    unsafe {
        std::ptr::read_volatile(a as *const usize)
    }
}

/// The innermost return address into registered code on the stack between
/// `sp` and `top` (at most `limit` bytes scanned): the PC of the IR call
/// that entered host code (`return address − 1`), if any, and the address
/// of the stack slot that holds it.
///
/// # Safety
/// `[sp, top)` must be readable memory (the thread's own stack).
pub unsafe fn call_site_on_stack(sp: usize, top: usize, limit: usize) -> Option<(usize, usize)> {
    let mut a = (sp + 7) & !7;
    let end = top.min(sp.saturating_add(limit));
    while a + 8 <= end {
        // SAFETY: per the contract.
        let w = unsafe { read_stack_word(a) };
        if is_return_address(w) {
            return Some((w - 1, a));
        }
        a += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function() -> CodeFunction {
        CodeFunction {
            start: 0x1000,
            len: 0x40,
            function: "f".into(),
            locs: vec![
                PcLoc {
                    start: 0,
                    end: 8,
                    line: 3,
                    col: 5,
                    op: "iadd",
                },
                PcLoc {
                    start: 8,
                    end: 0x20,
                    line: 4,
                    col: 5,
                    op: "load",
                },
            ],
            instrumented: false,
        }
    }

    #[test]
    fn pc_maps_to_its_ir_instruction() {
        let f = function();
        assert_eq!(
            f.site(0x1009).map(|s| (s.frame.line, s.frame.op)),
            Some((4, "load"))
        );
        assert_eq!(f.site(0x1000).map(|s| s.frame.line), Some(3));
        assert_eq!(f.site(0x1030), None, "a gap maps to nothing");
    }

    #[test]
    fn registered_code_resolves_until_dropped() {
        // An address range no real code uses in this test process.
        let mut f = function();
        f.start = 0x10_0000;
        let reg = register(vec![f], Arc::new(7u32));
        assert!(is_code(0x10_0009) && !is_code(0x10_0040));
        // A return address lies inside the function after its call: the
        // function's end (its next function's first address) is none.
        assert!(is_return_address(0x10_000a) && !is_return_address(0x10_0040));
        let got = site_of_pc(0x10_0009, |s| {
            (s.frame.function.to_string(), s.frame.line, s.offset)
        });
        assert_eq!(got, Some(("f".to_string(), 4, 9)));
        let gap = site_of_pc(0x10_0030, |s| {
            (s.frame.line, s.frame.op.to_string(), s.offset)
        });
        assert_eq!(gap, Some((0, "?".to_string(), 0x30)), "the function alone");
        let (_, owner) = owner_of(0x10_0000).unwrap();
        assert_eq!(owner.downcast_ref::<u32>(), Some(&7));
        drop(reg);
        assert!(!is_code(0x10_0009));
    }
}
