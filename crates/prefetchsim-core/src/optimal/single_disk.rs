//! Any policy and prefetcher in Cao et al.'s single-disk model ([`super::integrated`]), so that its stall
//! time can be set beside Aggressive's and Conservative's: the time analogue of "share of the optimal
//! gain".
//!
//! One cache level decides as in the instant engine (same hits, misses, evictions and prefetches); the
//! model only times it. Each block access is served in one unit; the blocks the level fetches go to one
//! disk, first come first served, `F` units each: a request's missed blocks when the request comes, its
//! prefetches once the request has been served (a prefetch may evict a block the request itself uses, and
//! in Cao et al.'s model a fetch evicts its victim when it starts). A missed block, or a prefetched block
//! hit before its fetch has ended, makes the processor wait until it arrives. Demand fetching with no
//! prefetcher stalls exactly `F` per miss, as in the model, and with one-block requests every replay is a
//! schedule of the model (so never faster than its optimum; tested). Not captured: within a request of
//! several blocks, a missed block may evict another block of the same request before that one is served
//! (the instant engine serves a request as a whole), which can make the replay slightly optimistic.

use super::integrated::{DiskModel, Schedule};
use crate::engine::{Hierarchy, RequestSource, SourceError};
use crate::policy::table::block_map;
use crate::prefetch::Outcome;
use crate::request::Fetch;

/// Replay the first `limit` requests of `src` through the one-level hierarchy `h` (prepared if its policy
/// is `opt`) timed by `model`'s fetch time (its cache size is the level's). Returns the schedule; the
/// level's counters are in `h`.
pub fn single_disk(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    model: DiskModel,
    limit: Option<u64>,
) -> Result<Schedule, SourceError> {
    if h.levels.len() != 1 {
        return Err(crate::component::ConfigError::new("level", "the single-disk model times one cache level").into());
    }
    if model.fetch_time == 0 {
        return Err(crate::component::ConfigError::new("fetch_time", "must be at least 1").into());
    }
    super::check_ready(h)?;
    let f = model.fetch_time;
    // Arrival time of each block's latest fetch.
    let mut ready = block_map::<u64>(1 << 16);
    let (mut t, mut disk, mut requests, mut fetches) = (0u64, 0u64, 0u64, 0u64);
    let mut buf = Vec::with_capacity(8192);
    let mut out: Vec<Fetch> = Vec::new();
    let mut left = limit.unwrap_or(u64::MAX);
    while left > 0 {
        buf.clear();
        if src.fill(&mut buf, usize::try_from(left.min(8192)).unwrap_or(8192))? == 0 {
            break;
        }
        left -= buf.len() as u64;
        for req in &buf {
            out.clear();
            let level = &mut h.levels[0];
            level.access(req, req.len, &mut out);
            for fe in &out {
                for b in fe.first..fe.first + u64::from(fe.demand_len) {
                    disk = disk.max(t) + f;
                    ready.insert(b, disk);
                    fetches += 1;
                }
            }
            // The request's blocks, in order: each waits for its block's fetch if that has not ended.
            for (b, o) in req.blocks().zip(level.last_outcomes()) {
                if *o != Outcome::Hit {
                    if let Some(&at) = ready.get(&b) {
                        t = t.max(at);
                    }
                }
                t += 1;
                requests += 1;
            }
            for fe in &out {
                for b in fe.first + u64::from(fe.demand_len)..fe.first + u64::from(fe.len) {
                    disk = disk.max(t) + f;
                    ready.insert(b, disk);
                    fetches += 1;
                }
            }
        }
    }
    h.levels[0].finish();
    super::finish(h, false)?;
    Ok(Schedule { requests, elapsed: t, stall: t - requests, fetches })
}
