//! Real device-memory pressure, not a `BLOCKTRI_DEVICE_MEMORY_LIMIT` cap (a cap limits what
//! the size checks see, not what the driver hands out). In a test executable of its own:
//! it takes all but a little of the device's memory while it runs. Prints why it skips
//! when no GPU is usable.

mod common;

use blocktri::cuda::{DeviceBuffer, Gpu, GpuCholesky, MixedCholesky};
use blocktri::{Error, Factorization, Shape, residual};
use common::{fresh_seed, gpu, problem};

/// The tests of this file one at a time: each needs the device's memory to itself.
static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The device's free bytes once all its work is done: what earlier work freed (on any
/// stream) goes back to the driver only when the device gets there.
fn settled_free(g: &Gpu) -> usize {
    g.context().synchronize().unwrap();
    g.free_memory().unwrap()
}

/// Runs `then` with about `room` bytes of the device left free (the rest held by a buffer
/// of this test); `None` when the device has too little memory to leave just that.
fn with_room<R>(g: &Gpu, room: usize, then: impl FnOnce() -> R) -> Option<R> {
    let free = settled_free(g);
    if free < room + (1 << 30) {
        eprintln!("skipping: {free} bytes free, too few to leave {room}");
        return None;
    }
    let hog = DeviceBuffer::<u8>::poisoned(g.stream(), free - room).unwrap();
    g.stream().synchronize().unwrap();
    let out = then();
    drop(hog);
    Some(out)
}

/// The segment path keeps its second lane's plan for its next call (about half the
/// memory). A problem that fits once that plan goes must then still run in one piece, and
/// the segment path must run again after it.
#[test]
fn the_segment_paths_second_lane_makes_way_for_a_plan_that_fits_without_it() {
    let Some(g) = gpu() else { return };
    let _alone = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    let seed = fresh_seed();
    let room = 1usize << 30;
    let per_block = GpuCholesky::<f64>::required_memory(Shape::new(1, 1000, 16).unwrap(), 1) / 1000;
    // A chain whose plan needs 2.5 times the room, and one that needs 70 % of it.
    let (long, fits) = (5 * room / 2 / per_block, 7 * room / 10 / per_block);
    let (a, b) = problem::<f64>(1, long, 16, 1, seed);
    let (a2, b2) = problem::<f64>(1, fits, 16, 1, seed + 1);
    with_room(&g, room, || {
        let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
        let x = solver.factor_solve(&a, &b).unwrap();
        assert!(solver.shape().is_none(), "N = {long}: ran in segments (seed {seed})");
        assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
        // In one piece: the factor stays on the device to solve with.
        let x2 = solver.factor_solve(&a2, &b2).unwrap();
        assert_eq!(solver.shape(), Some(a2.shape()), "N = {fits} did not run in one piece");
        assert!(residual::accuracy(&a2, &x2, &b2).unwrap().relative_residual < 1e-12, "seed {seed}");
        let y2 = solver.solve(&b2).unwrap();
        assert!(residual::accuracy(&a2, &y2, &b2).unwrap().relative_residual < 1e-12, "seed {seed}");
        // The segment path again, its second lane made anew.
        let again = solver.factor_solve(&a, &b).unwrap();
        assert!(residual::accuracy(&a, &again, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
    });
}

/// A batch that fits once a solver dropped just before has given its memory back runs in
/// one piece, not in chunks: the dropped solver's buffers are freed on its own stream and
/// go back to the driver only at a synchronization, which the chunk planner waits for
/// before it cuts a batch (it used to cut it by what was free at first).
#[test]
fn a_batch_that_fits_after_a_dropped_solver_runs_in_one_piece() {
    let Some(g) = gpu() else { return };
    let _alone = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    let seed = fresh_seed();
    let room = 1usize << 30;
    let (nblocks, n) = (1000, 16);
    let per_system = GpuCholesky::<f64>::required_memory(Shape::new(1, nblocks, n).unwrap(), 1);
    // Each solver's plan takes 60 % of the room: the second one fits only once the first
    // one's memory is back.
    let systems = 6 * room / 10 / per_system;
    let (a, b) = problem::<f64>(systems, nblocks, n, 1, seed);
    with_room(&g, room, || {
        for round in 0..3 {
            let mut first = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
            let x = first.factor_solve(&a, &b).unwrap();
            assert_eq!(first.shape(), Some(a.shape()), "round {round}: the first solver chunked S = {systems} (seed {seed})");
            assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
            drop(first);
            let mut second = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
            let y = second.factor_solve(&a, &b).unwrap();
            assert_eq!(second.shape(), Some(a.shape()), "round {round}: S = {systems} ran in chunks after a drop (seed {seed})");
            assert!(residual::accuracy(&a, &y, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
        }
    });
}

/// A mixed-precision solver's `f32` plan on the tiled engine rounds the `f64` plan's
/// matrix in its `prep` and allocates no input buffers of its own: what the solver holds
/// on the device (the driver's count, the memory pool's reserve included) stays below the
/// two plans' sizes by at least half of those buffers (512 MiB at N = 1024, n = 256).
#[test]
fn a_mixed_solvers_f32_plan_needs_no_input_buffers_of_its_own() {
    let Some(g) = gpu() else { return };
    let _alone = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    let seed = fresh_seed();
    let shape = Shape::new(1, 1024, 256).unwrap();
    let (a, b) = problem::<f64>(shape.batch, shape.nblocks, shape.block, 1, seed);
    let f32_input = (2 * shape.nblocks - 1) * shape.block * shape.block * 4;
    let (high, low) = (GpuCholesky::<f64>::required_memory(shape, 1), GpuCholesky::<f32>::required_memory(shape, 1));
    let free = settled_free(&g);
    if free < 2 * (high + low) {
        eprintln!("skipping: {free} bytes free");
        return;
    }
    let mut mixed = MixedCholesky::with_gpu(g.clone(), Default::default()).unwrap();
    let x = mixed.factor_solve(&a, &b).unwrap();
    assert!(mixed.report().fallback.is_none(), "the f32 factor failed (seed {seed})");
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "seed {seed}");
    let held = free.saturating_sub(settled_free(&g));
    assert!(held < high + low - f32_input / 2, "the mixed solver holds {held} bytes; its plans with input buffers {}", high + low);
}

/// Too little device memory is an [`Error::OutOfMemory`] (or a result that solves), never
/// another error or a panic, at every margin from below the size check's need to above
/// it: there what a solver holds beyond its plans' byte counts (the memory pool's
/// granularity, the refinement's vectors) can exhaust the device after the check passed.
/// Both the `f64` solver (which runs a chain that does not fit in segments) and the
/// mixed-precision one, whose `f32` plan comes second; the mixed solver is refused at the
/// small margins and solves at the large ones.
#[test]
fn too_little_device_memory_is_an_out_of_memory_error_at_every_margin() {
    let Some(g) = gpu() else { return };
    let _alone = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    let seed = fresh_seed();
    let shape = Shape::new(1, 200, 256).unwrap();
    let (a, b) = problem::<f64>(shape.batch, shape.nblocks, shape.block, 1, seed);
    let need = GpuCholesky::<f64>::required_memory(shape, 1) + GpuCholesky::<f32>::required_memory(shape, 1);
    let (mut solved, mut refused) = (0, 0);
    // One mixed solver throughout: refused at the small margins, it must solve at the
    // large ones (a refusal loses nothing). Whether it solved, margin by margin:
    let mut mixed_solved = Vec::new();
    let mut mixed = MixedCholesky::with_gpu(g.clone(), Default::default()).unwrap();
    for step in 0..16 {
        // 0.40 .. 1.30 times both plans' bytes: below the f64 plan's need, between it and
        // the mixed solver's, above both.
        let room = need / 100 * (40 + 6 * step);
        // Made before the device fills (its kernels load once per context).
        let mut plain = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
        let outcomes = with_room(&g, room, || {
            let first = plain.factor_solve(&a, &b);
            drop(plain); // its plan makes way for the mixed solver's
            [first, mixed.factor_solve(&a, &b)]
        });
        let Some(outcomes) = outcomes else { return };
        let mut line = format!("room {room} of {need}:");
        for (which, outcome) in ["f64", "mixed"].iter().zip(outcomes) {
            let ok = match outcome {
                Ok(x) => {
                    let r = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
                    assert!(r < 1e-12, "{which}, room {room}: residual {r:e} (seed {seed})");
                    solved += 1;
                    line += &format!(" {which} solved ({r:.1e});");
                    true
                }
                Err(e @ Error::OutOfMemory { .. }) => {
                    refused += 1;
                    line += &format!(" {which} refused ({e});");
                    false
                }
                Err(e) => panic!("{which}, room {room} of {need}: {e}"),
            };
            if *which == "mixed" {
                mixed_solved.push(ok);
            }
        }
        eprintln!("{line}");
    }
    eprintln!("{solved} solved, {refused} refused for lack of device memory");
    assert!(refused > 0 && solved > 0, "the margins did not reach both sides of the need: {solved} solved, {refused} refused");
    assert!(!mixed_solved[0] && mixed_solved[mixed_solved.len() - 1], "the mixed solver, by margin: {mixed_solved:?}");
    assert!(mixed.report().fallback.is_none(), "the mixed solver fell back to f64: {:?}", mixed.report());
}
