//! The crate's kernels are compiled one by one, on first use (`Module::from_embedded`):
//! every kernel compiles alone, several threads may ask for one at once, and a first use
//! inside a graph capture does not break the capture. Skipped without a GPU.

mod common;

use blocktri::cuda::{Gpu, Graph};
use std::collections::BTreeSet;

#[test]
fn every_kernel_compiles_alone_and_once_from_several_threads() {
    let Some(gpu) = common::gpu() else { return };
    let names: BTreeSet<String> = gpu.module().kernel_names().iter().cloned().collect();
    let built: BTreeSet<String> = blocktri::ptx::KERNELS.iter().map(|k| k.to_string()).collect();
    assert_eq!(names, built, "the per-kernel index lists the PTX's kernels");
    // Four threads ask for every kernel, in different orders: each kernel compiles once
    // (its slot's lock) and every caller gets a working function.
    std::thread::scope(|s| {
        for t in 0..4 {
            let (gpu, built) = (&gpu, &built);
            s.spawn(move || {
                let mut order: Vec<&String> = built.iter().collect();
                let shift = t * order.len() / 4;
                order.rotate_left(shift);
                for name in order {
                    let k = gpu.kernel(name).unwrap();
                    assert_eq!(k.name(), name);
                    assert!(k.registers().unwrap() > 0, "{name}");
                }
            });
        }
    });
    assert_eq!(gpu.module().load_all().unwrap(), built.len());
}

#[test]
fn a_kernel_first_used_inside_a_graph_capture_keeps_the_capture() {
    if common::gpu().is_none() {
        return;
    }
    // A `Gpu` of its own: its module has compiled only its smallest kernel yet.
    let gpu = Gpu::new().unwrap();
    let name = blocktri::ptx::KERNELS.iter().find(|k| k.starts_with("tiled_potrf")).expect("a tiled potrf kernel");
    let stream = gpu.stream().clone();
    let mut buf = stream.alloc_zeros::<u8>(64).unwrap();
    let graph = Graph::capture(&stream, || {
        let kernel = gpu.kernel(name)?;
        assert_eq!(kernel.name(), *name);
        stream.memset_zeros(&mut buf)?;
        Ok(())
    })
    .expect("the capture survives a kernel's first compile");
    graph.launch().unwrap();
    stream.synchronize().unwrap();
}
