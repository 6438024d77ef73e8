//! Miss-ratio curves and sampled (miniature) simulation.
//!
//! - [`stack`]: exact LRU stack distances in one pass (a bit set of last-access times with counts of its
//!   words in three levels, [`marks`], [`levels`]; times by block in a flat array or chunks, [`times`]).
//! - [`shards`]: the exact curve and SHARDS fixed-rate / fixed-size estimates (Waldspurger et al., FAST'15),
//!   giving a [`curve::DistanceHistogram`] and its block (= byte) and request miss-ratio curves.
//! - [`lru_family`], [`fifo_family`], [`clock_family`], [`family`]: every size of a plain LRU level in one
//!   stack pass, and of a plain FIFO or CLOCK level in one pass of rings (one per size) sharing each
//!   block's entry, giving the records separate engine runs give (a batch's configs that differ only in
//!   size).
//! - [`sample`]: spatial sampling of a request stream by block (miniature simulation, Waldspurger et al.,
//!   ATC'17) or by extent (prefetch-aware), to run any policy and prefetcher on a scaled cache.

pub mod clock_family;
pub mod curve;
pub mod exact_counts;
pub mod family;
pub mod fifo_family;
pub mod hash;
pub mod levels;
pub mod lru_family;
pub mod marks;
pub mod request_filter;
mod ring;
pub mod sample;
pub mod shards;
mod size_counts;
pub mod stack;
pub mod times;

pub use curve::{CurvePoint, DistanceHistogram, MissRatioCurve};
pub use sample::{SampleConfig, SampleUnit, SampledSource};
pub use shards::{MrcBuilder, ShardsConfig};

use crate::component::ConfigError;
use crate::engine::{RequestSource, SourceError};
use crate::request::Request;

/// Build the histogram of requests already in memory under `cfg` (no copy of them).
///
/// # Errors
/// The config's own errors.
pub fn histogram_of(reqs: &[Request], cfg: ShardsConfig) -> Result<(DistanceHistogram, f64), ConfigError> {
    let mut b = MrcBuilder::new(cfg)?;
    b.add_all(reqs);
    let rate = b.rate();
    Ok((b.finish(), rate))
}

/// Build the histogram of `src` under `cfg` in one pass; `tick(requests)` is called every 64 Ki requests
/// and stops the pass (with an error) when it returns false.
///
/// # Errors
/// The source's errors, or "interrupted".
pub fn histogram(
    src: &mut dyn RequestSource,
    cfg: ShardsConfig,
    tick: &mut dyn FnMut(u64) -> bool,
) -> Result<(DistanceHistogram, f64), SourceError> {
    let mut b = MrcBuilder::new(cfg)?;
    let mut buf = Vec::with_capacity(8192);
    let mut n = 0u64;
    loop {
        buf.clear();
        if src.fill(&mut buf, 8192)? == 0 {
            break;
        }
        b.add_all(&buf);
        n += buf.len() as u64;
        if n % 65536 < buf.len() as u64 && !tick(n) {
            return Err("interrupted".into());
        }
    }
    let rate = b.rate();
    Ok((b.finish(), rate))
}
