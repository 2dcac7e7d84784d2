//! Large inputs: 20 000- and 40 000-block functions (and the tier they are
//! compiled at), a 10 000-function module, a megabyte-sized adstack frame.

mod common;
use common::*;
use guardlift_jit::{emit_asm, emit_object, EmitOptions, Target, Tier, BIG_FUNCTION_INSTS};
use std::fmt::Write as _;

/// `@name(%x) -> i64`: a straight chain of `n` blocks, each adding one to
/// the value its block parameter carries (every other block passes it on
/// by a `brif` whose both edges go to the next block); returns `x + n`.
fn chain(name: &str, n: usize) -> String {
    let mut t = format!("fn @{name}(%x: i64) -> i64 {{\nentry:\n    %one = iconst.i64 1\n    %lim = iconst.i64 0x7fffffffffff\n    jump b0(%x)\n");
    push_chain(&mut t, n, |_| String::new());
    t
}

/// `@f(%x) -> i64` of exactly `n` instructions (`n - 1` adds and the return).
fn straight(n: usize) -> guardlift_ir::Module {
    let mut t = String::from("fn @f(%x: i64) -> i64 {\nentry:\n    %v0 = iadd %x, %x\n");
    for i in 1..n - 1 {
        let _ = writeln!(t, "    %v{i} = iadd %v{}, %x", i - 1);
    }
    let _ = writeln!(t, "    return %v{}\n}}", n - 2);
    parse(&t)
}

#[test]
fn twenty_thousand_blocks() {
    const N: usize = 20_000;
    let m = jit(&chain("big", N));
    assert_eq!(
        m.safe_func::<i64, i64>("big").unwrap().call(5),
        5 + N as i64
    );
}

/// The cure of the quadratic compile time, checked by its decision rather
/// than by a clock: a function above `BIG_FUNCTION_INSTS` instructions is
/// compiled at the big tier (the single-pass register allocator, linear in
/// the function's size), one at the threshold and every normal-size
/// function at the optimized tier.
#[test]
fn the_tier_is_decided_per_function_at_the_threshold() {
    assert_eq!(
        straight(BIG_FUNCTION_INSTS).functions[0].inst_count(),
        BIG_FUNCTION_INSTS
    );
    assert_eq!(
        Tier::of(&straight(BIG_FUNCTION_INSTS).functions[0]),
        Tier::Optimized
    );
    assert_eq!(
        Tier::of(&straight(BIG_FUNCTION_INSTS + 1).functions[0]),
        Tier::Big
    );
    // The 100 000-block chain of issue 18 is far above it.
    assert!(parse(&chain("big", 100_000)).inst_count() > 20 * BIG_FUNCTION_INSTS);
}

#[test]
fn a_big_function_runs_at_the_big_tier_next_to_optimized_ones() {
    const N: usize = 40_000;
    let text = format!("{}{}", chain("big", N), chain("small", 100));
    let m = jit(&text);
    assert_eq!(m.tier("big").unwrap(), Tier::Big);
    assert_eq!(m.tier("small").unwrap(), Tier::Optimized);
    assert_eq!(
        m.safe_func::<i64, i64>("big").unwrap().call(-7),
        N as i64 - 7
    );
    assert_eq!(m.safe_func::<i64, i64>("small").unwrap().call(1), 101);
    // Every function of the hot-path benchmarks stays optimized.
    let small = jit(&chain("f", 1_000));
    assert_eq!(small.tier("f").unwrap(), Tier::Optimized);
}

#[test]
fn objects_of_every_target_compile_big_functions() {
    let module = parse(&format!("{}{}", chain("big", 12_000), chain("small", 10)));
    assert_eq!(Tier::of(&module.functions[0]), Tier::Big);
    for target in [Target::X86_64, Target::Aarch64] {
        let obj = emit_object(&module, target, &EmitOptions::default())
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        assert_eq!(&obj[..4], b"\x7fELF", "{target}");
        let asm = emit_asm(&module, target, &EmitOptions::default()).unwrap();
        let header = |name: &str| {
            asm.lines()
                .find(|l| l.starts_with(&format!("@{name}:  ; ")))
                .unwrap_or_else(|| panic!("{target}: no @{name}"))
                .to_string()
        };
        assert!(header("big").ends_with(" bytes, big tier"), "{target}");
        assert!(header("small").ends_with(" bytes"), "{target}");
    }
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
    assert_eq!(m.safe_func::<(), i64>("main").unwrap().call(()), N as i64);
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
    let f = m.safe_func::<i64, f64>("deep").unwrap();
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
