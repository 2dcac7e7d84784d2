//! Through the C API, compiled code does not depend on where the OS
//! places code and data (issue 28, item 5; spec §6.3): the placement is
//! chosen by `GUARDLIFT_JIT_PLACEMENT` (docs/EMBEDDING.md), as an embedder
//! would set it; code, data and the shadow mapping far apart both ways and
//! close together. A module with a dozen fixed-attribute clean loops (each
//! with a loop-entry cache, a data object of the JIT module: 2 of 30
//! compiles of one such module used to fail with `GL_ERR_PANIC`) and the
//! corpus programs with clean loops, compiled many times under each, give
//! the results of the default placement.
//!
//! One test: it sets the environment variable the compiles read.

mod common;

use common::*;
use guardlift::*;
use guardlift_jit::placement::{placed_chunks, ChunkKind, PLACEMENT_ENV};
use std::ptr::null_mut;

/// [`many_loops`]'s fixed-attribute clean loops.
const LOOPS: usize = 12;

/// A `@main(%n)` running [`LOOPS`] clean loops one after the other, each
/// calling leaf functions on two objects made before them (as
/// `fuzz/tests/placement.rs`'s module of the same name).
fn many_loops() -> String {
    let mut t = String::from(
        "extern fn @obj_new(i64) -> ptr\n\
         fn @enter(%cm: ptr, %d: i64) {\nentry:\n    store_attr %cm, 0, %d\n    return\n}\n\
         fn @exit(%cm: ptr) -> i64 {\nentry:\n    %d = load_attr %cm, 1\n    return %d\n}\n\
         fn @main(%n: i64) -> i64 {\nentry:\n    %two = iconst.i64 2\n    %a = call @obj_new(%two)\n    \
         %b = call @obj_new(%two)\n    %v = iconst.i64 5\n    store_attr %b, 1, %v\n    %z = iconst.i64 0\n    jump h0(%z, %z)\n",
    );
    for k in 0..LOOPS {
        let next = if k + 1 == LOOPS {
            "done".to_string()
        } else {
            format!("h{}", k + 1)
        };
        t += &format!(
            "h{k}(%i{k}: i64, %acc{k}: i64):\n    %c{k} = icmp.sge %i{k}, %n\n    brif %c{k}, {next}(%z, %acc{k}), b{k}\n\
             b{k}:\n    call @enter(%a, %i{k})\n    %x{k} = call @exit(%b)\n    %y{k} = load_attr %a, 0\n    \
             %s{k} = iadd %x{k}, %y{k}\n    %t{k} = iadd %acc{k}, %s{k}\n    %k{k} = iconst.i64 {}\n    \
             %u{k} = iadd %t{k}, %k{k}\n    %o{k} = iconst.i64 1\n    %j{k} = iadd %i{k}, %o{k}\n    jump h{k}(%j{k}, %u{k})\n",
            k + 1
        );
    }
    t + "done(%zz: i64, %r: i64):\n    return %r\n}\n"
}

/// The corpus programs with clean loops whose `@main` takes one i64:
/// (text, argument).
fn corpus() -> Vec<(String, i64)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/programs");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("tests/programs") {
        let p = e.expect("entry").path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("hoist_") || !name.ends_with(".glir") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("program");
        let args = text.lines().next().and_then(|l| l.strip_prefix("; args:"));
        let Some(Ok(arg)) = args.map(|a| a.trim().parse::<i64>()) else {
            continue;
        };
        out.push((text, arg));
    }
    out
}

/// Compiles `text` instrumented with every check in a recover-mode
/// runtime and runs `@main(arg)`: (status, result); with the code alive,
/// `placed` looks at the placed chunks.
fn run(text: &str, arg: i64, placed: &mut dyn FnMut()) -> (i32, i64) {
    let m = parse(text);
    ok!(gl_module_instrument(m, GL_CHECK_ALL));
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let mut code = null_mut();
    // SAFETY: live handles and a pointer to a local.
    let st = unsafe { gl_compile(rt, m, &mut code) };
    let mut out = 0i64;
    if st == GL_OK {
        placed();
        let f = func(code, "main", &[GL_TYPE_I64], GL_TYPE_I64);
        ok!(gl_func_call_i64(f, &arg, 1, &mut out));
        all_ok([gl_func_free(f), gl_code_free(code)]);
    }
    all_ok([gl_runtime_free(rt), gl_module_free(m)]);
    (st, out)
}

#[test]
fn code_and_data_far_apart_or_close_give_the_same_results() {
    let mut programs = vec![(many_loops(), 9)];
    programs.extend(corpus());
    assert!(programs.len() >= 5, "{} programs", programs.len());
    std::env::remove_var(PLACEMENT_ENV);
    let want: Vec<(i32, i64)> = (programs.iter())
        .map(|(t, a)| run(t, *a, &mut || {}))
        .collect();
    assert!(want.iter().all(|w| w.0 == GL_OK), "{want:?}");
    for p in ["near", "code-low", "code-high"] {
        std::env::set_var(PLACEMENT_ENV, p);
        for _ in 0..10 {
            for (i, ((t, a), w)) in programs.iter().zip(&want).enumerate() {
                // The many-loops module (first) has data objects to place;
                // a corpus program may have none.
                let mut check = || {
                    // Without a shadow mapping (GUARDLIFT_NO_SHADOW=1; under
                    // qemu-user, docs/TARGETS.md) no loop is versioned, so
                    // the module has no data object to place: the results
                    // are still compared.
                    if i > 0 || guardlift_runtime::shadow::base().is_none() {
                        return;
                    }
                    let chunks = placed_chunks();
                    let (code, data): (Vec<&(ChunkKind, usize, usize)>, Vec<_>) =
                        chunks.iter().partition(|c| c.0 == ChunkKind::Code);
                    let (c, d) = (code[0].1, data[0].1);
                    let far = c.abs_diff(d) > 4 << 30;
                    let ok = match p {
                        "near" => !far,
                        "code-low" => far && c < d,
                        _ => far && c > d,
                    };
                    assert!(ok, "{p}: {chunks:x?}");
                };
                let got = run(t, *a, &mut check);
                assert_eq!(&got, w, "{p}: {}", last_error());
            }
        }
    }
    std::env::set_var(PLACEMENT_ENV, "elsewhere");
    let m = parse(&programs[0].0);
    let rt = runtime("cpython312", GL_MODE_RECOVER);
    let mut code = null_mut();
    let msg = fails!(GL_ERR_CODEGEN, gl_compile(rt, m, &mut code));
    assert!(msg.contains("GUARDLIFT_JIT_PLACEMENT=elsewhere"), "{msg}");
    all_ok([gl_runtime_free(rt), gl_module_free(m)]);
    std::env::remove_var(PLACEMENT_ENV);
}
