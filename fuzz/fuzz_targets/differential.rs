//! cargo-fuzz target `differential`: the body is [`guardlift_fuzz::targets::differential`], which
//! stable `cargo test -p guardlift-fuzz` also runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    guardlift_fuzz::targets::differential(data);
});
