//! The Linux x86_64 part of watchpoints: `perf_event_open` hardware
//! breakpoints (per hardware slot, one event per thread, kept open and
//! moved from word to word with `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`, or
//! opened and closed per arming where the kernel refuses the move), the
//! `SIGTRAP` handler's entry, and capstone decoding of the writing
//! instruction's width.

use super::ring::{on_hit, GEN_BITS};
use super::MAX_SLOTS;
use crate::sigchain::{errno, Order, Signal};
use std::sync::atomic::AtomicU64;

/// `si_code` of a perf-event trap (`TRAP_PERF`).
const TRAP_PERF: i32 = 6;
/// `si_code` of a debug exception with no cause in the debug status
/// register (`TRAP_BRKPT`: the kernel's `icebp` case).
const TRAP_BRKPT: i32 = 1;
/// `si_code` of a hardware breakpoint no perf event claimed (`TRAP_HWBKPT`).
const TRAP_HWBKPT: i32 = 4;
/// Offset of `si_perf_data` in `siginfo_t` (after `si_addr`).
const SI_PERF_DATA_OFFSET: usize = 24;
/// Our tag in `sig_data`'s high half; below it the arming's generation
/// (bits 8.., [`GEN_BITS`] wide) and the hardware slot (low byte).
const TAG: u64 = 0x676c_7761_0000_0000;
const TAG_MASK: u64 = 0xffff_ffff_0000_0000;

const PERF_TYPE_BREAKPOINT: u32 = 5;
const HW_BREAKPOINT_W: u32 = 2;
const HW_BREAKPOINT_LEN_8: u64 = 8;
// perf_event_attr bit flags (word at offset 40).
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const INHERIT: u64 = 1 << 1;
const INHERIT_THREAD: u64 = 1 << 35;
const REMOVE_ON_EXEC: u64 = 1 << 36;
const SIGTRAP: u64 = 1 << 37;
/// `attr.disabled` (bit 0 of the flags word).
const DISABLED: u64 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `_IO('$', 1)`: disable the event and its inherited children.
const PERF_EVENT_IOC_DISABLE: libc::Ioctl = 0x2401;
/// `_IOW('$', 11, struct perf_event_attr *)` (Linux 4.17; applied to
/// inherited children since 5.13, the kernel that brought `sigtrap`).
const PERF_EVENT_IOC_MODIFY_ATTRIBUTES: libc::Ioctl = 0x4008_240b;

/// `struct perf_event_attr` (PERF_ATTR_SIZE_VER8, 136 bytes).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
    bp_len: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
    config3: u64,
}
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 136);

/// The attributes of hardware slot `hw`'s breakpoint on `addr` for the
/// arming `gen`. A retarget must pass exactly what the event was opened
/// with except `bp_addr`, `bp_len`, `bp_type`, `disabled` and `sig_data`
/// (the kernel compares the rest and refuses a difference with `EINVAL`):
/// both go through this function.
fn attr(addr: u64, hw: usize, gen: u64, disabled: bool) -> PerfEventAttr {
    let flags = EXCLUDE_KERNEL | EXCLUDE_HV | INHERIT | INHERIT_THREAD | REMOVE_ON_EXEC | SIGTRAP;
    PerfEventAttr {
        type_: PERF_TYPE_BREAKPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        sample_period: 1,
        flags: if disabled { flags | DISABLED } else { flags },
        bp_type: HW_BREAKPOINT_W,
        bp_addr: addr,
        bp_len: HW_BREAKPOINT_LEN_8,
        sig_data: TAG | (gen & ((1 << GEN_BITS) - 1)) << 8 | hw as u64,
        ..Default::default()
    }
}

fn open(addr: u64, tid: i32, hw: usize, gen: u64) -> Result<i32, i32> {
    let attr = attr(addr, hw, gen, false);
    // SAFETY: a valid attr; the kernel copies it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1i32,
            -1i32,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd as i32)
    }
}

fn threads() -> Vec<i32> {
    match std::fs::read_dir("/proc/self/task") {
        Ok(d) => d
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        // SAFETY: gettid has no preconditions.
        Err(_) => vec![unsafe { libc::gettid() }],
    }
}

/// One breakpoint per thread on `addr`, in hardware slot `hw`, enabled.
pub fn arm(addr: u64, hw: usize, gen: u64) -> Result<Vec<i32>, i32> {
    let mut fds = Vec::new();
    for tid in threads() {
        match open(addr, tid, hw, gen) {
            Ok(fd) => fds.push(fd),
            // The thread ended meanwhile.
            Err(libc::ESRCH) => {}
            Err(e) => {
                close_all(&fds);
                return Err(e);
            }
        }
    }
    Ok(fds)
}

/// Moves the open breakpoints `fds` (one hardware slot's, one per
/// thread) to `addr` with the arming `gen`'s tag, and enables them: one
/// `PERF_EVENT_IOC_MODIFY_ATTRIBUTES` per fd, which the kernel applies to
/// the event and to every event threads inherited from it, synchronously
/// (disable, move, enable, under the event's child mutex). An error leaves
/// the events in an unknown state: the caller closes them.
pub fn retarget(fds: &[i32], addr: u64, hw: usize, gen: u64) -> Result<(), i32> {
    let attr = attr(addr, hw, gen, false);
    for &fd in fds {
        // SAFETY: an fd of ours and a valid attr; the kernel copies it.
        let r = unsafe {
            libc::ioctl(
                fd,
                PERF_EVENT_IOC_MODIFY_ATTRIBUTES,
                &attr as *const PerfEventAttr,
            )
        };
        if r < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Disables the breakpoints `fds` and their inherited children: when this
/// returns, no thread's debug register holds them (the kernel removes the
/// event from each running thread by a synchronous cross-call). One
/// `PERF_EVENT_IOC_DISABLE` per fd: cheaper than a modify (no attribute
/// copy and check), and the next arming's modify enables it again.
pub fn disable(fds: &[i32]) -> Result<(), i32> {
    for &fd in fds {
        // SAFETY: an fd of ours; the argument is unused (no group flag).
        let r = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
        if r < 0 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Did the kernel refuse the retarget itself (too old for it: `ENOTTY`;
/// an attribute it will not move: `EINVAL`), rather than fail once?
pub fn refused(e: i32) -> bool {
    e == libc::ENOTTY || e == libc::EINVAL
}

/// `ioctl`'s error `e` in words.
pub fn describe(e: i32) -> String {
    let what = std::io::Error::from_raw_os_error(e);
    format!("PERF_EVENT_IOC_MODIFY_ATTRIBUTES: {what}")
}

pub fn close_all(fds: &[i32]) {
    for &fd in fds {
        // SAFETY: fds we opened and own.
        unsafe { libc::close(fd) };
    }
}

static PROBE_WORD: AtomicU64 = AtomicU64::new(0);

/// Can this process have a write breakpoint at all?
pub fn probe() -> Result<(), String> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    match open(PROBE_WORD.as_ptr() as u64, tid, 0, 0) {
        Ok(fd) => {
            close_all(&[fd]);
            Ok(())
        }
        Err(e) => Err(reason(e)),
    }
}

fn reason(e: i32) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let what = std::io::Error::from_raw_os_error(e);
    match e {
        libc::EACCES | libc::EPERM => format!(
            "perf_event_open: {what} (kernel.perf_event_paranoid = {paranoid}; needs <= 2 or CAP_PERFMON)"
        ),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
            format!("perf_event_open: {what} (no hardware breakpoints here: a VM or emulator without debug registers?)")
        }
        libc::ENOSYS => format!("perf_event_open: {what} (qemu-user or a kernel without perf events)"),
        libc::EINVAL => format!("perf_event_open: {what} (kernel too old for synchronous sigtrap: needs Linux 5.13)"),
        _ => format!("perf_event_open: {what}"),
    }
}

/// Registers the SIGTRAP handler with [`crate::sigchain`] (idempotent).
pub fn install() -> Result<(), String> {
    crate::sigchain::install(libc::SIGTRAP, Order::Watchpoint, on_sigtrap)
        .map_err(|e| format!("sigaction(SIGTRAP): {e}"))
}

/// Ours: a perf-event trap carrying our tag and a valid hardware slot.
fn on_sigtrap(s: &Signal) -> bool {
    // SAFETY: `info` is the kernel's siginfo of a SIGTRAP; for a
    // `TRAP_PERF` trap the word at `SI_PERF_DATA_OFFSET` is `si_perf_data`
    // (for other codes it is another arm of the union, read as plain bits).
    let data = unsafe { *(s.info as *const u8).add(SI_PERF_DATA_OFFSET).cast::<u64>() };
    let hw = (data & 0xff) as usize;
    if matches!(s.code(), TRAP_BRKPT | TRAP_HWBKPT) && super::active() {
        // A debug exception the kernel could not attribute, in a session:
        // ours, unless the host runs `icebp` while watching.
        super::ring::on_unattributed(s.pc() as u64);
        return true;
    }
    if s.code() != TRAP_PERF || data & TAG_MASK != TAG || hw >= MAX_SLOTS {
        return false;
    }
    on_hit(hw, (data >> 8) & ((1 << GEN_BITS) - 1), s.pc() as u64);
    true
}

fn capstone() -> Option<capstone::Capstone> {
    use capstone::arch::x86::ArchMode;
    use capstone::arch::BuildsCapstone;
    capstone::Capstone::new()
        .x86()
        .mode(ArchMode::Mode64)
        .detail(true)
        .build()
        .ok()
}

/// Bytes written by the last instruction of `code` when decoding from
/// its first byte lands exactly on its end.
pub fn width_of_last(code: &[u8]) -> Option<u32> {
    use capstone::arch::x86::X86OperandType;
    use capstone::arch::DetailsArchInsn;
    use capstone::AccessType;
    let cs = capstone()?;
    let insns = cs.disasm_all(code, 0).ok()?;
    let last = insns.iter().last()?;
    if last.address() as usize + last.len() != code.len() {
        return None; // the decode did not land on the PC
    }
    let detail = cs.insn_detail(last).ok()?;
    let arch = detail.arch_detail();
    let x86 = arch.x86()?;
    x86.operands()
        .find(|op| {
            matches!(op.op_type, X86OperandType::Mem(_))
                && matches!(
                    op.access,
                    Some(AccessType::WriteOnly) | Some(AccessType::ReadWrite)
                )
        })
        .map(|op| op.size as u32)
}

/// Without the function start: the earliest start in the window from
/// which decoding lands exactly on its end (x86 decoding resynchronizes
/// within a few instructions).
pub fn decode_width(code: &[u8]) -> Option<u32> {
    (0..code.len()).find_map(|start| width_of_last(&code[start..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_of_stores_decode() {
        // mov byte ptr [rax], cl ; mov qword ptr [rax], rcx ; and byte ptr [rdi], 0xfe
        let pad = [0x90u8; 8];
        let w = |tail: &[u8]| decode_width(&[&pad[..], tail].concat());
        assert_eq!(w(&[0x88, 0x08]), Some(1));
        assert_eq!(w(&[0x48, 0x89, 0x08]), Some(8));
        assert_eq!(w(&[0x80, 0x27, 0xfe]), Some(1));
        assert_eq!(w(&[0x89, 0x08]), Some(4));
        // a load is not a writer
        assert_eq!(w(&[0x48, 0x8b, 0x08]), None);
    }
}
