//! Spatial sampling of a request stream for miniature simulation of any policy and prefetcher.
//!
//! Miniature simulation: Waldspurger, Saemundsson, Ahmad & Park, "Cache Modeling and Optimization using
//! Miniature Simulations", USENIX ATC 2017: run the policy on the references to hash-sampled blocks with a
//! cache scaled by the rate R (a cache of `c` blocks becomes `round(c * R)`); the hit ratio of the
//! miniature estimates the full cache's.
//!
//! Sampling a block at a time cuts every sequential run into scattered single blocks, which is what a
//! prefetcher lives on. *Extent* sampling (this project's, no reference has it) hashes the aligned region
//! of `extent_bytes` that holds the block instead: a sampled extent keeps every block and every request
//! part inside it, so runs up to the extent's length survive; a request crossing extents is cut at their
//! boundaries and the parts in unsampled extents are dropped.

use serde::Deserialize;

use super::hash;
use crate::component::ConfigError;
use crate::engine::{RequestSource, SourceError, SourceReport};
use crate::request::Request;

/// What the hash is taken of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleUnit {
    /// Each block on its own (the ATC'17 miniature simulation).
    Block,
    /// The aligned extent of `extent_bytes` holding the block.
    Extent,
}

/// A spatial sample for miniature simulation.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SampleConfig {
    /// Sampling rate in (0, 1].
    pub rate: f64,
    /// Unit hashed.
    pub unit: SampleUnit,
    /// Extent size in bytes (unit `extent`): a multiple of the block size, 64 KiB to 1 MiB in the design.
    pub extent_bytes: u64,
    /// Seed of the sampling hash.
    pub seed: u64,
}

impl Default for SampleConfig {
    fn default() -> Self {
        Self { rate: 0.1, unit: SampleUnit::Extent, extent_bytes: 256 << 10, seed: 0 }
    }
}

impl SampleConfig {
    /// Parse from JSON; unknown or mistyped keys name the field.
    ///
    /// # Errors
    /// A [`ConfigError`] at `sample.FIELD`.
    pub fn from_json(v: serde_json::Value, block_size: u64) -> Result<Self, ConfigError> {
        let c: Self = serde_path_to_error::deserialize(v).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::new(
                if path == "." { "sample".into() } else { format!("sample.{path}") },
                crate::component::plain_message(&e.inner().to_string()),
            )
        })?;
        c.validate(block_size)?;
        Ok(c)
    }

    /// Check the values against the trace's block size.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `sample.rate` or `sample.extent_bytes`.
    pub fn validate(&self, block_size: u64) -> Result<(), ConfigError> {
        if !(self.rate > 0.0 && self.rate <= 1.0) {
            return Err(ConfigError::new("sample.rate", format!("{} is not in (0, 1]", self.rate)));
        }
        if self.unit == SampleUnit::Extent
            && (block_size == 0 || self.extent_bytes < block_size || self.extent_bytes % block_size != 0)
        {
            return Err(ConfigError::new(
                "sample.extent_bytes",
                format!("{} is not a positive multiple of the block size ({block_size} B)", self.extent_bytes),
            ));
        }
        Ok(())
    }

    /// Blocks per sampling unit.
    #[must_use]
    pub fn unit_blocks(&self, block_size: u64) -> u64 {
        match self.unit {
            SampleUnit::Block => 1,
            SampleUnit::Extent => (self.extent_bytes / block_size.max(1)).max(1),
        }
    }

    /// The miniature size of a cache of `blocks` blocks: `round(blocks * rate)`, at least 1.
    #[must_use]
    pub fn scaled_size(&self, blocks: u64) -> u64 {
        ((blocks as f64 * self.rate).round() as u64).max(1)
    }
}

/// The requests of `inner` restricted to the sampled units: each request is cut at unit boundaries,
/// parts in unsampled units are dropped and adjacent sampled parts stay one request.
pub struct SampledSource<S> {
    inner: S,
    unit: u64,
    threshold: u64,
    seed: u64,
    raw: Vec<Request>,
    /// Requests and blocks read from `inner`.
    pub seen_requests: u64,
    /// Blocks read from `inner`.
    pub seen_blocks: u64,
}

impl<S: RequestSource> SampledSource<S> {
    /// Sample `inner` by `cfg` for a trace of `block_size`-byte blocks.
    pub fn new(inner: S, cfg: &SampleConfig, block_size: u64) -> Self {
        Self {
            inner,
            unit: cfg.unit_blocks(block_size),
            threshold: hash::threshold(cfg.rate),
            seed: cfg.seed,
            raw: Vec::new(),
            seen_requests: 0,
            seen_blocks: 0,
        }
    }

    fn sampled(&self, unit: u64) -> bool {
        hash::mix(unit, self.seed) <= self.threshold
    }

    /// Append the sampled parts of `r` to `out`.
    fn split(&self, r: &Request, out: &mut Vec<Request>) {
        let (first, end) = (r.first, r.first + u64::from(r.len));
        let mut start = first;
        let mut open: Option<u64> = None;
        while start < end {
            let unit = start / self.unit;
            let stop = ((unit + 1) * self.unit).min(end);
            if self.sampled(unit) {
                open.get_or_insert(start);
            } else if let Some(s) = open.take() {
                out.push(Request { first: s, len: (start - s) as u32, ..*r });
            }
            start = stop;
        }
        if let Some(s) = open {
            out.push(Request { first: s, len: (end - s) as u32, ..*r });
        }
    }
}

impl<S: RequestSource> RequestSource for SampledSource<S> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let before = buf.len();
        // A request yields at most one part per sampled unit it spans, so ask for a bounded number.
        while buf.len() == before {
            self.raw.clear();
            if self.inner.fill(&mut self.raw, max.max(1))? == 0 {
                break;
            }
            let raw = std::mem::take(&mut self.raw);
            for r in &raw {
                self.seen_requests += 1;
                self.seen_blocks += u64::from(r.len);
                self.split(r, buf);
            }
            self.raw = raw;
        }
        Ok(buf.len() - before)
    }

    fn report(&self) -> SourceReport {
        self.inner.report()
    }

    fn facts(&self) -> crate::TraceFacts {
        self.inner.facts()
    }
}
