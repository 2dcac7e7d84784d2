//! The layering issue 14 asks for, checked on the manifests: the contract
//! crate depends on no guardlift crate, and the IR crate on none but it.

use std::path::Path;

/// The `guardlift-*` crates a manifest depends on, in any dependency table
/// (normal, dev, build, per target).
fn guardlift_deps(crate_dir: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut in_deps = false;
    let mut deps = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(section) = line.strip_prefix('[') {
            in_deps = section.trim_end_matches(']').ends_with("dependencies");
            continue;
        }
        if !in_deps {
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        if key.starts_with("guardlift") {
            deps.push(key.to_string());
        }
    }
    deps
}

#[test]
fn abi_is_a_leaf() {
    assert_eq!(guardlift_deps("abi"), Vec::<String>::new());
}

#[test]
fn ir_depends_on_abi_only() {
    assert_eq!(guardlift_deps("ir"), vec!["guardlift-abi".to_string()]);
}

#[test]
fn the_manifest_reader_sees_dependencies() {
    // The runtime depends on the contract crate: a reader that found
    // nothing would make the two tests above pass vacuously.
    assert!(guardlift_deps("runtime").contains(&"guardlift-abi".to_string()));
    assert!(guardlift_deps("jit").contains(&"guardlift-runtime".to_string()));
}
