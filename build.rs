//! Compiles the kernel crate `device/` to PTX and embeds it (see `ptx-builder/`).
//! Architectures: `sm_80` (runs on Ampere, Ada and Hopper through the driver's PTX JIT)
//! and `sm_90` (Hopper's FP64 tensor-core shapes and dependent launches: the large-block
//! factor is 1.2-1.5x faster on an H200 than with the `sm_80` build, docs/perf-notes.md
//! entry 101) by default; the newest one the device runs is loaded. `BLOCKTRI_PTX_ARCHS`
//! replaces the list (`sm_80` alone builds in half the time).
fn main() {
    // The f64 factor kernel needs about 110 registers unconstrained; 80 is spill-free (ptxas -v)
    // and lets 6 instead of 4 blocks of 128 threads share a multiprocessor.
    // The register-resident kernels loop over compile-time sizes (up to 32 x 32); they must
    // unroll completely or their per-lane arrays land in local memory.
    let builder = blocktri_ptx::PtxBuilder::new("device")
        .arch("sm_80")
        .arch("sm_90")
        .max_registers("factor_level_f64", 80)
        // The tiled products (128 threads): 168 registers let 3 blocks share a
        // multiprocessor; the sm_90 neighbour kernel takes 195 unconstrained (2 blocks).
        .max_registers("tiled_neighbours", 168)
        .max_registers("tiled_trsm", 168)
        .max_registers("tiled_update_trsm", 168)
        // The 16-warp wide products (512 threads) and the tall column updates (256, two
        // blocks per multiprocessor): 128 registers.
        .max_registers("tiled_wide16", 128)
        .max_registers("tiled_tall_update", 128)
        // The diagonal solve steps (256 threads) keep a tile's loads in flight: ~200
        // registers unconstrained, 128 without spills (2 blocks per multiprocessor).
        .max_registers("tiled_forward_diag", 128)
        .max_registers("tiled_backward_diag", 128)
        // The node walks (256 threads, a two-stage ring of 72 KB): 128 registers let two
        // blocks share a multiprocessor on the levels with many nodes.
        .max_registers("tiled_forward_node", 128)
        .max_registers("tiled_backward_node", 128)
        // The inverse solves stream tiles as the node walks do; the inverse steps are the
        // column steps' products (`tiled_update_trsm`).
        .max_registers("tiled_forward_inverse", 128)
        .max_registers("tiled_backward_inverse", 128)
        .max_registers("tiled_inverse_step", 168)
        // The diagonal-tile factor (256 threads, 76 KB of shared memory): 144 registers
        // unconstrained (one block per multiprocessor), 128 lets two share one.
        .max_registers("tiled_potrf", 128)
        // The strip-blocked chain factor (256 threads at padded size 64, 111 KB of shared
        // memory with the inverse): 156 registers unconstrained (one block per
        // multiprocessor), 128 lets two share one; at padded size 32 (128 threads) 136,
        // 128 lets four share one.
        .max_registers("factor_chain_strips", 128)
        // The single-launch rows factor (96 threads) takes ~170 registers unconstrained, 3
        // blocks per multiprocessor (176 per thread as allocated); 168 lets four share one
        // (N = 16384, n = 16: 734 -> 430 us on the H100, docs/perf-notes.md entry 18).
        .max_registers("factor_rows_dataflow16", 168)
        // The per-level rows factor at padded size 16 (two nodes per block since entry 36):
        // at most 168 registers, so that four 96-thread blocks share a multiprocessor (a
        // first build of the packing took 184: three).
        .max_registers("factor_rows16", 168)
        // Their twins with the interlaced forward substitution (entry 92), for the same reason.
        .max_registers("factor_solve_rows_dataflow16", 168)
        .max_registers("factor_solve_rows16", 168)
        // The per-level rows solves at padded size 16 (96 threads): f64 72 unconstrained, 64
        // (spill-free) lets ten blocks share a multiprocessor instead of nine; f32 61-63,
        // 56 as before the packing (eleven blocks; entry 36).
        .max_registers("solve_forward_rows16_f32", 56)
        .max_registers("solve_backward_rows16_f32", 56)
        .max_registers("solve_forward_rows16", 64)
        .max_registers("solve_backward_rows16", 64)
        // The warp-per-node solves (128 threads, four nodes): 64 registers let eight
        // blocks (32 nodes) share a multiprocessor, about as many as its shared memory holds.
        .max_registers("solve_forward_warps16", 64)
        .max_registers("solve_backward_warps16", 64)
        // The staged selected inversion (128- or 256-thread blocks): 128 registers let four
        // warp-per-node blocks share a multiprocessor, as many as their shared memory
        // allows at n = 16 (ptxas sm_90: 124-128 registers, no spills).
        .max_registers("selinv_level_staged", 128)
        // The unstaged ones run 512-thread blocks above n = 96: at most 128 registers.
        .max_registers("selinv_level", 128)
        .max_registers("selinv_chain", 128)
        .max_registers("selinv_chain_staged", 128)
        // The tiled selected inversion (256-thread blocks, one 64 x 64 tile each): 128
        // registers let two blocks share a multiprocessor.
        .max_registers("selinv_tiled", 128)
        // The blocked factor's per-level launches (level::blocked::factor_blocked_threads):
        // f64 at padded size 64 runs 256 threads, and 128 registers (144 unconstrained) let
        // two such blocks share a multiprocessor; f32 (99-100 unconstrained) at 80 fits two
        // 384-thread blocks at 64 and four 192-thread blocks at 32. The single-launch
        // kernels stay unconstrained: their top levels are latency-bound, and 128 there
        // cost 5 % (docs/perf-notes.md, entry 72). Their interlaced twins (entry 78) as they.
        .max_registers("factor_blocked64_f64", 128)
        .max_registers("factor_blocked64_f32", 80)
        .max_registers("factor_blocked32_f32", 80)
        .max_registers("factor_solve_blocked64_f64", 128)
        .max_registers("factor_solve_blocked64_f32", 80)
        .max_registers("factor_solve_blocked32_f32", 80)
        .llvm_arg("-unroll-threshold=20000")
        .llvm_arg("-unroll-full-max-count=4096");
    match builder.build() {
        Ok(out) => {
            let archs: Vec<_> = out.modules.iter().map(|m| m.arch.as_str()).collect();
            println!("cargo:rustc-env=BLOCKTRI_PTX_SUMMARY={} kernels for {}", out.kernels.len(), archs.join(","));
        }
        Err(e) => {
            eprintln!("\nerror: could not build the GPU kernels (device/) to PTX:\n{e}\n");
            std::process::exit(1);
        }
    }
}
