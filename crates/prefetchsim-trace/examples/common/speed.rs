//! Helpers shared by the speed examples (`mrc_speed`, `family_speed`, `replay`): the whole trace decoded
//! into memory, the thread's CPU clock, and the median and range of repeated runs. Each example includes
//! this file and uses a part of it.
#![allow(dead_code)]

use prefetchsim_core::engine::{RequestSource, SourceError};
use prefetchsim_core::Request;

/// Every request of `src`, decoded into memory (so that a timed run pays no reading).
pub fn read_all(src: &mut dyn RequestSource) -> Result<Vec<Request>, SourceError> {
    let mut reqs = Vec::new();
    while src.fill(&mut reqs, 1 << 16)? > 0 {}
    Ok(reqs)
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU seconds of this thread so far (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Median and range of `v`, formatted.
pub fn stats(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{:.4} s ({lo:.4}-{hi:.4})", median(v.to_vec()))
}
