//! Profilers and debuggers see JIT code (issue 35): the real `perf` and
//! `gdb` run against `target/release/guardlift`.
//!
//! - `perfmap=1`: `/tmp/perf-PID.map` names every compiled function
//!   (`guardlift:@f`, clean variants `guardlift:@f [clean]`), and
//!   `perf record -e cpu-clock` + `perf report` attribute samples to them;
//! - `jitdump=1`: `perf record -k mono` + `perf inject --jit` +
//!   `perf report --sort sym,srcline` show the `.glir` lines;
//! - `gdb=1`: `gdb -batch` on the README demo's fault prints a backtrace
//!   with the IR frames and lines and the host's frames, and a breakpoint
//!   on a `.glir` line stops there;
//! - with none of them nothing is written.
//!
//! A missing tool fails the test with the Debian package to install
//! (`scripts/install-deps` installs them); no test skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn demo() -> PathBuf {
    repo().join("examples/ctxmgr_tagflip.glir")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("guardlift-prof-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tool` must be installed: else the test fails naming the package.
fn need(tool: &str, package: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`{tool}` is not installed: install the Debian package `{package}` \
         (scripts/install-deps does)"
    );
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn guardlift() -> Command {
    let mut c = common::target_command(env!("CARGO_BIN_EXE_guardlift"));
    c.env_remove("PERF_BUILDID_DIR").env_remove("JITDUMPDIR");
    c
}

/// Runs guardlift with `args` and `options`; returns (its pid, output).
fn run_with_pid(args: &[&str], options: &str, cwd: &Path) -> (u32, Output) {
    let child = guardlift()
        .args(args)
        .env("GUARDLIFT_OPTIONS", options)
        .current_dir(cwd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run guardlift");
    let pid = child.id();
    (pid, child.wait_with_output().expect("wait for guardlift"))
}

fn perf_map(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

#[test]
fn perfmap_names_every_function_and_clean_variant() {
    let dir = scratch("map");
    let prog = repo().join("tests/programs/hoist_loop_calls_leaf.glir");
    let prog = prog.to_str().unwrap();
    let args = ["run", prog, "5", "--instrument", "--mode", "recover"];
    let (pid, o) = run_with_pid(&args, "perfmap=1", &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let path = perf_map(pid);
    let map = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let _ = std::fs::remove_file(&path);
    let mut names = Vec::new();
    for line in map.lines() {
        let mut f = line.splitn(3, ' ');
        let (start, size, name) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        assert!(u64::from_str_radix(start, 16).unwrap() > 0, "{line}");
        assert!(u64::from_str_radix(size, 16).unwrap() > 0, "{line}");
        names.push(name.to_string());
    }
    for want in ["guardlift:@main", "guardlift:@get"] {
        assert!(names.iter().any(|n| n == want), "no `{want}` in\n{map}");
    }
    // Clean variants exist only with the shadow mapping (the loop versioning
    // tests it). Under qemu-user the runner sets GUARDLIFT_NO_SHADOW
    // (docs/TARGETS.md: qemu cannot hold the reservation): then there are
    // none, and the map must not name one.
    let clean = names.iter().any(|n| n == "guardlift:@get [clean]");
    let shadow = std::env::var_os("GUARDLIFT_NO_SHADOW").is_none();
    assert_eq!(clean, shadow, "clean variant iff shadow ({shadow}):\n{map}");
    // Only the map: no jitdump without jitdump=1.
    assert!(!dir.join(format!("jit-{pid}.dump")).exists());
}

#[test]
fn nothing_is_written_when_off() {
    let dir = scratch("off");
    let demo = demo();
    let args = [
        "run",
        demo.to_str().unwrap(),
        "10",
        "--instrument",
        "--mode",
        "recover",
    ];
    let (pid, o) = run_with_pid(&args, "", &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!perf_map(pid).exists(), "a perf map without perfmap=1");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "files written when off: {left:?}");
}

/// `perf record -e cpu-clock` of the demo (1 000 000 iterations, recover
/// mode) with `options`, `extra` perf-record flags; the data file's path.
fn perf_record(dir: &Path, options: &str, extra: &[&str]) -> PathBuf {
    need("perf", "linux-perf");
    let data = dir.join("perf.data");
    let demo = demo();
    let o = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-F", "2000", "-o"])
        .arg(&data)
        .args(extra)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_guardlift"))
        .args(["run", demo.to_str().unwrap(), "1000000", "--instrument"])
        .args(["--mode", "recover"])
        .env("GUARDLIFT_OPTIONS", options)
        .env("JITDUMPDIR", dir)
        .env_remove("PERF_BUILDID_DIR")
        .current_dir(dir)
        .output()
        .expect("run perf record");
    assert!(
        data.exists(),
        "perf record wrote no data (perf_event_paranoid? {:?})\n{}",
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid"),
        text(&o)
    );
    data
}

fn perf_report(data: &Path, sort: &str) -> String {
    let o = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--sort", sort, "-i"])
        .arg(data)
        .output()
        .expect("run perf report");
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn perf_report_names_ir_functions_through_the_perf_map() {
    let dir = scratch("perf");
    let data = perf_record(&dir, "perfmap=1", &[]);
    let report = perf_report(&data, "sym");
    assert!(
        report.contains("guardlift:@main")
            || report.contains("guardlift:@enter")
            || report.contains("guardlift:@exit"),
        "no IR function in perf report:\n{report}"
    );
    assert!(!report.contains(".Lfn"), "{report}");
}

#[test]
fn perf_inject_jit_shows_glir_lines() {
    let dir = scratch("jitdump");
    let data = perf_record(&dir, "jitdump=1", &["-k", "mono"]);
    let dumps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("jit-"))
        .collect();
    assert_eq!(dumps.len(), 1, "one jit-PID.dump in {dir:?}");
    let injected = dir.join("perf.jit.data");
    let o = Command::new("perf")
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&injected)
        .current_dir(&dir)
        .output()
        .expect("run perf inject");
    assert!(o.status.success(), "{}", text(&o));
    let report = perf_report(&injected, "sym,srcline");
    assert!(
        report.contains("guardlift:@"),
        "no IR function after perf inject --jit:\n{report}"
    );
    assert!(
        report.contains("ctxmgr_tagflip.glir:"),
        "no .glir line after perf inject --jit:\n{report}"
    );
}

fn gdb(args: &[&str], options: &str, run_args: &[&str]) -> String {
    need("gdb", "gdb");
    let mut c = Command::new("gdb");
    c.args(["-batch", "-nx", "-ex", "set pagination off"]);
    c.args(["-ex", "set confirm off"]);
    for a in args {
        c.args(["-ex", a]);
    }
    let o = c
        .arg("--args")
        .arg(env!("CARGO_BIN_EXE_guardlift"))
        .args(run_args)
        .env("GUARDLIFT_OPTIONS", options)
        .output()
        .expect("run gdb");
    text(&o)
}

#[test]
fn gdb_backtrace_of_a_fault_shows_ir_frames_lines_and_host_frames() {
    // Uninstrumented, the demo's corrupted word reaches the host's dict
    // code (`store_attr_slow`), which finds it bad and ends the run: stop
    // there and walk the stack from the host function through the JIT
    // frames into the host that called them.
    let demo = demo();
    let out = gdb(
        &[
            "break guardlift_runtime::heap::Heap::store_attr_slow",
            "run",
            "bt",
            // store_attr_slow runs more than once: go on to the fault.
            "delete",
            "continue",
        ],
        "gdb=1",
        &["run", demo.to_str().unwrap(), "1000"],
    );
    assert!(
        out.contains("ERROR: host_fault at @enter 21:5 (store_attr)")
            && out.contains("store_attr_slow: object 0x"),
        "{out}"
    );
    let bt: Vec<&str> = out.lines().filter(|l| l.starts_with('#')).collect();
    let at = |f: &str| bt.iter().position(|l| l.contains(f));
    let host = at("guardlift_runtime::heap::Heap::store_attr_slow");
    let stub = at("[stub Slow(StoreAttrSlow)] ()");
    let enter = at("@enter () at ");
    let main = at("@main () at ");
    let tramp = at("[trampoline @main] ()");
    let caller = at("guardlift_jit::engine::CompiledModule::call_dynamic");
    let order = [host, stub, enter, main, tramp, caller];
    assert!(order.iter().all(Option::is_some), "{out}");
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "frames out of order:\n{out}"
    );
    assert!(
        bt[enter.unwrap()].contains("ctxmgr_tagflip.glir:21")
            && bt[main.unwrap()].contains("ctxmgr_tagflip.glir:"),
        "{out}"
    );
}

#[test]
fn gdb_breakpoint_on_a_glir_line_stops_there() {
    let demo = demo();
    let out = gdb(
        &[
            "set breakpoint pending on",
            "break ctxmgr_tagflip.glir:21",
            "run",
            "bt 2",
            "info line *$pc",
        ],
        "gdb=1",
        &[
            "run",
            demo.to_str().unwrap(),
            "10",
            "--instrument",
            "--mode",
            "recover",
        ],
    );
    // The loop runs its clean copy until the rogue branch (a side exit):
    // the first stop may be in `@enter`'s clean variant, a location of
    // the same breakpoint (`Breakpoint 1.N`).
    assert!(
        out.lines().any(|l| l.contains("Breakpoint 1")
            && (l.contains("@enter () at ctxmgr_tagflip.glir:21")
                || l.contains("@enter [clean] () at ctxmgr_tagflip.glir:21"))),
        "{out}"
    );
    assert!(out.contains("#1 ") && out.contains("@main () at "), "{out}");
    assert!(
        out.contains("Line 21 of \"ctxmgr_tagflip.glir\" starts at address"),
        "{out}"
    );
}
