//! A function above `BIG_FUNCTION_INSTS`, compiled at the big tier
//! (docs/CODEGEN.md, "Tiering"), instrumented, with a clobbered object
//! word halfway: the reference interpreter, the host JIT and the object
//! path on x86_64 and aarch64 agree on its result and reports,
//! in recover and in trap mode.
//! (A missing qemu or cross toolchain fails the run with its install hint.)

#[path = "../../jit/tests/common/chain.rs"]
mod chain;
mod common;

use chain::push_chain;
use common::mask_hex;
use guardlift_jit::{Tier, BIG_FUNCTION_INSTS};

const BLOCKS: usize = 6_000;

/// A chain of `BLOCKS` blocks adding one to their parameter; every 500th
/// stores it to an object's attribute, whose word is clobbered halfway.
fn program() -> String {
    let mut t = String::from(
        "extern fn @obj_new(i64) -> ptr\nextern fn @fault_clear_lsb(ptr)\n\
         fn @main(%x: i64) -> i64 {\nentry:\n    %one = iconst.i64 1\n    %two = iconst.i64 2\n\
         \x20   %lim = iconst.i64 0x7fffffffffff\n    %o = call @obj_new(%two)\n    jump b0(%x)\n",
    );
    push_chain(&mut t, BLOCKS, |i| {
        let mut extra = String::new();
        if i % 500 == 0 {
            extra += &format!("    store_attr %o, 1, %w{i}\n");
        }
        if i == BLOCKS / 2 {
            extra += "    call @fault_clear_lsb(%o)\n";
        }
        extra
    });
    t
}

#[test]
fn a_big_tier_function_agrees_on_every_engine_and_target() {
    let text = program();
    let m = guardlift_ir::parse_and_verify(&text).expect("the program verifies");
    assert!(m.functions[0].inst_count() > BIG_FUNCTION_INSTS);
    assert_eq!(Tier::of(&m.functions[0]), Tier::Big);
    let dir = std::env::temp_dir().join(format!("guardlift-big-tier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.glir");
    std::fs::write(&file, &text).unwrap();
    let run = |mode: &str, extra: &[&str]| {
        let o = common::target_command(env!("CARGO_BIN_EXE_guardlift"))
            .arg("run")
            .arg(&file)
            .args(["5", "--instrument", "--mode", mode])
            .args(extra)
            .output()
            .expect("guardlift runs");
        let what = format!("{mode} {extra:?}");
        (
            what,
            o.status.code(),
            mask_hex(&String::from_utf8_lossy(&o.stdout)),
            mask_hex(&String::from_utf8_lossy(&o.stderr)),
        )
    };
    let oracle = run("recover", &["--engine", "interp"]);
    // Exit status 1: the run reported violations.
    assert_eq!(oracle.1, Some(1), "interp: {oracle:?}");
    assert!(
        oracle.2.contains(&(5 + BLOCKS).to_string()),
        "the result is x + blocks: {oracle:?}"
    );
    assert_eq!(
        oracle.3.matches("dict_slot_tag").count(),
        BLOCKS / 500 / 2 - 1,
        "every store after the clobber is reported: {oracle:?}"
    );
    for target in ["host", "x86_64", "aarch64"] {
        let r = run("recover", &["--target", target]);
        assert_eq!(
            (&r.1, &r.2, &r.3),
            (&oracle.1, &oracle.2, &oracle.3),
            "--target {target} differs from the interpreter"
        );
    }
    // Trap mode: the first failed check ends the run through its trap,
    // found in the big-tier code by the same trap-site mapping.
    let host = run("trap", &["--target", "host"]);
    assert_eq!(host.3.matches("dict_slot_tag").count(), 1, "{host:?}");
    assert_ne!(host.1, Some(0), "{host:?}");
    for target in ["x86_64", "aarch64"] {
        let r = run("trap", &["--target", target]);
        assert_eq!(
            (&r.1, &r.2, &r.3),
            (&host.1, &host.2, &host.3),
            "trap mode: --target {target} differs from the host"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
