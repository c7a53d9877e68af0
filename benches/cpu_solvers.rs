//! The CPU paths: the sequential block Cholesky (the reference, second paper's
//! Algorithms 1-2) against the threaded nested-dissection solver, factor and solve, and
//! the tridiagonal inverse (sequential recursion vs threaded vs direct).
//!
//! `cargo bench --bench cpu_solvers` (results in `target/criterion`, summary in
//! BENCHMARKS.md).

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::tridiag::{Method, Tridiagonal, invert};
use blocktri::{Factorization, generate};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

/// `(N, n)` of the block-tridiagonal cases: long horizons with small blocks, and the
/// second paper's FP64 sweep shape at n = 64.
const SHAPES: &[(usize, usize)] = &[(4096, 8), (4096, 16), (1024, 32), (1024, 64)];

fn block_cholesky(c: &mut Criterion) {
    let mut group = c.benchmark_group("block_tridiag_f64");
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for &(nb, n) in SHAPES {
        let a = generate::random_spd::<f64>(1, nb, n, 1).expect("problem");
        let b = generate::random_rhs::<f64>(a.shape(), 1, 2).expect("rhs");
        let id = format!("N{nb}_n{n}");
        group.throughput(Throughput::Elements((nb * n) as u64));
        let mut seq = SequentialCholesky::<f64>::new();
        group.bench_function(BenchmarkId::new("factor/sequential", &id), |bench| bench.iter(|| seq.factor(black_box(&a)).expect("factor")));
        let mut thr = ThreadedCholesky::<f64>::new();
        group.bench_function(BenchmarkId::new("factor/threaded", &id), |bench| bench.iter(|| thr.factor(black_box(&a)).expect("factor")));
        seq.factor(&a).expect("factor");
        thr.factor(&a).expect("factor");
        group.bench_function(BenchmarkId::new("solve/sequential", &id), |bench| bench.iter(|| seq.solve(black_box(&b)).expect("solve")));
        group.bench_function(BenchmarkId::new("solve/threaded", &id), |bench| bench.iter(|| thr.solve(black_box(&b)).expect("solve")));
    }
    group.finish();
}

fn tridiagonal_inverse(c: &mut Criterion) {
    let mut group = c.benchmark_group("tridiag_inverse_f64");
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for n in [1024usize, 4096] {
        let t = Tridiagonal::<f64>::random_dominant(n, 1, false, 5).expect("matrix");
        group.throughput(Throughput::Bytes((n * n * 8) as u64));
        for (name, method) in [("sequential", Method::Sequential), ("threaded", Method::Threaded), ("direct", Method::Direct)] {
            group.bench_function(BenchmarkId::new(name, n), |bench| bench.iter(|| invert(black_box(&t), method, true).expect("inverse")));
        }
    }
    group.finish();
}

criterion_group!(benches, block_cholesky, tridiagonal_inverse);
criterion_main!(benches);
