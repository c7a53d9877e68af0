//! The `.npy` readers (arrays, right-hand sides of a given shape) on arbitrary bytes.
#![no_main]

#[path = "checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::npy(data));
