//! Every variant of `blocktri::Error`, produced the way a user meets it, on every backend
//! that can produce it (GPU-only variants run where a GPU is present; without one the
//! GPU entry points must say `NoGpu`).

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::{Gpu, GpuCholesky, GpuTridiagInverse, Module};
use blocktri::tridiag::{Method, Tridiagonal, invert};
use blocktri::{Backend, BlockTridiag, BlockVec, Error, Factorization, Shape, Solver, io};
use common::{fresh_seed, problem};

/// The CPU backends and, when present, the GPU one.
fn backends() -> Vec<Box<dyn Factorization<f64>>> {
    let mut v: Vec<Box<dyn Factorization<f64>>> = vec![Box::new(SequentialCholesky::new()), Box::new(ThreadedCholesky::new())];
    match GpuCholesky::<f64>::new() {
        Ok(g) => v.push(Box::new(g)),
        Err(e) => eprintln!("GPU backend skipped: {e}"),
    }
    v
}

#[test]
fn shape_errors() {
    assert!(matches!(Shape::new(1, 0, 4), Err(Error::Shape(_))));
    assert!(matches!(Shape::new(1, 4, 0), Err(Error::Shape(_))));
    assert!(matches!(Shape::new(0, 4, 4), Err(Error::Shape(_))));
    let shape = Shape::new(1, 3, 2).unwrap();
    assert!(matches!(BlockTridiag::<f64>::from_parts(shape, 2, vec![0.0; 5], vec![0.0; 8]), Err(Error::Shape(_))));
    assert!(matches!(BlockTridiag::<f64>::zeros_padded(shape, 1), Err(Error::Shape(_))));
    assert!(matches!(BlockVec::<f64>::from_vec(shape, 1, vec![0.0; 5]), Err(Error::Shape(_))));
    for mut solver in backends() {
        let (a, _) = problem::<f64>(1, 5, 3, 1, 1);
        solver.factor(&a).unwrap();
        let wrong = BlockVec::zeros(Shape::new(1, 4, 3).unwrap(), 1).unwrap();
        assert!(matches!(solver.solve(&wrong), Err(Error::Shape(_))), "{}", solver.name());
    }
}

#[test]
fn non_finite_and_asymmetric_input_name_system_and_block() {
    for mut solver in backends() {
        let (mut a, b) = problem::<f64>(3, 6, 3, 1, fresh_seed());
        a.set_diag(2, 4, 1, 1, f64::NAN);
        match solver.factor(&a) {
            Err(Error::NonFinite { system: 2, block: 4, .. }) => {}
            other => panic!("{}: {other:?}", solver.name()),
        }

        let (mut a, _) = problem::<f64>(2, 6, 3, 1, fresh_seed());
        a.sub_block_mut(1, 2)[0] = f64::INFINITY;
        assert!(matches!(solver.factor(&a), Err(Error::NonFinite { system: 1, .. })), "{}", solver.name());

        let (mut a, _) = problem::<f64>(2, 6, 3, 1, fresh_seed());
        let ld = a.ld();
        a.diag_block_mut(0, 3)[2] += 1.0; // entry (2, 0) only; (0, 2) keeps its value
        assert_ne!(a.diag_block(0, 3)[2], a.diag_block(0, 3)[2 * ld]);
        match solver.factor(&a) {
            Err(Error::NotSymmetric { system: 0, block: 3, .. }) => {}
            other => panic!("{}: {other:?}", solver.name()),
        }

        // A NaN right-hand side is rejected before solving.
        let (a, mut bad) = (problem::<f64>(3, 6, 3, 1, 1).0, b);
        solver.factor(&a).unwrap();
        bad.set(1, 7, 0, f64::NAN);
        assert!(matches!(solver.solve(&bad), Err(Error::NonFinite { system: 1, .. })), "{}", solver.name());
    }
}

#[test]
fn not_positive_definite_names_system_and_block() {
    for mut solver in backends() {
        for (s, blk) in [(0usize, 0usize), (1, 5), (2, 8)] {
            let (mut a, _) = problem::<f64>(3, 9, 4, 1, fresh_seed());
            for r in 0..4 {
                let v = a.get(s, blk * 4 + r, blk * 4 + r);
                a.set_diag(s, blk, r, r, v - 1e3);
            }
            match solver.factor(&a) {
                Err(Error::NotPositiveDefinite { system, block, .. }) => {
                    assert_eq!((system, block), (s, blk), "{}", solver.name())
                }
                other => panic!("{}: {other:?}", solver.name()),
            }
            // The failed factorization is not usable.
            let b = BlockVec::zeros(a.shape(), 1).unwrap();
            assert!(solver.solve(&b).is_err(), "{}", solver.name());
        }
    }
}

#[test]
fn overflowing_solutions_are_reported_not_returned() {
    for mut solver in backends() {
        // A tiny, well-conditioned matrix and a huge right-hand side: the solution overflows.
        let (mut a, _) = problem::<f64>(1, 6, 2, 1, 3);
        for v in a.diag_mut() {
            *v *= 1e-300;
        }
        for v in a.sub_mut() {
            *v *= 1e-300;
        }
        solver.factor(&a).unwrap();
        let b = BlockVec::from_vec(a.shape(), 1, vec![1e300; 12]).unwrap();
        match solver.solve(&b) {
            Err(Error::NonFiniteSolution { system: 0, .. }) => {}
            other => panic!("{}: {other:?}", solver.name()),
        }
    }
}

#[test]
fn not_factored_and_shape_changed() {
    for mut solver in backends() {
        let b = BlockVec::<f64>::zeros(Shape::new(1, 3, 2).unwrap(), 1).unwrap();
        assert!(matches!(solver.solve(&b), Err(Error::NotFactored)), "{}", solver.name());
        let (a, _) = problem::<f64>(1, 5, 3, 1, 1);
        solver.factor(&a).unwrap();
        let (other, _) = problem::<f64>(1, 6, 3, 1, 1);
        assert!(matches!(solver.refactor(&other), Err(Error::ShapeChanged { .. })), "{}", solver.name());
    }
}

#[test]
fn tridiagonal_errors() {
    // Lengths.
    assert!(matches!(Tridiagonal::<f64>::batch(4, vec![4.0; 4], vec![1.0; 2], vec![1.0; 3]), Err(Error::Shape(_))));
    // Non-finite values.
    let t = Tridiagonal::<f64>::batch(4, vec![4.0, f64::NAN, 4.0, 4.0], vec![1.0; 3], vec![1.0; 3]).unwrap();
    assert!(matches!(invert(&t, Method::Sequential, true), Err(Error::NonFinite { .. })));
    // Not diagonally dominant: row 2 of matrix 1.
    let mut a = vec![4.0; 8];
    a[4 + 2] = 0.5;
    let t = Tridiagonal::<f64>::batch(4, a, vec![1.0; 6], vec![1.0; 6]).unwrap();
    for method in [Method::Sequential, Method::Threaded, Method::Direct] {
        match invert(&t, method, true) {
            Err(Error::NotDiagonallyDominant { matrix: 1, row: 2, .. }) => {}
            other => panic!("{method:?}: {other:?}"),
        }
    }
    // Waived check on a singular matrix: a zero pivot is reported, not a NaN returned.
    let t = Tridiagonal::<f64>::batch(2, vec![1.0, 1.0], vec![1.0], vec![1.0]).unwrap();
    for method in [Method::Sequential, Method::Threaded, Method::Direct] {
        assert!(matches!(invert(&t, method, false), Err(Error::SingularPivot { matrix: 0, .. })), "{method:?}");
    }
    if let Ok(mut gpu) = GpuTridiagInverse::new() {
        for stagewise in [false, true] {
            assert!(matches!(gpu.invert(&t, stagewise, false), Err(Error::SingularPivot { matrix: 0, .. })));
        }
    }
}

#[test]
fn gpu_only_errors_or_no_gpu() {
    let Ok(gpu) = Gpu::shared() else {
        // Without a GPU every GPU entry point says so.
        assert!(matches!(GpuCholesky::<f64>::new(), Err(Error::NoGpu(_))));
        assert!(matches!(GpuTridiagInverse::new(), Err(Error::NoGpu(_))));
        assert!(matches!(Solver::<f64>::new(Backend::Gpu), Err(Error::NoGpu(_))));
        let auto = Solver::<f64>::new(Backend::Auto).unwrap();
        assert!(auto.fallback_reason().is_some_and(|r| r.contains("no CUDA GPU")));
        return;
    };
    // A device that does not exist.
    assert!(matches!(Gpu::with_ordinal(1000), Err(Error::NoGpu(_))));
    // A block size beyond the fused kernels.
    let mut g = GpuCholesky::<f64>::new().unwrap();
    let n = g.max_block_size() + 1;
    let (a, _) = problem::<f64>(1, 2, n, 1, 1);
    match g.factor(&a) {
        Err(Error::Unsupported(msg)) => assert!(msg.contains(&format!("n = {n}")), "{msg}"),
        other => panic!("{other:?}"),
    }
    // More than the device holds: n^2 outputs of a tridiagonal inverse.
    let big = Tridiagonal::<f64>::random_dominant(1 << 21, 1, true, 1).unwrap();
    assert!(matches!(GpuTridiagInverse::new().unwrap().prepare(&big, true), Err(Error::OutOfMemory { .. })));
    assert!(matches!(GpuTridiagInverse::new().unwrap().invert(&big, true, true), Err(Error::OutOfMemory { .. })));
    // PTX the driver refuses, and a kernel name the module does not have.
    let r = Module::from_ptx(gpu.context(), ".version 8.0\n.target sm_80\nnot ptx", "sm_80");
    assert!(matches!(r, Err(Error::Cuda(_))), "{r:?}");
    assert!(matches!(gpu.kernel("no_such_kernel"), Err(Error::Cuda(_))));
}

#[test]
fn file_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(io::read_npz::<f64>(&dir.path().join("none.npz")), Err(Error::Io { .. })));
    let bad = dir.path().join("bad.mtx");
    std::fs::write(&bad, "not a matrix market file").unwrap();
    assert!(matches!(io::read_mtx::<f64>(&bad, 2), Err(Error::Format { .. })));
}

#[test]
fn host_out_of_memory() {
    // n = 2^23: the n^2 inverse (512 TB) is beyond any host's address space, and the
    // CPU methods say so instead of aborting.
    let big = Tridiagonal::<f64>::random_dominant(1 << 23, 1, true, fresh_seed()).unwrap();
    for method in [Method::Direct, Method::Sequential, Method::Threaded] {
        match invert(&big, method, true) {
            Err(Error::HostOutOfMemory { needed }) => assert_eq!(needed, 8 << 46, "{method:?}"),
            other => panic!("{method:?}: expected HostOutOfMemory, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn sparse_input_whose_triangles_disagree_is_refused() {
    use nalgebra_sparse::CooMatrix;
    // Block size 2: D_0 = [[4, 4], [1, 2]] given with both triangles, which disagree (a
    // fuzzing finding: it was accepted and the upper entry silently kept).
    let coo =
        CooMatrix::try_from_triplets(4, 4, vec![0, 1, 1, 0, 2, 3], vec![0, 0, 1, 1, 2, 3], vec![4.0, 1.0, 2.0, 4.0, 3.0, 3.0]).unwrap();
    match BlockTridiag::<f64>::from_coo(&coo, 2) {
        Err(Error::Shape(msg)) => assert!(msg.contains("(0, 1) = 4") && msg.contains("(1, 0) = 1"), "{msg}"),
        other => panic!("{other:?}"),
    }
    // The same block with agreeing triangles, or with only one of them, reads.
    let agree =
        CooMatrix::try_from_triplets(4, 4, vec![0, 1, 1, 0, 2, 3], vec![0, 0, 1, 1, 2, 3], vec![4.0, 1.0, 2.0, 1.0, 3.0, 3.0]).unwrap();
    let lower = CooMatrix::try_from_triplets(4, 4, vec![0, 1, 1, 2, 3], vec![0, 0, 1, 2, 3], vec![4.0, 1.0, 2.0, 3.0, 3.0]).unwrap();
    let (a, b) = (BlockTridiag::<f64>::from_coo(&agree, 2).unwrap(), BlockTridiag::<f64>::from_coo(&lower, 2).unwrap());
    assert_eq!(a.diag(), b.diag());
    assert_eq!(a.diag_block(0, 0), &[4.0, 1.0, 1.0, 2.0]);
}
