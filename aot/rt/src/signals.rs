//! The target's signal handlers (a port of the retired C support's
//! `gl_signals.c`): a guard's trap instruction (trap mode) becomes a `T`
//! line, a fatal signal in IR code or in a host function IR code called a
//! `C` line, anything else an `S` line; the reports recorded before are
//! written first, then the process dies of the signal
//! (docs/TARGETS.md, "Trap mode on a target", "Faults on a target").
//!
//! The handlers run on the run thread's alternate signal stack, allocate
//! nothing and take no lock that the interrupted code may hold: the
//! protocol goes through [`crate::out`]'s static buffer, the code table and
//! the stack are only read, the reports are read with the sink's
//! `try_lock` ([`crate::reports::write_pending`]).

use crate::code::{self, ENTRY_SP, STACK_LO};
use crate::out;
use guardlift_abi::protocol as ev;
use guardlift_abi::{trap_token, TRAP_OWNER_OFFSET, TRAP_READY_OFFSET, TRAP_VALUES_OFFSET};
use guardlift_runtime::backtrace::MAX_FRAMES;
use std::sync::atomic::{AtomicU64, Ordering};

/// A SIGSEGV this close to the low end of the run thread's stack (above
/// or below) is a stack overflow (as the host's fault handler decides).
pub const OVERFLOW_SLACK: u64 = 64 << 10;

/// Bytes of the run thread's alternate signal stack.
const ALT_STACK_BYTES: usize = 256 << 10;

/// What a fault handler needs of the interrupted context: PC, stack
/// pointer, link register (0 on x86_64) and frame pointer.
#[derive(Copy, Clone)]
struct Regs {
    pc: u64,
    sp: u64,
    lr: u64,
    fp: u64,
}

fn regs(uctx: *mut libc::c_void) -> Regs {
    let uc = uctx.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes the interrupted context to an SA_SIGINFO handler.
    let m = unsafe { &(*uc).uc_mcontext };
    #[cfg(target_arch = "x86_64")]
    let r = Regs {
        pc: m.gregs[libc::REG_RIP as usize] as u64,
        sp: m.gregs[libc::REG_RSP as usize] as u64,
        lr: 0,
        fp: m.gregs[libc::REG_RBP as usize] as u64,
    };
    #[cfg(target_arch = "aarch64")]
    let r = Regs {
        pc: m.pc,
        sp: m.sp,
        lr: m.regs[30],
        fp: m.regs[29],
    };
    r
}

/// The scratch word at `offset` of the trap scratch area at the runtime pointer.
fn scratch_load(offset: i32) -> u64 {
    let base = crate::guardlift_runtime.as_ptr() as usize;
    let p =
        (base + guardlift_abi::TRAP_SCRATCH_OFFSET as usize + offset as usize) as *const AtomicU64;
    // SAFETY: the scratch area is at the start of the runtime in the cell,
    // its words atomics (guardlift_abi::offsets).
    unsafe { (*p).load(Ordering::SeqCst) }
}

/// The IR call chain outside a fault's site, innermost first (the
/// frame-record walk); `leaf`: the first is the link
/// register's call (a function without a frame record of its own).
fn fault_frames(
    r: &Regs,
    in_host: bool,
    site: u64,
    out: &mut [u64; MAX_FRAMES],
    leaf: &mut bool,
) -> usize {
    let top = ENTRY_SP.load(Ordering::SeqCst);
    let max = MAX_FRAMES - 1;
    if top == 0 || r.sp >= top {
        return 0;
    }
    if in_host {
        if r.sp < STACK_LO.load(Ordering::SeqCst) {
            return 0;
        }
        let mut rec = code::first_ir_record(r.sp, top);
        if rec != 0 && code::stack_word(rec + 8) - 1 == site {
            rec = code::stack_word(rec);
        }
        return code::walk_records_into(rec, top, &mut out[..max], 0);
    }
    let rec = if r.fp >= r.sp && r.fp < top { r.fp } else { 0 };
    let fn_pc = code::code_index(r.pc).map(|c| c.0);
    let fn_lr = if r.lr > 1 {
        code::code_index(r.lr - 1).map(|c| c.0)
    } else {
        None
    };
    let is_leaf =
        fn_lr.is_some() && fn_lr != fn_pc && !(rec != 0 && code::stack_word(rec + 8) == r.lr);
    let mut n = 0;
    if is_leaf {
        out[0] = r.lr - 1;
        n = 1;
    }
    *leaf = is_leaf;
    code::walk_records_into(rec, top, &mut out[..max], n)
}

/// x86_64 has no link register: for a fault in IR code, the return address
/// where the prologue left it (every function starts `push rbp; mov rbp,
/// rsp`, 4 bytes, then probes the stack), else in the function's record.
/// Returns ALT, and fixes the walk (`LEAF` 1, one frame more) when it
/// starts with ALT.
#[cfg(target_arch = "x86_64")]
fn x86_alt(r: &Regs, frames: &mut [u64; MAX_FRAMES], n: &mut usize, leaf: &mut bool) -> u64 {
    let Some((_, off)) = code::code_index(r.pc) else {
        return 0;
    };
    let top = ENTRY_SP.load(Ordering::SeqCst);
    let ra = if off == 0 {
        code::stack_word(r.sp)
    } else if off < 4 {
        code::stack_word(r.sp + 8)
    } else if r.fp >= r.sp && r.fp + 16 <= top {
        code::stack_word(r.fp + 8)
    } else {
        0
    };
    if ra <= 1 || !code::in_code(ra - 1) {
        return 0;
    }
    let alt = ra - 1;
    if off >= 4 && *n > 0 && frames[0] == alt {
        *leaf = true;
        *n = code::walk_records_into(r.fp, top, frames, 0);
    }
    alt
}

/// A fatal signal: in IR code, or in a host function IR code called (the
/// link register, else the innermost return address into IR code on the
/// stack, is the call), the reports and a `C` line; else `S`. Then the
/// process dies of the signal.
extern "C" fn on_crash(sig: libc::c_int, si: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let r = regs(uctx);
    // SAFETY: the kernel's siginfo for a fault carries the address.
    let addr = unsafe { (*si).si_addr() } as u64;
    let (top, lo) = (
        ENTRY_SP.load(Ordering::SeqCst),
        STACK_LO.load(Ordering::SeqCst),
    );
    let in_host = !code::in_code(r.pc);
    let site = if !in_host {
        r.pc
    } else if r.lr > 1 && code::in_code(r.lr - 1) {
        r.lr - 1
    } else if r.sp >= lo && r.sp < top {
        code::call_on_stack(r.sp, top).map_or(0, |c| c.0)
    } else {
        0
    };
    if site == 0 {
        out::event(ev::SIGNAL);
        out::field(sig as u64);
        out::nl();
        out::flush();
        out::die_of(sig);
        return;
    }
    let overflow = sig == libc::SIGSEGV
        && lo != 0
        && addr.saturating_add(OVERFLOW_SLACK) >= lo
        && addr < lo + OVERFLOW_SLACK;
    crate::reports::write_pending();
    let mut frames = [0u64; MAX_FRAMES];
    let mut leaf = false;
    #[allow(unused_mut)]
    let mut n = fault_frames(&r, in_host, site, &mut frames, &mut leaf);
    #[allow(unused_mut)]
    let mut alt = if !in_host && r.lr > 1 { r.lr - 1 } else { 0 };
    #[cfg(target_arch = "x86_64")]
    if !in_host {
        alt = x86_alt(&r, &mut frames, &mut n, &mut leaf);
    }
    out::event(ev::CRASH);
    for f in [sig as u64, addr, r.pc, in_host as u64, overflow as u64] {
        out::field(f);
    }
    code::write_pc(site);
    code::write_pc(alt);
    out::field(leaf as u64);
    code::write_pcs(&frames[..n]);
    out::nl();
    out::flush();
    out::die_of(sig);
}

/// A trap instruction: a guard's (its observed values in the scratch area
/// when it could claim it) is a `T` line, then the reports and `A`; any
/// other is a fatal signal like a segfault.
extern "C" fn on_trap(sig: libc::c_int, si: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let pc = regs(uctx).pc;
    let Some(t) = code::traps().iter().find(|t| t.pc as u64 == pc) else {
        on_crash(sig, si, uctx);
        return;
    };
    let token = trap_token(t.site);
    let mut v = [0u64; 3];
    let have = scratch_load(TRAP_OWNER_OFFSET) == token && scratch_load(TRAP_READY_OFFSET) == token;
    if have {
        for (k, x) in v.iter_mut().enumerate() {
            *x = scratch_load(TRAP_VALUES_OFFSET + 8 * k as i32);
        }
    }
    out::event(ev::TRAP);
    for f in [
        sig as u64,
        pc,
        1,
        t.kind.into(),
        t.site.into(),
        have as u64,
        v[0],
        v[1],
        v[2],
    ] {
        out::field(f);
    }
    out::nl();
    crate::reports::write_pending();
    out::line(ev::ABORT);
    out::flush();
    out::die_of(libc::SIGABRT);
}

#[cfg(not(target_arch = "x86_64"))]
type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

// The handlers' entries realign the stack on x86_64. The ABI enters a
// function with rsp % 16 == 8 and compiled code keeps 16-byte locals with
// aligned SSE stores; qemu-x86_64 7.2 (Debian 12's) builds the signal frame
// 16-byte aligned, so a handler would start with rsp % 16 == 0 and its
// first aligned store fault (docs/TARGETS.md, "qemu-x86_64's misaligned
// signal frames"). On a real kernel the realignment costs one `and`.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.gl_rt_signal_entries,\"ax\",@progbits",
    ".p2align 4",
    "gl_rt_on_crash_entry:",
    "push rbp",
    "mov rbp, rsp",
    "and rsp, -16",
    "call {crash}",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".p2align 4",
    "gl_rt_on_trap_entry:",
    "push rbp",
    "mov rbp, rsp",
    "and rsp, -16",
    "call {trap}",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".popsection",
    crash = sym on_crash,
    trap = sym on_trap,
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn gl_rt_on_crash_entry(sig: libc::c_int, si: *mut libc::siginfo_t, uctx: *mut libc::c_void);
    fn gl_rt_on_trap_entry(sig: libc::c_int, si: *mut libc::siginfo_t, uctx: *mut libc::c_void);
}

/// The addresses `sigaction` gets for the two handlers.
fn entries() -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    return (
        gl_rt_on_crash_entry as *const () as usize,
        gl_rt_on_trap_entry as *const () as usize,
    );
    #[cfg(not(target_arch = "x86_64"))]
    return (on_crash as Handler as usize, on_trap as Handler as usize);
}

fn install(sig: libc::c_int, h: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the handler is an SA_SIGINFO one.
    let ok = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = h;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    } == 0;
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// SIGILL and SIGTRAP (traps), SIGSEGV, SIGBUS and SIGFPE (faults).
pub fn install_handlers() -> std::io::Result<()> {
    let (crash, trap) = entries();
    install(libc::SIGILL, trap)?;
    install(libc::SIGTRAP, trap)?;
    install(libc::SIGSEGV, crash)?;
    install(libc::SIGBUS, crash)?;
    install(libc::SIGFPE, crash)
}

/// Where this thread's stack ends below (0 when unknown).
fn stack_low_end() -> u64 {
    // SAFETY: pthread_getattr_np fills `a`, destroyed after use.
    unsafe {
        let mut a: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut a) != 0 {
            return 0;
        }
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        let ok = libc::pthread_attr_getstack(&a, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut a);
        if ok {
            addr as u64
        } else {
            0
        }
    }
}

/// The run thread is about to call the entry from `entry_frame`: an
/// alternate signal stack (a stack overflow lands on the guard page), its
/// stack bounds.
pub fn run_thread_begin(entry_frame: u64) {
    let stack = Box::leak(vec![0u8; ALT_STACK_BYTES].into_boxed_slice());
    let ss = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: stack.len(),
    };
    // SAFETY: the stack is leaked: it outlives the thread.
    unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
    STACK_LO.store(stack_low_end(), Ordering::SeqCst);
    ENTRY_SP.store(entry_frame, Ordering::SeqCst);
}

/// The entry returned.
pub fn run_thread_end() {
    ENTRY_SP.store(0, Ordering::SeqCst);
}
