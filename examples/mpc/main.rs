//! Interior-point MPC: a chain of masses driven by bounded forces to rest, solved by a
//! primal-dual interior-point method whose Newton systems are SPD block-tridiagonal
//! (`ipm.rs`). Every iteration changes the values of the Newton system, not its shape:
//! the solver runs `factor_solve_in_place` on the same buffers (graph replays on the GPU).
//! The batched form is `examples/batched_mpc.rs`.
//!
//! ```text
//! cargo run --release --example mpc                  # GPU if present: N = 1000, 12 masses (n_x = 24, n_u = 8)
//! cargo run --release --example mpc -- 200 6 4        # N, masses, actuated inputs
//! ```
//!
//! Without a GPU it runs on the CPU backend only, with N = 200 (said when it starts).

mod ipm;

use blocktri::Result;
use blocktri::cuda::Gpu;

fn main() -> Result<()> {
    let nums: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (horizon, masses, actuated) = match (nums.as_slice(), Gpu::is_available()) {
        ([n, m, a], _) => (*n, *m, *a),
        (_, true) => (1000, 12, 8),
        (_, false) => {
            println!("no GPU found: CPU backend with N = 200 (pass `N masses actuated` to change)");
            (200, 12, 8)
        }
    };
    ipm::compare_backends(1, horizon, masses, actuated)
}
