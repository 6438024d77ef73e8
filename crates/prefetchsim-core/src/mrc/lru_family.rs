//! Every size of a single LRU level in one pass: the counters the engine's LRU would count at each of up
//! to 64 capacities, from one pass of stack distances over the requests (Mattson, Gecsei, Slutz & Traiger,
//! "Evaluation techniques for storage hierarchies", IBM Systems Journal 9(2), 1970), so that a batch of
//! configs differing only in size costs one pass instead of one simulation each ([`super::family`]).
//!
//! The engine is not Mattson's per-block LRU on multi-block requests (docs/mrc.md, results 3): a level
//! looks up every block of a request first, moving its hits to the MRU end in block order, and then
//! inserts the missed blocks at the MRU end in block order. After a request, a cache of `c` blocks
//! (`c` at least the request's length, so that inserting never evicts a block of the same request) holds
//! its blocks on top as: misses in decreasing block order, then hits in decreasing block order. That
//! order depends on which blocks hit at `c`, so the stack differs between sizes inside a request's group.
//! A block `x` last referenced in request `R` therefore sits at position
//! `1 + A + T_c(x)` in cache `c`, where `A` counts the distinct blocks referenced after `R` and `T_c(x)`
//! the blocks of `R` not referenced since that `c`'s order puts above `x`; it hits when that position is
//! at most `c`. `A` is counted with last-access times as the exact curve counts distances
//! ([`super::marks`]: the times of a request's blocks are consecutive, in block order); `T_c` is
//! bounded by the request's length, so it is computed (from each block's stored per-size outcome in `R`)
//! only when a capacity falls inside that bound, which is rare.
//!
//! Counters that follow: `hits`, `misses`, `demand_accesses`, `requests`; `fetches` (runs of consecutive
//! missed blocks of a request) and `fetched_blocks`; `evictions` = misses beyond the capacity (the cache
//! only grows until full, then every miss evicts one block). With no prefetcher and the instant engine
//! every other counter is 0. A capacity smaller than some request is reported as not computed.

use super::marks::Marks;
use super::size_counts::{SizeCounts, SizePass};
use super::times::{BlockTimes, EXACT_FLOOR};
use crate::request::Request;

/// Capacities one pass computes at most (one bit each in a block's outcome mask).
pub const MAX_SIZES: usize = 64;
/// Time positions allocated at least.
const MIN_SLOTS: usize = 1 << 16;
/// Time positions per tracked block after a compaction.
const GROWTH: usize = 8;

/// What is kept of a tracked block: its last request and its outcome there at every size.
#[derive(Clone, Copy, Debug)]
struct Last {
    /// Time of its mark (consecutive within a request, in block order).
    time: u32,
    /// Its offset in that request, and the request's length.
    off: u32,
    len: u32,
    /// Index of that request in the stream.
    req: u64,
    /// Bit k: it hit at size k in that request.
    hits: u64,
}

/// The engine's single-level LRU at up to [`MAX_SIZES`] capacities, in one pass.
#[derive(Debug)]
pub struct LruSizes {
    /// Every block seen -> the index of its record in `last`. The exact curve's block map: a flat array
    /// for the block numbers most traces use, a hash map above (a map of 8-block chunks of records cost a
    /// cache-missing probe of a 328-byte bucket per block: a fifth of the pass on w106).
    index: BlockTimes,
    /// The blocks' records, in the order they were first seen (a block is never forgotten).
    last: Vec<Last>,
    marks: Marks,
    now: usize,
    counts: SizeCounts,
    longest: u32,
    /// Outcome masks of the request being processed.
    masks: Vec<u64>,
    /// The request's blocks' records before it, with their indices.
    prev: Vec<Option<(u32, Last)>>,
}

impl LruSizes {
    /// A pass for `sizes` (ascending, distinct, at least 1, at most [`MAX_SIZES`]); the first `warmup`
    /// requests are not counted (the engine resets the counters after them).
    ///
    /// # Panics
    /// When `sizes` is empty, too long, not strictly ascending or starts at 0 (a caller's error).
    #[must_use]
    pub fn new(sizes: Vec<u64>, warmup: u64) -> Self {
        let counts = SizeCounts::new(sizes, MAX_SIZES, warmup);
        Self {
            index: BlockTimes::new(EXACT_FLOOR),
            last: Vec::new(),
            marks: Marks::new(MIN_SLOTS),
            now: 0,
            counts,
            longest: 0,
            masks: Vec::new(),
            prev: Vec::new(),
        }
    }

    #[inline]
    fn get(&self, block: u64) -> Option<Last> {
        self.get_indexed(block).map(|(_, x)| x)
    }

    /// [`Self::get`] with the record's index.
    #[inline]
    fn get_indexed(&self, block: u64) -> Option<(u32, Last)> {
        self.index.get(block).map(|i| (i, self.last[i as usize]))
    }

    /// The sizes (bits) at which a position `pos` hits: every capacity of at least `pos`.
    #[inline]
    fn hits_from(&self, pos: u64) -> u64 {
        let sizes = self.counts.sizes();
        // Most references hit at every size or at none; those skip the search (a chain of dependent
        // compares that was about a tenth of a 16-size pass on w106).
        if pos <= sizes[0] {
            return self.counts.all();
        }
        if pos > sizes[sizes.len() - 1] {
            return 0;
        }
        let k = sizes.partition_point(|&c| c < pos);
        if k >= 64 {
            0
        } else {
            self.counts.all() & (u64::MAX << k)
        }
    }

    /// The sizes at which block `block`, last referenced as `x`, hits now, given `after`: the tracked blocks
    /// referenced after x's time (the rest of x's request still there, and every later one).
    #[inline]
    fn outcome(&self, block: u64, x: Last, after: u64) -> u64 {
        if x.len == 1 {
            return self.hits_from(after + 1);
        }
        // Position 1 + A + T_c with A = after - (blocks of x's request after it, still there) and
        // 0 <= T_c <= len - 1: a size outside [lo, hi) is decided without looking at the request.
        let lo = (after + 1).saturating_sub(u64::from(x.len - 1 - x.off));
        let hi = after + 1 + u64::from(x.len - 1);
        let sure = self.hits_from(hi);
        let maybe = self.hits_from(lo) & !sure;
        if maybe == 0 {
            return sure;
        }
        // Some size falls inside: find the blocks of x's request still there (not referenced since).
        let first = block - u64::from(x.off);
        let mut group_after = 0u64;
        let mut others: Vec<(u32, u64)> = Vec::with_capacity(x.len as usize);
        for j in 0..x.len {
            if j == x.off {
                continue;
            }
            if let Some(y) = self.get(first + u64::from(j)).filter(|y| y.req == x.req) {
                group_after += u64::from(j > x.off);
                others.push((j, y.hits));
            }
        }
        let base = after + 1 - group_after;
        let mut hits = sure;
        let mut m = maybe;
        while m != 0 {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            let x_hit = x.hits >> k & 1 == 1;
            // Cache k's order of request x: misses above hits, each in decreasing block order.
            let above = others
                .iter()
                .filter(|(j, h)| {
                    let y_hit = h >> k & 1 == 1;
                    (!y_hit && x_hit) || (y_hit == x_hit && *j > x.off)
                })
                .count() as u64;
            if base + above <= self.counts.sizes()[k] {
                hits |= 1 << k;
            }
        }
        hits
    }

    /// Renumber the marks `0..` (one per block seen) in their order and leave room for at least `need` more times.
    fn compact(&mut self, need: usize) {
        let ranks = self.marks.ranks();
        for x in &mut self.last {
            x.time = ranks.before(x.time as usize);
        }
        let live = self.last.len();
        let len = (GROWTH * live).max(MIN_SLOTS).max(live + need + 64).min(1 << 32);
        assert!(live + need <= len, "a request longer than the time axis");
        self.marks = Marks::with_first(len, live);
        self.now = live;
    }
}

impl SizePass for LruSizes {
    /// Account one request.
    fn add(&mut self, req: &Request) {
        let len = req.len;
        if len == 0 {
            return;
        }
        self.longest = self.longest.max(len);
        if self.now + len as usize > self.marks.len() {
            self.compact(len as usize);
        }
        let now = self.now;
        // Look-ups against the state before the request (the engine looks every block up first).
        self.masks.clear();
        self.prev.clear();
        // The previous block's time and count of tracked blocks after it: a block whose time follows it
        // (a run referenced again in its order) has one fewer after it, its own mark, so a run costs one
        // count instead of one per block.
        let mut run: Option<(u32, u64)> = None;
        for block in req.blocks() {
            let prev = self.get_indexed(block);
            let mask = prev.map_or(0, |(_, x)| {
                let after = match run {
                    Some((t, a)) if t + 1 == x.time => a - 1,
                    // Nothing is marked after `now - 1` yet (the request's marks come after its look-ups).
                    _ => self.marks.count_after(x.time as usize, now - 1),
                };
                run = Some((x.time, after));
                self.outcome(block, x, after)
            });
            if prev.is_none() {
                run = None;
            }
            self.masks.push(mask);
            self.prev.push(prev);
        }
        // Then the request's blocks take the next times, in block order.
        let id = self.counts.requests();
        for (i, block) in req.blocks().enumerate() {
            let prev = self.prev[i];
            if let Some((_, x)) = prev {
                self.marks.remove(x.time as usize);
            }
            let t = now + i;
            self.marks.insert(t);
            let time = u32::try_from(t).expect("time slots stay below 2^32");
            let record = Last { time, off: i as u32, len, req: id, hits: self.masks[i] };
            match prev {
                Some((at, _)) => self.last[at as usize] = record,
                None => {
                    let at = u32::try_from(self.last.len()).expect("fewer than 2^32 - 1 blocks");
                    self.last.push(record);
                    self.index.insert(block, at);
                }
            }
        }
        self.now = now + len as usize;
        self.counts.record(&self.masks);
    }

    fn counts(&self) -> &SizeCounts {
        &self.counts
    }

    fn computed(&self, c: u64) -> bool {
        c >= u64::from(self.longest)
    }
}
