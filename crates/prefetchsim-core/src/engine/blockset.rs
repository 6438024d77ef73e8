//! An exact set of block numbers for footprint counting, at about one bit per block for the dense low
//! range block traces use, instead of the ~10-20 bytes per block of a hash set.
//!
//! Block addresses of real traces lie on a disk of bounded size, so the unique blocks of a trace are
//! mostly a dense part of `0..disk_blocks`: a bitmap over that range costs `disk_blocks / 8` bytes whatever
//! the footprint. Object ids of key-value traces (hashed 64-bit keys) are sparse; a bitmap over them would
//! be absurd. So the set keeps a bitmap over `0..bits` and a hash set for the blocks at or above `bits`,
//! and the bitmap grows (doubling) to cover a new block only while it stays within `BITS_PER_BLOCK` bits
//! per block counted so far (or `MIN_BITS`): it never costs much more than the hash set it replaces,
//! and on a dense trace it costs 1/100 of it. Growing moves the hashed blocks below the new bound into the
//! bitmap, so every block is in exactly one of the two and the count stays exact. The hash set holds
//! 64-block words (a bit mask per word), so a long request far up the address space costs one hash
//! update per 64 blocks, not one per block ([`BlockSet::insert_range`]).

use crate::policy::table::{block_map, BlockMap};

/// Bits the bitmap may hold without any block counted (1 MiB).
const MIN_BITS: u64 = 1 << 23;
/// Bitmap bits allowed per block counted: 128 bits (16 bytes), about what a hash-set entry costs.
const BITS_PER_BLOCK: u64 = 128;
/// The largest bitmap, 2^33 bits (1 GiB): blocks beyond go to the hash set whatever the count.
const MAX_BITS: u64 = 1 << 33;

/// A set of `u64` block numbers (see the module documentation).
#[derive(Clone, Debug)]
pub struct BlockSet {
    bits: Vec<u64>,
    /// Words at or above the bitmap: word number (`block >> 6`) → mask of its blocks.
    high: BlockMap<u64>,
    len: u64,
}

impl Default for BlockSet {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self { bits: Vec::new(), high: block_map(0), len: 0 }
    }

    /// Distinct blocks inserted.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// No block inserted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held by the bitmap and the hash set (for the memory notes; approximate for the hash set).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.bits.capacity() * 8 + self.high.capacity() * 17
    }

    /// Insert `block`; true when it was not there.
    #[inline]
    pub fn insert(&mut self, block: u64) -> bool {
        self.insert_range(block, block) == 1
    }

    /// Insert blocks `first ..= last` (`first <= last`); returns how many were not there. Costs one word
    /// update per 64 blocks.
    pub fn insert_range(&mut self, first: u64, last: u64) -> u64 {
        debug_assert!(first <= last);
        if last >= self.bits.len() as u64 * 64 {
            self.grow_to(last);
        }
        let words = self.bits.len() as u64;
        let mut new = 0u64;
        for w in first >> 6..=last >> 6 {
            let lo = if w == first >> 6 { first & 63 } else { 0 };
            let hi = if w == last >> 6 { last & 63 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            let word = if w < words { &mut self.bits[w as usize] } else { self.high.entry(w).or_insert(0) };
            new += u64::from((mask & !*word).count_ones());
            *word |= mask;
        }
        self.len += new;
        new
    }

    /// Whether `block` is in the set.
    #[must_use]
    pub fn contains(&self, block: u64) -> bool {
        match self.bits.get((block >> 6) as usize) {
            Some(w) => w & (1 << (block & 63)) != 0,
            None => self.high.get(&(block >> 6)).is_some_and(|w| w & (1 << (block & 63)) != 0),
        }
    }

    /// Grow the bitmap to cover `block` if the budget allows; moves hashed words below the new bound.
    #[cold]
    fn grow_to(&mut self, block: u64) {
        let budget = (self.len.saturating_add(1).saturating_mul(BITS_PER_BLOCK)).clamp(MIN_BITS, MAX_BITS);
        if block >= budget {
            return;
        }
        let covered = self.bits.len() as u64 * 64;
        let bits = (block + 1).next_power_of_two().max(covered * 2).max(1 << 12).min(budget);
        self.bits.resize(bits.div_ceil(64) as usize, 0);
        let words = self.bits.len() as u64;
        let bitmap = &mut self.bits;
        self.high.retain(|&w, mask| {
            if w < words {
                bitmap[w as usize] |= *mask;
                false
            } else {
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_exactly_across_the_bitmap_and_the_hash_set() {
        let mut s = BlockSet::new();
        // A sparse high id first: hashed. Then dense low blocks: the bitmap.
        assert!(s.insert(u64::MAX));
        assert!(s.insert(1 << 40));
        for b in 0..100_000u64 {
            assert!(s.insert(b * 3));
        }
        assert!(!s.insert(300) && !s.insert(u64::MAX));
        assert_eq!(s.len(), 100_002);
        assert!(s.contains(299_997) && !s.contains(299_998) && s.contains(1 << 40));
        assert!(s.heap_bytes() < 1 << 21, "dense blocks cost about a bit each: {}", s.heap_bytes());
    }

    #[test]
    fn a_long_range_far_up_is_hashed_by_64_block_words() {
        // An 8 GiB request of 4 KiB blocks past any bitmap (a malformed or huge record; found by fuzzing,
        // where a hash update per block made one record take seconds): 2^21 blocks in 2^15 words.
        let mut s = BlockSet::new();
        let first = (1 << 40) + 5;
        assert_eq!(s.insert_range(first, first + (1 << 21) - 1), 1 << 21);
        assert_eq!(s.insert_range(first - 5, first + 10), 5, "the overlap is counted once");
        assert_eq!(s.len(), (1 << 21) + 5);
        assert!(s.contains(first - 1) && s.contains(first + (1 << 21) - 1) && !s.contains(first + (1 << 21)));
        assert!(s.heap_bytes() < 1 << 21, "a word per 64 blocks: {} bytes", s.heap_bytes());
    }

    #[test]
    fn hashed_blocks_move_into_a_growing_bitmap_without_double_counting() {
        let mut s = BlockSet::new();
        // 2^24 is beyond the first budget (2^23 bits with one block counted): hashed.
        assert!(s.insert(1 << 24));
        for b in 0..200_000u64 {
            s.insert(b);
        }
        // 200,001 blocks allow 2^24 + bits: the next high block grows the bitmap over 2^24.
        assert!(s.insert((1 << 24) + 1));
        assert!(!s.insert(1 << 24), "moved into the bitmap, still counted once");
        assert_eq!(s.len(), 200_002);
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_a_hash_set(blocks in proptest::collection::vec(
            proptest::prop_oneof![0u64..5000, 0u64..(1 << 26), proptest::prelude::any::<u64>()], 0..2000)) {
            let mut s = BlockSet::new();
            let mut h = std::collections::HashSet::new();
            for b in blocks {
                proptest::prop_assert_eq!(s.insert(b), h.insert(b));
            }
            proptest::prop_assert_eq!(s.len(), h.len() as u64);
            for b in &h {
                proptest::prop_assert!(s.contains(*b));
            }
        }

        #[test]
        fn ranges_agree_with_a_hash_set(ranges in proptest::collection::vec(
            (proptest::prop_oneof![0u64..5000, 0u64..(1 << 26), (u64::MAX - 5000)..u64::MAX], 1u64..300), 0..300)) {
            let mut s = BlockSet::new();
            let mut h = std::collections::HashSet::new();
            for (first, len) in ranges {
                let last = first.saturating_add(len - 1);
                let fresh = (first..=last).filter(|b| h.insert(*b)).count() as u64;
                proptest::prop_assert_eq!(s.insert_range(first, last), fresh);
            }
            proptest::prop_assert_eq!(s.len(), h.len() as u64);
            for b in &h {
                proptest::prop_assert!(s.contains(*b));
                for n in [b.wrapping_add(1), b.wrapping_sub(1)] {
                    proptest::prop_assert_eq!(s.contains(n), h.contains(&n));
                }
            }
        }
    }
}
