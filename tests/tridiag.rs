//! Tridiagonal inverse: CPU methods, the GPU kernels in the emulator, the GPU itself,
//! and every error case.

mod common;

use blocktri::Error;
use blocktri::cuda::{Gpu, GpuTridiagInverse};
use blocktri::tridiag::{Inverse, Method, Tridiagonal, inverse_error, invert};
use blocktri_device::tridiag::fused::{ASSEMBLE_THREADS, ASSEMBLE_TILE, assemble_shared_bytes, work_len};
use blocktri_device::tridiag::{TridiagArgs, fused, stagewise, top_height};
use blocktri_prims::emu;
use common::fresh_seed;

const SIZES: &[usize] = &[1, 2, 3, 4, 5, 17, 64, 1000, 4096];

#[test]
fn cpu_methods_invert_to_rounding() {
    let seed = fresh_seed();
    for &n in SIZES {
        for symmetric in [true, false] {
            let t = Tridiagonal::<f64>::random_dominant(n, 2, symmetric, seed + n as u64).unwrap();
            for method in [Method::Direct, Method::Sequential, Method::Threaded] {
                if n == 4096 && method == Method::Direct {
                    continue; // covered by the other two; O(n^2) per column pass is slow in debug
                }
                let x = invert(&t, method, true).unwrap();
                let err = inverse_error(&t, &x);
                assert!(err < 1e-13, "{method:?} n={n} symmetric={symmetric}: {err:e} (seed {seed})");
            }
        }
    }
}

#[test]
fn f32_recursion_is_accurate() {
    let seed = fresh_seed();
    for &n in &[3usize, 64, 1000] {
        let t = Tridiagonal::<f32>::random_dominant(n, 1, false, seed).unwrap();
        let x = invert(&t, Method::Threaded, true).unwrap();
        let err = inverse_error(&t, &x);
        assert!(err < 1e-5, "n={n}: {err:e}");
    }
}

#[test]
fn sequential_matches_direct() {
    let t = Tridiagonal::<f64>::random_dominant(300, 1, false, 4).unwrap();
    let (x, y) = (invert(&t, Method::Sequential, true).unwrap(), invert(&t, Method::Direct, true).unwrap());
    let diff = x.as_slice().iter().zip(y.as_slice()).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-13, "{diff:e}");
}

#[test]
fn errors_are_reported() {
    // Lengths.
    assert!(matches!(Tridiagonal::<f64>::new(vec![1.0; 3], vec![0.0; 1], vec![0.0; 2]), Err(Error::Shape(_))));
    assert!(matches!(Tridiagonal::<f64>::new(vec![], vec![], vec![]), Err(Error::Shape(_))));
    // Non-finite.
    let t = Tridiagonal::new(vec![4.0, f64::NAN, 4.0], vec![1.0; 2], vec![1.0; 2]).unwrap();
    assert!(matches!(invert(&t, Method::Sequential, true), Err(Error::NonFinite { .. })));
    // Not diagonally dominant at row 1, unless waived.
    let t = Tridiagonal::new(vec![4.0, 1.0, 4.0], vec![1.0, 1.0], vec![1.0, 1.0]).unwrap();
    assert!(matches!(invert(&t, Method::Sequential, true), Err(Error::NotDiagonallyDominant { matrix: 0, row: 1, .. })));
    let x = invert(&t, Method::Sequential, false).unwrap();
    assert!(inverse_error(&t, &x) < 1e-14);
    // Weakly dominant, invertible, but the Step-1 leaf [[1, 1], [1, 2 - c1]] is singular.
    let t = Tridiagonal::new(vec![1.0, 2.0, 5.0, 5.0], vec![1.0, 1.0, 0.1], vec![1.0, 1.0, 0.1]).unwrap();
    assert!(t.to_dense(0).determinant().abs() > 0.1);
    assert!(matches!(invert(&t, Method::Sequential, true), Err(Error::SingularPivot { matrix: 0, row: 0, .. })));
    assert!(invert(&t, Method::Direct, true).is_ok());
    // Unknown method name.
    assert!("nope".parse::<Method>().is_err());
}

/// Runs the GPU kernels in the emulator, the way `GpuTridiagInverse::launch` does.
fn emulated(t: &Tridiagonal<f64>, stagewise_method: bool) -> (Inverse<f64>, Vec<u32>) {
    emulated_panels(t, stagewise_method, t.n())
}

/// [`emulated`], with the fused method's assembly in column panels of `panel` columns
/// (a multiple of the tile), each written to a panel buffer and copied into place the
/// way the streamed host path does.
fn emulated_panels(t: &Tridiagonal<f64>, stagewise_method: bool, panel: usize) -> (Inverse<f64>, Vec<u32>) {
    let (n, batch) = (t.n(), t.batch_size());
    let top = top_height(n as u32);
    let w = vec![f64::NAN; batch * n * n];
    let mut work = vec![f64::NAN; batch * work_len(n, top as usize).max(2 * n)];
    let mut status = vec![u32::MAX; batch];
    let work_ptr = work.as_mut_ptr();
    let status_ptr = status.as_mut_ptr();
    let args = |h| TridiagArgs::<f64> {
        a: t.a().as_ptr(),
        b: t.b().as_ptr(),
        c: t.c().as_ptr(),
        w: w.as_ptr() as *mut f64,
        work: work_ptr,
        status: status_ptr,
        n: n as u32,
        batch: batch as u32,
        height: h,
        top,
        col0: 0,
        cols: n as u32,
    };
    let grid = |threads: u64| ((threads.div_ceil(64)).max(1) as u32, batch as u32);
    // SAFETY (all launches): buffers sized as the kernels require.
    unsafe {
        if stagewise_method {
            let a = args(1);
            emu::launch_unchecked(grid(n.div_ceil(2) as u64), 64, 0, || stagewise::leaves(&a));
            for h in 2..=top {
                let a = args(h);
                emu::launch_unchecked(grid(n as u64), 64, 0, || stagewise::extract(&a));
                let side = 1u64 << h;
                emu::launch_unchecked(grid((n as u64).div_ceil(side) * side * side), 64, 0, || stagewise::merge(&a));
            }
        } else {
            let a = args(1);
            emu::launch_unchecked(grid(n.div_ceil(2) as u64), 64, 0, || fused::leaves(&a));
            for h in 2..=top {
                let a = args(h);
                emu::launch_unchecked(grid(n as u64), 64, 0, || fused::merge(&a));
            }
            let tiles = (n as u32).div_ceil(ASSEMBLE_TILE);
            for c0 in (0..n).step_by(panel) {
                let cols = panel.min(n - c0);
                let mut out = vec![f64::NAN; batch * n * cols];
                let a = TridiagArgs { w: out.as_mut_ptr(), col0: c0 as u32, cols: cols as u32, ..args(top) };
                let grid = (tiles * (cols as u32).div_ceil(ASSEMBLE_TILE), batch as u32);
                emu::launch_unchecked(grid, ASSEMBLE_THREADS, assemble_shared_bytes(top as usize, 8), || fused::assemble(&a));
                let w = w.as_ptr() as *mut f64;
                for k in 0..batch {
                    std::ptr::copy_nonoverlapping(out.as_ptr().add(k * n * cols), w.add(k * n * n + c0 * n), n * cols);
                }
            }
        }
    }
    (Inverse::from_vec(n, w).unwrap(), status)
}

#[test]
fn gpu_kernels_in_the_emulator() {
    let seed = fresh_seed();
    for &n in &[1usize, 2, 3, 4, 5, 17, 70, 130] {
        for stage in [false, true] {
            let t = Tridiagonal::<f64>::random_dominant(n, 2, n % 2 == 0, seed + n as u64).unwrap();
            let (x, status) = emulated(&t, stage);
            assert!(status.iter().all(|&s| s == u32::MAX));
            let err = inverse_error(&t, &x);
            assert!(err < 1e-13, "stagewise={stage} n={n}: {err:e} (seed {seed})");
        }
    }
}

#[test]
fn assembly_in_column_panels_matches_the_whole() {
    let seed = fresh_seed();
    for &(n, batch) in &[(130usize, 2usize), (200, 1), (64, 3)] {
        let t = Tridiagonal::<f64>::random_dominant(n, batch, false, seed + n as u64).unwrap();
        let (whole, _) = emulated(&t, false);
        for panel in [64, 128] {
            let (parts, status) = emulated_panels(&t, false, panel);
            assert!(status.iter().all(|&s| s == u32::MAX));
            assert!(whole.as_slice() == parts.as_slice(), "n={n} batch={batch} panel={panel} (seed {seed})");
        }
    }
}

#[test]
fn gpu_inverse_matches_for_every_size() {
    let Ok(g) = Gpu::shared() else {
        eprintln!("skipping: no GPU");
        return;
    };
    let seed = fresh_seed();
    let mut inv = GpuTridiagInverse::with_gpu(g).unwrap();
    for &n in SIZES {
        for symmetric in [true, false] {
            for stage in [false, true] {
                let t = Tridiagonal::<f64>::random_dominant(n, 3, symmetric, seed + n as u64).unwrap();
                let x = inv.invert(&t, stage, true).unwrap();
                let err = inverse_error(&t, &x);
                assert!(err < 1e-13, "f64 stagewise={stage} n={n}: {err:e} (seed {seed})");
                let t32 = t.cast::<f32>();
                let x32 = inv.invert(&t32, stage, true).unwrap();
                let err = inverse_error(&t32, &x32);
                assert!(err < 1e-5, "f32 stagewise={stage} n={n}: {err:e} (seed {seed})");
            }
        }
    }
    // The GPU reports the same errors as the CPU.
    let t = Tridiagonal::new(vec![1.0, 2.0, 5.0, 5.0], vec![1.0, 1.0, 0.1], vec![1.0, 1.0, 0.1]).unwrap();
    for stage in [false, true] {
        assert!(matches!(inv.invert(&t, stage, true), Err(Error::SingularPivot { matrix: 0, row: 0, .. })));
    }
    let t = Tridiagonal::new(vec![4.0, 1.0, 4.0], vec![1.0, 1.0], vec![1.0, 1.0]).unwrap();
    assert!(matches!(inv.invert(&t, false, true), Err(Error::NotDiagonallyDominant { row: 1, .. })));
    // Far more than the device memory: a clear error.
    let huge = Tridiagonal::<f64>::random_dominant(1 << 19, 1, true, 1).unwrap();
    assert!(matches!(inv.prepare(&huge, true), Err(Error::OutOfMemory { .. })));
}

#[test]
fn the_convenience_function_shares_one_inverter_across_calls_and_threads() {
    if Gpu::shared().is_err() {
        eprintln!("skipping: no GPU");
        return;
    }
    let seed = fresh_seed();
    // Four threads at once (the busy shared inverter makes the others use their own),
    // each with several sizes (one that streams several panels: n = 3000 with a batch
    // of 3) and a failing input in between: every result is the CPU recursion's, and
    // the shared inverter keeps working after the error.
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            scope.spawn(move || {
                for (i, &(n, batch)) in [(17usize, 2usize), (3000, 3), (64, 1)].iter().enumerate() {
                    let t = Tridiagonal::<f64>::random_dominant(n, batch, i % 2 == 0, seed + 10 * thread + i as u64).unwrap();
                    let gpu = invert(&t, Method::GpuFused, true).unwrap();
                    let cpu = invert(&t, Method::Threaded, true).unwrap();
                    let diff = gpu.as_slice().iter().zip(cpu.as_slice()).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                    let scale = cpu.as_slice().iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    assert!(diff <= 1e-12 * scale, "thread {thread} n={n} batch={batch}: {diff:e} (seed {seed})");
                    let bad = Tridiagonal::new(vec![4.0, 1.0, 4.0], vec![1.0, 1.0], vec![1.0, 1.0]).unwrap();
                    assert!(matches!(invert(&bad, Method::GpuFused, true), Err(Error::NotDiagonallyDominant { row: 1, .. })));
                }
            });
        }
    });
}
