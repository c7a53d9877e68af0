//! The `.npz` problem (with or without an arrowhead) and tridiagonal readers on arbitrary bytes: an error or a
//! consistent problem, never a panic, an abort or an allocation the file cannot back.
#![no_main]

#[path = "checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::npz(data));
