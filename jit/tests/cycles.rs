//! 10 000 compile/drop cycles: no crash, and memory does not grow with the
//! number of cycles (the JIT's code and data are freed on drop): neither
//! the resident set nor the bytes the process has mapped.
//!
//! Under qemu-user (`scripts/qemu-aarch64-runner` sets
//! `GUARDLIFT_QEMU_USER`) the resident set is qemu's: its translation cache
//! grows with every new piece of guest code, even in a program that leaks
//! nothing (docs/TARGETS.md: a 30-line C program that maps, runs and unmaps
//! a page 10 000 times grows qemu's RSS by 11 MiB while its own mappings stay
//! flat). There the mapped bytes, which qemu reports for the guest, are the
//! measure.

mod common;
use common::*;
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::internals::*;

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// The bytes of every mapping in `/proc/self/maps` (under qemu-user, the
/// guest's own mappings).
fn mapped_bytes() -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    (maps.lines())
        .filter_map(|l| {
            let (s, e) = l.split_once(' ')?.0.split_once('-')?;
            Some(u64::from_str_radix(e, 16).ok()? - u64::from_str_radix(s, 16).ok()?)
        })
        .sum()
}

/// Whether this test runs under qemu-user, whose resident set is not the
/// guest's (the module header).
fn under_qemu_user() -> bool {
    std::env::var_os("GUARDLIFT_QEMU_USER").is_some()
}

const SMALL: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @obj_free(ptr)
fn @main(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    %v = iconst.i64 41
    guard.store_attr %o, 0, %v
    %r = guard.load_attr %o, 0
    %one = iconst.i64 1
    %s = iadd %r, %one
    call @obj_free(%o)
    return %s
}
fn @id(%p: ptr) -> ptr {
entry:
    return %p
}
"#;

#[test]
fn ten_thousand_compile_drop_cycles() {
    let module = parse(SMALL);
    let cycle = |i: u64| {
        let rt = recover_rt();
        let m = Jit::compile(&module, rt.clone(), &CompileOptions::default()).unwrap();
        let f = m.func::<i64, i64>("main").unwrap();
        // SAFETY: @main accesses only the object it makes with @obj_new
        // (two attributes; it uses attribute 0) before freeing it.
        assert_eq!(unsafe { f.call(2) }, 42);
        assert_eq!(call(&m, "id", &[i]), Some(i)); // also builds a trampoline
        assert_eq!(m.safe_func::<Ptr, Ptr>("id").unwrap().call(Ptr(i)), Ptr(i));
        drop(f);
        drop(m);
        assert!(rt.take_reports().is_empty());
        assert!(rt.take_host_fault().is_none());
    };
    for i in 0..300 {
        cycle(i);
    }
    let (before, mapped_before) = (rss_bytes(), mapped_bytes());
    for i in 0..10_000 {
        cycle(i);
    }
    let (after, mapped_after) = (rss_bytes(), mapped_bytes());
    let growth = after.saturating_sub(before);
    let mapped = mapped_after.saturating_sub(mapped_before);
    eprintln!(
        "RSS before {} KiB, after {} KiB, growth {} KiB; mapped growth {} KiB",
        before / 1024,
        after / 1024,
        growth / 1024,
        mapped / 1024
    );
    // Leaking one code page and one data chunk per cycle would be > 80 MiB
    // of either.
    assert!(
        mapped < 32 << 20,
        "mappings grew by {} KiB over 10 000 cycles",
        mapped / 1024
    );
    if under_qemu_user() {
        eprintln!("under qemu-user the resident set is qemu's: only the mappings are bounded");
    } else {
        assert!(
            growth < 32 << 20,
            "RSS grew by {} KiB over 10 000 cycles",
            growth / 1024
        );
    }
}
