//! Pure values stay where the IR computes them (`FnLower::anchor`,
//! docs/CODEGEN.md "Pure values and the checks' branches"): a float
//! computed once and used by several checked stores, `store_attr`s and
//! checked adstack pushes is computed once in the machine code, in every
//! check set and mode, on x86_64 and aarch64. Cranelift's scoped
//! elaboration used to compute it again inside each check's fast arm
//! (seven `sqrt`s and `div`s for one of each, here; nbody's pair loop ran
//! its `sqrt` and `fdiv` six times per pair).

use guardlift_instrument::{instrument, CheckSet};
use guardlift_jit::{emit_asm, EmitOptions, Target};
use guardlift_runtime::Mode;

/// One `sqrt` and one `fdiv` per function, each result feeding three
/// checked accesses and later arithmetic.
const MODULE: &str = "
fn @f(%v: ptr, %o: ptr, %a: f64, %b: f64) {
entry:
    %s = fsqrt %a
    %q = fdiv %b, %s
    %x = fadd %q, %a
    store %x, %v
    %y = fmul %q, %b
    store %y, %v, 8
    %z = fsub %q, %b
    store %z, %v, 16
    %w = bitcast.i64 %z
    store_attr %o, 0, %w
    %u = fadd %z, %y
    %uw = bitcast.i64 %u
    store_attr %o, 1, %uw
    return
}
fn @g(%a: f64, %b: f64) -> f64 {
entry:
    %st = adstack.alloc.f64 4
    %s = fsqrt %a
    %q = fdiv %b, %s
    %x = fadd %q, %a
    adstack.push %st, %x
    %y = fmul %q, %b
    adstack.push %st, %y
    %t = adstack.top %st
    %r = fadd %t, %q
    return %r
}
";

/// The square roots and divisions of a listing, by mnemonic.
fn count(asm: &str, target: Target) -> usize {
    let ops: &[&str] = match target {
        Target::Aarch64 => &["fsqrt", "fdiv"],
        _ => &["sqrtsd", "divsd"],
    };
    asm.lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with(';') && ops.iter().any(|op| l.contains(op))
        })
        .count()
}

#[test]
fn a_pure_value_used_by_checked_accesses_is_computed_once() {
    let module = guardlift_ir::parse_and_verify(MODULE).expect("the module");
    for checks in [
        "",
        "lifetime",
        "bounds",
        "clobber",
        "adstack",
        "dict,adstack,clobber,bounds,lifetime",
    ] {
        for mode in [Mode::Abort, Mode::Recover, Mode::Trap] {
            for target in [Target::X86_64, Target::Aarch64] {
                let set = match checks {
                    "" => CheckSet::NONE,
                    c => CheckSet::parse(c).expect("check list"),
                };
                let m = instrument(&module, set);
                let opts = EmitOptions {
                    mode,
                    ..Default::default()
                };
                let asm = emit_asm(&m, target, &opts).expect("emit");
                assert_eq!(
                    count(&asm, target),
                    4,
                    "[{checks}] {mode:?} {target:?}: one sqrt and one div per function\n{asm}"
                );
            }
        }
    }
}
