//! Which loops are counted and which accesses they range.

use super::*;
use crate::module::Module;
use crate::parse_module;

/// The module of `@f`: a counted loop `head` whose body is `body`.
fn counted(body: &str) -> Module {
    let text = format!(
        "extern fn @obj_free(ptr)\nfn @f(%p: ptr, %n: i64, %o: ptr) -> i64 {{\nentry:\n    %z = iconst.i64 0\n    %one = iconst.i64 1\n    %three = iconst.i64 3\n    %eight = iconst.i64 8\n    jump head(%z)\nhead(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, out, body\n{body}\nout:\n    return %z\n}}\n"
    );
    parse_module(&text).expect("parses")
}

/// The ranges of `@f` as (base name, scale, lo, hi, member count).
fn ranges(body: &str) -> Vec<(String, i64, i64, i64, usize)> {
    let m = counted(body);
    let f = m.func(m.func_by_name("f").expect("@f"));
    LoopRanges::of(f, &m)
        .ranges()
        .iter()
        .map(|r| {
            let name = f.values[r.base.0 as usize].name.to_string();
            (name, r.scale, r.lo, r.hi, r.members.len())
        })
        .collect()
}

const WALK: &str = "body:\n    %t = ishl %i, %three\n    %a = iadd %p, %t\n    %x = guard.load.i64 %a\n    guard.store %x, %a, 8\n    %i2 = iadd %i, %one\n    jump head(%i2)";

#[test]
fn a_counted_loop_ranges_its_affine_accesses() {
    assert_eq!(ranges(WALK), vec![("p".into(), 8, 0, 16, 2)]);
    let mul = "body:\n    %t = imul %eight, %i\n    %a = iadd %t, %p\n    %x = guard.load.i32 %a, -4\n    %i2 = iadd %one, %i\n    jump head(%i2)";
    assert_eq!(ranges(mul), vec![("p".into(), 8, -4, 0, 1)]);
}

#[test]
fn what_keeps_the_checks() {
    for (what, body) in [
        (
            "a call",
            WALK.replace("%i2 = iadd", "call @obj_free(%o)\n    %i2 = iadd"),
        ),
        (
            "an attribute op",
            WALK.replace("%i2 = iadd", "%y = load_attr %o, 0\n    %i2 = iadd"),
        ),
        (
            "a watch",
            WALK.replace("%i2 = iadd", "guard.watch %o\n    %i2 = iadd"),
        ),
        ("a step of 0", WALK.replace("iadd %i, %one", "iadd %i, %z")),
        (
            "a step down",
            WALK.replace("%i2 = iadd %i, %one", "%i2 = isub %i, %one"),
        ),
        (
            "a base from the loop",
            WALK.replace("iadd %p, %t", "iadd %t, %t"),
        ),
        ("an unguarded access", WALK.replace("guard.", "")),
    ] {
        assert_eq!(ranges(&body), vec![], "{what}");
    }
}

#[test]
fn the_entry_range_covers_every_access_and_refuses_what_could_wrap() {
    let text = format!(
        "fn @f(%p: ptr, %n: i64) -> i64 {{\nentry:\n    %z = iconst.i64 0\n    %one = iconst.i64 1\n    %three = iconst.i64 3\n    jump head(%z)\nhead(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, out, body\n{}\nout:\n    return %z\n}}\n",
        WALK
    );
    let m = parse_module(&text).expect("parses");
    let f = m.func(m.func_by_name("f").expect("@f"));
    let lr = LoopRanges::of(f, &m);
    let r = &lr.ranges()[0];
    assert_eq!(
        entry_range(r, 0x1000, 0, 4),
        Some(Some((0x1000, 0x1000 + 3 * 8 + 16)))
    );
    assert_eq!(entry_range(r, 0x1000, 2, 2), Some(None), "no iteration");
    assert_eq!(entry_range(r, 0x1000, -1, 4), None, "a negative start");
    assert_eq!(
        entry_range(r, 0x1000, 0, MAX_BOUND + 1),
        None,
        "a huge bound"
    );
    assert_eq!(entry_range(r, 1 << 47, 0, 4), None, "above the shadow");
    assert_eq!(
        entry_range(r, 0x1000, 0, 1 << 20),
        None,
        "wider than MAX_SPAN"
    );
}

/// The ranges of `@f` (as `ranges` builds it) with its clean loops, as
/// (base name, clean copy only, member count).
fn clean_copy_ranges(body: &str) -> Vec<(String, bool, usize)> {
    let m = counted(body);
    let f = m.func(m.func_by_name("f").expect("@f"));
    let an = crate::analysis::context::FuncAnalysis::new(f);
    let clean = an.clean_loops(&m, crate::hoist::HostModel::default());
    LoopRanges::of_in_with(f, &m, (an.cfg(), an.domtree()), &clean)
        .ranges()
        .iter()
        .map(|r| {
            let name = f.values[r.base.0 as usize].name.to_string();
            (name, r.clean_copy, r.members.len())
        })
        .collect()
}

/// Richards' fill loop: attribute ops on an object from before the loop
/// (its fixed attribute) beside a raw store into a list under `clobber`.
/// The loop is clean, and its clean copy ranges the store; what could
/// change the runtime's records in the hot part keeps the checks.
#[test]
fn a_clean_copy_ranges_its_accesses_beside_fixed_attribute_ops() {
    let fill = "body:\n    %c = guard.load_attr %o, 1 !site(0, 1:1, lifetime bounds)\n    guard.watch %o\n    guard.store_attr %o, 1, %i !site(1, 1:1, lifetime bounds)\n    %t = imul %i, %eight\n    %a = iadd %p, %t\n    guard.store %c, %a !site(2, 1:1, lifetime bounds clobber)\n    %i2 = iadd %i, %one\n    jump head(%i2)";
    assert_eq!(ranges(fill), vec![], "no range outside a clean copy");
    assert_eq!(clean_copy_ranges(fill), vec![("p".into(), true, 1)]);
    // Without attribute ops: an ordinary range.
    assert_eq!(clean_copy_ranges(WALK), vec![("p".into(), false, 2)]);
    for (what, body) in [
        (
            "an attribute op on an object made in the loop",
            fill.replace(
                "%i2 = iadd",
                "%q = load.i64 %p\n    %y = guard.load_attr %q, 0 !site(3, 1:1, bounds)\n    %i2 = iadd",
            ),
        ),
        (
            "a watch of another object",
            fill.replace("%i2 = iadd", "guard.watch %p\n    %i2 = iadd"),
        ),
        (
            "a store without clobber (no clean loop)",
            fill.replace("lifetime bounds clobber", "lifetime bounds"),
        ),
    ] {
        assert!(
            clean_copy_ranges(&body).iter().all(|r| !r.1),
            "{what}: {:?}",
            clean_copy_ranges(&body)
        );
    }
}
