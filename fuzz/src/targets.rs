//! The bodies of the fuzz targets. Each takes the raw fuzzer input and
//! panics on a finding (libFuzzer records the input as a crash).

use crate::exec::{run, with_checks, Engine, CHECK_SETS};
use crate::gen::{self, GenConfig, Generated, ENTRY};
use crate::guards::{self, GuardsInput};
use arbitrary::{Arbitrary, Unstructured};
use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::{parse_module, print_module, verify_module, Module};
use guardlift_jit::{emit_object, EmitOptions, OptLevel, Target};
use guardlift_runtime::Mode;

/// `parse`: arbitrary bytes (as UTF-8, lossily) → parse, verify, print.
pub fn parse(data: &[u8]) {
    check_text(&String::from_utf8_lossy(data));
}

/// Parses `text`; whatever parses must print, parse back and print the
/// same (`print(parse(print(m))) == print(m)`), and verify the same way
/// before and after. A module that verifies must also instrument into one
/// that verifies and round-trips.
pub fn check_text(text: &str) {
    let Ok(m) = parse_module(text) else { return };
    let printed = print_module(&m);
    let m2 = parse_module(&printed).unwrap_or_else(|e| {
        panic!("printed text does not parse: {e}\n--- input\n{text}\n--- printed\n{printed}")
    });
    let again = print_module(&m2);
    assert!(
        printed == again,
        "print(parse(print(m))) != print(m)\n--- input\n{text}\n--- printed\n{printed}\n--- printed again\n{again}"
    );
    let v1 = verify_module(&m);
    let v2 = verify_module(&m2);
    assert!(
        v1.is_ok() == v2.is_ok(),
        "verification changed through print/parse: {v1:?} vs {v2:?}\n--- input\n{text}\n--- printed\n{printed}"
    );
    if v1.is_ok() {
        for checks in [CHECK_SETS[1], CHECK_SETS[2], CheckSet::ALL] {
            check_instrumented(&m, checks, text);
        }
    }
}

/// Instrumented IR verifies, prints, parses and verifies like any IR.
fn check_instrumented(m: &Module, checks: CheckSet, text: &str) {
    let mi = instrument(m, checks);
    let printed = print_module(&mi);
    if let Err(e) = verify_module(&mi) {
        panic!("instrumented [{checks}] module does not verify: {e}\n--- input\n{text}\n--- instrumented\n{printed}");
    }
    let back = parse_module(&printed).unwrap_or_else(|e| {
        panic!("instrumented [{checks}] text does not parse: {e}\n--- printed\n{printed}")
    });
    let again = print_module(&back);
    assert!(
        printed == again,
        "instrumented [{checks}]: print(parse(print(m))) != print(m)\n--- printed\n{printed}\n--- again\n{again}"
    );
    if let Err(e) = verify_module(&back) {
        panic!("instrumented [{checks}] text does not verify after parsing: {e}\n--- printed\n{printed}");
    }
}

/// `differential`: a generated module on the interpreter and the JIT,
/// uninstrumented and instrumented (recover mode): identical results,
/// output and reports.
pub fn differential(data: &[u8]) {
    let g = gen::generate(&mut Unstructured::new(data), &GenConfig::default());
    check_generated(&g, &CHECK_SETS);
}

/// Runs `g` with every check set of `sets` its needs allow (see [`differential`]).
pub fn check_generated(g: &Generated, sets: &[CheckSet]) {
    let text = print_module(&g.module);
    check_text(&text);
    if parse_module(&text).map(|m| verify_module(&m).is_ok()) != Ok(true) {
        panic!("generated module does not survive print/parse/verify\n{text}");
    }
    for &checks in sets {
        if !g.needs.allows(checks) {
            continue;
        }
        let m = with_checks(&g.module, checks);
        let ctx = || {
            format!(
                "checks [{checks}], args {:x?}, needs {:?}\n{}",
                g.args,
                g.needs,
                print_module(&m)
            )
        };
        let a = match run(&m, ENTRY, &g.args, Engine::Interp, Mode::Recover) {
            Ok(a) => a,
            Err(e) => panic!(
                "the interpreter failed (a fault: a generator bug, the program is undefined; \
                 an internal error: an analysis claim, e.g. an elided check, is false): {e}\n{}",
                ctx()
            ),
        };
        let b = match run(&m, ENTRY, &g.args, Engine::Jit, Mode::Recover) {
            Ok(b) => b,
            Err(e) => panic!("the JIT failed: {e}\n{}", ctx()),
        };
        assert!(
            a == b,
            "interp and JIT disagree\n--- interp\n{a:#?}\n--- jit\n{b:#?}\n{}",
            ctx()
        );
    }
}

/// `guards`: managed-dict words and adstack op sequences against the
/// invariants, on both engines (see [`crate::guards`]).
pub fn guards(data: &[u8]) {
    let Ok(input) = GuardsInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let case = guards::build(&input);
    for engine in [Engine::Interp, Engine::Jit] {
        if let Err(e) = guards::check(&case, engine) {
            panic!("{e}\ninput: {input:?}");
        }
    }
}

/// `compile_aarch64`: generated modules, uninstrumented and instrumented
/// in every mode, compile for aarch64 through `emit_object` and with the
/// Cranelift verifier on.
pub fn compile_aarch64(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let g = gen::generate(&mut u, &GenConfig::default());
    let opt = if u.arbitrary::<bool>().unwrap_or(false) {
        OptLevel::None
    } else {
        OptLevel::Speed
    };
    let configs = [
        (CHECK_SETS[0], Mode::Recover),
        (CheckSet::ALL, Mode::Recover),
        (CheckSet::ALL, Mode::Abort),
        (CheckSet::ALL, Mode::Trap),
    ];
    for (checks, mode) in configs {
        let m = with_checks(&g.module, checks);
        let ctx = || {
            format!(
                "checks [{checks}], mode {mode:?}, opt {opt:?}\n{}",
                print_module(&m)
            )
        };
        let opts = EmitOptions {
            mode,
            site_base: 0,
            opt_level: opt,
        };
        match emit_object(&m, Target::Aarch64, &opts) {
            Ok(obj) => assert!(
                obj.starts_with(b"\x7fELF"),
                "emit_object did not produce an ELF file\n{}",
                ctx()
            ),
            Err(e) => panic!("emit_object for aarch64 failed: {e}\n{}", ctx()),
        }
        if let Err(e) = crate::aarch64::compile_verified(&m, Target::Aarch64, mode, opt) {
            panic!("aarch64 with the Cranelift verifier: {e}\n{}", ctx());
        }
    }
}
