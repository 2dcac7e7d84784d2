//! Generated code does not depend on where the OS places code and data
//! (issue 28, item 5; spec §6.3): the same modules compiled with code,
//! data and the shadow mapping far apart (code below the shadow and data
//! above it, and the reverse: more than 4 GiB either way) and close
//! together (`guardlift_jit::Placement`), many times each, never fail to
//! compile and give the interpreter's results and reports. The modules: one
//! with a dozen fixed-attribute clean loops (each has a loop-entry cache,
//! a data object of the JIT module, which used to be reached with a 32-bit
//! PC-relative reference: cranelift-jit panicked on every far placement),
//! and random programs of the fuzz generator with clean loops.
//!
//! Every test here checks where the chunks went ([`placed_chunks`]), so
//! they run one at a time ([`SERIAL`]).

use arbitrary::Unstructured;
use guardlift_fuzz::exec::{comparable, run_raw_with, with_checks, Engine};
use guardlift_fuzz::gen::{generate, GenConfig, ENTRY};
use guardlift_fuzz::random_inputs;
use guardlift_instrument::CheckSet;
use guardlift_ir::hoist::clean_loops;
use guardlift_ir::{parse_and_verify, Module};
use guardlift_jit::placement::{placed_chunks, ChunkKind};
use guardlift_jit::{CompileOptions, Jit, Placement};
use guardlift_runtime::{Mode, Runtime, RuntimeConfig};
use std::sync::{Arc, Mutex};

/// The tests of this file one at a time: each reads the process's chunks.
static SERIAL: Mutex<()> = Mutex::new(());

/// Fixed-attribute clean loops of [`many_loops`].
const LOOPS: usize = 12;

/// A `@main(%n)` running [`LOOPS`] clean loops one after the other, each
/// calling leaf functions on two objects made before them (fixed
/// attributes: every loop gets a loop-entry cache under the JIT).
fn many_loops() -> Module {
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
    t += "done(%zz: i64, %r: i64):\n    return %r\n}\n";
    parse_and_verify(&t).expect("many_loops parses")
}

/// The clean loops of `m` with fixed attributes.
fn fixed_attr_loops(m: &Module) -> usize {
    (m.functions.iter())
        .map(|f| {
            clean_loops(m, f)
                .iter()
                .filter(|l| !l.attrs.is_empty())
                .count()
        })
        .sum()
}

fn runtime(m: &Module) -> Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        layout: m.layout,
        mode: Mode::Recover,
        abort_process: false,
        capture_output: true,
    })
}

/// The shadow mapping's range, from `/proc/self/maps`.
fn shadow_range() -> Option<(usize, usize)> {
    let base = guardlift_runtime::shadow::base()? as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines().find_map(|l| {
        let (s, e) = l.split_once(' ')?.0.split_once('-')?;
        let (s, e) = (
            usize::from_str_radix(s, 16).ok()?,
            usize::from_str_radix(e, 16).ok()?,
        );
        (s <= base && base < e).then_some((s, e))
    })
}

/// Checks where the live chunks are for `p`: code and data (writable and
/// read-only) more than 4 GiB apart on the far placements, with the data
/// on the side `p` names and the shadow between them; within 1 GiB on
/// [`Placement::Near`].
fn check_chunks(p: Placement) {
    let chunks = placed_chunks();
    let of = |k: ChunkKind| -> Vec<usize> {
        (chunks.iter())
            .filter(|c| c.0 == k)
            .flat_map(|&(_, s, l)| [s, s + l])
            .collect()
    };
    let code = of(ChunkKind::Code);
    let data: Vec<usize> = [of(ChunkKind::Data), of(ChunkKind::ReadOnly)].concat();
    assert!(!code.is_empty(), "{p:?}: no code chunk {chunks:x?}");
    if data.is_empty() {
        // Without a shadow mapping (GUARDLIFT_NO_SHADOW=1; under qemu-user,
        // docs/TARGETS.md) no loop is versioned, so the JIT makes no loop-entry
        // cache and the module has no data object: the far placements map no
        // data chunk (`Near` maps all three kinds at once, so it has them).
        // The results are still compared by the callers.
        assert!(
            guardlift_runtime::shadow::base().is_none() && p != Placement::Near,
            "{p:?}: no data chunk {chunks:x?}"
        );
        return;
    }
    let (cmin, cmax) = (code.iter().min().unwrap(), code.iter().max().unwrap());
    let (dmin, dmax) = (data.iter().min().unwrap(), data.iter().max().unwrap());
    const FAR: usize = 4 << 30;
    let shadow = shadow_range();
    match p {
        Placement::CodeLow => {
            assert!(dmin > cmax && dmin - cmax > FAR, "{p:?}: {chunks:x?}");
            if let Some((s, e)) = shadow {
                assert!(
                    *cmax <= s && *dmin >= e,
                    "{p:?}: shadow {s:x}-{e:x}, {chunks:x?}"
                );
            }
        }
        Placement::CodeHigh => {
            assert!(cmin > dmax && cmin - dmax > FAR, "{p:?}: {chunks:x?}");
            if let Some((s, e)) = shadow {
                assert!(
                    *dmax <= s && *cmin >= e,
                    "{p:?}: shadow {s:x}-{e:x}, {chunks:x?}"
                );
            }
        }
        Placement::Near => {
            let (lo, hi) = (cmin.min(dmin), cmax.max(dmax));
            assert!(hi - lo < 1 << 30, "{p:?}: {chunks:x?}");
        }
        Placement::System => {}
    }
}

/// The placements under test: close, and far apart both ways.
const PLACED: [Placement; 3] = [Placement::Near, Placement::CodeLow, Placement::CodeHigh];

#[test]
fn a_dozen_fixed_attribute_loops_run_wherever_code_and_data_land() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let m = with_checks(&many_loops(), CheckSet::ALL);
    assert!(
        fixed_attr_loops(&m) >= 10,
        "{} fixed-attribute loops",
        fixed_attr_loops(&m)
    );
    let args = [9u64];
    let want = comparable(
        &m,
        ENTRY,
        run_raw_with(
            &m,
            ENTRY,
            &args,
            Engine::Interp,
            Mode::Recover,
            &CompileOptions::default(),
        ),
    )
    .expect("interpreter");
    for p in PLACED {
        let opts = CompileOptions::default().with_placement(p);
        // Where the chunks go, with the module alive.
        let rt = runtime(&m);
        let c = Jit::compile(&m, rt.clone(), &opts).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        check_chunks(p);
        // SAFETY: the module touches only the objects it makes, within
        // their capacity.
        let r = unsafe { c.call_dynamic(ENTRY, &args) }.expect("call");
        assert_eq!(r, want.result, "{p:?}");
        drop(c);
        for _ in 0..20 {
            let raw = run_raw_with(&m, ENTRY, &args, Engine::Jit, Mode::Recover, &opts);
            assert_eq!(comparable(&m, ENTRY, raw).as_ref(), Ok(&want), "{p:?}");
        }
    }
    assert!(
        placed_chunks().is_empty(),
        "chunks left: {:x?}",
        placed_chunks()
    );
}

#[test]
fn generated_loop_programs_run_wherever_code_and_data_land() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = GenConfig::default();
    let (mut programs, mut fixed) = (0, 0);
    for data in random_inputs(0x28_05, 400, 1536) {
        let g = generate(&mut Unstructured::new(&data), &cfg);
        let checks = if g.needs.allows(CheckSet::ALL) {
            CheckSet::ALL
        } else {
            continue;
        };
        let m = with_checks(&g.module, checks);
        let loops: usize = (m.functions.iter()).map(|f| clean_loops(&m, f).len()).sum();
        if loops == 0 {
            continue;
        }
        programs += 1;
        fixed += fixed_attr_loops(&m).min(1);
        let run = |engine, opts: &CompileOptions| {
            comparable(
                &m,
                ENTRY,
                run_raw_with(&m, ENTRY, &g.args, engine, Mode::Recover, opts),
            )
        };
        let want = run(Engine::Interp, &CompileOptions::default());
        assert!(want.is_ok(), "interpreter: {want:?}");
        for p in PLACED {
            let opts = CompileOptions::default().with_placement(p);
            for _ in 0..3 {
                assert_eq!(run(Engine::Jit, &opts), want, "{p:?}, checks [{checks}]");
            }
        }
        if programs == 60 {
            break;
        }
    }
    assert!(
        programs >= 30 && fixed >= 5,
        "{programs} programs with clean loops, {fixed} with fixed attributes"
    );
}
