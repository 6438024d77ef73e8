//! The last-access time of each tracked block, for the stack-distance counter ([`super::stack`]).
//!
//! Block numbers below a bound live in a flat array indexed by block number (no hashing; one cache miss
//! at most): most traces number their blocks densely from near 0 (CloudPhysics w106: 1.2 M numbers for
//! 275 K distinct blocks). The bound grows with the numbers seen, up to a floor of numbers the caller
//! chooses or `DENSE_PER_TRACKED` per tracked block, whichever is more, so the array costs at most a few
//! times the memory of the blocks it holds. The exact curve takes a high floor ([`EXACT_FLOOR`]: the
//! array covers the numbers from the start, no moves from the map); a sparse sample (SHARDS tracks ~1% of
//! the blocks) a low one ([`SAMPLE_FLOOR`]), so it stays in the map rather than touching a fresh page of
//! the array for each sampled block. Numbers above the bound go to a hash map of aligned chunks of `CHUNK`
//! consecutive numbers, one entry per chunk, so a multi-block request or a sequential run costs one probe.

use hashbrown::HashMap;

/// Consecutive block numbers per map entry.
const CHUNK: usize = 8;
/// Block numbers the flat array may always cover when every block is tracked (16 MiB of `u32`).
pub const EXACT_FLOOR: usize = 1 << 22;
/// Block numbers the flat array may always cover for a sample of the blocks (256 KiB of `u32`).
pub const SAMPLE_FLOOR: usize = 1 << 16;
/// Block numbers the flat array may cover per tracked block, above [`DENSE_FLOOR`].
const DENSE_PER_TRACKED: usize = 16;

/// Block number -> last-access time (a `u32` below `u32::MAX`). Slots hold the time plus one, 0 for no
/// tracked block, so a fresh array is zeroed memory the system maps lazily.
#[derive(Debug)]
pub struct BlockTimes {
    dense: Vec<u32>,
    floor: usize,
    chunks: HashMap<u64, [u32; CHUNK], foldhash::fast::FixedState>,
    len: usize,
}

impl BlockTimes {
    /// No block; the flat array may cover `floor` block numbers whatever the number tracked.
    #[must_use]
    pub fn new(floor: usize) -> Self {
        Self { dense: Vec::new(), floor, chunks: HashMap::with_hasher(foldhash::fast::FixedState::default()), len: 0 }
    }

    /// Blocks tracked.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No block tracked.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set the time of `block` to `t` (below `u32::MAX`); its previous time, if it was tracked.
    #[inline]
    pub fn insert(&mut self, block: u64, t: u32) -> Option<u32> {
        debug_assert!(t != u32::MAX);
        if block >= self.dense.len() as u64 {
            self.grow(block);
        }
        let slot = match self.dense.get_mut(block as usize) {
            Some(slot) => slot,
            None => &mut self.chunks.entry(block / CHUNK as u64).or_insert([0; CHUNK])[block as usize % CHUNK],
        };
        let prev = std::mem::replace(slot, t + 1);
        if prev == 0 {
            self.len += 1;
            None
        } else {
            Some(prev - 1)
        }
    }

    /// The time of `block`, if it is tracked.
    #[inline]
    #[must_use]
    pub fn get(&self, block: u64) -> Option<u32> {
        let slot = match self.dense.get(usize::try_from(block).unwrap_or(usize::MAX)) {
            Some(&slot) => slot,
            None => self.chunks.get(&(block / CHUNK as u64)).map_or(0, |c| c[block as usize % CHUNK]),
        };
        slot.checked_sub(1)
    }

    /// Read the array's slot of `block`, if it has one, so that its cache line is on its way by the time
    /// [`Self::insert`] needs it (a plain load, kept by [`std::hint::black_box`]; the crate has no unsafe
    /// prefetch instruction).
    #[inline]
    pub fn touch(&self, block: u64) {
        if let Some(slot) = self.dense.get(usize::try_from(block).unwrap_or(usize::MAX)) {
            std::hint::black_box(*slot);
        }
    }

    /// Stop tracking `block`; its time, if it was tracked.
    pub fn remove(&mut self, block: u64) -> Option<u32> {
        let prev = if let Some(slot) = self.dense.get_mut(usize::try_from(block).unwrap_or(usize::MAX)) {
            std::mem::take(slot)
        } else {
            let key = block / CHUNK as u64;
            let chunk = self.chunks.get_mut(&key)?;
            let prev = std::mem::take(&mut chunk[block as usize % CHUNK]);
            if chunk.iter().all(|t| *t == 0) {
                self.chunks.remove(&key);
            }
            prev
        };
        if prev == 0 {
            None
        } else {
            self.len -= 1;
            Some(prev - 1)
        }
    }

    /// Replace every tracked time `t` by `f(t)` (below `u32::MAX`).
    pub fn renumber(&mut self, mut f: impl FnMut(u32) -> u32) {
        // The flat array is mostly empty slots (it covers every number below its bound): skip eight at
        // a time.
        let mut f = |slots: &mut [u32]| {
            if slots.iter().fold(0, |acc, t| acc | t) != 0 {
                for t in slots.iter_mut().filter(|t| **t != 0) {
                    *t = f(*t - 1) + 1;
                }
            }
        };
        self.dense.chunks_mut(CHUNK).for_each(&mut f);
        self.chunks.values_mut().for_each(|c| f(c));
    }

    /// Cover `block` by the flat array if the bound allows it (doubling it, so growth costs O(1) per
    /// number), moving the map's chunks that fall below the new bound into it.
    #[cold]
    fn grow(&mut self, block: u64) {
        let cap = self.floor.max(DENSE_PER_TRACKED * (self.len + 1)).next_multiple_of(CHUNK);
        let Some(need) = block.checked_add(1).and_then(|n| usize::try_from(n).ok()) else { return };
        if need > cap {
            return;
        }
        let new_len = need.next_power_of_two().max(2 * self.dense.len()).max(1024).min(cap);
        let mut dense = vec![0u32; new_len];
        dense[..self.dense.len()].copy_from_slice(&self.dense);
        let bound = (new_len / CHUNK) as u64;
        self.chunks.retain(|key, chunk| {
            if *key >= bound {
                return true;
            }
            let at = *key as usize * CHUNK;
            dense[at..at + CHUNK].copy_from_slice(chunk);
            false
        });
        self.dense = dense;
    }
}

#[cfg(test)]
mod tests {
    use super::{BlockTimes, EXACT_FLOOR, SAMPLE_FLOOR};

    /// Random inserts and removes, with block numbers both in the flat array and above its bound (so the
    /// map and the moves from it into a growing array are exercised), behave as a plain map.
    #[test]
    fn behaves_as_a_map() {
        for (floor, spread) in
            [(SAMPLE_FLOOR, 300u64), (SAMPLE_FLOOR, 4 << 20), (EXACT_FLOOR, 4 << 22), (SAMPLE_FLOOR, u64::MAX)]
        {
            let mut m = BlockTimes::new(floor);
            let mut plain = std::collections::HashMap::new();
            let mut x = 7u64;
            for t in 0..20_000u32 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                // Half the numbers small (dense), half over the spread (sparse, above the bound).
                let b = if x % 2 == 0 { (x >> 40) % 3000 } else { (x >> 20) % spread };
                assert_eq!(m.get(b), plain.get(&b).copied());
                if x % 5 == 0 {
                    assert_eq!(m.remove(b), plain.remove(&b));
                } else {
                    assert_eq!(m.insert(b, t), plain.insert(b, t));
                }
                assert_eq!(m.len(), plain.len());
            }
            m.renumber(|t| t / 2);
            for (b, t) in &plain {
                assert_eq!(m.insert(*b, 0), Some(t / 2), "spread {spread} block {b}");
            }
        }
    }

    /// Blocks first held by the map move into the array when it grows over them.
    #[test]
    fn map_chunks_move_into_a_growing_array() {
        let mut m = BlockTimes::new(SAMPLE_FLOOR);
        let far = SAMPLE_FLOOR as u64 + 5;
        assert_eq!(m.insert(far, 3), None);
        assert_eq!(m.insert(1, 1), None);
        // Enough tracked blocks that the bound passes `far`.
        for b in 0..(SAMPLE_FLOOR as u64 / 16 + 10) {
            m.insert(10 + b, 2);
        }
        assert_eq!(m.insert(far + 8, 4), None);
        assert!(m.dense.len() as u64 > far, "the array covers {far}");
        assert_eq!(m.insert(far, 5), Some(3));
        assert_eq!(m.remove(far), Some(5));
        assert_eq!(m.remove(far), None);
    }
}
