//! The last-access time of each tracked block, for the stack-distance counter ([`super::stack`]).
//!
//! Blocks are kept in aligned chunks of [`CHUNK`] consecutive block numbers, one hash-map entry per chunk:
//! the blocks of a multi-block request and of a sequential run share an entry, so they cost one hash probe
//! and one cache miss instead of one each (the map is far larger than the processor's caches for
//! footprints of hundreds of thousands of blocks, and its probes were the curve's largest cost).

use hashbrown::HashMap;

/// Consecutive block numbers per map entry.
const CHUNK: usize = 8;
/// A slot of no tracked block.
const NONE: u32 = u32::MAX;

/// Block number -> last-access time (a `u32` below `u32::MAX`).
#[derive(Debug)]
pub struct BlockTimes {
    chunks: HashMap<u64, [u32; CHUNK], foldhash::fast::FixedState>,
    len: usize,
}

impl Default for BlockTimes {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockTimes {
    /// No block.
    #[must_use]
    pub fn new() -> Self {
        Self { chunks: HashMap::with_hasher(foldhash::fast::FixedState::default()), len: 0 }
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
        debug_assert!(t != NONE);
        let slot = &mut self.chunks.entry(block / CHUNK as u64).or_insert([NONE; CHUNK])[block as usize % CHUNK];
        let prev = std::mem::replace(slot, t);
        if prev == NONE {
            self.len += 1;
            None
        } else {
            Some(prev)
        }
    }

    /// Stop tracking `block`; its time, if it was tracked.
    pub fn remove(&mut self, block: u64) -> Option<u32> {
        let key = block / CHUNK as u64;
        let chunk = self.chunks.get_mut(&key)?;
        let prev = std::mem::replace(&mut chunk[block as usize % CHUNK], NONE);
        if chunk.iter().all(|t| *t == NONE) {
            self.chunks.remove(&key);
        }
        if prev == NONE {
            None
        } else {
            self.len -= 1;
            Some(prev)
        }
    }

    /// Replace every tracked time `t` by `f(t)` (below `u32::MAX`).
    pub fn renumber(&mut self, mut f: impl FnMut(u32) -> u32) {
        for chunk in self.chunks.values_mut() {
            for t in chunk.iter_mut().filter(|t| **t != NONE) {
                *t = f(*t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BlockTimes;

    #[test]
    fn behaves_as_a_map() {
        let mut m = BlockTimes::new();
        let mut plain = std::collections::HashMap::new();
        let mut x = 7u64;
        for t in 0..5000u32 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let b = (x >> 40) % 300;
            if x % 5 == 0 {
                assert_eq!(m.remove(b), plain.remove(&b));
            } else {
                assert_eq!(m.insert(b, t), plain.insert(b, t));
            }
            assert_eq!(m.len(), plain.len());
        }
        m.renumber(|t| t / 2);
        for (b, t) in &plain {
            assert_eq!(m.insert(*b, 0), Some(t / 2));
        }
    }
}
