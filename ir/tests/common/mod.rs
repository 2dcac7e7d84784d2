//! Helpers shared by ir's data-driven tests: the `.glir` cases of a
//! directory under `ir/tests/`, parsed and verified.

use guardlift_ir::Module;
use std::path::{Path, PathBuf};

/// Every `.glir` file of `ir/tests/<dir>`: its path, its text and the
/// module it parses and verifies to (a case that does not is a failure).
pub fn glir_cases(dir: &str) -> Vec<(PathBuf, String, Module)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "glir") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let m = guardlift_ir::parse_and_verify(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        cases.push((path, text, m));
    }
    cases
}
