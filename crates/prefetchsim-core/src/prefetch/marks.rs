//! Marked blocks of a prefetcher (trigger blocks of RA's asynchronous form and of SARC, `PG_readahead`
//! markers of Linux's on-demand read-ahead), with a counting filter in front of the map.
//!
//! Those prefetchers ask "is this block marked?" for every block of every request and for every block
//! the level evicts, and the answer is almost always no. The kernel answers from a flag in the page; we
//! keep the marks in a hash map and put a small array of counters in front of it, indexed by a hash of
//! the block: a zero counter answers "not marked" with one array read. A counter counts the marks that
//! hash to it (saturating and then never decremented, so it can only err towards probing the map).
//! Behaviour is the map's exactly; only the cost of the common miss changes. The filter is an
//! accelerator, not model state: prefetchers report the marks alone as their metadata (`metadata_bytes`).
//!
//! The filter keeps at least eight counters per mark and doubles (rebuilt from the map) when the marks
//! outgrow it: a prefetcher with a few hundred marks gets a filter that stays in the first-level cache,
//! since it is read at every block access and eviction (a fixed 128 KiB filter cost more in cache misses
//! than the probes it saved).
//!
//! # Marks set over a block's old copy
//!
//! A mark is dropped when its block leaves the cache ([`MarkMap::evicted`]), but the access that sets a
//! mark makes room for its own blocks after deciding, so it can evict the very block it just marked
//! (still its old copy, resident when the mark was set) and then fetch that block again in the group the
//! mark belongs to. The mark is meant for the new copy (sequential.md's `start_group` and sarc.md set it
//! unconditionally; nothing in either lets the access's own evictions undo it), so a mark set on a
//! resident block ([`MarkMap::insert_over`]) outlives the access's evictions of that block. Whether the
//! new copy came in is known only once the access is done: [`MarkMap::settle`], called when the level
//! has finished the access (`Prefetcher::after_access`; again at the next access's start for a level that
//! does not call it), drops the kept marks whose block is not resident then (the access evicted the old
//! copy after its run had passed over the block, so nothing fetched it again). The bookkeeping is
//! [`OldCopies`], which AMP shares for its read-set metadata. Found by a user study
//! (`studies/policies.md`, finding 1): the stream stalled, as the new group had no trigger.

use super::old_copies::OldCopies;
use crate::policy::table::{block_map, BlockMap};

/// Counters in the first filter (a power of two): 1 KiB, allocated with the first mark.
const FILTER_MIN: usize = 1 << 10;
/// Counters per mark below which the filter doubles.
const COUNTERS_PER_MARK: usize = 8;

/// Marked blocks, each with a value (`()` when there is none).
#[derive(Debug)]
pub struct MarkMap<V> {
    map: BlockMap<V>,
    filter: Vec<u8>,
    /// `64 - log2(filter.len())`: the filter slot is the top bits of the block's hash.
    shift: u32,
    /// Blocks marked by the current access while resident: their marks outlive the access's evictions
    /// until [`MarkMap::settle`] checks them.
    copies: OldCopies,
}

impl<V> Default for MarkMap<V> {
    fn default() -> Self {
        Self { map: block_map(0), filter: Vec::new(), shift: 64, copies: OldCopies::default() }
    }
}

/// Fibonacci hashing: neighbouring blocks land far apart.
#[inline]
fn hash(block: u64) -> u64 {
    block.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl<V> MarkMap<V> {
    /// Mark `block` with `value`; returns the value it had.
    pub fn insert(&mut self, block: u64, value: V) -> Option<V> {
        let old = self.map.insert(block, value);
        if old.is_none() {
            if self.map.len() * COUNTERS_PER_MARK > self.filter.len() {
                self.rebuild((self.filter.len() * 2).max(FILTER_MIN));
            } else {
                let i = self.slot(block);
                self.filter[i] = self.filter[i].saturating_add(1);
            }
        }
        old
    }

    /// Mark `block` for the current access, `resident` telling whether the block is cached now (its old
    /// copy, which the same access may evict before fetching the block again; see the module
    /// documentation). Returns the value it had.
    pub fn insert_over(&mut self, block: u64, value: V, resident: bool) -> Option<V> {
        if resident {
            self.copies.cover(block, block);
        }
        self.insert(block, value)
    }

    /// `block` left the cache: unmark it, except when the current access marked it while resident (its
    /// old copy leaving; the mark is for the copy the access fetches again, [`MarkMap::settle`] decides).
    /// Returns the value removed.
    #[inline(always)]
    pub fn evicted(&mut self, block: u64) -> Option<V> {
        if self.copies.evicted(block) {
            return None;
        }
        self.remove(block)
    }

    /// The access is done (or the next one starts): its marks that outlived their block's eviction stay
    /// when `resident` says their block is cached (fetched again), and go otherwise.
    #[inline]
    pub fn settle(&mut self, resident: impl Fn(u64) -> bool) {
        for b in self.copies.settle() {
            if !resident(b) {
                self.remove(b);
            }
        }
    }

    /// The filter counter of `block`.
    #[inline(always)]
    fn slot(&self, block: u64) -> usize {
        // `shift` is 64 only while the filter is empty, and then nothing is looked up in it.
        hash(block).checked_shr(self.shift).unwrap_or(0) as usize
    }

    /// A filter of `slots` counters (a power of two) over the current marks.
    #[cold]
    fn rebuild(&mut self, slots: usize) {
        self.filter.clear();
        self.filter.resize(slots, 0);
        self.shift = 64 - slots.trailing_zeros();
        for &b in self.map.keys() {
            let i = hash(b).checked_shr(self.shift).unwrap_or(0) as usize;
            self.filter[i] = self.filter[i].saturating_add(1);
        }
    }

    /// Unmark `block`; returns its value when it was marked.
    #[inline(always)]
    pub fn remove(&mut self, block: u64) -> Option<V> {
        // The common answer (not marked) inline; the map only behind a non-zero counter.
        let i = self.slot(block);
        if self.filter.get(i).is_none_or(|&c| c == 0) {
            return None;
        }
        self.remove_counted(block, i)
    }

    /// [`MarkMap::remove`] past the filter.
    #[inline(never)]
    fn remove_counted(&mut self, block: u64, i: usize) -> Option<V> {
        let old = self.map.remove(&block);
        if old.is_some() && self.filter[i] != u8::MAX {
            self.filter[i] -= 1;
        }
        old
    }

    /// The value of `block` when it is marked.
    #[inline(always)]
    #[must_use]
    pub fn get(&self, block: u64) -> Option<&V> {
        if self.filter.get(self.slot(block)).is_none_or(|&c| c == 0) {
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
        if !self.filter.is_empty() {
            self.rebuild(self.filter.len());
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

    /// The slot of `block` in the first filter (1,024 counters).
    fn first_slot(block: u64) -> usize {
        (hash(block) >> (64 - FILTER_MIN.trailing_zeros())) as usize
    }

    #[test]
    fn marks_behave_as_a_map_whatever_the_filter_collisions() {
        let mut m: MarkMap<u64> = MarkMap::default();
        assert_eq!(m.remove(5), None, "an empty map has no filter yet");
        assert_eq!(m.get(5), None);
        // Blocks that share a filter counter: the counter must stay non-zero while any of them is marked.
        let a = 7u64;
        let twin = (1u64..).find(|&b| b != a && first_slot(b) == first_slot(a)).expect("a colliding block");
        assert_eq!(m.insert(a, 1), None);
        assert_eq!(m.filter.len(), FILTER_MIN);
        assert_eq!(m.insert(twin, 2), None);
        assert_eq!(m.filter[first_slot(a)], 2);
        assert_eq!(m.insert(a, 3), Some(1), "re-marking replaces the value and counts once");
        assert_eq!(m.get(a), Some(&3));
        assert_eq!(m.remove(a), Some(3));
        assert_eq!(m.remove(a), None);
        assert_eq!(m.get(twin), Some(&2), "the twin is still found after its neighbour left");
        assert_eq!(m.remove(twin), Some(2));
        assert_eq!(m.filter[first_slot(a)], 0);
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
    fn the_filter_grows_with_the_marks_and_keeps_finding_every_one() {
        let mut m: MarkMap<u64> = MarkMap::default();
        for b in 0..10_000u64 {
            m.insert(b * 7919, b);
            assert!(m.filter.len() >= m.len() * COUNTERS_PER_MARK, "at least four counters per mark");
            assert!(m.filter.len().is_power_of_two());
        }
        assert!(m.filter.len() < 10_000 * COUNTERS_PER_MARK * 2, "no more than needed: {}", m.filter.len());
        let counted: usize = m.filter.iter().map(|&c| usize::from(c)).sum();
        assert_eq!(counted, 10_000, "each mark counted once (no counter saturated here)");
        for b in 0..10_000u64 {
            assert_eq!(m.get(b * 7919), Some(&b));
            assert_eq!(m.get(b * 7919 + 1), None);
        }
        for b in 0..10_000u64 {
            assert_eq!(m.remove(b * 7919), Some(b));
        }
        assert!(m.is_empty());
        assert!(m.filter.iter().all(|&c| c == 0));
    }

    #[test]
    fn a_mark_set_over_a_resident_block_outlives_the_eviction_of_its_old_copy_only() {
        let mut m: MarkMap<u64> = MarkMap::default();
        // Access 1 marks 5 (resident) and 6 (not resident), 7 (resident) and 8 (resident).
        m.insert_over(5, 50, true);
        m.insert_over(6, 60, false);
        m.insert_over(7, 70, true);
        m.insert_over(8, 80, true);
        assert_eq!(m.evicted(5), None, "5's old copy leaves: the mark is for the copy fetched again");
        assert_eq!(m.get(5), Some(&50));
        assert_eq!(m.evicted(6), Some(60), "6 was not resident: this eviction is of the new copy");
        assert_eq!(m.evicted(7), None);
        assert_eq!(m.evicted(7), None, "a second eviction within the access (of the new copy) waits too");
        // Access 2 starts: 5 came back (resident), 8 stayed; nothing was left of 7.
        m.settle(|b| b == 5 || b == 8);
        assert_eq!(m.get(5), Some(&50));
        assert_eq!(m.get(7), None, "7 is not resident when the access is done");
        assert_eq!(m.evicted(8), Some(80), "after the access, an eviction drops the mark");
        assert_eq!(m.evicted(5), Some(50));
        // An old copy evicted after the access's run had passed over it: not fetched again, dropped.
        m.insert_over(9, 90, true);
        assert_eq!(m.evicted(9), None);
        m.settle(|_| false);
        assert!(m.is_empty());
    }

    #[test]
    fn a_saturated_counter_only_makes_lookups_probe_the_map() {
        let mut m: MarkMap<()> = MarkMap::default();
        let a = 11u64;
        let twin = (a + 1..).find(|&b| first_slot(b) == first_slot(a)).expect("a colliding block");
        m.insert(a, ());
        m.filter[first_slot(a)] = u8::MAX - 1; // as if 254 marks shared it
        m.insert(twin, ());
        assert_eq!(m.filter[first_slot(a)], u8::MAX);
        assert_eq!((m.remove(a), m.remove(twin)), (Some(()), Some(())));
        assert_eq!(m.filter[first_slot(a)], u8::MAX, "a saturated counter is never decremented");
        assert!(m.is_empty());
        assert_eq!(m.remove(a), None);
    }
}
