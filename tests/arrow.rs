//! Arrowhead systems (`blocktri::arrow`) against dense nalgebra references: solve,
//! log-determinant, and every block of the selected inverse (chain, border, tip), on the
//! CPU backends (and the GPU when there is one, through `Backend::Auto`); the errors.

use blocktri::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
use blocktri::{Backend, Error, Scalar, generate};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;

/// A random SPD arrowhead batch: the library's random chain, a random border, and a tip
/// `C = B T^-1 B^T + M` with `M` SPD, so that the Schur complement is `M`.
fn problem<T: Scalar>(s: usize, nb: usize, n: usize, a: usize, seed: u64) -> BlockTridiagArrow<T> {
    let chain = generate::random_spd::<f64>(s, nb, n, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let scale = 1.0 / ((nb * n) as f64).sqrt();
    let arrow: Vec<f64> = (0..s * nb * a * n).map(|_| rng.random_range(-1.0..1.0) * scale).collect();
    let mut tip = Vec::new();
    let d = nb * n;
    for sys in 0..s {
        let t = chain.to_dense(sys);
        let b = DMatrix::from_fn(a, d, |r, q| arrow[((sys * nb + q / n) * n + q % n) * a + r]);
        let tinv_bt = t.cholesky().unwrap().solve(&b.transpose());
        let r = DMatrix::from_fn(a, a, |_, _| rng.random_range(-1.0..1.0));
        let c = &b * tinv_bt + DMatrix::identity(a, a) + &r * r.transpose() / (a.max(1) as f64);
        let c = (&c + c.transpose()) * 0.5;
        tip.extend(c.iter().copied());
    }
    let m = BlockTridiagArrow::new(chain, a, arrow, tip).unwrap();
    BlockTridiagArrow::new(m.chain().cast(), a, m_arrow(&m).iter().map(|&v| blocktri::scalar::cast(v)).collect(), m_tip(&m)).unwrap()
}

fn m_arrow(m: &BlockTridiagArrow<f64>) -> Vec<f64> {
    let sh = m.shape();
    (0..sh.batch).flat_map(|s| (0..sh.nblocks).flat_map(move |i| m.arrow_block(s, i).to_vec())).collect()
}

fn m_tip<T: Scalar>(m: &BlockTridiagArrow<f64>) -> Vec<T> {
    (0..m.shape().batch).flat_map(|s| m.tip(s).iter().map(|&v| blocktri::scalar::cast(v)).collect::<Vec<T>>()).collect()
}

fn dense<T: Scalar>(m: &BlockTridiagArrow<T>, s: usize) -> DMatrix<f64> {
    m.to_dense(s).map(blocktri::scalar::wide)
}

fn rhs<T: Scalar>(m: &BlockTridiagArrow<T>, k: usize, seed: u64) -> ArrowVec<T> {
    let chain = generate::random_rhs::<T>(m.shape(), k, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tip = (0..m.shape().batch * m.width() * k).map(|_| blocktri::scalar::cast(rng.random_range(-1.0..1.0))).collect();
    ArrowVec::new(chain, m.width(), tip).unwrap()
}

fn rel(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    (a - b).norm() / b.norm().max(1e-300)
}

fn check_all(backend: Backend, s: usize, nb: usize, n: usize, a: usize, seed: u64) {
    let m = problem::<f64>(s, nb, n, a, seed);
    let b = rhs(&m, 2, seed + 1);
    let mut solver = ArrowSolver::<f64>::new(backend).unwrap();
    solver.factor(&m).unwrap();
    let x = solver.solve(&b).unwrap();
    let logdet = solver.log_determinant().unwrap();
    let inv = solver.selected_inverse().unwrap();
    let (d, what) = (nb * n, format!("{backend:?} S={s} N={nb} n={n} a={a}"));
    for (sys, &logdet) in logdet.iter().enumerate() {
        let am = dense(&m, sys);
        let reference = am.clone().lu().solve(&b.to_dense(sys)).unwrap();
        assert!(rel(&x.to_dense(sys), &reference) < 1e-10, "solve {what} system {sys}");
        let l = am.clone().cholesky().unwrap();
        let ld: f64 = 2.0 * l.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
        assert!((logdet - ld).abs() <= 1e-10 * ld.abs().max(1.0), "logdet {what}: {logdet} vs {ld}");
        let ainv = l.inverse();
        let scale = ainv.norm();
        let close = |got: DMatrix<f64>, want: DMatrix<f64>, part: &str| {
            assert!((got - want).norm() <= 1e-10 * scale, "{part} of A^-1, {what} system {sys}");
        };
        let ldc = inv.chain.ld();
        for i in 0..nb {
            let blk = inv.chain.diag_block(sys, i);
            close(DMatrix::from_fn(n, n, |r, c| blk[c * ldc + r]), ainv.view((i * n, i * n), (n, n)).into_owned(), "diagonal block");
            if i + 1 < nb {
                let blk = inv.chain.sub_block(sys, i);
                close(
                    DMatrix::from_fn(n, n, |r, c| blk[c * ldc + r]),
                    ainv.view(((i + 1) * n, i * n), (n, n)).into_owned(),
                    "sub-diagonal block",
                );
            }
            if a > 0 {
                let blk = &inv.border[(sys * nb + i) * a * n..(sys * nb + i + 1) * a * n];
                close(DMatrix::from_fn(a, n, |r, c| blk[c * a + r]), ainv.view((d, i * n), (a, n)).into_owned(), "border block");
            }
        }
        if a > 0 {
            let t = &inv.tip[sys * a * a..(sys + 1) * a * a];
            close(DMatrix::from_fn(a, a, |r, c| t[c * a + r]), ainv.view((d, d), (a, a)).into_owned(), "tip");
        }
    }
}

#[test]
fn arrowhead_systems_match_dense_references() {
    let mut seed = 100;
    // Issue #13's grid: n in {1, 2, 8, 16, 33, 64}, N in {1, 2, 3, 64, 1000} (the largest
    // dense references only where they stay small).
    let shapes = [(1usize, 1usize), (1, 8), (2, 2), (3, 8), (64, 1), (64, 2), (64, 8), (1000, 1), (2, 16), (3, 33), (1, 64), (64, 16)];
    for &(nb, n) in &shapes {
        for &a in &[0usize, 1, 4, 32] {
            for &s in &[1usize, 7] {
                if s * (nb * n + a) > 2000 && s > 1 {
                    continue; // the dense references of the largest batches add nothing new
                }
                seed += 1;
                check_all(Backend::Cpu, s, nb, n, a, seed);
            }
        }
    }
}

#[test]
fn every_backend_gives_the_same_answers() {
    for backend in [Backend::CpuSequential, Backend::Auto] {
        check_all(backend, 3, 33, 4, 5, 7);
    }
}

#[test]
fn f32_arrowhead_solves_to_f32_accuracy() {
    let m = problem::<f32>(2, 40, 4, 3, 9);
    let b = rhs(&m, 1, 10);
    let mut solver = ArrowSolver::<f32>::new(Backend::Cpu).unwrap();
    solver.factor(&m).unwrap();
    let x = solver.solve(&b).unwrap();
    for s in 0..2 {
        let reference = dense(&m, s).lu().solve(&b.to_dense(s)).unwrap();
        assert!(rel(&x.to_dense(s), &reference) < 1e-4);
    }
}

#[test]
fn failures_name_the_system_and_block() {
    check_failures(Backend::Cpu);
}

/// Every error of an arrowhead factorization and solve on `backend`, named by system and
/// block.
fn check_failures(backend: Backend) {
    let (nb, n, a) = (20, 3, 2);
    // A chain block that is not positive definite: reported as by the plain solver.
    let m = problem::<f64>(3, nb, n, a, 11);
    let mut chain = m.chain().clone();
    for r in 0..n {
        let v = chain.diag_block(1, 13)[r * chain.ld() + r];
        chain.set_diag(1, 13, r, r, -v);
    }
    let bad = BlockTridiagArrow::new(chain, a, m_arrow(&m), m_tip(&m)).unwrap();
    let mut solver = ArrowSolver::<f64>::new(backend).unwrap();
    assert!(matches!(solver.factor(&bad), Err(Error::NotPositiveDefinite { system: 1, block: 13, .. })));
    assert!(matches!(solver.solve(&rhs(&m, 1, 1)), Err(Error::NotFactored)));
    // A tip whose Schur complement is not positive definite: block N of its system.
    let mut tip: Vec<f64> = m_tip(&m);
    tip[2 * a * a] -= 1e6;
    let bad = BlockTridiagArrow::new(m.chain().clone(), a, m_arrow(&m), tip).unwrap();
    assert!(matches!(solver.factor(&bad), Err(Error::NotPositiveDefinite { system: 2, block, .. }) if block == nb));
    // Non-finite border values and an asymmetric tip.
    let mut arrow = m_arrow(&m);
    (arrow[(nb + 5) * a * n + 1], arrow[(2 * nb + 1) * a * n]) = (f64::NAN, f64::INFINITY);
    let bad = BlockTridiagArrow::new(m.chain().clone(), a, arrow, m_tip(&m)).unwrap();
    assert!(matches!(solver.factor(&bad), Err(Error::NonFinite { what: "border block", system: 1, block: 5 })));
    let mut tip: Vec<f64> = m_tip(&m);
    tip[1] += 1.0;
    let bad = BlockTridiagArrow::new(m.chain().clone(), a, m_arrow(&m), tip).unwrap();
    assert!(matches!(solver.factor(&bad), Err(Error::NotSymmetric { system: 0, block, .. }) if block == nb));
    // Shapes.
    assert!(matches!(BlockTridiagArrow::new(m.chain().clone(), a, vec![0.0; 3], m_tip(&m)), Err(Error::Shape(_))));
    solver.factor(&m).unwrap();
    let other = problem::<f64>(3, nb, n, a + 1, 12);
    assert!(matches!(solver.solve(&rhs(&other, 1, 2)), Err(Error::Shape(_))));
}

#[test]
fn npz_files_round_trip_and_plain_readers_refuse_an_arrowhead() {
    let dir = tempfile::tempdir().unwrap();
    for (s, a) in [(1usize, 3usize), (3, 1), (2, 0)] {
        let m = generate::random_spd_arrow::<f64>(s, 9, 4, a, 21).unwrap();
        let b = rhs(&m, 2, 22);
        let path = dir.path().join(format!("arrow{s}{a}.npz"));
        blocktri::io::write_arrow_npz(&path, &m, Some(&b)).unwrap();
        let (m2, b2) = blocktri::io::read_arrow_npz::<f64>(&path).unwrap();
        assert_eq!(m2.width(), a);
        for sys in 0..s {
            assert_eq!(dense(&m2, sys), dense(&m, sys));
            assert_eq!(b2.as_ref().unwrap().to_dense(sys), b.to_dense(sys));
        }
        assert_eq!(blocktri::io::npz_has_arrow(&path).unwrap(), a > 0);
        if a > 0 {
            assert!(matches!(blocktri::io::read_npz::<f64>(&path), Err(Error::Format { .. })));
        }
    }
    // The generator's problems are positive definite.
    let m = generate::random_spd_arrow::<f64>(2, 30, 3, 6, 5);
    let m = m.unwrap();
    for s in 0..2 {
        assert!(dense(&m, s).symmetric_eigenvalues().min() > 0.0);
    }
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_generates_solves_and_inverts_arrowhead_problems() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    // BLOCKTRI_BIN: where the binary is when the tests run away from the build (the GPU
    // machine gets the test executables and the binary carried apart).
    let exe = std::env::var_os("BLOCKTRI_BIN").map_or(std::path::PathBuf::from(env!("CARGO_BIN_EXE_blocktri")), std::path::PathBuf::from);
    let path = dir.path().join("p.npz");
    let (p, x, sigma) = (path.to_str().unwrap(), dir.path().join("x.npz"), dir.path().join("sigma.npz"));
    let run = |args: &[&str]| {
        let out = Command::new(&exe).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {text}");
        text
    };
    run(&["generate", "--out", p, "--nblocks", "20", "--block-size", "3", "--batch", "2", "--arrow", "4", "--nrhs", "2"]);
    let text = run(&["solve", p, "--backend", "cpu", "--logdet", "--out", x.to_str().unwrap()]);
    assert!(text.contains("arrowhead of width 4") && text.contains("log det A"), "{text}");
    let (m, b) = blocktri::io::read_arrow_npz::<f64>(&path).unwrap();
    let (_, xs) = blocktri::io::read_arrow_npz::<f64>(&x).unwrap();
    let (xs, b) = (xs.unwrap(), b.unwrap());
    for s in 0..2 {
        let reference = dense(&m, s).lu().solve(&b.to_dense(s)).unwrap();
        assert!(rel(&xs.to_dense(s), &reference) < 1e-12);
    }
    run(&["selinv", p, "--backend", "cpu-sequential", "--out", sigma.to_str().unwrap()]);
    let (inv, _) = blocktri::io::read_arrow_npz::<f64>(&sigma).unwrap();
    let d = 20 * 3;
    let ainv = dense(&m, 1).try_inverse().unwrap();
    let t = inv.tip(1);
    assert!(rel(&DMatrix::from_fn(4, 4, |r, c| t[c * 4 + r]), &ainv.view((d, d), (4, 4)).into_owned()) < 1e-12);
    let text = run(&["solve", "--generate", "2,30,4", "--arrow", "2", "--backend", "cpu"]);
    assert!(text.contains("relative residual"), "{text}");
}

/// Chains longer than one parallel run of the border products (4096 rows), with block
/// boundaries that do not fall on the runs' edges: the solve has a small residual and
/// the selected inverse matches the columns of `A^-1` that unit right-hand sides give.
/// (The dense references above are too slow at this size; the tip is built from the
/// sequential chain solver, `C = B T^-1 B^T + I`, so that the Schur complement is `I`.)
#[test]
fn long_chains_cross_the_parallel_runs() {
    use blocktri::Solver;
    let (s, nb, n, a) = (2usize, 700usize, 7usize, 3usize);
    let (d, seed) = (nb * n, common::fresh_seed());
    let chain = generate::random_spd::<f64>(s, nb, n, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let arrow: Vec<f64> = (0..s * nb * a * n).map(|_| rng.random_range(-1.0..1.0) / (d as f64).sqrt()).collect();
    let mut bt = blocktri::BlockVec::<f64>::zeros(chain.shape(), a).unwrap();
    for sys in 0..s {
        for q in 0..d {
            for j in 0..a {
                bt.set(sys, q, j, arrow[((sys * nb + q / n) * n + q % n) * a + j]);
            }
        }
    }
    let mut reference = Solver::<f64>::new(Backend::CpuSequential).unwrap();
    reference.factor(&chain).unwrap();
    let g = reference.solve(&bt).unwrap();
    let mut tip = Vec::new();
    for sys in 0..s {
        let c = DMatrix::from_fn(a, a, |r, col| {
            let bg: f64 = (0..d).map(|q| bt.get(sys, q, r) * g.get(sys, q, col)).sum();
            let bg_t: f64 = (0..d).map(|q| bt.get(sys, q, col) * g.get(sys, q, r)).sum();
            0.5 * (bg + bg_t) + if r == col { 1.0 } else { 0.0 }
        });
        tip.extend(c.iter().copied());
    }
    let m = BlockTridiagArrow::new(chain, a, arrow, tip).unwrap();
    let mut solver = ArrowSolver::<f64>::new(Backend::Auto).unwrap();
    solver.factor(&m).unwrap();
    // log det A = log det T + log det I.
    let (got, want) = (solver.log_determinant().unwrap(), reference.log_determinant().unwrap());
    for (x, y) in got.iter().zip(&want) {
        assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "log det {x} vs {y} (seed {seed})");
    }
    let b = rhs(&m, 2, seed + 1);
    let x = solver.solve(&b).unwrap();
    let r = m.matvec(&x).unwrap();
    for sys in 0..s {
        let (rd, bd) = (r.to_dense(sys), b.to_dense(sys));
        assert!(rel(&rd, &bd) < 1e-11, "residual of system {sys}: {:e} (seed {seed})", rel(&rd, &bd));
    }
    let inv = solver.selected_inverse().unwrap();
    let ldc = inv.chain.ld();
    // Columns of A^-1: one in the first block, one across a run edge, the last, a tip one.
    for col in [2usize, 4096 / n * n + 1, d - 1, d + 1] {
        let mut chain_e = blocktri::BlockVec::<f64>::zeros(m.shape(), 1).unwrap();
        let mut tip_e = vec![0.0; s * a];
        for sys in 0..s {
            if col < d {
                chain_e.set(sys, col, 0, 1.0);
            } else {
                tip_e[sys * a + col - d] = 1.0;
            }
        }
        let x = solver.solve(&ArrowVec::new(chain_e, a, tip_e).unwrap()).unwrap();
        for sys in 0..s {
            let column = x.to_dense(sys);
            let want = |row: usize| column[(row, 0)];
            let check = |got: f64, row: usize, what: &str| {
                assert!(
                    (got - want(row)).abs() <= 1e-10 * want(row).abs().max(1e-3),
                    "{what} ({row}, {col}) of system {sys}: {got} vs {} (seed {seed})",
                    want(row)
                );
            };
            if col < d {
                let (bk, c) = (col / n, col % n);
                for r in 0..n {
                    check(inv.chain.diag_block(sys, bk)[c * ldc + r], bk * n + r, "diagonal block");
                    if bk + 1 < nb {
                        check(inv.chain.sub_block(sys, bk)[c * ldc + r], (bk + 1) * n + r, "sub-diagonal block");
                    }
                    if bk > 0 {
                        check(inv.chain.sub_block(sys, bk - 1)[r * ldc + c], (bk - 1) * n + r, "super-diagonal block");
                    }
                }
                for j in 0..a {
                    check(inv.border[(sys * nb + bk) * a * n + c * a + j], d + j, "border");
                }
            } else {
                let t = col - d;
                for j in 0..a {
                    check(inv.tip[sys * a * a + t * a + j], d + j, "tip");
                }
                for i in 0..nb {
                    for r in 0..n {
                        check(inv.border[(sys * nb + i) * a * n + r * a + t], i * n + r, "border (transposed)");
                    }
                }
            }
        }
    }
}

/// One solver over several problems: new values of the same shape (the factor's buffers
/// are reused), then another shape and width; every solve matches the dense reference.
#[test]
fn refactoring_new_values_and_shapes() {
    let seed = common::fresh_seed();
    let mut solver = ArrowSolver::<f64>::new(Backend::Auto).unwrap();
    for (i, &(s, nb, n, a)) in [(1usize, 20usize, 3usize, 2usize), (1, 20, 3, 2), (2, 10, 4, 3), (1, 20, 3, 2)].iter().enumerate() {
        let m = problem::<f64>(s, nb, n, a, seed + i as u64);
        let b = rhs(&m, 2, seed + 10 + i as u64);
        solver.factor(&m).unwrap();
        let x = solver.solve(&b).unwrap();
        for sys in 0..s {
            let reference = dense(&m, sys).lu().solve(&b.to_dense(sys)).unwrap();
            assert!(rel(&x.to_dense(sys), &reference) < 1e-10, "problem {i} system {sys} (seed {seed})");
        }
    }
}

/// The GPU engine (the border and `W` on the device, between the chain's sweeps): the
/// dense references on batches, widths up to 32, chains longer than one run of the
/// device's partial sums, and each of the chain's three engines; f32;
/// the errors (a non-finite border value is found on the device); and a second factor and
/// solve that agree with the first (to rounding: the fused chain kernels add the two
/// neighbours' updates with atomics, in either order).
#[test]
fn gpu_arrowhead_keeps_the_border_on_the_device() {
    if common::gpu().is_none() {
        return;
    }
    let seed = common::fresh_seed() % 1000;
    for (i, &(s, nb, n, a)) in
        // The fused engine; the tiled one (n > 64); the chain engine (a batch that fills the GPU).
        [
            (1usize, 1usize, 8usize, 1usize),
            (7, 3, 8, 4),
            (2, 64, 2, 32),
            (1, 300, 8, 3),
            (3, 33, 4, 0),
            (2, 12, 72, 3),
            (800, 4, 4, 2),
        ]
        .iter()
        .enumerate()
    {
        check_all(Backend::Gpu, s, nb, n, a, seed + i as u64);
    }
    // f32 to f32 accuracy.
    let m = problem::<f32>(2, 40, 4, 3, seed);
    let b = rhs(&m, 1, seed + 10);
    let mut solver = ArrowSolver::<f32>::new(Backend::Gpu).unwrap();
    assert_eq!(solver.backend_name(), "gpu");
    solver.factor(&m).unwrap();
    let x = solver.solve(&b).unwrap();
    for sys in 0..2 {
        let reference = dense(&m, sys).lu().solve(&b.to_dense(sys)).unwrap();
        assert!(rel(&x.to_dense(sys), &reference) < 1e-4);
    }
    // Errors name the system and block (a non-finite border value found on the device).
    check_failures(Backend::Gpu);
    let m = problem::<f64>(3, 20, 3, 2, seed + 20);
    let mut solver = ArrowSolver::<f64>::new(Backend::Gpu).unwrap();
    // Again, after a solve with another column count.
    let b = rhs(&m, 3, seed + 30);
    solver.factor(&m).unwrap();
    let first = solver.solve(&b).unwrap();
    let _ = solver.solve(&rhs(&m, 1, seed + 31)).unwrap();
    solver.factor(&m).unwrap();
    let again = solver.solve(&b).unwrap();
    for sys in 0..3 {
        assert!(rel(&again.to_dense(sys), &first.to_dense(sys)) < 1e-13);
    }
}

/// The device's border kernels (`blocktri_device::arrow`) in the CPU block emulator
/// against plain loops: `B^T` as columns (and the first non-finite value), the partial
/// sums of `W^T Z` over runs of rows (several runs, a partial last one, more entries than
/// one block sums) and `z -= W x_C`.
#[test]
fn emulated_border_kernels_match_the_cpu() {
    use blocktri_device::arrow::*;
    use blocktri_prims::emu;
    let seed = common::fresh_seed();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (s, a, k, d) = (2usize, 3usize, 4usize, 2 * ARROW_CHUNK_ROWS + 37);
    let mut random = |len: usize| (0..len).map(|_| rng.random_range(-1.0..1.0)).collect::<Vec<f64>>();
    let (border, z, w, tip) = (random(s * a * d), random(s * k * d), random(s * a * d), random(s * a * k));
    let chunks = arrow_chunks(d);
    let mut columns = vec![f64::NAN; s * a * d];
    let mut partials = vec![f64::NAN; s * chunks * a * k];
    let mut status = 0u64;
    let mut args = ArrowArgs {
        status: &mut status,
        border: border.as_ptr(),
        columns: columns.as_mut_ptr(),
        w: w.as_ptr(),
        tip: tip.as_ptr(),
        partials: partials.as_mut_ptr(),
        width: a as u32,
        k: a as u32,
        dim: d as u32,
        systems: s as u32,
    };
    let blocks = |count: usize| count.div_ceil(ARROW_THREADS as usize) as u32;
    // SAFETY (all launches): the arrays cover the grids as the kernels' contracts state.
    unsafe { emu::launch_unchecked(blocks(s * a * d), ARROW_THREADS, 0, || border_columns(&args)) };
    for sys in 0..s {
        for j in 0..a {
            for q in 0..d {
                assert_eq!(columns[sys * a * d + j * d + q], border[sys * a * d + q * a + j]);
            }
        }
    }
    assert_eq!(status, 0);
    // Two non-finite values: the status names the first.
    let mut bad = border.clone();
    let (first, second) = (a * d + 5 * a + 1, a * d + 900 * a);
    (bad[second], bad[first]) = (f64::INFINITY, f64::NAN);
    let bad_args = ArrowArgs { border: bad.as_ptr(), ..args };
    unsafe { emu::launch_unchecked(blocks(s * a * d), ARROW_THREADS, 0, || border_columns(&bad_args)) };
    assert_eq!(status, u64::MAX - first as u64);
    let mut zs = z.clone();
    args = ArrowArgs { columns: zs.as_mut_ptr(), k: k as u32, ..args };
    let grid = ((s * chunks) as u32, (a * k).div_ceil(ARROW_PAIRS) as u32);
    unsafe { emu::launch_unchecked(grid, ARROW_THREADS, ARROW_PRODUCT_SHARED_BYTES, || border_products(&args)) };
    for sys in 0..s {
        for c in 0..k {
            for j in 0..a {
                let got: f64 = (0..chunks).map(|r| partials[(sys * chunks + r) * a * k + c * a + j]).sum();
                let want: f64 = (0..d).map(|q| w[sys * a * d + j * d + q] * z[sys * k * d + c * d + q]).sum();
                assert!((got - want).abs() < 1e-12 * d as f64, "W^T Z ({j}, {c}) of system {sys}: {got} vs {want} (seed {seed})");
            }
        }
    }
    unsafe { emu::launch_unchecked(blocks(s * k * d), ARROW_THREADS, 0, || border_correct(&args)) };
    for sys in 0..s {
        for c in 0..k {
            for q in 0..d {
                let i = sys * k * d + c * d + q;
                let want = z[i] - (0..a).map(|j| w[sys * a * d + j * d + q] * tip[(sys * k + c) * a + j]).sum::<f64>();
                assert!((zs[i] - want).abs() < 1e-13, "z - W x_C at {i}: {} vs {want} (seed {seed})", zs[i]);
            }
        }
    }
}
