//! Batched control: thousands of independent MPC problems (the interior-point method of
//! `examples/mpc`, different initial states), one batched block-tridiagonal factorization
//! and solve per Newton step, as a reinforcement-learning environment step would take
//! them. Prints systems per second on the GPU and on the threaded CPU backend.
//!
//! ```text
//! cargo run --release --example batched_mpc                 # GPU if present: S = 4096, N = 64, n_x = 16
//! cargo run --release --example batched_mpc -- 512 64 8 8   # S, N, masses, actuated inputs
//! ```
//!
//! Without a GPU it runs on the CPU backend only, with S = 256 (said when it starts).

#[path = "mpc/ipm.rs"]
mod ipm;

use blocktri::Result;
use blocktri::cuda::Gpu;

fn main() -> Result<()> {
    let nums: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (systems, horizon, masses, actuated) = match (nums.as_slice(), Gpu::is_available()) {
        ([s, n, m, a], _) => (*s, *n, *m, *a),
        (_, true) => (4096, 64, 8, 8),
        (_, false) => {
            println!("no GPU found: CPU backend with S = 256 systems (pass `S N masses actuated` to change)");
            (256, 64, 8, 8)
        }
    };
    ipm::compare_backends(systems, horizon, masses, actuated)
}
