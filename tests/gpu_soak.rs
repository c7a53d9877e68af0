//! Long runs (ignored by default; `scripts/gpu-tiled.sh soak` runs it on the GPU machine):
//! 100 000 `refactor` + `solve` cycles of one shape with changing values, every solution
//! checked against the first run of its problem, host and device memory measured after a
//! warm-up and at the end (no growth), and the launch graphs captured once.
//! `BLOCKTRI_SOAK_CYCLES` changes the count.

mod common;

use blocktri::cuda::GpuCholesky;
use blocktri::{BlockVec, Factorization, residual};
use common::{fresh_seed, gpu, problem};

/// Resident host memory of this process in bytes (`/proc/self/statm`).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("resident pages");
    pages * 4096
}

#[test]
#[ignore = "a long GPU run: scripts/gpu-tiled.sh soak"]
fn soak_refactor_solve_cycles() {
    let Some(g) = gpu() else { return };
    let cycles: usize = std::env::var("BLOCKTRI_SOAK_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let seed = fresh_seed();
    // Eight problems of one shape (S = 2, N = 100, n = 8, k = 2), rotated: every cycle
    // factors new values. Their first solutions, checked against the residual, are the
    // reference every later cycle must reproduce.
    let problems: Vec<_> = (0..8).map(|i| problem::<f64>(2, 100, 8, 2, seed + i)).collect();
    let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
    let mut reference: Vec<BlockVec<f64>> = Vec::new();
    for (a, b) in &problems {
        solver.factor(a).unwrap();
        let x = solver.solve(b).unwrap();
        assert!(residual::accuracy(a, &x, b).unwrap().relative_residual < 1e-12);
        reference.push(x);
    }
    let mut x = problems[0].1.clone();
    let mut run = |solver: &mut GpuCholesky<f64>, range: std::ops::Range<usize>| {
        for i in range {
            let (a, b) = &problems[i % problems.len()];
            solver.refactor(a).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            x.as_mut_slice().copy_from_slice(b.as_slice());
            solver.solve_in_place(&mut x).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
            let want = &reference[i % problems.len()];
            let diff = x.as_slice().iter().zip(want.as_slice()).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
            assert!(diff <= 1e-13, "cycle {i}: solution differs from the first run by {diff:e} (seed {seed})");
        }
    };
    let warm_up = 1000.min(cycles);
    run(&mut solver, 0..warm_up);
    let (host_before, device_before, captures_before) = (resident_bytes(), g.context().mem_get_info().unwrap().0, solver.graph_captures());
    let started = std::time::Instant::now();
    run(&mut solver, warm_up..cycles);
    let seconds = started.elapsed().as_secs_f64();
    let (host_after, device_after, captures_after) = (resident_bytes(), g.context().mem_get_info().unwrap().0, solver.graph_captures());
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "soak: {} cycles in {seconds:.1} s ({:.1} us per refactor + solve); host resident {:.2} -> {:.2} MiB; \
         device free {:.2} -> {:.2} MiB; graphs captured {captures_before} -> {captures_after}",
        cycles - warm_up,
        seconds * 1e6 / (cycles - warm_up).max(1) as f64,
        mib(host_before),
        mib(host_after),
        mib(device_before),
        mib(device_after),
    );
    assert_eq!(captures_after, captures_before, "graphs were re-captured");
    assert!(device_after >= device_before, "device memory shrank by {} bytes", device_before - device_after);
    // The allocator may round a page or two; a leak per cycle would show as megabytes.
    assert!(host_after <= host_before + (1 << 20), "host memory grew by {:.2} MiB", mib(host_after - host_before));
}
