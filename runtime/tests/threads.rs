//! The runtime under concurrency and at teardown: many threads reporting
//! against one runtime lose no report and miscount nothing; dropping a
//! runtime with pending reports flushes them without panicking.

use guardlift_runtime::internals::*;
use guardlift_runtime::{Mode, Observed, ReportKind, Runtime, RuntimeConfig, SiteInfo, Verdict};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn site(i: u32) -> (u32, SiteInfo) {
    (
        i,
        SiteInfo {
            function: format!("f{i}"),
            line: i + 1,
            col: 5,
            op: "store_attr".into(),
        },
    )
}

#[test]
fn eight_threads_ten_thousand_violations_each() {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    let base = rt.register_sites((0..9).map(site).collect()).unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    rt.set_report_handler(Some(Arc::new(move |_r| {
        h.fetch_add(1, Ordering::Relaxed);
    })));
    std::thread::scope(|s| {
        for t in 0..8u32 {
            let rt = &rt;
            s.spawn(move || {
                for i in 0..10_000u64 {
                    // One site per thread, and one shared by all.
                    let obs = Observed::Dict {
                        object: 0x1000 * (t as u64 + 1),
                        value: 0x96 + 8 * i,
                    };
                    assert_eq!(
                        rt.report(ReportKind::DictSlotTag, base + t, obs),
                        Verdict::Recover
                    );
                    let obs = Observed::Adstack {
                        capacity: 32,
                        len: 32,
                    };
                    rt.report(ReportKind::AdstackOverflow, base + 8, obs);
                }
            });
        }
    });
    let reports = rt.take_reports();
    assert_eq!(reports.len(), 9);
    let total: u64 = reports.iter().map(|r| r.count).sum();
    assert_eq!(total, 160_000);
    for r in &reports {
        match r.kind {
            ReportKind::DictSlotTag => assert_eq!(r.count, 10_000),
            ReportKind::AdstackOverflow => assert_eq!(r.count, 80_000),
            k => panic!("unexpected kind {k:?}"),
        }
    }
    assert_eq!(
        handled.load(Ordering::Relaxed),
        160_000,
        "handler saw every occurrence"
    );
    assert!(rt.take_reports().is_empty(), "taking twice finds none");
}

#[test]
fn report_limit_caps_handler_calls_not_counts() {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    rt.configure(&guardlift_runtime::Options::parse("report_limit=3").unwrap())
        .unwrap();
    let base = rt.register_sites([site(0)].into()).unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let h = handled.clone();
    rt.set_report_handler(Some(Arc::new(move |r| {
        assert_eq!(r.kind, ReportKind::DictSlotTag);
        h.fetch_add(1, Ordering::Relaxed);
    })));
    for _ in 0..10 {
        rt.report(
            ReportKind::DictSlotTag,
            base,
            Observed::Dict {
                object: 8,
                value: 6,
            },
        );
    }
    assert_eq!(handled.load(Ordering::Relaxed), 3);
    assert_eq!(rt.take_reports()[0].count, 10);
}

/// A recover-mode runtime writing its reports as JSON lines to a fresh
/// log file named after `name`.
fn json_log_runtime(name: &str) -> (Arc<Runtime>, std::path::PathBuf) {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    let log = std::env::temp_dir().join(format!("gl-drop-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let opts = guardlift_runtime::Options {
        log_path: Some(log.display().to_string()),
        json: true,
        ..Default::default()
    };
    rt.configure(&opts).unwrap();
    (rt, log)
}

#[test]
fn dropping_a_runtime_with_pending_reports_flushes_and_does_not_panic() {
    let (rt, log) = json_log_runtime("flush");
    let base = rt.register_sites([site(0)].into()).unwrap();
    let o = rt.obj_new(2);
    rt.fault_clear_lsb(o);
    for _ in 0..3 {
        rt.report(
            ReportKind::DictSlotTag,
            base,
            Observed::Dict {
                object: o,
                value: 6,
            },
        );
    }
    // A handler that panics must not turn teardown into an abort: it is
    // only called at report time, never from Drop.
    rt.set_report_handler(Some(Arc::new(|_r| panic!("handler called from Drop"))));
    assert!(
        !log.exists() || std::fs::read_to_string(&log).unwrap().is_empty(),
        "nothing is written before the drop"
    );
    drop(rt);
    let text = std::fs::read_to_string(&log).expect("the drop flushed the pending report");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one report, deduplicated: {text}");
    let j: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(j["kind"], "dict_slot_tag", "{text}");
    assert_eq!(j["count"], 3, "{text}");
    let _ = std::fs::remove_file(&log);
}

#[test]
fn reports_a_handler_had_are_not_printed_again_at_drop() {
    let (rt, log) = json_log_runtime("handled");
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s2 = seen.clone();
    rt.set_report_handler(Some(Arc::new(move |_r| {
        s2.fetch_add(1, Ordering::Relaxed);
    })));
    let base = rt.register_sites([site(0)].into()).unwrap();
    let o = rt.obj_new(2);
    rt.fault_clear_lsb(o);
    rt.report(
        ReportKind::DictSlotTag,
        base,
        Observed::Dict {
            object: o,
            value: 6,
        },
    );
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    drop(rt);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.is_empty(),
        "the handler had it; nothing more at drop: {text}"
    );
    let _ = std::fs::remove_file(&log);
}

#[test]
fn last_known_write_is_captured_when_the_check_runs() {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        ..Default::default()
    });
    let base = rt.register_sites([site(0)].into()).unwrap();
    let o = rt.obj_new(2);
    rt.fault_clear_lsb(o);
    rt.report(
        ReportKind::DictSlotTag,
        base,
        Observed::Dict {
            object: o,
            value: 0x96,
        },
    );
    // Later writes do not change what the report says.
    rt.note_slot_write(base, o, 0x1234);
    let r = rt.take_reports().remove(0);
    let lw = r.last_write.clone().expect("obj_new wrote the slot");
    assert_eq!(lw.by, "obj_new");
    assert_eq!(lw.value & 7, 7);
    assert_eq!(r.to_json()["last_write"]["changed_behind"], true);
}
