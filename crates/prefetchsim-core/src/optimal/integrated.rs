//! Integrated prefetching and caching on one disk: the Aggressive and Conservative strategies of P. Cao,
//! E. W. Felten, A. R. Karlin and K. Li, "A Study of Integrated Prefetching and Caching Strategies",
//! SIGMETRICS 1995. Both know the whole request sequence in advance.
//!
//! The model (theirs): a cache of `k` blocks; the processor serves the requests in order, each in one
//! time unit, and only from a block in the cache; the one disk fetches one block at a time, in `F` units
//! (`F` ≥ 1). Starting a fetch evicts a cached block (or takes a free slot) at once: the slot belongs to
//! the incoming block from then on. A request whose block is not there waits ("stalls") for it. The
//! elapsed time is the number of requests plus the stall time; every time here is an integer, and a
//! fetch may start at any integer time the disk is idle (before the request served at that time).
//!
//! - **Aggressive**: whenever the disk is idle, fetch the first block of the future sequence that is
//!   missing, evicting the cached block whose next reference is furthest away, provided that reference
//!   comes after the fetched block's (else wait: "do no harm"). Cao et al. prove its elapsed time is
//!   within min(1 + F/k, 2) times the optimum.
//! - **Conservative**: make exactly the replacements of Belady's MIN (so as few fetches as possible),
//!   in MIN's order, each started at the first idle-disk moment after the evicted block's last
//!   reference before the fetched block's reference. Within 2 times the optimum.
//!
//! The optimum itself (computable by the linear program of Albers, Garg and Leonardi, JACM 2000) is not
//! implemented here; [`super::brute`] finds it by search on tiny instances (the tests' oracle).
//!
//! Ties: among blocks never referenced again, MIN (and so Conservative) evicts the one whose last
//! reference is earliest, which lets Conservative's fetch start soonest; Aggressive takes the largest
//! block number (its choice among them cannot change its timing).

use std::collections::BTreeSet;

use crate::policy::table::block_map;

/// No further reference.
const NEVER: usize = usize::MAX;

/// The single-disk model: cache size and fetch time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskModel {
    /// Cache size in blocks (at least 1).
    pub cache: usize,
    /// Time of one fetch, in units of one request's service (at least 1).
    pub fetch_time: u64,
}

impl DiskModel {
    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.cache == 0 {
            return Err("the cache must hold at least 1 block".into());
        }
        if self.fetch_time == 0 {
            return Err("the fetch time F must be at least 1 (one request's service time)".into());
        }
        Ok(())
    }
}

/// What a strategy reaches on a sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Schedule {
    /// Requests served (block accesses).
    pub requests: u64,
    /// Time until the last request is served.
    pub elapsed: u64,
    /// Time the processor waited for the disk: `elapsed - requests`.
    pub stall: u64,
    /// Blocks fetched.
    pub fetches: u64,
}

impl Schedule {
    fn new(requests: usize, elapsed: u64, fetches: u64) -> Self {
        let requests = requests as u64;
        Self { requests, elapsed, stall: elapsed - requests, fetches }
    }
}

/// For every position, the position of the next reference of the same block (`NEVER` for none).
#[must_use]
pub fn next_references(blocks: &[u64]) -> Vec<usize> {
    let mut next = vec![NEVER; blocks.len()];
    let mut seen = block_map::<usize>(0);
    for (t, &b) in blocks.iter().enumerate().rev() {
        if let Some(p) = seen.insert(b, t) {
            next[t] = p;
        }
    }
    next
}

/// One replacement of Belady's MIN: at `pos`, fetch its block, evicting `victim` (none: a free slot)
/// whose last reference before `pos` was at `victim_last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// Position of the missing reference.
    pub pos: usize,
    /// The evicted block, if the cache was full.
    pub victim: Option<u64>,
    /// The victim's last reference before `pos`.
    pub victim_last: usize,
}

/// Belady's MIN on `blocks` with a cache of `k` blocks (demand paging): its replacements, in order. Their
/// number is the fewest misses any replacement policy can have.
#[must_use]
pub fn min_replacements(blocks: &[u64], k: usize) -> Vec<Replacement> {
    let next = next_references(blocks);
    // Cached blocks ordered by (next reference, tie: NEVER blocks by earliest last reference, block).
    let mut order: BTreeSet<(usize, usize, u64)> = BTreeSet::new();
    // Sized by what can be cached, at most every reference's block: a cache of 2^32 blocks allocated
    // 146 GB up front and aborted the process on a trace of 6,781 requests.
    let room = k.min(blocks.len());
    let mut cached = block_map::<(usize, usize)>(room); // block -> (key, tie)
    let mut last = block_map::<usize>(room);
    let mut out = Vec::new();
    for (t, &b) in blocks.iter().enumerate() {
        let tie = |l: usize| usize::MAX - l;
        if let Some((key, tb)) = cached.remove(&b) {
            order.remove(&(key, tb, b));
        } else {
            let mut rep = Replacement { pos: t, victim: None, victim_last: 0 };
            if k > 0 && cached.len() >= k {
                if let Some((_, _, v)) = order.pop_last() {
                    cached.remove(&v);
                    rep.victim = Some(v);
                    rep.victim_last = last.get(&v).copied().unwrap_or(0);
                }
            }
            out.push(rep);
        }
        last.insert(b, t);
        if k > 0 {
            let key = (next[t], if next[t] == NEVER { tie(t) } else { 0 });
            cached.insert(b, key);
            order.insert((key.0, key.1, b));
        }
    }
    out
}

/// Elapsed time of demand fetching with `misses` misses: each miss stalls a whole fetch.
#[must_use]
pub fn demand(requests: usize, misses: u64, model: DiskModel) -> Schedule {
    Schedule::new(requests, requests as u64 + misses * model.fetch_time, misses)
}

/// Cao et al.'s Aggressive strategy on `blocks`.
pub fn aggressive(blocks: &[u64], model: DiskModel) -> Result<Schedule, String> {
    model.validate()?;
    let n = blocks.len();
    let next = next_references(blocks);
    let f = model.fetch_time;
    // Cached (ready) blocks: block -> next reference; ordered by (next reference, block).
    let mut cached = block_map::<usize>(model.cache.min(n)); // at most every reference's block (see MIN)
    let mut order: BTreeSet<(usize, u64)> = BTreeSet::new();
    // The block in flight: (block, arrival time, the position it is fetched for).
    let mut inflight: Option<(u64, u64, usize)> = None;
    let (mut t, mut i, mut m, mut fetches) = (0u64, 0usize, 0usize, 0u64);
    while i < n {
        if let Some((b, done, p)) = inflight {
            if done <= t {
                cached.insert(b, p);
                order.insert((p, b));
                inflight = None;
            }
        }
        if inflight.is_none() {
            // The first missing reference from the cursor on. It never moves back: a block is evicted
            // only for a fetch whose reference comes before the evicted block's next one.
            m = m.max(i);
            while m < n && cached.contains_key(&blocks[m]) {
                m += 1;
            }
            if m < n {
                let b = blocks[m];
                let room = if cached.len() < model.cache {
                    true
                } else {
                    match order.last().copied() {
                        Some((key, v)) if key > m => {
                            order.pop_last();
                            cached.remove(&v);
                            true
                        }
                        _ => false,
                    }
                };
                if room {
                    inflight = Some((b, t + f, m));
                    fetches += 1;
                    m += 1;
                }
            }
        }
        let b = blocks[i];
        if let Some(key) = cached.get_mut(&b) {
            order.remove(&(*key, b));
            *key = next[i];
            order.insert((next[i], b));
            t += 1;
            i += 1;
        } else if let Some((_, done, _)) = inflight {
            t = done.max(t + 1);
        } else {
            return Err(format!("internal: request {i} (block {b}) is missing and nothing is being fetched"));
        }
    }
    Ok(Schedule::new(n, t, fetches))
}

/// Cao et al.'s Conservative strategy on `blocks`.
pub fn conservative(blocks: &[u64], model: DiskModel) -> Result<Schedule, String> {
    model.validate()?;
    let n = blocks.len();
    let reps = min_replacements(blocks, model.cache);
    let f = model.fetch_time;
    // The replacement (if any) whose fetch serves each position.
    let mut fetch_at = vec![usize::MAX; n];
    for (j, r) in reps.iter().enumerate() {
        fetch_at[r.pos] = j;
    }
    // A fetch may start once the cursor is past the victim's last reference before the fetched one.
    let earliest = |r: &Replacement| if r.victim.is_some() { r.victim_last + 1 } else { 0 };
    let mut arrival = vec![0u64; reps.len()];
    let (mut t, mut i, mut j, mut disk_free) = (0u64, 0usize, 0usize, 0u64);
    while i < n {
        if j < reps.len() && disk_free <= t && earliest(&reps[j]) <= i {
            arrival[j] = t + f;
            disk_free = t + f;
            j += 1;
        }
        let q = fetch_at[i];
        if q != usize::MAX {
            if q >= j {
                // Its fetch has not started: its victim's last reference is behind the cursor, so only the
                // disk holds it back.
                t = disk_free.max(t + 1);
                continue;
            }
            if arrival[q] > t {
                t = arrival[q];
                continue;
            }
        }
        t += 1;
        i += 1;
    }
    Ok(Schedule::new(n, t, reps.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequential_scan_overlaps_fetches_with_service() {
        // 8 distinct blocks, cache 4, F = 2: the first fetch stalls 2; then a fetch every 2 units while
        // each request takes 1, so the processor waits 1 per request after the first.
        let blocks: Vec<u64> = (0..8).collect();
        let m = DiskModel { cache: 4, fetch_time: 2 };
        let a = aggressive(&blocks, m).unwrap();
        assert_eq!(a.fetches, 8);
        assert_eq!(a.elapsed, 2 + 8 * 2 - 1, "{a:?}");
        let c = conservative(&blocks, m).unwrap();
        assert_eq!(c, a, "cold misses: both fetch back to back");
        assert_eq!(demand(8, 8, m).elapsed, 8 + 16);
    }

    #[test]
    fn a_replacement_is_fetched_right_after_the_victims_last_reference() {
        // 1 2 1 3 1, cache 2, F = 2. MIN evicts 2 (never used again, last referenced at position 1) for 3.
        // Conservative starts that fetch at time 5, as soon as 2 has been served, not when 3 is
        // requested (time 6): the fetch arrives at 7, and the run ends at 9 instead of 10 (demand: 11).
        let blocks = [1, 2, 1, 3, 1];
        let m = DiskModel { cache: 2, fetch_time: 2 };
        let c = conservative(&blocks, m).unwrap();
        assert_eq!((c.elapsed, c.stall, c.fetches), (9, 4, 3));
        let a = aggressive(&blocks, m).unwrap();
        assert_eq!((a.elapsed, a.fetches), (9, 3), "aggressive evicts 2 right after its use as well");
        assert_eq!(demand(5, 3, m).elapsed, 11);
    }

    #[test]
    fn min_replacements_evict_the_furthest_next_use() {
        let r = min_replacements(&[1, 2, 3, 1, 2, 4, 1, 2, 3], 3);
        let victims: Vec<Option<u64>> = r.iter().map(|r| r.victim).collect();
        // Cold 1, 2, 3; at 4 (position 5), 3 is needed last (position 8): evict it. At the final 3, none of
        // 1, 2, 4 is used again: evict the one referenced longest ago, 4 (position 5; 1 at 6, 2 at 7).
        assert_eq!(victims, vec![None, None, None, Some(3), Some(4)]);
        assert_eq!(r[4].victim_last, 5);
        assert!(aggressive(&[1], DiskModel { cache: 0, fetch_time: 1 }).is_err());
    }
}
