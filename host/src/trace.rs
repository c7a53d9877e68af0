//! Wall-clock phases of host-side calls, printed to stderr when the environment variable
//! `BLOCKTRI_TRACE` is set: where a call from host memory spends its time (copies, host
//! arithmetic, waits on the GPU) on machines without a profiler. Off, a phase costs one
//! load of a cached flag.

use std::sync::OnceLock;
use std::time::Instant;

pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("BLOCKTRI_TRACE").is_some())
}

/// A phase that prints its duration when dropped (if tracing is on).
pub(crate) struct Phase {
    label: &'static str,
    start: Option<Instant>,
}

/// Starts timing `label`.
pub(crate) fn phase(label: &'static str) -> Phase {
    Phase { label, start: enabled().then(Instant::now) }
}

/// Runs `work` as the phase `label`.
pub(crate) fn timed<R>(label: &'static str, work: impl FnOnce() -> R) -> R {
    let _phase = phase(label);
    work()
}

impl Drop for Phase {
    fn drop(&mut self) {
        if let Some(t) = self.start {
            eprintln!("trace: {:<36} {:9.3} ms", self.label, t.elapsed().as_secs_f64() * 1e3);
        }
    }
}
