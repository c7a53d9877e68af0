//! Property tests: random shapes `(S, N, n, k)`, padded leading dimensions, problems
//! passed directly or through `.npz` files in C or Fortran order, `f32` and `f64`; every
//! backend (sequential and threaded CPU, the GPU where present) against the dense f64
//! Cholesky of nalgebra. `PROPTEST_CASES` sets the number of cases (default 48).

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::GpuCholesky;
use blocktri::{BlockTridiag, BlockVec, Factorization, Scalar, generate, io};
use common::{dense_solution, error_vs_reference};
use npyz::WriterBuilder;
use proptest::prelude::*;
use std::path::Path;

/// One random case.
#[derive(Clone, Debug)]
struct Case {
    batch: usize,
    nblocks: usize,
    block: usize,
    nrhs: usize,
    /// Extra rows of the leading dimension (`ld = n + pad`).
    pad: usize,
    /// `None`: passed directly; `Some(fortran)`: through an `.npz` in that order.
    file: Option<bool>,
    f32: bool,
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    (
        1..=3usize,
        1..=40usize,
        1..=9usize,
        1..=3usize,
        0..=2usize,
        prop_oneof![Just(None), Just(Some(false)), Just(Some(true))],
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(batch, nblocks, block, nrhs, pad, file, f32, seed)| Case { batch, nblocks, block, nrhs, pad, file, f32, seed })
}

/// `values` of a C-order array of shape `dims`, rearranged into Fortran (first axis
/// fastest) storage order.
fn to_fortran<T: Copy>(values: &[T], dims: &[usize]) -> Vec<T> {
    let mut out = Vec::with_capacity(values.len());
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..values.len() {
        let c_offset = idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i);
        out.push(values[c_offset]);
        for (i, &d) in idx.iter_mut().zip(dims) {
            *i += 1;
            if *i < d {
                break;
            }
            *i = 0;
        }
    }
    out
}

/// Writes the problem as an `.npz` with arrays in C or Fortran order (what numpy's
/// `np.savez` writes for `np.asfortranarray` inputs), in the layout `io` documents.
fn write_npz_in_order<T: Scalar>(path: &Path, a: &BlockTridiag<T>, b: &BlockVec<T>, fortran: bool) {
    let shape = a.shape();
    let (s, nb, n, k) = (shape.batch, shape.nblocks, shape.block, b.ncols());
    let mut npz = npyz::npz::NpzWriter::create(path).unwrap();
    let mut put = |name: &str, dims: Vec<usize>, c_values: Vec<T>| {
        let (order, values) = if fortran { (npyz::Order::Fortran, to_fortran(&c_values, &dims)) } else { (npyz::Order::C, c_values) };
        let dims64: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        let mut w = npz.array::<T>(name, Default::default()).unwrap().default_dtype().shape(&dims64).order(order).begin_nd().unwrap();
        w.extend(values).unwrap();
        w.finish().unwrap();
    };
    let blocks = |count: usize, diagonal: bool| -> Vec<T> {
        let mut v = Vec::new();
        for sys in 0..s {
            for i in 0..count {
                let blk = if diagonal { a.diag_block(sys, i) } else { a.sub_block(sys, i) };
                for r in 0..n {
                    for c in 0..n {
                        v.push(blk[c * a.ld() + r]);
                    }
                }
            }
        }
        v
    };
    put("diag", vec![s, nb, n, n], blocks(nb, true));
    if nb > 1 {
        put("sub", vec![s, nb - 1, n, n], blocks(nb - 1, false));
    } else {
        put("sub", vec![s, 0, n, n], Vec::new());
    }
    let rhs: Vec<T> = (0..s).flat_map(|sys| (0..shape.dim()).flat_map(move |row| (0..k).map(move |c| b.get(sys, row, c)))).collect();
    put("rhs", vec![s, shape.dim(), k], rhs);
}

fn check<T: Scalar>(case: &Case) -> Result<(), TestCaseError> {
    let a = generate::random_spd::<T>(case.batch, case.nblocks, case.block, case.seed).unwrap();
    let b = generate::random_rhs::<T>(a.shape(), case.nrhs, case.seed ^ 0x5eed).unwrap();
    let a = a.repad(case.block + case.pad).unwrap();
    let (a, b) = match case.file {
        None => (a, b),
        Some(fortran) => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.npz");
            write_npz_in_order(&path, &a, &b, fortran);
            let (read, rhs) = io::read_npz::<T>(&path).unwrap();
            prop_assert_eq!(read.shape(), a.shape());
            (read, rhs.expect("rhs in the file"))
        }
    };
    let reference = dense_solution(&a, &b);
    let tol = if T::PRECISION == blocktri::Precision::F64 { 1e-10 } else { 1e-4 };
    let mut backends: Vec<Box<dyn Factorization<T>>> = vec![Box::new(SequentialCholesky::new()), Box::new(ThreadedCholesky::new())];
    if let Ok(g) = GpuCholesky::<T>::new() {
        backends.push(Box::new(g));
    }
    for backend in &mut backends {
        backend.factor(&a).unwrap();
        let x = backend.solve(&b).unwrap();
        let err = error_vs_reference(&x, &reference);
        prop_assert!(err < tol, "{} {case:?}: error {err:e}", backend.name());
        // factor_solve gives the same answer as factor then solve.
        let y = backend.factor_solve(&a, &b).unwrap();
        prop_assert!(error_vs_reference(&y, &reference) < tol, "{} factor_solve {case:?}", backend.name());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_backend_matches_the_dense_reference(case in cases()) {
        if case.f32 { check::<f32>(&case)? } else { check::<f64>(&case)? }
    }
}
