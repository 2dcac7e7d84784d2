#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script of guardlift's cargo-fuzz targets
# (the layout of wasmtime's projects/wasmtime/build.sh).
#
# Run by the base-builder image's `compile` with:
#   SRC        the checkout is $SRC/guardlift (GUARDLIFT_SRC overrides)
#   OUT        fuzzer binaries, their .options and seed corpora go here
#   SANITIZER  address | none | coverage (coverage: OSS-Fuzz's cargo
#              wrapper turns `cargo fuzz build` into a coverage build)
#   RUSTFLAGS  "--cfg fuzzing -Zsanitizer=$SANITIZER -Cdebuginfo=1
#              -Cforce-frame-pointers"; cargo fuzz adds its own flags
# fuzz/oss-fuzz/test-build runs this script outside Docker.
# The physical path (test-build links the checkout into $SRC): cargo keys
# the workspace crates' fingerprints, and the wrapper's, by path.
project=$(cd "${GUARDLIFT_SRC:-$SRC/guardlift}" && pwd -P)
cd "$project"
# cargo fuzz passes --target x86_64-unknown-linux-gnu itself: a target set
# through the environment would move the output directory.
unset CARGO_BUILD_TARGET
target_dir=${CARGO_TARGET_DIR:-$project/target/oss-fuzz}

# Release build with debug assertions (cargo fuzz's sanitizer is ASan
# unless the image builds without one; without one, no compare tracing
# either, as fuzz/run-all's fast configuration).
san=address
opts=()
if [ "${SANITIZER:-address}" != address ]; then
  san=none
  opts=(--no-trace-compares)
fi
# libFuzzer's coverage instrumentation on guardlift's crates only, not on
# Cranelift (fuzz/rustc-cov-wrapper says why); FUZZ_COVERAGE=all keeps it
# on every crate.
[ "${FUZZ_COVERAGE:-guardlift}" = all ] || export RUSTC_WRAPPER="$project/fuzz/rustc-cov-wrapper"
cargo fuzz build -O --debug-assertions --sanitizer "$san" ${opts[@]+"${opts[@]}"} --features fuzzing \
  --target-dir "$target_dir"

bin_dir=$target_dir/x86_64-unknown-linux-gnu/release
for f in fuzz/fuzz_targets/*.rs; do
  t=$(basename "${f%.rs}")
  cp "$bin_dir/$t" "$OUT/$t"
  # Seed corpus: the committed seeds and the reproducers of fixed bugs.
  rm -f "$OUT/${t}_seed_corpus.zip"
  (cd "fuzz/corpus/$t" && zip -qr "$OUT/${t}_seed_corpus.zip" .)
  cp "fuzz/oss-fuzz/$t.options" "$OUT/$t.options"
done
cp fuzz/dict/parse.dict "$OUT/parse.dict"
