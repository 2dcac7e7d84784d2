//! Signal chaining: the one place that installs guardlift's signal
//! handlers and hands on the signals that are not guardlift's.
//!
//! Three features take signals: trap mode's guard traps ([`crate::trap`],
//! SIGILL and SIGTRAP), watchpoints ([`crate::watch`], SIGTRAP) and fatal
//! faults ([`crate::fault`], SIGSEGV, SIGBUS, SIGFPE and the SIGILL that is
//! not a guard trap). Each registers a [`Handler`] for a signal with
//! [`install`] in its [`Order`] slot. The first registration for a signal
//! saves the action installed before guardlift's (a host's handler, Rust's
//! stack-overflow handler, the default) and installs one dispatcher for it
//! (`SA_SIGINFO | SA_ONSTACK`: it runs on the thread's alternate stack,
//! [`crate::sigstack`]).
//!
//! The dispatcher asks the registered handlers in [`Order`] — watchpoints
//! (only their own perf-event traps), then guard traps (their PCs are also
//! inside registered code, which the fault handler would otherwise claim),
//! then faults — and returns as soon as one claims the signal. When none does, the **one chaining rule**: the previous action's
//! handler is called as it asked to be (`sa_sigaction` or `sa_handler`);
//! for `SIG_DFL` (or an ignored fatal signal) the default action is
//! restored and the signal re-raised, so the process dies of it as it would
//! have without guardlift; an ignored SIGTRAP stays ignored.
//!
//! Everything the dispatcher does is async-signal-safe: atomic loads, the
//! saved action (written before the dispatcher is installed), `sigaction`,
//! `raise`; `errno` is preserved around it.

/// A signal as the kernel delivered it to an `SA_SIGINFO` handler.
#[derive(Copy, Clone, Debug)]
pub struct Signal {
    /// The signal number.
    pub sig: libc::c_int,
    /// The kernel's `siginfo_t`.
    pub info: *mut libc::siginfo_t,
    /// The interrupted context (`ucontext_t`).
    pub uctx: *mut libc::c_void,
}

/// Which feature's handler a registration is; the dispatcher asks them in
/// this order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Order {
    /// Watchpoints: a perf-event SIGTRAP carrying guardlift's tag (first:
    /// the PC after a watched store may be a guard's trap instruction).
    Watchpoint = 0,
    /// Trap mode's guard traps: the PC is a registered trap instruction.
    GuardTrap = 1,
    /// Faults in registered code or in a host function it called.
    Fault = 2,
}

/// How many [`Order`] slots there are.
const ORDERS: usize = 3;

/// A guardlift handler: returns `true` when it handled the signal (the
/// dispatcher then returns), `false` when the signal is not its own. It is
/// called inside a signal handler: it must be async-signal-safe.
pub type Handler = fn(&Signal) -> bool;

/// Registers `handler` for `sig` in slot `order` (replacing what that slot
/// held), installing the dispatcher the first time `sig` is registered.
/// Errors when `sigaction` fails or the platform has no signal handlers
/// guardlift can use.
pub fn install(sig: libc::c_int, order: Order, handler: Handler) -> std::io::Result<()> {
    imp::install(sig, order, handler)
}

/// For a fault in a host function called from compiled code (spec §6.2):
/// offers `signal` to the action installed before guardlift's, first. Its
/// handler is called as [`install`]'s chaining rule calls it; `true` when
/// it returned and left guardlift's dispatcher installed (it took the
/// fault: returning retries the faulting instruction); `false` when there
/// is none (`SIG_DFL`, `SIG_IGN`) or it declined by restoring the default
/// action and returning (Rust's own SIGSEGV handler does that for a fault
/// that is no stack overflow), in which case the dispatcher is put back.
/// Async-signal-safe.
pub fn offer_to_previous(signal: &Signal) -> bool {
    imp::offer_to_previous(signal)
}

/// The calling thread's `errno`.
pub fn errno() -> libc::c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Signal {
    /// The PC of the interrupted instruction.
    pub fn pc(&self) -> usize {
        imp::context_regs(self.uctx).pc
    }

    /// The interrupted stack pointer.
    pub fn sp(&self) -> usize {
        imp::context_regs(self.uctx).sp
    }

    /// The interrupted frame pointer (the frame-record chain's head).
    pub fn fp(&self) -> usize {
        imp::context_regs(self.uctx).fp
    }

    /// The interrupted link register (aarch64's x30: the return address
    /// of a function that has not saved it yet); `None` on x86_64.
    pub fn lr(&self) -> Option<usize> {
        imp::context_regs(self.uctx).lr
    }

    /// The faulting address (`si_addr`) of SIGSEGV, SIGBUS, SIGFPE, SIGILL.
    pub fn fault_addr(&self) -> usize {
        // SAFETY: `info` is the kernel's siginfo for this signal (the
        // contract of a `Signal`); `si_addr` reads the union's fault arm.
        unsafe { (*self.info).si_addr() as usize }
    }

    /// `si_code`.
    pub fn code(&self) -> i32 {
        // SAFETY: as in `fault_addr`; `si_code` is a plain field.
        unsafe { (*self.info).si_code }
    }
}

/// Registers of an interrupted context.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
    pub lr: Option<usize>,
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::{Handler, Order, Regs, Signal, ORDERS};
    use std::cell::UnsafeCell;
    use std::mem::MaybeUninit;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::Mutex;

    /// Signal numbers below this can be registered (Linux has 64).
    const NSIG: usize = 65;

    #[allow(clippy::declare_interior_mutable_const)]
    const NO_HANDLER: AtomicUsize = AtomicUsize::new(0);
    #[allow(clippy::declare_interior_mutable_const)]
    const NO_HANDLERS: [AtomicUsize; ORDERS] = [NO_HANDLER; ORDERS];
    /// Per signal, per [`Order`]: the handler's address (0: none).
    static HANDLERS: [[AtomicUsize; ORDERS]; NSIG] = [NO_HANDLERS; NSIG];

    /// The actions installed before the dispatcher, per signal.
    struct Prev(UnsafeCell<[MaybeUninit<libc::sigaction>; NSIG]>);
    // SAFETY: a signal's entry is written once, under `INSTALL`, before the
    // dispatcher is installed for it (and `PREV_SET` published); after that
    // it is only read.
    unsafe impl Sync for Prev {}
    static PREV: Prev = Prev(UnsafeCell::new([MaybeUninit::uninit(); NSIG]));
    #[allow(clippy::declare_interior_mutable_const)]
    const UNSET: AtomicBool = AtomicBool::new(false);
    static PREV_SET: [AtomicBool; NSIG] = [UNSET; NSIG];
    /// Serializes installations.
    static INSTALL: Mutex<()> = Mutex::new(());

    pub fn install(sig: libc::c_int, order: Order, handler: Handler) -> std::io::Result<()> {
        let s = usize::try_from(sig)
            .ok()
            .filter(|&s| s > 0 && s < NSIG)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let _g = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        HANDLERS[s][order as usize].store(handler as usize, SeqCst);
        if PREV_SET[s].load(SeqCst) {
            return Ok(());
        }
        // SAFETY: plain sigaction calls with valid, initialized structs;
        // `PREV[s]` has no reader yet (the dispatcher is not installed for
        // `sig`) and writers are serialized by `INSTALL`.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            (*PREV.0.get())[s] = MaybeUninit::new(old);
            PREV_SET[s].store(true, SeqCst);
            let sa = ours();
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// The dispatcher's action.
    fn ours() -> libc::sigaction {
        // SAFETY: a zeroed sigaction is a valid value to fill in;
        // sigemptyset initializes its mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = dispatch as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            sa
        }
    }

    pub fn offer_to_previous(signal: &Signal) -> bool {
        let (sig, s) = (signal.sig, signal.sig as usize);
        if s >= NSIG || !PREV_SET[s].load(SeqCst) {
            return false;
        }
        // SAFETY: written before the dispatcher was installed for `sig`.
        let prev = unsafe { (*PREV.0.get())[s].assume_init() };
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            return false;
        }
        call_previous(Some(prev), signal);
        // SAFETY: sigaction is async-signal-safe; the structs are valid.
        unsafe {
            let mut cur: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut cur) != 0 {
                return false;
            }
            if cur.sa_sigaction == dispatch as *const () as usize {
                return true;
            }
            // It gave the signal back to the default: ours again, declined.
            let sa = ours();
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
        false
    }

    extern "C" fn dispatch(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        let saved = super::errno();
        let signal = Signal { sig, info, uctx };
        let s = sig as usize;
        let handled = s < NSIG
            && HANDLERS[s].iter().any(|h| match h.load(SeqCst) {
                0 => false,
                addr => {
                    // SAFETY: only `install` stores here, and only a `Handler`.
                    let f: Handler = unsafe { std::mem::transmute::<usize, Handler>(addr) };
                    f(&signal)
                }
            });
        if !handled && s < NSIG {
            let prev = PREV_SET[s]
                .load(SeqCst)
                // SAFETY: written before the dispatcher was installed for `sig`.
                .then(|| unsafe { (*PREV.0.get())[s].assume_init() });
            call_previous(prev, &signal);
        }
        // SAFETY: the thread's errno location is always valid.
        unsafe { *libc::__errno_location() = saved };
    }

    /// Hands `signal` to `prev`, the action installed before guardlift's
    /// (see the module docs for the rule).
    fn call_previous(prev: Option<libc::sigaction>, signal: &Signal) {
        let sig = signal.sig;
        let h = prev.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        if h == libc::SIG_IGN && sig == libc::SIGTRAP {
            return;
        }
        let Some(p) = prev.filter(|_| h != libc::SIG_DFL && h != libc::SIG_IGN) else {
            // Die of the original signal, as without guardlift: restore the
            // default action and re-raise (delivered when we return; a
            // faulting instruction would fault again anyway).
            // SAFETY: sigaction and raise are async-signal-safe; `sa` is a
            // valid, initialized struct.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
                libc::raise(sig);
            }
            return;
        };
        // SAFETY: `h` is the previous action's handler (neither SIG_DFL nor
        // SIG_IGN), called with the signature its flags say it has, with
        // the kernel's own arguments.
        unsafe {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(h);
                f(sig, signal.info, signal.uctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
                f(sig);
            }
        }
    }

    /// PC, SP and FP of the interrupted context `uctx` (a `ucontext_t`).
    pub fn context_regs(uctx: *mut libc::c_void) -> Regs {
        let uc = uctx as *const libc::ucontext_t;
        // SAFETY: a `Signal`'s `uctx` is the context the kernel passed to
        // an SA_SIGINFO handler: a valid `ucontext_t`.
        let m = unsafe { &(*uc).uc_mcontext };
        #[cfg(target_arch = "x86_64")]
        let regs = Regs {
            pc: m.gregs[libc::REG_RIP as usize] as usize,
            sp: m.gregs[libc::REG_RSP as usize] as usize,
            fp: m.gregs[libc::REG_RBP as usize] as usize,
            lr: None,
        };
        #[cfg(target_arch = "aarch64")]
        let regs = Regs {
            pc: m.pc as usize,
            sp: m.sp as usize,
            fp: m.regs[29] as usize,
            lr: Some(m.regs[30] as usize),
        };
        regs
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    use super::{Handler, Order, Regs};

    pub fn install(_sig: libc::c_int, _order: Order, _handler: Handler) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "guardlift's signal handlers need Linux on x86_64 or aarch64",
        ))
    }

    pub fn context_regs(_uctx: *mut libc::c_void) -> Regs {
        Regs::default()
    }

    pub fn offer_to_previous(_signal: &super::Signal) -> bool {
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_signals_are_refused() {
        assert!(install(0, Order::Fault, |_| false).is_err());
        assert!(install(1000, Order::Fault, |_| false).is_err());
    }
}
