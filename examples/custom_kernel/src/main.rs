//! Runs the example's fused SAXPY + dot kernel on the GPU (or the CPU block emulator
//! without one) and checks it against the CPU: `cargo run --release -p custom-kernel -- [n]`.

use blocktri::cuda::Gpu;
use custom_kernel::{compare, emulated, on_gpu, ptx::KERNELS};
use rand::{Rng, SeedableRng};
use std::process::ExitCode;

fn main() -> ExitCode {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1 << 22);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let x: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let a = 1.5f32;
    println!("kernels in the embedded PTX: {KERNELS:?}");

    let (y_new, dot, backend) = match Gpu::shared() {
        Ok(gpu) => match on_gpu(&gpu, a, &x, &y) {
            Ok((y_new, dot)) => (y_new, dot, format!("GPU ({})", gpu.info().name)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
        Err(e) => {
            println!("no GPU ({e}): running the kernel in the CPU block emulator");
            let m = n.min(1 << 14);
            let (y_new, dot) = emulated(a, &x[..m], &y[..m]);
            return check(a, &x[..m], &y[..m], &y_new, dot, "CPU block emulator");
        }
    };
    check(a, &x, &y, &y_new, dot, &backend)
}

/// Prints the comparison with the CPU reference; success when within f32 rounding.
fn check(a: f32, x: &[f32], y: &[f32], y_new: &[f32], dot: f32, backend: &str) -> ExitCode {
    let (max_err, dot_err) = compare(a, x, y, y_new, dot);
    println!("{backend}: n = {}, max |y - y_ref| = {max_err:.2e}, dot = {dot:.6} (relative error {dot_err:.2e})", x.len());
    if max_err <= 1e-6 && dot_err <= 1e-5 {
        println!("ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("error: the kernel's result differs from the CPU reference");
        ExitCode::FAILURE
    }
}
