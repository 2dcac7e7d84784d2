//! Allocation and free stacks of host objects through the Rust API (issue
//! 29, item 7): a host that registers and frees its objects from named
//! functions finds them in the reports about those objects (human and
//! JSON forms), innermost first, with none of guardlift's own frames; a
//! report keeps the stacks it was recorded with when the address is
//! reused; `host_stacks=0` (the default) records nothing.

use guardlift_runtime::internals::*;
use guardlift_runtime::{
    Mode, ModuleSites, Options, Report, ReportKind, Runtime, RuntimeConfig, SiteInfo,
};
use std::sync::Arc;

fn runtime() -> (Arc<Runtime>, u32) {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
        ..Default::default()
    });
    let sites: ModuleSites = [(
        0,
        SiteInfo {
            function: "use".into(),
            line: 3,
            col: 5,
            op: "load_attr".into(),
        },
    )]
    .into();
    let base = rt.register_sites(sites).unwrap();
    rt.configure(&Options::parse("host_stacks=1").unwrap())
        .unwrap();
    (rt, base)
}

/// The host's allocator: registers the object it made.
#[inline(never)]
fn hoststack_tp_alloc(rt: &Runtime, obj: u64) -> u64 {
    let id = rt.register_object(obj).unwrap();
    std::hint::black_box(id)
}

/// Another allocator of the host (a second registration at an address).
#[inline(never)]
fn hoststack_tp_alloc_again(rt: &Runtime, obj: u64) -> u64 {
    let id = rt.register_object(obj).unwrap();
    std::hint::black_box(id)
}

/// The host's deallocator: reports the object freed.
#[inline(never)]
fn hoststack_tp_dealloc(rt: &Runtime, obj: u64) {
    rt.object_freed(obj).unwrap();
    std::hint::black_box(obj);
}

/// The one report of `rt`'s sink.
fn only_report(rt: &Runtime) -> Report {
    let mut reps = rt.take_reports();
    assert_eq!(reps.len(), 1, "{reps:?}");
    reps.pop().unwrap()
}

fn stack(json: &serde_json::Value, key: &str) -> Vec<String> {
    json[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_use_after_free_of_a_host_object_names_where_it_was_registered_and_freed() {
    let (rt, site) = runtime();
    let body = Box::new([0u64; 4]);
    let obj = &body[3] as *const u64 as u64;
    hoststack_tp_alloc(&rt, obj);
    hoststack_tp_dealloc(&rt, obj);
    assert!(rt.check_live(obj, site).is_err());
    let r = only_report(&rt);
    assert_eq!(r.kind, ReportKind::UseAfterFree);
    let json = r.to_json();
    let alloc = stack(&json, "alloc_stack");
    let free = stack(&json, "free_stack");
    // Innermost first: the host's own function, none of guardlift's.
    assert!(alloc[0].contains("hoststack_tp_alloc"), "{alloc:?}");
    assert!(free[0].contains("hoststack_tp_dealloc"), "{free:?}");
    for f in alloc.iter().chain(&free) {
        assert!(!f.contains("register_object"), "{f}");
        assert!(!f.contains("object_freed"), "{f}");
    }
    // The caller of both is this test, with its file and line (debug info).
    assert!(
        alloc[1].contains("a_use_after_free_of_a_host_object")
            && alloc[1].contains("host_stacks.rs:"),
        "{alloc:?}"
    );
    assert!(alloc.len() <= guardlift_runtime::host_stack::HOST_STACK_FRAMES);
    // The human form prints the same frames after the object's lines.
    let text = r.to_human();
    let at = text.find("registered by the host at:").expect(&text);
    let freed = text.find("reported freed by the host at:").expect(&text);
    assert!(at < freed, "{text}");
    assert!(text.contains(&format!("      #0 {}\n", alloc[0])), "{text}");
    assert!(text.contains(&format!("      #0 {}\n", free[0])), "{text}");
    // The JSON line written without allocating (the log's) says the same.
    let line: serde_json::Value =
        serde_json::from_str(r.human().json().to_string().trim()).unwrap();
    assert_eq!(stack(&line, "alloc_stack"), alloc);
    assert_eq!(stack(&line, "free_stack"), free);
    drop(body);
}

#[test]
fn a_report_keeps_the_stacks_it_was_recorded_with() {
    let (rt, site) = runtime();
    let body = Box::new([0u64; 4]);
    let obj = &body[3] as *const u64 as u64;
    hoststack_tp_alloc(&rt, obj);
    hoststack_tp_dealloc(&rt, obj);
    assert!(rt.check_live(obj, site).is_err());
    let first = rt.peek_reports().pop().unwrap();
    // The address is reused: a new record, registered elsewhere.
    hoststack_tp_alloc_again(&rt, obj);
    let live = rt.object_record(obj).unwrap();
    let again = live.stacks.alloc.as_ref().unwrap().frames()[0].clone();
    assert!(again.contains("hoststack_tp_alloc_again"), "{again}");
    assert!(
        live.stacks.free.is_none(),
        "a live object has no free stack"
    );
    // The report recorded before still names the first allocator.
    let r = only_report(&rt);
    assert_eq!(r, first);
    let alloc = stack(&r.to_json(), "alloc_stack");
    assert!(alloc[0].contains("hoststack_tp_alloc "), "{alloc:?}");
    drop(body);
}

#[test]
fn host_stacks_off_records_nothing_and_ir_objects_have_none() {
    let (rt, site) = runtime();
    rt.configure(&Options::parse("host_stacks=0").unwrap())
        .unwrap();
    // Off is the default.
    let fresh = Runtime::new(RuntimeConfig::default());
    let o = Box::new(0u64);
    hoststack_tp_alloc(&fresh, &*o as *const u64 as u64);
    assert!(fresh
        .object_record(&*o as *const u64 as u64)
        .unwrap()
        .stacks
        .is_empty());
    let body = Box::new([0u64; 4]);
    let obj = &body[3] as *const u64 as u64;
    hoststack_tp_alloc(&rt, obj);
    hoststack_tp_dealloc(&rt, obj);
    assert!(rt.check_live(obj, site).is_err());
    let r = only_report(&rt);
    let json = r.to_json();
    assert!(json.get("alloc_stack").is_none() && json.get("free_stack").is_none());
    assert!(!r.to_human().contains("by the host at"));
    assert!(r.object.unwrap().stacks.is_empty());
    // On again: recorded. An object the model heap made never has stacks.
    rt.set_host_stacks(true);
    hoststack_tp_alloc(&rt, obj);
    assert!(rt.object_record(obj).unwrap().stacks.alloc.is_some());
    let o = rt.obj_new(1);
    assert!(rt.object_record(o).unwrap().stacks.is_empty());
    drop(body);
}
