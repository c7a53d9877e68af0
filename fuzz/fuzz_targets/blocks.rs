//! Block extraction from CSR and COO (`BlockTridiag::from_coo` / `from_csr`) on arbitrary
//! triplets, block sizes and values (NaN, infinities, duplicates, entries off the band).
//! Input: `[rows, cols-offset, block, (row: u8, col: u8, value: f64)*]`.
#![no_main]

#[path = "checks.rs"]
#[allow(dead_code)] // each target uses one of the checks
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::blocks(data));
