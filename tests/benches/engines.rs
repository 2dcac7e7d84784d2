//! Developer benchmarks: compile time per IR instruction, and run time per
//! `store_attr` for the JIT and the reference interpreter.
//! `cargo bench -p guardlift-tests --bench engines`

// A test crate, not a library for others: its public items are documented
// where it helps, not as an API.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use guardlift_interp::Interpreter;
use guardlift_jit::{CompileOptions, Jit, Ptr};
use guardlift_runtime::internals::*;
use guardlift_runtime::{Runtime, RuntimeConfig};
use std::collections::HashMap;

/// A straight-line-heavy module of about `n` instructions: chains of
/// arithmetic in blocks joined by branches.
fn arith_module(n: usize) -> String {
    let mut s = String::from("fn @main(%x: i64) -> i64 {\nentry:\n    jump b0(%x)\n");
    let blocks = n / 10;
    for b in 0..blocks {
        s += &format!("b{b}(%a{b}: i64):\n");
        let mut prev = format!("%a{b}");
        for i in 0..8 {
            let c = format!("%c{b}_{i}");
            let v = format!("%v{b}_{i}");
            s += &format!(
                "    {c} = iconst.i64 {}\n    {v} = iadd {prev}, {c}\n",
                i + 1
            );
            prev = v;
        }
        let next = if b + 1 == blocks {
            "done".to_string()
        } else {
            format!("b{}", b + 1)
        };
        s += &format!("    jump {next}({prev})\n");
    }
    s += "done(%r: i64):\n    return %r\n}\n";
    s
}

/// `@stores(obj, n)`, from the corpus every engine runs.
const STORE_LOOP: &str = include_str!("../programs/attrs_store_loop.glir");

fn compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    for n in [1_000usize, 10_000] {
        let m = guardlift_ir::parse_and_verify(&arith_module(n)).unwrap();
        g.throughput(Throughput::Elements(m.inst_count() as u64));
        g.bench_function(format!("jit_{n}_insts"), |b| {
            b.iter_batched(
                || Runtime::new(RuntimeConfig::default()),
                |rt| Jit::compile(&m, rt, &CompileOptions::default()).unwrap(),
                BatchSize::SmallInput,
            )
        });
        let text = arith_module(n);
        g.bench_function(format!("parse_verify_{n}_insts"), |b| {
            b.iter(|| guardlift_ir::parse_and_verify(&text).unwrap())
        });
    }
    g.finish();
}

fn store_attr(c: &mut Criterion) {
    const N: i64 = 10_000;
    let m = guardlift_ir::parse_and_verify(STORE_LOOP).unwrap();
    let mut g = c.benchmark_group("store_attr");
    g.throughput(Throughput::Elements(N as u64));
    for instrumented in [false, true] {
        let mm = if instrumented {
            guardlift_instrument::instrument(
                &m,
                guardlift_instrument::CheckSet {
                    dict: true,
                    ..Default::default()
                },
            )
        } else {
            m.clone()
        };
        let tag = if instrumented {
            "instrumented"
        } else {
            "plain"
        };
        let rt = Runtime::new(RuntimeConfig {
            mode: guardlift_runtime::Mode::Recover,
            ..Default::default()
        });
        let obj = rt.obj_new(2);
        let code = Jit::compile(&mm, rt.clone(), &CompileOptions::default()).unwrap();
        let f = code.func::<(Ptr, i64), i64>("stores").unwrap();
        g.bench_function(format!("jit_{tag}"), |b| {
            // SAFETY: `obj` is a live object of `rt` with 2 attributes, the
            // only memory @stores touches.
            b.iter(|| unsafe { f.call((Ptr(obj), N)) })
        });
        let it = Interpreter::new(&mm, rt.clone(), &HashMap::new()).unwrap();
        g.bench_function(format!("interp_{tag}"), |b| {
            b.iter(|| it.call("stores", &[obj, N as u64]).unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(2));
    targets = compile, store_attr
}
criterion_main!(benches);
