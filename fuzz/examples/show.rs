use arbitrary::Unstructured;
use guardlift_fuzz::exec::*;
use guardlift_fuzz::gen::*;
fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(5);
    let data = guardlift_fuzz::random_inputs(seed, 1, 1536).pop().unwrap();
    let g = generate(&mut Unstructured::new(&data), &GenConfig::default());
    println!("{}", guardlift_ir::print_module(&g.module));
    println!("args {:x?} needs {:?}", g.args, g.needs);
    for c in CHECK_SETS {
        if !g.needs.allows(c) {
            continue;
        }
        let m = with_checks(&g.module, c);
        let a = run(
            &m,
            "main",
            &g.args,
            Engine::Interp,
            guardlift_runtime::Mode::Recover,
        );
        println!("[{c}] {:?}", a);
    }
}
