//! The device tile routines (potrf fused with trsm, triangular solves, products) against
//! nalgebra: single-threaded, and as whole CUDA blocks in the emulator.

mod common;

use blocktri_device::team::{Block, Solo, Team};
use blocktri_device::tile::{MatRef, NO_FAILURE, potrf_panel, product, trsm};
use blocktri_prims::emu::{self, SyncPtr};
use common::{fresh_seed, random_lower, random_matrix};
use nalgebra::DMatrix;

/// Builds the panel [D; B] (rows x n, column-major) with D SPD.
fn panel(n: usize, extra: usize, seed: u64) -> (DMatrix<f64>, DMatrix<f64>, Vec<f64>) {
    let m = random_matrix(n, n, seed);
    let d = &m * m.transpose() + DMatrix::identity(n, n) * n as f64;
    let b = random_matrix(extra, n, seed + 1);
    let rows = n + extra;
    let mut p = vec![f64::NAN; rows * n];
    for c in 0..n {
        for r in 0..n {
            p[c * rows + r] = d[(r, c)];
        }
        for r in 0..extra {
            p[c * rows + n + r] = b[(r, c)];
        }
    }
    (d, b, p)
}

fn check_panel(n: usize, extra: usize, p: &[f64], d: &DMatrix<f64>, b: &DMatrix<f64>) {
    let rows = n + extra;
    let l_ref = d.clone().cholesky().unwrap().l();
    // B L^-T: solve L X^T = B^T.
    let x_ref = l_ref.solve_lower_triangular(&b.transpose()).unwrap().transpose();
    for c in 0..n {
        for r in c..n {
            assert!((p[c * rows + r] - l_ref[(r, c)]).abs() < 1e-12 * n as f64, "L[{r}][{c}] n={n}");
        }
        for r in 0..extra {
            assert!((p[c * rows + n + r] - x_ref[(r, c)]).abs() < 1e-11 * n as f64, "X[{r}][{c}] n={n}");
        }
    }
}

#[test]
fn potrf_panel_single_thread_matches_nalgebra() {
    let seed = fresh_seed();
    for n in [1, 2, 3, 5, 8, 13, 16] {
        for extra in [0, n, 2 * n] {
            let (d, b, mut p) = panel(n, extra, seed + n as u64);
            let mut piv = vec![0.0; 2 * n];
            let mut status = 0u32;
            let rows = n + extra;
            let failed = unsafe { potrf_panel(Solo, p.as_mut_ptr(), rows, n, rows, piv.as_mut_ptr(), &mut status) };
            assert_eq!(failed, NO_FAILURE, "seed {seed}");
            check_panel(n, extra, &p, &d, &b);
        }
    }
}

#[test]
fn potrf_panel_in_emulated_blocks_matches_nalgebra() {
    let seed = fresh_seed();
    for (n, threads) in [(3, 64), (7, 64), (16, 128), (20, 96)] {
        let extra = 2 * n;
        let (d, b, mut p) = panel(n, extra, seed + n as u64);
        let rows = n + extra;
        let ptr = SyncPtr(p.as_mut_ptr());
        let smem = (rows * n + 2 * n) * 8 + 16;
        emu::launch(1, threads, smem, || {
            let team = Block;
            let sh = blocktri_prims::shared::dynamic_shared::<f64>();
            for e in (team.rank()..rows * n).step_by(team.size()) {
                unsafe { *sh.add(e) = *ptr.get().add(e) };
            }
            team.sync();
            let piv = unsafe { sh.add(rows * n) };
            let status = unsafe { piv.add(2 * n) } as *mut u32;
            let failed = unsafe { potrf_panel(team, sh, rows, n, rows, piv, status) };
            assert_eq!(failed, NO_FAILURE);
            for e in (team.rank()..rows * n).step_by(team.size()) {
                unsafe { *ptr.get().add(e) = *sh.add(e) };
            }
        });
        check_panel(n, extra, &p, &d, &b);
    }
}

#[test]
fn potrf_panel_reports_the_first_bad_pivot() {
    for n in [1, 4, 9] {
        for bad in 0..n {
            let (_, _, mut p) = panel(n, 0, 11);
            // Make the leading (bad+1) x (bad+1) block indefinite at pivot `bad`.
            p[bad * n + bad] = -1e6;
            let mut piv = vec![0.0; 2 * n];
            let mut status = 0u32;
            let failed = unsafe { potrf_panel(Solo, p.as_mut_ptr(), n, n, n, piv.as_mut_ptr(), &mut status) };
            assert_eq!(failed, bad as u32, "n={n}");
        }
    }
}

#[test]
fn triangular_solves_match_nalgebra() {
    let seed = fresh_seed();
    for n in [1, 2, 5, 12] {
        for k in [1, 3, 7] {
            let l = random_lower(n, seed + n as u64);
            let b = random_matrix(n, k, seed + 7);
            let (lv, mut y, mut x) = (l.as_slice().to_vec(), b.as_slice().to_vec(), b.as_slice().to_vec());
            let mut inv = vec![0.0; n];
            unsafe {
                trsm::invert_diagonal(Solo, lv.as_ptr(), n, n, inv.as_mut_ptr());
                trsm::trsm_lower(Solo, lv.as_ptr(), n, n, y.as_mut_ptr(), n, k, inv.as_ptr());
                trsm::trsm_lower_transposed(Solo, lv.as_ptr(), n, n, x.as_mut_ptr(), n, k, inv.as_ptr());
            }
            let y_ref = l.solve_lower_triangular(&b).unwrap();
            let x_ref = l.transpose().solve_upper_triangular(&b).unwrap();
            for i in 0..n * k {
                assert!((y[i] - y_ref.as_slice()[i]).abs() < 1e-12, "seed {seed}");
                assert!((x[i] - x_ref.as_slice()[i]).abs() < 1e-12, "seed {seed}");
            }
        }
    }
}

#[test]
fn triangular_solves_in_emulated_blocks() {
    let (n, k) = (9, 5);
    let l = random_lower(n, 3);
    let b = random_matrix(n, k, 4);
    let lv = l.as_slice().to_vec();
    let mut out = b.as_slice().to_vec();
    let (lp, op) = (SyncPtr(lv.as_ptr() as *mut f64), SyncPtr(out.as_mut_ptr()));
    emu::launch(1, 64, (n * k + n) * 8, || {
        let team = Block;
        let sh = blocktri_prims::shared::dynamic_shared::<f64>();
        let inv = unsafe { sh.add(n * k) };
        for e in (team.rank()..n * k).step_by(team.size()) {
            unsafe { *sh.add(e) = *op.get().add(e) };
        }
        team.sync();
        unsafe {
            trsm::invert_diagonal(team, lp.get(), n, n, inv);
            trsm::trsm_lower(team, lp.get(), n, n, sh, n, k, inv);
        }
        for e in (team.rank()..n * k).step_by(team.size()) {
            unsafe { *op.get().add(e) = *sh.add(e) };
        }
    });
    let y_ref = l.solve_lower_triangular(&b).unwrap();
    for (got, want) in out.iter().zip(y_ref.as_slice()) {
        assert!((got - want).abs() < 1e-12);
    }
}

#[test]
fn products_with_transposes_match_nalgebra() {
    let seed = fresh_seed();
    for (m, n, kk) in [(1, 1, 1), (3, 5, 2), (16, 16, 16), (33, 7, 9)] {
        let a = random_matrix(m, kk, seed);
        let bt = random_matrix(n, kk, seed + 1); // B = bt^T
        let (av, bv) = (a.as_slice().to_vec(), bt.as_slice().to_vec());
        let mut c = vec![f64::NAN; m * n];
        let am = MatRef::col_major(av.as_ptr(), m);
        let bm = MatRef::col_major(bv.as_ptr(), n).t();
        unsafe { product(Solo, m, n, kk, am, bm, |i, j, v| c[j * m + i] = v) };
        let c_ref = &a * bt.transpose();
        for (got, want) in c.iter().zip(c_ref.as_slice()) {
            assert!((got - want).abs() < 1e-12, "({m},{n},{kk}) seed {seed}");
        }
        // Every entry emitted exactly once by a block of threads.
        let mut counts = vec![0u32; m * n];
        let cp = SyncPtr(counts.as_mut_ptr());
        // SAFETY: the views and the counters are only read / atomically updated.
        unsafe {
            emu::launch_unchecked(1, 64, 0, || {
                product(Block, m, n, kk, am, bm, |i, j, _| {
                    blocktri_prims::atomic::atomic_add_u32(cp.get().add(j * m + i), 1);
                })
            })
        };
        assert!(counts.iter().all(|&c| c == 1));
    }
}
