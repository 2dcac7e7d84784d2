//! Parity across architectures: every IR program of the corpus
//! (`tests/programs/*.glir`), the shared examples and the demo run through
//! the `guardlift` binary on the host JIT and with `--target aarch64`
//! (qemu-user) and `--target x86_64` (the object path, natively),
//! uninstrumented and instrumented (recover mode), and must agree
//! on the result, the exit status, the `print_*` output, host faults and every
//! report (kind, site, function, line, column, op, count, value low bits,
//! last write, capacity and len, width). Programs that violate a check also
//! run in abort and trap mode on every target: same exit status, same
//! report line on stderr, same aborted JSON.
//!
//! The tools are required, never skipped: without them the test fails and
//! says how to install them.

mod common;

use common::{bin, mask_hex};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The host first: every other target is compared with it.
const TARGETS: [&str; 3] = ["host", "aarch64", "x86_64"];
const N: usize = TARGETS.len();

/// Fails (never skips) when qemu-user or a cross or native compiler is missing.
fn require_tools() {
    use guardlift_jit::Target;
    for t in [Target::Aarch64, Target::X86_64] {
        if let Err(e) = guardlift_aot::Toolchain::find(t) {
            panic!("{e}");
        }
    }
    for (t, libc) in [(Target::Aarch64, "/usr/aarch64-linux-gnu/lib/libc.a")] {
        if !t.is_native() && !Path::new(libc).exists() {
            panic!(
                "{libc} is missing: {}",
                guardlift_aot::install_hint(t).unwrap_or("install the cross libc")
            );
        }
    }
}

/// A program and its entry arguments.
#[derive(Clone, Debug)]
struct Prog {
    path: PathBuf,
    args: Vec<String>,
    /// Running it uninstrumented is undefined (it overflows an adstack).
    instrumented_only: bool,
}

fn corpus() -> Vec<Prog> {
    // The corpus and the method-JIT-shaped programs of the bench rows.
    let mut paths: Vec<PathBuf> = ["tests/programs", "tests/programs/jitshapes"]
        .iter()
        .flat_map(|d| {
            let dir = root().join(d);
            std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .collect::<Vec<_>>()
        })
        .filter(|p| p.extension().is_some_and(|x| x == "glir"))
        .collect();
    paths.sort();
    let mut v: Vec<Prog> = paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let args = text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("; args:"))
                .map(|a| a.split_whitespace().map(String::from).collect())
                .unwrap_or_default();
            Prog {
                path,
                args,
                instrumented_only: false,
            }
        })
        .collect();
    let shared = root().join("../shared/examples");
    assert!(
        shared.is_dir(),
        "{}: check out ../shared beside the repository",
        shared.display()
    );
    for (file, args, instrumented_only) in [
        ("attrs.glir", &[][..], false),
        ("sin_chain_grad.glir", &["0.5", "3"][..], false),
        ("overflow_recover.glir", &[][..], true),
        ("tagflip.glir", &["10"][..], false),
    ] {
        v.push(Prog {
            path: shared.join(file),
            args: args.iter().map(|s| s.to_string()).collect(),
            instrumented_only,
        });
    }
    v.push(Prog {
        path: root().join("examples/ctxmgr_tagflip.glir"),
        args: vec!["1000".into()],
        instrumented_only: false,
    });
    v
}

fn name(p: &Prog) -> String {
    p.path.file_name().unwrap().to_string_lossy().into_owned()
}

/// One `guardlift run` of a program on a target with extra flags.
#[derive(Clone, Debug)]
struct Job {
    prog: usize,
    flags: Vec<&'static str>,
    target: &'static str,
}

fn exit_code(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (o.status.code(), o.status.signal()) {
        (Some(c), _) => c,
        (None, Some(6)) => 134,
        (None, Some(s)) => 128 + s,
        _ => -1,
    }
}

/// Runs every job, a few at a time (qemu and the linker mostly wait).
fn run_all(progs: &[Prog], jobs: &[Job]) -> Vec<Output> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Output>>> = Mutex::new(vec![None; jobs.len()]);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 8)
        * 2;
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(j) = jobs.get(i) else { break };
                let p = &progs[j.prog];
                let o = common::target_command(bin())
                    .arg("run")
                    .arg(&p.path)
                    .args(&p.args)
                    .args(&j.flags)
                    .args(["--target", j.target])
                    .output()
                    .expect("run guardlift");
                out.lock().unwrap()[i] = Some(o);
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|o| o.expect("every job ran"))
        .collect()
}

/// A report with what must agree across targets.
fn report_key(r: &Value) -> String {
    let low = r["value"]
        .as_str()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .map(|v| v & 7);
    let extra = match r["kind"].as_str() {
        Some("dict_slot_tag") => format!(
            "low bits {:?} ({}) last write {} changed {}",
            low, r["value_low_bits"], r["last_write"]["by"], r["last_write"]["changed_behind"]
        ),
        Some("adstack_overflow" | "adstack_underflow") => {
            format!("capacity {} len {}", r["capacity"], r["len"])
        }
        _ => format!("width {}", r["width"]),
    };
    format!(
        "{} site {} @{} {}:{} ({}) x{} {extra}",
        r["kind"], r["site"], r["function"], r["line"], r["col"], r["op"], r["count"]
    )
}

/// Everything a `--json` run must agree on.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    exit: i32,
    result: Value,
    stdout: Value,
    fatal: Option<String>,
    aborted: Value,
    mode: Value,
    instrumented: Value,
    reports: Vec<String>,
    /// The `"target"` field names the target (the host's arch for host runs).
    target_ok: bool,
}

fn seen(o: &Output, target: &str, what: &str) -> Seen {
    let text = String::from_utf8_lossy(&o.stdout);
    let j: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON object ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let want_target = if target == "host" {
        std::env::consts::ARCH
    } else {
        target
    };
    Seen {
        exit: exit_code(o),
        result: j["result"].clone(),
        stdout: j["stdout"].clone(),
        fatal: j["fatal"].as_str().map(|f| {
            // The fatal text names the file and, for a host fault, the heap addresses.
            mask_hex(f.split_once(": fatal: ").map_or(f, |(_, m)| m))
        }),
        aborted: j["aborted"].clone(),
        mode: j["mode"].clone(),
        instrumented: j["instrumented"].clone(),
        reports: j["reports"]
            .as_array()
            .map(|a| a.iter().map(report_key).collect())
            .unwrap_or_default(),
        target_ok: j["target"] == want_target,
    }
}

/// The first line of each report on stderr (`==guardlift== ERROR: ...`)
/// and whether a trap note follows.
fn stderr_reports(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("==guardlift== ERROR:") || l.contains("trap mode:"))
        .map(|l| {
            if l.contains("trap mode:") {
                "trap note".to_string()
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// Programs whose instrumented run reports violations.
fn violators(progs: &[Prog], jobs: &[Job], outs: &[Output]) -> Vec<usize> {
    let mut v: Vec<usize> = jobs
        .iter()
        .zip(outs)
        .filter(|(j, o)| {
            j.target == "host" && j.flags.contains(&"--instrument") && exit_code(o) == 1
        })
        .map(|(j, _)| j.prog)
        .collect();
    v.sort_unstable();
    v.dedup();
    assert!(
        v.len() >= 5,
        "expected several violating programs, got {:?}",
        v.iter().map(|&i| name(&progs[i])).collect::<Vec<_>>()
    );
    v
}

#[test]
fn every_program_agrees_on_every_target() {
    require_tools();
    let progs = corpus();
    assert!(progs.len() >= 53, "corpus has {} programs", progs.len());
    let start = std::time::Instant::now();

    // Recover mode (and uninstrumented), --json.
    let variants: [Vec<&'static str>; 2] = [
        vec!["--json"],
        vec!["--json", "--instrument", "--mode", "recover"],
    ];
    let mut jobs = Vec::new();
    for (i, p) in progs.iter().enumerate() {
        for flags in &variants {
            if p.instrumented_only && flags.len() == 1 {
                continue;
            }
            for target in TARGETS {
                jobs.push(Job {
                    prog: i,
                    flags: flags.clone(),
                    target,
                });
            }
        }
    }
    let outs = run_all(&progs, &jobs);
    let mut failures = Vec::new();
    let mut instrumented_programs = 0;
    for (k, chunk) in jobs.chunks(N).enumerate() {
        let p = &progs[chunk[0].prog];
        let what = format!(
            "{} {} {}",
            name(p),
            p.args.join(" "),
            chunk[0].flags.join(" ")
        );
        let host = seen(&outs[N * k], "host", &what);
        if host.exit == 1 {
            instrumented_programs += 1;
        }
        assert!(
            matches!(host.exit, 0 | 1 | 134),
            "{what}: host run failed: {}",
            String::from_utf8_lossy(&outs[N * k].stderr)
        );
        for (j, o) in chunk.iter().zip(&outs[N * k..N * k + N]).skip(1) {
            let t = seen(o, j.target, &format!("{what} --target {}", j.target));
            if t != host {
                failures.push(format!(
                    "{what} --target {}:\n  host:   {host:?}\n  target: {t:?}\n  stderr: {}",
                    j.target,
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
    }
    let recover_runs = jobs.len();

    // Abort (--json: the aborted object) and trap mode, on the violators.
    let bad = violators(&progs, &jobs, &outs);
    let mut jobs2 = Vec::new();
    for &i in &bad {
        for flags in [
            vec!["--json", "--instrument", "--mode", "abort"],
            vec!["--instrument", "--mode", "trap"],
        ] {
            for target in TARGETS {
                jobs2.push(Job {
                    prog: i,
                    flags: flags.clone(),
                    target,
                });
            }
        }
    }
    let outs2 = run_all(&progs, &jobs2);
    for (k, chunk) in jobs2.chunks(N).enumerate() {
        let p = &progs[chunk[0].prog];
        let what = format!(
            "{} {} {}",
            name(p),
            p.args.join(" "),
            chunk[0].flags.join(" ")
        );
        let host_out = &outs2[N * k];
        let host_err = stderr_reports(host_out);
        assert_eq!(exit_code(host_out), 134, "{what}: host");
        assert!(!host_err.is_empty(), "{what}: host printed no report");
        let json = chunk[0].flags.contains(&"--json");
        let host_json = json.then(|| seen(host_out, "host", &what));
        if json {
            assert_eq!(
                host_json.as_ref().unwrap().aborted,
                Value::Bool(true),
                "{what}"
            );
        } else {
            // Inline checks trap; the call-based lifetime and bounds checks
            // report and abort inside the runtime call (no trap
            // instruction, no note): the bounds check decides from the
            // runtime's recorded capacity.
            let by_call = host_err.first().is_some_and(|l| {
                [
                    "use_after_free",
                    "double_free",
                    "invalid_free",
                    "attr_out_of_bounds",
                    "heap_overflow",
                ]
                .iter()
                .any(|k| l.starts_with(&format!("==guardlift== ERROR: {k} at ")))
            });
            assert!(
                by_call || host_err.contains(&"trap note".to_string()),
                "{what}: {host_err:?}"
            );
            assert!(
                host_out.stdout.is_empty(),
                "{what}: trap mode prints no JSON"
            );
        }
        for (j, o) in chunk.iter().zip(&outs2[N * k..N * k + N]).skip(1) {
            let w = format!("{what} --target {}", j.target);
            let mut bad = Vec::new();
            if exit_code(o) != 134 {
                bad.push(format!("exit {}", exit_code(o)));
            }
            if stderr_reports(o) != host_err {
                bad.push(format!(
                    "stderr {:?} vs host {host_err:?}",
                    stderr_reports(o)
                ));
            }
            if let Some(h) = &host_json {
                let t = seen(o, j.target, &w);
                if t.reports != h.reports || t.aborted != h.aborted || t.stdout != h.stdout {
                    bad.push(format!("json {t:?} vs host {h:?}"));
                }
            } else if !o.stdout.is_empty() {
                bad.push("stdout not empty".into());
            }
            if !bad.is_empty() {
                failures.push(format!(
                    "{w}: {}\n  stderr: {}",
                    bad.join("; "),
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
        }
    }
    eprintln!(
        "parity: {} programs ({} reporting when instrumented), {} recover/uninstrumented runs, {} abort/trap runs on {} violators, {:.1?}",
        progs.len(),
        instrumented_programs,
        recover_runs,
        jobs2.len(),
        bad.len(),
        start.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn missing_tools_fail_with_the_install_hint() {
    // A runner or compiler that does not exist: the CLI says what to
    // install (exit 2).
    let file = root().join("../shared/examples/attrs.glir");
    for (target, var, packages) in [
        (
            "aarch64",
            "GUARDLIFT_RUNNER_AARCH64",
            "gcc-aarch64-linux-gnu",
        ),
        ("aarch64", "GUARDLIFT_CC_AARCH64", "libc6-dev-arm64-cross"),
    ] {
        let o = common::target_command(bin())
            .args(["run"])
            .arg(&file)
            .args(["--target", target])
            .env(var, "a-tool-that-is-not-installed")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{target} {var}: {err}");
        assert!(err.contains("scripts/install-deps"), "{err}");
        assert!(err.contains(packages), "{err}");
        assert!(err.contains("a-tool-that-is-not-installed"), "{err}");
    }
}

#[test]
fn the_interpreter_runs_on_the_host_only() {
    let file = root().join("../shared/examples/attrs.glir");
    for target in ["aarch64", "x86_64"] {
        let o = common::target_command(bin())
            .args(["run"])
            .arg(&file)
            .args(["--engine", "interp", "--target", target])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--engine interp"), "{err}");
    }
}
