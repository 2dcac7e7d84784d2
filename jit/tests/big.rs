//! Large inputs: a 20 000-block function, a 10 000-function module, a
//! megabyte-sized adstack frame.

mod common;
use common::*;
use std::fmt::Write as _;

#[test]
fn twenty_thousand_blocks() {
    const N: usize = 20_000;
    let mut t = String::from("fn @big(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %lim = iconst.i64 0x7fffffffffff\n    jump b0(%x)\n");
    for i in 0..N {
        let _ = writeln!(t, "b{i}(%v{i}: i64):");
        let _ = writeln!(t, "    %w{i} = iadd %v{i}, %one");
        let next = if i + 1 == N {
            "done".to_string()
        } else {
            format!("b{}", i + 1)
        };
        if i % 2 == 0 {
            let _ = writeln!(t, "    %c{i} = icmp.slt %w{i}, %lim");
            let _ = writeln!(t, "    brif %c{i}, {next}(%w{i}), {next}(%v{i})");
        } else {
            let _ = writeln!(t, "    jump {next}(%w{i})");
        }
    }
    t.push_str("done(%r: i64):\n    return %r\n}\n");
    let m = jit(&t);
    assert_eq!(m.func::<i64, i64>("big").unwrap().call(5), 5 + N as i64);
}

#[test]
fn ten_thousand_functions() {
    const N: usize = 10_000;
    let mut t = String::from("fn @f0(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %r = iadd %x, %one\n    return %r\n}\n");
    for i in 1..N {
        let _ = write!(
            t,
            "fn @f{i}(%x: i64) -> i64 {{\nentry:\n    %y = call @f{}(%x)\n    %one = iconst.i64 1\n    %r = iadd %y, %one\n    return %r\n}}\n",
            i - 1
        );
    }
    t.push_str(&format!("fn @main() -> i64 {{\nentry:\n    %z = iconst.i64 0\n    %r = call @f{}(%z)\n    return %r\n}}\n", N - 1));
    let m = jit(&t);
    assert_eq!(m.func::<(), i64>("main").unwrap().call(()), N as i64);
    assert_eq!(call(&m, "f4999", &[10]), Some(5010));
    assert_eq!(m.function_names().count(), N + 1);
}

#[test]
fn megabyte_adstack_frames_are_probed() {
    // 2^20 f64 entries: a 16 MiB stack slot, on a thread with room for it.
    let m = jit(r#"
fn @deep(%k: i64) -> f64 {
entry:
    %s = adstack.alloc.f64 1048576
    %z = iconst.i64 0
    %fz = fconst.f64 0.0
    jump fill(%z)
fill(%i: i64):
    %c = icmp.slt %i, %k
    brif %c, push, drain(%fz)
push:
    %x = fcvt_from_sint.f64 %i
    guard.adstack.push %s, %x
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump fill(%i2)
drain(%acc: f64):
    %n = adstack.len %s
    %e = icmp.eq %n, %z
    brif %e, done(%acc), pop
pop:
    %t = guard.adstack.top %s
    guard.adstack.pop %s
    %acc2 = fadd %acc, %t
    jump drain(%acc2)
done(%r: f64):
    return %r
}
"#);
    let f = m.func::<i64, f64>("deep").unwrap();
    let r = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || f.call(1 << 20))
        .unwrap()
        .join()
        .unwrap();
    let n = (1u64 << 20) as f64;
    assert_eq!(r, n * (n - 1.0) / 2.0);
    assert!(m.runtime().take_reports().is_empty());
}
