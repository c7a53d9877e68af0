//! Small and medium runs of every kernel, sized for `compute-sanitizer` (memcheck,
//! racecheck, synccheck): `scripts/gpu-check.sh` runs this binary under each tool.
//! Without a GPU the tests print why they skip.

mod common;

use blocktri::cuda::{Gpu, GpuCholesky, GpuOptions, GpuTridiagInverse, KernelFamily};
use blocktri::tridiag::{Tridiagonal, inverse_error};
use blocktri::{Factorization, residual};
use common::problem;

fn gpu() -> Option<std::sync::Arc<Gpu>> {
    Gpu::shared().map_err(|e| eprintln!("skipping: {e}")).ok()
}

fn solve_case<T: blocktri::Scalar>(g: &std::sync::Arc<Gpu>, s: usize, nb: usize, n: usize, k: usize, tol: f64) {
    family_case::<T>(g, KernelFamily::Auto, (s, nb, n, k), tol);
}

fn family_case<T: blocktri::Scalar>(g: &std::sync::Arc<Gpu>, kernels: KernelFamily, (s, nb, n, k): (usize, usize, usize, usize), tol: f64) {
    let (a, b) = problem::<T>(s, nb, n, k, 3);
    let mut solver = GpuCholesky::<T>::with_gpu(g.clone(), GpuOptions { graphs: false, kernels, ..Default::default() }).unwrap();
    solver.factor(&a).unwrap();
    let x = solver.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < tol);
    let x = solver.factor_solve(&a, &b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < tol);
}

#[test]
fn sanitize_cholesky_small() {
    let Some(g) = gpu() else { return };
    solve_case::<f64>(&g, 2, 9, 8, 3, 1e-12);
    solve_case::<f32>(&g, 2, 9, 7, 3, 1e-5);
    solve_case::<f64>(&g, 1, 1, 3, 1, 1e-12);
    // The rows family's single launch at padded size 16, a batch.
    solve_case::<f64>(&g, 2, 40, 16, 2, 1e-12);
    // Level 0 in the per-level launch at padded size 16 (two nodes per block, the last
    // block's second slot empty; f64 products on the tensor cores), padding rows, then
    // the single launch.
    solve_case::<f64>(&g, 1, 2203, 13, 1, 1e-12);
    // f32 and a batch: level 0's solves a warp per node (both sweeps in `solve`, the
    // backward one after the interlaced factor), the last block's last two warps without
    // a node (3 x 750 nodes), two columns.
    solve_case::<f32>(&g, 3, 1500, 16, 2, 1e-5);
}

#[test]
fn sanitize_cholesky_generic_family() {
    let Some(g) = gpu() else { return };
    let (a, b) = problem::<f64>(2, 33, 12, 2, 4);
    let opts = GpuOptions { graphs: false, kernels: blocktri::cuda::KernelFamily::Generic, ..Default::default() };
    let mut solver = GpuCholesky::<f64>::with_gpu(g, opts).unwrap();
    let x = solver.factor_solve(&a, &b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    solver.factor(&a).unwrap();
    let x = solver.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
}

#[test]
fn sanitize_cholesky_every_family() {
    let Some(g) = gpu() else { return };
    family_case::<f64>(&g, KernelFamily::Rows, (2, 40, 27, 2), 1e-12);
    family_case::<f64>(&g, KernelFamily::RowsLevels, (2, 40, 27, 2), 1e-12);
    family_case::<f32>(&g, KernelFamily::Rows, (3, 300, 8, 2), 1e-5);
    family_case::<f64>(&g, KernelFamily::Panel, (2, 40, 27, 2), 1e-12);
    family_case::<f32>(&g, KernelFamily::Panel, (1, 20, 70, 1), 1e-4);
    family_case::<f64>(&g, KernelFamily::Blocked, (2, 40, 27, 2), 1e-12);
    family_case::<f64>(&g, KernelFamily::Blocked, (1, 9, 64, 1), 1e-12);
    family_case::<f32>(&g, KernelFamily::Blocked, (1, 20, 57, 1), 1e-4);
    // Level 0 in the per-level blocked launches (more nodes than the single launch takes),
    // at their own block sizes and register caps: f64 at padded sizes 64 and 32, f32.
    family_case::<f64>(&g, KernelFamily::Blocked, (2, 700, 60, 1), 1e-12);
    family_case::<f32>(&g, KernelFamily::Blocked, (2, 700, 40, 1), 1e-4);
    family_case::<f32>(&g, KernelFamily::Blocked, (3, 600, 20, 1), 1e-4);
    family_case::<f64>(&g, KernelFamily::Generic, (1, 20, 70, 1), 1e-12);
}

/// The solve of short chains in one thread block per system (`level::solve_rows_block`):
/// a warp per node of level 0 (32 warps in f32 at padded size 4, N = 64; 16 and fewer in
/// f64), and warps that take level 0's nodes in two rounds (f64, N = 64 at padded size 8)
/// or three (f64, N = 128 at 4: there the registers allow 28 warps; `docs/perf-notes.md`
/// entries 106 and 108); padded sizes 4 and 8, batches, two columns.
#[test]
fn sanitize_rows_block_solve() {
    let Some(g) = gpu() else { return };
    family_case::<f64>(&g, KernelFamily::Rows, (1, 32, 8, 1), 1e-12);
    family_case::<f64>(&g, KernelFamily::Rows, (2, 25, 7, 1), 1e-12);
    family_case::<f64>(&g, KernelFamily::Rows, (3, 30, 3, 2), 1e-12);
    family_case::<f32>(&g, KernelFamily::Rows, (2, 64, 3, 1), 1e-4);
    family_case::<f64>(&g, KernelFamily::Rows, (1, 64, 8, 1), 1e-12);
    family_case::<f64>(&g, KernelFamily::Rows, (2, 128, 4, 1), 1e-12);
}

/// The blocked factor with its interlaced forward substitution (`factor_solve_blocked`
/// and its single launch; `docs/perf-notes.md` entry 78), small enough for racecheck:
/// level 0 in per-level launches at padded sizes 64 and 32, the rest in the single launch.
#[test]
fn sanitize_cholesky_blocked_interlaced() {
    let Some(g) = gpu() else { return };
    family_case::<f64>(&g, KernelFamily::Blocked, (1, 300, 50, 1), 1e-12);
    family_case::<f64>(&g, KernelFamily::Blocked, (1, 600, 30, 3), 1e-12);
    family_case::<f32>(&g, KernelFamily::Blocked, (2, 40, 20, 2), 1e-4);
}

/// The solves of many right-hand-side columns (`level::columns`), per level and in the
/// single launch: two groups of columns at padded size 64, one at 32, f32; after the rows
/// factor at padded sizes 8, 16 and 32 (f32), interlaced (four columns) or not.
#[test]
fn sanitize_column_solves() {
    let Some(g) = gpu() else { return };
    family_case::<f64>(&g, KernelFamily::Blocked, (1, 300, 50, 40), 1e-12);
    family_case::<f64>(&g, KernelFamily::Blocked, (2, 200, 30, 5), 1e-12);
    family_case::<f32>(&g, KernelFamily::Panel, (2, 40, 20, 33), 1e-4);
    family_case::<f64>(&g, KernelFamily::Rows, (1, 3000, 16, 40), 1e-12);
    family_case::<f64>(&g, KernelFamily::Rows, (2, 2000, 7, 4), 1e-12);
    family_case::<f32>(&g, KernelFamily::Rows, (2, 40, 24, 33), 1e-4);
}

/// One chain larger than a device-memory cap, in segments on two lanes: pass 1's coupling
/// columns are solved on the tree's edge nodes only (`edge_from`) by the column solves
/// (`level::columns`, per level and in the single launch) after the rows factor at padded
/// sizes 8 and 16 and after the blocked factor, and by the rows solves themselves at
/// n = 1 (three columns in batches of more than 4096 blocks: below the column solves'
/// threshold there).
#[test]
fn sanitize_segments_on_the_edges() {
    let Some(_) = gpu() else { return };
    let g = Gpu::with_ordinal(0).unwrap(); // the cap stays with this handle
    for (nb, n, k) in [(400, 8, 1), (300, 16, 2), (120, 40, 1), (40_000, 1, 1)] {
        let (a, b) = problem::<f64>(1, nb, n, k, 5);
        let one = GpuCholesky::<f64>::required_memory(blocktri::Shape::new(1, nb, n).unwrap(), k);
        g.set_memory_limit(Some(one / 3));
        let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions { graphs: false, ..Default::default() }).unwrap();
        let x = solver.factor_solve(&a, &b).unwrap();
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "N = {nb}, n = {n}");
        g.set_memory_limit(None);
    }
}

#[test]
fn sanitize_cholesky_large() {
    let Some(g) = gpu() else { return };
    solve_case::<f64>(&g, 3, 1000, 32, 2, 1e-12);
    solve_case::<f64>(&g, 2, 3000, 16, 2, 1e-12);
    solve_case::<f64>(&g, 1, 257, 64, 1, 1e-12);
    // Two levels with more nodes than the GPU runs at once: the backward sweep's subtree
    // launch at padded size 4.
    solve_case::<f32>(&g, 1, 2200, 4, 1, 1e-5);
}

#[test]
fn sanitize_cholesky_chain() {
    let Some(g) = gpu() else { return };
    // Small and large blocks, a batch, right-hand sides over several solve passes.
    family_case::<f64>(&g, KernelFamily::Chain, (3, 20, 27, 2), 1e-12);
    family_case::<f32>(&g, KernelFamily::Chain, (2, 9, 8, 3), 1e-5);
    // Lane groups: two systems per warp at n = 16, eight at n = 3; the last warp part empty.
    family_case::<f64>(&g, KernelFamily::Chain, (5, 11, 16, 2), 1e-12);
    family_case::<f64>(&g, KernelFamily::Chain, (11, 6, 3, 1), 1e-12);
    family_case::<f64>(&g, KernelFamily::Chain, (2, 6, 96, 40), 1e-12);
    // The strip-blocked factor, both padded sizes, partial strips.
    family_case::<f64>(&g, KernelFamily::Chain, (2, 9, 64, 3), 1e-12);
    family_case::<f32>(&g, KernelFamily::Chain, (1, 7, 41, 2), 1e-4);
    // Selected inversion and log-determinant of the chain factor.
    let (a, _) = problem::<f64>(2, 7, 12, 1, 5);
    let mut solver =
        GpuCholesky::<f64>::with_gpu(g, GpuOptions { graphs: false, kernels: KernelFamily::Chain, ..Default::default() }).unwrap();
    solver.factor(&a).unwrap();
    assert!(solver.selected_inverse().unwrap().diag_block(1, 6).iter().all(|v| v.is_finite()));
    assert!(solver.log_determinant().unwrap().iter().all(|v| v.is_finite()));
}

#[test]
fn sanitize_cholesky_tiled() {
    let Some(g) = gpu() else { return };
    // Small: one partial tile, a batch, the fused range forced onto the tiled engine.
    family_case::<f64>(&g, KernelFamily::Tiled, (2, 9, 33, 3), 1e-12);
    family_case::<f32>(&g, KernelFamily::Tiled, (2, 9, 33, 3), 1e-4);
    // Two tiles, the second partial (every column step of a level updates the last one).
    solve_case::<f64>(&g, 2, 5, 100, 1, 1e-12);
    family_case::<f32>(&g, KernelFamily::Tiled, (1, 5, 120, 1), 1e-4);
    // Large: three tiles with a partial one, more right-hand sides than one solve pass.
    solve_case::<f64>(&g, 1, 6, 150, 10, 1e-12);
    solve_case::<f32>(&g, 1, 6, 150, 2, 1e-4);
    // Five tiles, the last partial: the explicit inverses of every level's diagonal
    // blocks and the solves' products with them (or with `BLOCKTRI_INVERSE_SOLVES=off`
    // several blocks per node in every diagonal solve step); nine columns, two passes.
    solve_case::<f64>(&g, 1, 5, 300, 9, 1e-12);
    solve_case::<f32>(&g, 2, 3, 300, 1, 1e-4);
    // Eight tiles, the last partial: a wide pair of columns from step 6 where the pairs
    // are forced (`BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0`).
    solve_case::<f64>(&g, 1, 3, 450, 1, 1e-12);
}

#[test]
fn sanitize_selected_inversion() {
    let Some(g) = gpu() else { return };
    // Staged sweeps (a warp per node, a block per node) and tiled ones: fragment products
    // over two tiles (a batch), scalar products over three tiles with a partial one, f32.
    fn case<T: blocktri::Scalar>(g: &std::sync::Arc<Gpu>, (s, nb, n): (usize, usize, usize), tol: f64) {
        let (a, _) = problem::<T>(s, nb, n, 1, 9);
        let mut solver = GpuCholesky::<T>::with_gpu(g.clone(), GpuOptions { graphs: false, ..Default::default() }).unwrap();
        solver.factor(&a).unwrap();
        let got = solver.selected_inverse().unwrap();
        let mut reference = blocktri::cpu::SequentialCholesky::new();
        reference.factor(&a).unwrap();
        let (got, want) = (got.cast::<f64>(), reference.selected_inverse().unwrap().cast::<f64>());
        // Every stored entry: the diagonal blocks and the blocks beside them.
        let mut worst = 0.0f64;
        for sys in 0..s {
            for row in 0..nb * n {
                for col in (row / n).saturating_sub(1) * n..((row / n + 2).min(nb)) * n {
                    worst = worst.max((got.get(sys, row, col) - want.get(sys, row, col)).abs());
                }
            }
        }
        assert!(worst < tol, "S={s} N={nb} n={n}: {worst:e}");
    }
    case::<f64>(&g, (2, 9, 16), 1e-10);
    case::<f64>(&g, (1, 7, 40), 1e-10);
    case::<f64>(&g, (2, 5, 80), 1e-10);
    case::<f64>(&g, (1, 3, 130), 1e-10);
    case::<f32>(&g, (1, 4, 136), 1e-2);
}

#[test]
fn sanitize_cholesky_tiled_tf32() {
    let Some(g) = gpu() else { return };
    // Small (one partial tile, a batch) and large (three tiles, the last partial), each
    // TF32 product kind.
    for f32_products in [blocktri::cuda::F32Products::Tf32, blocktri::cuda::F32Products::Tf32x3] {
        for (s, nb, n, k) in [(2, 9, 33, 3), (1, 6, 150, 2)] {
            let (a, b) = problem::<f32>(s, nb, n, k, 6);
            let options = GpuOptions { graphs: false, f32_products, ..Default::default() };
            let mut solver = GpuCholesky::<f32>::with_gpu(g.clone(), options).unwrap();
            let x = solver.factor_solve(&a, &b).unwrap();
            assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-2);
        }
    }
}

#[test]
fn sanitize_mixed_refinement() {
    let Some(g) = gpu() else { return };
    // The refinement kernels on a batch with two row passes (n = 300) and on small blocks
    // with several columns.
    for (s, nb, n, k) in [(2, 3, 300, 1), (3, 9, 7, 3)] {
        let (a, b) = problem::<f64>(s, nb, n, k, 8);
        let mut mixed = blocktri::cuda::MixedCholesky::with_gpu(g.clone(), Default::default()).unwrap();
        mixed.factor(&a).unwrap();
        let x = mixed.solve(&b).unwrap();
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    }
}

#[test]
fn sanitize_tridiag() {
    let Some(g) = gpu() else { return };
    let mut inv = GpuTridiagInverse::with_gpu(g).unwrap();
    // n = 5000, two matrices: the fused method streams 14 column panels with 2-D copies.
    for (n, stage) in [(5, false), (5, true), (200, false), (200, true), (1000, false), (5000, false)] {
        let t = Tridiagonal::<f64>::random_dominant(n, 2, false, 9).unwrap();
        let x = inv.invert(&t, stage, true).unwrap();
        assert!(inverse_error(&t, &x) < 1e-13);
    }
}

#[test]
fn sanitize_arrowhead() {
    let Some(_) = gpu() else { return };
    // The border kernels (B^T as columns, B Z over three runs of rows with a partial one,
    // z -= G x_C) around a chain factor and solve, f64 and f32.
    fn case<T: blocktri::Scalar>(tol: f64) {
        use blocktri::arrow::{ArrowSolver, ArrowVec};
        let m = blocktri::generate::random_spd_arrow::<T>(2, 600, 8, 5, 4).unwrap();
        let chain = blocktri::generate::random_rhs::<T>(m.shape(), 2, 5).unwrap();
        let b = ArrowVec::new(chain, 5, vec![T::one(); 2 * 5 * 2]).unwrap();
        let mut solver = ArrowSolver::<T>::new(blocktri::Backend::Gpu).unwrap();
        solver.factor(&m).unwrap();
        let x = solver.solve(&b).unwrap();
        let r = m.matvec(&x).unwrap();
        for s in 0..2 {
            let (rd, bd) = (r.to_dense(s), b.to_dense(s));
            assert!((rd - &bd).norm() <= tol * bd.norm(), "system {s}");
        }
    }
    case::<f64>(1e-10);
    case::<f32>(1e-3);
}

#[test]
fn sanitize_external_layouts() {
    let Some(g) = gpu() else { return };
    // The strided copies around a factor and solve: row-major host blocks transposed on the
    // device, device arrays in and out (a padded leading dimension: n = 5, ld = 8).
    use blocktri::cuda::{DeviceArray, DeviceBuffer, GpuCholesky, GpuOptions};
    let a = blocktri::generate::random_spd::<f64>(2, 30, 5, 3).unwrap().repad(5).unwrap();
    let b = blocktri::generate::random_rhs::<f64>(a.shape(), 1, 3).unwrap();
    let row_major = |m: &[f64]| m.chunks(25).flat_map(|blk| (0..25).map(move |e| blk[(e % 5) * 5 + e / 5])).collect::<Vec<f64>>();
    let (d, u) = (row_major(a.diag()), row_major(a.sub()));
    let mut h = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions::default()).unwrap();
    h.upload_row_major(a.shape(), &d, &u).unwrap();
    h.factor_uploaded().unwrap();
    let mut x = vec![0.0; b.as_slice().len()];
    h.solve_slices(b.as_slice(), 1, &mut x).unwrap();
    let stream = h.stream().clone();
    let (dd, ud) = (DeviceBuffer::from_host(&stream, &d).unwrap(), DeviceBuffer::from_host(&stream, &u).unwrap());
    let (rd, xd) = (DeviceBuffer::from_host(&stream, b.as_slice()).unwrap(), DeviceBuffer::<f64>::poisoned(&stream, x.len()).unwrap());
    let view = |buf: &DeviceBuffer<f64>, blocks: usize, cols: usize| DeviceArray::row_major(buf.ptr().addr(), blocks, 5, cols);
    // SAFETY: the buffers hold the arrays the views describe, on the solver's stream.
    unsafe {
        h.upload_device(a.shape(), view(&dd, 30, 5), view(&ud, 29, 5)).unwrap();
        h.factor_uploaded().unwrap();
        h.solve_device(view(&rd, 30, 1), 1, view(&xd, 30, 1)).unwrap();
    }
    let diff = xd.to_vec().unwrap().iter().zip(&x).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(diff < 1e-12, "device and host paths differ by {diff:e}");
}
