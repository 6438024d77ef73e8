//! Zipf-popular one-block requests (the independent reference model common in caching studies, e.g.
//! Breslau et al., "Web Caching and Zipf-like Distributions", INFOCOM 1999): object of popularity rank `k`
//! has probability ∝ `k^-alpha`.
//!
//! Ranks are drawn by rejection-inversion ([`Zipf`]) and, by default, scattered over `0..objects` by a keyed
//! permutation: with `scatter = false` the id is `rank - 1`, so the hottest objects are adjacent blocks and
//! look sequential to a prefetcher, which is rarely what a test wants.

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::{Permutation, SimRng, Zipf};
use super::{bad, check_interarrival, check_share};
use crate::error::TraceError;

/// Parameters of the Zipf generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZipfParams {
    /// Distinct objects (ids `0..objects`). Default 1,000,000 \[ours\]: 4 GiB of 4 KiB blocks, larger than
    /// the caches one sweeps yet quick to warm.
    pub objects: u64,
    /// Skew. Default 1.0 \[ours\], the classic Zipf law; web and block traces measure 0.6-1.2.
    pub alpha: f64,
    /// Requests in the trace. Default 1,000,000 \[ours\].
    pub requests: u64,
    /// Share of reads; the rest are writes. Default 1.0 \[ours\].
    pub read_share: f64,
    /// Scatter ranks over the id space (see the module doc). Default true \[ours\].
    pub scatter: bool,
    /// Mean inter-arrival time, seconds (exponential); 0 = no time. Default 0 \[ours\].
    pub mean_interarrival_s: f64,
    /// Random seed. Default 1 \[ours\].
    pub seed: u64,
}

impl Default for ZipfParams {
    fn default() -> Self {
        Self {
            objects: 1_000_000,
            alpha: 1.0,
            requests: 1_000_000,
            read_share: 1.0,
            scatter: true,
            mean_interarrival_s: 0.0,
            seed: 1,
        }
    }
}

/// The Zipf generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct ZipfGen {
    zipf: Zipf,
    perm: Option<Permutation>,
    rng: SimRng,
    read_share: f64,
    mean_ns: f64,
    time_ns: u64,
    left: u64,
}

impl ZipfGen {
    /// A generator for `p`.
    pub fn new(p: &ZipfParams) -> Result<Self, TraceError> {
        if p.objects == 0 {
            return Err(bad("objects", "must be at least 1"));
        }
        if !(p.alpha.is_finite() && (0.0..=10.0).contains(&p.alpha)) {
            return Err(bad("alpha", format!("must be between 0 and 10, got {}", p.alpha)));
        }
        check_share("read_share", p.read_share)?;
        check_interarrival("mean_interarrival_s", p.mean_interarrival_s)?;
        let mut rng = SimRng::new(p.seed, 0);
        let perm = p.scatter.then(|| Permutation::new(p.objects, &mut rng));
        Ok(Self {
            zipf: Zipf::new(p.objects, p.alpha),
            perm,
            rng,
            read_share: p.read_share,
            mean_ns: p.mean_interarrival_s * 1e9,
            time_ns: 0,
            left: p.requests,
        })
    }
}

impl Iterator for ZipfGen {
    type Item = Request;

    #[inline]
    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let rank = self.zipf.sample(&mut self.rng) - 1;
        let first = match &self.perm {
            Some(p) => p.apply(rank),
            None => rank,
        };
        let op = if self.read_share >= 1.0 || self.rng.chance(self.read_share) { Op::Read } else { Op::Write };
        if self.mean_ns > 0.0 {
            self.time_ns = self.time_ns.saturating_add(self.rng.exp_ns(self.mean_ns));
        }
        Some(Request { time_ns: self.time_ns, first, len: 1, op, stream: 0, client: 0 })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_popular_id_gets_its_share() {
        let p = ZipfParams { objects: 100, alpha: 1.0, requests: 100_000, scatter: false, ..ZipfParams::default() };
        let reqs: Vec<_> = ZipfGen::new(&p).unwrap().collect();
        let top = reqs.iter().filter(|r| r.first == 0).count() as f64 / 100_000.0;
        let h100: f64 = (1..=100).map(|k| 1.0 / f64::from(k)).sum();
        assert!((top - 1.0 / h100).abs() < 0.01, "{top}");
        assert!(reqs.iter().all(|r| r.first < 100 && r.len == 1 && r.time_ns == 0));
    }

    #[test]
    fn read_share_splits_reads_and_writes() {
        let p = ZipfParams { requests: 20_000, read_share: 0.25, ..ZipfParams::default() };
        let reads = ZipfGen::new(&p).unwrap().filter(|r| r.op == Op::Read).count();
        assert!((4_500..5_500).contains(&reads), "{reads}");
    }
}
