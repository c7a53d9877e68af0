//! Selected inversion on every backend: the diagonal and sub-diagonal blocks of `A^-1`
//! against the dense inverse (nalgebra, f64), on shapes with one block, two, powers of two
//! and not, batches, and both precisions; the sequential recursion, the CPU
//! nested-dissection sweep and the GPU's level launches (fused and tiled factors) agree.

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::GpuCholesky;
use blocktri::{BlockTridiag, Error, Factorization, Scalar, generate};
use common::{fresh_seed, gpu};

/// Largest `|Sigma_ij - (A^-1)_ij|` over the block-tridiagonal pattern (lower band and
/// whole diagonal blocks), relative to the largest `|(A^-1)_ij|`, per system.
fn error_vs_dense<T: Scalar>(a: &BlockTridiag<T>, sigma: &BlockTridiag<T>) -> f64 {
    let (a, sigma) = (a.cast::<f64>(), sigma.cast::<f64>());
    let n = a.shape().block;
    let mut worst = 0.0f64;
    for s in 0..a.shape().batch {
        let inv = a.to_dense(s).cholesky().expect("SPD").inverse();
        let scale = inv.amax();
        for c in 0..inv.ncols() {
            for r in 0..inv.nrows() {
                if r / n == c / n || r / n == c / n + 1 || c / n == r / n + 1 {
                    worst = worst.max((sigma.get(s, r, c) - inv[(r, c)]).abs() / scale);
                }
            }
        }
    }
    worst
}

const SHAPES: &[(usize, usize, usize)] =
    &[(1, 1, 1), (1, 1, 5), (2, 2, 3), (1, 3, 4), (3, 8, 2), (1, 13, 6), (2, 64, 3), (1, 100, 1), (1, 37, 9)];

fn check<T: Scalar>(tol: f64) {
    let seed = fresh_seed();
    for (i, &(s, nb, n)) in SHAPES.iter().enumerate() {
        let a = generate::random_spd_conditioned::<T>(s, nb, n, 1e3, seed + i as u64).unwrap();
        let mut seq = SequentialCholesky::new();
        let mut thr = ThreadedCholesky::new();
        assert!(matches!(seq.selected_inverse(), Err(Error::NotFactored)));
        assert!(matches!(thr.selected_inverse(), Err(Error::NotFactored)));
        seq.factor(&a).unwrap();
        thr.factor(&a).unwrap();
        for (name, sigma) in [("sequential", seq.selected_inverse().unwrap()), ("threaded", thr.selected_inverse().unwrap())] {
            assert_eq!(sigma.shape(), a.shape());
            let err = error_vs_dense(&a, &sigma);
            assert!(err < tol, "{name} {} S={s} N={nb} n={n}: error {err:e} (seed {seed})", T::PRECISION);
            // The diagonal blocks come out exactly symmetric.
            for sys in 0..s {
                for b in 0..nb {
                    let d = sigma.diag_block(sys, b);
                    let ld = sigma.ld();
                    assert!((0..n).all(|r| (0..n).all(|c| d[c * ld + r] == d[r * ld + c])), "{name}: asymmetric block {b}");
                }
            }
        }
    }
}

#[test]
fn selected_inverse_matches_the_dense_inverse_f64() {
    check::<f64>(1e-11);
}

#[test]
fn selected_inverse_matches_the_dense_inverse_f32() {
    check::<f32>(1e-3);
}

#[test]
fn gpu_selected_inverse_matches_the_dense_inverse() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // The fused engine's factor and, from n = 97, the tiled engine's; the staged sweep
    // (warp per node up to n = 16, block per node up to the shared-memory limit: n = 72 in
    // f64, 104 in f32 on the H100) and the tiled one above it (a node's 64 x 64 tiles over many blocks).
    let shapes: Vec<_> = SHAPES
        .iter()
        .copied()
        .chain([(3, 20, 16), (1, 6, 24), (2, 9, 33), (2, 4, 64), (1, 3, 72), (1, 3, 80), (1, 5, 100), (2, 3, 130)])
        .collect();
    for (i, &(s, nb, n)) in shapes.iter().enumerate() {
        let a = generate::random_spd_conditioned::<f64>(s, nb, n, 1e3, seed + i as u64).unwrap();
        let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
        assert!(matches!(solver.selected_inverse(), Err(Error::NotFactored)));
        solver.factor(&a).unwrap();
        let sigma = solver.selected_inverse().unwrap();
        let err = error_vs_dense(&a, &sigma);
        assert!(err < 1e-11, "gpu f64 S={s} N={nb} n={n}: error {err:e} (seed {seed})");
        let a32 = a.cast::<f32>();
        let mut solver = GpuCholesky::<f32>::with_gpu(g.clone(), Default::default()).unwrap();
        solver.factor(&a32).unwrap();
        let err = error_vs_dense(&a32, &solver.selected_inverse().unwrap());
        assert!(err < 1e-3, "gpu f32 S={s} N={nb} n={n}: error {err:e} (seed {seed})");
    }
}

#[test]
fn gpu_selected_inverse_of_the_chain_factor() {
    use blocktri::cuda::{GpuOptions, KernelFamily};
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let options = GpuOptions { kernels: KernelFamily::Chain, ..Default::default() };
    for (i, &(s, nb, n)) in SHAPES.iter().chain(&[(7, 9, 33), (2, 5, 64)]).enumerate() {
        let a = generate::random_spd_conditioned::<f64>(s, nb, n, 1e3, seed + i as u64).unwrap();
        let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        solver.factor(&a).unwrap();
        let sigma = solver.selected_inverse().unwrap();
        // Every stored value is finite, the blocks' padding rows included.
        assert!(sigma.diag().iter().chain(sigma.sub()).all(|v| v.is_finite()));
        let err = error_vs_dense(&a, &sigma);
        assert!(err < 1e-11, "chain f64 S={s} N={nb} n={n}: error {err:e} (seed {seed})");
        let a32 = a.cast::<f32>();
        let mut solver = GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap();
        solver.factor(&a32).unwrap();
        let err = error_vs_dense(&a32, &solver.selected_inverse().unwrap());
        assert!(err < 1e-3, "chain f32 S={s} N={nb} n={n}: error {err:e} (seed {seed})");
    }
}

/// The device's gather of the sweep's output into the block-tridiagonal layout
/// (`blocktri_device::selinv::gather_sub_diagonal`) in the CPU block emulator, for the
/// level sweeps' placement (with whichever neighbour was eliminated first) and the chain
/// walk's: every sub-diagonal block from the right slot (transposed from `sigma_right` or
/// copied from `sigma_left`), padding rows zero in both outputs.
#[test]
fn emulated_gather_puts_every_block_in_place() {
    use blocktri_device::selinv::{GATHER_THREADS, SelinvGatherArgs, gather_sub_diagonal, sub_diagonal_slot};
    let (s, nb, n, ld) = (2usize, 7usize, 3usize, 5usize);
    let blk = ld * n;
    let seed = fresh_seed();
    let values = |salt: u64| common::random_matrix(s * nb * blk, 1, seed + salt).as_slice().to_vec();
    let (left, right) = (values(1), values(2));
    for chain in [false, true] {
        let mut diag = values(3);
        let original = diag.clone();
        let mut sub = vec![f64::NAN; s * (nb - 1) * blk];
        let args = SelinvGatherArgs {
            sigma_diag: diag.as_mut_ptr(),
            sigma_left: left.as_ptr(),
            sigma_right: right.as_ptr(),
            sub: sub.as_mut_ptr(),
            ld: ld as u32,
            n: n as u32,
            nblocks: nb as u32,
            chain: chain as u32,
        };
        // SAFETY: the arrays hold the blocks the kernel's contract states.
        unsafe { blocktri_prims::emu::launch_unchecked((s * nb) as u32, GATHER_THREADS, 0, || gather_sub_diagonal(&args)) };
        for sys in 0..s {
            for i in 0..nb {
                for c in 0..n {
                    for r in 0..ld {
                        let at = (sys * nb + i) * blk + c * ld + r;
                        assert_eq!(diag[at], if r < n { original[at] } else { 0.0 }, "diagonal block {i} ({r}, {c})");
                    }
                }
                if i + 1 == nb {
                    continue;
                }
                let (slot, transposed) = if chain { (i as u32 + 1, true) } else { sub_diagonal_slot(i as u32 + 1) };
                let src = (sys * nb + slot as usize - 1) * blk;
                for c in 0..n {
                    for r in 0..ld {
                        let want = match (r < n, transposed) {
                            (false, _) => 0.0,
                            (true, true) => right[src + r * ld + c],
                            (true, false) => left[src + c * ld + r],
                        };
                        assert_eq!(sub[(sys * (nb - 1) + i) * blk + c * ld + r], want, "chain {chain}: block {i} ({r}, {c})");
                    }
                }
            }
        }
    }
}
