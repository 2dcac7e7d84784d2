//! Object files for x86_64 and aarch64, and the clif/asm text of
//! `emit`. Linking an x86_64 object needs a C compiler: without one the test
//! fails saying what to install.

mod common;
use common::*;
use guardlift_jit::{emit_asm, emit_clif, emit_object, EmitOptions, Target};

const PROGRAM: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @host_thing(i64) -> i64
fn @main(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    %z = iconst.i64 0
    jump l(%z)
l(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done
body:
    guard.store_attr %o, 0, %i
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump l(%i2)
done:
    %v = guard.load_attr %o, 0
    %h = call @host_thing(%v)
    %s = call @helper(%h)
    return %s
}
; The second push overflows (capacity 1): its check stays (the first's
; cannot fail and is not emitted, ir/src/analysis/adbound.rs).
fn @helper(%x: i64) -> i64 {
entry:
    %s = adstack.alloc.f64 1
    %f = fcvt_from_sint.f64 %x
    guard.adstack.push %s, %f
    guard.adstack.push %s, %f
    %n = adstack.len %s
    return %n
}
"#;

const PLAIN: &str = r#"
extern fn @obj_new(i64) -> ptr
fn @plain(%n: i64) -> i64 {
entry:
    %o = call @obj_new(%n)
    store_attr %o, 0, %n
    %v = load_attr %o, 0
    %w = dict_slot.load %o
    dict_slot.store %o, %w
    %s = adstack.alloc.i64 2
    adstack.push %s, %v
    %t = adstack.top %s
    adstack.pop %s
    store %t, %o, 8
    return %t
}
"#;

fn elf_machine(bytes: &[u8]) -> u16 {
    assert!(bytes.len() > 64, "object too small: {} bytes", bytes.len());
    assert_eq!(&bytes[..4], b"\x7fELF", "ELF magic");
    assert_eq!(bytes[4], 2, "ELFCLASS64");
    assert_eq!(bytes[5], 1, "little endian");
    assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 1, "ET_REL");
    u16::from_le_bytes([bytes[18], bytes[19]])
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The host and every cross target.
const TARGETS: [Target; 3] = [Target::Host, Target::X86_64, Target::Aarch64];
#[test]
fn objects_for_every_target() {
    let m = parse(PROGRAM);
    for (target, machine) in [(Target::X86_64, 62u16), (Target::Aarch64, 183u16)] {
        let bytes = emit_object(&m, target, &EmitOptions::default()).unwrap();
        assert_eq!(elf_machine(&bytes), machine, "{target}");
        for sym in [
            "main",
            "helper",
            "gl_obj_new",
            "host_thing",
            "gl_report_dict",
            "gl_report_adstack",
            "gl_load_attr_slow",
            "gl_store_attr_slow",
            "guardlift_runtime",
        ] {
            assert!(
                contains(&bytes, sym),
                "{target}: symbol {sym} in the object"
            );
        }
    }
    // Uninstrumented: no report entry points referenced at all.
    let bytes = emit_object(&parse(PLAIN), Target::X86_64, &EmitOptions::default()).unwrap();
    assert!(
        !contains(&bytes, "gl_report"),
        "uninstrumented object references a report entry"
    );
    assert!(!contains(&bytes, "gl_clobber_check"));
    assert!(!contains(&bytes, "gl_note_slot_write"));
    assert!(!contains(&bytes, "gl_watch"));
    // The host target works too.
    let host = emit_object(&m, Target::Host, &EmitOptions::default()).unwrap();
    assert_eq!(&host[..4], b"\x7fELF");
}

#[test]
fn clif_text_names_functions_and_guards() {
    let m = parse(PROGRAM);
    for target in TARGETS {
        let clif = emit_clif(&m, target, &EmitOptions::default()).unwrap();
        assert!(clif.contains("function %main("), "{clif}");
        assert!(clif.contains("function %helper("), "{clif}");
        assert!(clif.contains("gl_report_dict"), "{clif}");
        assert!(clif.contains("gl_report_adstack"));
        assert!(
            clif.contains("cold"),
            "guard failure blocks are cold:\n{clif}"
        );
        assert!(clif.contains("guardlift_runtime"));
    }
    let plain = emit_clif(&parse(PLAIN), Target::X86_64, &EmitOptions::default()).unwrap();
    assert!(plain.contains("function %plain("));
    assert!(!plain.contains("gl_report"), "{plain}");
    assert!(!plain.contains("gl_clobber"), "{plain}");
    // No report stubs (the attribute slow paths are cold blocks, but not guards).
    assert!(!plain.contains("preserve_all"), "{plain}");
    assert!(!plain.contains("trap user"), "{plain}");
}

#[test]
fn asm_text_for_host_and_targets() {
    let m = parse(PROGRAM);
    for target in TARGETS {
        let asm = emit_asm(&m, target, &EmitOptions::default()).unwrap();
        assert!(asm.contains("@main:"), "{asm}");
        assert!(asm.contains("@helper:"), "{asm}");
        assert!(asm.lines().count() > 20, "{asm}");
    }
    let x = emit_asm(&m, Target::X86_64, &EmitOptions::default()).unwrap();
    assert!(x.contains("ret"), "{x}");
    let a = emit_asm(&m, Target::Aarch64, &EmitOptions::default()).unwrap();
    assert!(a.contains("ret"), "{a}");
}

/// The report stubs are `preserve_all` on every target
/// (`REPORT_STUB_CONV` in `jit/src/lower/stubs.rs`).
#[test]
fn report_stub_convention_per_target() {
    let m = parse(PROGRAM);
    for target in [Target::X86_64, Target::Aarch64] {
        let clif = emit_clif(&m, target, &EmitOptions::default()).unwrap();
        let conv = "stub(preserve_all) -> gl_report_dict";
        assert!(clif.contains(conv), "{target}: {clif}");
    }
}

#[test]
fn targets_parse() {
    assert_eq!(Target::parse("x86_64").unwrap(), Target::X86_64);
    assert_eq!(
        Target::parse("aarch64-unknown-linux-gnu").unwrap(),
        Target::Aarch64
    );
    assert_eq!(Target::parse("host").unwrap(), Target::Host);
    // riscv64 was retired with the C runtime twin (docs/TARGETS.md).
    for s in [
        "mips64",
        "riscv64",
        "riscv64gc",
        "riscv64gc-unknown-linux-gnu",
    ] {
        let e = Target::parse(s).unwrap_err().to_string();
        assert!(e.contains(s), "{e}");
        assert!(e.contains("expected host, x86_64 or aarch64"), "{e}");
    }
}

#[test]
fn emit_checks_externs_like_the_jit_would_not() {
    // Object files leave non-built-in externs to the linker, but a built-in
    // declared with the wrong signature is still an error.
    let m = parse("extern fn @sin(i64) -> i64\nfn @main() {\nentry:\n    return\n}\n");
    let e = emit_object(&m, Target::X86_64, &EmitOptions::default()).unwrap_err();
    assert!(e.to_string().starts_with("1:1: extern @sin"), "{e}");
    assert!(
        e.with_file("m.glir")
            .starts_with("m.glir:1:1: error: extern @sin"),
        "{e}"
    );
}

/// One function using every op, for both targets' code generators.
const ALL_OPS: &str = r#"
extern fn @obj_new(i64) -> ptr
extern fn @obj_dictify(ptr)
extern fn @sin(f64) -> f64
extern fn @print_f64(f64)
fn @all(%a: i64, %b: i32, %c: i8, %x: f64, %y: f32, %p: ptr) -> i64 {
entry:
    %k = iconst.i64 3
    %s1 = iadd %a, %k
    %s2 = isub %s1, %a
    %s3 = imul %s2, %k
    %s4 = band %s3, %a
    %s5 = bor %s4, %k
    %s6 = bxor %s5, %a
    %s7 = ishl %s6, %c
    %s8 = ushr %s7, %b
    %s9 = sshr %s8, %k
    %b2 = iadd %b, %b
    %b3 = ishl %b2, %b
    %c2 = imul %c, %c
    %c3 = sshr %c2, %c
    %i1 = icmp.ult %s9, %a
    %f1 = fadd %x, %x
    %f2 = fsub %f1, %x
    %f3 = fmul %f2, %x
    %f4 = fdiv %f3, %x
    %f5 = fmin %f4, %x
    %f6 = fmax %f5, %x
    %f7 = fneg %f6
    %f8 = fabs %f7
    %f9 = fsqrt %f8
    %g1 = fadd %y, %y
    %g2 = fmin %g1, %y
    %g3 = fsqrt %g2
    %fc = fcmp.ne %f9, %x
    %fc2 = fcmp.le %g3, %y
    %sel = select %fc, %s9, %a
    %sel2 = select %fc2, %x, %f9
    %w1 = sext.i64 %c3
    %w2 = uext.i64 %b3
    %w3 = ireduce.i8 %w2
    %w4 = fcvt_from_sint.f64 %w3
    %w5 = fcvt_from_sint.f32 %a
    %w6 = fcvt_to_sint.i8 %sel2
    %w7 = fcvt_to_sint.i32 %g3
    %w8 = fcvt_to_sint.i64 %w4
    %w9 = fpromote.f64 %w5
    %wa = fdemote.f32 %w9
    %wb = bitcast.i64 %w9
    %wc = bitcast.i32 %wa
    %wd = bitcast.f64 %p
    %l1 = load.i64 %p, 8
    store %l1, %p, 16
    store %c, %p, 3
    store %y, %p, -4
    guard.store %x, %p, 24
    %o = call @obj_new(%k)
    %dw = guard.dict_slot.load %o
    guard.dict_slot.store %o, %dw
    %la = guard.load_attr %o, 2
    guard.store_attr %o, 2, %la
    guard.watch %o
    call @obj_dictify(%o)
    %sn = call @sin(%wd)
    call @print_f64(%sn)
    %st = adstack.alloc.f32 8
    guard.adstack.push %st, %y
    guard.adstack.acc_adj %st, %y
    %tp = guard.adstack.top %st
    %ta = guard.adstack.top_adj %st
    guard.adstack.pop %st
    %ln = adstack.len %st
    %big = adstack.alloc.i64 1048576
    adstack.push %big, %ln
    jump out(%i1, %w6, %w7, %w8, %wb, %wc, %sel, %w1, %ln)
out(%q1: i8, %q2: i8, %q3: i32, %q4: i64, %q5: i64, %q6: i32, %q7: i64, %q8: i64, %q9: i64):
    %r1 = sext.i64 %q1
    %r2 = sext.i64 %q2
    %r3 = sext.i64 %q3
    %r6 = sext.i64 %q6
    %t1 = iadd %r1, %r2
    %t2 = iadd %t1, %r3
    %t3 = iadd %t2, %q4
    %t4 = iadd %t3, %q5
    %t5 = iadd %t4, %r6
    %t6 = iadd %t5, %q7
    %t7 = iadd %t6, %q8
    %t8 = iadd %t7, %q9
    brif %q1, yes, no
yes:
    return %t8
no:
    %rr = call @all(%a, %b, %c, %x, %y, %p)
    return %rr
}
"#;

#[test]
fn every_op_compiles_for_every_target() {
    let m = parse(ALL_OPS);
    for target in [Target::X86_64, Target::Aarch64] {
        for opt_level in [
            guardlift_jit::OptLevel::None,
            guardlift_jit::OptLevel::Speed,
        ] {
            let opts = EmitOptions {
                opt_level,
                ..Default::default()
            };
            let bytes = emit_object(&m, target, &opts).unwrap_or_else(|e| panic!("{target}: {e}"));
            assert!(bytes.len() > 1000);
        }
    }
    // And it JIT-compiles on the host.
    compile(ALL_OPS, &recover_rt());
}

/// Links an x86_64 object with a C harness that stands in for the runtime,
/// and runs it: the object's relocations, exports and imports are real.
#[test]
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    ignore = "links and runs an x86_64 Linux object: needs an x86_64 Linux host"
)]
fn x86_64_object_links_and_runs() {
    let cc = which_cc();
    let m = parse(
        r#"
extern fn @sin(f64) -> f64
extern fn @obj_new(i64) -> ptr
extern fn @twice(i64) -> i64
fn @calc(%n: i64) -> i64 {
entry:
    %z = iconst.i64 0
    jump l(%z, %z)
l(%i: i64, %acc: i64):
    %c = icmp.slt %i, %n
    brif %c, body, done
body:
    %t = call @twice(%i)
    %acc2 = iadd %acc, %t
    %one = iconst.i64 1
    %i2 = iadd %i, %one
    jump l(%i2, %acc2)
done:
    %x = fconst.f64 0.0
    %s = call @sin(%x)
    %si = fcvt_to_sint.i64 %s
    %r = iadd %acc, %si
    return %r
}
fn @guarded(%o: ptr) -> i64 {
entry:
    %v = guard.load_attr %o, 0
    return %v
}
"#,
    );
    let obj = emit_object(
        &m,
        Target::X86_64,
        &EmitOptions {
            site_base: 40,
            ..Default::default()
        },
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("guardlift-jit-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o_path = dir.join("prog.o");
    let c_path = dir.join("harness.c");
    let exe = dir.join("prog");
    std::fs::write(&o_path, obj).unwrap();
    std::fs::write(
        &c_path,
        r#"
#include <stdio.h>
#include <stdint.h>
#include <math.h>
char guardlift_runtime[64];
/* The values array after its capacity word (spec §4). */
static int64_t block[5] = {4, 123, 0, 0, 0};
static int64_t *const values = block + 1;
static int live_checks;
/* cpython312: the slot is 24 bytes before the object */
struct { int64_t slot; int64_t pad[2]; int64_t body[2]; } object;
double gl_sin(double x) { return sin(x); }
int64_t twice(int64_t x) { return 2 * x; }
uint64_t gl_obj_new(void *rt, int64_t n) { return 0; }
int64_t gl_load_attr_slow(void *rt, uint64_t o, uint64_t i) { return -1; }
uint32_t gl_report_dict(void *rt, uint32_t site, uint64_t obj, uint64_t word) {
    printf("report rt_ok=%d site=%u obj_ok=%d word=%#llx\n", rt == guardlift_runtime, site,
           obj == (uint64_t)&object.body, (unsigned long long)word);
    return 0;
}
/* The hand-written guard is every applicable check: lifetime and bounds too. */
uint8_t gl_check_live(void *rt, uint64_t obj, uint32_t site) {
    live_checks += rt == guardlift_runtime && obj == (uint64_t)&object.body && site == 40;
    return 1;
}
uint32_t gl_report_bounds(void *rt, uint32_t site, uint64_t obj, uint64_t i, uint64_t cap) {
    printf("bounds report\n");
    return 0;
}
/* The lifetime test of the values array's header: nothing was released. */
uint8_t gl_check_mem(void *rt, uint64_t addr, uint32_t width, uint32_t site) { return 1; }
/* The bounds check by the recorded capacity (4, the array's record). */
uint8_t gl_check_bounds(void *rt, uint32_t site, uint64_t obj, uint64_t v, uint64_t i) {
    if (v == (uint64_t)(block + 1) && i < 4) return 1;
    printf("bounds report\n");
    return 0;
}
int64_t calc(int64_t);
int64_t guarded(uint64_t);
int main(void) {
    printf("calc=%lld\n", (long long)calc(10));
    object.slot = (int64_t)values - 1;          /* values-tagged */
    printf("fast=%lld\n", (long long)guarded((uint64_t)&object.body));
    object.slot = (int64_t)values - 2;          /* corrupted: low bits 0b110 */
    printf("bad=%lld\n", (long long)guarded((uint64_t)&object.body));
    printf("live_checks=%d\n", live_checks);
    return 0;
}
"#,
    )
    .unwrap();
    let st = std::process::Command::new(&cc)
        .args([
            c_path.to_str().unwrap(),
            o_path.to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
            "-lm",
        ])
        .status()
        .unwrap();
    assert!(st.success(), "linking failed");
    let out = std::process::Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "calc=90");
    assert_eq!(lines[1], "fast=123");
    assert!(
        lines[2].starts_with("report rt_ok=1 site=40 obj_ok=1 word=0x"),
        "{text}"
    );
    assert!(
        lines[2].ends_with('e') || lines[2].ends_with('6'),
        "the corrupted word ends in 0b110: {text}"
    );
    assert_eq!(lines[3], "bad=0");
    // Object files check liveness at every guarded access (no epoch cache).
    assert_eq!(lines[4], "live_checks=2", "{text}");
}

/// The host C compiler; the test fails (it does not skip) without one.
fn which_cc() -> String {
    ["cc", "gcc", "clang"]
        .into_iter()
        .find(|cc| {
            std::process::Command::new(cc)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(str::to_string)
        .expect("no C compiler (cc, gcc or clang) found: install one, e.g. `apt-get install gcc`")
}

/// A block entered by one edge gets no Cranelift params: its params are
/// the branch's arguments (`FnLower::plan_forwarding`). The entry, a loop
/// header (two edges) and a block both edges of one `brif` go to keep
/// theirs.
#[test]
fn single_edge_blocks_take_the_branch_arguments() {
    let m = parse(
        r#"
fn @f(%n: i64) -> i64 {
entry:
    %z = iconst.i64 0
    jump l(%z)
l(%i: i64):
    %c = icmp.slt %i, %n
    brif %c, body(%i), done(%i)
body(%b: i64):
    %one = iconst.i64 1
    %i2 = iadd %b, %one
    jump l(%i2)
done(%d: i64):
    %c2 = icmp.slt %d, %n
    brif %c2, twice(%d), twice(%n)
twice(%t: i64):
    return %t
}
"#,
    );
    let clif = emit_clif(&m, Target::X86_64, &EmitOptions::default()).unwrap();
    let headers: Vec<&str> = (clif.lines())
        .map(str::trim)
        .filter(|l| l.starts_with("block") && l.ends_with(':'))
        .collect();
    let with_params = headers.iter().filter(|l| l.contains('(')).count();
    assert_eq!(headers.len(), 5, "{clif}");
    assert_eq!(with_params, 3, "entry, l and twice keep params:\n{clif}");
}
