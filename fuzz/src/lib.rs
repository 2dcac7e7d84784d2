//! guardlift's fuzzing library: the module generator, the bodies of the
//! cargo-fuzz targets in `fuzz_targets/`, and what stable `cargo test`
//! uses to replay the committed corpus and run fresh random cases.
//!
//! Targets (each a `fn(&[u8])` in [`targets`] that panics on a finding):
//! - `parse`: bytes → parse, verify, print; round trip of whatever parses.
//! - `differential`: [`gen`]erated modules on the interpreter (the oracle)
//!   and the JIT, uninstrumented and instrumented in recover mode.
//! - `guards`: managed-dict words and adstack op sequences against a model
//!   of the invariants ([`guards`]).
//! - `compile_aarch64`: generated modules compiled for aarch64, with the
//!   Cranelift verifier on ([`aarch64`]).
//!
//! See `fuzz/README.md` for running them under libFuzzer.

// A test crate, not a library for others: its public items are documented
// where it helps, not as an API.
#![allow(missing_docs)]

pub mod aarch64;
pub mod coverage;
pub mod exec;
pub mod gen;
pub mod guards;
pub mod rng;
pub mod targets;

use std::path::{Path, PathBuf};

/// Names of the fuzz targets.
pub const TARGETS: [&str; 4] = ["parse", "differential", "guards", "compile_aarch64"];

/// `fuzz/` of this repository.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The committed corpus of `target` (`fuzz/corpus/<target>/`, top level
/// only: reproducers of known bugs live in its `regressions/`).
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    files_in(&fuzz_dir().join("corpus").join(target))
}

/// The saved reproducers of `target` (`fuzz/corpus/<target>/regressions/`).
pub fn regressions(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    files_in(&fuzz_dir().join("corpus").join(target).join("regressions"))
}

fn files_in(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, Vec<u8>)> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(&p).ok().map(|d| (p, d)))
        .collect();
    v.sort();
    v
}

/// How many fresh random cases a test runs: `base`, scaled by
/// `GUARDLIFT_FUZZ_SCALE` (a float, default 1) and divided by 8 in debug
/// builds (unoptimized Cranelift is slow).
pub fn cases(base: usize) -> usize {
    let scale: f64 = std::env::var("GUARDLIFT_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let n = base as f64 * scale / if cfg!(debug_assertions) { 8.0 } else { 1.0 };
    (n.round() as usize).max(1)
}

/// Fresh random inputs: `n` byte strings of length `len` from `seed`.
pub fn random_inputs(seed: u64, n: usize, len: usize) -> Vec<Vec<u8>> {
    let mut r = rng::SplitMix64::new(seed);
    (0..n).map(|_| r.bytes(len)).collect()
}
