//! The bodies of the fuzz targets. Each takes the raw fuzzer input and
//! panics on a finding (libFuzzer records the input as a crash).

use crate::exec::{comparable, run_raw_bound, with_checks, Engine, SlowPathBinding, CHECK_SETS};
use crate::gen::{self, GenConfig, Generated, ENTRY};
use crate::guards::{self, GuardsInput};
use arbitrary::{Arbitrary, Unstructured};
use guardlift_instrument::{instrument, CheckSet};
use guardlift_ir::{parse_module, print_module, verify_module, Module};
use guardlift_jit::{CompileOptions, OptLevel, Placement, Target};
use guardlift_runtime::Mode;

/// The generator's sizes for `differential` and `compile_aarch64`: half of
/// [`GenConfig::default`]'s statements and one helper fewer, so that an
/// input compiles in a few milliseconds under libFuzzer's instrumentation
/// (Cranelift's compile time grows with the program; the op mix and the
/// nesting stay as they are). The stable tests and `tests/coverage.rs`
/// keep the default sizes.
pub const FUZZ_GEN: GenConfig = GenConfig {
    max_helpers: 2,
    max_main_stmts: 24,
    max_helper_stmts: 10,
    max_depth: 3,
    max_loop_depth: 2,
    max_mult: 64,
    max_cost: 20_000,
};

/// `guards`: at most this many dict words and adstack ops of an input are
/// built into its program (the capacity of the adstack under test is at
/// most 6, so 24 ops still overflow and underflow it).
pub const GUARDS_MAX_WORDS: usize = 6;
pub const GUARDS_MAX_OPS: usize = 24;

/// `parse`: arbitrary bytes (as UTF-8, lossily) → parse, verify, print.
pub fn parse(data: &[u8]) {
    check_text(&String::from_utf8_lossy(data));
}

/// Parses `text`; whatever parses must print, parse back and print the
/// same (`print(parse(print(m))) == print(m)`), and verify the same way
/// before and after. A module that verifies must also instrument into one
/// that verifies and round-trips.
pub fn check_text(text: &str) {
    check_renamed(text);
    if let Some(m) = round_trip(text) {
        for checks in [CHECK_SETS[1], CHECK_SETS[2], CheckSet::ALL] {
            check_instrumented(&m, checks, text);
        }
    }
}

/// The suffix [`check_renamed`] gives every value name.
const RENAMED: &str = "_Zq";

/// The parser finds a numbered value name (`%v12`) in a dense table and
/// any other in a hashed one: `text` with every value name made
/// unnumbered (`%v12` → `%v12_Zq`) must parse the same — both fail on the
/// same line, or both give the same module but for the names.
fn check_renamed(text: &str) {
    if text.contains(RENAMED) {
        return;
    }
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    let bytes = text.as_bytes();
    let mut renamed = String::with_capacity(text.len() * 2);
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let mut j = i + 1;
            while j < bytes.len() && word(bytes[j]) {
                j += 1;
            }
            if j > i + 1 {
                renamed.push_str(&text[start..j]);
                renamed.push_str(RENAMED);
                start = j;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    renamed.push_str(&text[start..]);
    match (parse_module(text), parse_module(&renamed)) {
        (Ok(a), Ok(b)) => {
            let (pa, pb) = (print_module(&a), print_module(&b));
            assert!(
                pa == pb.replace(RENAMED, ""),
                "renamed values parse to another module\n--- input\n{text}\n--- printed\n{pa}\n--- renamed, printed\n{pb}"
            );
        }
        (Err(a), Err(b)) => {
            let line = |e: &guardlift_ir::ParseError| e.diagnostic().map(|d| d.loc.line);
            assert!(
                line(&a) == line(&b) && line(&a).is_some(),
                "renamed values fail elsewhere: {a} vs {b}\n--- input\n{text}"
            );
        }
        (a, b) => panic!(
            "renaming values changed whether the text parses: {:?} vs {:?}\n--- input\n{text}",
            a.err(),
            b.err()
        ),
    }
}

/// A generated module's text: it must parse, verify and round-trip, and
/// its instrumented forms with the (non-empty) sets of `sets` too.
fn check_round_trip(text: &str, sets: &[CheckSet]) {
    let Some(m) = round_trip(text) else {
        panic!("generated module does not survive print/parse/verify\n{text}");
    };
    for &checks in sets.iter().filter(|c| !c.is_empty()) {
        check_instrumented(&m, checks, text);
    }
}

/// The print/parse round trip of [`check_text`]; the module when it
/// parses and verifies.
fn round_trip(text: &str) -> Option<Module> {
    let Ok(m) = parse_module(text) else {
        return None;
    };
    let printed = print_module(&m);
    let m2 = reparse(&printed, "printed", &format!("--- input\n{text}\n"));
    let v1 = verify_module(&m);
    let v2 = verify_module(&m2);
    assert!(
        v1.is_ok() == v2.is_ok(),
        "verification changed through print/parse: {v1:?} vs {v2:?}\n--- input\n{text}\n--- printed\n{printed}"
    );
    v1.is_ok().then_some(m)
}

/// `printed` (a printed module) parsed back, checked to print the same
/// again; a failure names the text (`what`) and adds `ctx`.
fn reparse(printed: &str, what: &str, ctx: &str) -> Module {
    let m = parse_module(printed)
        .unwrap_or_else(|e| panic!("{what} text does not parse: {e}\n{ctx}--- printed\n{printed}"));
    let again = print_module(&m);
    assert!(
        printed == again,
        "{what}: print(parse(print(m))) != print(m)\n{ctx}--- printed\n{printed}\n--- printed again\n{again}"
    );
    m
}

/// Instrumented IR verifies, prints, parses and verifies like any IR.
fn check_instrumented(m: &Module, checks: CheckSet, text: &str) {
    let mi = instrument(m, checks);
    let printed = print_module(&mi);
    if let Err(e) = verify_module(&mi) {
        panic!("instrumented [{checks}] module does not verify: {e}\n--- input\n{text}\n--- instrumented\n{printed}");
    }
    let back = reparse(&printed, &format!("instrumented [{checks}]"), "");
    if let Err(e) = verify_module(&back) {
        panic!("instrumented [{checks}] text does not verify after parsing: {e}\n--- printed\n{printed}");
    }
}

/// `differential`: a generated module on the interpreter and the JIT,
/// uninstrumented and instrumented (recover mode): identical results,
/// output and reports. The bytes after the generator's pick the
/// instrumented check set and the JIT's optimization level (see
/// [`pick_differential`]), so each input compiles its program twice, not
/// once per check set; the fuzzer covers the sets across inputs. The
/// byte after those picks where the JIT maps code and data
/// ([`pick_placement`]; a panic anywhere is a finding).
pub fn differential(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut g = gen::generate(&mut u, &FUZZ_GEN);
    let (mut sets, opt) = pick_differential(&g, &mut u);
    let mut jit = CompileOptions::default()
        .with_opt_level(opt)
        .with_placement(pick_placement(&mut u));
    g.host_slow_paths = pick_slow_paths(&mut u);
    jit.pieces = pick_pieces(&mut u);
    jit.own_values = pick_own_values(&mut u);
    if g.host_slow_paths {
        // The freeing slow paths run where lifetime checks do: every check.
        if let Some(last) = sets.last_mut() {
            *last = CheckSet::ALL;
        }
    }
    check_generated_with(&g, &sets, &jit);
}

/// The smallest piece size [`pick_pieces`] picks.
pub const PIECES_MIN: usize = 2;

/// The JIT's piece size (`guardlift_jit::pieces`) of a `differential`
/// input, from the next input byte: in half the inputs a size from
/// [`PIECES_MIN`] to 17 instructions, so that the generated functions'
/// straight-line parts are compiled as pieces joined by tail calls; else
/// (and when the input has run out, as before this choice existed) the
/// default, under which no generated function is cut.
pub fn pick_pieces(u: &mut Unstructured<'_>) -> Option<usize> {
    let b = u.arbitrary::<u8>().unwrap_or(0) as usize;
    (b % 2 == 1).then(|| PIECES_MIN + (b / 2) % 16)
}

/// Whether the JIT makes its own-values tests
/// (`CompileOptions::own_values`): one input in three compiles without
/// them, from the next input byte (with them when the input has run out),
/// so that the checks and the loop-entry cache and memo they stand in
/// front of still run on the model heap's objects.
pub fn pick_own_values(u: &mut Unstructured<'_>) -> Option<bool> {
    (u.arbitrary::<u8>().unwrap_or(0) % 3 == 2).then_some(false)
}

/// Whether the runtimes of a `differential` input take the host's
/// attribute slow paths ([`crate::exec::HostSlowPaths`]): one input in
/// three, from the next input byte (not when the input has run out, as
/// before this choice existed). Such an input's instrumented run has every
/// check (the slow paths free objects where lifetime checks run). The loop analysis then treats every
/// attribute op as a possible host call (`guardlift_ir::hoist::HostModel`).
pub fn pick_slow_paths(u: &mut Unstructured<'_>) -> bool {
    u.arbitrary::<u8>().unwrap_or(0) % 3 == 1
}

/// Where the JIT maps code and data (`guardlift_jit::Placement`: the
/// OS's choice, side by side, or code and data more than 4 GiB apart on
/// either side of the shadow), from the next input byte (the OS's choice
/// when the input has run out, as before placements were picked). The
/// shadow mapping is process-wide (made once, unless
/// `GUARDLIFT_NO_SHADOW` is set when the process starts), so shadow on
/// and off cannot vary per input: run the target with and without that
/// variable for both.
pub fn pick_placement(u: &mut Unstructured<'_>) -> Placement {
    let k = u.arbitrary::<u8>().unwrap_or(0) as usize;
    Placement::ALL[k % Placement::ALL.len()]
}

/// The check sets and JIT optimization level of a `differential` input:
/// uninstrumented (when the program's needs allow) and one instrumented
/// set of [`CHECK_SETS`] its needs allow, both from the next input bytes
/// (`0` when they run out: the empty set and [`CheckSet::ALL`]).
pub fn pick_differential(g: &Generated, u: &mut Unstructured<'_>) -> (Vec<CheckSet>, OptLevel) {
    let allowed: Vec<CheckSet> = CHECK_SETS[1..]
        .iter()
        .copied()
        .filter(|&c| g.needs.allows(c))
        .collect();
    let k = u.arbitrary::<u8>().unwrap_or(0) as usize;
    // `allowed` always holds CheckSet::ALL (the last); 0 picks it.
    let instrumented = allowed[(allowed.len() - 1 + k) % allowed.len()];
    let mut sets = Vec::with_capacity(2);
    if g.needs.allows(CHECK_SETS[0]) {
        sets.push(CHECK_SETS[0]);
    }
    sets.push(instrumented);
    (sets, pick_opt(u))
}

/// The Cranelift optimization level from the next input byte (`speed`
/// when the input has run out).
fn pick_opt(u: &mut Unstructured<'_>) -> OptLevel {
    if u.arbitrary::<bool>().unwrap_or(false) {
        OptLevel::None
    } else {
        OptLevel::Speed
    }
}

/// Runs `g` with every check set of `sets` its needs allow (see [`differential`]).
pub fn check_generated(g: &Generated, sets: &[CheckSet]) {
    check_generated_opt(g, sets, OptLevel::default());
}

/// [`check_generated`] with the JIT at optimization level `opt`.
pub fn check_generated_opt(g: &Generated, sets: &[CheckSet], opt: OptLevel) {
    check_generated_with(g, sets, &CompileOptions::default().with_opt_level(opt));
}

/// [`check_generated`] with the JIT's compile options `jit`. The printed
/// module goes through the `parse` checks with the instrumented round
/// trip of the sets in `sets` only.
pub fn check_generated_with(g: &Generated, sets: &[CheckSet], jit: &CompileOptions) {
    let text = print_module(&g.module);
    check_round_trip(&text, sets);
    for &checks in sets {
        if !g.needs.allows(checks) {
            continue;
        }
        let m = with_checks(&g.module, checks);
        let ctx = || {
            format!(
                "checks [{checks}], opt {:?}, placement {:?}, pieces {:?}, host slow paths {}, args {:x?}, needs {:?}\n{}",
                jit.opt_level,
                jit.placement,
                jit.pieces,
                g.host_slow_paths,
                g.args,
                g.needs,
                print_module(&m)
            )
        };
        let run = |engine| {
            let slow_paths = match (g.host_slow_paths, checks.lifetime) {
                (false, _) => SlowPathBinding::ModelHeap,
                (true, false) => SlowPathBinding::HostDict,
                (true, true) => SlowPathBinding::HostDictFreeing,
            };
            let raw = run_raw_bound(&m, ENTRY, &g.args, engine, Mode::Recover, jit, slow_paths);
            comparable(&m, ENTRY, raw)
        };
        let a = match run(Engine::Interp) {
            Ok(a) => a,
            Err(e) => panic!(
                "the interpreter failed (a fault: a generator bug, the program is undefined; \
                 an internal error: an analysis claim, e.g. an elided check, is false): {e}\n{}",
                ctx()
            ),
        };
        let b = match run(Engine::Jit) {
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
    let Ok(mut input) = GuardsInput::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    input.words.truncate(GUARDS_MAX_WORDS);
    input.ops.truncate(GUARDS_MAX_OPS);
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
    let g = gen::generate(&mut u, &FUZZ_GEN);
    let opt = pick_opt(&mut u);
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
        if let Err(e) = crate::aarch64::compile_verified(&m, Target::Aarch64, mode, opt) {
            panic!(
                "aarch64 (emit_object, Cranelift verifier on): {e}\n{}",
                ctx()
            );
        }
    }
}
