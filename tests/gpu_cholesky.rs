//! GPU nested-dissection factor and solve. Each test prints why it skips when no GPU is
//! usable; on a GPU machine they all run.

mod common;

use blocktri::cuda::{DeviceBuffer, F32Products, GpuCholesky, GpuOptions, KernelFamily, LaunchConfig};
use blocktri::{BlockVec, Error, Factorization, Scalar, generate, residual};
use blocktri_device::batched::{PotrfBatchedArgs, potrf_batched_shared_bytes};
use blocktri_device::kernels::{kernel_name, names};
use common::{dense_solution, error_vs_reference, fresh_seed, gpu, problem};

const NS: &[usize] = &[1, 2, 3, 7, 8, 16, 31, 32, 48, 64];
const NBS: &[usize] = &[1, 2, 3, 5, 64, 1000, 4097];
const KS: &[usize] = &[1, 3, 16];

fn residual_check<T: Scalar>(batch: usize, nb: usize, n: usize, k: usize, seed: u64, tol: f64, solver: &mut GpuCholesky<T>) {
    let (a, b) = problem::<T>(batch, nb, n, k, seed);
    solver.factor(&a).unwrap_or_else(|e| panic!("S={batch} N={nb} n={n}: {e}"));
    let x = solver.solve(&b).unwrap();
    let acc = residual::accuracy(&a, &x, &b).unwrap();
    assert!(
        acc.relative_residual < tol,
        "{} S={batch} N={nb} n={n} k={k}: residual {:e} (seed {seed})",
        T::PRECISION,
        acc.relative_residual
    );
}

#[test]
fn f64_every_block_size_and_length() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut solver = GpuCholesky::<f64>::with_gpu(g, GpuOptions::default()).unwrap();
    for (i, &n) in NS.iter().enumerate() {
        for (j, &nb) in NBS.iter().enumerate() {
            residual_check(1, nb, n, KS[(i + j) % 3], seed + (10 * i + j) as u64, 1e-12, &mut solver);
        }
    }
}

#[test]
fn f32_every_block_size_and_length() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut solver = GpuCholesky::<f32>::with_gpu(g, GpuOptions::default()).unwrap();
    for (i, &n) in NS.iter().enumerate() {
        for (j, &nb) in NBS.iter().enumerate() {
            residual_check(1, nb, n, KS[(i + 2 * j) % 3], seed + (10 * i + j) as u64, 1e-5, &mut solver);
        }
    }
}

/// Block sizes of the tiled engine (the default above 64) with block counts that fit
/// the device: `n` in the list up to 2048, `N` in {1, 2, 3, 64, 1000} where the
/// problem fits in a few GB, `S` in {1, 7}, `k` in {1, 3}.
fn tiled_grid() -> Vec<(usize, usize, usize, usize)> {
    let mut cases = Vec::new();
    for (i, &n) in [33usize, 64, 65, 96, 97, 128, 129, 200, 256, 512, 1024, 2048].iter().enumerate() {
        for (j, &nb) in [1usize, 2, 3, 64, 1000].iter().enumerate() {
            let bytes = 8 * n * n * nb;
            if bytes > 2_200_000_000 || (n > 512 && nb > 64) {
                continue;
            }
            let batch = if (i + j) % 3 == 0 && bytes < 200_000_000 { 7 } else { 1 };
            cases.push((batch, nb, n, 1 + 2 * ((i + j) % 2)));
        }
    }
    cases
}

#[test]
fn tiled_engine_every_block_size_f64() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let options = GpuOptions { kernels: KernelFamily::Tiled, ..GpuOptions::default() };
    let mut solver = GpuCholesky::<f64>::with_gpu(g, options).unwrap();
    for (i, (s, nb, n, k)) in tiled_grid().into_iter().enumerate() {
        residual_check(s, nb, n, k, seed + i as u64, 1e-12, &mut solver);
    }
}

#[test]
fn tiled_engine_every_block_size_f32() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // FP32 FMA products (`Auto` runs 3xTF32 here, as `tf32_products_every_block_size` does).
    let options = GpuOptions { kernels: KernelFamily::Tiled, f32_products: F32Products::Fma, ..GpuOptions::default() };
    let mut solver = GpuCholesky::<f32>::with_gpu(g, options).unwrap();
    for (i, (s, nb, n, k)) in tiled_grid().into_iter().enumerate() {
        // f32 accuracy: the residual of a backward-stable solve grows with n.
        let tol = if n <= 256 { 1e-5 } else { 1e-4 };
        residual_check(s, nb, n, k, seed + i as u64, tol, &mut solver);
    }
}

/// The `Auto` products are the 3xTF32 ones where the tiled engine runs and the FP32 FMA ones
/// in the fused families, bit for bit; the kernel family is the one the block size picks
/// (no TF32 forcing: an explicit fused family is accepted), and `f64` solvers take it. (The fused cases have `N = 2`: with more blocks, nodes of a
/// level add into a shared separator with atomics, whose order changes the bits run to
/// run.)
#[test]
fn auto_products_are_tf32x3_in_the_tiled_engine_and_fma_elsewhere() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let solve = |products: F32Products, (nb, n): (usize, usize)| {
        let (a, b) = problem::<f32>(2, nb, n, 2, seed + n as u64);
        let options = GpuOptions { f32_products: products, ..GpuOptions::default() };
        let mut solver = GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap();
        solver.factor(&a).unwrap();
        solver.solve(&b).unwrap().as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    // n = 300: the tiled engine (f32's fused kernels stop at 138).
    let auto = solve(F32Products::Auto, (9, 300));
    assert_eq!(auto, solve(F32Products::Tf32x3, (9, 300)), "Auto is 3xTF32 in the tiled engine (seed {seed})");
    assert_ne!(auto, solve(F32Products::Fma, (9, 300)), "the FMA products give other bits (seed {seed})");
    // n = 16 and n = 48: the rows and blocked families, FMA products.
    for shape in [(2, 16), (2, 48)] {
        assert_eq!(solve(F32Products::Auto, shape), solve(F32Products::Fma, shape), "{shape:?} (seed {seed})");
    }
    for (kernels, n) in [(KernelFamily::Rows, 16), (KernelFamily::Blocked, 48)] {
        let options = GpuOptions { kernels, f32_products: F32Products::Auto, ..GpuOptions::default() };
        residual_check(1, 64, n, 1, seed, 1e-5, &mut GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap());
    }
    let auto = GpuOptions { f32_products: F32Products::Auto, ..GpuOptions::default() };
    let mut f64_solver = GpuCholesky::<f64>::with_gpu(g, auto).unwrap();
    residual_check(1, 5, 40, 1, seed, 1e-12, &mut f64_solver);
}

/// The opt-in TF32 products: every block size runs the tiled engine (small ones too);
/// split operands keep the f32 bounds, plain TF32 has its own (operands rounded to 10
/// bits: residuals near `1e-4`, bound `1e-2`). Options that cannot work are errors.
#[test]
fn tf32_products_every_block_size() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut cases = vec![(3, 5, 1, 1), (1, 64, 8, 3), (7, 3, 16, 1), (1, 1000, 32, 3)];
    cases.extend(tiled_grid());
    for (products, every) in [(F32Products::Tf32x3, 1), (F32Products::Tf32, 2)] {
        let options = GpuOptions { f32_products: products, ..GpuOptions::default() };
        let mut solver = GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap();
        for (i, &(s, nb, n, k)) in cases.iter().enumerate().step_by(every) {
            let tol = match products {
                F32Products::Tf32 => 1e-2,
                _ if n <= 256 => 1e-5,
                _ => 1e-4,
            };
            residual_check(s, nb, n, k, seed + i as u64, tol, &mut solver);
        }
    }
    let tf32 = GpuOptions { f32_products: F32Products::Tf32, ..GpuOptions::default() };
    assert!(matches!(GpuCholesky::<f64>::with_gpu(g.clone(), tf32), Err(Error::Unsupported(_))));
    let panel = GpuOptions { kernels: KernelFamily::Panel, ..tf32 };
    assert!(matches!(GpuCholesky::<f32>::with_gpu(g, panel), Err(Error::Unsupported(_))));
}

#[test]
fn auto_runs_large_blocks_and_reports_memory_limits() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    assert!(solver.max_block_size() >= 4096, "max block size {}", solver.max_block_size());
    residual_check(1, 3, 300, 2, seed, 1e-12, &mut solver);
    residual_check(1, 2, 4096, 1, seed + 1, 1e-12, &mut solver);
    // Beyond device memory (the plan needs 5N - 1 blocks of 134 MB; the host matrix
    // 2N - 1, zero pages): a clear error before any device allocation.
    // (The solver's current plan is freed first, so the free memory the check sees is up
    // to that plan larger than measured here: a few blocks of slack.)
    let free = g.free_memory().unwrap();
    let nb = free / (5 * 4096 * 4096 * 8) + 4;
    match blocktri::BlockTridiag::<f64>::zeros(nb, 4096).map(|a| solver.factor(&a)) {
        Ok(Err(Error::OutOfMemory { needed, free })) => assert!(needed + needed / 20 > free),
        Ok(other) => panic!("expected OutOfMemory, got {other:?}"),
        Err(e) => eprintln!("host could not allocate the {nb}-block test matrix ({e}); device check not exercised"),
    }
}

#[test]
fn tiled_failures_name_the_system_and_block() {
    let Some(g) = gpu() else { return };
    let options = GpuOptions { kernels: KernelFamily::Tiled, ..GpuOptions::default() };
    let mut solver = GpuCholesky::<f64>::with_gpu(g, options).unwrap();
    let (mut a, _) = problem::<f64>(3, 9, 130, 1, 11);
    a.set_diag(2, 5, 100, 100, -1e6);
    match solver.factor(&a) {
        Err(Error::NotPositiveDefinite { system: 2, block: 5, level: 1 }) => {}
        other => panic!("expected NotPositiveDefinite at system 2 block 5, got {other:?}"),
    }
    // The same solver factors the next valid matrix.
    let (a, b) = problem::<f64>(3, 9, 130, 1, 12);
    solver.factor(&a).unwrap();
    let x = solver.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    // Two tiles, the second partial: a pivot in the second tile (level 1), then one in the
    // first (level 0).
    for (row, level, block) in [(80, 1, 5), (10, 0, 4)] {
        let (mut a, _) = problem::<f64>(3, 9, 100, 1, 13);
        a.set_diag(2, block, row, row, -1e6);
        match solver.factor(&a) {
            Err(Error::NotPositiveDefinite { system: 2, block: b, level: l }) if b == block && l == level => {}
            other => panic!("expected NotPositiveDefinite at system 2 block {block}, got {other:?}"),
        }
    }
}

/// The tiled engine's factor + solve runs each level's forward sweep on a second stream
/// beside the factorization of the levels above. The kernels and their order per buffer
/// are those of a factorization followed by a solve, so the solutions have the same bits,
/// with graphs (captured, then replayed) and without; node walks (n = 128, 200), the
/// explicit inverses formed beside the column steps (n = 320, every level at N = 9; at
/// N = 130 levels 0 and 1 take the per-step diagonal solves), several passes of
/// right-hand-side columns (k = 70), a batch. A failure leaves the right-hand side as it
/// was.
#[test]
fn tiled_factor_solve_with_the_forward_sweep_beside_matches_factor_then_solve() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    for graphs in [true, false] {
        let options = GpuOptions { kernels: KernelFamily::Tiled, graphs, ..GpuOptions::default() };
        let mut beside = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        let mut apart = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        for (i, (batch, nb, n, k)) in
            [(1, 1000, 128, 1), (3, 64, 200, 3), (1, 9, 320, 2), (1, 130, 320, 1), (2, 5, 129, 70)].into_iter().enumerate()
        {
            let (a, b) = problem::<f64>(batch, nb, n, k, seed + i as u64);
            apart.factor(&a).unwrap();
            let expected = apart.solve(&b).unwrap();
            assert!(residual::accuracy(&a, &expected, &b).unwrap().relative_residual < 1e-12);
            for round in 0..2 {
                let x = beside.factor_solve(&a, &b).unwrap();
                assert_eq!(bits(&x), bits(&expected), "graphs {graphs}, S={batch} N={nb} n={n} k={k}, round {round} (seed {seed})");
            }
            let mut bad = a.clone();
            bad.set_diag(batch - 1, nb / 2, n - 1, n - 1, -1e6);
            let mut x = b.clone();
            match beside.factor_solve_in_place(&bad, &mut x) {
                Err(Error::NotPositiveDefinite { system, block, .. }) if system == batch - 1 && block == nb / 2 => {}
                other => panic!("graphs {graphs}, n = {n}: expected system {} block {}, got {other:?}", batch - 1, nb / 2),
            }
            assert_eq!(bits(&x), bits(&b), "graphs {graphs}, n = {n}: the right-hand side was touched");
        }
    }
}
#[test]
fn batches_of_7_and_256_systems() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut s64 = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    let mut s32 = GpuCholesky::<f32>::with_gpu(g, GpuOptions::default()).unwrap();
    for &batch in &[7usize, 256] {
        for (i, &n) in [1usize, 3, 8, 16, 32, 64].iter().enumerate() {
            for (j, &nb) in [1usize, 2, 3, 5, 64].iter().enumerate() {
                let k = KS[(i + j) % 3];
                residual_check(batch, nb, n, k, seed + (100 * i + j) as u64, 1e-12, &mut s64);
                residual_check(batch, nb, n, k, seed + (100 * i + j) as u64, 1e-5, &mut s32);
            }
        }
    }
    residual_check(256, 1000, 8, 3, seed, 1e-12, &mut s64);
    residual_check(7, 4097, 16, 1, seed, 1e-12, &mut s64);
}

/// Many right-hand-side columns (`level::columns`, 32 columns per pass of a node) after
/// the rows factor (n <= 16) and the blocked one: one and several passes, per-level
/// launches and the single launch, after a plain and after an interlaced factor, f64 and
/// f32.
#[test]
fn many_columns_at_every_fused_size() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut s64 = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    let mut s32 = GpuCholesky::<f32>::with_gpu(g, GpuOptions::default()).unwrap();
    let cases = [
        (1, 4097, 64, 3),
        (1, 300, 40, 33),
        (3, 5, 17, 70),
        (2, 1000, 32, 8),
        (1, 1, 64, 31),
        (1, 2000, 50, 16),
        (1, 4097, 16, 3),
        (1, 300, 5, 33),
        (3, 9, 13, 70),
        (2, 1000, 8, 4),
        (1, 1, 16, 31),
        (1, 2000, 12, 16),
        (1, 16384, 3, 9),
    ];
    for (i, &(batch, nb, n, k)) in cases.iter().enumerate() {
        residual_check(batch, nb, n, k, seed + i as u64, 1e-12, &mut s64);
        residual_check(batch, nb, n, k, seed + i as u64, 1e-5, &mut s32);
        let (a, b) = problem::<f64>(batch, nb, n, k, seed + 50 + i as u64);
        let x = s64.factor_solve(&a, &b).unwrap();
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "interlaced S={batch} N={nb} n={n} k={k}");
    }
}

#[test]
fn both_kernel_families_agree() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    const SMALL: &[usize] = &[1, 3, 4, 5, 8, 13, 16, 17, 31, 32];
    const LARGE: &[usize] = &[1, 5, 16, 31, 32, 33, 50, 64, 65, 96];
    const BLOCKED: &[usize] = &[1, 5, 8, 9, 16, 31, 32, 33, 41, 50, 63, 64];
    for family in [KernelFamily::Generic, KernelFamily::Rows, KernelFamily::Panel, KernelFamily::Blocked] {
        let mut s64 = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions { kernels: family, ..Default::default() }).unwrap();
        let mut s32 = GpuCholesky::<f32>::with_gpu(g.clone(), GpuOptions { kernels: family, ..Default::default() }).unwrap();
        let sizes = match family {
            KernelFamily::Rows => SMALL,
            KernelFamily::Blocked => BLOCKED,
            _ => LARGE,
        };
        for (i, &n) in sizes.iter().enumerate() {
            for (j, &nb) in [1usize, 2, 7, 300].iter().enumerate() {
                let k = KS[(i + j) % 3];
                residual_check(3, nb, n, k, seed + (31 * i + j) as u64, 1e-12, &mut s64);
                residual_check(2, nb, n, k, seed + (31 * i + j) as u64, 1e-5, &mut s32);
                let (a, b) = problem::<f64>(1, nb, n, k, seed + 7);
                let x = s64.factor_solve(&a, &b).unwrap();
                assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "{family:?} interlaced n={n} N={nb}");
            }
        }
    }
}

/// The rows kernels' single-launch sweeps (every level in one launch, nodes ordered by
/// completion flags: `blocktri_device::level::dataflow`) on long chains and large
/// batches, where nodes of many levels run at once: residuals, agreement with the
/// per-level launches, repeated runs with fresh right-hand sides (a missing dependency
/// would show as a wrong or changing result), and failures named with system and block
/// while other subtrees go on.
#[test]
fn single_launch_sweeps_match_the_level_launches() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let options = |kernels| GpuOptions { kernels, ..GpuOptions::default() };
    let mut one = GpuCholesky::<f64>::with_gpu(g.clone(), options(KernelFamily::Rows)).unwrap();
    let mut per_level = GpuCholesky::<f64>::with_gpu(g.clone(), options(KernelFamily::RowsLevels)).unwrap();
    let mut one32 = GpuCholesky::<f32>::with_gpu(g.clone(), options(KernelFamily::Rows)).unwrap();
    let shapes = [(1, 16384, 16, 1), (1, 50_000, 4, 2), (700, 64, 8, 3), (3, 4097, 13, 1), (2, 1000, 32, 2), (5, 3, 16, 16)];
    for (i, &(s, nb, n, k)) in shapes.iter().enumerate() {
        let case = seed + 10 * i as u64;
        let (a, b) = problem::<f64>(s, nb, n, k, case);
        per_level.factor(&a).unwrap();
        let reference = per_level.solve(&b).unwrap();
        one.factor(&a).unwrap();
        for round in 0..3u64 {
            let (_, b) = problem::<f64>(s, nb, n, k, case + round);
            let x = one.solve(&b).unwrap();
            let r = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
            assert!(r < 1e-12, "single launch S={s} N={nb} n={n} k={k} round {round}: residual {r:e} (seed {seed})");
        }
        let x = one.solve(&b).unwrap();
        let scale = reference.as_slice().iter().fold(0f64, |m, v| m.max(v.abs()));
        let diff = x.as_slice().iter().zip(reference.as_slice()).fold(0f64, |m, (p, q)| m.max((p - q).abs()));
        assert!(diff <= 1e-10 * scale, "single launch vs per level S={s} N={nb} n={n}: {diff:e} of {scale:e}");
        // Interlaced: the factor launch also runs the forward substitution.
        let x = one.factor_solve(&a, &b).unwrap();
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "interlaced S={s} N={nb} n={n}");
        residual_check(s, nb, n, k, case, 1e-5, &mut one32);
    }
    // A failure deep in one system of a batch: reported with its system, block and level,
    // the other subtrees and systems unaffected; the solver goes on with the next matrix.
    let (mut a, b) = problem::<f64>(4, 5000, 8, 1, seed + 99);
    a.set_diag(2, 1535, 3, 3, -1e6); // 0-based block 1535 = 1-based 1536 = 3 * 2^9: level 9
    match one.factor(&a) {
        Err(Error::NotPositiveDefinite { system: 2, block: 1535, level: 9 }) => {}
        other => panic!("expected NotPositiveDefinite at system 2 block 1535 level 9, got {other:?}"),
    }
    let (a, _) = problem::<f64>(4, 5000, 8, 1, seed + 100);
    one.factor(&a).unwrap();
    let x = one.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
}

/// The chain engine (one block per system, natural order) on the grid of shapes,
/// chosen explicitly and by `Auto` for a batch that fills the device; failures named with
/// system and block; results bitwise the same run to run (no atomics).
#[test]
fn chain_engine_every_shape() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let options = GpuOptions { kernels: KernelFamily::Chain, ..GpuOptions::default() };
    let mut s64 = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
    let mut s32 = GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap();
    for (i, &n) in [1usize, 2, 8, 16, 17, 24, 33, 48, 64, 65, 96].iter().enumerate() {
        for (j, &nb) in [1usize, 2, 3, 64, 1000].iter().enumerate() {
            for (q, &batch) in [1usize, 7].iter().enumerate() {
                let k = [1, 3, 16][(i + j + q) % 3];
                let case = seed + (100 * i + 10 * j + q) as u64;
                residual_check(batch, nb, n, k, case, 1e-12, &mut s64);
                residual_check(batch, nb, n, k, case, 1e-5, &mut s32);
                let (a, b) = problem::<f64>(batch, nb, n, k, case);
                let x = s64.factor_solve(&a, &b).unwrap();
                assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "chain interlaced S={batch} N={nb} n={n}");
                let again = s64.factor_solve(&a, &b).unwrap();
                assert_eq!(
                    x.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    again.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }
    // Auto on a batch of 8 systems per multiprocessor takes the chain engine (register
    // rows up to n = 16, strips above).
    let batch = 8 * g.info().multiprocessors as usize;
    let mut auto = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    for n in [3, 8, 16, 24, 64] {
        residual_check(batch, 16, n, 1, seed + n as u64, 1e-12, &mut auto);
    }
    // Failures: not positive definite at system 5, block 40 (register rows and strips);
    // non-finite in system 2.
    for n in [16, 40] {
        let (mut a, b) = problem::<f64>(7, 64, n, 1, seed);
        a.set_diag(5, 40, 3, 3, -1e3);
        match s64.factor(&a) {
            Err(Error::NotPositiveDefinite { system: 5, block: 40, level: 0 }) => {}
            other => panic!("n = {n}: {other:?}"),
        }
        assert!(matches!(s64.solve(&b), Err(Error::NotFactored)));
        // The same through factor + solve (interlaced at n = 16).
        match s64.factor_solve(&a, &b) {
            Err(Error::NotPositiveDefinite { system: 5, block: 40, level: 0 }) => {}
            other => panic!("factor_solve, n = {n}: {other:?}"),
        }
    }
    let (mut a, _) = problem::<f64>(7, 64, 16, 1, seed);
    a.sub_block_mut(2, 10)[5] = f64::INFINITY;
    match s64.factor(&a) {
        Err(Error::NonFinite { system: 2, block: 10, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Blocks that do not fit in shared memory: a clear error, not a launch failure.
    let (a, _) = problem::<f64>(1, 2, 200, 1, seed);
    assert!(matches!(s64.factor(&a), Err(Error::Unsupported(_))));
}

#[test]
fn matches_the_cpu_reference_solution() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut solver = GpuCholesky::<f64>::with_gpu(g, GpuOptions::default()).unwrap();
    for (s, nb, n, k) in [(1, 1, 1, 1), (2, 2, 3, 2), (3, 5, 7, 3), (1, 17, 8, 16), (2, 33, 16, 1), (1, 9, 31, 2)] {
        let (a, b) = problem::<f64>(s, nb, n, k, seed);
        solver.factor(&a).unwrap();
        let x = solver.solve(&b).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-12, "S={s} N={nb} n={n}: {err:e} (seed {seed})");
    }
}

/// The bit patterns of a vector's values (to compare results bitwise).
fn bits(x: &BlockVec<f64>) -> Vec<u64> {
    x.as_slice().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn interlaced_factor_solve_graphs_and_refactor_agree() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(4, 300, 16, 3, seed);
    let (a2, _) = problem::<f64>(4, 300, 16, 3, seed + 1);
    let mut with_graphs = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    let mut without = GpuCholesky::<f64>::with_gpu(g, GpuOptions { graphs: false, ..Default::default() }).unwrap();
    let x1 = with_graphs.factor_solve(&a, &b).unwrap();
    without.factor(&a).unwrap();
    let x2 = without.solve(&b).unwrap();
    assert!(error_vs_reference(&x1, &x2.cast()) < 1e-12);
    // Refactor with new values, same shape: graph replay.
    for _ in 0..3 {
        with_graphs.refactor(&a2).unwrap();
        let x = with_graphs.solve(&b).unwrap();
        assert!(residual::accuracy(&a2, &x, &b).unwrap().relative_residual < 1e-12);
    }
    // In place (a Newton loop's call): the result of `factor_solve` (the same bits on the
    // chain engine; nested dissection's fused kernels add their updates in no fixed
    // order), every engine that interlaces (nested dissection's rows at n = 16, the
    // blocked factor, the register chain with one column); a failure leaves the
    // right-hand side as it was.
    for (batch, kernels, k) in
        [(4, KernelFamily::Auto, 3), (4, KernelFamily::Auto, 1), (4, KernelFamily::Blocked, 2), (9, KernelFamily::Chain, 1)]
    {
        let (a, b) = problem::<f64>(batch, 300, 16, k, seed + 2);
        let mut solver = GpuCholesky::<f64>::with_gpu(with_graphs.gpu().clone(), GpuOptions { kernels, ..Default::default() }).unwrap();
        let expected = solver.factor_solve(&a, &b).unwrap();
        for _ in 0..2 {
            let mut x = b.clone();
            solver.factor_solve_in_place(&a, &mut x).unwrap();
            if kernels == KernelFamily::Chain {
                assert_eq!(bits(&x), bits(&expected), "{kernels:?} k = {k}");
            }
            let err = error_vs_reference(&x, &expected);
            assert!(err < 1e-13, "{kernels:?} k = {k}: {err:e} (seed {seed})");
        }
        let mut bad = a.clone();
        bad.set_diag(batch - 1, 200, 2, 2, -1e3);
        let mut x = b.clone();
        match solver.factor_solve_in_place(&bad, &mut x) {
            Err(Error::NotPositiveDefinite { system, block: 200, .. }) if system == batch - 1 => {}
            other => panic!("{kernels:?}: {other:?}"),
        }
        assert_eq!(bits(&x), bits(&b), "{kernels:?}: the right-hand side was touched");
    }
    // Several right-hand-side sets on their own streams.
    let sets: Vec<BlockVec<f64>> = (0..3).map(|i| generate::random_rhs(a2.shape(), 1 + i, seed + 9 + i as u64).unwrap()).collect();
    let xs = with_graphs.solve_many(&sets).unwrap();
    for (x, b) in xs.iter().zip(&sets) {
        assert!(residual::accuracy(&a2, x, b).unwrap().relative_residual < 1e-12);
    }
}

/// `profile_factor_solve` times the launches of one factor + solve call: with the blocked
/// family the interlaced factor kernels and no forward-sweep launch, where `profile` times
/// a factor and both sweeps. Both leave the solution in the right-hand sides.
#[test]
fn profiles_time_the_launches_of_each_call() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(1, 700, 40, 1, seed);
    let options = GpuOptions { kernels: KernelFamily::Blocked, graphs: false, ..Default::default() };
    let mut solver = GpuCholesky::<f64>::with_gpu(g, options).unwrap();
    solver.upload(&a).unwrap();
    for factor_solve in [false, true] {
        solver.upload_rhs(&b).unwrap();
        let launches = if factor_solve { solver.profile_factor_solve() } else { solver.profile() }.unwrap();
        let kernels: Vec<&str> = launches.iter().map(|l| l.0.as_str()).collect();
        let interlaced = kernels.iter().any(|k| k.starts_with(names::FACTOR_SOLVE_BLOCKED));
        let forward = kernels.iter().any(|k| k.starts_with(names::SOLVE_FORWARD_PANEL));
        assert_eq!((interlaced, forward), (factor_solve, !factor_solve), "{kernels:?}");
        assert!(launches.iter().all(|l| l.6 > 0.0), "{launches:?}");
        solver.check_factor().unwrap();
        let mut x = b.clone();
        solver.download_rhs(&mut x).unwrap();
        let r = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
        assert!(r < 1e-12, "factor_solve {factor_solve}: {r:e} (seed {seed})");
    }
}

/// Solves that alternate right-hand-side counts (as the arrowhead solver does: `a`
/// columns, then `k`) replay a graph per count instead of capturing again each time, and
/// stay right.
#[test]
fn alternating_column_counts_replay_their_graphs() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, _) = problem::<f64>(2, 200, 8, 1, seed);
    let mut solver = GpuCholesky::<f64>::with_gpu(g, GpuOptions::default()).unwrap();
    solver.factor(&a).unwrap();
    let sets: Vec<BlockVec<f64>> = [8usize, 1, 3].iter().map(|&k| generate::random_rhs(a.shape(), k, seed + k as u64).unwrap()).collect();
    let mut captured = 0;
    for round in 0..3 {
        for b in &sets {
            let x = solver.solve(b).unwrap();
            let acc = residual::accuracy(&a, &x, b).unwrap();
            assert!(acc.relative_residual < 1e-12, "k = {}: residual {:e} (seed {seed})", b.ncols(), acc.relative_residual);
        }
        if round == 0 {
            captured = solver.graph_captures();
        }
    }
    assert_eq!(solver.graph_captures(), captured, "later rounds captured again");
}

#[test]
fn failures_name_the_system_and_block() {
    let Some(g) = gpu() else { return };
    let mut solver = GpuCholesky::<f64>::with_gpu(g, GpuOptions::default()).unwrap();
    let (mut a, b) = problem::<f64>(3, 100, 8, 1, 5);
    a.set_diag(2, 37, 4, 4, -1e3);
    match solver.factor(&a) {
        Err(Error::NotPositiveDefinite { system: 2, block: 37, .. }) => {}
        other => panic!("expected block 37 of system 2, got {other:?}"),
    }
    assert!(matches!(solver.solve(&b), Err(Error::NotFactored)));
    let (mut a, _) = problem::<f64>(2, 64, 4, 1, 6);
    a.diag_block_mut(1, 10)[3] = f64::INFINITY;
    assert!(matches!(solver.factor(&a), Err(Error::NonFinite { system: 1, block: 10, .. })));
    let (mut a, _) = problem::<f64>(1, 64, 4, 1, 7);
    a.diag_block_mut(0, 20)[1] += 1.0;
    assert!(matches!(solver.factor(&a), Err(Error::NotSymmetric { system: 0, block: 20, .. })));
    // Too large a block for the fused kernels: a clear error, not a crash.
    let big = solver.max_block_size() + 1;
    let (a, _) = problem::<f64>(1, 2, big, 1, 8);
    assert!(matches!(solver.factor(&a), Err(Error::Unsupported(_))));
    // A non-finite right-hand side.
    let (a, mut b) = problem::<f64>(1, 10, 4, 1, 9);
    solver.factor(&a).unwrap();
    b.as_mut_slice()[7] = f64::NAN;
    assert!(matches!(solver.solve(&b), Err(Error::NonFinite { .. })));
}

/// The blocked factor reports an indefinite pivot in a later strip (found by the look-ahead
/// warp) with its system and block, in both precisions, and the next factor succeeds.
#[test]
fn blocked_failures_name_the_system_and_block() {
    let Some(g) = gpu() else { return };
    let options = GpuOptions { kernels: KernelFamily::Blocked, ..GpuOptions::default() };
    let (mut a, _) = problem::<f64>(3, 100, 40, 1, 11);
    a.set_diag(2, 37, 30, 30, -1e4);
    let mut s64 = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
    assert!(matches!(s64.factor(&a), Err(Error::NotPositiveDefinite { system: 2, block: 37, .. })));
    let a32 = a.cast::<f32>();
    let mut s32 = GpuCholesky::<f32>::with_gpu(g, options).unwrap();
    assert!(matches!(s32.factor(&a32), Err(Error::NotPositiveDefinite { system: 2, block: 37, .. })));
    let (a, b) = problem::<f64>(3, 100, 40, 1, 12);
    let x = s64.factor_solve(&a, &b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
}

#[test]
fn batched_potrf_smoke_kernel_matches_the_cpu() {
    let Some(g) = gpu() else { return };
    let (n, count) = (24usize, 100usize);
    let mut tiles = Vec::with_capacity(count * n * n);
    let mut reference = Vec::new();
    for t in 0..count {
        let m = common::random_matrix(n, n, t as u64);
        let d = &m * m.transpose() + nalgebra::DMatrix::identity(n, n) * n as f64;
        tiles.extend_from_slice(d.as_slice());
        reference.push(d.cholesky().unwrap().l());
    }
    let st = g.stream();
    let buf = DeviceBuffer::from_host(st, &tiles).unwrap();
    let info = DeviceBuffer::<u32>::poisoned(st, count).unwrap();
    let kernel = g.kernel(kernel_name::<f64>(names::POTRF_BATCHED).as_str()).unwrap();
    let args = PotrfBatchedArgs::<f64> { tiles: buf.ptr().as_mut_ptr(), info: info.ptr().as_mut_ptr(), n: n as u32, ld: n as u32 };
    // SAFETY: `count` tiles of n x n at ld n, `count` status words, shared memory as documented.
    unsafe { kernel.launch(st, LaunchConfig::linear(count as u32, 128, potrf_batched_shared_bytes(n, 8) as u32), (args,)).unwrap() };
    let out = buf.to_vec().unwrap();
    assert!(info.to_vec().unwrap().iter().all(|&v| v == u32::MAX));
    let mut worst = 0.0f64;
    for (t, l) in reference.iter().enumerate() {
        for c in 0..n {
            for r in 0..n {
                worst = worst.max((out[t * n * n + c * n + r] - l[(r, c)]).abs());
            }
        }
    }
    assert!(worst < 1e-12, "max |L_gpu - L_cpu| = {worst:e}");
}
