//! Marked blocks of a prefetcher (trigger blocks of RA's asynchronous form, `PG_readahead` markers of
//! Linux's on-demand read-ahead), with a counting filter in front of the map.
//!
//! Those prefetchers ask "is this block marked?" for every block of every request and for every block
//! the level evicts, and the answer is almost always no. The kernel answers from a flag in the page; we
//! keep the marks in a hash map and put 2^16 counters in front of it, indexed by a hash of the block: a
//! zero counter answers "not marked" with one array read. A counter counts the marks that hash to it
//! (saturating and then never decremented, so it can only err towards probing the map). Behaviour is the
//! map's exactly; only the cost of the common miss changes. The filter is an accelerator, not model
//! state: prefetchers report the marks alone as their metadata (`metadata_bytes`).

use crate::policy::table::{block_map, BlockMap};

/// Counters in the filter (a power of two): 128 KiB, allocated with the first mark.
const FILTER_SLOTS: usize = 1 << 16;

/// Marked blocks, each with a value (`()` when there is none).
#[derive(Debug)]
pub struct MarkMap<V> {
    map: BlockMap<V>,
    filter: Vec<u16>,
}

impl<V> Default for MarkMap<V> {
    fn default() -> Self {
        Self { map: block_map(0), filter: Vec::new() }
    }
}

/// The filter counter of `block` (Fibonacci hashing: neighbouring blocks land far apart).
#[inline]
fn slot(block: u64) -> usize {
    (block.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) as usize
}

impl<V> MarkMap<V> {
    /// Mark `block` with `value`; returns the value it had.
    pub fn insert(&mut self, block: u64, value: V) -> Option<V> {
        let old = self.map.insert(block, value);
        if old.is_none() {
            if self.filter.is_empty() {
                self.filter = vec![0; FILTER_SLOTS];
            }
            let c = &mut self.filter[slot(block)];
            *c = c.saturating_add(1);
        }
        old
    }

    /// Unmark `block`; returns its value when it was marked.
    #[inline]
    pub fn remove(&mut self, block: u64) -> Option<V> {
        let i = slot(block);
        if self.filter.get(i).is_none_or(|&c| c == 0) {
            return None;
        }
        let old = self.map.remove(&block);
        if old.is_some() && self.filter[i] != u16::MAX {
            self.filter[i] -= 1;
        }
        old
    }

    /// The value of `block` when it is marked.
    #[inline]
    #[must_use]
    pub fn get(&self, block: u64) -> Option<&V> {
        if self.filter.get(slot(block)).is_none_or(|&c| c == 0) {
            return None;
        }
        self.map.get(&block)
    }

    /// Number of marked blocks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No block is marked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Keep the marks for which `keep` holds (a rare sweep: the filter is rebuilt).
    pub fn retain(&mut self, mut keep: impl FnMut(u64, &mut V) -> bool) {
        self.map.retain(|b, v| keep(*b, v));
        self.filter.iter_mut().for_each(|c| *c = 0);
        for &b in self.map.keys() {
            let c = &mut self.filter[slot(b)];
            *c = c.saturating_add(1);
        }
    }

    /// The marks and their values, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        self.map.iter().map(|(&b, v)| (b, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_behave_as_a_map_whatever_the_filter_collisions() {
        let mut m: MarkMap<u64> = MarkMap::default();
        assert_eq!(m.remove(5), None, "an empty map has no filter yet");
        // Blocks that share a filter counter: the counter must stay non-zero while any of them is marked.
        let a = 7u64;
        let twin = (1u64..).find(|&b| b != a && slot(b) == slot(a)).expect("a colliding block");
        assert_eq!(m.insert(a, 1), None);
        assert_eq!(m.insert(twin, 2), None);
        assert_eq!(m.insert(a, 3), Some(1), "re-marking replaces the value and counts once");
        assert_eq!(m.remove(a), Some(3));
        assert_eq!(m.remove(a), None);
        assert_eq!(m.remove(twin), Some(2), "the twin is still found after its neighbour left");
        assert_eq!(m.filter[slot(a)], 0);
        for b in 0..1000 {
            m.insert(b * 3, b);
        }
        m.retain(|b, _| b % 2 == 0);
        assert_eq!(m.len(), 500);
        assert_eq!(m.remove(3), None);
        assert_eq!(m.remove(6), Some(2));
        let mut left: Vec<u64> = m.iter().map(|(b, _)| b).collect();
        left.sort_unstable();
        assert_eq!(left.first(), Some(&0));
        assert_eq!(left.len(), 499);
    }

    #[test]
    fn a_saturated_counter_only_makes_lookups_probe_the_map() {
        let mut m: MarkMap<()> = MarkMap::default();
        let a = 11u64;
        let twin = (a + 1..).find(|&b| slot(b) == slot(a)).expect("a colliding block");
        m.insert(a, ());
        m.filter[slot(a)] = u16::MAX - 1; // as if 65,534 marks shared it
        m.insert(twin, ());
        assert_eq!(m.filter[slot(a)], u16::MAX);
        assert_eq!((m.remove(a), m.remove(twin)), (Some(()), Some(())));
        assert_eq!(m.filter[slot(a)], u16::MAX, "a saturated counter is never decremented");
        assert!(m.is_empty());
        assert_eq!(m.remove(a), None);
    }
}
