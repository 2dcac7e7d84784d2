//! cargo-fuzz target `parse`: the body is [`guardlift_fuzz::targets::parse`], which
//! stable `cargo test -p guardlift-fuzz` also runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    guardlift_fuzz::targets::parse(data);
});
