//! The Matrix Market reader (and the block extraction behind it) on arbitrary text, with
//! block sizes 1, 2 and 3.
#![no_main]

#[path = "checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::mtx(data));
