//! Faults in registered code (issue 16): an illegal instruction that is not
//! a guard's trap is a `host_fault` report, placed at its IR site, with the
//! IR call chain as its backtrace; a guard's trap instruction stays trap
//! mode's report. Each case runs in a child process (this test binary
//! re-executed with `GUARDLIFT_FAULTS_CHILD=<case>`), since the handler
//! ends the process.
// Hand-assembled code for each architecture guardlift's fault handler
// reads the ucontext of (x86_64, aarch64).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

use guardlift_runtime::codemap::{enter_compiled_code, CodeFunction, PcLoc};
use guardlift_runtime::internals::*;
use guardlift_runtime::{ReportKind, Runtime, RuntimeConfig, SiteInfo, TrapSite};
use std::process::Output;

mod common;

const CHILD: &str = "GUARDLIFT_FAULTS_CHILD";

/// `@outer` (offset 0) calls `@inner` (offset 16), which executes `ud2`
/// inside a frame record, as Cranelift's code does:
///
/// ```text
///  0: push rbp; mov rbp, rsp       @outer line 2
///  4: call inner                   @outer line 3 (call)
///  9: pop rbp; ret
/// 16: push rbp; mov rbp, rsp       @inner line 7
/// 20: ud2                          @inner line 8 (load)
/// 22: ud2                          (a guard's trap in case `guard`)
/// ```
#[cfg(target_arch = "x86_64")]
const CODE: [u8; 24] = [
    0x55, 0x48, 0x89, 0xe5, 0xe8, 0x07, 0x00, 0x00, 0x00, 0x5d, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90,
    0x55, 0x48, 0x89, 0xe5, 0x0f, 0x0b, 0x0f, 0x0b,
];
/// Where `@inner` starts, where the faulting instruction is, where the
/// other trap instruction is, and `@outer`'s call (start, end).
#[cfg(target_arch = "x86_64")]
const LAYOUT: Layout = Layout {
    inner: 16,
    ud2: 20,
    other: 22,
    call: (4, 9),
};

/// The same on aarch64, with the frame record of AAPCS64 (x29, x30):
///
/// ```text
///  0: stp x29, x30, [sp, #-16]!; mov x29, sp   @outer line 2
///  8: bl inner                                  @outer line 3 (call)
/// 12: ldp x29, x30, [sp], #16; ret; nop
/// 24: stp x29, x30, [sp, #-16]!; mov x29, sp   @inner line 7
/// 32: udf #0                                   @inner line 8 (load)
/// 36: udf #0                                   (a guard's trap in case `guard`)
/// ```
#[cfg(target_arch = "aarch64")]
const CODE: [u8; 40] = words([
    0xa9bf7bfd, 0x910003fd, 0x94000004, 0xa8c17bfd, 0xd65f03c0, 0xd503201f, 0xa9bf7bfd, 0x910003fd,
    0x00000000, 0x00000000,
]);
#[cfg(target_arch = "aarch64")]
const LAYOUT: Layout = Layout {
    inner: 24,
    ud2: 32,
    other: 36,
    call: (8, 12),
};

/// Instruction words as little-endian bytes.
#[cfg(target_arch = "aarch64")]
const fn words<const N: usize, const B: usize>(w: [u32; N]) -> [u8; B] {
    let mut out = [0u8; B];
    let mut i = 0;
    while i < N {
        let b = w[i].to_le_bytes();
        out[4 * i] = b[0];
        out[4 * i + 1] = b[1];
        out[4 * i + 2] = b[2];
        out[4 * i + 3] = b[3];
        i += 1;
    }
    out
}

/// Offsets in [`CODE`].
struct Layout {
    inner: usize,
    ud2: usize,
    other: usize,
    call: (u32, u32),
}

fn loc(start: u32, end: u32, line: u32, op: &'static str) -> PcLoc {
    PcLoc {
        start,
        end,
        line,
        col: 5,
        op,
    }
}

/// Maps [`CODE`] executable and returns its address.
fn map_code() -> usize {
    // SAFETY: a fresh anonymous mapping, filled (on aarch64 its range then
    // cleaned from the caches, as the JIT does), then made read+execute.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        std::ptr::copy_nonoverlapping(CODE.as_ptr(), p.cast::<u8>(), CODE.len());
        // aarch64's instruction fetch does not see data writes until the
        // caches are cleaned and invalidated (libgcc's __clear_cache).
        #[cfg(target_arch = "aarch64")]
        {
            extern "C" {
                fn __clear_cache(start: *mut libc::c_char, end: *mut libc::c_char);
            }
            let start = p.cast::<libc::c_char>();
            __clear_cache(start, start.add(CODE.len()));
        }
        assert_eq!(
            libc::mprotect(p, 4096, libc::PROT_READ | libc::PROT_EXEC),
            0
        );
        p as usize
    }
}

fn child(case: &str) -> ! {
    let rt = Runtime::new(RuntimeConfig::default());
    let options = guardlift_runtime::Options {
        json: case == "json",
        ..Default::default()
    };
    rt.configure(&options).unwrap();
    let base = map_code();
    let funcs = vec![
        CodeFunction {
            start: base,
            len: LAYOUT.inner,
            function: "outer".into(),
            locs: vec![
                loc(0, LAYOUT.call.0, 2, "iconst"),
                loc(LAYOUT.call.0, LAYOUT.call.1, 3, "call"),
            ],
            instrumented: false,
        },
        CodeFunction {
            start: base + LAYOUT.inner,
            len: CODE.len() - LAYOUT.inner,
            function: "inner".into(),
            locs: vec![
                loc(0, (LAYOUT.ud2 - LAYOUT.inner) as u32, 7, "iconst"),
                loc(
                    (LAYOUT.ud2 - LAYOUT.inner) as u32,
                    (CODE.len() - LAYOUT.inner) as u32,
                    8,
                    "load",
                ),
            ],
            instrumented: false,
        },
    ];
    let _code = rt.register_code(funcs).unwrap();
    // `guard`: the faulting ud2 is a registered guard trap; `other_guard`:
    // trap mode's handler is installed, for another instruction.
    let trap_pc = match case {
        "guard" => Some(base + LAYOUT.ud2),
        "other_guard" => Some(base + LAYOUT.other),
        _ => None,
    };
    let _traps = trap_pc.map(|pc| {
        let info = SiteInfo {
            function: "inner".into(),
            line: 8,
            col: 5,
            op: "adstack.push".into(),
        };
        let site = TrapSite {
            pc,
            site: 0,
            kind: ReportKind::AdstackOverflow,
            info,
        };
        rt.register_trap_sites(vec![site]).unwrap()
    });
    let _entry = enter_compiled_code();
    // SAFETY: `base` is the mapped `@outer`, a plain C-ABI function (System V, AAPCS64).
    let outer: extern "C" fn() = unsafe { std::mem::transmute(base) };
    outer();
    unreachable!("the trap instruction ends the process")
}

fn run(case: &str) -> Output {
    common::target_command(std::env::current_exe().unwrap())
        .args(["--exact", "illegal_instructions", "--nocapture"])
        .env(CHILD, case)
        .output()
        .unwrap()
}

fn aborted(o: &Output) -> bool {
    use std::os::unix::process::ExitStatusExt;
    o.status.signal() == Some(libc::SIGABRT)
}

#[test]
fn illegal_instructions() {
    if let Ok(case) = std::env::var(CHILD) {
        child(&case);
    }
    for case in ["plain", "other_guard"] {
        let o = run(case);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(aborted(&o), "{case}: {:?}\n{err}", o.status);
        assert!(
            err.contains("==guardlift== ERROR: host_fault at @inner 8:5 (load)"),
            "{case}: {err}"
        );
        assert!(err.contains("    SIGILL at address 0x"), "{case}: {err}");
        // The backtrace: the site, then the IR call chain from the frame records.
        assert!(
            err.contains("    #0 @inner 8:5 (load)\n    #1 @outer 3:5 (call)\n    seen 1 time(s)"),
            "{case}: {err}"
        );
        assert!(!err.contains("adstack_overflow"), "{case}: {err}");
    }
    // As a JSON line: the backtrace field holds the same frames.
    let o = run("json");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(aborted(&o), "json: {:?}\n{err}", o.status);
    let j: serde_json::Value = err
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line: {err}"));
    assert_eq!(j["kind"], "host_fault", "{j}");
    assert_eq!(j["signal"], "SIGILL", "{j}");
    assert_eq!(
        j["backtrace"],
        serde_json::json!(["@inner 8:5 (load)", "@outer 3:5 (call)"]),
        "{j}"
    );
    let o = run("guard");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(aborted(&o), "guard: {:?}\n{err}", o.status);
    assert!(
        err.contains("ERROR: adstack_overflow at @inner 8:5 (adstack.push)"),
        "a guard's trap is trap mode's report: {err}"
    );
    assert!(!err.contains("host_fault"), "{err}");
}
