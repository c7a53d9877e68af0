//! Real device-memory pressure, not a `BLOCKTRI_DEVICE_MEMORY_LIMIT` cap (a cap limits what
//! the size checks see, not what the driver hands out). In a test executable of its own:
//! it takes all but a little of the device's memory while it runs. Prints why it skips
//! when no GPU is usable.

mod common;

use blocktri::cuda::{DeviceBuffer, Gpu, GpuCholesky};
use blocktri::{Factorization, Shape, residual};
use common::{fresh_seed, gpu, problem};

/// Runs `then` with about `room` bytes of the device left free (the rest held by a buffer
/// of this test); `None` when the device has too little memory to leave just that.
fn with_room<R>(g: &Gpu, room: usize, then: impl FnOnce() -> R) -> Option<R> {
    let free = g.free_memory().unwrap();
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
