//! `oltp-like` and `web-like`: synthetic block traces shaped like the two SPC traces of the PFC paper
//! (Zhang et al., ICDCS 2008, §4.2: OLTP is the most sequential, 11% random requests, 529 MB footprint in
//! its first 10 GB of requests; WebSearch the least, 74% random, 8392 MB footprint).
//!
//! The model: a footprint of `footprint_bytes` is cut into extents whose popularity is Zipf(`alpha`)
//! (scattered over the footprint, so hot data is not one block range). Each request is, with probability
//! `random`, an isolated random read or write of `random_*_blocks` blocks at a uniform offset of a
//! popular extent; otherwise the next request of one of `streams` concurrent sequential runs (picked
//! uniformly), of `seq_*_blocks` blocks contiguous to the run's previous request. A run starts at a uniform
//! offset of a popular extent and lasts a geometric number of requests of mean `mean_run`. Popular
//! extents are re-read by runs and random requests alike, which gives the re-reference locality that makes
//! caching matter on top of prefetching. Inter-arrival times are exponential; `stream` is the request's
//! volume (the footprint cut into `volumes` equal parts, like SPC's ASUs); `client` is 0.
//!
//! The share of requests that [`TraceStats`](crate::stats::TraceStats) counts as random is `random` plus
//! the run starts (`(1 - random) / mean_run`) plus the rare run continuation that falls out of its
//! 32-request window; the defaults of `random` are calibrated so that the measured shares are 11% and 74%
//! (tests pin them within ±2 points).

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::{Permutation, SimRng, Zipf};
use super::{bad, blocks_in, check_interarrival, check_share, check_units};
use crate::error::TraceError;

/// Parameters of the SPC-shaped presets. `oltp-like` and `web-like` differ only in their defaults
/// ([`SpcLikeParams::oltp`], [`SpcLikeParams::web`]); the paper's facts and our choices are marked on each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpcLikeParams {
    /// Requests in the trace. Default 1,000,000 \[ours\].
    pub requests: u64,
    /// Bytes of the address space the trace touches. OLTP 512 MiB, Web 8 GiB [paper: PFC §4.2, 529 MB and
    /// 8392 MB].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub footprint_bytes: u64,
    /// Unit of popularity. Default 1 MiB \[ours\].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub extent_bytes: u64,
    /// Zipf skew of extent popularity. OLTP 1.0 (a hot working set, a database's hot tables and indexes),
    /// Web 0.6 (a large index read broadly; some reuse) \[ours\].
    pub alpha: f64,
    /// Concurrent sequential runs. OLTP 4, Web 2 \[ours\].
    pub streams: u32,
    /// Mean requests per sequential run (geometric). OLTP 16, Web 6 \[ours\].
    pub mean_run: f64,
    /// Probability that a request is an isolated random one. Calibrated \[ours\] so that the measured random
    /// share (window 32, gap 0) is 11% (OLTP) and 74% (Web) [paper: PFC §4.2].
    pub random: f64,
    /// Smallest request of a sequential run, blocks. OLTP 2, Web 2 \[ours\].
    pub seq_min_blocks: u32,
    /// Largest request of a sequential run, blocks. OLTP 8, Web 4 \[ours\] (8-32 KiB and 8-16 KiB at 4 KiB).
    pub seq_max_blocks: u32,
    /// Smallest random request, blocks. OLTP 1, Web 2 \[ours\].
    pub random_min_blocks: u32,
    /// Largest random request, blocks. OLTP 2, Web 4 \[ours\].
    pub random_max_blocks: u32,
    /// Share of reads. OLTP 0.8, Web 1.0 \[ours\] (search serves reads; an OLTP database also writes).
    pub read_share: f64,
    /// Volumes (the `stream` field). Default 8 \[ours\].
    pub volumes: u32,
    /// Mean inter-arrival time, seconds (exponential); 0 = no time. OLTP 8 ms, Web 3 ms \[ours\].
    pub mean_interarrival_s: f64,
    /// Random seed. Default 1 \[ours\].
    pub seed: u64,
}

impl SpcLikeParams {
    /// The `oltp-like` defaults.
    #[must_use]
    pub fn oltp() -> Self {
        Self {
            requests: 1_000_000,
            footprint_bytes: 512 << 20,
            extent_bytes: 1 << 20,
            alpha: 1.0,
            streams: 4,
            mean_run: 16.0,
            random: 0.052,
            seq_min_blocks: 2,
            seq_max_blocks: 8,
            random_min_blocks: 1,
            random_max_blocks: 2,
            read_share: 0.8,
            volumes: 8,
            mean_interarrival_s: 0.008,
            seed: 1,
        }
    }

    /// The `web-like` defaults.
    #[must_use]
    pub fn web() -> Self {
        Self {
            requests: 1_000_000,
            footprint_bytes: 8 << 30,
            extent_bytes: 1 << 20,
            alpha: 0.6,
            streams: 2,
            mean_run: 6.0,
            random: 0.69,
            seq_min_blocks: 2,
            seq_max_blocks: 4,
            random_min_blocks: 2,
            random_max_blocks: 4,
            read_share: 1.0,
            volumes: 8,
            mean_interarrival_s: 0.003,
            seed: 1,
        }
    }
}

impl Default for SpcLikeParams {
    fn default() -> Self {
        Self::oltp()
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Run {
    next: u64,
    left: u64,
}

/// An SPC-shaped generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct SpcLike {
    p: SpcLikeParams,
    rng: SimRng,
    popularity: Zipf,
    scatter: Permutation,
    extent: u64,
    space: u64,
    volume: u64,
    runs: Vec<Run>,
    mean_ns: f64,
    time_ns: u64,
    left: u64,
}

fn check_range(min_key: &str, max_key: &str, lo: u32, hi: u32) -> Result<(), TraceError> {
    if lo == 0 {
        return Err(bad(min_key, "must be at least 1 block"));
    }
    if hi < lo {
        return Err(bad(max_key, format!("must be at least {min_key} ({lo}), got {hi}")));
    }
    super::check_request_blocks(max_key, hi)?;
    Ok(())
}

impl SpcLike {
    /// A generator for `p` over blocks of `block_size` bytes.
    pub fn new(p: &SpcLikeParams, block_size: u64) -> Result<Self, TraceError> {
        check_share("random", p.random)?;
        check_share("read_share", p.read_share)?;
        check_interarrival("mean_interarrival_s", p.mean_interarrival_s)?;
        check_range("seq_min_blocks", "seq_max_blocks", p.seq_min_blocks, p.seq_max_blocks)?;
        check_range("random_min_blocks", "random_max_blocks", p.random_min_blocks, p.random_max_blocks)?;
        check_units("streams", u64::from(p.streams))?;
        if p.volumes == 0 {
            return Err(bad("volumes", "must be at least 1"));
        }
        if !(p.alpha.is_finite() && (0.0..=10.0).contains(&p.alpha)) {
            return Err(bad("alpha", format!("must be between 0 and 10, got {}", p.alpha)));
        }
        if !(p.mean_run.is_finite() && p.mean_run >= 1.0) {
            return Err(bad("mean_run", format!("must be at least 1 request, got {}", p.mean_run)));
        }
        let footprint = blocks_in(p.footprint_bytes, block_size);
        let extent = blocks_in(p.extent_bytes, block_size).min(footprint);
        let extents = footprint / extent;
        let space = extents * extent;
        let longest = u64::from(p.seq_max_blocks.max(p.random_max_blocks));
        if space < longest.saturating_mul(2) {
            return Err(bad("footprint_bytes", format!("{space} blocks cannot hold requests of {longest} blocks")));
        }
        let mut rng = SimRng::new(p.seed, 0);
        let scatter = Permutation::new(extents, &mut rng);
        Ok(Self {
            p: p.clone(),
            popularity: Zipf::new(extents, p.alpha),
            scatter,
            rng,
            extent,
            space,
            volume: space.div_ceil(u64::from(p.volumes)),
            runs: vec![Run::default(); p.streams as usize],
            mean_ns: p.mean_interarrival_s * 1e9,
            time_ns: 0,
            left: p.requests,
        })
    }

    /// A uniform block of a popular extent.
    fn popular_block(&mut self) -> u64 {
        let e = self.scatter.apply(self.popularity.sample(&mut self.rng) - 1);
        e * self.extent + self.rng.below(self.extent)
    }

    fn next_request(&mut self) -> Request {
        let p = &self.p;
        let (random, read_share, mean_run) = (p.random, p.read_share, p.mean_run);
        let (rlo, rhi) = (u64::from(p.random_min_blocks), u64::from(p.random_max_blocks));
        let (slo, shi) = (u64::from(p.seq_min_blocks), u64::from(p.seq_max_blocks));
        let (first, len) = if self.rng.chance(random) {
            let len = self.rng.between(rlo, rhi);
            (self.popular_block().min(self.space - len), len)
        } else {
            let s = self.rng.below(self.runs.len() as u64) as usize;
            let len = self.rng.between(slo, shi);
            let mut run = self.runs[s];
            if run.left == 0 || run.next + len > self.space {
                run = Run { next: self.popular_block().min(self.space - len), left: self.rng.geometric(mean_run) };
            }
            let first = run.next;
            run.next += len;
            run.left -= 1;
            self.runs[s] = run;
            (first, len)
        };
        let op = if read_share >= 1.0 || self.rng.chance(read_share) { Op::Read } else { Op::Write };
        self.time_ns = self.time_ns.saturating_add(self.rng.exp_ns(self.mean_ns));
        Request { time_ns: self.time_ns, first, len: len as u32, op, stream: (first / self.volume) as u32, client: 0 }
    }
}

impl Iterator for SpcLike {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(self.next_request())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}
