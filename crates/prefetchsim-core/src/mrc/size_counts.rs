//! The counters of a one-pass family of sizes ([`super::family`]): per size, the blocks that hit and the
//! fetches (runs of missed blocks), in the warm-up and after it, and the engine's level counters they give.
//! Shared by the LRU ([`super::lru_family`]), FIFO ([`super::fifo_family`]) and CLOCK
//! ([`super::clock_family`]) passes, which differ only in how they find the sizes at which a block hits,
//! and the interface through which [`super::family`] drives them ([`SizePass`]).

use crate::metrics::LevelCounters;
use crate::request::Request;

/// Counts per size, kept as differences (`d[a] += 1, d[b] -= 1` adds one to sizes `a..b`), since the sizes
/// where a block hits are almost always a suffix of the sorted sizes.
#[derive(Clone, Debug)]
struct PerSize {
    diff: Vec<i64>,
}

impl PerSize {
    fn new(k: usize) -> Self {
        Self { diff: vec![0; k + 1] }
    }

    /// Add one to every size whose bit is set in `mask`.
    #[inline]
    fn add(&mut self, mask: u64) {
        if mask == 0 {
            return;
        }
        let a = mask.trailing_zeros() as usize;
        let run = mask >> a;
        if run & run.wrapping_add(1) == 0 {
            // Bits a..b set, nothing else.
            let b = a + run.count_ones() as usize;
            self.diff[a] += 1;
            self.diff[b] -= 1;
        } else {
            let mut m = mask;
            while m != 0 {
                let k = m.trailing_zeros() as usize;
                self.diff[k] += 1;
                self.diff[k + 1] -= 1;
                m &= m - 1;
            }
        }
    }

    fn totals(&self) -> Vec<u64> {
        let mut acc = 0i64;
        self.diff[..self.diff.len() - 1]
            .iter()
            .map(|d| {
                acc += d;
                u64::try_from(acc).expect("a count is not negative")
            })
            .collect()
    }
}

/// Counters of one phase of the run (warm-up, measured).
#[derive(Clone, Debug)]
struct Phase {
    requests: u64,
    blocks: u64,
    hits: PerSize,
    runs: PerSize,
}

impl Phase {
    fn new(k: usize) -> Self {
        Self { requests: 0, blocks: 0, hits: PerSize::new(k), runs: PerSize::new(k) }
    }
}

/// Per-size counts of a pass over its sizes whose first `warmup` requests are not counted (the engine
/// resets its counters after them).
#[derive(Clone, Debug)]
pub(super) struct SizeCounts {
    /// Capacities, ascending, distinct, at least 1.
    sizes: Vec<u64>,
    all: u64,
    warmup: u64,
    requests: u64,
    warm: Phase,
    measured: Phase,
}

impl SizeCounts {
    /// Counts for `sizes` (ascending, distinct, at least 1, at most `max`, itself at most 64).
    ///
    /// # Panics
    /// When `sizes` is not that (a caller's error).
    pub(super) fn new(sizes: Vec<u64>, max: usize, warmup: u64) -> Self {
        assert!(!sizes.is_empty() && sizes.len() <= max.min(64), "1 to {max} sizes");
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "sizes ascending and distinct");
        assert!(sizes[0] >= 1, "sizes of at least one block");
        let k = sizes.len();
        let all = if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
        Self { sizes, all, warmup, requests: 0, warm: Phase::new(k), measured: Phase::new(k) }
    }

    /// The sizes, ascending.
    pub(super) fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// The sizes' mask: bit `k` for size `k`.
    pub(super) fn all(&self) -> u64 {
        self.all
    }

    /// Requests recorded.
    pub(super) fn requests(&self) -> u64 {
        self.requests
    }

    /// One request whose blocks, in order, hit at the sizes of `masks` (bit `k`: size `k`).
    #[inline]
    pub(super) fn record(&mut self, masks: &[u64]) {
        let phase = if self.requests < self.warmup { &mut self.warm } else { &mut self.measured };
        phase.requests += 1;
        phase.blocks += masks.len() as u64;
        let mut missed_before = 0u64;
        for &m in masks {
            phase.hits.add(m);
            // A fetch starts at a missed block whose predecessor in the request hit (or at the first).
            let missed = !m & self.all;
            phase.runs.add(missed & !missed_before);
            missed_before = missed;
        }
        self.requests += 1;
    }

    /// The level's counters at each size, `None` where `computed` is false.
    pub(super) fn counters(&self, computed: impl Fn(u64) -> bool) -> Vec<Option<LevelCounters>> {
        let sizes = &self.sizes;
        // The engine resets its counters when the warm-up ends; a trace shorter than it is counted whole.
        let none = Phase::new(sizes.len());
        let (warm, measured) =
            if self.requests < self.warmup { (&none, &self.warm) } else { (&self.warm, &self.measured) };
        let (wh, mh, runs) = (warm.hits.totals(), measured.hits.totals(), measured.runs.totals());
        sizes
            .iter()
            .enumerate()
            .map(|(j, &c)| {
                if !computed(c) {
                    return None;
                }
                let misses = measured.blocks - mh[j];
                let warm_misses = warm.blocks - wh[j];
                let evicted = |m: u64| m.saturating_sub(c);
                Some(LevelCounters {
                    requests: measured.requests,
                    demand_accesses: measured.blocks,
                    hits: mh[j],
                    misses,
                    evictions: evicted(warm_misses + misses) - evicted(warm_misses),
                    fetches: runs[j],
                    fetched_blocks: misses,
                    ..LevelCounters::default()
                })
            })
            .collect()
    }
}

/// A one-pass computation of many sizes of one policy: what [`super::family::precompute`] asks of it.
pub(super) trait SizePass {
    /// Account one request.
    fn add(&mut self, req: &Request);

    /// Its per-size counts.
    fn counts(&self) -> &SizeCounts;

    /// Whether it reproduces the engine at size `c` (it may give up, or not model a size).
    fn computed(&self, c: u64) -> bool;

    /// Account requests in order (one dynamic call per batch of them).
    fn add_all(&mut self, reqs: &[Request]) {
        reqs.iter().for_each(|r| self.add(r));
    }

    /// The level's counters at each size, `None` where not computed.
    fn counters(&self) -> Vec<Option<LevelCounters>> {
        self.counts().counters(|c| self.computed(c))
    }
}

/// Shared by the passes' unit tests: a pass against a direct model of its policy.
#[cfg(test)]
pub(super) mod testing {
    use super::SizePass;
    use crate::metrics::LevelCounters;
    use crate::request::Request;

    /// `n` block numbers below `universe` from xorshift seed `seed`, skewed so that small numbers recur
    /// more often.
    pub(in crate::mrc) fn skewed_blocks(seed: u64, n: usize, universe: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % universe) * (x >> 40) % universe
            })
            .collect()
    }

    /// The counters of `pass` after one-block requests of blocks `0..n`, each new.
    pub(in crate::mrc) fn after_new_blocks(pass: &mut dyn SizePass, n: u64) -> Vec<Option<LevelCounters>> {
        (0..n).for_each(|b| pass.add(&Request::read(b, 1)));
        pass.counters()
    }

    /// Feed `blocks` to `pass` as one-block requests; at each of its sizes its hits and evictions must be
    /// those of `direct(blocks, size)`, and every reference a hit or a miss.
    pub(in crate::mrc) fn check_against_direct(
        pass: &mut dyn SizePass,
        blocks: &[u64],
        direct: impl Fn(&[u64], usize) -> (u64, u64),
    ) {
        for &b in blocks {
            pass.add(&Request::read(b, 1));
        }
        let sizes = pass.counts().sizes().to_vec();
        for (c, got) in sizes.iter().zip(pass.counters()) {
            let got = got.unwrap();
            let (hits, evictions) = direct(blocks, *c as usize);
            assert_eq!((got.hits, got.evictions), (hits, evictions), "size {c}");
            assert_eq!(got.misses + got.hits, blocks.len() as u64);
        }
    }
}
