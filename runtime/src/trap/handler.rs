//! The Unix handler of trap mode: SIGILL/SIGTRAP at a registered trap
//! instruction becomes the guard's report (see [`crate::trap`] for the
//! protocol with generated code). Registered with [`crate::sigchain`]
//! before the fault handler ([`Order::GuardTrap`]); a signal at any other
//! PC is left to the next handler (faults) or the previous action.

use super::registry::{lookup, Found};
use super::scratch::decode_observed;
use crate::report::{HumanReport, TrapNote};
use crate::runtime::RuntimeInternals;
use crate::sigchain::{Order, Signal};
use crate::trap::TrapScratch;
use std::sync::atomic::Ordering::SeqCst;

/// The signals guard traps raise (`ud2`/`udf`: SIGILL; a breakpoint-style
/// trap instruction: SIGTRAP).
const SIGNALS: [libc::c_int; 2] = [libc::SIGILL, libc::SIGTRAP];

/// Registers the handler for [`SIGNALS`] (idempotent).
pub(crate) fn install() -> std::io::Result<()> {
    for sig in SIGNALS {
        crate::sigchain::install(sig, Order::GuardTrap, on_signal)?;
    }
    Ok(())
}

fn on_signal(s: &Signal) -> bool {
    let pc = s.pc();
    match lookup(pc) {
        Some(f) => report_and_abort(s.sig, pc, &f),
        None => false,
    }
}

fn sleep_ms(ms: i64) {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    // SAFETY: nanosleep is async-signal-safe; `ts` is valid.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}

/// The values this trap left in `scratch`, once they stay put for 1 ms
/// (another thread caught mid-write would have changed a tag by then);
/// `None` when another thread's trap overwrote them or nothing was stored.
/// Waits for the exit when another thread is already reporting.
fn observed_values(scratch: &TrapScratch, token: u64) -> Option<[u64; 3]> {
    for _ in 0..200 {
        if let Some(v) = scratch.values_of(token) {
            sleep_ms(1);
            if scratch.values_of(token) == Some(v) {
                return Some(v);
            }
            continue;
        }
        if scratch.owner.load(SeqCst) == 0 {
            return None; // nothing was ever stored: not our sequence
        }
        // Another thread's trap overwrote our values; it reports.
        if crate::output::final_report_claimed() {
            crate::output::wait_for_exit()
        }
        sleep_ms(1);
    }
    None
}

fn report_and_abort(sig: libc::c_int, pc: usize, f: &Found) -> ! {
    let scratch = f.rt.trap_scratch();
    let observed =
        observed_values(scratch, TrapScratch::token(f.site)).map(|v| decode_observed(f.kind, v));
    if !crate::output::claim_final_report() {
        crate::output::wait_for_exit()
    }
    // What was recorded before the trap (a caught foreign write first).
    crate::fault::write_pending_reports(&f.rt);
    let report = HumanReport {
        observed,
        trap: Some(TrapNote {
            signal: if sig == libc::SIGTRAP {
                "SIGTRAP"
            } else {
                "SIGILL"
            },
            pc: pc as u64,
        }),
        ..HumanReport::at(f.kind, f.site, &f.info)
    };
    let (fd, json) = scratch.output();
    crate::report::write_signal_safe(fd, json, &report);
    // With the CLI's `--json`, the run's JSON object too (spec §6.2).
    crate::fault::write_stdout_json(&f.rt, &report.json());
    // SAFETY: abort is async-signal-safe.
    unsafe { libc::abort() }
}
