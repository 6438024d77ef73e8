//! PFC's bypass and readmore queues: block numbers only, no data, LRU (Zhang, Lee, Ma, Zhou, "PFC:
//! Transparent Optimization of Existing Prefetching Strategies for Multi-level Storage Systems", ICDCS
//! 2008, §3.2: "the least recently inserted or re-accessed blocks are evicted when the queue is full").
//!
//! A hash map from block to its last-use stamp plus a FIFO of (block, stamp) with lazy deletion: a
//! refresh pushes a new pair and the stale one is skipped when it reaches the front. O(1) amortised.

use std::collections::VecDeque;

use crate::policy::table::{block_map, BlockMap};

/// An LRU set of block numbers of bounded size.
#[derive(Debug, Clone)]
pub struct BlockQueue {
    cap: usize,
    /// Whether a look-up hit or a re-insert moves the block to MRU (pfc.md `touch_refreshes`).
    touch: bool,
    stamp: u64,
    map: BlockMap<u64>,
    order: VecDeque<(u64, u64)>,
}

impl BlockQueue {
    /// An empty queue of at most `cap` blocks (0: it stays empty).
    #[must_use]
    pub fn new(cap: usize, touch: bool) -> Self {
        Self { cap, touch, stamp: 0, map: block_map(cap.min(1 << 16)), order: VecDeque::new() }
    }

    /// Blocks held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No block held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether `block` is held, without refreshing it.
    #[must_use]
    pub fn peek(&self, block: u64) -> bool {
        self.map.contains_key(&block)
    }

    /// Whether `block` is held; a hit refreshes it when `touch` is on ("re-accessed").
    pub fn lookup(&mut self, block: u64) -> bool {
        if !self.map.contains_key(&block) {
            return false;
        }
        if self.touch {
            self.refresh(block);
        }
        true
    }

    fn refresh(&mut self, block: u64) {
        self.stamp += 1;
        self.map.insert(block, self.stamp);
        self.order.push_back((block, self.stamp));
        self.compact();
    }

    /// Insert `block` if absent (evicting the least recent block when full); a present block is
    /// refreshed when `touch` is on.
    pub fn insert(&mut self, block: u64) {
        if self.cap == 0 {
            return;
        }
        if self.map.contains_key(&block) {
            if self.touch {
                self.refresh(block);
            }
            return;
        }
        while self.map.len() >= self.cap {
            let Some((b, st)) = self.order.pop_front() else { break };
            if self.map.get(&b) == Some(&st) {
                self.map.remove(&b);
            }
        }
        self.refresh(block);
    }

    /// Insert the blocks `first ..= last` in order (nothing when `first > last`).
    pub fn insert_range(&mut self, first: u64, last: u64) {
        let mut b = first;
        while b <= last {
            self.insert(b);
            match b.checked_add(1) {
                Some(n) => b = n,
                None => break,
            }
        }
    }

    /// Drop stale pairs when they outnumber the live ones.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order.retain(|(b, st)| map.get(b) == Some(st));
        }
    }

    /// Held blocks from least to most recent (tests).
    #[must_use]
    pub fn blocks_lru_first(&self) -> Vec<u64> {
        self.order.iter().filter(|(b, st)| self.map.get(b) == Some(st)).map(|&(b, _)| b).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recent_and_refreshes_on_touch() {
        let mut q = BlockQueue::new(3, true);
        q.insert_range(1, 3);
        assert!(q.lookup(1));
        q.insert(4);
        assert_eq!(q.blocks_lru_first(), vec![3, 1, 4]);
        let mut q = BlockQueue::new(3, false);
        q.insert_range(1, 3);
        assert!(q.lookup(1));
        q.insert(4);
        assert_eq!(q.blocks_lru_first(), vec![2, 3, 4]);
        for b in 0..1000 {
            q.insert(b % 7);
        }
        assert_eq!(q.len(), 3);
        assert!(q.order.len() <= 2 * 3 + 65);
    }
}
