//! Criterion benchmarks of the guard fast paths: a `store_attr` loop and an
//! adstack push/top/acc_adj/top_adj/pop loop, uninstrumented and
//! instrumented in each mode (no violation occurs, so abort and trap mode
//! run to the end). `cargo bench -p guardlift-jit --bench guards`; for one
//! table of ratios from a single run see `examples/guard_overhead.rs`.

#[path = "programs.rs"]
mod programs;

use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use guardlift_instrument::CheckSet;
use programs::{adstack_checks, build, dict_checks, Config, ADSTACK, MODES, STORE_ATTR};
use std::hint::black_box;

const N: i64 = 10_000;

fn bench_loop(c: &mut Criterion, group: &str, text: &str, checks: &[CheckSet]) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(N as u64));
    let mut configs = vec![Config::Plain];
    for &cs in checks {
        configs.extend(MODES.iter().map(|&m| Config::Guarded(cs, m)));
    }
    for config in configs {
        let b = build(text, config);
        g.bench_with_input(
            BenchmarkId::from_parameter(config.name()),
            &b,
            |bench, b| bench.iter(|| b.run(black_box(N))),
        );
        assert!(b.rt.take_reports().is_empty());
    }
    g.finish();
}

fn guards(c: &mut Criterion) {
    bench_loop(c, "store_attr", STORE_ATTR, &[dict_checks(), CheckSet::ALL]);
    bench_loop(c, "adstack", ADSTACK, &[adstack_checks()]);
}

mod group {
    //! The criterion group: its macro defines an undocumented `pub fn`.
    #![allow(missing_docs)]
    use super::guards;
    use criterion::criterion_group;
    criterion_group!(benches, guards);
}
criterion_main!(group::benches);
