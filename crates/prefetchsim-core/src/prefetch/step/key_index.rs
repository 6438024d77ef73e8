//! The index of STEP's prefetching contexts by key (the block a PC expects next, [`super::context`]).
//!
//! Every request searches it by exact key (one or two look-ups) and most requests move a PC to a new key;
//! only the `prefetched` match window asks for the nearest key below a block. A `BTreeMap` answers all of
//! it but costs a tree walk of cache misses per search (measured: a quarter of STEP's time on ARC P6), so
//! the exact searches go to a hash map, and the ordered tree is kept beside it only when the nearest-below
//! search is needed.

use std::collections::BTreeMap;

use crate::policy::table::{block_map, BlockMap};

/// Key → PC slot, with the keys also in order when `ordered`.
#[derive(Debug)]
pub struct KeyIndex {
    hash: BlockMap<u32>,
    tree: Option<BTreeMap<u64, u32>>,
}

impl Default for KeyIndex {
    /// An ordered index (every search available).
    fn default() -> Self {
        Self::new(true)
    }
}

impl KeyIndex {
    /// An empty index; `ordered`: [`KeyIndex::below`] will be asked.
    #[must_use]
    pub fn new(ordered: bool) -> Self {
        Self { hash: block_map(0), tree: ordered.then(BTreeMap::new) }
    }

    /// Keys held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.hash.len()
    }

    /// No key held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.hash.is_empty()
    }

    /// The PC under `key`.
    #[inline]
    #[must_use]
    pub fn get(&self, key: u64) -> Option<u32> {
        self.hash.get(&key).copied()
    }

    /// Put `id` under `key`; returns the PC that held it.
    #[inline]
    pub fn insert(&mut self, key: u64, id: u32) -> Option<u32> {
        if let Some(t) = &mut self.tree {
            t.insert(key, id);
        }
        self.hash.insert(key, id)
    }

    /// Remove `key`.
    #[inline]
    pub fn remove(&mut self, key: u64) {
        if let Some(t) = &mut self.tree {
            t.remove(&key);
        }
        self.hash.remove(&key);
    }

    /// The PC under the greatest key below `s`.
    ///
    /// # Panics
    /// If the index was made without order (a bug: [`KeyIndex::new`] must be told).
    #[must_use]
    pub fn below(&self, s: u64) -> Option<u32> {
        let tree = self.tree.as_ref().expect("KeyIndex::below on an index made without order");
        tree.range(..s).next_back().map(|(_, &id)| id)
    }

    /// `(key, id)` pairs in key order (tests and checks).
    #[must_use]
    pub fn in_order(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self.hash.iter().map(|(&k, &id)| (k, id)).collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The answers of a `BTreeMap` (the structure it replaces), ordered or not, for any sequence of
        /// insertions, removals and searches.
        #[test]
        fn answers_as_a_btree_map(
            ops in prop::collection::vec((0u8..4, 0u64..64, 0u32..1000), 0..400),
        ) {
            let mut reference: BTreeMap<u64, u32> = BTreeMap::new();
            let mut ordered = KeyIndex::new(true);
            let mut hashed = KeyIndex::new(false);
            for (op, key, id) in ops {
                match op {
                    0 => {
                        let want = reference.insert(key, id);
                        prop_assert_eq!(ordered.insert(key, id), want);
                        prop_assert_eq!(hashed.insert(key, id), want);
                    }
                    1 => {
                        reference.remove(&key);
                        ordered.remove(key);
                        hashed.remove(key);
                    }
                    2 => {
                        let want = reference.range(..key).next_back().map(|(_, &v)| v);
                        prop_assert_eq!(ordered.below(key), want);
                    }
                    _ => {
                        let want = reference.get(&key).copied();
                        prop_assert_eq!(ordered.get(key), want);
                        prop_assert_eq!(hashed.get(key), want);
                    }
                }
                prop_assert_eq!(hashed.len(), reference.len());
            }
            let want: Vec<(u64, u32)> = reference.into_iter().collect();
            prop_assert_eq!(ordered.in_order(), want.clone());
            prop_assert_eq!(hashed.in_order(), want);
        }
    }
}
