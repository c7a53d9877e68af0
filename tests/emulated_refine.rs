//! The mixed-precision refinement kernels (`blocktri_device::refine`) in the CPU block
//! emulator against CPU references: the matrix rounded to `f32` at another leading
//! dimension, `r = b - A x` with the per-system maxima, the scaled demotion and the
//! promotion of the correction. Outputs start poisoned (NaN).

mod common;

use blocktri::BlockVec;
use blocktri_device::level::INFO_OK;
use blocktri_device::refine::{
    REFINE_THREADS, RESIDUAL_SHARED_BYTES, ROWS_PER_LANE, RefineArgs, demote_matrix, demote_rhs, promote, residual, residual_sum,
};
use blocktri_prims::emu;
use common::{fresh_seed, problem};

#[test]
fn emulated_refinement_kernels_match_the_cpu() {
    let seed = fresh_seed();
    // Two systems; n = 300 takes two row passes of the residual kernel (the coupling's
    // column sums kept over both); k = 2 and 3 columns; one block (no coupling).
    for (i, &(s, nb, n, k)) in [(2usize, 3usize, 5usize, 2usize), (1, 2, 300, 1), (2, 1, 7, 1), (3, 4, 33, 3)].iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let x = BlockVec::from_vec(a.shape(), k, common::random_matrix(s * nb * n * k, 1, seed + 7).as_slice().to_vec()).unwrap();
        let (ld, low_ld) = (a.ld(), n + 3);
        let entries = s * nb * n * k;
        let mut low_diag = vec![f32::NAN; s * nb * low_ld * n];
        let mut low_sub = vec![f32::NAN; (s * (nb - 1) * low_ld * n).max(1)];
        let mut xs = x.as_slice().to_vec();
        let mut r = vec![f64::NAN; entries];
        let (mut lower_part, mut upper_part) = (vec![f64::NAN; entries], vec![f64::NAN; entries]);
        let mut norms = vec![0u64; 2 * s];
        let mut low = vec![f32::NAN; entries];
        let info = vec![INFO_OK; s];
        let args = RefineArgs::<f32> {
            diag: a.diag().as_ptr(),
            sub: a.sub().as_ptr(),
            ld: ld as u32,
            n: n as u32,
            nblocks: nb as u32,
            systems: s as u32,
            nrhs: k as u32,
            first: 0,
            b: b.as_slice().as_ptr(),
            x: xs.as_mut_ptr(),
            r: r.as_mut_ptr(),
            lower_part: lower_part.as_mut_ptr(),
            upper_part: upper_part.as_mut_ptr(),
            norms: norms.as_mut_ptr(),
            low: low.as_mut_ptr(),
            low_diag: low_diag.as_mut_ptr(),
            low_sub: low_sub.as_mut_ptr(),
            low_ld: low_ld as u32,
            low_info: info.as_ptr(),
        };
        // SAFETY (all launches): the arrays cover the grids as the kernels' contracts state.
        unsafe { emu::launch_unchecked((s * (2 * nb - 1)) as u32, REFINE_THREADS, 0, || demote_matrix(&args)) };
        for sys in 0..s {
            for blk in 0..nb {
                let d = a.diag_block(sys, blk);
                for c in 0..n {
                    for row in 0..n {
                        assert_eq!(low_diag[(sys * nb + blk) * low_ld * n + c * low_ld + row], d[c * ld + row] as f32);
                    }
                }
            }
            for blk in 0..nb - 1 {
                let d = a.sub_block(sys, blk);
                assert_eq!(low_sub[(sys * (nb - 1) + blk) * low_ld * n + 2 * low_ld + 1], d[2 * ld + 1] as f32);
            }
        }

        let grid = ((s * nb) as u32, k as u32);
        // Both pass heights (256 and 128 rows; n = 300 takes two and three passes), the
        // 256-row one last (its `r` and maxima are checked below too).
        for rows_per_lane in [ROWS_PER_LANE / 2, ROWS_PER_LANE] {
            r.fill(f64::NAN);
            norms.iter_mut().for_each(|v| *v = 0);
            if rows_per_lane == ROWS_PER_LANE {
                unsafe { emu::launch_unchecked(grid, REFINE_THREADS, RESIDUAL_SHARED_BYTES, || residual::<_, ROWS_PER_LANE>(&args)) };
            } else {
                unsafe {
                    emu::launch_unchecked(grid, REFINE_THREADS, RESIDUAL_SHARED_BYTES, || residual::<_, { ROWS_PER_LANE / 2 }>(&args))
                };
            }
            unsafe { emu::launch_unchecked(grid, REFINE_THREADS, RESIDUAL_SHARED_BYTES, || residual_sum(&args)) };
            for sys in 0..s {
                let dense = a.to_dense(sys);
                let dim = nb * n;
                let (mut r_max, mut b_max) = (0.0f64, 0.0f64);
                for c in 0..k {
                    let off = sys * dim * k + c * dim;
                    let xv = nalgebra::DVector::from_column_slice(&x.as_slice()[off..off + dim]);
                    let want = nalgebra::DVector::from_column_slice(&b.as_slice()[off..off + dim]) - &dense * xv;
                    for row in 0..dim {
                        let got = r[off + row];
                        assert!(
                            (got - want[row]).abs() <= 1e-12 * (1.0 + want[row].abs()),
                            "S={s} N={nb} n={n}, {rows_per_lane} rows per lane: r[{row}] {got} vs {}",
                            want[row]
                        );
                        r_max = r_max.max(got.abs());
                        b_max = b_max.max(b.as_slice()[off + row].abs());
                    }
                }
                assert_eq!(f64::from_bits(norms[2 * sys]), r_max);
                assert_eq!(f64::from_bits(norms[2 * sys + 1]), b_max);
            }
        }

        // Demote (scaled by max |r|), then promote on the first pass: x = max|r| * low ~ r.
        unsafe { emu::launch_unchecked(entries.div_ceil(256) as u32, REFINE_THREADS, 0, || demote_rhs(&args)) };
        assert!(low.iter().all(|v| v.abs() <= 1.0));
        let first = RefineArgs { first: 1, ..args };
        unsafe { emu::launch_unchecked(entries.div_ceil(256) as u32, REFINE_THREADS, 0, || promote(&first)) };
        for e in 0..entries {
            // f32 rounding of r / max|r|, times max|r|.
            let scale = f64::from_bits(norms[2 * (e / (entries / s))]);
            assert!((xs[e] - r[e]).abs() <= 6e-8 * scale, "entry {e}: {} vs {}", xs[e], r[e]);
        }
        // With x = 0 the first residual is b (x not read).
        let mut poisoned = vec![f64::NAN; entries];
        norms.iter_mut().for_each(|v| *v = 0);
        let zero = RefineArgs { first: 1, x: poisoned.as_mut_ptr(), ..args };
        unsafe { emu::launch_unchecked(grid, REFINE_THREADS, RESIDUAL_SHARED_BYTES, || residual::<_, ROWS_PER_LANE>(&zero)) };
        unsafe { emu::launch_unchecked(grid, REFINE_THREADS, RESIDUAL_SHARED_BYTES, || residual_sum(&zero)) };
        assert_eq!(r, b.as_slice());
    }
}
