//! Compiled code's memory lives exactly as long as a handle to it: 10 000
//! compile/drop cycles (with typed handles outliving the module value) run
//! under valgrind with no invalid access and no definite leak.

use std::path::PathBuf;
use std::process::Command;

fn target_dir() -> PathBuf {
    // target/<profile>/deps/<this test> → target/<profile>
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|p| p.parent()).unwrap().to_path_buf()
}

#[test]
fn ten_thousand_compile_drop_cycles_under_valgrind() {
    let release = !cfg!(debug_assertions);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    // The workspace's examples, not `-p guardlift-jit`: the same features
    // as the workspace's test build, so nothing is compiled again.
    build.args(["build", "-q", "--workspace", "--lib", "--examples"]);
    if release {
        build.arg("--release");
    }
    let st = build.status().expect("run cargo");
    assert!(st.success(), "building the cycles example failed");
    let exe = target_dir().join("examples/cycles");
    assert!(exe.exists(), "{} missing", exe.display());
    // Debug builds of Cranelift are slow under valgrind: fewer cycles there.
    let cycles = if release { "10000" } else { "500" };
    let out = Command::new("valgrind")
        .args([
            "-q",
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(&exe)
        .arg(cycles)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run valgrind ({e}): install it with `apt-get install valgrind`")
        });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "valgrind found errors:\n{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("{cycles} compile/drop cycles ok"))
    );
}
