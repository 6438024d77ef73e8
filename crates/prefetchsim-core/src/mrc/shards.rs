//! One-pass LRU miss-ratio curves: exact, or estimated by SHARDS spatial sampling.
//!
//! SHARDS: Waldspurger, Park, Garthwaite & Ahmad, "Efficient MRC Construction with SHARDS", FAST 2015.
//! A block is sampled when the hash of its number is below a threshold T (rate R = T / 2^64), so every
//! reference to a sampled block is seen; the blocks between two references to it, counted among sampled
//! blocks and divided by R, estimate those of the whole trace ([`scaled_distance`]); blocks are sampled by
//! a strongly universal hash ([`hash::MultiplyShift`]). *Fixed-rate* keeps R; *fixed-size* keeps at most
//! `max_samples` blocks: when one more would be tracked, the block of largest hash leaves and T drops to its hash. Each
//! reference counts `1 / R` of the rate in force when it was seen, which equals the paper's rescaling of
//! the histogram by `R_new / R_old` at every drop (both weigh a reference by `R_final / R_then` before
//! normalising). `adjust` is SHARDS_adj (§5.1 of the paper, fixed-rate only): the difference between the
//! references the trace had and the sampled estimate of them is added to the smallest distance.
//!
//! Without sampling ([`ShardsConfig::exact`]) this is the exact curve of [`super::stack`].

use std::collections::BinaryHeap;

use serde::Deserialize;

use super::curve::{scaled_distance, DistanceHistogram};
use super::exact_counts::ExactCounts;
use super::hash;
use super::request_filter::RequestFilter;
use super::stack::StackDistances;
use crate::component::ConfigError;
use crate::request::Request;

/// Requests of a fixed-rate pass whose first ones choose how the rest are tested ([`MrcBuilder::add_all`]).
const SCAN_CHUNK: usize = 1 << 14;

/// Requests ahead whose first block's time the exact pass starts loading ([`StackDistances::touch`]).
const TOUCH_AHEAD: usize = 8;

/// Add one at `d` of `counts`, growing it as needed.
#[inline]
fn count(counts: &mut Vec<u64>, d: u64) {
    let d = d as usize;
    if d >= counts.len() {
        counts.resize((d + 1).max(counts.len() * 2), 0);
    }
    counts[d] += 1;
}

/// How the curve is sampled. The default is the exact curve.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShardsConfig {
    /// Sampling rate in (0, 1]; 1 without `max_samples` is the exact curve. With `max_samples`, the
    /// starting rate.
    pub rate: f64,
    /// Fixed-size SHARDS: at most this many sampled blocks are tracked.
    pub max_samples: Option<u64>,
    /// SHARDS_adj correction (fixed-rate only).
    pub adjust: bool,
    /// Seed of the sampling hash.
    pub seed: u64,
}

impl Default for ShardsConfig {
    fn default() -> Self {
        Self { rate: 1.0, max_samples: None, adjust: true, seed: 0 }
    }
}

impl ShardsConfig {
    /// The exact curve (no sampling).
    #[must_use]
    pub fn exact() -> Self {
        Self::default()
    }

    /// Fixed-rate SHARDS at `rate`.
    #[must_use]
    pub fn fixed_rate(rate: f64) -> Self {
        Self { rate, ..Self::default() }
    }

    /// Fixed-size SHARDS keeping at most `max_samples` blocks.
    #[must_use]
    pub fn fixed_size(max_samples: u64) -> Self {
        Self { max_samples: Some(max_samples), ..Self::default() }
    }

    /// Parse from JSON; unknown or mistyped keys name the field.
    ///
    /// # Errors
    /// A [`ConfigError`] at `sampling.FIELD`.
    pub fn from_json(v: serde_json::Value) -> Result<Self, ConfigError> {
        let c: Self = serde_path_to_error::deserialize(v).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::new(
                if path == "." { "sampling".into() } else { format!("sampling.{path}") },
                crate::component::plain_message(&e.inner().to_string()),
            )
        })?;
        c.validate()?;
        Ok(c)
    }

    /// Check the values.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `sampling.rate` or `sampling.max_samples`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.rate > 0.0 && self.rate <= 1.0) {
            return Err(ConfigError::new("sampling.rate", format!("{} is not in (0, 1]", self.rate)));
        }
        if self.max_samples == Some(0) {
            return Err(ConfigError::new("sampling.max_samples", "must be at least 1"));
        }
        Ok(())
    }

    fn is_exact(&self) -> bool {
        self.rate >= 1.0 && self.max_samples.is_none()
    }
}

/// Builds the distance histogram of a request stream in one pass.
#[derive(Debug)]
pub struct MrcBuilder {
    cfg: ShardsConfig,
    threshold: u64,
    /// The sampling hash (of `cfg.seed`).
    hasher: hash::MultiplyShift,
    /// Fixed rate: which requests may hold a sampled block (built at the first batch).
    filter: Option<RequestFilter>,
    stack: StackDistances,
    /// Fixed-size: the tracked blocks by hash, largest on top.
    by_hash: BinaryHeap<(u64, u64)>,
    hist: DistanceHistogram,
    /// The exact pass's counts (its histogram at the end).
    exact: ExactCounts,
    /// Fixed rate: sampled references by their distance among sampled blocks, and sampled requests by the
    /// largest; they become `hist` at the end, scaled when read ([`DistanceHistogram::scale`]). They stay
    /// small (the sample's distances), where scaled distances span the whole trace's.
    by_sampled: (Vec<u64>, Vec<u64>),
    /// Block references of the whole trace, sampled or not (SHARDS_adj).
    seen_blocks: u64,
    /// Requests of the whole trace, sampled or not (SHARDS_adj of the request curve, and reported).
    seen_requests: u64,
    sampled_blocks: u64,
}

impl MrcBuilder {
    /// A builder for `cfg`.
    ///
    /// # Errors
    /// The config's own errors ([`ShardsConfig::validate`]).
    pub fn new(cfg: ShardsConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(Self {
            threshold: hash::threshold(cfg.rate),
            hasher: hash::MultiplyShift::new(cfg.seed),
            filter: None,
            stack: if cfg.is_exact() { StackDistances::new() } else { StackDistances::sampled() },
            cfg,
            by_hash: BinaryHeap::new(),
            hist: DistanceHistogram::default(),
            exact: ExactCounts::default(),
            by_sampled: (Vec::new(), Vec::new()),
            seen_blocks: 0,
            seen_requests: 0,
            sampled_blocks: 0,
        })
    }

    /// The sampling rate now in force.
    #[must_use]
    pub fn rate(&self) -> f64 {
        if self.cfg.is_exact() {
            1.0
        } else {
            hash::rate_of(self.threshold)
        }
    }

    /// Blocks tracked now (at most `max_samples` with fixed-size sampling).
    #[must_use]
    pub fn tracked(&self) -> usize {
        self.stack.tracked()
    }

    /// Sampled block references so far.
    #[must_use]
    pub fn sampled_references(&self) -> u64 {
        self.sampled_blocks
    }

    /// Account requests in order ([`Self::add`] each). At a fixed rate most requests have no sampled
    /// block: they cost one multiplication, an addition per further block and a comparison each
    /// ([`hash::MultiplyShift::first_sampled`]); a request with one goes on from that block
    /// (`Self::add_from`) without hashing again the blocks before it.
    pub fn add_all(&mut self, reqs: &[Request]) {
        if self.cfg.is_exact() {
            for (i, r) in reqs.iter().enumerate() {
                if let Some(ahead) = reqs.get(i + TOUCH_AHEAD) {
                    self.stack.touch(ahead.first);
                }
                self.add_exact(r);
            }
            return;
        }
        if self.cfg.max_samples.is_some() {
            reqs.iter().for_each(|r| self.add(r));
            return;
        }
        let (hasher, bound) = (self.hasher, hash::MultiplyShift::test(self.threshold));
        let filter = self.filter.take().unwrap_or_else(|| RequestFilter::new(hasher, bound));
        let mut seen = 0u64;
        for chunk in reqs.chunks(SCAN_CHUNK) {
            // Mostly one-block requests (a trace of blocks): test those by one comparison, a branch the
            // processor predicts; else test every request by the filter, without a branch on lengths that
            // vary. The same requests are found either way.
            let probe = &chunk[..chunk.len().min(64)];
            seen += if probe.iter().filter(|r| r.len == 1).count() * 8 >= probe.len() * 7 {
                self.add_sampled::<true>(chunk, &filter, bound)
            } else {
                self.add_sampled::<false>(chunk, &filter, bound)
            };
        }
        self.filter = Some(filter);
        self.seen_blocks += seen;
        self.seen_requests += reqs.len() as u64;
    }

    /// Fixed rate: account the requests of `reqs` that hold a sampled block; their blocks. With `ONES`, a
    /// request of one block is tested by one comparison of its hash's sum, any other by `filter`.
    fn add_sampled<const ONES: bool>(&mut self, reqs: &[Request], filter: &RequestFilter, bound: u64) -> u64 {
        let hasher = self.hasher;
        let mut seen = 0u64;
        for r in reqs {
            seen += u64::from(r.len);
            let may = if ONES && r.len == 1 { hasher.sum(r.first) <= bound } else { filter.may_sample(r.first, r.len) };
            if may {
                if let Some(first) = hasher.first_sampled(r.first, r.len, bound) {
                    self.add_from(r, first);
                }
            }
        }
        seen
    }

    /// Account one request: each of its blocks is a reference, in order.
    pub fn add(&mut self, req: &Request) {
        if self.cfg.is_exact() {
            self.add_exact(req);
            return;
        }
        self.seen_blocks += u64::from(req.len);
        self.seen_requests += 1;
        self.add_from(req, req.first);
    }

    /// The sampled blocks of `req` from block `from` on (the blocks before it are not sampled); the
    /// caller counts the request's blocks in `seen_blocks`.
    fn add_from(&mut self, req: &Request, from: u64) {
        let mut any = false;
        let mut cold = false;
        let mut worst = 0u64;
        let mut weight = 1.0;
        // Fixed-size sampling lowers the rate as it goes; a fixed rate is read once.
        let fixed = self.cfg.max_samples.is_none();
        let mut rate = self.rate();
        let end = req.first + u64::from(req.len);
        // The hash's sums step by additions while the low half does not wrap (hash::MultiplyShift).
        let steps = (from & 0xFFFF_FFFF) + (end - from) <= 1 << 32;
        let mut sum = self.hasher.sum(from);
        for block in from..end {
            if block > from {
                sum = if steps { sum.wrapping_add(self.hasher.step()) } else { self.hasher.sum(block) };
            }
            let h = sum & !0xFFFF_FFFF;
            if h > self.threshold {
                continue;
            }
            if !fixed {
                rate = self.rate();
            }
            let w = 1.0 / rate;
            any = true;
            weight = w;
            self.sampled_blocks += 1;
            self.hist.total_blocks += w;
            match self.stack.access(block) {
                None => {
                    cold = true;
                    self.hist.cold_blocks += w;
                    if !fixed {
                        self.by_hash.push((h, block));
                        self.shrink();
                    }
                }
                Some(d) if fixed => {
                    worst = worst.max(d);
                    count(&mut self.by_sampled.0, d);
                }
                Some(d) => {
                    let scaled = scaled_distance(d, rate);
                    worst = worst.max(scaled as u64);
                    DistanceHistogram::bump(&mut self.hist.blocks, scaled, w);
                }
            }
        }
        if any {
            self.hist.total_requests += weight;
            if cold {
                self.hist.cold_requests += weight;
            } else if fixed {
                count(&mut self.by_sampled.1, worst);
            } else {
                DistanceHistogram::bump(&mut self.hist.requests, worst as usize, weight);
            }
        }
    }

    /// [`Self::add`] without sampling: every block is a reference of weight 1 (the same sums as the
    /// sampled path at rate 1, without its hashing and per-block rate).
    fn add_exact(&mut self, req: &Request) {
        let n = u64::from(req.len);
        self.seen_requests += 1;
        if n == 0 {
            return;
        }
        self.seen_blocks += n;
        self.sampled_blocks += n;
        let counts = &mut self.exact;
        counts.total_blocks += n;
        counts.total_requests += 1;
        if n == 1 {
            match self.stack.access(req.first) {
                None => {
                    counts.cold_blocks += 1;
                    counts.cold_requests += 1;
                }
                Some(d) => counts.single(d as usize),
            }
            return;
        }
        let mut cold = false;
        let mut worst = 0usize;
        self.stack.access_run(req.blocks(), |dist| match dist {
            None => {
                cold = true;
                counts.cold_blocks += 1;
            }
            Some(d) => {
                let d = d as usize;
                worst = worst.max(d);
                counts.block(d);
            }
        });
        if cold {
            counts.cold_requests += 1;
        } else {
            counts.request(worst);
        }
    }

    /// Fixed-size: drop the blocks of largest hash until at most `max_samples` are tracked. The threshold
    /// falls below the hash dropped, so every block of that hash leaves with it (32-bit hashes can tie).
    fn shrink(&mut self) {
        let Some(max) = self.cfg.max_samples else { return };
        while self.stack.tracked() as u64 > max {
            let Some((h, block)) = self.by_hash.pop() else { break };
            self.threshold = h.saturating_sub(1);
            self.stack.forget(block);
            while let Some(&(h, block)) = self.by_hash.peek() {
                if h <= self.threshold {
                    break;
                }
                self.by_hash.pop();
                self.stack.forget(block);
            }
        }
    }

    /// The histogram (with the SHARDS_adj correction when asked and sampling at a fixed rate), with the
    /// requests and block references read.
    #[must_use]
    pub fn finish(self) -> DistanceHistogram {
        let (read_requests, read_blocks, sampled_blocks) = (self.seen_requests, self.seen_blocks, self.sampled_blocks);
        DistanceHistogram { read_requests, read_blocks, sampled_blocks, ..self.weighted() }
    }

    /// The weighted counts of [`Self::finish`].
    fn weighted(mut self) -> DistanceHistogram {
        if self.cfg.is_exact() {
            return self.exact.into_histogram();
        }
        if self.cfg.max_samples.is_none() && !self.cfg.is_exact() {
            // Fixed rate: the histogram stays indexed by the sampled distances, scaled when read.
            let w = 1.0 / self.rate();
            let (blocks, requests) = std::mem::take(&mut self.by_sampled);
            self.hist.blocks = blocks.into_iter().map(|n| n as f64 * w).collect();
            self.hist.requests = requests.into_iter().map(|n| n as f64 * w).collect();
            self.hist.scale = Some(self.rate());
        }
        if self.cfg.adjust && !self.cfg.is_exact() && self.cfg.max_samples.is_none() {
            let diff = self.seen_blocks as f64 - self.hist.total_blocks;
            DistanceHistogram::bump(&mut self.hist.blocks, 1, diff);
            self.hist.total_blocks = self.seen_blocks as f64;
            // When every request is one block the request curve is the block curve, and needs the same
            // correction: without it the two were 0.12 apart (w106, 1%, 1,000 blocks; request MAE 0.044
            // against 0.002). Not otherwise: a request of k blocks is seen with probability about k times
            // the rate but weighed 1/rate, so its count is biased, not noisy, and correcting it to the true
            // count made the request curve worse (P6: MAE 0.031 -> 0.207).
            if self.seen_requests == self.seen_blocks {
                let diff = self.seen_requests as f64 - self.hist.total_requests;
                DistanceHistogram::bump(&mut self.hist.requests, 1, diff);
                self.hist.total_requests = self.seen_requests as f64;
            }
        }
        self.hist
    }
}
