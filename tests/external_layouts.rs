//! Inputs and outputs in the caller's layouts (issue #15's zero-copy paths): row-major host
//! blocks, device arrays with any strides, and the strided copy kernel behind them
//! (emulated on the CPU, so CI runs it). GPU tests print why they skip without a GPU.

mod common;

use blocktri::cuda::{DeviceArray, DeviceBuffer, GpuCholesky, GpuOptions, KernelFamily};
use blocktri::{BlockTridiag, BlockVec, Error, Factorization, Scalar, Shape};
use common::{fresh_seed, gpu, problem};

/// The blocks of `a` in row-major order (`[s][i][r][c]`), as numpy holds them.
fn row_major<T: Scalar>(a: &BlockTridiag<T>) -> (Vec<T>, Vec<T>) {
    let sh = a.shape();
    let n = sh.block;
    let mut d = Vec::new();
    let mut u = Vec::new();
    for s in 0..sh.batch {
        for i in 0..sh.nblocks {
            let blk = a.diag_block(s, i);
            d.extend((0..n * n).map(|e| blk[(e % n) * a.ld() + e / n]));
            if i + 1 < sh.nblocks {
                let blk = a.sub_block(s, i);
                u.extend((0..n * n).map(|e| blk[(e % n) * a.ld() + e / n]));
            }
        }
    }
    (d, u)
}

/// `b`'s values as a C-order `(S, N, n, k)` array.
fn rhs_row_major<T: Scalar>(b: &BlockVec<T>) -> Vec<T> {
    let (sh, k) = (b.shape(), b.ncols());
    let d = sh.dim();
    let mut out = vec![T::ZERO; sh.batch * d * k];
    for s in 0..sh.batch {
        for j in 0..k {
            for q in 0..d {
                out[(s * d + q) * k + j] = b.as_slice()[(s * k + j) * d + q];
            }
        }
    }
    out
}

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| blocktri::scalar::wide(*x).to_bits()).collect()
}

#[test]
fn row_major_blocks_on_the_host_transpose_into_the_library_layout() {
    let seed = fresh_seed();
    for (s, nb, n) in [(1usize, 1usize, 1usize), (2, 5, 3), (3, 9, 16)] {
        let (a, _) = problem::<f64>(s, nb, n, 1, seed + n as u64);
        let (d, u) = row_major(&a);
        let b = BlockTridiag::from_row_major(a.shape(), &d, &u).unwrap();
        assert_eq!(b.repad(n).unwrap().diag(), a.repad(n).unwrap().diag(), "shape {} (seed {seed})", a.shape());
        assert_eq!(b.repad(n).unwrap().sub(), a.repad(n).unwrap().sub());
    }
    let shape = Shape::new(1, 3, 2).unwrap();
    assert!(matches!(BlockTridiag::<f64>::from_row_major(shape, &[0.0; 12], &[0.0; 7]), Err(Error::Shape(_))));
}

#[test]
fn emulated_strided_copy_covers_every_direction() {
    use blocktri_device::copy::{COPY_THREADS, StridedCopyArgs, strided_copy};
    use blocktri_prims::emu;
    // Row-major blocks (S, B, n, n) into column-major blocks of leading dimension ld, with
    // zero-filled padding rows; then a right-hand-side transpose (S, N, n, k) -> (S, k, N n).
    let (s, b, n, ld) = (2usize, 3usize, 5usize, 8usize);
    let src: Vec<f64> = (0..s * b * n * n).map(|i| i as f64 + 0.5).collect();
    let mut dst = vec![f64::NAN; s * b * ld * n];
    let args = StridedCopyArgs {
        src: src.as_ptr(),
        dst: dst.as_mut_ptr(),
        extents: [s as u32, b as u32, ld as u32, n as u32],
        src_strides: [(b * n * n) as i64, (n * n) as i64, n as i64, 1],
        dst_strides: [(b * ld * n) as i64, (ld * n) as i64, 1, ld as i64],
        valid_rows: n as u32,
    };
    // A grid smaller than the work: the grid-stride loop covers the rest.
    // SAFETY: every index addresses an element of both vectors (rows past n not read).
    unsafe { emu::launch_unchecked(3, COPY_THREADS, 0, || strided_copy(&args)) };
    for sys in 0..s {
        for blk in 0..b {
            for c in 0..n {
                for r in 0..ld {
                    let want = if r < n { src[((sys * b + blk) * n + r) * n + c] } else { 0.0 };
                    assert_eq!(dst[((sys * b + blk) * n + c) * ld + r], want, "({sys}, {blk}, {r}, {c})");
                }
            }
        }
    }
    let (nb, k) = (4usize, 3usize);
    let d = nb * n;
    let rhs: Vec<f64> = (0..s * d * k).map(|i| -(i as f64)).collect();
    let mut cols = vec![f64::NAN; s * d * k];
    let args = StridedCopyArgs {
        src: rhs.as_ptr(),
        dst: cols.as_mut_ptr(),
        extents: [s as u32, nb as u32, n as u32, k as u32],
        src_strides: [(d * k) as i64, (n * k) as i64, k as i64, 1],
        dst_strides: [(k * d) as i64, n as i64, 1, d as i64],
        valid_rows: n as u32,
    };
    // SAFETY: as above.
    unsafe { emu::launch_unchecked(1, COPY_THREADS, 0, || strided_copy(&args)) };
    for sys in 0..s {
        for q in 0..d {
            for j in 0..k {
                assert_eq!(cols[(sys * k + j) * d + q], rhs[(sys * d + q) * k + j]);
            }
        }
    }
}

/// Asserts `x` equals `want` bit for bit (`exact`: the tiled engine, one writer per
/// block) or to 1e-13 relative (the fused kernels add a separator's two updates in
/// arrival order: README, "Reproducibility").
fn assert_same(x: &[f64], want: &[f64], exact: bool, what: &str) {
    if exact {
        assert_eq!(bits(x), bits(want), "{what}");
    } else {
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = x.iter().zip(want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(diff <= 1e-13 * scale, "{what}: max difference {diff:e} of {scale:e}");
    }
}

#[test]
fn gpu_row_major_and_device_inputs_give_the_same_results() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // The rows, panel/blocked and tiled engines (the tiled one also forced at small n, for
    // bitwise comparisons); a batch; one and three right-hand sides.
    let cases =
        [(1usize, 1usize, 3usize, 1usize, KernelFamily::Auto), (3, 40, 8, 1, KernelFamily::Auto), (3, 40, 8, 1, KernelFamily::Tiled)];
    let more = [
        (2, 17, 33, 3, KernelFamily::Auto),
        (2, 17, 33, 3, KernelFamily::Tiled),
        (1, 9, 70, 2, KernelFamily::Auto),
        (5, 64, 16, 1, KernelFamily::Auto),
    ];
    for (s, nb, n, k, kernels) in cases.into_iter().chain(more) {
        let exact = kernels == KernelFamily::Tiled || n > 64;
        let options = GpuOptions { kernels, ..GpuOptions::default() };
        let (a, b) = problem::<f64>(s, nb, n, k, seed + (nb * n) as u64);
        let shape = a.shape();
        let mut reference = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        reference.factor(&a).unwrap();
        let x_ref = reference.solve(&b).unwrap();
        let (d, u) = row_major(&a);

        // Host row-major blocks, right-hand sides as slices.
        let mut h = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        h.upload_row_major(shape, &d, &u).unwrap();
        h.factor_uploaded().unwrap();
        let mut x = vec![f64::NAN; b.as_slice().len()];
        h.solve_slices(b.as_slice(), k, &mut x).unwrap();
        assert_same(&x, x_ref.as_slice(), exact, &format!("row-major host, shape {shape} k={k} {kernels:?} (seed {seed})"));

        // Device arrays: C order, and the same data read through a strided view (every
        // block stored with its rows 3 apart in a wider buffer, systems reversed).
        let dev = GpuCholesky::<f64>::with_gpu(g.clone(), options).unwrap();
        let stream = dev.stream().clone();
        let d_dev = DeviceBuffer::from_host(&stream, &d).unwrap();
        let u_dev = DeviceBuffer::from_host(&stream, &u).unwrap();
        let rhs_dev = DeviceBuffer::from_host(&stream, &rhs_row_major(&b)).unwrap();
        let out_dev = DeviceBuffer::<f64>::poisoned(&stream, b.as_slice().len()).unwrap();
        let mut dev = dev;
        let c_order =
            |buf: &DeviceBuffer<f64>, blocks: usize, rows: usize, cols: usize| DeviceArray::row_major(buf.ptr().addr(), blocks, rows, cols);
        // SAFETY (all device calls): the buffers hold the arrays the views describe, on the
        // solver's stream.
        unsafe {
            dev.upload_device(shape, c_order(&d_dev, nb, n, n), c_order(&u_dev, nb - 1, n, n)).unwrap();
            dev.factor_uploaded().unwrap();
            dev.solve_device(c_order(&rhs_dev, nb, n, k), k, c_order(&out_dev, nb, n, k)).unwrap();
        }
        let want = rhs_row_major(&x_ref);
        assert_same(&out_dev.to_vec().unwrap(), &want, exact, &format!("device C order, shape {shape} k={k} {kernels:?}"));
        // Factor + solve in one call (one graph launch; the chain engine interlaces the
        // forward sweep with the factor, which changes the last bits).
        let fresh = DeviceBuffer::<f64>::poisoned(&stream, b.as_slice().len()).unwrap();
        // SAFETY: as above.
        unsafe {
            let blocks = (c_order(&d_dev, nb, n, n), c_order(&u_dev, nb - 1, n, n));
            dev.factor_solve_device(shape, blocks, c_order(&rhs_dev, nb, n, k), k, c_order(&fresh, nb, n, k)).unwrap();
        }
        assert_same(&fresh.to_vec().unwrap(), &want, exact, &format!("device factor_solve, shape {shape} k={k} {kernels:?}"));

        let wide: Vec<f64> = (0..s)
            .rev()
            .flat_map(|sys| {
                let blocks = &d[sys * nb * n * n..(sys + 1) * nb * n * n];
                blocks.chunks(n).flat_map(|row| row.iter().copied().chain([f64::NAN, f64::NAN])).collect::<Vec<_>>()
            })
            .collect();
        let wide_dev = DeviceBuffer::from_host(&stream, &wide).unwrap();
        let per_sys = (nb * n * (n + 2)) as i64;
        let view = DeviceArray {
            addr: wide_dev.ptr().addr() + ((s - 1) as u64 * per_sys as u64 * 8),
            strides: [-per_sys, (n * (n + 2)) as i64, (n + 2) as i64, 1],
        };
        // SAFETY: as above; the view reaches only the values (not the NaN gaps).
        unsafe {
            dev.upload_device(shape, view, c_order(&u_dev, nb - 1, n, n)).unwrap();
            dev.factor_uploaded().unwrap();
            dev.solve_device(c_order(&rhs_dev, nb, n, k), k, c_order(&out_dev, nb, n, k)).unwrap();
        }
        assert_same(&out_dev.to_vec().unwrap(), &want, exact, &format!("device strided view, shape {shape} {kernels:?}"));
    }
}

#[test]
fn gpu_external_layouts_report_errors_with_system_and_block() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(3, 20, 8, 1, seed);
    let shape = a.shape();
    let (d, mut u) = row_major(&a);
    let mut h = GpuCholesky::<f64>::with_gpu(g.clone(), GpuOptions { kernels: KernelFamily::Auto, ..GpuOptions::default() }).unwrap();
    assert!(matches!(h.upload_row_major(shape, &d, &u[1..]), Err(Error::Shape(_))));
    // A huge coupling in system 1 breaks positive definiteness there.
    let at = (19 + 7) * 64; // system 1, sub-diagonal block 7
    u[at] = 1e6;
    h.upload_row_major(shape, &d, &u).unwrap();
    match h.factor_uploaded() {
        Err(Error::NotPositiveDefinite { system: 1, .. }) => {}
        other => panic!("expected system 1 not positive definite, got {other:?} (seed {seed})"),
    }
    // The same from device arrays in one factor + solve call: the error, and the output
    // left as it was.
    let stream = h.stream().clone();
    let (d_dev, u_dev) = (DeviceBuffer::from_host(&stream, &d).unwrap(), DeviceBuffer::from_host(&stream, &u).unwrap());
    let rhs_dev = DeviceBuffer::from_host(&stream, b.as_slice()).unwrap();
    let kept = vec![7.0; b.as_slice().len()];
    let out = DeviceBuffer::from_host(&stream, &kept).unwrap();
    let c_order = |buf: &DeviceBuffer<f64>, blocks: usize, cols: usize| DeviceArray::row_major(buf.ptr().addr(), blocks, 8, cols);
    // SAFETY: the buffers hold the arrays the views describe, on the solver's stream.
    let r = unsafe {
        h.factor_solve_device(shape, (c_order(&d_dev, 20, 8), c_order(&u_dev, 19, 8)), c_order(&rhs_dev, 20, 1), 1, c_order(&out, 20, 1))
    };
    assert!(matches!(r, Err(Error::NotPositiveDefinite { system: 1, .. })), "got {r:?} (seed {seed})");
    assert_eq!(out.to_vec().unwrap(), kept, "a failed factorization wrote the output");
    let (d, u) = row_major(&a);
    h.upload_row_major(shape, &d, &u).unwrap();
    h.factor_uploaded().unwrap();
    let mut rhs = b.as_slice().to_vec();
    rhs[2 * 160 + 8 * 5 + 3] = f64::NAN; // system 2, block 5
    let mut x = vec![0.0; rhs.len()];
    assert!(matches!(h.solve_slices(&rhs, 1, &mut x), Err(Error::NonFinite { system: 2, block: 5, .. })));
    assert!(matches!(h.solve_slices(&rhs[1..], 1, &mut x[1..]), Err(Error::Shape(_))));
    // On the device a non-finite right-hand side shows up in the solution.
    let stream = h.stream().clone();
    let rhs_dev = DeviceBuffer::from_host(&stream, &rhs).unwrap();
    let out = DeviceBuffer::<f64>::poisoned(&stream, rhs.len()).unwrap();
    let view = |buf: &DeviceBuffer<f64>| DeviceArray::row_major(buf.ptr().addr(), 20, 8, 1);
    // SAFETY: both buffers hold S N n values on the solver's stream.
    let r = unsafe { h.solve_device(view(&rhs_dev), 1, view(&out)) };
    assert!(matches!(r, Err(Error::NonFiniteSolution { system: 2, .. })), "got {r:?}");
}

#[test]
fn non_finite_right_hand_sides_are_found_wherever_they_are() {
    // The scan works in chunks of 1024 and lanes of 8: values in the first lane, a later
    // lane, a chunk's remainder, the last value, and past the parallel threshold.
    for len in [1usize, 7, 8, 1000, 1024, 1031, 5000, (1 << 22) + 13] {
        let shape = Shape::new(1, len, 1).unwrap();
        let clean = BlockVec::<f64>::from_vec(shape, 1, vec![1.5; len]).unwrap();
        assert!(clean.validate().is_ok());
        for at in [0, len / 2, len.saturating_sub(3), len - 1] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut v = vec![1.5; len];
                v[at] = bad;
                if at + 1 < len {
                    v[len - 1] = f64::NAN; // a later one must not hide the first
                }
                let b = BlockVec::from_vec(shape, 1, v).unwrap();
                match b.validate() {
                    Err(Error::NonFinite { block, .. }) => assert_eq!(block, at, "len {len}"),
                    other => panic!("len {len}, at {at}: {other:?}"),
                }
            }
        }
    }
}
