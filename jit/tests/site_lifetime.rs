//! Issue 13 (7, 2): a module's guard sites leave the runtime when the module
//! goes, so a long-lived runtime that compiles and drops modules holds a
//! bounded site table; sites are stored sparsely, whatever their ids.

mod common;
use common::*;
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::internals::*;

const GUARDED: &str = r#"
extern fn @obj_new(i64) -> ptr
fn @main(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    %v = iconst.i64 41
    guard.store_attr %o, 0, %v
    %r = guard.load_attr %o, 0
    %w = guard.dict_slot.load %o
    return %r
}
"#;

#[test]
fn compiling_and_dropping_modules_keeps_the_site_table_bounded() {
    let rt = recover_rt();
    let module = parse(GUARDED);
    let per_module = module.sites.len();
    assert_eq!(per_module, 3);
    let mut live = Vec::new();
    for i in 0..2000 {
        let m = Jit::compile(&module, rt.clone(), &CompileOptions::default()).unwrap();
        // SAFETY: @main accesses only the object it makes with @obj_new.
        assert_eq!(unsafe { m.func::<i64, i64>("main").unwrap().call(1) }, 41);
        if i % 500 == 0 {
            // A few stay alive: their sites stay.
            live.push(m);
        }
        assert!(
            rt.site_count() <= (live.len() + 1) * per_module,
            "iteration {i}: {} sites held",
            rt.site_count()
        );
    }
    assert_eq!(rt.site_count(), live.len() * per_module);
    drop(live);
    assert_eq!(rt.site_count(), 0);
}

#[test]
fn a_failed_compile_leaves_no_sites() {
    let rt = recover_rt();
    let text = format!("extern fn @nothing_provides_this(i64)\n{GUARDED}");
    for _ in 0..10 {
        assert!(Jit::compile(&parse(&text), rt.clone(), &CompileOptions::default()).is_err());
    }
    assert_eq!(rt.site_count(), 0);
}

#[test]
fn huge_site_ids_are_stored_sparsely_and_reported() {
    let rt = recover_rt();
    let text = GUARDED
        .replace(
            "guard.store_attr %o, 0, %v",
            "guard.store_attr %o, 0, %v !site(4294967295, 6:5)",
        )
        .replace(
            "%r = guard.load_attr %o, 0",
            "%r = guard.load_attr %o, 0 !site(100000000, 7:5)",
        )
        .replace(
            "%w = guard.dict_slot.load %o",
            "%w = guard.dict_slot.load %o !site(5, 8:5)",
        );
    let module = parse(&text);
    let m = Jit::compile(&module, rt.clone(), &CompileOptions::default()).unwrap();
    assert_eq!(rt.site_count(), 3);
    // SAFETY: @main accesses only the object it makes with @obj_new.
    assert_eq!(unsafe { m.func::<i64, i64>("main").unwrap().call(1) }, 41);
    // A second module does not fit beside ids up to u32::MAX: a clear error
    // at the largest site, not an allocation of 2^32 entries.
    let e = Jit::compile(&module, rt.clone(), &CompileOptions::default())
        .expect_err("no room for a second copy");
    assert!(e.to_string().contains("no room"), "{e}");
    assert_eq!(e.loc().map(|l| (l.line, l.col)), Some((6, 5)), "{e}");
    drop(m);
    assert_eq!(rt.site_count(), 0);
    // Once the first is gone, the module fits again.
    let m2 = Jit::compile(&module, rt.clone(), &CompileOptions::default()).unwrap();
    assert_eq!(rt.site_count(), 3);
    drop(m2);
    assert_eq!(rt.site_count(), 0);
}
