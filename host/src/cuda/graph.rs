//! CUDA graphs: capture a launch sequence on a stream once, replay it with one launch.

use crate::error::{Error, Result};
use cudarc::driver::{CudaGraph, CudaStream, sys};

/// A captured and instantiated launch sequence.
///
/// CUDA graph objects are not internally synchronized but may be used from any thread;
/// owners use it through `&mut self`, so moving it to another thread (`Send`) is sound;
/// sharing it (`Sync`) is not offered.
pub struct Graph(CudaGraph);

// SAFETY: see the type docs: access is exclusive through the owner's `&mut self`.
unsafe impl Send for Graph {}

impl Graph {
    /// Captures what `enqueue` puts on `stream` (thread-local capture mode), instantiates
    /// and uploads the graph. Capture always ends, also when `enqueue` fails.
    pub fn capture(stream: &std::sync::Arc<CudaStream>, enqueue: impl FnOnce() -> Result<()>) -> Result<Self> {
        stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let enqueued = enqueue();
        let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        enqueued?;
        let graph = graph?.ok_or_else(|| Error::Cuda("graph capture produced no graph".into()))?;
        graph.upload()?;
        Ok(Graph(graph))
    }

    /// Launches the graph on the stream it was captured on.
    pub fn launch(&self) -> Result<()> {
        Ok(self.0.launch()?)
    }
}
