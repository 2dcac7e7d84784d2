//! The target runtime library itself, `libguardlift_target_rt.a` of the
//! host's architecture, as object code will link it (docs/TARGETS.md, "One
//! runtime"): its symbols (`nm`), a C program linked statically against it
//! that reaches the runtime through the `guardlift_runtime` address, and
//! `guardlift_aot::target_rt` accepting it and refusing stale or foreign
//! ones.
//!
//! Where the library comes from: `cargo test` does not build a
//! staticlib-only package's library for its integration tests, so the
//! first test that needs it runs `cargo build --workspace --lib
//! --examples` with this test binary's profile and target directory — the
//! command `capi/tests/embedding.rs` runs, so that in `cargo test
//! --workspace` one of the two builds the library (and the other finds
//! nothing to do), with the workspace's feature unification (a `-p
//! guardlift-target-rt` build would compile the runtime's dependencies
//! again with fewer features). A library still missing after that is a
//! failure naming `scripts/build-target-rt`, never a skip.

use guardlift_abi::{Entry, ABI_STAMP, UNWATCH_EPOCH_OFFSET, VALUES_EPOCH_OFFSET};
use guardlift_aot::target_rt::{self, TargetRtError, LIB_NAME};
use guardlift_jit::Target;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

/// target/<profile> of this test binary (target/<profile>/deps/<test>).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

fn host() -> Target {
    Target::host_arch().expect("an x86_64 or aarch64 host")
}

/// The target directory and, for a cross build (this test binary in
/// target/TRIPLE/<profile>/deps), the triple (as `capi/tests/common`).
fn target_dir_and_triple() -> (PathBuf, Option<String>) {
    let dir = profile_dir();
    let parent = dir.parent().expect("target/<profile>");
    let name = parent.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with(std::env::consts::ARCH) && name.contains("-linux") {
        let top = parent.parent().expect("target/TRIPLE/<profile>");
        (top.to_path_buf(), Some(name.to_string()))
    } else {
        (parent.to_path_buf(), None)
    }
}

/// The library, built once per test run by `cargo build --workspace
/// --lib --examples` (see the header) with this test binary's profile.
fn library() -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev".to_string(),
            Some(p) => p.to_string(),
            None => panic!("no profile directory above the test binary"),
        };
        let (target_dir, triple) = target_dir_and_triple();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        run(Command::new(cargo)
            .current_dir(root)
            .args(["build", "-q", "--profile", &profile, "--target-dir"])
            .arg(target_dir)
            .args(triple.iter().flat_map(|t| ["--target", t.as_str()]))
            .args(["--workspace", "--lib", "--examples"]));
    });
    let lib = profile_dir().join(LIB_NAME);
    assert!(
        lib.is_file(),
        "{} is missing after cargo build --workspace --lib: build it with \
         scripts/build-target-rt {}",
        lib.display(),
        host().name()
    );
    lib
}

/// The C compiler of this build's target (a cross build's tests run
/// under qemu-user and link with the cross compiler).
fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| {
        let triple_dir = profile_dir()
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n.to_string_lossy().contains("-linux"));
        if triple_dir {
            format!("{}-linux-gnu-gcc", std::env::consts::ARCH)
        } else {
            "cc".into()
        }
    })
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The defined global symbols of the archive: name → `nm` type letters.
fn defined_globals(lib: &Path) -> BTreeMap<String, Vec<char>> {
    let out = run(Command::new("nm")
        .args(["--defined-only", "--extern-only", "--format=posix"])
        .arg(lib));
    let mut syms: BTreeMap<String, Vec<char>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // `NAME TYPE VALUE SIZE`; member headers are `lib.a[member.o]:`.
        let mut f = line.split_whitespace();
        if let (Some(name), Some(ty)) = (f.next(), f.next()) {
            if let Some(t) = ty.chars().next().filter(|_| ty.len() == 1) {
                syms.entry(name.to_string()).or_default().push(t);
            }
        }
    }
    syms
}

#[test]
fn it_exports_exactly_the_table_the_cell_and_the_stamp() {
    let syms = defined_globals(&library());
    let gl: BTreeMap<_, _> = syms.iter().filter(|(n, _)| n.starts_with("gl_")).collect();
    let mut want: Vec<&str> = Entry::ALL.iter().map(|e| e.symbol()).collect();
    assert_eq!(want.len(), 32);
    want.push("gl_rt_abi");
    // The program's `main` calls it (the generated gl_traps.c).
    want.push("gl_target_main");
    want.sort_unstable();
    assert_eq!(
        gl.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        want,
        "the gl_ symbols the library defines"
    );
    for e in Entry::ALL {
        assert_eq!(
            syms[e.symbol()],
            ['T'],
            "{} is one global function",
            e.symbol()
        );
    }
    // The stamp is read-only data; the cell is writable (bss or data).
    assert_eq!(syms["gl_rt_abi"], ['R']);
    assert!(
        matches!(syms["guardlift_runtime"][..], ['B'] | ['D']),
        "guardlift_runtime: {:?}",
        syms["guardlift_runtime"]
    );
}

/// The throwaway C program: the runtime reached through the
/// `guardlift_runtime` address, as object code reaches it.
fn c_program() -> String {
    let mut decls = String::new();
    for e in Entry::ALL {
        let mut params: Vec<&str> = Vec::new();
        if e.needs_rt() {
            params.push("void *");
        }
        params.extend(e.params().iter().map(|t| t.c_type()));
        let ret = e.ret().map_or("void", |t| t.c_type());
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        decls.push_str(&format!("{ret} {}({params});\n", e.symbol()));
    }
    format!(
        r#"#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
{decls}
extern char guardlift_runtime[];
extern const uint64_t gl_rt_abi;
int guardlift_rt_init(int mode);
int guardlift_rt_finish(void);
#define UNWATCH_EPOCH {UNWATCH_EPOCH_OFFSET}
#define VALUES_EPOCH {VALUES_EPOCH_OFFSET}

static uint64_t epoch(int off) {{ return *(volatile uint64_t *)(guardlift_runtime + off); }}

int main(int argc, char **argv) {{
    int mode = argc > 1 ? atoi(argv[1]) : 1;
    void *rt = guardlift_runtime;
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("stamp %016llx\n", (unsigned long long)gl_rt_abi);
    printf("finish before init %d\n", guardlift_rt_finish());
    printf("init %d\n", guardlift_rt_init(mode));
    printf("init again %d\n", guardlift_rt_init(mode));
    uint64_t obj = gl_obj_new_at(rt, 3, 7);
    gl_store_attr_slow(rt, obj, 2, 1234);
    printf("attr %llu\n", (unsigned long long)gl_load_attr_slow(rt, obj, 2));
    printf("live %u\n", (unsigned)gl_check_live(rt, obj, 7));
    printf("pow %g\n", gl_pow(2.0, 10.0));
    uint64_t u = epoch(UNWATCH_EPOCH), v = epoch(VALUES_EPOCH);
    gl_obj_free_at(rt, obj, 8);
    printf("epochs +%llu +%llu\n", (unsigned long long)(epoch(UNWATCH_EPOCH) - u),
           (unsigned long long)(epoch(VALUES_EPOCH) - v));
    gl_obj_free_at(rt, obj, 9);
    printf("after double free\n");
    printf("live %u\n", (unsigned)gl_check_live(rt, obj, 10));
    gl_print_i64(rt, 42);
    printf("finish %d\n", guardlift_rt_finish());
    return 0;
}}
"#
    )
}

/// The C program linked statically against the library, once per run;
/// the link's wall time is printed (docs/TARGETS.md quotes it).
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let lib = library();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("target-rt-c");
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let src = dir.join("main.c");
        std::fs::write(&src, c_program()).expect("write main.c");
        let obj = dir.join("main.o");
        let cc = cc();
        run(Command::new(&cc)
            .args(["-c", "-O1", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&obj)
            .arg(&src));
        let exe = dir.join("main");
        let t = Instant::now();
        run(Command::new(&cc)
            .args(["-static", "-o"])
            .arg(&exe)
            .arg(&obj)
            .arg(&lib)
            .args(["-lm", "-pthread", "-ldl"]));
        eprintln!("static link with {LIB_NAME}: {:?}", t.elapsed());
        exe
    })
}

/// Cargo's runner variable for the target this test binary was built for.
const TARGET_RUNNER_VAR: &str = if cfg!(target_arch = "aarch64") {
    "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER"
} else {
    "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"
};

/// A command that runs `exe`, built for this test binary's target, the way
/// cargo ran the test binary: through cargo's runner for the target when
/// one is set (`scripts/qemu-aarch64-runner` under `scripts/test-aarch64
/// --all`: qemu-user cannot execve an aarch64 binary by itself; as
/// `cli/tests/common`'s `target_command`), directly otherwise.
fn target_command(exe: &Path) -> Command {
    let runner = std::env::var(TARGET_RUNNER_VAR).unwrap_or_default();
    let mut words = runner.split_whitespace();
    match words.next() {
        Some(first) => {
            let mut c = Command::new(first);
            c.args(words).arg(exe);
            c
        }
        None => Command::new(exe),
    }
}

fn run_program(mode: &str) -> (Output, String, String) {
    let out = target_command(program())
        .arg(mode)
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn a_c_program_reaches_the_runtime_through_its_address() {
    // Recover (1): the double free is recorded and written at the end.
    let (out, stdout, stderr) = run_program("1");
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let want = format!(
        "stamp {ABI_STAMP:016x}\nfinish before init -1\ninit 0\ninit again -2\nattr 1234\n\
         live 1\npow 1024\nepochs +1 +1\nafter double free\nlive 0\n42\nfinish 2\n"
    );
    assert_eq!(stdout, want, "stderr:\n{stderr}");
    assert!(stderr.contains("double_free"), "{stderr}");
    assert!(stderr.contains("use_after_free"), "{stderr}");
}

#[test]
fn abort_mode_reports_the_double_free_and_aborts() {
    use std::os::unix::process::ExitStatusExt;
    let (out, stdout, stderr) = run_program("0");
    assert_eq!(
        out.status.signal(),
        Some(libc_sigabrt()),
        "{}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.ends_with("epochs +1 +1\n"), "{stdout}");
    assert!(stderr.contains("double_free"), "{stderr}");
    assert!(!stderr.contains("use_after_free"), "{stderr}");
}

/// SIGABRT (6 on Linux, every architecture here).
fn libc_sigabrt() -> i32 {
    6
}

#[test]
fn target_rt_accepts_it_and_refuses_stale_or_foreign_ones() {
    let lib = library();
    let ok = target_rt::check(&lib, host()).expect("the library cargo built is accepted");
    assert_eq!((ok.stamp, ok.path.as_path()), (ABI_STAMP, lib.as_path()));
    // Found next to this test binary (target/<profile>/deps/...), unless
    // the environment names another library.
    if std::env::var_os(target_rt::env_var(host())).is_none() {
        assert_eq!(target_rt::find(host()).expect("found").path, lib);
    }
    // The other architecture's library is not this one.
    let other = match host() {
        Target::X86_64 => Target::Aarch64,
        _ => Target::X86_64,
    };
    let e = target_rt::check(&lib, other).unwrap_err();
    assert!(matches!(e, TargetRtError::Invalid { .. }), "{e}");
    assert!(e
        .to_string()
        .contains(&format!("scripts/build-target-rt {}", other.name())));
    // An archive whose stamp is another one: stale.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("target-rt-stale");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    std::fs::write(
        dir.join("stale.c"),
        "const unsigned long long gl_rt_abi = 0x1234;\n",
    )
    .expect("write stale.c");
    run(Command::new(cc())
        .current_dir(&dir)
        .args(["-c", "stale.c", "-o", "stale.o"]));
    let stale = dir.join(LIB_NAME);
    let _ = std::fs::remove_file(&stale);
    run(Command::new("ar")
        .current_dir(&dir)
        .args(["rcs", LIB_NAME, "stale.o"]));
    let e = target_rt::check(&stale, host()).unwrap_err();
    assert!(
        matches!(e, TargetRtError::Stale { found: 0x1234, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("is stale"), "{e}");
    assert!(e
        .to_string()
        .ends_with(&format!("run scripts/build-target-rt {}", host().name())));
}
