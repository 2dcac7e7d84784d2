//! A fatal signal in a `--link` library function the interpreter called
//! (`run --link LIB.so --engine interp`): reported as `host_fault` at the
//! IR call, as the JIT's fault handler reports a fault in a host function
//! (spec §6.2), instead of the process dying of the signal.
//!
//! A thread marks the extent of each native call ([`guarded`]). The
//! handler (registered with the runtime's signal chain in the fault slot;
//! the interpreter registers no compiled code, so the runtime's own fault
//! handler is not installed in a run that uses this) claims a SIGSEGV,
//! SIGBUS, SIGFPE or SIGILL only on a thread inside such a call, records
//! the signal, address and PC, and resumes the thread in [`landing`] on its
//! own stack below the faulting frame — the library function is abandoned,
//! never returned to. There, in ordinary context, the interpreter's
//! published call ([`guardlift_interp::host_call_site`]) names the site and
//! the run's reporter ([`install`]) prints the reports and the fault and
//! aborts (134). A fault near the low end of the stack (an overflow) is
//! left to the action before guardlift's (Rust's overflow handler).
//! Limitation: the reporter allocates; a library that faulted while holding
//! the C allocator's lock would deadlock it (no memory-safe library does).

use guardlift_interp::HostCallSite;
use guardlift_runtime::sigchain::{self, Order, Signal};
use std::cell::Cell;
use std::sync::OnceLock;

/// What the handler saw.
#[derive(Copy, Clone, Debug)]
pub struct NativeFault {
    /// The signal number.
    pub sig: i32,
    /// `si_addr`.
    pub address: usize,
    /// The faulting instruction.
    pub pc: usize,
}

/// Prints the run's reports and the fault report, and ends the process
/// (it never returns).
pub type Reporter =
    Box<dyn Fn(NativeFault, Option<HostCallSite>) -> std::convert::Infallible + Send + Sync>;

static REPORTER: OnceLock<Reporter> = OnceLock::new();

thread_local! {
    /// Inside a native call of the interpreter.
    static IN_NATIVE: Cell<bool> = const { Cell::new(false) };
    /// The fault the handler recorded for [`landing`].
    static FAULT: Cell<(i32, usize, usize)> = const { Cell::new((0, 0, 0)) };
}

/// How close to the stack's low end a fault is an overflow.
const OVERFLOW_SLACK: usize = 64 << 10;
/// Room left below the faulting SP before the landing frame (beyond
/// x86-64's 128-byte red zone).
const LANDING_GAP: usize = 512;

/// Installs the handler (once per process: the first reporter stays).
pub fn install(reporter: Reporter) -> std::io::Result<()> {
    if REPORTER.set(reporter).is_err() {
        return Ok(());
    }
    for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL] {
        sigchain::install(sig, Order::Fault, on_fault)?;
    }
    Ok(())
}

/// Runs `f` (a native call) marked as one for the handler.
pub fn guarded<R>(f: impl FnOnce() -> R) -> R {
    // The handler's stack, and the thread's bounds it tests (cheap after
    // the first call on a thread); without them a fault is not claimed.
    let _ = guardlift_runtime::sigstack::ensure_current_thread();
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_NATIVE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(IN_NATIVE.with(|c| c.replace(true)));
    f()
}

/// The handler: claims a fault inside a native call and resumes the thread
/// in [`landing`]. Async-signal-safe (thread-local cells, no allocation).
fn on_fault(s: &Signal) -> bool {
    if !IN_NATIVE.with(|c| c.get()) || REPORTER.get().is_none() {
        return false;
    }
    let sp = s.sp();
    let near_low_end = guardlift_runtime::sigstack::thread_stack_bounds()
        .is_none_or(|(low, high)| sp < low.saturating_add(OVERFLOW_SLACK) || sp >= high);
    if near_low_end {
        return false;
    }
    IN_NATIVE.with(|c| c.set(false));
    FAULT.with(|c| c.set((s.sig, s.fault_addr(), s.pc())));
    let new_sp = (sp - LANDING_GAP) & !15;
    // SAFETY: `uctx` is the interrupted context the kernel passed to this
    // SA_SIGINFO handler; the thread resumes in `landing` on its own stack
    // below every live frame (the faulting one included), as if it had been
    // called there, and never returns from it.
    unsafe { resume_in_landing(s.uctx, new_sp) };
    true
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn resume_in_landing(uctx: *mut libc::c_void, sp: usize) {
    // SAFETY: the caller passes the handler's ucontext_t.
    let uc = unsafe { &mut *(uctx as *mut libc::ucontext_t) };
    let g = &mut uc.uc_mcontext.gregs;
    g[libc::REG_RIP as usize] = landing as *const () as usize as i64;
    // A call's return address slot: at entry RSP + 8 is 16-aligned.
    g[libc::REG_RSP as usize] = (sp - 8) as i64;
    g[libc::REG_RBP as usize] = 0;
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn resume_in_landing(uctx: *mut libc::c_void, sp: usize) {
    // SAFETY: the caller passes the handler's ucontext_t.
    let uc = unsafe { &mut *(uctx as *mut libc::ucontext_t) };
    let m = &mut uc.uc_mcontext;
    m.pc = landing as *const () as usize as u64;
    m.sp = sp as u64;
    m.regs[29] = 0;
    m.regs[30] = 0;
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
unsafe fn resume_in_landing(_uctx: *mut libc::c_void, _sp: usize) {
    // No native calls from the interpreter here (`native::MAX_INT_ARGS`).
    // SAFETY: abort is async-signal-safe.
    unsafe { libc::abort() }
}

/// Where a faulting thread resumes, in ordinary context: reports the fault
/// through the run's reporter, which ends the process.
extern "C" fn landing() -> ! {
    let (sig, address, pc) = FAULT.with(|c| c.get());
    let site = guardlift_interp::host_call_site();
    match REPORTER.get() {
        Some(r) => match r(NativeFault { sig, address, pc }, site) {},
        None => std::process::abort(),
    }
}
