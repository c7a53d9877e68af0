//! The GPU kernels themselves, run in the CPU block emulator with the executor's launch
//! sequence: factor (plain and interlaced with the forward substitution) and solve
//! against the dense reference; failures reported with the right system and block.
//! Output buffers start poisoned (NaN).

mod common;

use blocktri::{BlockTridiag, BlockVec};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::level::{
    FactorArgs, INFO_OK, InfoCode, SolveArgs, decode_info, factor_level, factor_prep, factor_shared_bytes, solve_backward_level,
    solve_forward_level, solve_shared_bytes,
};
use blocktri_prims::emu;
use common::{dense_solution, error_vs_reference, fresh_seed, problem};

struct Device {
    ld: usize,
    diag_in: Vec<f64>,
    sub_in: Vec<f64>,
    diag: Vec<f64>,
    left: Vec<f64>,
    right: Vec<f64>,
    info: Vec<u64>,
    solve_info: Vec<u64>,
    rhs: Vec<f64>,
}

fn upload(a: &BlockTridiag<f64>, b: &BlockVec<f64>, ld: usize) -> Device {
    let a = a.repad(ld).unwrap();
    let shape = a.shape();
    let len = shape.batch * shape.nblocks * ld * shape.block;
    Device {
        ld,
        diag_in: a.diag().to_vec(),
        sub_in: a.sub().to_vec(),
        diag: vec![f64::NAN; len],
        left: vec![f64::NAN; len],
        right: vec![f64::NAN; len],
        info: vec![0; shape.batch],
        solve_info: vec![0; shape.batch],
        rhs: b.as_slice().to_vec(),
    }
}

fn factor_args(d: &mut Device, a: &BlockTridiag<f64>, level: u32, nrhs: u32) -> FactorArgs<f64> {
    let shape = a.shape();
    FactorArgs {
        diag_in: d.diag_in.as_ptr(),
        diag: d.diag.as_mut_ptr(),
        left: d.left.as_mut_ptr(),
        right: d.right.as_mut_ptr(),
        sub: d.sub_in.as_ptr(),
        info: d.info.as_mut_ptr(),
        rhs: if nrhs > 0 { d.rhs.as_mut_ptr() } else { std::ptr::null_mut() },
        sym_tol: f64::EPSILON.sqrt(),
        ld: d.ld as u32,
        n: shape.block as u32,
        nblocks: shape.nblocks as u32,
        systems: shape.batch as u32,
        level,
        nrhs,
    }
}

fn run_factor(d: &mut Device, a: &BlockTridiag<f64>, threads: u32, nrhs: u32) {
    let shape = a.shape();
    let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
    let args = factor_args(d, a, 0, nrhs);
    // SAFETY (all launches): the arguments point to buffers sized for the shape; the
    // closures only pass them to the kernels.
    unsafe { emu::launch_unchecked((s * (nb / 2)).max(1), 128, 0, || factor_prep(&args)) };
    let smem = factor_shared_bytes(shape.block, nrhs as usize, 8);
    for m in 0..levels(nb) {
        let args = factor_args(d, a, m, nrhs);
        unsafe { emu::launch_unchecked(s * nodes_in_level(nb, m), threads, smem, || factor_level(&args)) };
    }
}

fn run_solve(d: &mut Device, a: &BlockTridiag<f64>, k: usize, chunk: u32, forward: bool) {
    let shape = a.shape();
    let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
    d.solve_info.fill(INFO_OK);
    let args = |d: &mut Device, level| SolveArgs {
        diag: d.diag.as_ptr(),
        left: d.left.as_ptr(),
        right: d.right.as_ptr(),
        rhs: d.rhs.as_mut_ptr(),
        info: d.solve_info.as_mut_ptr(),
        ld: d.ld as u32,
        n: shape.block as u32,
        nblocks: nb,
        level,
        nrhs: k as u32,
        chunk,
    };
    let smem = solve_shared_bytes(shape.block, chunk as usize, 8);
    if forward {
        for m in 0..levels(nb) {
            let a = args(d, m);
            unsafe { emu::launch_unchecked(s * nodes_in_level(nb, m), 64, smem, || solve_forward_level(&a)) };
        }
    }
    for m in (0..levels(nb)).rev() {
        let a = args(d, m);
        unsafe { emu::launch_unchecked(s * nodes_in_level(nb, m), 64, smem, || solve_backward_level(&a)) };
    }
}

const CASES: &[(usize, usize, usize, usize)] = &[(1, 1, 3, 1), (2, 2, 2, 2), (1, 3, 5, 1), (2, 5, 1, 3), (1, 8, 4, 2), (1, 9, 3, 5)];

#[test]
fn emulated_factor_and_solve_match_the_dense_reference() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in CASES.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let mut d = upload(&a, &b, n.div_ceil(8) * 8);
        run_factor(&mut d, &a, 64, 0);
        assert!(d.info.iter().all(|&x| x == INFO_OK), "info {:?}", d.info);
        run_solve(&mut d, &a, k, 2, true);
        assert!(d.solve_info.iter().all(|&x| x == INFO_OK));
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-12, "S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})");
    }
}

#[test]
fn emulated_interlaced_factor_forward_then_backward() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in CASES.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + 50 + i as u64);
        let mut d = upload(&a, &b, n.div_ceil(8) * 8);
        run_factor(&mut d, &a, 96, k as u32);
        run_solve(&mut d, &a, k, 32, false);
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-12, "S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})");
    }
}

#[test]
fn emulated_failures_name_the_system_and_block() {
    // System 1 of 2 gets an indefinite diagonal block 5 (level 1): reported there.
    let (mut a, b) = problem::<f64>(2, 9, 3, 1, 7);
    a.set_diag(1, 5, 1, 1, -100.0);
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, 64, 0);
    assert_eq!(d.info[0], INFO_OK);
    let (level, code, block) = decode_info(d.info[1]).unwrap();
    assert_eq!((level, code, block), (1, InfoCode::NotPositiveDefinite as u32, 5));

    // A NaN in sub-diagonal block 2 of system 0 (coupling of level-0 node block 2).
    let (mut a, b) = problem::<f64>(2, 6, 2, 1, 8);
    a.sub_block_mut(0, 2)[1] = f64::NAN;
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, 64, 0);
    let (level, code, block) = decode_info(d.info[0]).unwrap();
    assert_eq!((level, code, block), (0, InfoCode::NonFinite as u32, 2));
    assert_eq!(d.info[1], INFO_OK);

    // An asymmetric diagonal block 3 (level 2).
    let (mut a, b) = problem::<f64>(1, 7, 3, 1, 9);
    a.diag_block_mut(0, 3)[1] += 0.5; // entry (1, 0) only
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, 64, 0);
    let (level, code, block) = decode_info(d.info[0]).unwrap();
    assert_eq!((level, code, block), (2, InfoCode::NotSymmetric as u32, 3));
}
