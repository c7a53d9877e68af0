//! Warp-level matrix multiply-accumulate (`mma.sync`, sm_80 and newer).
//!
//! Fragment layouts (lane `l`, `g = l / 4`, `t = l % 4`), as in the PTX ISA:
//!
//! | op | A | B | C / D |
//! |---|---|---|---|
//! | [`mma_m8n8k4_f64`] (A 8x4, B 4x8, C 8x8) | `A[g][t]` | `B[t][g]` | `C[g][2t]`, `C[g][2t+1]` |
//! | [`mma_m16n8k16_f64`] (A 16x16, B 16x8, C 16x8; sm_90) | `a[i] = A[g + 8(i%2)][t + 4(i/2)]` | `b[u] = B[t + 4u][g]` | `c[i] = C[g + 8(i/2)][2t + i%2]` |
//! | [`mma_m16n8k8_f64`] (A 16x8, B 8x8, C 16x8; sm_90) | `a[i] = A[g + 8(i%2)][t + 4(i/2)]` | `b[u] = B[t + 4u][g]` | `c[i] = C[g + 8(i/2)][2t + i%2]` |
//! | [`mma_m16n8k8_tf32`] (A 16x8, B 8x8, C 16x8) | `A[g][t]`, `A[g+8][t]`, `A[g][t+4]`, `A[g+8][t+4]` | `B[t][g]`, `B[t+4][g]` | `C[g][2t]`, `C[g][2t+1]`, `C[g+8][2t]`, `C[g+8][2t+1]` |
//!
//! All 32 lanes of the warp must execute the call together.

/// `D = A * B + C` for an 8x8x4 FP64 product, one DMMA.
/// PTX: `mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64`.
///
/// Lane `l` passes `a = A[l/4][l%4]`, `b = B[l%4][l/4]`, `c = [C[l/4][2(l%4)], C[l/4][2(l%4)+1]]`
/// and receives the same two entries of `D`.
#[inline(always)]
pub fn mma_m8n8k4_f64(a: f64, b: f64, c: [f64; 2]) -> [f64; 2] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (d0, d1): (f64, f64);
        // SAFETY: warp-synchronous tensor-core op; all lanes participate (contract).
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {{{0}, {1}}}, {{{2}}}, {{{3}}}, {{{4}, {5}}};",
                out(reg64) d0, out(reg64) d1, in(reg64) a, in(reg64) b, in(reg64) c[0], in(reg64) c[1],
                options(nostack, nomem, pure),
            );
        }
        [d0, d1]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let lane = crate::lane_id() as usize;
        let av = crate::emu::warp_all(a.to_bits());
        let bv = crate::emu::warp_all(b.to_bits());
        let (g, t) = (lane / 4, lane % 4);
        let mut d = c;
        for (j, dj) in d.iter_mut().enumerate() {
            let n = 2 * t + j;
            for k in 0..4 {
                *dj = f64::from_bits(av[4 * g + k]).mul_add(f64::from_bits(bv[4 * n + k]), *dj);
            }
        }
        d
    }
}

/// Whether the FP64 `mma` shapes of sm_90 ([`mma_m16n8k16_f64`]) are available: decided
/// when the kernel is compiled (`-Ctarget-cpu=sm_90` or newer) on the device, and by the
/// emulated compute capability ([`crate::emu::with_compute_capability`]) on the host.
/// Kernels branch on it; the branch not taken is removed at compile time on the device.
#[inline(always)]
pub fn has_sm90_dmma() -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        cfg!(target_feature = "sm_90")
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::compute_capability() >= 90
    }
}

/// `D = A * B + C` for a 16x16x16 FP64 product, one sm_90 DMMA (four times the work of
/// [`mma_m8n8k4_f64`] per instruction and per operand register: on Hopper the sm_80 shape
/// keeps the DMMA pipe busy at about half the FP64 tensor peak).
/// PTX: `mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64`.
///
/// Lane `l` (`g = l / 4`, `t = l % 4`) passes `a[i] = A[g + 8(i%2)][t + 4(i/2)]`,
/// `b[u] = B[t + 4u][g]`, `c[i] = C[g + 8(i/2)][2t + i%2]` and receives `D` like `c`.
///
/// Call it only where [`has_sm90_dmma`] is true: a PTX build for an older target does not
/// contain the instruction and traps if this is reached.
#[inline(always)]
pub fn mma_m16n8k16_f64(a: [f64; 8], b: [f64; 4], c: [f64; 4]) -> [f64; 4] {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let (d0, d1, d2, d3): (f64, f64, f64, f64);
        // SAFETY: warp-synchronous tensor-core op; all lanes participate (contract).
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}}}, {{{12}, {13}, {14}, {15}}}, {{{16}, {17}, {18}, {19}}};",
                out(reg64) d0, out(reg64) d1, out(reg64) d2, out(reg64) d3,
                in(reg64) a[0], in(reg64) a[1], in(reg64) a[2], in(reg64) a[3],
                in(reg64) a[4], in(reg64) a[5], in(reg64) a[6], in(reg64) a[7],
                in(reg64) b[0], in(reg64) b[1], in(reg64) b[2], in(reg64) b[3],
                in(reg64) c[0], in(reg64) c[1], in(reg64) c[2], in(reg64) c[3],
                options(nostack, nomem, pure),
            );
        }
        [d0, d1, d2, d3]
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    {
        // Unreachable behind `has_sm90_dmma()`; a trap rather than a wrong result otherwise.
        let _ = (a, b, c);
        core::intrinsics::abort()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(has_sm90_dmma(), "mma_m16n8k16_f64 needs sm_90; the emulated device is sm_{}", crate::emu::compute_capability());
        emulate_m16n8_f64(a, b, c)
    }
}

/// `D = A * B + C` for a 16x8x8 FP64 product, one sm_90 DMMA: half the operand registers
/// of [`mma_m16n8k16_f64`] per call, for products that must fit in few registers.
/// PTX: `mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64`.
///
/// Lane `l` (`g = l / 4`, `t = l % 4`) passes `a[i] = A[g + 8(i%2)][t + 4(i/2)]`,
/// `b[u] = B[t + 4u][g]`, `c[i] = C[g + 8(i/2)][2t + i%2]` and receives `D` like `c`.
///
/// Call it only where [`has_sm90_dmma`] is true (as [`mma_m16n8k16_f64`]).
#[inline(always)]
pub fn mma_m16n8k8_f64(a: [f64; 4], b: [f64; 2], c: [f64; 4]) -> [f64; 4] {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let (d0, d1, d2, d3): (f64, f64, f64, f64);
        // SAFETY: warp-synchronous tensor-core op; all lanes participate (contract).
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{10}, {11}, {12}, {13}}};",
                out(reg64) d0, out(reg64) d1, out(reg64) d2, out(reg64) d3,
                in(reg64) a[0], in(reg64) a[1], in(reg64) a[2], in(reg64) a[3],
                in(reg64) b[0], in(reg64) b[1],
                in(reg64) c[0], in(reg64) c[1], in(reg64) c[2], in(reg64) c[3],
                options(nostack, nomem, pure),
            );
        }
        [d0, d1, d2, d3]
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    {
        // Unreachable behind `has_sm90_dmma()`; a trap rather than a wrong result otherwise.
        let _ = (a, b, c);
        core::intrinsics::abort()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(has_sm90_dmma(), "mma_m16n8k8_f64 needs sm_90; the emulated device is sm_{}", crate::emu::compute_capability());
        emulate_m16n8_f64(a, b, c)
    }
}

/// The FP64 `m16n8kK` products (`K = 4 BR`, `AR = 2 BR` A registers per lane) in the
/// block emulator: every lane gathers the warp's fragments and computes its `D` entries.
#[cfg(not(target_arch = "nvptx64"))]
fn emulate_m16n8_f64<const AR: usize, const BR: usize>(a: [f64; AR], b: [f64; BR], c: [f64; 4]) -> [f64; 4] {
    let lane = crate::lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let a_all: [[u64; 32]; AR] = core::array::from_fn(|i| crate::emu::warp_all(a[i].to_bits()));
    let b_all: [[u64; 32]; BR] = core::array::from_fn(|u| crate::emu::warp_all(b[u].to_bits()));
    // A[m][k]: lane 4(m%8) + k%4, register (m/8) + 2(k/4); B[k][n]: lane 4n + k%4, register k/4.
    let a_at = |m: usize, k: usize| f64::from_bits(a_all[m / 8 + 2 * (k / 4)][4 * (m % 8) + k % 4]);
    let b_at = |k: usize, n: usize| f64::from_bits(b_all[k / 4][4 * n + k % 4]);
    let mut d = c;
    for (i, di) in d.iter_mut().enumerate() {
        let (m, n) = (g + 8 * (i / 2), 2 * t + i % 2);
        for k in 0..4 * BR {
            *di = a_at(m, k).mul_add(b_at(k, n), *di);
        }
    }
    d
}

/// Rounds an `f32` to TF32 (10-bit mantissa, round to nearest, ties away), returned as the
/// 32-bit register the TF32 `mma` reads. PTX: `cvt.rna.tf32.f32`.
#[inline(always)]
pub fn to_tf32(x: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: a conversion, no preconditions.
        unsafe {
            core::arch::asm!("cvt.rna.tf32.f32 {0}, {1};", out(reg32) out, in(reg32) x, options(nostack, nomem, pure));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let bits = x.to_bits();
        if !x.is_finite() {
            return bits;
        }
        // Round to nearest, ties away from zero, at bit 13.
        (bits.wrapping_add(0x1000)) & 0xffff_e000
    }
}

/// Splits an `f32` into the two TF32 operands of the 3xTF32 scheme (`x = hi + lo`):
/// `hi` is `x` rounded to nearest at bit 13, ties away, as [`to_tf32`] gives it for a
/// finite `x` (an integer add and a mask), and `lo = x - hi` (exact in `f32`) is returned
/// as it is, **not** rounded: the tensor cores read a TF32 operand's upper 19 bits and
/// ignore the lower 13 (as the emulated [`mma_m16n8k8_tf32`] does), so they truncate `lo`
/// themselves. `|lo| <= 2^-11 |x|`, and truncating it to 11 significant bits errs by at
/// most `2^-22 |x|`, below the `2^-22` relative size of the `lo * lo` term the scheme
/// drops.
///
/// Why not `to_tf32` twice: `cvt.rna.tf32.f32` compiles to four instructions on sm_90 (a
/// finiteness test and a select among them), and the split is most of the issue slots of
/// a 3xTF32 product (`docs/perf-notes.md`, entry 84); this is three (`IADD`, `LOP3`,
/// `FADD`). A non-finite `x` still poisons every product it enters: `lo` is then a NaN
/// (`inf - inf`, or a NaN operand), which stays a NaN when truncated.
#[inline(always)]
pub fn split_tf32x3(x: f32) -> (u32, u32) {
    let hi = x.to_bits().wrapping_add(0x1000) & 0xffff_e000;
    let lo = x - f32::from_bits(hi);
    (hi, lo.to_bits())
}

/// `D = A * B + C` for a 16x8x8 product with TF32 inputs (see [`to_tf32`]) and FP32
/// accumulation. PTX: `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`. Like the
/// tensor cores, the emulation reads each operand's upper 19 bits only (the lower 13 are
/// ignored, so an unrounded `f32` is truncated: [`split_tf32x3`]).
///
/// TF32 keeps 10 mantissa bits: products carry a relative error near 1e-3, so use it
/// where that accuracy suffices, or split each operand into a high and a low TF32 part
/// and accumulate three products (the 3xTF32 scheme) to recover FP32 accuracy.
#[inline(always)]
pub fn mma_m16n8k8_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (d0, d1, d2, d3): (f32, f32, f32, f32);
        // SAFETY: warp-synchronous tensor-core op; all lanes participate (contract).
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{10}, {11}, {12}, {13}}};",
                out(reg32) d0, out(reg32) d1, out(reg32) d2, out(reg32) d3,
                in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3],
                in(reg32) b[0], in(reg32) b[1],
                in(reg32) c[0], in(reg32) c[1], in(reg32) c[2], in(reg32) c[3],
                options(nostack, nomem, pure),
            );
        }
        [d0, d1, d2, d3]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let lane = crate::lane_id() as usize;
        let (g, t) = (lane / 4, lane % 4);
        let a_all: [[u64; 32]; 4] = core::array::from_fn(|i| crate::emu::warp_all(a[i] as u64));
        let b_all: [[u64; 32]; 2] = core::array::from_fn(|i| crate::emu::warp_all(b[i] as u64));
        // A[m][k]: held by lane 4*(m%8)+(k%4), register (m/8) + 2*(k/4).
        // The lower 13 bits of each operand are ignored, as on the tensor cores.
        let tf32 = |bits: u64| f32::from_bits(bits as u32 & 0xffff_e000);
        let a_at = |m: usize, k: usize| tf32(a_all[(m / 8) + 2 * (k / 4)][4 * (m % 8) + k % 4]);
        // B[k][n]: held by lane 4*n+(k%4), register k/4.
        let b_at = |k: usize, n: usize| tf32(b_all[k / 4][4 * n + k % 4]);
        let mut d = c;
        for (r, dr) in d.iter_mut().enumerate() {
            let m = g + 8 * (r / 2);
            let n = 2 * t + r % 2;
            for k in 0..8 {
                *dr = a_at(m, k).mul_add(b_at(k, n), *dr);
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::{split_tf32x3, to_tf32};

    /// What the tensor cores read of a TF32 operand: its upper 19 bits.
    fn as_read(bits: u32) -> f32 {
        f32::from_bits(bits & 0xffff_e000)
    }

    /// `hi` is `to_tf32`'s rounding, and `hi + lo` as the tensor cores read them is `x` to
    /// within `2^-22 |x|` (the 3xTF32 scheme's accuracy) wherever `lo` is a normal number;
    /// a non-finite `x` leaves a NaN in `lo` that its truncation keeps.
    #[test]
    fn the_3xtf32_split_rounds_like_cvt_and_keeps_non_finite_values() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Finite values over most of the exponent range, both signs.
            let bits = (state as u32) & 0xbfff_ffff | if i % 2 == 0 { 0x3000_0000 } else { 0 };
            let x = f32::from_bits(bits);
            // (Below ~2^-100, `lo` is subnormal and loses bits to the truncation, as the
            // products of such values lose them to `f32` anyway.)
            if !x.is_finite() || x.abs() < 2f32.powi(-100) {
                continue;
            }
            let (hi, lo) = split_tf32x3(x);
            assert_eq!(hi, to_tf32(x), "x = {x:e}");
            let sum = as_read(hi) as f64 + as_read(lo) as f64;
            assert!((sum - x as f64).abs() <= (x as f64).abs() * 2f64.powi(-22), "x = {x:e}: {sum:e}");
        }
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0x7fff_ffff), f32::from_bits(0xffff_ffff)] {
            let (_, lo) = split_tf32x3(x);
            assert!(as_read(lo).is_nan(), "x = {x:e} ({:#x}): lo reads {:e}", x.to_bits(), as_read(lo));
        }
    }
}
