//! Tests of the reports (`report.rs`).
use super::*;

#[test]
fn dedup_counts_and_keeps_first_observation() {
    let info = SiteInfo {
        function: "main".into(),
        line: 3,
        col: 5,
        op: "store_attr".into(),
    };
    let mut s = ReportSink::default();
    let lw = LastWrite {
        by: "obj_new".into(),
        site: None,
        value: 0x97,
        object_id: Some(1),
    };
    let dict = |v| Observed::Dict {
        object: 16,
        value: v,
    };
    assert_eq!(
        s.record(
            ReportKind::DictSlotTag,
            0,
            &info,
            dict(0x96),
            Some(lw),
            None
        )
        .0,
        1
    );
    assert_eq!(
        s.record(ReportKind::DictSlotTag, 0, &info, dict(0x2), None, None)
            .0,
        2
    );
    let ad = Observed::Adstack {
        capacity: 1,
        len: 1,
    };
    assert_eq!(
        s.record(ReportKind::AdstackOverflow, 0, &info, ad, None, None)
            .0,
        1
    );
    let r = s.take();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].count, 2);
    assert_eq!(
        r[0].observed,
        Observed::Dict {
            object: 16,
            value: 0x96
        }
    );
    assert_eq!(r[0].to_json()["value"], "0x96");
    assert_eq!(r[0].to_json()["value_low_bits"], "0b110");
    assert!(r[0].to_human().contains("low bits 0b110"));
    assert_eq!(r[0].to_json()["last_write"]["changed_behind"], true);
    assert!(r[0].to_human().contains("changed behind the JIT's back"));
    assert!(s.take().is_empty(), "taking twice finds nothing");
}

#[test]
fn lifetime_and_bounds_reports_name_the_object() {
    let site = |line| SiteInfo {
        function: "main".into(),
        line,
        col: 5,
        op: "call".into(),
    };
    let mut s = ReportSink::default();
    let note = ObjectNote {
        id: 3,
        alloc_site: Some(site(11)),
        free_site: Some(site(14)),
        freed: true,
        stacks: Default::default(),
        site_ids: [None; 2],
    };
    let obs = Observed::Lifetime {
        object: 0x1000,
        address: 0x1010,
        width: 8,
    };
    s.record(
        ReportKind::UseAfterFree,
        4,
        &site(16),
        obs,
        None,
        Some(note),
    );
    let bounds = Observed::Bounds {
        object: 0x2000,
        index: 6,
        capacity: 2,
    };
    let live = ObjectNote {
        id: 4,
        alloc_site: None,
        free_site: None,
        freed: false,
        stacks: Default::default(),
        site_ids: [None; 2],
    };
    s.record(
        ReportKind::AttrOutOfBounds,
        5,
        &site(17),
        bounds,
        None,
        Some(live),
    );
    let r = s.take();
    let j = r[0].to_json();
    assert_eq!(j["kind"], "use_after_free");
    assert_eq!(j["object_id"], 3);
    assert_eq!(j["alloc_site"]["line"], 11);
    assert_eq!(j["free_site"]["line"], 14);
    assert_eq!(
        (j["address"].clone(), j["width"].clone()),
        ("0x1010".into(), 8.into())
    );
    let h = r[0].to_human();
    assert!(
        h.contains("8-byte access at 0x1010 inside freed object 0x1000"),
        "{h}"
    );
    assert!(h.contains("object id 3, allocated at @main 11:5"), "{h}");
    assert!(h.contains("freed at @main 14:5"), "{h}");
    let j = r[1].to_json();
    assert_eq!(
        (j["index"].clone(), j["capacity"].clone()),
        (6.into(), 2.into())
    );
    assert_eq!(j["object_id"], 4);
    assert!(j["alloc_site"].is_null());
    assert!(
        j.get("free_site").is_none(),
        "a live object has no free site"
    );
    assert!(r[1]
        .to_human()
        .contains("attribute index 6 at or past the values array's capacity 2"));
    for k in ReportKind::ALL {
        assert_eq!(ReportKind::from_code(k.code()), Some(k));
        assert_eq!(ReportKind::from_trap_code(k.trap_code()), Some(k));
    }
}

/// Spec §6: a deduplicated report that saw several objects lists them
/// (up to 8, first seen first, with counts); `object_id` stays the first.
#[test]
fn several_objects_at_one_site_are_listed() {
    let info = SiteInfo {
        function: "main".into(),
        line: 9,
        col: 5,
        op: "load_attr".into(),
    };
    let note = |id| ObjectNote {
        id,
        alloc_site: None,
        free_site: None,
        freed: false,
        stacks: Default::default(),
        site_ids: [None; 2],
    };
    let dict = Observed::Dict {
        object: 0x40,
        value: 0x6,
    };
    let mut s = ReportSink::default();
    for id in [3, 5, 3, 3] {
        s.record(
            ReportKind::DictSlotTag,
            1,
            &info,
            dict,
            None,
            Some(note(id)),
        );
    }
    let r = &s.reports()[0];
    let j = r.to_json();
    assert_eq!(j["object_id"], 3);
    assert_eq!(
        j["objects"],
        json!([{"object_id": 3, "count": 3}, {"object_id": 5, "count": 1}])
    );
    let text = r.human().json().to_string();
    let line: Json = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(line, j, "{text}");
    assert!(
        r.to_human()
            .contains("objects seen here: id 3 (3 time(s)), id 5 (1 time(s))"),
        "{}",
        r.to_human()
    );
    // Up to 8 listed; one object only: no list.
    for id in 10..20 {
        s.record(
            ReportKind::DictSlotTag,
            1,
            &info,
            dict,
            None,
            Some(note(id)),
        );
    }
    assert_eq!(s.reports()[0].objects.len(), MAX_OBJECTS);
    assert_eq!(s.reports()[0].count, 14);
    s.record(ReportKind::DictSlotTag, 2, &info, dict, None, Some(note(4)));
    s.record(ReportKind::DictSlotTag, 2, &info, dict, None, Some(note(4)));
    assert!(s.reports()[1].to_json().get("objects").is_none());
}

#[test]
fn json_line_parses() {
    let info = SiteInfo {
        function: "we\"ird".into(),
        line: 2,
        col: 3,
        op: "store".into(),
    };
    let h = HumanReport {
        observed: Some(Observed::Clobber {
            address: 0x10,
            width: 1,
            value: 0xfe,
        }),
        trap: Some(TrapNote {
            signal: "SIGILL",
            pc: 0x1234,
        }),
        ..HumanReport::at(ReportKind::SlotClobber, 1, &info)
    };
    let text = h.json().to_string();
    let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(j["function"], "we\"ird");
    assert_eq!(j["width"], 1);
    assert_eq!(j["value"], "0xfe");
    assert_eq!(j["trap_pc"], "0x1234");
}

/// The signal handlers' JSON line carries every member of
/// [`Report::to_json`] (object note, last write, backtrace).
#[test]
fn json_line_is_the_reports_json() {
    let site = |line| SiteInfo {
        function: "f".into(),
        line,
        col: 5,
        op: "call".into(),
    };
    let mut r = Report {
        kind: ReportKind::DictSlotTag,
        site: 3,
        info: site(7),
        observed: Observed::Dict {
            object: 0x1000,
            value: 0x5,
        },
        last_write: Some(LastWrite {
            by: "obj_dictify".into(),
            site: None,
            value: 0x4,
            object_id: Some(2),
        }),
        object: Some(ObjectNote {
            id: 2,
            alloc_site: Some(site(3)),
            free_site: None,
            freed: true,
            stacks: Default::default(),
            site_ids: [None; 2],
        }),
        objects: vec![
            ObjectCount {
                object_id: 2,
                count: 1,
            },
            ObjectCount {
                object_id: 5,
                count: 1,
            },
        ],
        count: 2,
        backtrace: vec!["@f 7:5 (dict_slot.load)".into(), "@main 9:5 (call)".into()],
    };
    for _ in 0..2 {
        let text = r.human().json().to_string();
        let j: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(j, r.to_json(), "{text}");
        r.last_write = None;
        r.object = None;
        r.objects.clear();
        r.backtrace.clear();
    }
}

/// A host object's stacks in a report printed from a signal handler
/// (`raw_frames_only`): frames never symbolized print as raw call
/// addresses and stay unsymbolized; frames symbolized before print as text.
#[test]
fn host_stacks_print_raw_in_signal_context_unless_symbolized_before() {
    let alloc = crate::HostStack::from_return_addresses(&[0x1001, 0x2001]);
    let free = crate::HostStack::from_return_addresses(&[0x3001]);
    let note = ObjectNote {
        id: 5,
        alloc_site: None,
        free_site: None,
        freed: true,
        stacks: HostStacks {
            alloc: Some(alloc.clone()),
            free: Some(free.clone()),
        },
        site_ids: [None; 2],
    };
    let info = SiteInfo {
        function: "f".into(),
        line: 2,
        col: 5,
        op: "load_attr".into(),
    };
    let h = HumanReport {
        observed: Some(Observed::Lifetime {
            object: 0x40,
            address: 0x40,
            width: 0,
        }),
        object: Some(&note),
        ..HumanReport::at(ReportKind::UseAfterFree, 1, &info)
    };
    let (text, json) = crate::host_stack::raw_frames_only(|| (h.to_string(), h.json().to_string()));
    assert!(
        text.contains("    registered by the host at:\n      #0 0x1000 ?\n      #1 0x2000 ?\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "    freed at an unknown site\n    reported freed by the host at:\n      #0 0x3000 ?\n"
        ),
        "{text}"
    );
    let j: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(j["alloc_stack"], json!(["0x1000 ?", "0x2000 ?"]));
    assert_eq!(j["free_stack"], json!(["0x3000 ?"]));
    // Symbolized in normal context (no symbol at these addresses: the same
    // text), then printed from the cache.
    assert_eq!(alloc.frames(), ["0x1000 ?", "0x2000 ?"]);
    let text2 = crate::host_stack::raw_frames_only(|| h.to_string());
    assert_eq!(text2, text);
    // A live object's free stack is not printed.
    let live = ObjectNote {
        freed: false,
        ..note.clone()
    };
    let h = HumanReport {
        object: Some(&live),
        ..h
    };
    assert!(!h.to_string().contains("reported freed"));
    assert!(!h.json().to_string().contains("free_stack"));
}
