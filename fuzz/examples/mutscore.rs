//! How observable the generated programs are: for 400 generated modules,
//! changes one binary op (not `iadd`/`band`) and counts the mutants whose
//! outcome on the interpreter differs from the original's. A low score means
//! the differential target would miss miscompiles of those ops.
//!
//! `cargo run --release -p guardlift-fuzz --example mutscore`

use arbitrary::Unstructured;
use guardlift_fuzz::exec::*;
use guardlift_fuzz::gen::*;
use guardlift_ir::*;
fn main() {
    let mut tried = 0;
    let mut killed = 0;
    let mut r = guardlift_fuzz::rng::SplitMix64::new(99);
    for data in guardlift_fuzz::random_inputs(77, 400, 1536) {
        let g = generate(&mut Unstructured::new(&data), &GenConfig::default());
        let c = if g.needs.allows(CHECK_SETS[0]) {
            CHECK_SETS[0]
        } else {
            guardlift_instrument::CheckSet::ALL
        };
        let mut m2 = g.module.clone();
        // collect binary insts
        let mut locs = vec![];
        for (fi, f) in m2.functions.iter().enumerate() {
            for (bi, b) in f.blocks.iter().enumerate() {
                for (ii, inst) in b.insts.iter().enumerate() {
                    if let InstKind::Binary { op, .. } = inst.kind {
                        if !matches!(op, BinOp::Iadd | BinOp::Band) {
                            locs.push((fi, bi, ii));
                        }
                    }
                }
            }
        }
        if locs.is_empty() {
            continue;
        }
        let (fi, bi, ii) = locs[r.below(locs.len() as u64) as usize];
        if let InstKind::Binary { op, .. } = &mut m2.functions[fi].blocks[bi].insts[ii].kind {
            *op = match *op {
                BinOp::Iadd => BinOp::Isub,
                BinOp::Isub => BinOp::Iadd,
                BinOp::Imul => BinOp::Iadd,
                BinOp::Band => BinOp::Bor,
                BinOp::Bor => BinOp::Bxor,
                BinOp::Bxor => BinOp::Band,
                BinOp::Ishl => BinOp::Ushr,
                BinOp::Ushr => BinOp::Sshr,
                BinOp::Sshr => BinOp::Ishl,
                BinOp::Fadd => BinOp::Fsub,
                BinOp::Fsub => BinOp::Fadd,
                BinOp::Fmul => BinOp::Fdiv,
                BinOp::Fdiv => BinOp::Fmul,
                BinOp::Fmin => BinOp::Fmax,
                BinOp::Fmax => BinOp::Fmin,
                BinOp::Sdiv => BinOp::Udiv,
                BinOp::Udiv => BinOp::Sdiv,
                BinOp::Srem => BinOp::Urem,
                BinOp::Urem => BinOp::Srem,
                BinOp::SaddOverflows => BinOp::SsubOverflows,
                BinOp::SsubOverflows => BinOp::SmulOverflows,
                BinOp::SmulOverflows => BinOp::SaddOverflows,
                BinOp::Fcopysign => BinOp::Fmin,
            };
        }
        let a = run(
            &with_checks(&g.module, c),
            "main",
            &g.args,
            Engine::Interp,
            guardlift_runtime::Mode::Recover,
        );
        let b = run(
            &with_checks(&m2, c),
            "main",
            &g.args,
            Engine::Interp,
            guardlift_runtime::Mode::Recover,
        );
        tried += 1;
        if a != b {
            killed += 1;
        }
    }
    println!(
        "mutants {tried}, observed {killed} ({:.1}%)",
        100.0 * killed as f64 / tried as f64
    );
}
