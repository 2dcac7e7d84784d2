//! Embedding end to end: the C interpreter `capi/examples/pyish` built with
//! the system C compiler against `libguardlift.a`, and its Rust twin
//! `jit/examples/pyish.rs`, run clean, instrumented, and with the buggy
//! helper; the C one also under valgrind.
//!
//! The static library is not guaranteed to exist after `cargo test` built
//! this crate's rlib, so the first test that needs it runs
//! `cargo build -p guardlift-capi` with the profile of this test binary
//! (a no-op when it is up to date).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// target/<profile> of this test binary (target/<profile>/deps/<test>).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|p| p.parent()).unwrap().to_path_buf()
}

fn profile_name() -> String {
    let dir = profile_dir();
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

/// `cargo build ARGS` with this test binary's profile and target directory.
/// The callers build the whole workspace's libraries and examples, not one
/// package: the workspace's test build unifies features across all members,
/// and a narrower build would compile Cranelift again with other features
/// (minutes in CI); after `cargo test --workspace` this build has nothing to
/// do.
fn cargo_build(args: &[&str]) {
    let dir = profile_dir();
    let profile = match profile_name().as_str() {
        "debug" => "dev".to_string(),
        p => p.to_string(),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let (target_dir, target) = common::target_dir_of(&dir);
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["build", "-q", "--profile", &profile, "--target-dir"])
        .arg(target_dir)
        .args(target.iter().flat_map(|t| ["--target", t]))
        .args(args)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The C pyish binary, built once per test run.
fn c_pyish() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        cargo_build(&["--workspace", "--lib", "--examples"]);
        let lib = profile_dir().join("libguardlift.a");
        assert!(lib.exists(), "{} missing after cargo build", lib.display());
        let src = root().join("capi/examples/pyish");
        // Per profile: debug and release test runs share CARGO_TARGET_TMPDIR.
        let exe =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pyish-c-{}", profile_name()));
        // A cross build's tests (aarch64 under qemu-user) need the cross
        // compiler of their target: docs/TARGETS.md.
        let cross_cc = format!("{}-linux-gnu-gcc", std::env::consts::ARCH);
        let cc =
            std::env::var("CC").unwrap_or_else(|_| match common::target_dir_of(&profile_dir()).1 {
                Some(_) => cross_cc,
                None => "cc".into(),
            });
        let out = Command::new(&cc)
            .args([
                "-O1",
                "-g",
                "-std=c11",
                "-D_POSIX_C_SOURCE=200809L",
                "-Wall",
                "-Wextra",
                "-Werror",
            ])
            .arg("-I")
            .arg(root().join("capi/include"))
            .arg("-o")
            .arg(&exe)
            .args(["main.c", "vm.c", "objects.c", "jit.c"].map(|f| src.join(f)))
            .arg(&lib)
            .args(["-lpthread", "-ldl", "-lm"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
        assert!(
            out.status.success(),
            "compiling pyish failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        exe
    })
}

/// The Rust pyish example, built once per test run.
fn rust_pyish() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        cargo_build(&["--workspace", "--lib", "--examples"]);
        let exe = profile_dir().join("examples/pyish");
        assert!(exe.exists(), "{} missing", exe.display());
        exe
    })
}

struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(exe: &Path, args: &[&str]) -> Run {
    run_output(
        common::target_command(exe)
            .args(args)
            .output()
            .expect("run pyish"),
    )
}

fn run_output(out: Output) -> Run {
    use std::os::unix::process::ExitStatusExt;
    Run {
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The lines that state the program's results.
fn results(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("pyish: step(p)") || l.starts_with("pyish: p.x"))
        .collect()
}

const CLEAN: &str = "pyish: step(p) = 1001000, step(q) = 2512500";

fn check_clean(exe: &Path, what: &str) {
    let interp = run(exe, &["--no-jit"]);
    assert_eq!(interp.code, Some(0), "{what} --no-jit: {}", interp.stderr);
    assert!(interp.stdout.contains(CLEAN), "{what}: {}", interp.stdout);
    assert!(!interp.stdout.contains("compiled"), "{}", interp.stdout);
    for args in [&[][..], &["--instrument"][..]] {
        let r = run(exe, args);
        assert_eq!(
            r.code,
            Some(0),
            "{what} {args:?}: {}\n{}",
            r.stdout,
            r.stderr
        );
        assert!(
            r.stdout
                .contains("pyish: step is hot after 4 calls: compiled to guardlift IR"),
            "{what} {args:?}: {}",
            r.stdout
        );
        assert_eq!(
            results(&r.stdout),
            results(&interp.stdout),
            "{what} {args:?}: compiled code must compute what the interpreter computes"
        );
        assert!(
            r.stdout.contains("pyish: 0 guardlift report(s)"),
            "{}",
            r.stdout
        );
        assert!(!r.stderr.contains("guardlift report"), "{}", r.stderr);
    }
}

/// The first report names the IR line of the first attribute access after
/// the buggy `incref(p)`: bytecode 9, `LOAD_ATTR total`, whose
/// `dict_slot.load` is what reads the flipped word first.
fn check_buggy(r: &Run, ir: &str, what: &str) {
    assert_eq!(r.code, Some(1), "{what}: {}\n{}", r.stdout, r.stderr);
    let first = r
        .stderr
        .lines()
        .find(|l| l.starts_with("==pyish== guardlift report:"))
        .unwrap_or_else(|| panic!("{what}: no report printed:\n{}", r.stderr));
    let line: usize = first
        .split("at IR line ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{what}: bad report line `{first}`"));
    assert!(
        first.starts_with("==pyish== guardlift report: dict_slot_tag in @step at IR line ")
            && first.contains(":5 (dict_slot.load), site "),
        "{what}: {first}"
    );
    let src = ir.lines().nth(line - 1).unwrap_or("");
    assert!(
        src.contains("dict_slot.load") && src.contains("; bc 9 LOAD_ATTR total"),
        "{what}: report names IR line {line}, which is `{src}`"
    );
    // The callback quoted the same line.
    assert!(
        r.stderr.contains(&format!("==pyish==   IR {line}: {src}")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("(low bits 0b110)"),
        "{what}: the observed word has its tag bit flipped:\n{}",
        r.stderr
    );
    // The deduplicated summary after the run: every attribute access of the
    // loop, counted, and nothing else.
    assert!(
        r.stdout.contains("pyish: 7 guardlift report(s)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "pyish:   dict_slot_tag in @step at IR line {line}:5 (dict_slot.load), 750 time(s)"
        )),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains(CLEAN), "the bug changed the results");
}

#[test]
fn c_pyish_clean_runs_compute_what_the_interpreter_computes() {
    check_clean(c_pyish(), "C pyish");
}

#[test]
fn c_pyish_reports_the_buggy_helper_at_the_generated_site() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let ir_path = dir.join(format!("pyish-c-step-{}.glir", profile_name()));
    let _ = std::fs::remove_file(&ir_path);
    let r = run(
        c_pyish(),
        &[
            "--instrument",
            "--buggy",
            "--dump-ir",
            ir_path.to_str().unwrap(),
        ],
    );
    let ir = std::fs::read_to_string(&ir_path).expect("pyish --dump-ir");
    check_buggy(&r, &ir, "C pyish");
    // Without instrumentation the same bug goes unreported.
    let silent = run(c_pyish(), &["--buggy"]);
    assert_eq!(silent.code, Some(0), "{}", silent.stderr);
    assert!(silent.stdout.contains("pyish: 0 guardlift report(s)"));
    assert_eq!(results(&silent.stdout), results(&r.stdout));
}

#[test]
fn c_pyish_abort_mode_reports_then_aborts() {
    let r = run(c_pyish(), &["--instrument", "--buggy", "--mode", "abort"]);
    assert_eq!(
        r.signal,
        Some(6),
        "SIGABRT expected: {:?}\n{}",
        r.code,
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "==pyish== guardlift report: dict_slot_tag in @step at IR line 21:5 (dict_slot.load)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("==guardlift== ERROR: dict_slot_tag at @step 21:5"),
        "{}",
        r.stderr
    );
}

#[test]
fn c_pyish_trap_mode_reports_from_the_signal_handler() {
    let r = run(c_pyish(), &["--instrument", "--buggy", "--mode", "trap"]);
    assert_eq!(
        r.signal,
        Some(6),
        "SIGABRT expected: {:?}\n{}",
        r.code,
        r.stderr
    );
    assert!(
        r.stderr
            .contains("==guardlift== ERROR: dict_slot_tag at @step 21:5 (dict_slot.load)"),
        "{}",
        r.stderr
    );
}

/// pyish registers every object and reports its free; a freed object's
/// memory is reused by the next one (a free list). A stale reference
/// stepping the freed object is refused and reported as use_after_free
/// with the freed object's allocation id; the object reusing the address
/// gets a new id and runs clean. Uninstrumented, the same run computes the
/// same results and reports nothing.
#[test]
fn c_pyish_recycled_objects_are_followed_by_the_lifetime_check() {
    let exe = c_pyish();
    let line = "pyish: recycle: step(t) = 24, stale step(t) = 0, step(u) = 48; u reuses t's address; ids 3 and 4";
    let plain = run(exe, &["--recycle"]);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    assert!(plain.stdout.contains(line), "{}", plain.stdout);
    assert!(plain.stdout.contains("pyish: 0 guardlift report(s)"));
    let r = run(exe, &["--instrument", "--recycle"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(line), "{}", r.stdout);
    assert_eq!(results(&r.stdout), results(&plain.stdout));
    // Every attribute access of the stale step (3 iterations, 7 sites), nothing else.
    assert!(
        r.stdout.contains("pyish: 7 guardlift report(s)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "pyish:   use_after_free in @step at IR line 21:5 (dict_slot.load), 3 time(s)"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("allocation id 3 (freed by the host)")
            && !r.stderr.contains("allocation id 4"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("by the host at:"),
        "host_stacks is off by default"
    );
}

/// Issue 29, item 7: with `host_stacks=1`, the report about the stale
/// object names the C functions that registered it (`object_new`, pyish's
/// tp_alloc) and reported it freed (`object_free`, its tp_dealloc), with
/// their file and line, innermost first (none of guardlift's frames).
#[test]
fn c_pyish_use_after_free_names_the_c_allocator_and_deallocator() {
    let out = common::target_command(c_pyish())
        .args(["--instrument", "--recycle"])
        .env("GUARDLIFT_OPTIONS", "host_stacks=1")
        .output()
        .expect("run pyish");
    let r = run_output(out);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    let first = |what: &str| {
        let at = lines
            .iter()
            .position(|l| *l == format!("==pyish==   {what} by the host at:"))
            .unwrap_or_else(|| panic!("no {what} stack:\n{}", r.stderr));
        lines[at + 1]
    };
    let alloc = first("allocated");
    let free = first("freed");
    assert!(
        alloc.starts_with("==pyish==     #0 0x")
            && alloc.contains(" in object_new ")
            && alloc.contains("objects.c:"),
        "{alloc}\n{}",
        r.stderr
    );
    assert!(
        free.starts_with("==pyish==     #0 0x")
            && free.contains(" in object_free ")
            && free.contains("objects.c:"),
        "{free}\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains(" in gl_runtime_"), "{}", r.stderr);
}

#[test]
fn c_pyish_api_selftest() {
    let r = run(c_pyish(), &["--selftest"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("pyish selftest: ok"), "{}", r.stdout);
}

#[test]
fn c_pyish_under_valgrind_has_no_errors_and_no_definite_leaks() {
    let exe = c_pyish();
    for (args, code) in [
        (&["--selftest"][..], 0),
        (&["--instrument"][..], 0),
        (&["--instrument", "--buggy"][..], 1),
        (&["--instrument", "--recycle"][..], 1),
        (&["--recycle"][..], 0),
    ] {
        let out = Command::new("valgrind")
            .args([
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
            ])
            .arg(format!(
                "--suppressions={}/tests/valgrind.supp",
                env!("CARGO_MANIFEST_DIR")
            ))
            .arg(exe)
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run valgrind ({e}): install it with `apt-get install valgrind`")
            });
        let r = run_output(out);
        assert_eq!(
            r.code,
            Some(code),
            "valgrind pyish {args:?} (99 = valgrind found errors):\n{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("ERROR SUMMARY: 0 errors"),
            "valgrind pyish {args:?}:\n{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("definitely lost: 0 bytes")
                || r.stderr.contains("All heap blocks were freed"),
            "valgrind pyish {args:?}:\n{}",
            r.stderr
        );
        eprintln!(
            "valgrind pyish {args:?}: {}",
            r.stderr
                .lines()
                .filter(|l| l.contains("ERROR SUMMARY") || l.contains("definitely lost"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
}

#[test]
fn rust_pyish_clean_runs_compute_what_the_interpreter_computes() {
    check_clean(rust_pyish(), "Rust pyish");
}

#[test]
fn rust_pyish_reports_the_buggy_helper_at_the_generated_site() {
    let exe = rust_pyish();
    let dump = run(exe, &["--instrument", "--dump-ir"]);
    assert_eq!(dump.code, Some(0), "{}", dump.stderr);
    let ir: String = dump
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("; step"))
        .take_while(|l| !l.starts_with("pyish:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(ir.contains("guard.dict_slot.load"), "{ir}");
    let r = run(exe, &["--instrument", "--buggy"]);
    check_buggy(&r, &ir, "Rust pyish");
    // The C and Rust interpreters generate the same IR shape: same site.
    let c = run(c_pyish(), &["--instrument", "--buggy"]);
    let first = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("==pyish== guardlift report:"))
            .map(str::to_string)
    };
    assert_eq!(first(&r.stderr), first(&c.stderr));
}

/// Runs the C pyish with `GUARDLIFT_OPTIONS=watch=object:1` (p is the
/// first object registered) and the given flags; fails where hardware
/// watchpoints are unavailable.
fn run_watched(args: &[&str]) -> Run {
    let r = run_output(
        common::target_command(c_pyish())
            .args(args)
            .env("GUARDLIFT_OPTIONS", "watch=object:1")
            .output()
            .expect("run pyish"),
    );
    assert!(
        !r.stderr.contains("watchpoints unavailable"),
        "hardware watchpoints are needed (Linux x86_64, perf_event_paranoid <= 2): {}",
        r.stderr
    );
    r
}

/// Issue 17: a host function written in C (`--rogue byte|word`, called
/// from the compiled `step` as its incref) clears the tag bit of p's
/// managed-dict word; the hardware watchpoint set through
/// `gl_runtime_configure(rt, "watch=object:1")` reports `foreign_write`
/// naming the C symbol, the width of its store, and the IR caller in the
/// backtrace. Needs `perf_event_open` hardware breakpoints (Linux x86_64,
/// `kernel.perf_event_paranoid` <= 2): FAILS where they are unavailable.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only (capi/tests/watch.rs's \
              watch_says_unavailable_elsewhere checks the answer elsewhere)"
)]
fn c_pyish_rogue_c_writer_is_named_by_the_watchpoint() {
    for (rogue, symbol, width) in [
        ("byte", "interp_incref_clear_tag_byte", 1),
        ("word", "interp_incref_clear_tag_word", 8),
    ] {
        let r = run_watched(&["--rogue", rogue]);
        assert_eq!(r.code, Some(1), "{rogue}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("pyish: 1 guardlift report(s)"),
            "{rogue}: only the rogue write: {}",
            r.stdout
        );
        let line = r
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("pyish:     {"))
            .unwrap_or_else(|| panic!("{rogue}: no report JSON: {}", r.stdout));
        let j: serde_json::Value = serde_json::from_str(&format!("{{{line}"))
            .unwrap_or_else(|e| panic!("{rogue}: {e}: {line}"));
        assert_eq!(j["kind"], "foreign_write", "{rogue}: {j}");
        // The callback's line: at the IR call, and no site id (a
        // foreign_write has none), as guardlift's own report prints it.
        let head = r
            .stderr
            .lines()
            .find(|l| {
                l.starts_with("==pyish== guardlift report: foreign_write in @step at IR line ")
            })
            .unwrap_or_else(|| panic!("{rogue}: no report line: {}", r.stderr));
        assert!(head.ends_with(" (call)"), "{rogue}: {head}");
        assert!(!head.contains("site"), "{rogue}: {head}");
        assert_eq!(j["object_id"], 1, "{rogue}: {j}");
        assert_eq!(j["width"], width, "{rogue}: {j}");
        assert_eq!(j["new_low_bits"], "0b110", "{rogue}: {j}");
        let writer = j["writer"]["symbol"].as_str().unwrap_or("");
        assert!(writer.starts_with(&format!("{symbol}+0x")), "{rogue}: {j}");
        let bt: Vec<&str> = j["backtrace"]
            .as_array()
            .unwrap_or_else(|| panic!("{rogue}: no backtrace: {j}"))
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        assert!(
            bt.first().is_some_and(|f| f.contains(symbol)),
            "{rogue}: the writer first: {bt:?}"
        );
        // The compiled IR caller, at its IR site (`@step L:C (call)`), not
        // a code offset.
        let caller = bt.get(1).copied().unwrap_or_default();
        let at = caller.split("@step ").nth(1).unwrap_or_default();
        assert!(
            at.split(' ').next().is_some_and(|lc| {
                lc.split_once(':').is_some_and(|(l, c)| {
                    l.parse::<u32>().is_ok_and(|l| l > 0) && c.parse::<u32>().is_ok()
                })
            }) && at.contains("(call)"),
            "{rogue}: then the compiled IR call that called it, at its L:C: {bt:?}"
        );
    }
}

/// With the watchpoint on and no rogue writer, nothing is reported: the
/// host's own writes (its dict code, its dealloc after telling guardlift)
/// and the compiled code's are legitimate.
#[test]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    ignore = "perf hardware breakpoints are built for Linux x86_64 only (capi/tests/watch.rs's \
              watch_says_unavailable_elsewhere checks the answer elsewhere)"
)]
fn c_pyish_watched_clean_run_reports_nothing() {
    let r = run_watched(&[]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("pyish: 0 guardlift report(s)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(CLEAN), "{}", r.stdout);
}
