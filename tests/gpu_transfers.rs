//! The host path on the GPU: staged and direct (page-locked) transfers, batches run in
//! chunks (forced by a chunk cap or a device-memory limit), and the tridiagonal inverse
//! streamed to host memory in panels. Each test prints why it skips when no GPU is usable.

mod common;

use blocktri::cuda::{Gpu, GpuCholesky, GpuOptions, GpuTridiagInverse, KernelFamily, PinnedBuffer, is_page_locked};
use blocktri::tridiag::{Tridiagonal, inverse_error};
use blocktri::{BlockVec, Error, Factorization, Scalar, Shape, residual};
use common::{fresh_seed, gpu, problem, worst_in_pool};
use std::sync::Arc;

fn solver<T: Scalar>(g: &Arc<Gpu>, kernels: KernelFamily, chunk_systems: Option<usize>) -> GpuCholesky<T> {
    GpuCholesky::with_gpu(g.clone(), GpuOptions { kernels, chunk_systems, ..GpuOptions::default() }).unwrap()
}

/// Relative difference of two solutions, `max |x - y| / max |y|`.
fn rel_diff<T: Scalar>(x: &BlockVec<T>, y: &BlockVec<T>) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (a, b) in x.as_slice().iter().zip(y.as_slice()) {
        let (a, b) = (blocktri::scalar::wide(*a), blocktri::scalar::wide(*b));
        d = d.max((a - b).abs());
        m = m.max(b.abs());
    }
    d / m.max(f64::MIN_POSITIVE)
}

fn bits<T: Scalar>(x: &BlockVec<T>) -> Vec<u64> {
    x.as_slice().iter().map(|v| blocktri::scalar::wide(*v).to_bits()).collect()
}

#[test]
fn staged_uploads_with_tiny_chunks_match_the_default_path() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // A padded host leading dimension (pitch conversion while staging), several chunk
    // sizes (columns split across chunks, a column wider than a chunk).
    for (n, ld, chunk) in [(8usize, 11usize, 4096usize), (65, 70, 1 << 16), (16, 16, 64), (130, 130, 512)] {
        let (a, b) = problem::<f64>(3, 9, n, 2, seed + n as u64);
        let a = a.repad(ld).unwrap();
        let mut reference = solver::<f64>(&g, KernelFamily::Tiled, None);
        let x_ref = reference.factor_solve(&a, &b).unwrap();
        let mut small = solver::<f64>(&g, KernelFamily::Tiled, None);
        small.set_staging_chunk(chunk);
        let x = small.factor_solve(&a, &b).unwrap();
        assert_eq!(bits(&x), bits(&x_ref), "n={n} ld={ld} chunk={chunk} (seed {seed})");
        // Separate calls through the small ring too.
        small.factor(&a).unwrap();
        let x2 = small.solve(&b).unwrap();
        assert_eq!(bits(&x2), bits(&x_ref), "factor then solve, n={n} (seed {seed})");
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    }
}

#[test]
fn staged_uploads_from_inside_a_busy_pool_finish() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // Solvers called from the tasks of a two-thread pool: each upload (4 MB, enough to
    // ask for staging workers) spawns its workers onto the same two threads, both busy
    // dispatching their own uploads, so the dispatchers must copy the pieces themselves.
    let worst = worst_in_pool(2, 6, |i| {
        let (a, b) = problem::<f64>(1, 1000 + 100 * i as usize, 16, 1, seed + i);
        let mut gpu_solver = solver::<f64>(&g, KernelFamily::Auto, None);
        let x = gpu_solver.factor_solve(&a, &b).unwrap();
        residual::accuracy(&a, &x, &b).unwrap().relative_residual
    });
    assert!(worst < 1e-12, "worst residual {worst:e} (seed {seed})");
}

#[test]
fn page_locked_inputs_take_the_direct_path() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(2, 100, 16, 3, seed);
    let diag = PinnedBuffer::from_slice(&g, a.diag()).unwrap();
    let sub = PinnedBuffer::from_slice(&g, a.sub()).unwrap();
    let rhs = PinnedBuffer::from_slice(&g, b.as_slice()).unwrap();
    assert!(is_page_locked(&diag) && is_page_locked(&rhs[1..]));
    assert!(!is_page_locked(a.diag()));
    let mut s = solver::<f64>(&g, KernelFamily::Auto, None);
    s.upload_slices(a.shape(), a.ld(), &diag, &sub).unwrap();
    s.factor_uploaded().unwrap();
    s.upload_rhs_slice(&rhs, b.ncols()).unwrap();
    s.launch_solve().unwrap();
    let mut out = PinnedBuffer::<f64>::zeroed(&g, rhs.len()).unwrap();
    s.download_rhs_slice(&mut out).unwrap();
    s.check_solve().unwrap();
    let x = BlockVec::from_vec(a.shape(), b.ncols(), out.to_vec()).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
    // Wrong lengths are refused before any copy.
    assert!(matches!(s.upload_slices(a.shape(), a.ld(), &diag[1..], &sub), Err(Error::Shape(_))));
    assert!(matches!(s.upload_slices(a.shape(), 15, &diag, &sub), Err(Error::Shape(_))));
}

/// Chunked factor + solve against one call on the whole batch: the same bits with the
/// deterministic tiled and chain engines, the same values up to rounding with the others.
#[test]
fn chunked_batches_match_the_single_shot() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    for (kernels, s, nb, n, k, cap) in [
        (KernelFamily::Tiled, 1usize, 7usize, 65usize, 1usize, 1usize),
        (KernelFamily::Tiled, 3, 5, 65, 3, 1),
        (KernelFamily::Tiled, 40, 4, 72, 2, 6),
        // Three tiles: the whole batch's top levels fuse their column updates with the
        // solves (from 8 nodes), a chunk's do not; the top-level inverses are per system.
        (KernelFamily::Tiled, 40, 4, 150, 1, 6),
        (KernelFamily::Auto, 3, 33, 8, 1, 2),
        (KernelFamily::Auto, 1000, 16, 8, 2, 96),
        (KernelFamily::Auto, 1000, 9, 16, 1, 333),
        (KernelFamily::Chain, 40, 9, 16, 2, 7),
    ] {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + (s * n) as u64);
        let mut whole = solver::<f64>(&g, kernels, None);
        let x_ref = whole.factor_solve(&a, &b).unwrap();
        let mut chunked = solver::<f64>(&g, kernels, Some(cap));
        let x = chunked.factor_solve(&a, &b).unwrap();
        let what = format!("{kernels:?} S={s} N={nb} n={n} k={k} cap={cap} (seed {seed})");
        if matches!(kernels, KernelFamily::Tiled | KernelFamily::Chain) {
            assert_eq!(bits(&x), bits(&x_ref), "{what}");
        } else {
            // `Auto` may run the whole batch on the chain engine and its chunks with nested
            // dissection (the choice follows the batch size): a different rounding order.
            assert!(rel_diff(&x, &x_ref) < 1e-11, "{what}: {:e}", rel_diff(&x, &x_ref));
        }
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "{what}");
        // Twice: the partner plan and graphs are reused.
        let x2 = chunked.factor_solve(&a, &b).unwrap();
        assert!(rel_diff(&x2, &x) < 1e-13, "{what}: second call");
        // In place: each chunk reads its rows of `y` before its solutions replace them.
        let mut y = b.clone();
        chunked.factor_solve_in_place(&a, &mut y).unwrap();
        assert!(rel_diff(&y, &x) < 1e-13, "{what}: in place");
        if s > cap {
            // The chunks leave no resident factorization behind.
            assert!(chunked.shape().is_none());
            assert!(matches!(chunked.solve(&b), Err(Error::NotFactored)));
        }
    }
}

#[test]
fn a_failing_system_in_a_later_chunk_is_named_in_batch_numbering() {
    let Some(g) = gpu() else { return };
    let (mut a, b) = problem::<f64>(300, 8, 8, 1, fresh_seed());
    // System 250, block 5: not positive definite.
    for r in 0..8 {
        a.set_diag(250, 5, r, r, -1.0);
    }
    let mut chunked = solver::<f64>(&g, KernelFamily::Auto, Some(64));
    match chunked.factor_solve(&a, &b) {
        Err(Error::NotPositiveDefinite { system: 250, block: 5, .. }) => {}
        other => panic!("{other:?}"),
    }
    // In place: the chunks before system 250's had written their solutions into `x`; the
    // failure leaves it as it was, as the one-shot path does.
    let mut x = b.clone();
    match chunked.factor_solve_in_place(&a, &mut x) {
        Err(Error::NotPositiveDefinite { system: 250, block: 5, .. }) => {}
        other => panic!("in place: {other:?}"),
    }
    assert_eq!(bits(&x), bits(&b), "a failing chunk left earlier chunks' solutions in the right-hand side");
    // A non-finite value in a right-hand side is refused before any work.
    let mut b2 = b.clone();
    b2.set(299, 3, 0, f64::NAN);
    assert!(matches!(chunked.factor_solve(&a, &b2), Err(Error::NonFinite { system: 299, .. })));
}

#[test]
fn a_device_memory_limit_turns_into_chunks() {
    let Some(_) = gpu() else { return };
    // A device handle of our own, so the limit does not reach the other tests.
    let g = Gpu::with_ordinal(0).unwrap();
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(300, 64, 16, 1, seed);
    let mut whole = solver::<f64>(&Gpu::shared().unwrap(), KernelFamily::Auto, None);
    let x_ref = whole.factor_solve(&a, &b).unwrap();
    let per_system = GpuCholesky::<f64>::required_memory(Shape::new(1, 64, 16).unwrap(), 1);
    g.set_memory_limit(Some(40 * per_system));
    let mut limited = solver::<f64>(&g, KernelFamily::Auto, None);
    let x = limited.factor_solve(&a, &b).unwrap();
    assert!(rel_diff(&x, &x_ref) < 1e-13, "seed {seed}");
    assert!(limited.shape().is_none(), "ran in chunks");
    // `factor` keeps the factor on the device: the whole batch must fit.
    assert!(matches!(limited.factor(&a), Err(Error::OutOfMemory { .. })));
    // Not even a segment of one block fits (one system alone runs in segments, see
    // below): a clear error (a fresh solver: the first one's plans would count as room it
    // already holds).
    g.set_memory_limit(Some(per_system / 100));
    let mut tiny = solver::<f64>(&g, KernelFamily::Auto, None);
    assert!(matches!(tiny.factor_solve(&a, &b), Err(Error::OutOfMemory { .. })));
    g.set_memory_limit(None);
    assert!(limited.factor_solve(&a, &b).is_ok());
}

#[test]
fn one_chain_larger_than_the_device_runs_in_segments() {
    let Some(_) = gpu() else { return };
    let g = Gpu::with_ordinal(0).unwrap(); // the limit stays with this handle
    let seed = fresh_seed();
    // Fused rows (n = 16), the blocked panel family (n = 64, two columns), the tiled
    // engine (n = 130), and a batch of two chains of which not even one fits.
    for (batch, nblocks, n, k) in [(1, 3000, 16, 1), (1, 700, 64, 2), (1, 120, 130, 1), (2, 900, 16, 3)] {
        let (a, b) = problem::<f64>(batch, nblocks, n, k, seed + nblocks as u64);
        let x_ref = solver::<f64>(&g, KernelFamily::Auto, None).factor_solve(&a, &b).unwrap();
        let one = GpuCholesky::<f64>::required_memory(Shape::new(1, nblocks, n).unwrap(), k);
        g.set_memory_limit(Some(one / 3));
        let mut limited = solver::<f64>(&g, KernelFamily::Auto, None);
        let what = format!("{} k = {k} (seed {seed})", a.shape());
        let x = limited.factor_solve(&a, &b).unwrap();
        assert!(limited.shape().is_none(), "{what}: ran in segments, nothing left to solve with");
        assert!(matches!(limited.solve(&b), Err(Error::NotFactored)), "{what}");
        let r = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
        assert!(r < 1e-12, "{what}: residual {r:e}");
        assert!(rel_diff(&x, &x_ref) < 1e-10, "{what}: {:e} from the one-shot solve", rel_diff(&x, &x_ref));
        // In place, into the caller's memory (the same schedule; the fused kernels add
        // separator updates in any order, so the same to rounding).
        let mut y = b.clone();
        limited.factor_solve_in_place(&a, &mut y).unwrap();
        assert!(rel_diff(&y, &x) < 1e-13, "{what}: in place, second run");
        // f32, same cut.
        let (a32, b32) = (a.cast::<f32>(), b.cast::<f32>());
        let x32 = solver::<f32>(&g, KernelFamily::Auto, None).factor_solve(&a32, &b32).unwrap();
        let r32 = residual::accuracy(&a32, &x32, &b32).unwrap().relative_residual;
        assert!(r32 < 1e-5, "{what}: f32 residual {r32:e}");
        g.set_memory_limit(None);
    }
    // A block that is not positive definite is named in the caller's chain, wherever the
    // cut puts it (inside a segment or as a separator).
    let (mut a, b) = problem::<f64>(2, 3000, 16, 1, seed);
    let one = GpuCholesky::<f64>::required_memory(Shape::new(1, 3000, 16).unwrap(), 1);
    g.set_memory_limit(Some(one / 3));
    let mut limited = solver::<f64>(&g, KernelFamily::Auto, None);
    for bad in [17, 1234, 2999] {
        let mut a_bad = a.clone();
        for r in 0..16 {
            a_bad.set_diag(1, bad, r, r, -1.0);
        }
        match limited.factor_solve(&a_bad, &b) {
            Err(Error::NotPositiveDefinite { system: 1, block, .. }) => assert_eq!(block, bad),
            other => panic!("block {bad}: {other:?}"),
        }
    }
    // A non-finite right-hand side (checked once before the segments, whose batches are
    // then not scanned again) is named in the caller's chain, wherever it lies.
    for (system, block) in [(1, 1234), (0, 2999), (1, 0)] {
        let mut b_bad = b.clone();
        b_bad.set(system, block * 16 + 5, 0, f64::NAN);
        match limited.factor_solve(&a, &b_bad) {
            Err(Error::NonFinite { what: "right-hand side", system: s2, block: b2 }) => assert_eq!((s2, b2), (system, block)),
            other => panic!("NaN in block {block} of system {system}: {other:?}"),
        }
    }
    let a_good = a.clone();
    a.set_sub(0, 700, 3, 4, f64::INFINITY);
    assert!(matches!(limited.factor_solve(&a, &b), Err(Error::NonFinite { system: 0, block: 700 | 701, .. })));
    // After the segment path, the same solver scans the right-hand side of a problem
    // that fits on the host again (a NaN named as such, not as a non-finite solution),
    // and still runs a chain in segments.
    let (small_a, mut small_b) = problem::<f64>(1, 200, 16, 1, seed + 1);
    small_b.set(0, 77 * 16, 0, f64::NAN);
    match limited.factor_solve(&small_a, &small_b) {
        Err(Error::NonFinite { what: "right-hand side", system: 0, block: 77 }) => {}
        other => panic!("a NaN after the segment path: {other:?}"),
    }
    let x = limited.factor_solve(&a_good, &b).unwrap();
    assert!(residual::accuracy(&a_good, &x, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
    g.set_memory_limit(None);
}

#[test]
fn the_streamed_inverse_matches_the_device_resident_one() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut inv = GpuTridiagInverse::with_gpu(g.clone()).unwrap();
    // One panel, several panels (32 MB each: n = 5000 takes 7), several matrices per
    // panel with 2-D copies, f32.
    for (n, batch) in [(1usize, 1usize), (3, 2), (64, 1), (65, 3), (1000, 1), (5000, 1), (3000, 3)] {
        let t = Tridiagonal::<f64>::random_dominant(n, batch, n % 2 == 1, seed + n as u64).unwrap();
        let job = inv.prepare(&t, true).unwrap();
        inv.launch(&job, false).unwrap();
        inv.check(&job).unwrap();
        let resident = inv.download(&job).unwrap();
        let streamed = inv.invert(&t, false, true).unwrap();
        assert!(resident.as_slice() == streamed.as_slice(), "n={n} batch={batch} (seed {seed})");
        let mut pinned = PinnedBuffer::<f64>::zeroed(&g, batch * n * n).unwrap();
        inv.invert_into(&t, true, &mut pinned).unwrap();
        assert!(resident.as_slice() == &pinned[..], "pinned n={n} batch={batch} (seed {seed})");
        let mut plain = vec![0.0f64; batch * n * n];
        inv.invert_into(&t, true, &mut plain).unwrap();
        assert!(resident.as_slice() == &plain[..], "pageable n={n} batch={batch}");
        if n <= 1000 {
            assert!(inverse_error(&t, &streamed) < 1e-13);
        }
        let t32 = t.cast::<f32>();
        let x32 = inv.invert(&t32, false, true).unwrap();
        if n <= 1000 {
            assert!(inverse_error(&t32, &x32) < 1e-5, "f32 n={n}");
        }
    }
}

#[test]
fn the_streamed_inverse_writes_nothing_on_failure() {
    let Some(g) = gpu() else { return };
    let mut inv = GpuTridiagInverse::with_gpu(g.clone()).unwrap();
    // A singular leaf (check waived): reported, and the caller's buffer is untouched.
    let t = Tridiagonal::<f64>::new(vec![1.0, 2.0, 5.0, 5.0], vec![1.0, 1.0, 0.1], vec![1.0, 1.0, 0.1]).unwrap();
    let mut out = PinnedBuffer::<f64>::zeroed(&g, 16).unwrap();
    out.fill(7.0);
    assert!(matches!(inv.invert_into(&t, false, &mut out), Err(Error::SingularPivot { matrix: 0, row: 0, .. })));
    assert!(out.iter().all(|&v| v == 7.0));
    // Wrong output length.
    let mut short = vec![0.0f64; 15];
    assert!(matches!(inv.invert_into(&t, false, &mut short), Err(Error::Shape(_))));
    // Not diagonally dominant: the input check, before any device work.
    let t = Tridiagonal::new(vec![4.0, 1.0, 4.0], vec![1.0, 1.0], vec![1.0, 1.0]).unwrap();
    let mut out = vec![0.0f64; 9];
    assert!(matches!(inv.invert_into(&t, true, &mut out), Err(Error::NotDiagonallyDominant { row: 1, .. })));
}

#[test]
fn a_large_streamed_inverse_needs_only_its_panels_on_the_device() {
    let Some(_) = gpu() else { return };
    let g = Gpu::with_ordinal(0).unwrap();
    let n = 8192;
    let t = Tridiagonal::<f64>::random_dominant(n, 1, true, fresh_seed()).unwrap();
    // The n^2 output (512 MiB) does not fit under the limit; the panels do.
    let streamed = GpuTridiagInverse::streamed_memory::<f64>(n, 1);
    assert!(streamed < GpuTridiagInverse::required_memory::<f64>(n, 1) / 4);
    g.set_memory_limit(Some(2 * streamed));
    let mut inv = GpuTridiagInverse::with_gpu(g.clone()).unwrap();
    assert!(matches!(inv.prepare(&t, true), Err(Error::OutOfMemory { .. })));
    let x = inv.invert(&t, false, true).unwrap();
    // Spot check a few columns against the CPU recursion.
    let cpu = blocktri::tridiag::invert(&t, blocktri::tridiag::Method::Threaded, true).unwrap();
    for j in [0, 1, 4095, 4096, 8191] {
        let (gpu_col, cpu_col) = (&x.as_slice()[j * n..(j + 1) * n], &cpu.as_slice()[j * n..(j + 1) * n]);
        let scale = cpu_col.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = gpu_col.iter().zip(cpu_col).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(diff <= 1e-13 * scale, "column {j}: {diff:e} against {scale:e}");
    }
}

#[test]
fn matrices_pinned_in_place_move_by_dma_and_give_the_same_bits() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(2, 300, 24, 1, seed);
    let mut reference = solver::<f64>(&g, KernelFamily::Tiled, None);
    reference.factor(&a).unwrap();
    let x_ref = reference.solve(&b).unwrap();
    let (mut pa, mut pb) = (a.clone(), b.clone());
    assert!(!pa.is_pinned() && !pb.is_pinned());
    pa.pin_for_gpu(&g).unwrap();
    pb.pin_for_gpu(&g).unwrap();
    assert!(pa.is_pinned() && pb.is_pinned() && is_page_locked(pa.diag()) && is_page_locked(pa.sub()) && is_page_locked(pb.as_slice()));
    assert!(!pa.clone().is_pinned(), "a clone lives elsewhere");
    let mut s = solver::<f64>(&g, KernelFamily::Tiled, None);
    // Refilled in place and refactored, as an interior-point loop does.
    for round in 0..3 {
        pa.diag_mut().copy_from_slice(a.diag());
        pb.as_mut_slice().copy_from_slice(b.as_slice());
        if round == 0 {
            s.factor(&pa).unwrap()
        } else {
            s.refactor(&pa).unwrap()
        };
        s.solve_in_place(&mut pb).unwrap();
        assert_eq!(bits(&pb), bits(&x_ref), "round {round} (seed {seed})");
    }
    // One call per Newton step: the page-locked matrix and right-hand side are only
    // enqueued (read by DMA during the call), refilled between calls; the same bits.
    let x_ref = reference.factor_solve(&a, &b).unwrap();
    for round in 0..3 {
        pa.sub_mut().copy_from_slice(a.sub());
        pb.as_mut_slice().copy_from_slice(b.as_slice());
        s.factor_solve_in_place(&pa, &mut pb).unwrap();
        assert_eq!(bits(&pb), bits(&x_ref), "in place, round {round} (seed {seed})");
    }
    // A failure leaves the page-locked right-hand side untouched; the next call recovers.
    let mut bad = a.clone();
    bad.set_diag(1, 123, 4, 4, -1e3);
    pa.diag_mut().copy_from_slice(bad.diag());
    pb.as_mut_slice().copy_from_slice(b.as_slice());
    assert!(matches!(s.factor_solve_in_place(&pa, &mut pb), Err(blocktri::Error::NotPositiveDefinite { system: 1, block: 123, .. })));
    assert_eq!(bits(&pb), bits(&b));
    pa.diag_mut().copy_from_slice(a.diag());
    s.factor_solve_in_place(&pa, &mut pb).unwrap();
    assert_eq!(bits(&pb), bits(&x_ref));
    drop(pa); // unregisters before the memory is freed
    assert!(pb.is_pinned());
}

/// A page-locked right-hand side is scanned for non-finite values by threads of its own
/// while its DMA runs (in shares once it holds more than a few million values): the first
/// bad value is named by system and block wherever it lies, the page-locked input stays
/// as it was, and the factorization in place still solves afterwards.
#[test]
fn a_non_finite_value_in_a_large_pinned_right_hand_side_is_named() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // 2 x 4096 x 16 x 20 = 2.6 M values: two shares of the scan, one per system.
    let (a, b) = problem::<f64>(2, 4096, 16, 20, seed);
    let mut s = solver::<f64>(&g, KernelFamily::Auto, None);
    s.factor(&a).unwrap();
    let x_ref = s.solve(&b).unwrap();
    let mut pb = b.clone();
    pb.pin_for_gpu(&g).unwrap();
    assert!(is_page_locked(pb.as_slice()));
    let dim = a.shape().dim();
    // (system, row, column) of a NaN, and of a later infinity that must not be the one named.
    for (system, row, col) in [(0, 0, 0), (0, dim - 1, 19), (1, 5 * 16 + 3, 7), (1, dim - 1, 19)] {
        pb.as_mut_slice().copy_from_slice(b.as_slice());
        pb.set(system, row, col, f64::NAN);
        if (system, row, col) != (1, dim - 1, 19) {
            pb.set(1, dim - 1, 19, f64::INFINITY);
        }
        let before = bits(&pb);
        let block = row / 16;
        let what = format!("NaN at system {system}, row {row}, column {col} (seed {seed})");
        match s.solve(&pb) {
            Err(Error::NonFinite { what: "right-hand side", system: s2, block: b2 }) => assert_eq!((s2, b2), (system, block), "{what}"),
            other => panic!("{what}: {other:?}"),
        }
        match s.solve_in_place(&mut pb) {
            Err(Error::NonFinite { what: "right-hand side", system: s2, block: b2 }) => {
                assert_eq!((s2, b2), (system, block), "{what}, in place")
            }
            other => panic!("{what}, in place: {other:?}"),
        }
        assert_eq!(bits(&pb), before, "{what}: the refused input changed");
    }
    pb.as_mut_slice().copy_from_slice(b.as_slice());
    s.solve_in_place(&mut pb).unwrap();
    // The fused kernels add separator updates in any order: the same up to rounding.
    assert!(rel_diff(&pb, &x_ref) < 1e-13, "after the refusals (seed {seed})");
}
