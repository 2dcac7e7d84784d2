//! Faults (spec §6.2): the PC → IR-site map of compiled code, and the
//! handler that turns a fatal signal in generated code, or in a host
//! function it called, into a `host_fault` (or `stack_overflow`) report.
//!
//! # The PC → IR-site map
//!
//! The JIT registers, for each compiled function, its code range and the
//! source locations Cranelift kept per machine instruction, each resolved
//! to the IR instruction's line, column and opcode ([`CodeFunction`],
//! [`Runtime::register_code`]). [`site_of_pc`] maps any PC inside
//! registered code to its IR site, and [`call_site_on_stack`] finds the IR
//! call through which the thread entered host code. Lookups are
//! async-signal-safe (a [`SigTable`] snapshot; no lock, no allocation), so
//! other signal-driven features (watchpoints naming a writer) reuse them.
//!
//! # The handler
//!
//! Installed (`SA_SIGINFO | SA_ONSTACK`, on the thread's alternate stack,
//! see [`crate::sigstack`]) for SIGSEGV, SIGBUS and SIGFPE the first time
//! code is registered. For a fault whose PC is in registered code, the site
//! is the instruction executing; otherwise, if the thread is inside a call
//! into compiled code ([`enter_compiled_code`]), the innermost return
//! address into registered code between the interrupted SP and that entry
//! point is the IR call that entered the host function. Neither:
//! not ours, chained to the action installed before (Rust's own
//! stack-overflow handler, a host's, or the default: the process dies of
//! the signal as without guardlift).
//!
//! Ours: it claims the final report latch ([`crate::output`]), writes the
//! reports recorded so far by the code's runtime (if its sink is not
//! locked at that moment), then the fault report — human, or JSON lines
//! with `json=1` — to the runtime's log (stderr; stderr with a note when
//! the log fails), streaming from the stack, and calls `abort()` (status
//! 134). A SIGSEGV whose address lies at the low end of the thread's stack
//! (its guard page) is a `stack_overflow` instead.

use crate::runtime::Runtime;
use crate::sigtable::SigTable;
use std::sync::Arc;

/// The IR instruction that one range of machine code implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcLoc {
    /// Code offsets `[start, end)` from the function's start.
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub col: u32,
    pub op: &'static str,
}

/// One compiled function: its code range and PC → IR-site map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFunction {
    /// Absolute address of the first instruction.
    pub start: usize,
    /// Code size in bytes.
    pub len: usize,
    pub function: String,
    /// Sorted by `start`, not overlapping.
    pub locs: Vec<PcLoc>,
}

/// An IR site found for a PC.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PcSite<'a> {
    pub function: &'a str,
    pub line: u32,
    pub col: u32,
    pub op: &'static str,
}

impl CodeFunction {
    /// The IR site of `pc` (which must be in this function), if mapped.
    pub fn site(&self, pc: usize) -> Option<PcSite<'_>> {
        let off = pc.checked_sub(self.start)? as u32;
        let i = self.locs.partition_point(|l| l.end <= off);
        let l = self.locs.get(i).filter(|l| l.start <= off)?;
        Some(PcSite {
            function: &self.function,
            line: l.line,
            col: l.col,
            op: l.op,
        })
    }
}

#[derive(Clone)]
struct Entry {
    func: Arc<CodeFunction>,
    rt: *const Runtime,
    reg: u64,
}

// SAFETY: `rt` points to a runtime kept alive by the registration that owns
// the entry; entries are only read through the table.
unsafe impl Send for Entry {}
unsafe impl Sync for Entry {}

static CODE: SigTable<Entry> = SigTable::new();
static NEXT_REG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Keeps compiled code registered; dropping it removes it (do that before
/// the code is unmapped).
pub struct CodeRegistration {
    id: u64,
    _rt: Arc<Runtime>,
}

impl std::fmt::Debug for CodeRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeRegistration")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for CodeRegistration {
    fn drop(&mut self) {
        let id = self.id;
        CODE.update(|v| v.retain(|e| e.reg != id));
    }
}

impl Runtime {
    /// Registers compiled functions (see the module docs) and installs the
    /// fault handler the first time. The registration keeps the runtime
    /// alive. Errors when `sigaction` fails.
    pub fn register_code(
        self: &Arc<Self>,
        funcs: Vec<CodeFunction>,
    ) -> std::io::Result<CodeRegistration> {
        imp::install()?;
        let id = NEXT_REG.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let rt = Arc::as_ptr(self);
        let entries: Vec<Entry> = funcs
            .into_iter()
            .map(|f| Entry {
                func: Arc::new(f),
                rt,
                reg: id,
            })
            .collect();
        CODE.update(move |v| {
            v.extend(entries);
            v.sort_by_key(|e| e.func.start);
        });
        Ok(CodeRegistration {
            id,
            _rt: self.clone(),
        })
    }
}

impl Runtime {
    /// Writes a fault report to the log (stderr by default), human or a
    /// JSON line as configured: how engines without a signal (the
    /// interpreter) print what the fault handler prints.
    pub fn write_fault_report(&self, r: &FaultReport<'_>) {
        let (_, json) = self.trap_scratch().output();
        let text = if json {
            r.json().to_string()
        } else {
            r.to_string()
        };
        self.write_log_text(&text);
    }
}

/// Runs `f` on the registered function containing `pc` and its runtime.
/// Async-signal-safe when `f` is.
fn with_code<R>(pc: usize, f: impl FnOnce(&Arc<CodeFunction>, *const Runtime) -> R) -> Option<R> {
    CODE.read(|es| {
        let i = es.partition_point(|e| e.func.start <= pc).checked_sub(1)?;
        let e = &es[i];
        (pc < e.func.start + e.func.len).then(|| f(&e.func, e.rt))
    })
}

/// Runs `f` on the IR site of `pc` if it is in registered code (the
/// site's fields are 0 / `"?"` where Cranelift kept no source location).
/// Async-signal-safe when `f` is: the way for signal-driven features to
/// name the IR instruction at a PC.
pub fn site_of_pc<R>(pc: usize, f: impl FnOnce(PcSite<'_>) -> R) -> Option<R> {
    with_code(pc, |func, _| {
        f(func.site(pc).unwrap_or(PcSite {
            function: &func.function,
            line: 0,
            col: 0,
            op: "?",
        }))
    })
}

thread_local! {
    /// The stack pointer (roughly) where the thread's outermost call into
    /// compiled code began; 0 when it runs no compiled code.
    static ENTRY_SP: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as running compiled code until the guard is
/// dropped (and gives it an alternate signal stack,
/// [`crate::sigstack::ensure_current_thread`]). The fault handler looks for
/// the IR call that entered a host function only between the faulting SP
/// and this entry point, so a fault in host code that is not running on
/// behalf of compiled code is never taken for one. The JIT's entry points
/// (`call_dynamic`, `TypedFunc::call`) do this.
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
pub(crate) fn entry_sp() -> usize {
    ENTRY_SP.with(|e| e.get())
}

/// Is `pc` inside registered code?
pub fn is_code(pc: usize) -> bool {
    with_code(pc, |_, _| ()).is_some()
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
/// that entered host code (`return address − 1`), if any.
///
/// # Safety
/// `[sp, top)` must be readable memory (the thread's own stack).
pub unsafe fn call_site_on_stack(sp: usize, top: usize, limit: usize) -> Option<usize> {
    let mut a = (sp + 7) & !7;
    let end = top.min(sp.saturating_add(limit));
    while a + 8 <= end {
        // SAFETY: per the contract.
        let w = unsafe { read_stack_word(a) };
        if w > 1 && is_code(w - 1) {
            return Some(w - 1);
        }
        a += 8;
    }
    None
}

/// The rest of the JSON object a fault prints on stdout, set once per
/// process by a host that prints one JSON object per run (the CLI's
/// `--json`): `"engine":"jit",...` (members without braces).
static STDOUT_JSON_TAIL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Makes the fault handler also print, on stdout, one JSON object
/// `{"result":null,"reports":[...every report and the fault...],TAIL,"aborted":true}`
/// (`tail`: JSON object members without braces). The first call wins.
pub fn set_stdout_json_tail(tail: String) {
    let _ = STDOUT_JSON_TAIL.set(tail);
}

/// The names of the fatal signals the handler takes.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

/// How a fault was caught.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FaultCause<'a> {
    /// A fatal signal in native code.
    Signal {
        signal: &'static str,
        address: usize,
        pc: usize,
        /// In a host function called at the site (not in IR code itself).
        in_host: bool,
    },
    /// The interpreter's checked access or depth limit: its message.
    Interp(&'a str),
}

/// A `host_fault` or `stack_overflow` report, formatted without
/// allocating (the fault handler prints it; the CLI prints the
/// interpreter's faults with it, so every engine reads the same).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FaultReport<'a> {
    pub stack_overflow: bool,
    /// The site: the instruction executing, or the call into host code.
    pub function: &'a str,
    pub line: u32,
    pub col: u32,
    pub op: &'a str,
    pub cause: FaultCause<'a>,
}

impl FaultReport<'_> {
    pub fn kind(&self) -> &'static str {
        if self.stack_overflow {
            "stack_overflow"
        } else {
            "host_fault"
        }
    }

    /// The JSON object (one line, ending in a newline).
    pub fn json(&self) -> impl std::fmt::Display + '_ {
        FaultJson(self)
    }
}

impl std::fmt::Display for FaultReport<'_> {
    fn fmt(&self, s: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            s,
            "==guardlift== ERROR: {} at @{} {}:{} ({})",
            self.kind(),
            self.function,
            self.line,
            self.col,
            self.op
        )?;
        match self.cause {
            FaultCause::Signal {
                signal,
                address,
                pc,
                in_host,
            } => {
                if self.stack_overflow {
                    writeln!(
                        s,
                        "    the stack is exhausted ({signal} at address {address:#x}, pc {pc:#x})"
                    )?;
                } else {
                    writeln!(s, "    {signal} at address {address:#x}, pc {pc:#x}")?;
                }
                if in_host {
                    writeln!(s, "    in a host function called by this IR call")?;
                }
            }
            FaultCause::Interp(msg) => writeln!(s, "    {msg}")?,
        }
        writeln!(s, "    seen 1 time(s)")
    }
}

/// The JSON line of a fault report.
struct FaultJson<'a>(&'a FaultReport<'a>);

impl std::fmt::Display for FaultJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::trap::JsonStr;
        let r = self.0;
        write!(
            f,
            "{{\"kind\":\"{}\",\"site\":null,\"function\":{},\"line\":{},\"col\":{},\"op\":{},\"count\":1",
            r.kind(),
            JsonStr(r.function),
            r.line,
            r.col,
            JsonStr(r.op),
        )?;
        match r.cause {
            FaultCause::Signal {
                signal,
                address,
                pc,
                in_host,
            } => write!(
                f,
                ",\"signal\":\"{signal}\",\"address\":\"{address:#x}\",\"pc\":\"{pc:#x}\",\"in_host\":{in_host}"
            )?,
            FaultCause::Interp(msg) => write!(
                f,
                ",\"signal\":null,\"address\":null,\"message\":{}",
                JsonStr(msg)
            )?,
        }
        f.write_str("}\n")
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::*;
    use crate::trap::imp::{call_previous, context_pc};
    use crate::trap::JsonReport;
    use std::cell::UnsafeCell;
    use std::mem::MaybeUninit;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};
    use std::sync::Once;

    const SIGNALS: [libc::c_int; 3] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE];
    /// How far up the stack the call-site scan looks.
    const SCAN_BYTES: usize = 1 << 20;
    /// A fault this close above the stack's low end (or below it) is an overflow.
    const OVERFLOW_SLACK: usize = 64 << 10;

    struct Prev(UnsafeCell<[MaybeUninit<libc::sigaction>; 3]>);
    // SAFETY: written once before our handler is installed; read only by it.
    unsafe impl Sync for Prev {}
    static PREV: Prev = Prev(UnsafeCell::new([MaybeUninit::uninit(); 3]));
    static PREV_SET: [AtomicBool; 3] = [
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicBool::new(false),
    ];
    static INSTALL: Once = Once::new();
    static INSTALL_ERR: AtomicI32 = AtomicI32::new(0);

    pub fn install() -> std::io::Result<()> {
        INSTALL.call_once(|| {
            for (i, &sig) in SIGNALS.iter().enumerate() {
                // SAFETY: plain sigaction calls with valid structs.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                        INSTALL_ERR.store(crate::trap::imp::errno(), SeqCst);
                        return;
                    }
                    (*PREV.0.get())[i] = MaybeUninit::new(old);
                    PREV_SET[i].store(true, SeqCst);
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = on_fault as *const () as usize;
                    sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut sa.sa_mask);
                    if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                        INSTALL_ERR.store(crate::trap::imp::errno(), SeqCst);
                        return;
                    }
                }
            }
        });
        match INSTALL_ERR.load(SeqCst) {
            0 => Ok(()),
            e => Err(std::io::Error::from_raw_os_error(e)),
        }
    }

    /// The stack pointer of the interrupted context.
    ///
    /// # Safety
    /// `uctx` is the context an SA_SIGINFO handler received.
    unsafe fn context_sp(uctx: *mut libc::c_void) -> usize {
        let uc = uctx as *const libc::ucontext_t;
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: per the contract.
            unsafe { (*uc).uc_mcontext.gregs[libc::REG_RSP as usize] as usize }
        }
        #[cfg(target_arch = "aarch64")]
        {
            // SAFETY: per the contract.
            unsafe { (*uc).uc_mcontext.sp as usize }
        }
    }

    extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: the kernel passes valid info and context.
        let (pc, sp, addr) = unsafe {
            (
                context_pc(uctx),
                context_sp(uctx),
                (*info).si_addr() as usize,
            )
        };
        let bounds = crate::sigstack::thread_stack_bounds();
        let (site_pc, in_host) = if is_code(pc) {
            (Some(pc), false)
        } else {
            // Only between the faulting SP and where the thread entered
            // compiled code: the frames of compiled code and what it called.
            let top = entry_sp();
            let on_stack = bounds.is_some_and(|(low, high)| low <= sp && top <= high);
            let found = (top != 0 && sp < top && on_stack)
                // SAFETY: [sp, top) is live stack of this thread.
                .then(|| unsafe { call_site_on_stack(sp, top, SCAN_BYTES) })
                .flatten();
            (found, true)
        };
        let Some(site_pc) = site_pc else {
            // Not in guardlift code: whoever was there before decides.
            if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
                let prev = PREV_SET[i]
                    .load(SeqCst)
                    // SAFETY: written before our handler was installed.
                    .then(|| unsafe { (*PREV.0.get())[i].assume_init() });
                // SAFETY: our handler's own arguments.
                unsafe { call_previous(prev, sig, info, uctx) };
            }
            return;
        };
        let overflow = sig == libc::SIGSEGV
            && bounds.is_some_and(|(low, _)| {
                addr < low.saturating_add(OVERFLOW_SLACK)
                    && addr >= low.saturating_sub(OVERFLOW_SLACK)
            });
        report_and_abort(sig, pc, site_pc, addr, in_host, overflow)
    }

    fn report_and_abort(
        sig: libc::c_int,
        pc: usize,
        site_pc: usize,
        addr: usize,
        in_host: bool,
        overflow: bool,
    ) -> ! {
        if !crate::output::claim_final_report() {
            crate::output::wait_for_exit()
        }
        // Copy out what we need: the function (an Arc, never dropped: this
        // ends in abort) and the runtime.
        let found = with_code(site_pc, |f, rt| {
            let (line, col, op) = f
                .site(site_pc)
                .map_or((0, 0, "?"), |s| (s.line, s.col, s.op));
            (std::mem::ManuallyDrop::new(f.clone()), rt, line, col, op)
        });
        let Some((f, rt, line, col, op)) = found else {
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() }
        };
        // SAFETY: the code's registration keeps its runtime alive.
        let rt = unsafe { &*rt };
        let (fd, json) = rt.trap_scratch().output();
        // The reports recorded before the fault, then the fault.
        let pending = rt.try_with_reports(|rs| {
            for r in rs {
                let h = r.human();
                if json {
                    crate::output::write_display_fd_or_stderr(fd, &JsonReport(&h));
                } else {
                    crate::output::write_display_fd_or_stderr(fd, &h);
                }
            }
        });
        if pending.is_none() {
            crate::output::write_fd_or_stderr(
                fd,
                b"guardlift: the reports recorded before this fault could not be read (the runtime was busy)\n",
            );
        }
        let report = FaultReport {
            stack_overflow: overflow,
            function: &f.function,
            line,
            col,
            op,
            cause: FaultCause::Signal {
                signal: signal_name(sig),
                address: addr,
                pc,
                in_host,
            },
        };
        if json {
            crate::output::write_display_fd_or_stderr(fd, &FaultJson(&report));
        } else {
            crate::output::write_display_fd_or_stderr(fd, &report);
        }
        if let Some(tail) = STDOUT_JSON_TAIL.get() {
            stdout_json(rt, &report, tail);
        }
        // SAFETY: abort is async-signal-safe.
        unsafe { libc::abort() }
    }

    /// The JSON object of [`set_stdout_json_tail`] on stdout.
    fn stdout_json(rt: &Runtime, report: &FaultReport, tail: &str) {
        use std::fmt::Write as _;
        let mut w = crate::output::FdWriter::new(libc::STDOUT_FILENO);
        let _ = w.write_str("{\"result\":null,\"reports\":[");
        let _ = rt.try_with_reports(|rs| {
            for r in rs {
                let _ = write!(w, "{},", JsonReport(&r.human()));
            }
        });
        let _ = writeln!(w, "{}],{tail},\"aborted\":true}}", report.json());
        let _ = w.finish();
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    pub fn install() -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_maps_to_its_ir_instruction() {
        let f = CodeFunction {
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
        };
        assert_eq!(f.site(0x1009).map(|s| (s.line, s.op)), Some((4, "load")));
        assert_eq!(f.site(0x1000).map(|s| s.line), Some(3));
        assert_eq!(f.site(0x1030), None, "a gap maps to nothing");
    }
}
