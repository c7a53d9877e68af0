//! GPU kernels of blocktri, written in Rust.
//!
//! - [`tile`]: potrf (fused with trsm), trsm and products on small column-major tiles,
//!   generic over the [`team::Team`] executing them (a CUDA block or one CPU thread);
//! - [`level`]: the fused nested-dissection factor and solve kernels (one launch per level);
//! - [`chain`]: sequential block Cholesky, one thread block per system (large batches);
//! - [`tridiag`]: the Sherman–Morrison tridiagonal inverse (stagewise and fused);
//! - [`tiled`]: the tiled engine for large blocks (any `n`; FP64 tensor-core products);
//! - [`batched`]: batched Cholesky of independent tiles;
//! - [`logdet`]: the log-determinant of every factored system;
//! - [`refine`]: the `f64` side of mixed-precision iterative refinement;
//! - [`arrow`]: the arrowhead's border on the device (`B^T` as columns, `W^T Z`, `y -= W x_C`);
//! - [`selinv`]: selected inversion (blocks of `A^-1`) from the nested-dissection or chain factor;
//! - [`layout`]: the nested-dissection numbering shared with the host plan;
//! - [`kernels`]: the exported entry points (`extern "ptx-kernel"`, nvptx64 only).
//!
//! On the host the crate is an ordinary library: the tile routines run with
//! [`team::Solo`], and whole kernels run in the `blocktri_prims::emu` block emulator.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
// Kernels index per-lane arrays with loop counters over compile-time sizes: after full
// unrolling every index is a constant and the arrays stay in registers.
#![allow(clippy::needless_range_loop)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod arrow;
pub mod batched;
pub mod chain;
pub mod copy;
pub mod kernels;
pub mod layout;
pub mod level;
pub mod logdet;
pub mod refine;
pub mod selinv;
pub mod team;
pub mod tile;
pub mod tiled;
pub mod tridiag;

pub use blocktri_prims::Real;
