//! # blocktri
//!
//! Solve `A X = B` for symmetric positive definite **block-tridiagonal** `A` (many at
//! once, on the GPU or the CPU), and invert diagonally dominant **tridiagonal** matrices
//! on the GPU.
//!
//! ```
//! use blocktri::{generate, Backend, Solver};
//! let a = generate::random_spd::<f64>(1, 1000, 8, 42).unwrap(); // N = 1000 blocks of 8x8
//! let b = generate::random_rhs(a.shape(), 1, 7).unwrap();
//! let mut solver = Solver::new(Backend::Auto).unwrap(); // GPU if present, else CPU threads
//! solver.factor(&a).unwrap();                             // A = L L^T
//! let x = solver.solve(&b).unwrap();                       // X = A^-1 B
//! assert!(blocktri::residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
//! ```
//!
//! The factorization is the block Cholesky `A = L L^T` in nested-dissection order:
//! level `m` eliminates the blocks whose 1-based index has `m` trailing zero bits, all
//! in parallel, so a system of `N` blocks takes `ceil(log2(N + 1))` dependent steps
//! instead of `N`. On the GPU each level is one launch of a fused kernel (written in Rust,
//! crate `blocktri-device`) that keeps a node's blocks in shared memory; the level
//! sequence is captured once into a CUDA graph and replayed.
//!
//! Modules: [`matrix`] (problem types), [`generate`] (test problems, Kalman smoothing),
//! [`cpu`] and [`cuda`] (backends), [`solver`] (the common interface), [`tridiag`]
//! (tridiagonal inverse), [`io`] (`.npz`, `.npy`, Matrix Market), [`residual`],
//! [`plan`] (the schedule), `bench` (the comparison harness, feature `bench`).

pub mod arrow;
#[cfg(feature = "bench")]
pub mod bench;
pub mod condition;
pub mod cpu;
pub mod cuda;
pub mod error;
pub mod generate;
pub mod io;
mod logdet;
pub mod matrix;
pub mod plan;
pub mod residual;
pub mod scalar;
mod segmented;
pub mod solver;
mod trace;
pub mod tridiag;

/// The PTX of the kernel crate, built by `build.rs` (one module per architecture).
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/blocktri_device_ptx.rs"));
}

pub use error::{Error, Result};
pub use matrix::{BlockTridiag, BlockVec, Shape};
pub use scalar::{Precision, Scalar};
pub use solver::{Backend, Factorization, Solver};
