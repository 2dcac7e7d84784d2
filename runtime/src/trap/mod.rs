//! Trap mode (spec §6): "the check is a trapping instruction; a signal
//! handler maps the PC back to the site, reports, aborts".
//!
//! # How generated code traps
//!
//! A guard's inline check and conditional branch are the same in every mode.
//! In trap mode the cold block does not call the runtime: it writes the
//! site's token ([`TrapScratch::token`]: site + 1) to the runtime's
//! [`TrapScratch`] `owner`, fences, stores what the check observed into
//! `values`, publishes `ready = token` (a sequentially consistent store),
//! and executes a trap instruction (`ud2`
//! on x86_64, `udf` on aarch64: SIGILL) whose Cranelift user trap code is
//! the report kind's ([`crate::ReportKind::trap_code`]). No call and no
//! read-modify-write: the cold path puts no constraint on the registers of
//! the hot path (a call there would make values live across it spill, and
//! an atomic compare-and-swap is a loop with fixed registers on aarch64
//! without LSE). What lands in `values`:
//!
//! | kind | `values[0]` | `values[1]` | `values[2]` |
//! |---|---|---|---|
//! | `dict_slot_tag` | object | managed-dict word | 0 |
//! | `adstack_overflow` / `adstack_underflow` | capacity | len | 0 |
//! | `slot_clobber` | address | width | value |
//!
//! The scratch area is the first field of the `#[repr(C)]` [`Runtime`], so
//! its address is the runtime pointer generated code already embeds
//! ([`crate::runtime::TRAP_SCRATCH_OFFSET`] = 0).
//!
//! # How the PC finds its site
//!
//! The JIT reads each compiled function's trap records (offset, code) before
//! the compilation context is cleared, maps each trap with one of our codes
//! to its guard site, and after finalization registers
//! `(absolute pc, site, kind, SiteInfo)` here ([`Runtime::register_trap_sites`]).
//! The registry is a process-global, immutable, sorted snapshot (a
//! [`crate::sigtable::SigTable`]); the signal handler binary-searches it
//! without locks or allocation. Writers (registration, and
//! [`TrapRegistration`]'s drop when the compiled module is freed) swap in a
//! new snapshot and free the old one once no handler can be reading it. A handler copies
//! what it needs (a reference to the site's names, which it never drops:
//! it ends the process) and leaves the reader section before it reports.
//!
//! # The handler
//!
//! Registered (for SIGILL and SIGTRAP, before the fault handler) with
//! [`crate::sigchain`] the first time trap sites are registered; it reads
//! the PC from the `ucontext`. Not a registered trap instruction: the
//! signal goes on to the next guardlift handler (a SIGILL elsewhere in
//! guardlift code is a `host_fault`, [`crate::fault`]) or to the action
//! installed before guardlift's. Ours: it takes the values from the scratch
//! area if they are this site's, writes the reports the runtime recorded
//! before the trap (a `foreign_write` caught by a watchpoint, see
//! [`crate::fault::write_pending_reports`]), then formats the same report as
//! the other modes (human, or a JSON line when `json=1`) with `core::fmt`
//! straight to the log through a 512-byte stack buffer (so names of any
//! length print whole), `write(2)`s it to the runtime's log (stderr by
//! default; stderr with a note when the log cannot be written,
//! [`crate::output::write_fd_or_stderr`]) and calls `abort()` (exit status
//! 134). Only async-signal-safe calls are made — `write`, `nanosleep`,
//! `pause`, `abort` — except to symbolize a foreign write still waiting in
//! the watchpoint ring (only with `--watch`; see
//! [`crate::fault::write_pending_reports`]).
//!
//! # Modules
//!
//! - [`scratch`]: the scratch area and its offsets, below `runtime`;
//! - `registry`: the PC → trap-site table;
//! - `handler`: the Unix signal handler.
//!
//! The handler takes the values only if `ready` and `owner` both hold its
//! site's token, and still do 1 ms later (the handler runs on the trapping
//! thread, which wrote them just before the trap; a thread of another site
//! caught mid-write would have changed a tag by then). When several
//! threads trap at once, they share the area: a thread whose values were
//! overwritten leaves the report to the thread that overwrote them (which
//! traps right after) and waits in `pause()` for the abort; one report is
//! printed (the first handler to claim the process-wide final report
//! latch, [`crate::output::claim_final_report`], with valid values). If no thread reports within 200 ms, a handler reports
//! its own site without values rather than show another site's. (Two
//! threads trapping at the same site at the same moment share a token: the
//! values shown are then one of theirs, both real violations of that site.)
//!
//! Not available in trap mode (the handler may not lock): the last known
//! write to the slot, the report handler callback, the abort hook (so
//! `guardlift run --json` prints no JSON object on stdout when it traps).

mod handler;
mod registry;
pub mod scratch;

pub use registry::{registered_pcs, TrapRegistration, TrapSite};
pub use scratch::{
    decode_observed, encode_observed, TrapScratch, TRAP_OWNER_OFFSET, TRAP_READY_OFFSET,
    TRAP_VALUES_OFFSET, TRAP_VALUE_COUNT,
};

use crate::runtime::Runtime;
use std::sync::Arc;

/// Is trap mode available on this platform (a handler that can read the PC)?
pub const fn supported() -> bool {
    cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))
}

/// Trap mode's site registry: how the JIT registers the trap sites of a
/// module. Internals (see [`crate::internals`]).
pub trait TrapSites {
    /// Registers trap instructions of compiled code (see the module docs),
    /// installing the signal handler the first time. The entries point to
    /// this runtime's scratch area; the registration keeps the runtime
    /// alive. Errors when trap mode is not supported here or `sigaction`
    /// fails.
    fn register_trap_sites(
        self: &Arc<Self>,
        sites: Vec<TrapSite>,
    ) -> std::io::Result<TrapRegistration>;
}

impl TrapSites for Runtime {
    fn register_trap_sites(
        self: &Arc<Self>,
        sites: Vec<TrapSite>,
    ) -> std::io::Result<TrapRegistration> {
        handler::install()?;
        // The handler runs on the alternate stack of the thread that traps.
        crate::sigstack::ensure_current_thread()?;
        Ok(registry::register(self, sites))
    }
}

#[cfg(test)]
mod tests {
    use crate::report::{Observed, ReportKind, SiteInfo};

    #[test]
    fn trap_codes_round_trip() {
        for k in [
            ReportKind::DictSlotTag,
            ReportKind::AdstackOverflow,
            ReportKind::AdstackUnderflow,
            ReportKind::SlotClobber,
        ] {
            assert!(
                k.trap_code() != 0 && k.trap_code() < 0xfb,
                "a Cranelift user code"
            );
            assert_eq!(ReportKind::from_trap_code(k.trap_code()), Some(k));
        }
        assert_eq!(ReportKind::from_trap_code(0), None);
        assert_eq!(ReportKind::from_trap_code(0xff), None);
    }

    /// The handler's path (streamed through [`crate::output::FdWriter`])
    /// writes exactly `Report::to_human`, names of any length whole.
    #[cfg(target_os = "linux")]
    #[test]
    fn streamed_report_is_the_human_report_whole() {
        for function in ["main".to_string(), format!("f{}", "x".repeat(3000))] {
            let r = crate::Report {
                kind: ReportKind::DictSlotTag,
                site: 3,
                info: SiteInfo {
                    function,
                    line: 27,
                    col: 5,
                    op: "store_attr".into(),
                },
                observed: Observed::Dict {
                    object: 0x1000,
                    value: 0x1236,
                },
                last_write: None,
                object: None,
                objects: Vec::new(),
                count: 1,
                backtrace: Vec::new(),
            };
            let mut fds = [0; 2];
            // SAFETY: a valid two-element array; we own both ends.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            crate::output::write_display_fd_or_stderr(fds[1], &r.human());
            let mut got = String::new();
            // SAFETY: we own the ends; the File takes the read end.
            unsafe {
                libc::close(fds[1]);
                use std::io::Read;
                use std::os::fd::FromRawFd;
                std::fs::File::from_raw_fd(fds[0])
                    .read_to_string(&mut got)
                    .unwrap();
            }
            assert_eq!(got, r.to_human());
            assert!(got.contains(&format!("at @{} 27:5", r.info.function)));
        }
    }
}
