//! LRU stack distances in one pass: the distance of a reference is the number of distinct blocks referenced
//! since the previous reference to the same block, itself included (Mattson et al., "Evaluation techniques
//! for storage hierarchies", IBM Systems Journal 9(2), 1970). A reference hits an LRU cache of `c` blocks
//! exactly when its distance is at most `c`, so one pass gives the hit ratio at every size.
//!
//! Counting: a [`Fenwick`] tree holds one mark per tracked block at the time of its last access (the
//! method of Bennett & Kruskal, "LRU stack processing", IBM J. R&D 19(4), 1975, as used by SHARDS);
//! the distance is the number of marks after that time, plus one. When the time axis is full the marks
//! are renumbered compactly, so memory is proportional to the blocks tracked, not to the trace.

use hashbrown::HashMap;

use super::fenwick::Fenwick;

/// Time positions allocated at least (compaction happens when they are all used).
const MIN_SLOTS: usize = 1 << 16;

/// Stack distances of a stream of block references.
#[derive(Debug)]
pub struct StackDistances {
    last: HashMap<u64, u32, foldhash::fast::FixedState>,
    tree: Fenwick,
    now: usize,
}

impl Default for StackDistances {
    fn default() -> Self {
        Self::new()
    }
}

impl StackDistances {
    /// An empty stack.
    #[must_use]
    pub fn new() -> Self {
        Self {
            last: HashMap::with_hasher(foldhash::fast::FixedState::default()),
            tree: Fenwick::new(MIN_SLOTS),
            now: 0,
        }
    }

    /// Reference `block`: its stack distance (1 = referenced just before), or `None` on a first reference.
    pub fn access(&mut self, block: u64) -> Option<u64> {
        if self.now == self.tree.len() {
            self.compact();
        }
        let now = self.now;
        self.now += 1;
        let t = u32::try_from(now).expect("time slots stay below 2^32 (compacted at twice the tracked blocks)");
        // Every mark is at a time before `now`; there is one per tracked block.
        let marks = self.last.len() as u64;
        let dist = match self.last.insert(block, t) {
            None => None,
            Some(prev) => {
                let prev = prev as usize;
                // Marks after `prev` are the distinct blocks referenced since (one prefix walk, not two).
                let after = marks - self.tree.prefix(prev);
                self.tree.add(prev, -1);
                Some(after + 1)
            }
        };
        self.tree.add(now, 1);
        dist
    }

    /// Stop tracking `block` (fixed-size SHARDS drops blocks whose hash leaves the sample).
    pub fn forget(&mut self, block: u64) {
        if let Some(prev) = self.last.remove(&block) {
            self.tree.add(prev as usize, -1);
        }
    }

    /// Blocks tracked.
    #[must_use]
    pub fn tracked(&self) -> usize {
        self.last.len()
    }

    /// Renumber the last-access times `0..tracked` in their order and size the axis at twice that.
    fn compact(&mut self) {
        let mut times: Vec<u32> = self.last.values().copied().collect();
        times.sort_unstable();
        for v in self.last.values_mut() {
            // Times are distinct, so the rank is the new time.
            *v = u32::try_from(times.binary_search(v).unwrap_or_default()).unwrap_or(u32::MAX);
        }
        let live = times.len();
        let len = (2 * live).max(MIN_SLOTS);
        self.tree = Fenwick::with_ones(len, live);
        self.now = live;
    }
}
