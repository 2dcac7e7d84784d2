//! The Rust runtime library as `run --target` links it: the toolchain
//! carries the checked library, programs link a stripped cached copy, and
//! a program linked with it talks the line protocol.

use guardlift_aot::toolchain::link_copy_in;
use guardlift_aot::{target_rt, Toolchain};
use guardlift_jit::Target;

#[test]
fn every_target_links_the_rust_runtime() {
    for t in [Target::X86_64, Target::Aarch64] {
        let tc = Toolchain::find(t).unwrap_or_else(|e| panic!("{e}"));
        let lib = tc.runtime;
        // The copy it links is a checked library for the target.
        let rt = target_rt::check(&lib, t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(rt.stamp, guardlift_abi::ABI_STAMP);
    }
}

#[test]
fn the_linked_copy_is_stripped_cached_and_still_checked() {
    let t = Target::X86_64;
    let lib = target_rt::find(t).unwrap_or_else(|e| panic!("{e}")).path;
    let dir = std::env::temp_dir().join(format!("guardlift-rt-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cc = std::path::Path::new("cc");
    let copy = link_copy_in(Some(&dir), cc, &lib, t).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(copy, lib, "a copy is made in the cache");
    assert!(copy.starts_with(&dir), "{}", copy.display());
    let (full, small) = (
        std::fs::metadata(&lib).unwrap().len(),
        std::fs::metadata(&copy).unwrap().len(),
    );
    assert!(small < full, "stripped: {small} < {full}");
    target_rt::check(&copy, t).unwrap_or_else(|e| panic!("{e}"));
    // Made once: the second call finds it.
    let t0 = std::fs::metadata(&copy).unwrap().modified().unwrap();
    assert_eq!(link_copy_in(Some(&dir), cc, &lib, t).unwrap(), copy);
    assert_eq!(std::fs::metadata(&copy).unwrap().modified().unwrap(), t0);
    // A copy that does not pass the check is made again.
    std::fs::write(&copy, b"not an archive").unwrap();
    assert_eq!(link_copy_in(Some(&dir), cc, &lib, t).unwrap(), copy);
    target_rt::check(&copy, t).unwrap_or_else(|e| panic!("{e}"));
    // No cache: the library itself.
    assert_eq!(link_copy_in(None, cc, &lib, t).unwrap(), lib);
    // A library that is not one is refused, never copied.
    let junk = dir.join("junk.a");
    std::fs::write(&junk, b"!<arch>\n").unwrap();
    let e = link_copy_in(Some(&dir), cc, &junk, t)
        .unwrap_err()
        .to_string();
    assert!(e.contains("scripts/build-target-rt x86_64"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_command_line_is_an_error_not_a_crash() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/examples/tagflip.glir"
    );
    let text = std::fs::read_to_string(path).expect("../shared/examples beside the repository");
    let m = guardlift_ir::parse_and_verify(&text).unwrap();
    let b = guardlift_aot::build(&m, "main", Target::X86_64, guardlift_runtime::Mode::Recover)
        .unwrap_or_else(|e| panic!("{e}"));
    let exe = b.executable();
    for (args, want) in [
        (&["frob", "0"][..], "unknown mode frob"),
        (&["recover"][..], "usage: "),
        (&["recover", "zz"][..], "bad number zz"),
        (&["recover", "0", "12g"][..], "bad number 12g"),
    ] {
        let out = std::process::Command::new(exe).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // The good one runs (uninstrumented, the corruption is a host fault:
    // an `F` line and SIGABRT).
    let out = std::process::Command::new(exe)
        .args(["recover", "0", "a"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("F ")), "{stdout}");
}
