//! What recording host objects' stacks costs (`host_stacks`, issue 29
//! item 7): a host allocation loop — register an object, report it freed —
//! run `depth` frames deep, with the option off and on. Prints the time per
//! registration and per free in ns.
//!
//!     cargo run --release -p guardlift-runtime --example host_stacks_cost [N] [DEPTH]

use guardlift_runtime::{Mode, Options, Runtime, RuntimeConfig};
use std::time::Instant;

/// The host's allocation loop, `depth` frames below the caller.
#[inline(never)]
fn host_loop(rt: &Runtime, objs: &[u64], depth: u32) -> (f64, f64) {
    if depth > 0 {
        let r = host_loop(rt, objs, depth - 1);
        return std::hint::black_box(r);
    }
    let (mut reg, mut free) = (0u128, 0u128);
    for &o in objs {
        let t = Instant::now();
        rt.register_object(o).expect("register");
        let u = Instant::now();
        rt.object_freed(o).expect("free");
        free += u.elapsed().as_nanos();
        reg += (u - t).as_nanos();
    }
    let n = objs.len() as f64;
    (reg as f64 / n, free as f64 / n)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let depth: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    // Distinct addresses (a record per object in quarantine, as a host's
    // objects would have), 8-aligned, never dereferenced.
    let body = vec![0u64; n];
    let objs: Vec<u64> = body.iter().map(|w| w as *const u64 as u64).collect();
    for on in [false, true, false, true] {
        let rt = Runtime::new(RuntimeConfig {
            mode: Mode::Recover,
            abort_process: false,
            ..Default::default()
        });
        let opts = format!("host_stacks={}", on as u8);
        rt.configure(&Options::parse(&opts).expect("options"))
            .expect("configure");
        let (reg, free) = host_loop(&rt, &objs, depth);
        println!("{opts}: register {reg:.0} ns, object_freed {free:.0} ns ({n} objects, {depth} host frames deep)");
    }
}
