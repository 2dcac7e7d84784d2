//! Which loops are counted and which accesses they range.

use super::*;
use crate::parse_module;

/// The ranges of `@f` as (base name, scale, lo, hi, member count).
fn ranges(body: &str) -> Vec<(String, i64, i64, i64, usize)> {
    let text = format!(
        "extern fn @obj_free(ptr)\nfn @f(%p: ptr, %n: i64, %o: ptr) -> i64 {{\nentry:\n    %z = iconst.i64 0\n    %one = iconst.i64 1\n    %three = iconst.i64 3\n    %eight = iconst.i64 8\n    jump head(%z)\nhead(%i: i64):\n    %done = icmp.sge %i, %n\n    brif %done, out, body\n{body}\nout:\n    return %z\n}}\n"
    );
    let m = parse_module(&text).expect("parses");
    let f = m.func(m.func_by_name("f").expect("@f"));
    LoopRanges::of(f, &m)
        .ranges()
        .iter()
        .map(|r| {
            let name = f.values[r.base.0 as usize].name.clone();
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
