//! Reports, host faults and fatal arithmetic faults as protocol lines
//! (`R`, `F`, `D`): the runtime records each report as it does in the JIT
//! (its text made with the sites it knows: none here); what the host needs
//! to make the text with its module are the raw fields beside it (kind,
//! site id, [`encode_observed`] of the observation, the last write's code,
//! the object's site ids) and the IR call chain of the first occurrence as
//! PCs, which the report handler ([`handler`]) captures from the stack when
//! the (site, kind) is recorded for the first time.

use crate::code::{self, ENTRY_SP};
use crate::out;
use guardlift_abi::protocol as ev;
use guardlift_runtime::backtrace::MAX_FRAMES;
use guardlift_runtime::fault::HostCallFault;
use guardlift_runtime::heap::HOST_FAULT_FUNCS;
use guardlift_runtime::internals::RuntimeInternals;
use guardlift_runtime::report::{LastWriteCode, ObjectNote};
use guardlift_runtime::trap::encode_observed;
use guardlift_runtime::{Report, ReportHandler, ReportKind, Runtime};
use std::sync::{Arc, Mutex};

/// The IR call chain of each (site, kind)'s first occurrence, as PCs.
static FRAMES: Mutex<Vec<(u32, ReportKind, Vec<u64>)>> = Mutex::new(Vec::new());

/// The report handler of the target's runtime: on a (site, kind)'s first
/// occurrence, its IR call chain (the handler runs in the recording call,
/// below the report stub's frame record).
pub fn handler() -> ReportHandler {
    Arc::new(|r: &Report| {
        if r.count != 1 {
            return;
        }
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as u64;
        let pcs = code::capture_frames(here);
        if let Ok(mut f) = FRAMES.lock() {
            f.push((r.site, r.kind, pcs));
        }
    })
}

/// The `OBJ` fields `ID FREED ALLOC FREE` of a note (none: `0 0 - -`).
fn object_fields(n: Option<&ObjectNote>) {
    out::field(n.map_or(0, |n| n.id));
    out::field(n.is_some_and(|n| n.freed) as u64);
    out::site(n.and_then(|n| n.site_ids[0]));
    out::site(n.and_then(|n| n.site_ids[1]));
}

/// One `R` line.
fn write_report(r: &Report, frames: &[(u32, ReportKind, Vec<u64>)]) {
    let [a, b, c] = encode_observed(&r.observed);
    let lw = r.last_write.as_ref();
    out::event(ev::REPORT);
    for f in [
        r.kind.code().into(),
        r.site.into(),
        a,
        b,
        c,
        LastWriteCode::of(lw) as u64,
        lw.and_then(|w| w.site).unwrap_or(0).into(),
        lw.map_or(0, |w| w.value),
        lw.and_then(|w| w.object_id).unwrap_or(0),
        r.count,
    ] {
        out::field(f);
    }
    object_fields(r.object.as_ref());
    let pcs = frames
        .iter()
        .find(|(s, k, _)| *s == r.site && *k == r.kind)
        .map_or(&[][..], |f| &f.2[..]);
    code::write_pcs(pcs);
    out::field(r.objects.len() as u64);
    for o in &r.objects {
        out::field(o.object_id);
        out::field(o.count);
    }
    out::nl();
}

/// The reports recorded so far, as `R` lines, without waiting for a lock
/// (the signal handlers' way: the interrupted code may hold one).
pub fn write_pending() {
    let Some(rt) = crate::runtime() else { return };
    let frames = FRAMES.try_lock();
    let frames = frames.as_deref().map_or(&[][..], |f| &f[..]);
    rt.try_reports(|rs| rs.iter().for_each(|r| write_report(r, frames)));
}

/// Takes the pending reports and writes them as `R` lines (the static
/// runtime is never dropped: its pending reports are written here, at the
/// end of the run and before an abort).
pub fn write_taken(rt: &Runtime) {
    let reports = rt.take_reports();
    let frames = FRAMES.lock().unwrap_or_else(|e| e.into_inner());
    for r in &reports {
        write_report(r, &frames);
    }
}

/// Abort mode's ending: the reports, `A`, and death by SIGABRT.
pub fn abort_ending(rt: &Runtime) {
    write_taken(rt);
    out::line(ev::ABORT);
    out::flush();
    crate::out::die_of(libc::SIGABRT);
}

/// A host fault the model heap found in a call from IR code (recorded by
/// the runtime, taken here): the reports recorded before, an `F` line with
/// the IR call that entered the runtime and the IR calls outside it, and
/// death by SIGABRT, as the host JIT's runtime ends such a run. Not inside
/// an IR call: the `F` line alone, and the run goes on.
pub fn host_fault(rt: &Runtime, f: &HostCallFault) {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as u64;
    let placed = code::host_call_site(here);
    if placed.is_some() {
        write_taken(rt);
    }
    let func = HOST_FAULT_FUNCS
        .iter()
        .position(|n| *n == f.fault.func)
        .unwrap_or(0);
    out::event(ev::FAULT);
    out::field(func as u64);
    out::field(f.fault.kind as u64);
    out::field(f.fault.operands[0]);
    out::field(f.fault.operands[1]);
    let (obj, note) = match &f.object {
        Some((o, n)) => (*o, n.as_ref()),
        None => (0, None),
    };
    out::field(obj);
    object_fields(note);
    match &placed {
        Some((site, outer)) => {
            code::write_pc(*site);
            code::write_pcs(outer);
        }
        None => {
            out::bytes(b" - -");
            out::field(0);
        }
    }
    out::nl();
    if placed.is_some() {
        out::flush();
        crate::out::die_of(libc::SIGABRT);
    }
}

/// After a call into the runtime from IR code: a host fault ends the run.
pub fn after_call(rt: &Runtime) {
    if rt.host_fault_ends_run() {
        if let Some(f) = rt.take_host_call_fault() {
            host_fault(rt, &f);
        }
    }
}

/// A fatal division fault of spec §3.1 (`kind`: the code of `div_by_zero`
/// or `int_overflow`) from the cold path of the IR op: the innermost return
/// address into IR code on the stack is that call (the op's source
/// location), `fp` the IR function's frame record. The reports, a `D` line,
/// and death by SIGABRT.
pub fn arith_fault(kind: u32, fp: u64) {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as u64;
    let top = ENTRY_SP.load(std::sync::atomic::Ordering::SeqCst);
    let site = match code::noted_caller() {
        Some((site, _)) => site,
        None => code::call_on_stack(here, top).map_or(0, |c| c.0),
    };
    let mut frames = Vec::new();
    if top != 0 && fp != 0 && fp < top {
        code::walk_records(fp, top, &mut frames, MAX_FRAMES - 1);
    }
    if let Some(rt) = crate::runtime() {
        write_taken(rt);
    }
    out::event(ev::ARITH);
    out::field(kind.into());
    code::write_pc(site);
    code::write_pcs(&frames);
    out::nl();
    out::flush();
    crate::out::die_of(libc::SIGABRT);
}
