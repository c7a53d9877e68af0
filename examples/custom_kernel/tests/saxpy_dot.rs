//! The example's kernel against the f64 CPU reference: in the block emulator always, on
//! the GPU when there is one (fresh random inputs each run).

use custom_kernel::{compare, emulated, on_gpu};
use rand::{Rng, SeedableRng};

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let x = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    (x, y)
}

#[test]
fn emulated_kernel_matches_the_cpu() {
    // Lengths below, at and above one grid pass (4 blocks x 256 threads), and not a
    // multiple of 32.
    for n in [1, 31, 1024, 3001] {
        let (x, y) = inputs(n);
        let (y_new, dot) = emulated(-0.75, &x, &y);
        let (max_err, dot_err) = compare(-0.75, &x, &y, &y_new, dot);
        assert!(max_err <= 1e-6 && dot_err <= 1e-5, "n = {n}: {max_err:e} {dot_err:e}");
    }
}

#[test]
fn gpu_kernel_matches_the_cpu() {
    let gpu = match blocktri::cuda::Gpu::shared() {
        Ok(g) => g,
        Err(e) => return eprintln!("skipping: {e}"),
    };
    for n in [1, 1000, 1 << 20] {
        let (x, y) = inputs(n);
        let (y_new, dot) = on_gpu(&gpu, 2.5, &x, &y).unwrap();
        let (max_err, dot_err) = compare(2.5, &x, &y, &y_new, dot);
        assert!(max_err <= 1e-6 && dot_err <= 1e-5, "n = {n}: {max_err:e} {dot_err:e}");
    }
}
