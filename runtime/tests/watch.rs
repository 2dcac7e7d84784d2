//! Watchpoints through the Rust API (spec §6.1): writers on other threads
//! (one started before the object was armed, one after), told apart by the
//! width of their store, and legitimate writes counted, not reported.
//!
//! Needs `perf_event_open` hardware breakpoints (Linux x86_64,
//! `kernel.perf_event_paranoid` <= 2 or CAP_PERFMON): without them these
//! tests FAIL and say why (docs/INSTRUMENTATION.md, "Hunting a writer").

use guardlift_runtime::internals::*;
use guardlift_runtime::watch::{Rearm, WatchSpec, WatchStatus};
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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
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
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
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

/// A host object's memory: 8 words, the object at word 3 (its cpython312
/// dict slot, `obj - 24`, is word 0).
struct HostBlock(Box<[u64; 8]>);

impl HostBlock {
    fn new() -> Self {
        HostBlock(Box::new([0; 8]))
    }
    fn obj(&self) -> u64 {
        self.0.as_ptr() as u64 + 24
    }
    fn slot(&self) -> u64 {
        self.0.as_ptr() as u64
    }
}

/// The host's initialisation of its object (after it registered it, as
/// CPython's tp_alloc does): the whole block zeroed, then a values-tagged
/// word stored.
#[inline(never)]
fn host_init(block: &HostBlock) {
    let p = block.slot() as *mut u64;
    for i in 0..8 {
        // SAFETY: the host's own block.
        unsafe { p.add(i).write_volatile(0) };
    }
    // SAFETY: as above.
    unsafe { p.write_volatile(block.slot() + 48 + 0b111) };
}

/// The host reusing a freed block at once (a memset of it).
#[inline(never)]
fn host_reuse(block: &HostBlock, fill: u64) {
    let p = block.slot() as *mut u64;
    for i in 0..8 {
        // SAFETY: the host's own block.
        unsafe { p.add(i).write_volatile(fill) };
    }
}

fn counts(rt: &Runtime) -> guardlift_runtime::watch::WatchCounts {
    match rt.watch_status() {
        Some(WatchStatus::Active { counts, .. }) => counts,
        s => panic!("{s:?}"),
    }
}

/// Issue 29 item 1: the `object_id` of a foreign write is the id of the
/// object that owned the slot when the write trapped, even when the object
/// was freed and its address taken by a new object before the report is
/// made — with no other report (taken at the end) and with one (a dict
/// report on the new object drains the writer first).
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn foreign_write_names_the_object_it_trapped_on_after_address_reuse() {
    for other_report in [false, true] {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let rt = runtime();
        require_active(rt.enable_watch(WatchSpec::Objects(vec![1])));
        let b = HostBlock::new();
        host_init(&b);
        let first = rt.register_object(b.obj()).unwrap();
        rt.watch(b.obj()); // IR code has it: initialisation over
        rogue_byte_writer(b.slot()); // malformed: 0b110
        rt.object_freed(b.obj()).unwrap();
        host_init(&b);
        let second = rt.register_object(b.obj()).unwrap();
        assert_eq!((first, second), (1, 2));
        if other_report {
            rt.report(
                ReportKind::DictSlotTag,
                u32::MAX - 1,
                Observed::Dict {
                    object: b.obj(),
                    value: 0x6,
                },
            );
        }
        let reports = rt.take_reports();
        let fw: Vec<_> = reports
            .iter()
            .filter(|r| r.kind == ReportKind::ForeignWrite)
            .collect();
        assert_eq!(fw.len(), 1, "other report {other_report}: {reports:?}");
        let r = fw[0];
        assert_eq!(r.object.as_ref().map(|n| n.id), Some(1), "{r:?}");
        assert_eq!(r.to_json()["object_id"], 1, "{}", r.to_json());
        let human = r.to_human();
        assert!(human.contains("(object_id 1)"), "{human}");
        assert!(human.contains("object id 1,"), "trailer: {human}");
        assert!(!human.contains("object id 2"), "{human}");
        if other_report {
            let d = reports
                .iter()
                .find(|r| r.kind == ReportKind::DictSlotTag)
                .unwrap();
            assert_eq!(d.object.as_ref().map(|n| n.id), Some(2), "the new object");
        }
        rt.object_freed(b.obj()).unwrap();
    }
}

/// Issue 29 item 2: a host that registers its object before initialising
/// it (CPython's tp_alloc order) gets no `foreign_write` for its init
/// writes; once IR code used the object, a well-formed write by the host
/// is foreign again.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn init_writes_of_a_host_object_are_not_foreign() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    require_active(rt.enable_watch(WatchSpec::Recent));
    let b = HostBlock::new();
    // Garbage before the registration, as malloc leaves it.
    host_reuse(&b, 0xdead_beef_0000_0003);
    rt.register_object(b.obj()).unwrap();
    host_init(&b);
    let c = counts(&rt);
    assert!(c.hits >= 2, "the init writes trapped: {c:?}");
    assert_eq!(c.legitimate, c.hits, "{c:?}");
    assert!(
        foreign_writes(&rt).is_empty(),
        "init writes reported: {c:?}"
    );
    // IR code uses it; the host then rewrites the word (well-formed): foreign.
    rt.watch(b.obj());
    host_init(&b);
    let w = foreign_writes(&rt);
    assert!(!w.is_empty(), "a write after the first use is foreign");
    assert!(w.iter().all(|x| x.1.contains("host_init")), "{w:?}");
    rt.object_freed(b.obj()).unwrap();
}

/// Issue 29 item 3: a host that reuses a freed object's memory at once
/// (memset) gets no `foreign_write`: `object_freed` disarms the slot on
/// every thread before it returns. 200 rounds, `recent` re-arming each new
/// object at the same address.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn reusing_freed_memory_at_once_is_never_reported() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    require_active(rt.enable_watch(WatchSpec::Recent));
    let b = HostBlock::new();
    // Another thread that runs all along (it inherits every breakpoint).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spin = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    for round in 0..200u64 {
        host_init(&b);
        rt.register_object(b.obj()).unwrap();
        rt.watch(b.obj()); // used by IR code
        rt.object_freed(b.obj()).unwrap();
        host_reuse(&b, round); // old = new for round 0
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spin.join().unwrap();
    let c = counts(&rt);
    let w = foreign_writes(&rt);
    assert!(
        w.is_empty(),
        "{} foreign write(s) after frees: {w:?} {c:?}",
        w.len()
    );
    assert_eq!(c.armed, 200, "{c:?}");
    assert_eq!(c.foreign, 0, "{c:?}");
    assert_eq!(guardlift_runtime::watch::armed_ids(), Vec::<u64>::new());
}

/// The ids `sample:K[@P]` arms, object by object (each freed at once so a
/// hardware slot is always free), and the session's counts.
fn sampled_ids(spec: WatchSpec, n: usize) -> (Vec<u64>, Option<u64>, Arc<Runtime>) {
    let rt = runtime();
    let status = rt.enable_watch(spec);
    let phase = match &status {
        WatchStatus::Active { phase, .. } => *phase,
        WatchStatus::Unavailable { .. } => None,
    };
    require_active(status);
    let mut ids = Vec::new();
    for i in 0..n {
        let o = rt.obj_new(1);
        ids.extend(guardlift_runtime::watch::armed_ids());
        if i == 4 {
            // Written while armed (if picked): not "freed unwritten".
            rogue_word_writer(rt.layout().slot_addr(o));
        }
        rt.obj_free(o);
    }
    rt.take_reports();
    (ids, phase, rt)
}

/// Issue 29 item 4: `sample:K@P` watches exactly the ids ≡ P (mod K);
/// without `@P` a phase is drawn, reported, and repeating with it watches
/// the same ids; the counts say how many were watched and freed unwritten.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn sample_phase_picks_and_repeats() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (ids, phase, rt) = sampled_ids(
        WatchSpec::Sample {
            k: 3,
            phase: Some(2),
        },
        12,
    );
    assert_eq!(ids, vec![2, 5, 8, 11]);
    assert_eq!(phase, Some(2));
    let c = counts(&rt);
    assert_eq!((c.allocations, c.armed), (12, 4), "{c:?}");
    // Object 5 (the 5th allocation) was written while armed.
    assert_eq!(c.freed_unwritten, 3, "{c:?}");
    let st = rt.watch_status().unwrap();
    assert_eq!(st.to_json()["phase"], 2);
    assert_eq!(st.to_json()["watched"], 4);
    assert_eq!(st.to_json()["allocations"], 12);
    assert!(st.phase_line().is_none(), "P was given");
    let summary = st.summary_line().unwrap();
    assert!(
        summary.contains("4 of 12 allocations watched, 3 freed unwritten"),
        "{summary}"
    );
    drop(rt);

    let (ids, phase, rt) = sampled_ids(WatchSpec::Sample { k: 3, phase: None }, 12);
    let p = phase.expect("a drawn phase");
    assert!(p < 3);
    let want: Vec<u64> = (1..=12).filter(|i| i % 3 == p).collect();
    assert_eq!(ids, want, "phase {p}");
    let line = rt
        .watch_status()
        .unwrap()
        .phase_line()
        .expect("phase printed");
    assert!(line.contains(&format!("sample:3@{p}")), "{line}");
    drop(rt);
    let (again, _, _rt) = sampled_ids(
        WatchSpec::Sample {
            k: 3,
            phase: Some(p),
        },
        12,
    );
    assert_eq!(again, want, "repeated with @{p}");
}

/// The re-arming paths a session can take: retargeting open perf events
/// (the default) and a perf event open and close per object (the fallback
/// for kernels that refuse `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`, forced here).
const PATHS: [bool; 2] = [false, true];

/// Forces the open/close path for the sessions started while it lives
/// (reset on drop, also when the test fails).
struct ForceReopen;

impl ForceReopen {
    fn new(on: bool) -> ForceReopen {
        guardlift_runtime::watch::force_reopen(on);
        ForceReopen
    }
}

impl Drop for ForceReopen {
    fn drop(&mut self) {
        guardlift_runtime::watch::force_reopen(false);
    }
}

fn rearm(rt: &Runtime) -> Rearm {
    match rt.watch_status() {
        Some(WatchStatus::Active { rearm, .. }) => rearm,
        s => panic!("{s:?}"),
    }
}

/// The object ids of every trapped foreign write (a report counts the
/// writes of its site, listing the objects they were about), sorted.
fn foreign_write_ids(rt: &Runtime) -> Vec<u64> {
    let mut ids = Vec::new();
    for r in rt.take_reports() {
        assert_eq!(r.kind, ReportKind::ForeignWrite, "{r:?}");
        if r.objects.is_empty() {
            let id = r.object.as_ref().map(|n| n.id).expect("object id");
            ids.extend(std::iter::repeat_n(id, r.count as usize));
        } else {
            for o in &r.objects {
                ids.extend(std::iter::repeat_n(o.object_id, o.count as usize));
            }
        }
    }
    ids.sort();
    ids
}

/// The process's open file descriptors.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// A thread that writes the word at each address it is sent (a malformed
/// 8-byte store), and says when it is done.
struct RemoteWriter {
    tx: mpsc::Sender<u64>,
    done: mpsc::Receiver<()>,
    thread: std::thread::JoinHandle<()>,
}

impl RemoteWriter {
    fn start() -> RemoteWriter {
        let (tx, rx) = mpsc::channel::<u64>();
        let (done_tx, done) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            for slot in rx {
                rogue_word_writer(slot);
                done_tx.send(()).unwrap();
            }
        });
        RemoteWriter { tx, done, thread }
    }
    fn write(&self, slot: u64) {
        self.tx.send(slot).unwrap();
        self.done.recv().unwrap();
    }
    fn stop(self) {
        drop(self.tx);
        self.thread.join().unwrap();
    }
}

/// Issue 29 cost item, correctness of pooled events: a breakpoint kept
/// open after its object is freed never fires on the address's next
/// occupant, written by this thread, by a thread older than the session
/// and by one started while the slot was disarmed — on both re-arming
/// paths. With `object:1` the new object (id 2) is not watched: no trap at
/// all. With `recent` it is armed anew on the same hardware slot: its
/// writes are reported with its own id, never with the freed object's.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn a_breakpoint_never_fires_on_a_reused_address_after_the_free() {
    for reopen in PATHS {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let _f = ForceReopen::new(reopen);
        let old = RemoteWriter::start();
        let rt = runtime();
        require_active(rt.enable_watch(WatchSpec::Objects(vec![1])));
        let b = HostBlock::new();
        host_init(&b);
        assert_eq!(rt.register_object(b.obj()).unwrap(), 1);
        rt.watch(b.obj()); // IR code has it: initialisation over
        old.write(b.slot()); // armed: caught
        rt.object_freed(b.obj()).unwrap();
        let young = RemoteWriter::start(); // started while disarmed
        host_init(&b);
        assert_eq!(rt.register_object(b.obj()).unwrap(), 2);
        rt.watch(b.obj());
        rogue_word_writer(b.slot());
        old.write(b.slot());
        young.write(b.slot());
        rt.object_freed(b.obj()).unwrap();
        let c = counts(&rt);
        let ids = foreign_write_ids(&rt);
        assert_eq!(c.hits, 1, "reopen {reopen}: {c:?} {ids:?}");
        assert_eq!(
            c.discarded, 0,
            "reopen {reopen}: a disarmed breakpoint fired: {c:?}"
        );
        assert_eq!(ids, vec![1], "reopen {reopen}: object ids");
        let want = if reopen { "reopen" } else { "retarget" };
        assert_eq!(rearm(&rt).name(), want, "reopen {reopen}");
        drop(rt);

        // `recent`: the next occupant is armed again, with its own id.
        let rt = runtime();
        require_active(rt.enable_watch(WatchSpec::Recent));
        let mut late = None;
        for id in 1..=4u64 {
            host_init(&b);
            assert_eq!(rt.register_object(b.obj()).unwrap(), id);
            rt.watch(b.obj());
            match id {
                1 => rogue_word_writer(b.slot()),
                2 => old.write(b.slot()),
                3 => young.write(b.slot()),
                // Started while the slot was disarmed, after its events
                // were opened: it inherited them disabled.
                _ => late
                    .as_ref()
                    .map(|w: &RemoteWriter| w.write(b.slot()))
                    .unwrap(),
            }
            rt.object_freed(b.obj()).unwrap();
            // Freed: the host's reuse of the block is not watched.
            host_reuse(&b, 0xdead_0003);
            late.get_or_insert_with(RemoteWriter::start);
        }
        let c = counts(&rt);
        let ids = foreign_write_ids(&rt);
        assert_eq!(ids, vec![1, 2, 3, 4], "reopen {reopen}: {c:?}");
        assert_eq!((c.armed, c.foreign), (4, 4), "reopen {reopen}: {c:?}");
        assert_eq!(c.hits, 4, "reopen {reopen}: the rogue writes alone: {c:?}");
        assert_eq!(
            c.discarded, 0,
            "reopen {reopen}: a disarmed breakpoint fired: {c:?}"
        );
        assert_eq!(rearm(&rt).name(), want, "reopen {reopen}");
        drop(rt);
        old.stop();
        young.stop();
        late.unwrap().stop();
    }
}

/// Issue 29 cost item: 12 000 objects armed and disarmed in turn (every
/// one with `recent`, each freed and its memory rewritten at once) leave
/// no file descriptor behind, hold at most one event per hardware slot and
/// thread while the session runs, and no freed object's rewrite traps —
/// on both re-arming paths.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn retargeting_many_objects_leaks_no_file_descriptors() {
    const OBJECTS: u64 = 12_000;
    for reopen in PATHS {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let _f = ForceReopen::new(reopen);
        let before = open_fds();
        let rt = runtime();
        require_active(rt.enable_watch(WatchSpec::Recent));
        let blocks: Vec<HostBlock> = (0..3).map(|_| HostBlock::new()).collect();
        let mut most = 0;
        for i in 0..OBJECTS {
            let b = &blocks[(i % 3) as usize];
            rt.register_object(b.obj()).unwrap();
            host_init(b); // initialisation: legitimate
            rt.watch(b.obj());
            if i % 1000 == 0 {
                most = most.max(open_fds());
            }
            rt.object_freed(b.obj()).unwrap();
            host_reuse(b, i); // freed: not watched
        }
        let c = counts(&rt);
        assert_eq!(c.armed, OBJECTS, "reopen {reopen}: {c:?}");
        assert_eq!(
            c.hits, c.legitimate,
            "reopen {reopen}: only init writes trapped: {c:?}"
        );
        assert_eq!(c.hits, 2 * OBJECTS, "reopen {reopen}: {c:?}");
        assert_eq!(
            c.discarded, 0,
            "reopen {reopen}: a freed object's rewrite trapped: {c:?}"
        );
        assert!(foreign_writes(&rt).is_empty());
        let bound = before + 4 * thread_count();
        assert!(
            most <= bound,
            "reopen {reopen}: {most} fds open during the session, {before} before"
        );
        assert_eq!(
            rearm(&rt).name(),
            if reopen { "reopen" } else { "retarget" }
        );
        drop(rt);
        assert_eq!(open_fds(), before, "reopen {reopen}: fds after the session");
    }
}

/// The re-arming path is in the status: JSON `"rearm"` (and
/// `"rearm_reason"` when it reopens) and the end-of-run summary.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn the_status_says_how_breakpoints_are_rearmed() {
    for reopen in PATHS {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let _f = ForceReopen::new(reopen);
        let rt = runtime();
        require_active(rt.enable_watch(WatchSpec::Recent));
        for _ in 0..6 {
            let o = rt.obj_new(1);
            rt.obj_free(o);
        }
        let st = rt.watch_status().unwrap();
        let j = st.to_json();
        let line = st.summary_line().unwrap();
        if reopen {
            assert_eq!(j["rearm"], "reopen", "{j}");
            assert!(j["rearm_reason"].as_str().is_some(), "{j}");
            assert!(
                line.contains("re-armed by a perf event open and close per object"),
                "{line}"
            );
        } else {
            assert_eq!(j["rearm"], "retarget", "{j}");
            assert!(j.get("rearm_reason").is_none(), "{j}");
            assert!(
                line.ends_with("; re-armed by retargeting open perf events"),
                "{line}"
            );
        }
    }
}

/// A debug exception the kernel cannot attribute to a breakpoint (`SIGTRAP`
/// with `TRAP_BRKPT`; a KVM guest delivers such traps for watched writes
/// whose debug status it lost, and they killed `guardlift bench --only
/// watch` now and then) does not kill the process while a session runs:
/// an armed word that changed meanwhile takes it as its trap, so a
/// malformed word written where no breakpoint saw it (through
/// `/proc/self/mem`: a kernel write) is reported, and one that did not
/// change is only counted. Here the exception is an `icebp`, which the
/// kernel reports the same way.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only: elsewhere \
              watchpoints_say_unavailable_elsewhere checks the status"
)]
fn an_unattributed_debug_exception_is_taken_by_the_word_that_changed() {
    use std::os::unix::fs::FileExt;
    #[cfg(target_arch = "x86_64")]
    fn icebp() {
        // SAFETY: `icebp` (int1) only raises a debug exception: SIGTRAP.
        unsafe { std::arch::asm!(".byte 0xf1") };
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn icebp() {}
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    require_active(rt.enable_watch(WatchSpec::Recent));
    let b = HostBlock::new();
    rt.register_object(b.obj()).unwrap();
    host_init(&b);
    rt.watch(b.obj());
    let before = counts(&rt);
    let flipped = (b.slot() + 48 + 0b111) & !1;
    let mem = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/mem")
        .expect("/proc/self/mem");
    mem.write_at(&flipped.to_le_bytes(), b.slot())
        .expect("a kernel write of the word");
    assert_eq!(counts(&rt), before, "a kernel write traps nothing");
    icebp();
    let c = counts(&rt);
    assert_eq!(c.unattributed, before.unattributed + 1, "{c:?}");
    assert_eq!(c.hits, before.hits + 1, "the changed word's trap: {c:?}");
    let f = foreign_writes(&rt);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].3, flipped, "{f:?}");
    // Nothing changed since: counted only.
    icebp();
    let c2 = counts(&rt);
    assert_eq!(c2.unattributed, before.unattributed + 2, "{c2:?}");
    assert_eq!(c2.hits, c.hits, "{c2:?}");
    assert!(foreign_writes(&rt).is_empty());
    rt.object_freed(b.obj()).unwrap();
}

/// Where watchpoints are not built (aarch64), asking for them is
/// an `Unavailable` status that says why, nothing worse: the session is
/// off, the runtime works on and records no foreign write.
#[test]
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn watchpoints_say_unavailable_elsewhere() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = runtime();
    match rt.enable_watch(WatchSpec::Recent) {
        WatchStatus::Unavailable { reason } => assert!(
            reason.contains("hardware watchpoints need Linux on x86_64")
                && reason.contains(std::env::consts::ARCH),
            "{reason}"
        ),
        other => panic!("watchpoints on {}: {other:?}", std::env::consts::ARCH),
    }
    assert!(foreign_writes(&rt).is_empty());
}
