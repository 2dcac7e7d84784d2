//! What the JIT tells profilers and debuggers (`guardlift_jit::debuginfo`):
//! the jitdump file's records and the GDB JIT interface's list, registered
//! with the module and withdrawn before its code is freed. The real `perf`
//! and `gdb` run against them in `cli/tests/profiling.rs`.

mod common;
use common::*;
use guardlift_jit::debuginfo::{gdb, jitdump};
use guardlift_jit::{CompileOptions, Jit};
use guardlift_runtime::JitDebug;

const ADD: &str = "fn @add(%a: i64, %b: i64) -> i64 {
entry:
    %c = iadd %a, %b
    return %c
}
";

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}
fn cstr(b: &[u8], at: usize) -> String {
    let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
    String::from_utf8_lossy(&b[at..end]).into_owned()
}

/// One test: the jitdump file and the GDB list are process-wide.
#[test]
fn jitdump_records_and_gdb_registration_follow_the_module() {
    let dir = std::env::temp_dir().join(format!("guardlift-jitdump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The only test of this binary: no other thread reads the environment.
    std::env::set_var("JITDUMPDIR", &dir);
    let rt = recover_rt();
    let off = compile(ADD, &rt);
    assert_eq!(gdb::registered_count(), 0, "gdb off: nothing registered");
    assert_eq!(jitdump::current_path(), None, "jitdump off: no file");
    drop(off);

    let on = JitDebug {
        perfmap: false,
        jitdump: true,
        gdb: true,
    };
    let opts = CompileOptions::default()
        .with_debug(on)
        .with_source_file("add.glir");
    let m = Jit::compile(&parse(ADD), rt.clone(), &opts).unwrap();
    assert_eq!(gdb::registered_count(), 1);
    // The dynamic call's trampoline is registered when it is compiled.
    assert_eq!(call(&m, "add", &[2, 3]), Some(5));
    assert_eq!(gdb::registered_count(), 2);
    let m2 = Jit::compile(&parse(ADD), rt.clone(), &opts).unwrap();
    assert_eq!(gdb::registered_count(), 3);
    drop(m);
    assert_eq!(gdb::registered_count(), 1, "unregistered with its module");
    drop(m2);
    assert_eq!(gdb::registered_count(), 0);

    let path = jitdump::current_path().expect("a jitdump file");
    assert_eq!(path, dir.join(format!("jit-{}.dump", std::process::id())));
    let b = std::fs::read(&path).unwrap();
    assert_eq!(u32_at(&b, 0), 0x4A69_5444, "magic");
    assert_eq!(u32_at(&b, 4), 1, "version");
    assert_eq!(u32_at(&b, 8), 40, "header size");
    assert_eq!(u32_at(&b, 20), std::process::id());
    let mut at = 40;
    let mut loads = Vec::new();
    let mut lines = Vec::new();
    while at < b.len() {
        let (id, size) = (u32_at(&b, at), u32_at(&b, at + 4) as usize);
        let body = at + 16;
        match id {
            0 => {
                let addr = u64_at(&b, body + 16);
                let len = u64_at(&b, body + 24) as usize;
                let name = cstr(&b, body + 40);
                assert_eq!(size, 16 + 40 + name.len() + 1 + len, "{name}");
                loads.push((name, addr, len));
            }
            2 => {
                let n = u64_at(&b, body + 8) as usize;
                let mut e = body + 16;
                for _ in 0..n {
                    let line = u32_at(&b, e + 8);
                    let file = cstr(&b, e + 16);
                    lines.push((line, file.clone()));
                    e += 16 + file.len() + 1;
                }
                assert_eq!(e, at + size);
            }
            other => panic!("unexpected record {other}"),
        }
        at += size;
    }
    assert_eq!(at, b.len(), "whole records");
    let names: Vec<&str> = loads.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "guardlift:@add",
            "guardlift:[trampoline @add]",
            "guardlift:@add"
        ],
        "{loads:?}"
    );
    assert!(loads.iter().all(|(_, a, l)| *a > 0 && *l > 0));
    assert!(
        lines
            .iter()
            .any(|(l, f)| *l == 3 && f.ends_with("/add.glir")),
        "{lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
