//! The trap-site registry: every trap instruction of compiled code, sorted
//! by PC, in a process-global [`SigTable`] the signal handler
//! binary-searches without locks or allocation (see [`crate::trap`]).

use crate::report::{ReportKind, SiteInfo};
use crate::runtime::Runtime;
use crate::sigtable::SigTable;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// One trap instruction of compiled code and the guard it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrapSite {
    /// Absolute address of the trap instruction.
    pub pc: usize,
    /// Runtime-global site id.
    pub site: u32,
    /// The report kind of the guard.
    pub kind: ReportKind,
    /// Snapshot of the site's function, line, column and opcode.
    pub info: SiteInfo,
}

/// Keeps trap sites registered; dropping it removes them (do that before
/// the code is unmapped). Its length is the number of trap sites; the
/// entries hold the runtime whose scratch area the trap writes.
pub type TrapRegistration = crate::sigtable::Registration;

fn unregister(id: u64) {
    TRAPS.update(|v| v.retain(|e| e.reg != id));
}

/// One registered trap instruction.
#[derive(Clone)]
struct Entry {
    pc: usize,
    site: u32,
    kind: ReportKind,
    info: Arc<SiteInfo>,
    rt: Arc<Runtime>,
    reg: u64,
}

/// Every registered trap, sorted by pc.
static TRAPS: SigTable<Entry> = SigTable::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Adds `sites` of code run with `rt`'s scratch area.
pub(crate) fn register(rt: &Arc<Runtime>, sites: Vec<TrapSite>) -> TrapRegistration {
    let n = sites.len();
    let id = NEXT_ID.fetch_add(1, SeqCst);
    let entries: Vec<Entry> = sites
        .into_iter()
        .map(|s| Entry {
            pc: s.pc,
            site: s.site,
            kind: s.kind,
            info: Arc::new(s.info),
            rt: rt.clone(),
            reg: id,
        })
        .collect();
    TRAPS.update(move |v| {
        v.extend(entries);
        v.sort_by_key(|e| e.pc);
    });
    TrapRegistration::new(id, n, unregister)
}

/// The PCs registered right now (for tests and diagnostics).
pub fn registered_pcs() -> Vec<usize> {
    TRAPS.read(|es| es.iter().map(|e| e.pc).collect())
}

/// What the handler needs of one entry: new references to the entry's
/// names and runtime (atomic increments, no allocation), never dropped:
/// the handler ends in `abort()` or waits for the exit, so both stay valid
/// while it prints.
pub(crate) struct Found {
    pub site: u32,
    pub kind: ReportKind,
    pub info: ManuallyDrop<Arc<SiteInfo>>,
    pub rt: ManuallyDrop<Arc<Runtime>>,
}

/// The trap registered at `pc`. Async-signal-safe: no locks, no allocation.
pub(crate) fn lookup(pc: usize) -> Option<Found> {
    TRAPS.read(|es| {
        es.binary_search_by_key(&pc, |e| e.pc).ok().map(|i| {
            let e = &es[i];
            Found {
                site: e.site,
                kind: e.kind,
                info: ManuallyDrop::new(e.info.clone()),
                rt: ManuallyDrop::new(e.rt.clone()),
            }
        })
    })
}
