//! `guardlift run --link LIB.so` (spec §7, issue #34): externs resolved
//! from shared libraries built here from C (`cc -shared -fPIC`, and
//! the cross compiler for `--target aarch64`) give the same output
//! on the host JIT, the interpreter, `--target x86_64` and `--target
//! aarch64` (qemu-user on an x86_64 host); built-in names are never taken from a library; the first
//! library on the command line that defines a name provides it; an extern
//! nothing provides, a missing or unloadable library, a library for another
//! architecture and a signature the interpreter cannot call are errors
//! (exit 2); a fault in a library function is a `host_fault` report at the
//! IR call (exit 134). A missing compiler or qemu fails the test with what
//! to install, never skips it.

mod common;

use common::{exit_134, gl, mask_hex, stderr, stdout, tmp};
use guardlift_jit::Target;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The library: functions of several signatures, a built-in's name, a
/// faulting function.
const LIB_C: &str = r#"
#include <stdint.h>
#include <stdio.h>
int64_t add3(int64_t a, int64_t b, int64_t c) { return a + 2 * b + 3 * c; }
double scale(double x, int64_t n) { return x * (double)n; }
float halve(float x) { return x * 0.5f; }
int32_t mul32(int32_t a, int32_t b) { return a * b; }
int8_t neg8(int8_t a) { return (int8_t)-a; }
int64_t second(const int64_t *p) { return p[1]; }
void fill(int64_t *p, int64_t v) { p[0] = v; p[1] = v * 3; }
double mix9(int64_t a, double x, int32_t b, float y, int64_t c, double z, int8_t d, float w,
            const int64_t *p) {
    return (double)a + x * 10.0 + (double)b * 100.0 + (double)y * 1000.0 + (double)c + z
           + (double)d + (double)w + (double)p[0];
}
int64_t nine(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int64_t f, int64_t g,
             int64_t h, int64_t i) {
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i;
}
int64_t which(void) { return 1; }
/* A built-in's name: never taken from the library. */
void print_i64(int64_t v) { printf("the library's print_i64 %ld\n", (long)v); }
int64_t crash(const int64_t *p) { return *p; }
"#;

/// A second library defining one name of the first.
const LIB2_C: &str = "#include <stdint.h>\nint64_t which(void) { return 2; }\n";

/// Loading it needs a symbol no library has.
const UNLOADABLE_C: &str =
    "extern int not_defined_anywhere(void);\nint calls_it(void) { return not_defined_anywhere(); }\n";

const PROGRAM: &str = "\
extern fn @add3(i64, i64, i64) -> i64
extern fn @scale(f64, i64) -> f64
extern fn @halve(f32) -> f32
extern fn @mul32(i32, i32) -> i32
extern fn @neg8(i8) -> i8
extern fn @second(ptr) -> i64
extern fn @fill(ptr, i64)
extern fn @mix9(i64, f64, i32, f32, i64, f64, i8, f32, ptr) -> f64
extern fn @print_i64(i64)
extern fn @print_f64(f64)
fn @main(%n: i64) -> i64 {
entry:
    %a = call @add3(%n, %n, %n)
    call @print_i64(%a)
    %x = fconst.f64 1.5
    %s = call @scale(%x, %n)
    call @print_f64(%s)
    %h = fconst.f32 3.0
    %hh = call @halve(%h)
    %hd = fpromote.f64 %hh
    call @print_f64(%hd)
    %i = iconst.i32 -70000
    %m = call @mul32(%i, %i)
    %m64 = sext.i64 %m
    call @print_i64(%m64)
    %b = iconst.i8 5
    %nb = call @neg8(%b)
    %nb64 = sext.i64 %nb
    call @print_i64(%nb64)
    %p = stack_alloc 16
    call @fill(%p, %n)
    %pk = call @second(%p)
    call @print_i64(%pk)
    %c32 = iconst.i32 3
    %c8 = iconst.i8 -2
    %q = fconst.f32 0.25
    %mx = call @mix9(%n, %x, %c32, %h, %n, %x, %c8, %q, %p)
    call @print_f64(%mx)
    %f = func_addr @add3
    %m2 = iconst.i64 -2
    %r = call_indirect %f(%n, %m2, %m2) : (i64, i64, i64) -> i64
    return %r
}
";

/// Where the test's libraries go.
fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("link-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("create the library folder");
    d
}

/// `CC -shared -fPIC -O2` of `source` into `name`, with the compiler
/// guardlift uses for `target`: fails saying what to install when missing.
fn build_lib(target: Target, name: &str, source: &str) -> PathBuf {
    let tc = guardlift_aot::Toolchain::find(target).unwrap_or_else(|e| panic!("{e}"));
    let dir = out_dir();
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).expect("write the C source");
    let so = dir.join(format!("{name}.so"));
    let out = Command::new(&tc.cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tc.cc.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        tc.cc.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

/// This machine's architecture (x86_64 or aarch64).
fn host() -> Target {
    Target::host_arch().expect("an x86_64 or aarch64 host")
}

/// The other one (under qemu-user).
fn foreign() -> Target {
    match host() {
        Target::Aarch64 => Target::X86_64,
        _ => Target::Aarch64,
    }
}

struct Libs {
    host: PathBuf,
    host2: PathBuf,
    foreign: PathBuf,
    unloadable: PathBuf,
}

fn libs() -> &'static Libs {
    static L: OnceLock<Libs> = OnceLock::new();
    L.get_or_init(|| Libs {
        host: build_lib(host(), "libone", LIB_C),
        host2: build_lib(host(), "libtwo", LIB2_C),
        foreign: build_lib(foreign(), "libone_foreign", LIB_C),
        unloadable: build_lib(host(), "libunloadable", UNLOADABLE_C),
    })
}

/// `--target` of this machine's architecture (the object path, natively).
fn host_target() -> [&'static str; 2] {
    ["--target", host().name()]
}

/// The engines and targets, with the library each one links.
fn runs() -> Vec<(&'static str, Vec<&'static str>, &'static Path)> {
    let l = libs();
    vec![
        ("jit", vec!["--engine", "jit"], l.host.as_path()),
        ("interp", vec!["--engine", "interp"], l.host.as_path()),
        (host().name(), host_target().to_vec(), l.host.as_path()),
        (
            foreign().name(),
            vec!["--target", foreign().name()],
            l.foreign.as_path(),
        ),
    ]
}

fn run_with(program: &Path, args: &[&str], how: &[&str], links: &[&Path]) -> std::process::Output {
    let mut a: Vec<String> = vec!["run".into(), program.display().to_string()];
    a.extend(args.iter().map(|s| s.to_string()));
    a.extend(how.iter().map(|s| s.to_string()));
    for l in links {
        a.push("--link".into());
        a.push(l.display().to_string());
    }
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    gl(&a)
}

#[test]
fn every_engine_and_target_calls_the_library_alike() {
    let prog = tmp("link_main.glir", PROGRAM.as_bytes());
    let want = "\
24
6.0
1.5
605032704
-5
12
3326.75
-6
";
    for (name, how, lib) in runs() {
        let o = run_with(&prog, &["4"], &how, &[lib]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert_eq!(stdout(&o), want, "{name}");
        assert!(
            !stdout(&o).contains("library's"),
            "{name}: a built-in taken from the library"
        );
        let o = run_with(&prog, &["4", "--json"], &how, &[lib]);
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
        assert_eq!(j["result"], -6, "{name}");
        assert_eq!(j["stdout"], &want[..want.rfind("-6\n").unwrap()], "{name}");
    }
}

#[test]
fn the_first_library_that_defines_a_name_provides_it() {
    let prog = tmp(
        "link_which.glir",
        b"extern fn @which() -> i64\nfn @main() -> i64 {\nentry:\n    %w = call @which()\n    return %w\n}\n",
    );
    let l = libs();
    for how in [["--engine", "jit"], ["--engine", "interp"], host_target()] {
        let o = run_with(&prog, &[], &how, &[&l.host, &l.host2]);
        assert_eq!(stdout(&o), "1\n", "{how:?}: {}", stderr(&o));
        let o = run_with(&prog, &[], &how, &[&l.host2, &l.host]);
        assert_eq!(stdout(&o), "2\n", "{how:?}: {}", stderr(&o));
    }
}

#[test]
fn an_extern_no_library_defines_is_a_link_error() {
    let prog = tmp(
        "link_undefined.glir",
        b"extern fn @add3(i64, i64, i64) -> i64\nextern fn @nowhere(i64) -> i64\nfn @main() -> i64 {\nentry:\n    %z = iconst.i64 1\n    %w = call @nowhere(%z)\n    return %w\n}\n",
    );
    for (name, how, lib) in runs() {
        let o = run_with(&prog, &[], &how, &[lib]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert_eq!(
            stderr(&o).trim_end(),
            format!("{}:2:1: error: undefined symbol @nowhere", prog.display()),
            "{name}"
        );
    }
}

#[test]
fn a_library_that_cannot_be_loaded_is_an_error_naming_it() {
    let prog = tmp("link_main.glir", PROGRAM.as_bytes());
    let l = libs();
    let missing = out_dir().join("no_such_library.so");
    let cases: [(&Path, &str); 3] = [
        (
            &missing,
            "cannot open the library: No such file or directory",
        ),
        (&prog, "not an ELF shared library"),
        (&l.unloadable, "not_defined_anywhere"),
    ];
    for (lib, says) in cases {
        for how in [["--engine", "jit"], ["--engine", "interp"]] {
            let o = run_with(&prog, &["4"], &how, &[lib]);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{how:?} {}: {}",
                lib.display(),
                stderr(&o)
            );
            let e = stderr(&o);
            assert!(e.starts_with(&format!("{}: error: ", lib.display())), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }
    let o = run_with(&prog, &["4"], &host_target(), &[&missing]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot open the library"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_library_for_another_architecture_is_an_error() {
    let prog = tmp("link_main.glir", PROGRAM.as_bytes());
    let l = libs();
    let (h, f) = (host().name(), foreign().name());
    let o = run_with(&prog, &["4"], &["--target", f], &[&l.host]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim_end(),
        format!("{}: error: a library for {h}, not {f}", l.host.display())
    );
    for how in [["--engine", "jit"], ["--engine", "interp"], host_target()] {
        let o = run_with(&prog, &["4"], &how, &[&l.foreign]);
        assert_eq!(o.status.code(), Some(2), "{how:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o).trim_end(),
            format!("{}: error: a library for {f}, not {h}", l.foreign.display())
        );
    }
}

#[test]
fn the_interpreter_refuses_a_signature_beyond_the_argument_registers() {
    let prog = tmp(
        "link_nine.glir",
        b"extern fn @nine(i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i64\nfn @main(%n: i64) -> i64 {\nentry:\n    %r = call @nine(%n, %n, %n, %n, %n, %n, %n, %n, %n)\n    return %r\n}\n",
    );
    let l = libs();
    for how in [["--engine", "jit"], host_target()] {
        let o = run_with(&prog, &["1"], &how, &[&l.host]);
        assert_eq!(stdout(&o), "45\n", "{how:?}: {}", stderr(&o));
    }
    let o = run_with(&prog, &["1"], &["--engine", "interp"], &[&l.host]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.starts_with(&format!(
            "{}:1:1: error: cannot call @nine from the interpreter: 9 integer and 0 float parameter(s)",
            prog.display()
        )),
        "{e}"
    );
}

#[test]
fn a_fault_in_a_library_function_is_a_host_fault_at_the_call() {
    let prog = tmp(
        "link_crash.glir",
        b"extern fn @crash(ptr) -> i64\nextern fn @print_i64(i64)\nfn @inner(%p: ptr) -> i64 {\nentry:\n    %r = call @crash(%p)\n    return %r\n}\nfn @main(%n: i64) -> i64 {\nentry:\n    call @print_i64(%n)\n    %z = iconst.i64 0\n    %r = call @inner(%z)\n    return %r\n}\n",
    );
    let want = "==guardlift== ERROR: host_fault at @inner 5:5 (call)\n    \
                SIGSEGV at address 0x?, pc 0x?\n    \
                in a host function called by this IR call\n    \
                #0 @inner 5:5 (call)\n    \
                #1 @main 12:5 (call)\n    \
                seen 1 time(s)\n";
    for (name, how, lib) in runs() {
        let o = run_with(&prog, &["7"], &how, &[lib]);
        assert!(exit_134(&o), "{name}: {:?} {}", o.status, stderr(&o));
        assert_eq!(stdout(&o), "7\n", "{name}");
        assert_eq!(mask_hex(&stderr(&o)), want, "{name}");
        let o = run_with(&prog, &["7", "--json"], &how, &[lib]);
        assert!(exit_134(&o), "{name}: {:?} {}", o.status, stderr(&o));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
        let r = &j["reports"][0];
        assert_eq!(r["kind"], "host_fault", "{name}: {j}");
        assert_eq!(
            (&r["function"], &r["line"], &r["op"]),
            (&"inner".into(), &5.into(), &"call".into())
        );
        assert_eq!(r["in_host"], true, "{name}");
        assert_eq!(r["address"], "0x0", "{name}");
    }
}
