//! Timing: CUDA events around device work, a monotonic clock around CPU work; medians.

use crate::error::Result;
use cudarc::driver::CudaStream;
use std::time::Instant;

/// Statistics of repeated measurements, in milliseconds.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Stats {
    /// Median.
    pub median_ms: f64,
    /// Fastest.
    pub min_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Number of timed runs.
    pub runs: usize,
}

impl Stats {
    /// From raw samples (empty: all zero).
    pub fn from_samples(mut v: Vec<f64>) -> Self {
        if v.is_empty() {
            return Stats::default();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let median = if v.len() % 2 == 1 { v[v.len() / 2] } else { 0.5 * (v[v.len() / 2 - 1] + v[v.len() / 2]) };
        Stats { median_ms: median, min_ms: v[0], max_ms: v[v.len() - 1], runs: v.len() }
    }
}

/// How many times to run.
#[derive(Clone, Copy, Debug)]
pub struct Repeat {
    /// Untimed runs first.
    pub warmup: usize,
    /// Timed runs.
    pub runs: usize,
    /// Stop timing once this much wall time was spent (after at least 3 runs).
    pub budget_ms: f64,
}

impl Repeat {
    /// `self` for work that rotates among `copies` input sets: every copy is warmed up as
    /// often as a single set would be, so that one-time costs per copy stay out of the timed
    /// runs. This project's solver captures its CUDA graphs at their first launch, inside
    /// the first timed window of a copy: with 8 copies, 3 warm-up runs and 7 timed runs,
    /// five of the seven samples held a capture and the median was 1.6x the steady state
    /// (f64, N = 64, n = 8 solve: 0.060 against 0.035 ms, H200, `docs/perf-notes.md` entry 107).
    pub fn rotating(self, copies: usize) -> Self {
        Repeat { warmup: self.warmup.max(1) * copies.max(1), ..self }
    }
}

impl Default for Repeat {
    fn default() -> Self {
        Repeat { warmup: 3, runs: 20, budget_ms: 2000.0 }
    }
}

/// Times `work(i)` on the GPU: an event before and after each call on `stream(i)`
/// (the work must only enqueue on that stream), the median over `runs` calls.
/// `prepare(i)` runs before the first event (untimed: e.g. restoring inputs). `i` counts
/// the calls so that callers can rotate among several input sets.
pub fn time_gpu(
    repeat: Repeat,
    mut stream: impl FnMut(usize) -> std::sync::Arc<CudaStream>,
    mut prepare: impl FnMut(usize) -> Result<()>,
    mut work: impl FnMut(usize) -> Result<()>,
) -> Result<Stats> {
    for i in 0..repeat.warmup {
        prepare(i)?;
        work(i)?;
        stream(i).synchronize()?;
    }
    let mut samples = Vec::with_capacity(repeat.runs);
    let start = Instant::now();
    for r in 0..repeat.runs {
        let i = repeat.warmup + r;
        prepare(i)?;
        let st = stream(i);
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let t0 = st.record_event(flags)?;
        work(i)?;
        let t1 = st.record_event(flags)?;
        t1.synchronize()?;
        samples.push(t0.elapsed_ms(&t1)? as f64);
        if r >= 2 && start.elapsed().as_secs_f64() * 1e3 > repeat.budget_ms {
            break;
        }
    }
    Ok(Stats::from_samples(samples))
}

/// Times `work(i)` on the CPU with a monotonic clock. A first run slower than a quarter
/// of the budget counts as a timed run (it is warm enough at that length) and at most two
/// more follow, so that seconds-long CPU peers do not dominate a sweep.
pub fn time_cpu(repeat: Repeat, mut work: impl FnMut(usize) -> Result<()>) -> Result<Stats> {
    let t = Instant::now();
    work(0)?;
    let first = t.elapsed().as_secs_f64() * 1e3;
    if first > repeat.budget_ms / 4.0 {
        let mut samples = vec![first];
        for r in 1..repeat.runs.min(3) {
            let t = Instant::now();
            work(r)?;
            samples.push(t.elapsed().as_secs_f64() * 1e3);
        }
        return Ok(Stats::from_samples(samples));
    }
    for i in 1..repeat.warmup {
        work(i)?;
    }
    let mut samples = Vec::with_capacity(repeat.runs);
    let start = Instant::now();
    for r in 0..repeat.runs {
        let t = Instant::now();
        work(repeat.warmup + r)?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
        if r >= 2 && start.elapsed().as_secs_f64() * 1e3 > repeat.budget_ms {
            break;
        }
    }
    Ok(Stats::from_samples(samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(Stats::from_samples(vec![3.0, 1.0, 2.0]).median_ms, 2.0);
        assert_eq!(Stats::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_ms, 2.5);
        let s = Stats::from_samples(vec![]);
        assert_eq!(s.runs, 0);
    }

    #[test]
    fn rotated_copies_are_each_warmed_up() {
        let r = Repeat { warmup: 3, runs: 7, budget_ms: 100.0 };
        for copies in 1..=8 {
            let w = r.rotating(copies).warmup;
            // The warm-up calls i = 0..w reach every copy i % copies at least `warmup` times.
            assert!((0..copies).all(|c| (0..w).filter(|i| i % copies == c).count() >= r.warmup), "copies {copies}");
            assert_eq!(r.rotating(copies).runs, 7);
        }
        let none = Repeat { warmup: 0, ..r }.rotating(5).warmup;
        assert!(none >= 5, "a copy's first launch is never timed");
    }
}
