//! End-to-end: build for each target, run, compare with the host JIT.

use guardlift_aot::{build, End, Print};
use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::Target;
use guardlift_runtime::{Mode, Observed, ReportKind};

fn tagflip() -> guardlift_ir::Module {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/examples/tagflip.glir"
    );
    let text = std::fs::read_to_string(path).expect("../shared/examples beside the repository");
    guardlift_ir::parse_and_verify(&text).unwrap()
}

fn targets() -> [Target; 2] {
    [Target::Aarch64, Target::X86_64]
}

#[test]
fn tagflip_recovers_with_the_same_reports_on_every_target() {
    let m = instrument(&tagflip(), CheckSet::ALL);
    for t in targets() {
        let b = build(&m, "main", t, Mode::Recover).unwrap_or_else(|e| panic!("{t}: {e}"));
        let r = b.run(&[10]).unwrap();
        assert_eq!(r.end, End::Exited, "{t}");
        assert_eq!(r.result, Some(0), "{t}");
        assert!(r.host_fault.is_none(), "{t}: {:?}", r.host_fault);
        let got: Vec<(ReportKind, u32, u64)> = r
            .reports
            .iter()
            .map(|r| (r.kind, r.info.line, r.count))
            .collect();
        assert_eq!(
            got,
            vec![
                (ReportKind::DictSlotTag, 27, 7),
                (ReportKind::DictSlotTag, 32, 1)
            ],
            "{t}"
        );
        let lw = r.reports[0].last_write.as_ref().expect("last write");
        assert_eq!(lw.by, "obj_new", "{t}");
        // The same build runs again with other arguments.
        let r = b.run(&[2]).unwrap();
        assert_eq!(r.result, Some(1), "{t}");
        assert!(r.reports.is_empty(), "{t}");
    }
}

#[test]
fn abort_mode_stops_at_the_first_violation() {
    let m = instrument(&tagflip(), CheckSet::ALL);
    for t in targets() {
        let r = build(&m, "main", t, Mode::Abort)
            .unwrap()
            .run(&[10])
            .unwrap();
        assert_eq!(r.end, End::Aborted, "{t}");
        assert_eq!(r.reports.len(), 1, "{t}");
        assert_eq!(r.reports[0].info.line, 27, "{t}");
        assert_eq!(r.result, None, "{t}");
    }
}

#[test]
fn uninstrumented_corruption_is_a_host_fault() {
    let m = tagflip();
    for t in targets() {
        let r = build(&m, "main", t, Mode::Recover)
            .unwrap()
            .run(&[10])
            .unwrap();
        // The run dies at the IR instruction that called the host's slow
        // path, as native code would crash there (spec §6.2).
        assert_eq!(r.end, End::Crashed { signal: 0 }, "{t}");
        let f = r.host_fault.expect("host fault");
        assert_eq!(f.func, "store_attr_slow", "{t}");
        assert!(f.msg.contains("low bits 0b110"), "{t}: {}", f.msg);
        let at = r.fault.expect("the fault, placed at its IR site");
        assert_eq!((at.at.op, at.in_host), ("store_attr", true), "{t}");
        let (_, note) = at
            .host
            .expect("a host function's fault")
            .object
            .expect("object");
        // The one object of the example.
        assert_eq!(note.expect("known object").id, 1, "{t}");
    }
}

#[test]
fn prints_and_entry_types_round_trip() {
    let text = "extern fn @print_i64(i64)\nextern fn @print_f64(f64)\nextern fn @sin(f64) -> f64\n\
        fn @main(%a: i8, %b: f32, %c: f64, %d: i32) -> f32 {\nentry:\n\
        %w = sext.i64 %a\n    call @print_i64(%w)\n    %s = call @sin(%c)\n    call @print_f64(%s)\n\
        %x = sext.i64 %d\n    call @print_i64(%x)\n    return %b\n}\n";
    let m = guardlift_ir::parse_and_verify(text).unwrap();
    let bits = [
        (-3i64) as u64,
        1.5f32.to_bits() as u64,
        0.5f64.to_bits(),
        (-7i64) as u64,
    ];
    for t in targets() {
        let r = build(&m, "main", t, Mode::Recover)
            .unwrap()
            .run(&bits)
            .unwrap();
        assert_eq!(
            r.prints,
            vec![Print::I64(-3), Print::F64(0.5f64.sin()), Print::I64(-7)],
            "{t}"
        );
        assert_eq!(r.result, Some(1.5f32.to_bits() as u64), "{t}");
    }
}

#[test]
fn unknown_externs_are_link_errors() {
    let text = "extern fn @nope(i64) -> i64\nfn @main() -> i64 {\nentry:\n    %z = iconst.i64 0\n    %r = call @nope(%z)\n    return %r\n}\n";
    let m = guardlift_ir::parse_and_verify(text).unwrap();
    let e = build(&m, "main", Target::Aarch64, Mode::Recover).unwrap_err();
    assert!(
        e.with_file("f.glir").starts_with("f.glir:1:"),
        "{}",
        e.with_file("f.glir")
    );
}

#[test]
fn trap_mode_maps_the_pc_back_to_the_site() {
    let m = instrument(&tagflip(), CheckSet::ALL);
    for t in targets() {
        let r = build(&m, "main", t, Mode::Trap)
            .unwrap()
            .run(&[10])
            .unwrap();
        let End::Trapped(trap) = r.end else {
            panic!("{t}: {:?}", r.end)
        };
        assert_eq!(trap.signal, 4, "{t}: SIGILL");
        let tr = trap
            .report
            .unwrap_or_else(|| panic!("{t}: trap at {:#x} not mapped", trap.pc));
        assert_eq!(
            (tr.kind, tr.info.line),
            (ReportKind::DictSlotTag, 27),
            "{t}"
        );
        match tr.observed {
            Some(guardlift_runtime::Observed::Dict { value, .. }) => {
                assert_eq!(value & 7, 0b110, "{t}")
            }
            o => panic!("{t}: {o:?}"),
        }
        assert!(r.reports.is_empty(), "{t}");
    }
}

/// Use after free (attribute, raw store through a values pointer kept
/// from before the free), double and invalid free, and a store past the
/// values array's capacity beside a canary object: every target's support
/// reports what the host runtime reports, with allocation ids and sites,
/// and keeps every write out of freed memory and other objects.
const OBJECTS: &str = "extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
fn @main(%n: i64) -> i64 {
entry:
    %one = iconst.i64 1
    %a = call @obj_new(%one)
    %b = call @obj_new(%one)
    %canary = iconst.i64 4242
    store_attr %b, 0, %canary
    store_attr %a, 3, %n
    %w = dict_slot.load %a
    %values = iadd %w, %one
    call @obj_free(%a)
    store %n, %values, 0
    store_attr %a, 0, %n
    %r = load_attr %a, 0
    call @obj_free(%a)
    %eight = iconst.i64 8
    %inner = iadd %b, %eight
    call @obj_free(%inner)
    %c = load_attr %b, 0
    %s = iadd %c, %r
    return %s
}
";

fn objects() -> guardlift_ir::Module {
    instrument(
        &guardlift_ir::parse_and_verify(OBJECTS).unwrap(),
        CheckSet::ALL,
    )
}

#[test]
fn lifetime_and_bounds_reports_on_every_target() {
    let m = objects();
    for t in targets() {
        let r = build(&m, "main", t, Mode::Recover)
            .unwrap()
            .run(&[7])
            .unwrap();
        assert_eq!(r.end, End::Exited, "{t}");
        assert!(r.host_fault.is_none(), "{t}: {:?}", r.host_fault);
        assert_eq!(
            r.result,
            Some(4242),
            "{t}: the canary is intact, loads give 0"
        );
        let got: Vec<(ReportKind, u32, Option<u64>, bool)> = r
            .reports
            .iter()
            .map(|r| {
                let o = r.object.as_ref();
                (
                    r.kind,
                    r.info.line,
                    o.map(|o| o.id),
                    o.is_some_and(|o| o.freed),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (ReportKind::AttrOutOfBounds, 10, Some(1), false),
                (ReportKind::UseAfterFree, 14, Some(1), true),
                (ReportKind::UseAfterFree, 15, Some(1), true),
                (ReportKind::UseAfterFree, 16, Some(1), true),
                (ReportKind::DoubleFree, 17, Some(1), true),
                (ReportKind::InvalidFree, 20, None, false),
            ],
            "{t}"
        );
        match r.reports[0].observed {
            Observed::Bounds {
                index, capacity, ..
            } => assert_eq!((index, capacity), (3, 1), "{t}"),
            o => panic!("{t}: {o:?}"),
        }
        match r.reports[1].observed {
            Observed::Lifetime {
                object,
                address,
                width,
            } => {
                assert_eq!(width, 8, "{t}");
                assert_ne!(object, address, "{t}: the raw store hit the values array");
            }
            o => panic!("{t}: {o:?}"),
        }
        let uaf = r.reports[2].object.as_ref().unwrap();
        assert_eq!(uaf.alloc_site.as_ref().map(|s| s.line), Some(6), "{t}");
        assert_eq!(uaf.free_site.as_ref().map(|s| s.line), Some(13), "{t}");
    }
}

/// With `quarantine_mb=0` a freed object leaves quarantine at once: freeing
/// it again is no longer a double free but an invalid one (and nothing
/// touches its memory in between).
#[test]
fn quarantine_size_reaches_the_target() {
    let text = "extern fn @obj_new(i64) -> ptr\nextern fn @obj_free(ptr)\n\
        fn @main() {\nentry:\n    %one = iconst.i64 1\n    %a = call @obj_new(%one)\n\
        call @obj_free(%a)\n    call @obj_free(%a)\n    return\n}\n";
    let m = instrument(
        &guardlift_ir::parse_and_verify(text).unwrap(),
        CheckSet::parse("lifetime").unwrap(),
    );
    for t in [Target::Aarch64, Target::X86_64] {
        let mut b = build(&m, "main", t, Mode::Recover).unwrap();
        let kinds = |b: &guardlift_aot::Build| -> Vec<ReportKind> {
            b.run(&[]).unwrap().reports.iter().map(|r| r.kind).collect()
        };
        assert_eq!(kinds(&b), vec![ReportKind::DoubleFree], "{t}");
        b.set_quarantine_mb(0);
        assert_eq!(kinds(&b), vec![ReportKind::InvalidFree], "{t}");
    }
}

/// Trap mode: the bounds check traps with what it observed; the lifetime
/// checks report and abort inside the runtime call, as in abort mode.
#[test]
fn trap_mode_bounds_and_lifetime() {
    // The bounds check decides in the runtime from its record (as the
    // lifetime checks do): in trap mode it reports and aborts there.
    let m = objects();
    for t in targets() {
        let r = build(&m, "main", t, Mode::Trap).unwrap().run(&[7]).unwrap();
        assert_eq!(r.end, End::Aborted, "{t}");
        let tr = &r.reports[0];
        assert_eq!(
            (tr.kind, tr.info.line),
            (ReportKind::AttrOutOfBounds, 10),
            "{t}"
        );
        match tr.observed {
            Observed::Bounds {
                index, capacity, ..
            } => {
                assert_eq!((index, capacity), (3, 1), "{t}")
            }
            o => panic!("{t}: {o:?}"),
        }
    }
    let lifetime_only = instrument(
        &guardlift_ir::parse_and_verify(OBJECTS).unwrap(),
        CheckSet::parse("lifetime").unwrap(),
    );
    for t in targets() {
        let r = build(&lifetime_only, "main", t, Mode::Trap)
            .unwrap()
            .run(&[7])
            .unwrap();
        assert_eq!(r.end, End::Aborted, "{t}");
        let got: Vec<(ReportKind, u32)> = r.reports.iter().map(|r| (r.kind, r.info.line)).collect();
        assert_eq!(got, vec![(ReportKind::UseAfterFree, 14)], "{t}");
    }
}

/// A clobber report names the object whose watched slot the raw store hit
/// (as the host runtime's does), and a freed object is never watched again.
#[test]
fn clobber_reports_name_the_slot_owner() {
    let text = "extern fn @obj_new(i64) -> ptr\nextern fn @obj_free(ptr)\n\
        fn @main() -> i64 {\nentry:\n    %one = iconst.i64 1\n    %a = call @obj_new(%one)\n\
        %b = call @obj_new(%one)\n    %z = iconst.i64 0\n    store %z, %b, -24\n\
        call @obj_free(%a)\n    guard.watch %a\n    %r = load.i64 %a, 8\n    return %r\n}\n";
    let m = instrument(
        &guardlift_ir::parse_and_verify(text).unwrap(),
        CheckSet::parse("clobber").unwrap(),
    );
    for t in targets() {
        let r = build(&m, "main", t, Mode::Recover)
            .unwrap()
            .run(&[])
            .unwrap();
        assert_eq!(r.end, End::Exited, "{t}");
        let got: Vec<(ReportKind, u32, Option<u64>)> = r
            .reports
            .iter()
            .map(|r| (r.kind, r.info.line, r.object.as_ref().map(|o| o.id)))
            .collect();
        assert_eq!(got, vec![(ReportKind::SlotClobber, 9, Some(2))], "{t}");
        // The attribute count in the freed object's header, untouched.
        assert_eq!(r.result, Some(1), "{t}");
    }
}
