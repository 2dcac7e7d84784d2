//! Every adstack op, unguarded and guarded (recover mode).

mod common;
use common::*;
use guardlift_runtime::{Observed, ReportKind};

#[test]
fn push_top_acc_pop_len_for_every_element_type() {
    let m = jit(r#"
fn @f64s() -> f64 {
entry:
    %s = adstack.alloc.f64 8
    %a = fconst.f64 1.5
    %b = fconst.f64 -2.0
    adstack.push %s, %a
    adstack.push %s, %b
    %t = adstack.top %s
    %adj0 = adstack.top_adj %s
    %d = fconst.f64 0.25
    adstack.acc_adj %s, %d
    adstack.acc_adj %s, %d
    %adj = adstack.top_adj %s
    adstack.pop %s
    %t2 = adstack.top %s
    %adj2 = adstack.top_adj %s
    %n = adstack.len %s
    %nf = fcvt_from_sint.f64 %n
    ; t (-2) + adj0 (0) + adj (0.5) + t2 (1.5) + adj2 (0) + n (1) = 1.0
    %r1 = fadd %t, %adj0
    %r2 = fadd %r1, %adj
    %r3 = fadd %r2, %t2
    %r4 = fadd %r3, %adj2
    %r5 = fadd %r4, %nf
    return %r5
}
fn @f32s() -> f32 {
entry:
    %s = adstack.alloc.f32 4
    %a = fconst.f32 3.0
    adstack.push %s, %a
    %b = fconst.f32 0.5
    adstack.push %s, %b
    adstack.acc_adj %s, %a
    %adj = adstack.top_adj %s
    adstack.pop %s
    %d = fconst.f32 10.0
    adstack.acc_adj %s, %d
    %adj2 = adstack.top_adj %s
    %t = adstack.top %s
    ; adj (3) * 100 + adj2 (10) * 10 + t (3) = 403
    %h = fconst.f32 100.0
    %ten = fconst.f32 10.0
    %x = fmul %adj, %h
    %y = fmul %adj2, %ten
    %z = fadd %x, %y
    %r = fadd %z, %t
    return %r
}
fn @i64s(%k: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 100
    %z = iconst.i64 0
    jump fill(%z)
fill(%i: i64):
    %c = icmp.slt %i, %k
    brif %c, push, drain(%z)
push:
    adstack.push %s, %i
    adstack.acc_adj %s, %i
    adstack.acc_adj %s, %i
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump fill(%i2)
drain(%acc: i64):
    %n = adstack.len %s
    %e = icmp.eq %n, %z
    brif %e, done(%acc), pop
pop:
    %t = adstack.top %s
    %a = adstack.top_adj %s
    adstack.pop %s
    %ta = iadd %t, %a
    %acc2 = iadd %acc, %ta
    jump drain(%acc2)
done(%r: i64):
    return %r
}
fn @realloc_resets() -> i64 {
entry:
    %z = iconst.i64 0
    jump l(%z)
l(%i: i64):
    %s = adstack.alloc.i64 4
    %v = iconst.i64 9
    adstack.push %s, %v
    adstack.push %s, %v
    %n = adstack.len %s
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    %three = iconst.i64 3
    %c = icmp.slt %i2, %three
    brif %c, l(%i2), out(%n)
out(%r: i64):
    return %r
}
fn @through_params() -> f64 {
entry:
    %s = adstack.alloc.f64 2
    %x = fconst.f64 4.0
    adstack.push %s, %x
    jump next(%s)
next(%h: adstack.f64):
    %t = adstack.top %h
    return %t
}
"#);
    // SAFETY: unchecked adstack ops, but these programs never push onto a
    // full buffer nor read an empty one: every access stays in its buffer.
    unsafe {
        assert_eq!(m.func::<(), f64>("f64s").unwrap().call(()), 1.0);
        assert_eq!(m.func::<(), f32>("f32s").unwrap().call(()), 403.0);
        // sum of 3*i for i < 10 = 135
        assert_eq!(m.func::<i64, i64>("i64s").unwrap().call(10), 135);
        assert_eq!(m.func::<(), i64>("realloc_resets").unwrap().call(()), 2);
        assert_eq!(m.func::<(), f64>("through_params").unwrap().call(()), 4.0);
    }
    assert!(m.runtime().take_reports().is_empty());
}

#[test]
fn overflow_guard_reports_and_skips() {
    let m = jit(r#"
fn @over(%k: i64) -> i64 {
entry:
    %s = adstack.alloc.i64 3
    %z = iconst.i64 0
    jump l(%z)
l(%i: i64):
    %c = icmp.slt %i, %k
    brif %c, body, done
body:
    guard.adstack.push %s, %i
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump l(%i2)
done:
    %n = adstack.len %s
    %t = guard.adstack.top %s
    %h = iconst.i64 100
    %nn = imul %n, %h
    %r = iadd %nn, %t
    return %r
}
fn @over_f32() -> f32 {
entry:
    %s = adstack.alloc.f32 1
    %a = fconst.f32 1.0
    %b = fconst.f32 2.0
    guard.adstack.push %s, %a
    guard.adstack.push %s, %b
    %t = guard.adstack.top %s
    return %t
}
"#);
    let rt = m.runtime().clone();
    let over = m.safe_func::<i64, i64>("over").unwrap();
    assert_eq!(over.call(3), 302, "full, no report");
    assert!(rt.take_reports().is_empty());
    // 7 pushes into capacity 3: 4 reported and skipped; the top is still 2.
    assert_eq!(over.call(7), 302);
    let r = rt.take_reports();
    assert_eq!(kinds(&r), vec![(ReportKind::AdstackOverflow, 4)]);
    assert_eq!(
        r[0].observed,
        Observed::Adstack {
            capacity: 3,
            len: 3
        }
    );
    assert_eq!(r[0].info.op, "adstack.push");
    assert_eq!(m.safe_func::<(), f32>("over_f32").unwrap().call(()), 1.0);
    let r = rt.take_reports();
    assert_eq!(kinds(&r), vec![(ReportKind::AdstackOverflow, 1)]);
    assert_eq!(
        r[0].observed,
        Observed::Adstack {
            capacity: 1,
            len: 1
        }
    );
}

#[test]
fn underflow_guards_report_and_recover() {
    let m = jit(r#"
fn @pop_empty() -> i64 {
entry:
    %s = adstack.alloc.i64 2
    guard.adstack.pop %s
    guard.adstack.pop %s
    %n = adstack.len %s
    return %n
}
fn @top_empty() -> f64 {
entry:
    %s = adstack.alloc.f64 2
    %t = guard.adstack.top %s
    return %t
}
fn @top_adj_empty() -> f32 {
entry:
    %s = adstack.alloc.f32 2
    %t = guard.adstack.top_adj %s
    return %t
}
fn @acc_empty() -> f64 {
entry:
    %s = adstack.alloc.f64 2
    %d = fconst.f64 1.0
    guard.adstack.acc_adj %s, %d
    %x = fconst.f64 5.0
    guard.adstack.push %s, %x
    guard.adstack.acc_adj %s, %d
    %a = guard.adstack.top_adj %s
    %t = guard.adstack.top %s
    %r = fadd %a, %t
    guard.adstack.pop %s
    %n = adstack.len %s
    %nf = fcvt_from_sint.f64 %n
    %r2 = fadd %r, %nf
    return %r2
}
fn @i64_top_empty() -> i64 {
entry:
    %s = adstack.alloc.i64 2
    %t = guard.adstack.top %s
    return %t
}
"#);
    let rt = m.runtime().clone();
    assert_eq!(
        m.safe_func::<(), i64>("pop_empty").unwrap().call(()),
        0,
        "pop at 0 skipped"
    );
    let r = rt.take_reports();
    assert_eq!(
        kinds(&r),
        vec![
            (ReportKind::AdstackUnderflow, 1),
            (ReportKind::AdstackUnderflow, 1)
        ]
    );
    assert_eq!(
        r[0].observed,
        Observed::Adstack {
            capacity: 2,
            len: 0
        }
    );
    assert_eq!(r[0].info.op, "adstack.pop");

    assert_eq!(m.safe_func::<(), f64>("top_empty").unwrap().call(()), 0.0);
    assert_eq!(
        m.safe_func::<(), f32>("top_adj_empty").unwrap().call(()),
        0.0
    );
    assert_eq!(m.safe_func::<(), i64>("i64_top_empty").unwrap().call(()), 0);
    let r = rt.take_reports();
    let ops: Vec<&str> = r.iter().map(|r| r.info.op.as_str()).collect();
    assert_eq!(ops, ["adstack.top", "adstack.top_adj", "adstack.top"]);
    assert!(r.iter().all(|r| r.kind == ReportKind::AdstackUnderflow));

    // acc_adj at 0 is skipped; later ops work: adj 1 + top 5 + len 0.
    assert_eq!(m.safe_func::<(), f64>("acc_empty").unwrap().call(()), 6.0);
    let r = rt.take_reports();
    assert_eq!(kinds(&r), vec![(ReportKind::AdstackUnderflow, 1)]);
    assert_eq!(r[0].info.op, "adstack.acc_adj");
}
