//! Watchpoints through the Rust API (spec §6.1): writers on other threads
//! (one started before the object was armed, one after), told apart by the
//! width of their store, and legitimate writes counted, not reported.
//!
//! Needs `perf_event_open` hardware breakpoints (Linux x86_64,
//! `kernel.perf_event_paranoid` <= 2 or CAP_PERFMON): without them these
//! tests FAIL and say why (docs/INSTRUMENTATION.md, "Hunting a writer").

use guardlift_runtime::watch::{WatchSpec, WatchStatus};
use guardlift_runtime::{Observed, ReportKind, Runtime, RuntimeConfig};
use std::sync::{mpsc, Arc, Mutex};

/// One watch session per process: the tests of this binary take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn runtime() -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        abort_process: false,
        ..Default::default()
    })
}

fn require_active(status: WatchStatus) {
    if let WatchStatus::Unavailable { reason } = status {
        panic!(
            "hardware watchpoints are unavailable here ({reason}); these tests need Linux on \
             x86_64 with perf_event_open breakpoints (kernel.perf_event_paranoid <= 2, not \
             qemu-user)"
        );
    }
}

/// A host writer that clears bit 0 with a 1-byte store.
#[inline(never)]
fn rogue_byte_writer(slot: u64) {
    // SAFETY: the dict slot of a live object.
    unsafe {
        let p = slot as *mut u8;
        p.write_volatile(p.read_volatile() & !1);
    }
}

/// A host writer that stores a whole malformed word (8 bytes).
#[inline(never)]
fn rogue_word_writer(slot: u64) {
    // SAFETY: the dict slot of a live object.
    unsafe {
        let p = slot as *mut u64;
        p.write_volatile(p.read_volatile() & !2);
    }
}

fn foreign_writes(rt: &Runtime) -> Vec<(u32, String, u64, u64)> {
    rt.take_reports()
        .into_iter()
        .filter(|r| r.kind == ReportKind::ForeignWrite)
        .map(|r| match r.observed {
            Observed::Write {
                width, writer, new, ..
            } => {
                let w = writer.get().expect("writer details");
                (width, w.symbol.clone(), w.object_id, new)
            }
            o => panic!("foreign_write with {o:?}"),
        })
        .collect()
}

#[test]
fn writers_on_other_threads_are_named_with_their_width() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    // Started before the object exists (and so before its breakpoint).
    let (tx, rx) = mpsc::channel::<u64>();
    let early = std::thread::spawn(move || {
        let slot = rx.recv().unwrap();
        rogue_byte_writer(slot);
    });
    require_active(rt.enable_watch(WatchSpec::Objects(vec![2])));
    let _first = rt.obj_new(1);
    let obj = rt.obj_new(2);
    let slot = rt.layout().slot_addr(obj);
    tx.send(slot).unwrap();
    early.join().unwrap();
    // Started after the breakpoint was armed (inherits it).
    std::thread::spawn(move || rogue_word_writer(slot))
        .join()
        .unwrap();
    let w = foreign_writes(&rt);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[0].0, 1, "byte writer: {w:?}");
    assert!(w[0].1.contains("rogue_byte_writer"), "{w:?}");
    assert_eq!(w[1].0, 8, "word writer: {w:?}");
    assert!(w[1].1.contains("rogue_word_writer"), "{w:?}");
    assert!(w.iter().all(|x| x.2 == 2), "object id 2: {w:?}");
    assert_eq!(w[0].3 & 7, 0b110);
    assert_eq!(w[1].3 & 7, 0b100);
    match rt.watch_status() {
        Some(WatchStatus::Active { counts, .. }) => {
            assert_eq!((counts.hits, counts.foreign, counts.armed), (2, 2, 1))
        }
        s => panic!("{s:?}"),
    }
}

#[test]
fn legitimate_writes_are_counted_not_reported_and_free_disarms() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    require_active(rt.enable_watch(WatchSpec::Recent));
    let a = rt.obj_new(2);
    rt.store_attr_slow(a, 1, 5);
    rt.obj_dictify(a); // the runtime writes a dict pointer: legitimate
    assert_eq!(rt.load_attr_slow(a, 1), 5);
    assert!(rt.take_reports().is_empty());
    let Some(WatchStatus::Active { counts, .. }) = rt.watch_status() else {
        panic!("no session")
    };
    assert!(
        counts.hits >= 1 && counts.legitimate == counts.hits,
        "{counts:?}"
    );
    // `recent` keeps the newest objects armed: four slots, the fifth evicts.
    let objs: Vec<u64> = (0..5).map(|_| rt.obj_new(1)).collect();
    assert_eq!(
        {
            let mut ids = guardlift_runtime::watch::armed_ids();
            ids.sort();
            ids
        },
        vec![3, 4, 5, 6]
    );
    for o in objs {
        rt.obj_free(o);
    }
    assert_eq!(guardlift_runtime::watch::armed_ids(), Vec::<u64>::new());
    rt.obj_free(a);
}
