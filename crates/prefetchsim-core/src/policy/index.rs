//! The block → slot index of a block table: a direct array while block numbers stay small, a hash
//! table of slots beyond.
//!
//! Block traces name blocks by their address on a disk of bounded size, so for most traces a plain
//! array indexed by block number is the cheapest index there is: no hashing, no probing, one load per
//! lookup. It grows (doubling) as larger block numbers appear, up to a budget of 256 entries per cached
//! block (1 KiB of index per block of cache; at least 2^12 and at most 2^24 entries). The floor was 2^20
//! (4 MiB a table whatever its size): a per-client level of 800 four-block caches took 4.3 GiB and 10,000
//! of them were killed for lack of memory; at 2^12 small caches on P6, P12, OLTP and w106 ran as fast.
//! The first block number past the budget switches the index, once, to a hash table of 4-byte slot
//! numbers whose keys live in the entry arena (object ids of key-value traces, sparse volumes).

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::entry::{BlockHasher, Entry, Slot};

/// Smallest and largest direct-array budgets, in entries.
const DENSE_MIN: usize = 1 << 12;
const DENSE_MAX: usize = 1 << 24;
/// Direct-array entries allowed per block of cache capacity.
const DENSE_PER_BLOCK: usize = 256;

#[derive(Debug)]
enum Map {
    /// `slots[block]` = slot + 1, or 0 when absent.
    Dense(Vec<u32>),
    /// Slots keyed by their entry's block.
    Hash(HashTable<Slot>),
}

/// Maps resident blocks to their slots.
#[derive(Debug)]
pub(crate) struct SlotIndex {
    map: Map,
    budget: usize,
    hasher: BlockHasher,
    capacity: usize,
}

impl SlotIndex {
    /// An empty index for a table of `capacity` blocks.
    pub(crate) fn new(capacity: usize) -> Self {
        let budget = capacity.saturating_mul(DENSE_PER_BLOCK).clamp(DENSE_MIN, DENSE_MAX);
        Self { map: Map::Dense(Vec::new()), budget, hasher: BlockHasher::with_seed(0x5eed_b10c), capacity }
    }

    /// The slot of `block`, if resident.
    #[inline]
    pub(crate) fn get(&self, block: u64, entries: &[Entry]) -> Option<Slot> {
        match &self.map {
            Map::Dense(v) => match usize::try_from(block).ok().and_then(|b| v.get(b)) {
                Some(&s) if s != 0 => Some(s - 1),
                _ => None,
            },
            Map::Hash(t) => t.find(self.hasher.hash_one(block), |&s| entries[s as usize].block == block).copied(),
        }
    }

    /// Record that `block` (absent) now lives in `slot`; `entries[slot]` already holds it.
    #[inline(always)]
    pub(crate) fn insert(&mut self, block: u64, slot: Slot, entries: &[Entry]) {
        match &mut self.map {
            Map::Dense(v) => match usize::try_from(block).ok().and_then(|b| v.get_mut(b)) {
                Some(s) => *s = slot + 1,
                None => self.insert_past_array(block, slot, entries),
            },
            Map::Hash(t) => {
                let h = &self.hasher;
                t.insert_unique(h.hash_one(block), slot, |&s| h.hash_one(entries[s as usize].block));
            }
        }
    }

    /// [`SlotIndex::insert`] of a block past the direct array's end: grow the array up to the budget, or
    /// switch to hashing.
    #[cold]
    #[inline(never)]
    fn insert_past_array(&mut self, block: u64, slot: Slot, entries: &[Entry]) {
        if let Map::Dense(v) = &mut self.map {
            if let Ok(b) = usize::try_from(block) {
                if b < self.budget {
                    let n = (b + 1).max(v.len() * 2).min(self.budget);
                    v.resize(n, 0);
                    v[b] = slot + 1;
                    return;
                }
            }
            self.switch_to_hash(entries);
        }
        if let Map::Hash(t) = &mut self.map {
            let h = &self.hasher;
            t.insert_unique(h.hash_one(block), slot, |&s| h.hash_one(entries[s as usize].block));
        }
    }

    /// Forget `block`, which lives in `slot`.
    #[inline(always)]
    pub(crate) fn remove(&mut self, block: u64, slot: Slot) {
        match &mut self.map {
            Map::Dense(v) => {
                if let Some(s) = usize::try_from(block).ok().and_then(|b| v.get_mut(b)) {
                    *s = 0;
                }
            }
            Map::Hash(t) => {
                if let Ok(e) = t.find_entry(self.hasher.hash_one(block), |&s| s == slot) {
                    e.remove();
                }
            }
        }
    }

    /// Switch to the hash table, carrying over every resident block.
    #[cold]
    fn switch_to_hash(&mut self, entries: &[Entry]) {
        let mut t = HashTable::with_capacity(self.capacity);
        if let Map::Dense(v) = &self.map {
            let h = &self.hasher;
            for (b, &s) in v.iter().enumerate() {
                if s != 0 {
                    t.insert_unique(h.hash_one(b as u64), s - 1, |&x| h.hash_one(entries[x as usize].block));
                }
            }
        }
        self.map = Map::Hash(t);
    }

    /// Whether the index has switched to hashing (tests).
    #[cfg(test)]
    pub(crate) fn is_hashed(&self) -> bool {
        matches!(self.map, Map::Hash(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(block: u64) -> Entry {
        Entry { block, ..Entry::default() }
    }

    #[test]
    fn small_block_numbers_use_the_array_and_large_ones_switch_to_hashing_keeping_every_block() {
        let mut entries = vec![entry(5), entry(70_000)];
        let mut ix = SlotIndex::new(1000);
        ix.insert(5, 0, &entries);
        ix.insert(70_000, 1, &entries);
        assert!(!ix.is_hashed());
        assert_eq!((ix.get(5, &entries), ix.get(70_000, &entries), ix.get(6, &entries)), (Some(0), Some(1), None));
        entries.push(entry(u64::MAX - 1));
        ix.insert(u64::MAX - 1, 2, &entries);
        assert!(ix.is_hashed());
        assert_eq!(ix.get(5, &entries), Some(0));
        assert_eq!(ix.get(70_000, &entries), Some(1));
        assert_eq!(ix.get(u64::MAX - 1, &entries), Some(2));
        ix.remove(70_000, 1);
        assert_eq!(ix.get(70_000, &entries), None);
    }

    #[test]
    fn a_small_cache_keeps_a_small_array() {
        // 1 KiB of index per cached block: a 4-block cache hashes past block 4095 instead of growing
        // an array of 2^20 entries (4 MiB for each of a per-client level's caches).
        let mut entries = vec![entry(4095)];
        let mut ix = SlotIndex::new(4);
        ix.insert(4095, 0, &entries);
        assert!(!ix.is_hashed());
        entries.push(entry(4096));
        ix.insert(4096, 1, &entries);
        assert!(ix.is_hashed());
        assert_eq!((ix.get(4095, &entries), ix.get(4096, &entries)), (Some(0), Some(1)));
    }

    #[test]
    fn removal_clears_the_array_entry() {
        let entries = vec![entry(3)];
        let mut ix = SlotIndex::new(4);
        ix.insert(3, 0, &entries);
        ix.remove(3, 0);
        assert_eq!(ix.get(3, &entries), None);
        ix.remove(1 << 40, 0);
    }
}
