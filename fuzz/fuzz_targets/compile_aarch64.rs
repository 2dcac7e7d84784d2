//! cargo-fuzz target `compile_aarch64`: the body is [`guardlift_fuzz::targets::compile_aarch64`], which
//! stable `cargo test -p guardlift-fuzz` also runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    guardlift_fuzz::targets::compile_aarch64(data);
});
