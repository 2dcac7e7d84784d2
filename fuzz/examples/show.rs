//! Prints what a fuzz input stands for, to analyse a finding:
//!
//! ```text
//! cargo run --release -p guardlift-fuzz --example show -- TARGET FILE
//! cargo run --release -p guardlift-fuzz --example show -- TARGET --seed N
//! ```
//!
//! - `parse`: the input as text.
//! - `differential`, `compile_aarch64`: the generated module, its entry
//!   arguments and needs, and the outcome of every check set it may run
//!   with on the interpreter and the JIT (recover mode).
//! - `guards`: the decoded input, the module it builds and its outcome.
//!
//! `--seed N` takes the input the stable tests would make from seed `N`
//! (one random byte string of the target's length).

use arbitrary::{Arbitrary, Unstructured};
use guardlift_fuzz::exec::{run, with_checks, Engine, CHECK_SETS};
use guardlift_fuzz::gen::{generate, GenConfig, ENTRY};
use guardlift_fuzz::guards::{self, GuardsInput};
use guardlift_ir::print_module;
use guardlift_runtime::Mode;
use std::process::exit;

fn usage() -> ! {
    eprintln!("usage: show TARGET (FILE | --seed N)   TARGET: parse, differential, guards, compile_aarch64");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (target, data) = match args.as_slice() {
        [t, flag, n] if flag == "--seed" => {
            let seed: u64 = n.parse().unwrap_or_else(|_| usage());
            let len = match t.as_str() {
                "parse" => 200,
                "guards" => 256,
                _ => 1536,
            };
            (
                t.clone(),
                guardlift_fuzz::random_inputs(seed, 1, len).remove(0),
            )
        }
        [t, file] => match std::fs::read(file) {
            Ok(d) => (t.clone(), d),
            Err(e) => {
                eprintln!("show: {file}: {e}");
                exit(2)
            }
        },
        _ => usage(),
    };
    match target.as_str() {
        "parse" => println!("{}", String::from_utf8_lossy(&data)),
        "differential" | "compile_aarch64" => {
            let mut u = Unstructured::new(&data);
            let g = generate(&mut u, &GenConfig::default());
            if target == "compile_aarch64" {
                let none = u.arbitrary::<bool>().unwrap_or(false);
                println!("; opt_level {}", if none { "none" } else { "speed" });
            }
            println!("{}", print_module(&g.module));
            println!("; args {:x?}, needs {:?}", g.args, g.needs);
            for c in CHECK_SETS {
                if !g.needs.allows(c) {
                    continue;
                }
                let m = with_checks(&g.module, c);
                for e in [Engine::Interp, Engine::Jit] {
                    println!(
                        "; [{c}] {e:?}: {:?}",
                        run(&m, ENTRY, &g.args, e, Mode::Recover)
                    );
                }
            }
        }
        "guards" => {
            let Ok(input) = GuardsInput::arbitrary(&mut Unstructured::new(&data)) else {
                println!("; the input does not decode (the target ignores it)");
                return;
            };
            println!("; {input:?}");
            let case = guards::build(&input);
            println!("{}", print_module(&case.module));
            for e in [Engine::Interp, Engine::Jit] {
                println!("; {e:?}: {:?}", guards::check(&case, e));
            }
        }
        _ => usage(),
    }
}
