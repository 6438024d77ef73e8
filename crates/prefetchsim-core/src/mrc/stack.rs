//! LRU stack distances in one pass: the distance of a reference is the number of distinct blocks referenced
//! since the previous reference to the same block, itself included (Mattson et al., "Evaluation techniques
//! for storage hierarchies", IBM Systems Journal 9(2), 1970). A reference hits an LRU cache of `c` blocks
//! exactly when its distance is at most `c`, so one pass gives the hit ratio at every size.
//!
//! Counting: a set of [`Marks`] holds one mark per tracked block at the time of its last access (the
//! method of Bennett & Kruskal, "LRU stack processing", IBM J. R&D 19(4), 1975, as used by SHARDS, with a
//! bit per time and counts of its 64-bit words in three levels); the distance is the number of marks after that time, plus
//! one. When the time axis is full the marks are renumbered compactly, so memory is proportional to the
//! blocks tracked, not to the trace.

use super::marks::Marks;
use super::times::{self, BlockTimes};

/// Time positions allocated at least (compaction happens when they are all used).
const MIN_SLOTS: usize = 1 << 16;
/// Time positions per tracked block after a compaction: one bit each, so 8 cost a byte per block and a
/// compaction comes every 7 references per tracked block.
const GROWTH: usize = 8;

/// Stack distances of a stream of block references.
#[derive(Debug)]
pub struct StackDistances {
    last: BlockTimes,
    marks: Marks,
    now: usize,
}

impl Default for StackDistances {
    fn default() -> Self {
        Self::new()
    }
}

impl StackDistances {
    /// An empty stack for every block of a trace.
    #[must_use]
    pub fn new() -> Self {
        Self::with_times(BlockTimes::new(times::EXACT_FLOOR))
    }

    /// An empty stack for a sample of the blocks (their numbers sparse).
    #[must_use]
    pub fn sampled() -> Self {
        Self::with_times(BlockTimes::new(times::SAMPLE_FLOOR))
    }

    fn with_times(last: BlockTimes) -> Self {
        Self { last, marks: Marks::new(MIN_SLOTS), now: 0 }
    }

    /// Reference `block`: its stack distance (1 = referenced just before), or `None` on a first reference.
    pub fn access(&mut self, block: u64) -> Option<u64> {
        if self.now == self.marks.len() {
            self.compact();
        }
        let now = self.now;
        self.now += 1;
        let t = u32::try_from(now)
            .expect("time slots stay below 2^32 (the axis is capped there, above the tracked blocks)");
        let dist = match self.last.insert(block, t) {
            None => None,
            Some(prev) => {
                let prev = prev as usize;
                // Every mark is at a time before `now`, one per tracked block: those after `prev` are the
                // distinct blocks referenced since.
                let after = self.marks.count_after(prev, now - 1);
                self.marks.remove(prev);
                Some(after + 1)
            }
        };
        self.marks.insert(now);
        dist
    }

    /// Reference the blocks of one request in order, handing each one's distance to `each` (`None` on a
    /// first reference). A block whose previous reference came right after the previous block's (times `t`
    /// and `t + 1`, a run referenced again in its order) has that block's distance: from one count to the
    /// next, the mark at `t + 1` leaves the counted range and the previous block's new mark enters it. So
    /// such a run costs one count instead of one per block (ARC's multi-block requests are mostly such).
    pub fn access_run(&mut self, blocks: impl Iterator<Item = u64>, mut each: impl FnMut(Option<u64>)) {
        // The previous block's previous time and distance, while the times keep their numbering.
        let mut run: Option<(usize, u64)> = None;
        for block in blocks {
            if self.now == self.marks.len() {
                self.compact();
                run = None;
            }
            let now = self.now;
            self.now += 1;
            let t = u32::try_from(now)
                .expect("time slots stay below 2^32 (the axis is capped there, above the tracked blocks)");
            let dist = match self.last.insert(block, t) {
                None => {
                    run = None;
                    None
                }
                Some(prev) => {
                    let prev = prev as usize;
                    let d = match run {
                        Some((p, d)) if p + 1 == prev => d,
                        _ => self.marks.count_after(prev, now - 1) + 1,
                    };
                    self.marks.remove(prev);
                    run = Some((prev, d));
                    Some(d)
                }
            };
            self.marks.insert(now);
            each(dist);
        }
    }

    /// Start loading what [`Self::access`] of `block` will read first (its last-access time), some
    /// references ahead: the block times are larger than the processor's caches.
    #[inline]
    pub fn touch(&self, block: u64) {
        self.last.touch(block);
    }

    /// Stop tracking `block` (fixed-size SHARDS drops blocks whose hash leaves the sample).
    pub fn forget(&mut self, block: u64) {
        if let Some(prev) = self.last.remove(block) {
            self.marks.remove(prev as usize);
        }
    }

    /// Blocks tracked.
    #[must_use]
    pub fn tracked(&self) -> usize {
        self.last.len()
    }

    /// Renumber the last-access times `0..tracked` in their order (a time's rank among the marks) and size
    /// the axis at [`GROWTH`] times that.
    fn compact(&mut self) {
        let ranks = self.marks.ranks();
        self.last.renumber(|t| ranks.before(t as usize));
        let live = self.last.len();
        // Capped at 2^32 times (a u32 each).
        let len = (GROWTH * live).max(MIN_SLOTS).min((1 << 32).max(live + 1));
        self.marks = Marks::with_first(len, live);
        self.now = live;
    }
}

#[cfg(test)]
mod tests {
    use super::StackDistances;

    /// A request stream that re-references earlier requests whole, in part and shifted, so that runs of
    /// consecutive previous times (the shortcut of `access_run`) and their breaks both occur, over enough
    /// references for several compactions of the time axis.
    #[test]
    fn a_run_of_blocks_has_the_distances_of_its_blocks_one_by_one() {
        let (mut one, mut run) = (StackDistances::new(), StackDistances::new());
        let mut x = 99u64;
        let mut recent: Vec<(u64, u32)> = Vec::new();
        let (mut shortcut_prone, mut total) = (0u64, 0u64);
        for _ in 0..60_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 1 + (x >> 50) as u32 % 16;
            let first = match x % 5 {
                0 | 1 if !recent.is_empty() => {
                    let (f, _) = recent[(x >> 8) as usize % recent.len()];
                    f + (x >> 20) % 3
                }
                _ => (x >> 24) % 20_000,
            };
            recent.push((first, len));
            if recent.len() > 200 {
                recent.swap_remove((x >> 30) as usize % 200);
            }
            let want: Vec<Option<u64>> = (first..first + u64::from(len)).map(|b| one.access(b)).collect();
            let mut got = Vec::new();
            run.access_run(first..first + u64::from(len), |d| got.push(d));
            assert_eq!(got, want, "request {first}+{len}");
            shortcut_prone += want.windows(2).filter(|w| w[0].is_some() && w[0] == w[1]).count() as u64;
            total += u64::from(len);
        }
        // The stream exercised the shortcut (equal neighbouring distances) and compactions.
        assert!(shortcut_prone > total / 10, "{shortcut_prone} of {total}");
        assert!(total > 4 * (1 << 16));
    }
}
