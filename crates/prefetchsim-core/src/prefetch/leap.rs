//! Leap: majority-trend delta prefetching (H. Al Maruf and M. Chowdhury, "Effectively Prefetching Remote
//! Memory with Leap", USENIX ATC 2020, §4: trend detection and the prefetch window). Our own code from
//! the paper's description.
//!
//! **Trend.** Leap keeps the deltas between consecutive accessed blocks in a history of `history`
//! entries (a ring). The trend is a delta that is a strict majority (more than half, found with the
//! Boyer-Moore vote and checked by counting) of the most recent `history / splits` deltas; when that
//! window has none, the window doubles, until the whole history has been looked at: then there is no
//! trend. A small first window follows a new trend quickly, the larger ones see a trend through noise.
//! While the history fills up, a window's missing deltas count against every value \[ours\]: a trend
//! needs more than half of the first window (5 of 8 deltas by default), not one lucky delta.
//!
//! **Window.** At each fault (a request with a missed demand block), with `h` the prefetched blocks that
//! were used since the previous fault: `h = 0` gives 1 when the access follows the current trend (its
//! delta is the trend: a trend may be starting) and 0 otherwise (prefetching suspended); `h > 0` gives
//! the power of two at or above `h + 1`. The result is capped at `max_window` and never falls below half
//! of the previous window, so it grows fast on success and shrinks smoothly.
//!
//! **Prefetch.** A window `w > 0` prefetches `w` blocks along the trend from the faulting block `p`
//! (`p + Δ`, `p + 2Δ`, …), or, without a trend, `w` blocks around it (`p + 1`, `p - 1`, `p + 2`, …).
//!
//! Simulator choices \[ours\]: the accesses are the request's demand blocks, block by block (a request of
//! `n` blocks from `b` adds the delta from the previous block to `b`, then `n - 1` deltas of 1); the
//! faulting block `p` is the request's last demand block; "prefetched blocks used" are first demand hits
//! of prefetched blocks ([`Outcome::PrefetchHit`]); a block still in flight is neither a fault nor a use.
//! Defaults \[ours\]: a history of 32 deltas, first window of a quarter of it (`splits = 4`), at most 8
//! blocks per prefetch (Linux's default swap read-ahead of 8 pages, the paper's point of comparison).

use serde::{Deserialize, Serialize};

use super::{MakePrefetcher, NamedPrefetcher, Outcome, PrefetchCtx, Prefetcher};
use crate::component::ConfigError;

/// Leap's parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeapParams {
    /// Deltas kept (default 32).
    pub history: u32,
    /// The first detection window is `history / splits` deltas (default 4).
    pub splits: u32,
    /// Most blocks one prefetch reads (default 8).
    pub max_window: u32,
}

impl Default for LeapParams {
    fn default() -> Self {
        Self { history: 32, splits: 4, max_window: 8 }
    }
}

impl LeapParams {
    /// The longest history and the largest window accepted (each is allocated or issued per fault).
    pub const MAX: u32 = 1 << 16;

    /// Check the parameters (`path` is the prefetcher's key path).
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        for (key, v) in [("history", self.history), ("max_window", self.max_window)] {
            if v == 0 || v > Self::MAX {
                return Err(ConfigError::new(format!("{path}.{key}"), format!("{v}: must be 1 to {}", Self::MAX)));
            }
        }
        if self.splits == 0 || self.splits > self.history {
            return Err(ConfigError::new(
                format!("{path}.splits"),
                format!("{}: must be 1 to history ({})", self.splits, self.history),
            ));
        }
        Ok(())
    }
}

/// The last deltas, most recent first on reading.
#[derive(Clone, Debug)]
struct History {
    ring: Vec<i64>,
    /// Where the next delta goes.
    head: usize,
    len: usize,
}

impl History {
    fn new(size: usize) -> Self {
        Self { ring: vec![0; size.max(1)], head: 0, len: 0 }
    }

    fn push(&mut self, delta: i64) {
        self.ring[self.head] = delta;
        self.head = (self.head + 1) % self.ring.len();
        self.len = (self.len + 1).min(self.ring.len());
    }

    /// The `n` most recent deltas (at most the ones kept), most recent first.
    fn recent(&self, n: usize) -> impl Iterator<Item = i64> + Clone + '_ {
        let size = self.ring.len();
        (1..=n.min(self.len)).map(move |k| self.ring[(self.head + size - k) % size])
    }

    /// The trend: the strict majority of the most recent `size / splits` deltas, the window doubling
    /// until one is found or the whole history has been looked at.
    fn trend(&self, splits: usize) -> Option<i64> {
        let size = self.ring.len();
        let mut w = (size / splits.max(1)).max(1);
        loop {
            if let Some(d) = majority(self.recent(w), w) {
                return Some(d);
            }
            if w >= size || w >= self.len {
                return None;
            }
            w = (w * 2).min(size);
        }
    }
}

/// The value of `xs` that fills more than half of a window of `w` deltas (Boyer-Moore vote, then a count
/// to confirm); `xs` holds the window's known deltas (fewer than `w` while the history fills up: the
/// missing ones count against every value). `None` when no value does.
fn majority(xs: impl Iterator<Item = i64> + Clone, w: usize) -> Option<i64> {
    let (mut candidate, mut votes) = (0i64, 0u32);
    for x in xs.clone() {
        if votes == 0 {
            candidate = x;
            votes = 1;
        } else if x == candidate {
            votes += 1;
        } else {
            votes -= 1;
        }
    }
    let (mut n, mut count) = (0usize, 0usize);
    for x in xs {
        n += 1;
        count += usize::from(x == candidate);
    }
    (n > 0 && count * 2 > n.max(w)).then_some(candidate)
}

/// The prefetch window: its size at a fault from the uses since the previous fault.
#[derive(Clone, Copy, Debug)]
struct Window {
    prev: u32,
    max: u32,
}

impl Window {
    /// The window at a fault after `used` prefetched blocks were used since the previous one; `follows`:
    /// the faulting access continues the current trend.
    fn next(&mut self, used: u32, follows: bool) -> u32 {
        let w = match used {
            0 => u32::from(follows),
            h => h.saturating_add(1).checked_next_power_of_two().unwrap_or(u32::MAX),
        };
        let w = w.min(self.max).max(self.prev / 2);
        self.prev = w;
        w
    }
}

/// Leap.
#[derive(Clone, Debug)]
pub struct Leap {
    params: LeapParams,
    history: History,
    window: Window,
    /// The previous demand block.
    last: Option<u64>,
    /// Prefetched blocks used since the previous fault.
    used: u32,
}

impl Leap {
    /// A Leap prefetcher (parameters checked by [`LeapParams::validate`]).
    #[must_use]
    pub fn new(params: LeapParams) -> Self {
        Self {
            history: History::new(params.history as usize),
            window: Window { prev: 0, max: params.max_window },
            params,
            last: None,
            used: 0,
        }
    }

    /// Record one demand block; returns its delta from the previous one.
    fn access(&mut self, block: u64) -> Option<i64> {
        let delta = self.last.map(|l| block.wrapping_sub(l) as i64);
        if let Some(d) = delta {
            self.history.push(d);
        }
        self.last = Some(block);
        delta
    }

    /// `targets` as runs `(first, len)` of consecutive ascending blocks (a trend of +1 is one run), so that
    /// the level places a run as it places any prefetcher's: its first block at MRU and the farthest
    /// nearest the eviction end. Blocks already resident stay in the runs: the level skips them, and
    /// reads again one that the same access evicted to make room (algorithms.md, "Where prefetched
    /// blocks go").
    fn runs(targets: &[u64]) -> Vec<(u64, u32)> {
        let mut runs: Vec<(u64, u32)> = Vec::new();
        for &b in targets {
            match runs.last_mut() {
                Some((first, len)) if first.checked_add(u64::from(*len)) == Some(b) && *len < u32::MAX => *len += 1,
                _ => runs.push((b, 1)),
            }
        }
        runs
    }

    /// The blocks of a window of `w` from `p`: along `trend`, or around `p` without one.
    fn targets(p: u64, w: u32, trend: Option<i64>) -> Vec<u64> {
        let at = |k: i128| u64::try_from(i128::from(p) + k).ok();
        match trend {
            Some(d) => (1..=i128::from(w)).map_while(|k| at(k * i128::from(d))).collect(),
            None => (1..=i128::from(w)).flat_map(|k| [k, -k]).filter_map(at).take(w as usize).collect(),
        }
    }
}

impl Prefetcher for Leap {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let n = (ctx.demand_len as usize).min(ctx.outcomes.len());
        if n == 0 {
            return;
        }
        let mut fault = false;
        let mut delta = None;
        for (i, o) in ctx.outcomes[..n].iter().enumerate() {
            self.used += u32::from(*o == Outcome::PrefetchHit);
            fault |= *o == Outcome::Miss;
            delta = self.access(ctx.req.first + i as u64);
        }
        if !fault {
            return;
        }
        let trend = self.history.trend(self.params.splits as usize);
        let follows = delta.is_some() && delta == trend;
        let w = self.window.next(std::mem::take(&mut self.used), follows);
        if w == 0 {
            return;
        }
        let p = ctx.req.first + n as u64 - 1;
        for (first, len) in Self::runs(&Self::targets(p, w, trend)) {
            ctx.prefetch(first, len);
        }
    }

    fn metadata_bytes(&self) -> u64 {
        (self.history.ring.len() * std::mem::size_of::<i64>()) as u64
    }
}

impl NamedPrefetcher for Leap {
    const NAME: &'static str = "leap";
    const SUMMARY: &'static str =
        "Leap, majority-trend delta prefetching with an adaptive window (Al Maruf & Chowdhury, USENIX ATC'20)";
    type Params = LeapParams;

    fn build(path: &str, params: LeapParams, _make: MakePrefetcher<'_>) -> Result<Box<dyn Prefetcher>, ConfigError> {
        params.validate(path)?;
        Ok(Box::new(Leap::new(params)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(deltas: &[i64], size: usize) -> History {
        let mut h = History::new(size);
        for &d in deltas {
            h.push(d);
        }
        h
    }

    #[test]
    fn majority_needs_more_than_half() {
        assert_eq!(majority([1, 1, 2].into_iter(), 3), Some(1));
        assert_eq!(majority([1, 2, 1, 2].into_iter(), 4), None, "a tie is no majority");
        assert_eq!(majority([3, -3, 3, 5, 3].into_iter(), 5), Some(3));
        assert_eq!(majority(std::iter::empty(), 8), None);
        // The vote's survivor (7) is checked by counting: 7 is 2 of 5.
        assert_eq!(majority([1, 2, 3, 7, 7].into_iter(), 5), None);
        // A window of 8 with 4 deltas known: 4 of 8 is not more than half, 5 of 8 is.
        assert_eq!(majority([1; 4].into_iter(), 8), None);
        assert_eq!(majority([1; 5].into_iter(), 8), Some(1));
    }

    #[test]
    fn stride_one_and_stride_k_are_trends() {
        assert_eq!(history(&[1; 32], 32).trend(4), Some(1));
        assert_eq!(history(&[8; 10], 32).trend(4), Some(8), "a history not yet full");
        assert_eq!(history(&[-3; 32], 32).trend(4), Some(-3), "backwards");
    }

    #[test]
    fn a_trend_is_seen_through_noise_by_growing_the_window() {
        // Oldest first: 16 deltas of 4, then noise in the most recent 8 (4 of 8 is not a majority of the
        // first window): the window doubles to 16, where 4 is 12 of 16.
        let mut d = vec![4; 16];
        d.extend([4, 900, 4, -77, 4, 13, 4, 5]);
        let h = history(&d, 32);
        assert_eq!(majority(h.recent(8), 8), None);
        assert_eq!(h.trend(4), Some(4));
    }

    #[test]
    fn a_new_trend_wins_the_small_window_first() {
        // 24 deltas of 1, then 6 of 2: the most recent 8 hold six 2s.
        let mut d = vec![1; 24];
        d.extend([2; 6]);
        assert_eq!(history(&d, 32).trend(4), Some(2));
    }

    #[test]
    fn no_majority_anywhere_is_no_trend() {
        let d: Vec<i64> = (0..32).map(|i| i * 37 % 11 - 5).collect();
        assert_eq!(history(&d, 32).trend(4), None);
        assert_eq!(history(&[], 32).trend(4), None);
    }

    #[test]
    fn the_window_grows_by_powers_of_two_and_shrinks_by_halves() {
        let mut w = Window { prev: 0, max: 8 };
        assert_eq!(w.next(0, false), 0, "no use, no trend: suspended");
        assert_eq!(w.next(0, true), 1, "no use but on the trend: one block");
        assert_eq!(w.next(1, true), 2);
        assert_eq!(w.next(2, true), 4);
        assert_eq!(w.next(4, true), 8);
        assert_eq!(w.next(8, true), 8, "capped");
        assert_eq!(w.next(0, false), 4, "shrinks by half at most");
        assert_eq!(w.next(0, false), 2);
        assert_eq!(w.next(0, false), 1);
        assert_eq!(w.next(0, false), 0);
        assert_eq!(w.next(2, false), 4, "uses count whatever the trend");
    }

    #[test]
    fn consecutive_ascending_targets_are_one_run() {
        assert_eq!(Leap::runs(&Leap::targets(100, 3, Some(1))), vec![(101, 3)]);
        assert_eq!(Leap::runs(&Leap::targets(100, 3, Some(-1))), vec![(99, 1), (98, 1), (97, 1)]);
        assert_eq!(Leap::runs(&Leap::targets(100, 2, Some(7))), vec![(107, 1), (114, 1)]);
        assert_eq!(Leap::runs(&Leap::targets(100, 4, None)), vec![(101, 1), (99, 1), (102, 1), (98, 1)]);
        assert_eq!(Leap::runs(&[]), vec![]);
    }

    /// A level of `capacity` LRU blocks with Leap (defaults) after one-block reads of `blocks`, each
    /// request of `(first, len)`; and the prefetches the last request issued.
    fn level_after(capacity: usize, reqs: &[(u64, u32)]) -> (crate::level::Level<crate::policy::lru::Lru>, u64) {
        use crate::level::{CacheLevel, Level, LevelOptions};
        use crate::policy::{lru::Lru, FirstHit, PolicyEnv};
        let env = PolicyEnv { capacity, first_hit: FirstHit::Promote };
        let mut l =
            Level::new(capacity, Lru::new(&env), Box::new(Leap::new(LeapParams::default())), LevelOptions::default());
        let (mut out, mut before) = (Vec::new(), 0);
        for &(b, n) in reqs {
            out.clear();
            before = l.counters().prefetch_issued;
            l.access(&crate::request::Request::read(b, n), n, &mut out);
        }
        let issued = l.counters().prefetch_issued - before;
        (l, issued)
    }

    /// A +1 trend's window is one run: its nearest block at MRU above the faulting block, the farthest
    /// nearest the eviction end (algorithms.md). Block by block, the farthest ended at MRU.
    #[test]
    fn a_window_along_a_plus_one_trend_enters_lru_as_one_run() {
        // The first scan end past 120 whose last access faults with a window of several blocks.
        let (l, issued) = (120..160)
            .map(|end| level_after(256, &(100..=end).map(|b| (b, 1)).collect::<Vec<_>>()))
            .find(|(_, issued)| *issued >= 4)
            .expect("a scan faults with a window of 8 about once per 9 accesses");
        let q = l.policy().queue(l.table());
        let run = &q[..issued as usize];
        assert!(run.windows(2).all(|w| w[1] == w[0] + 1), "MRU first: {:?}", &q[..issued as usize + 1]);
        assert_eq!(q[issued as usize] + 1, run[0], "the faulting block just below its run: {q:?}");
    }

    /// A block the window names that the same access evicts to make room for its demand block is read
    /// again, as for every prefetcher (algorithms.md): the outside model's case (study of 2026-12-07, D3).
    #[test]
    fn a_named_block_the_access_evicted_is_read_again() {
        let reqs = [
            (1632, 2),
            (1642, 2),
            (1644, 1),
            (1645, 1),
            (1646, 1),
            (1647, 1),
            (1649, 1),
            (1650, 2),
            (1652, 2),
            (2204, 1),
            (1646, 1),
        ];
        let (l, issued) = level_after(13, &reqs);
        assert!(issued >= 1 && l.table().contains(1647), "1647 was evicted by 1646's insertion: {issued}");
    }

    #[test]
    fn targets_follow_the_trend_or_surround_the_fault() {
        assert_eq!(Leap::targets(100, 3, Some(1)), vec![101, 102, 103]);
        assert_eq!(Leap::targets(100, 3, Some(-10)), vec![90, 80, 70]);
        assert_eq!(Leap::targets(5, 4, Some(-2)), vec![3, 1], "stops below block 0");
        assert_eq!(Leap::targets(100, 4, None), vec![101, 99, 102, 98]);
        assert_eq!(Leap::targets(0, 3, None), vec![1, 2, 3]);
    }

    /// Misses, prefetches issued and used of `blocks` (one-block reads) on an LRU level of 256 blocks.
    fn replay(blocks: impl Iterator<Item = u64>) -> (u64, u64, u64) {
        use crate::level::{CacheLevel, Level, LevelOptions};
        use crate::policy::{lru::Lru, FirstHit, PolicyEnv};
        let env = PolicyEnv { capacity: 256, first_hit: FirstHit::Promote };
        let mut l =
            Level::new(256, Lru::new(&env), Box::new(Leap::new(LeapParams::default())), LevelOptions::default());
        let mut out = Vec::new();
        for b in blocks {
            out.clear();
            l.access(&crate::request::Request::read(b, 1), 1, &mut out);
        }
        let c = l.counters();
        (c.misses, c.prefetch_issued, c.prefetch_used)
    }

    #[test]
    fn scans_of_stride_one_and_stride_k_miss_about_once_per_full_window() {
        for stride in [1u64, 7, 1000] {
            let (misses, issued, used) = replay((0..2000).map(|i| 10_000 + i * stride));
            // The window reaches 8 after 4 faults: then one fault per 9 accesses.
            assert!(misses <= 2000 / 9 + 8, "stride {stride}: {misses} misses");
            assert!(used * 100 >= issued * 99, "stride {stride}: {used} of {issued} prefetches used");
        }
        let (back, _, _) = replay((0..2000).map(|i| 1_000_000 - 3 * i));
        assert!(back <= 2000 / 9 + 8, "backwards, stride -3: {back} misses");
    }

    #[test]
    fn a_scan_with_noise_keeps_its_trend_and_random_accesses_prefetch_nothing() {
        // Every fifth access is far away: the scan's delta stays the majority.
        let mut x = 12_345u64;
        let mut rand = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (x >> 24) % 1_000_000_000
        };
        let mut next = 0u64;
        let noisy = (0..2000).map(|i| {
            if i % 5 == 4 {
                5_000_000_000 + rand()
            } else {
                next += 1;
                next
            }
        });
        let (misses, issued, used) = replay(noisy.collect::<Vec<_>>().into_iter());
        // Each far access faults (400) and, the trend being 1 still, prefetches next to itself in vain;
        // the scan faults once per run of 4 between two far accesses (the window grown from the 3 uses
        // since the last fault is 4), so about 400 more: 800 of 2000, where no prefetching misses all.
        assert!((790..=810).contains(&misses), "{misses} misses");
        assert!(used >= 1190, "{used} of the 1600 scan blocks came from a prefetch");
        assert!(issued - used >= 1000, "the far faults' windows are wasted: {issued} issued, {used} used");
        let (misses, issued, _) = replay((0..2000).map(|_| rand()).collect::<Vec<_>>().into_iter());
        assert_eq!((misses, issued), (2000, 0), "no trend and no use: prefetching stays suspended");
    }

    #[test]
    fn parameters_are_checked() {
        assert!(LeapParams::default().validate("p").is_ok());
        let e = LeapParams { splits: 64, ..LeapParams::default() }.validate("level[0].prefetcher").unwrap_err();
        assert_eq!(e.to_string(), "level[0].prefetcher.splits: 64: must be 1 to history (32)");
        assert!(LeapParams { max_window: 0, ..LeapParams::default() }.validate("p").is_err());
    }
}
