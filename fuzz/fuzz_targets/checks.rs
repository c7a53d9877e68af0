//! The properties the fuzz targets check, one function per target, shared with
//! `tests/fuzz_corpus.rs`, which replays the checked-in seeds and every past finding
//! (`fuzz/regressions/`) through them in the normal test run.
//!
//! Each function takes arbitrary bytes and must return without a panic, an abort or an
//! allocation the input cannot back; where a reader accepts the input, the result must be
//! consistent.

use blocktri::{BlockTridiag, Shape, io};
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use std::io::Write;

/// `data` in a temporary file (in memory where `/dev/shm` exists) with `suffix`: the
/// readers take paths.
fn as_file(data: &[u8], suffix: &str) -> tempfile::NamedTempFile {
    let dir = if std::path::Path::new("/dev/shm").is_dir() { std::path::PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let mut f = tempfile::Builder::new().suffix(suffix).tempfile_in(dir).expect("temporary file");
    f.write_all(data).expect("write temporary file");
    f.flush().expect("flush temporary file");
    f
}

/// The `.npz` problem (arrowhead or not) and tridiagonal readers on arbitrary bytes: an error or a
/// consistent problem, never a panic, an abort or an allocation the file cannot back.
pub fn npz(data: &[u8]) {
    let file = as_file(data, ".npz");
    if let Ok((a, b)) = io::read_npz::<f64>(file.path()) {
        let shape = a.shape();
        assert_eq!(a.diag().len(), shape.batch * shape.nblocks * a.ld() * shape.block);
        if let Some(b) = b {
            assert_eq!(b.shape(), shape);
            assert_eq!(b.as_slice().len(), shape.batch * shape.dim() * b.ncols());
        }
    }
    if let Ok((m, b)) = io::read_arrow_npz::<f64>(file.path()) {
        let shape = m.shape();
        assert_eq!(m.arrow_values().len(), shape.batch * shape.nblocks * m.width() * shape.block);
        assert_eq!(m.tip_values().len(), shape.batch * m.width() * m.width());
        if let Some(b) = b {
            assert_eq!((b.chain().shape(), b.width()), (shape, m.width()));
            assert_eq!(b.tip_values().len(), shape.batch * m.width() * b.chain().ncols());
        }
    }
    let _ = io::npz_has_arrow(file.path());
    let _ = io::read_problem::<f32>(file.path(), None);
    if let Ok(t) = io::read_tridiagonal::<f32>(file.path()) {
        assert!(t.n() >= 1 && t.batch_size() >= 1);
    }
}

/// The `.npy` readers (arrays, right-hand sides of a given shape) on arbitrary bytes.
pub fn npy(data: &[u8]) {
    let file = as_file(data, ".npy");
    if let Ok((values, shape)) = io::read_npy(file.path()) {
        assert_eq!(values.len(), shape.iter().product::<usize>());
    }
    for shape in [Shape::new(1, 3, 2).unwrap(), Shape::new(2, 1, 1).unwrap()] {
        if let Ok(b) = io::read_rhs_npy::<f32>(file.path(), shape) {
            assert_eq!(b.as_slice().len(), shape.batch * shape.dim() * b.ncols());
        }
    }
}

/// The Matrix Market reader (and the block extraction behind it) on arbitrary text, with
/// block sizes 1, 2 and 3.
///
/// A file may declare a matrix of any order with few entries: reading it allocates the
/// dense blocks of that order (`2 d n` values), as the user asked, and fails with a
/// `HostOutOfMemory` error only when the host refuses. Orders above 2^16 are skipped here
/// so that the fuzzer's memory limit is not spent on such legitimate allocations.
pub fn mtx(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let size_line = text.lines().skip(1).find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('%'));
    if size_line.and_then(|l| l.split_whitespace().next()).and_then(|w| w.parse::<u64>().ok()).is_some_and(|d| d > 1 << 16) {
        return;
    }
    let file = as_file(data, ".mtx");
    for block in 1..=3 {
        if let Ok(a) = io::read_mtx::<f64>(file.path(), block) {
            assert_eq!(a.shape().block, block);
            assert_eq!(a.shape().batch, 1);
        }
    }
}

/// Block extraction from CSR and COO (`BlockTridiag::from_coo` / `from_csr`) on arbitrary
/// triplets, block sizes and values (NaN, infinities, duplicates, entries off the band).
/// Input: `[rows, cols-offset, block, (row: u8, col: u8, value: f64)*]`.
pub fn blocks(data: &[u8]) {
    let [rows, offset, block, rest @ ..] = data else { return };
    let nrows = 1 + *rows as usize % 48;
    let ncols = nrows + (*offset as usize % 3).saturating_sub(1);
    let block = *block as usize % 10; // 0 included: must be refused, not divide by zero
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for t in rest.chunks_exact(10) {
        r.push(t[0] as usize % nrows);
        c.push(t[1] as usize % ncols);
        v.push(f64::from_le_bytes(t[2..10].try_into().unwrap()));
    }
    let Ok(coo) = CooMatrix::try_from_triplets(nrows, ncols, r, c, v) else { return };
    let from_coo = BlockTridiag::from_coo(&coo, block);
    let from_csr = BlockTridiag::from_csr(&CsrMatrix::from(&coo), block);
    assert_eq!(from_coo.is_ok(), from_csr.is_ok());
    if let Ok(a) = from_coo {
        assert_eq!(a.shape().dim(), nrows);
        // What was read round-trips through CSR when it holds only finite values.
        if a.diag().iter().chain(a.sub()).all(|x| x.is_finite()) {
            let again = BlockTridiag::from_csr(&a.to_csr(0, false), block).expect("our own CSR reads back");
            assert_eq!(again.diag(), a.diag());
            assert_eq!(again.sub(), a.sub());
        }
    }
}
