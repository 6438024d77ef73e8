//! Every size of a single FIFO level in one pass: the counters the engine's FIFO would count at each of up
//! to 64 capacities, so that a batch of FIFO configs differing only in size costs one pass instead of one
//! simulation each ([`super::family`]).
//!
//! FIFO is not a stack algorithm (Belady's anomaly), so there is no distance that serves every size; but
//! its contents are simple to state. A FIFO cache of `c` blocks that admits every missed block holds
//! exactly the blocks of its last `c` insertions: a hit moves nothing, every insertion into a full cache
//! evicts the oldest one, and a block cannot be inserted twice within `c` insertions (it would still be
//! resident, hence a hit). So a block inserted as the `n`-th insertion of size `c` (counting from 1) is
//! resident while that size has made fewer than `n + c` insertions. The pass keeps, per block and size, the
//! number of its last insertion (4 bytes), and per size the count of insertions: a look-up is one
//! comparison per size, with no eviction work at all.
//!
//! The engine's order inside a request is kept: every block of a request is looked up first, then its
//! missed blocks are inserted in block order (a request longer than the cache evicts its own first
//! blocks, which this model counts alike, so every size of at least one block is computed). Counters that
//! follow: `hits`, `misses`, `demand_accesses`, `requests`; `fetches` (runs of consecutive missed blocks of
//! a request) and `fetched_blocks`; `evictions` = insertions beyond the capacity. With no prefetcher and
//! the instant engine every other counter is 0.

use super::lru_family::MAX_SIZES;
use super::size_counts::{SizeCounts, SizePass};
use super::times::{BlockTimes, EXACT_FLOOR};
use crate::request::Request;

/// Insertion numbers kept at most (4 bytes each): beyond this the pass gives up and the engine runs the
/// configs (1 GiB of numbers).
const MAX_STAMPS: usize = 1 << 28;

/// The engine's single-level FIFO at up to [`MAX_SIZES`] capacities, in one pass.
#[derive(Debug)]
pub struct FifoSizes {
    /// The capacities as `u32` (a larger one is never reached by `u32` insertion numbers).
    caps: Vec<u32>,
    /// Dense number of each block seen, in order of first reference (a flat array for small block
    /// numbers, as the exact curve keeps its times).
    ids: BlockTimes,
    /// `stamps[id * k + j]`: the number of the block's last insertion at size `j` (0: never inserted).
    stamps: Vec<u32>,
    /// Insertions made at each size.
    inserted: Vec<u32>,
    counts: SizeCounts,
    /// Insertion numbers the pass may hold ([`MAX_STAMPS`]; lower in tests).
    max_stamps: usize,
    /// The numbers outgrew `u32` or the memory bound: nothing is computed.
    gave_up: bool,
    /// Outcome masks and rows of the request being processed.
    masks: Vec<u64>,
    rows: Vec<usize>,
}

impl FifoSizes {
    /// A pass for `sizes` (ascending, distinct, at least 1, at most [`MAX_SIZES`]); the first `warmup`
    /// requests are not counted (the engine resets the counters after them).
    ///
    /// # Panics
    /// When `sizes` is empty, too long, not strictly ascending or starts at 0 (a caller's error).
    #[must_use]
    pub fn new(sizes: Vec<u64>, warmup: u64) -> Self {
        let k = sizes.len();
        Self {
            caps: sizes.iter().map(|&c| u32::try_from(c).unwrap_or(u32::MAX)).collect(),
            ids: BlockTimes::new(EXACT_FLOOR),
            stamps: Vec::new(),
            inserted: vec![0; k],
            counts: SizeCounts::new(sizes, MAX_SIZES, warmup),
            max_stamps: MAX_STAMPS,
            gave_up: false,
            masks: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Where the insertion numbers of `block` start, giving it a row when new.
    #[inline]
    fn row_of(&mut self, block: u64) -> usize {
        let k = self.caps.len();
        if let Some(id) = self.ids.get(block) {
            return id as usize * k;
        }
        let at = self.stamps.len();
        // Below `u32::MAX` ids: `add` gives up before MAX_STAMPS rows.
        self.ids.insert(block, (at / k) as u32);
        self.stamps.resize(at + k, 0);
        at
    }

    /// Stop computing (the memory bound or the `u32` numbers were reached); every size is then `None`.
    #[cold]
    fn give_up(&mut self) {
        self.gave_up = true;
        self.ids = BlockTimes::new(0);
        self.stamps = Vec::new();
    }
}

impl SizePass for FifoSizes {
    /// Account one request.
    fn add(&mut self, req: &Request) {
        let len = req.len;
        if len == 0 || self.gave_up {
            return;
        }
        let k = self.caps.len();
        let overflows = |n: &u32| u64::from(*n) + u64::from(len) >= u64::from(u32::MAX);
        if self.stamps.len() + len as usize * k > self.max_stamps || self.inserted.iter().any(overflows) {
            self.give_up();
            return;
        }
        // Look-ups against the state before the request (the engine looks every block up first). A block
        // inserted as number s at size j is resident while fewer than s + c_j insertions were made there,
        // i.e. n_j - s < c_j (s <= n_j always; s = 0: never inserted).
        self.masks.clear();
        self.rows.clear();
        for block in req.blocks() {
            let at = self.row_of(block);
            let row = &self.stamps[at..at + k];
            let mut mask = 0u64;
            for (j, ((&s, &n), &c)) in row.iter().zip(&self.inserted).zip(&self.caps).enumerate() {
                mask |= u64::from((s != 0) & (n - s < c)) << j;
            }
            self.masks.push(mask);
            self.rows.push(at);
        }
        // Then its missed blocks are inserted, in block order.
        for (&mask, &at) in self.masks.iter().zip(&self.rows) {
            for (j, (n, s)) in self.inserted.iter_mut().zip(&mut self.stamps[at..at + k]).enumerate() {
                let missed = (!mask >> j & 1) as u32;
                *n += missed;
                *s = if missed == 1 { *n } else { *s };
            }
        }
        self.counts.record(&self.masks);
    }

    fn counts(&self) -> &SizeCounts {
        &self.counts
    }

    fn computed(&self, _: u64) -> bool {
        !self.gave_up
    }
}

#[cfg(test)]
mod tests {
    use super::super::size_counts::testing::{after_new_blocks, check_against_direct, skewed_blocks};
    use super::FifoSizes;

    /// A direct FIFO of `c` blocks over one-block requests: (hits, evictions).
    fn direct(blocks: &[u64], c: usize) -> (u64, u64) {
        let mut queue = std::collections::VecDeque::new();
        let (mut hits, mut evictions) = (0, 0);
        for &b in blocks {
            if queue.contains(&b) {
                hits += 1;
                continue;
            }
            if queue.len() == c {
                queue.pop_front();
                evictions += 1;
            }
            queue.push_back(b);
        }
        (hits, evictions)
    }

    #[test]
    fn one_block_requests_match_a_direct_fifo_at_every_size() {
        let blocks = skewed_blocks(12_345, 5_000, 400);
        check_against_direct(&mut FifoSizes::new(vec![1, 2, 3, 7, 20, 64, 150, 399, 400, 1000], 0), &blocks, direct);
    }

    #[test]
    fn past_its_memory_bound_the_pass_computes_nothing() {
        // Two insertion numbers per block at 2 sizes: 100 blocks fit in 200, 101 do not.
        let run = |blocks: u64| {
            let mut pass = FifoSizes::new(vec![10, 1000], 0);
            pass.max_stamps = 200;
            after_new_blocks(&mut pass, blocks)
        };
        assert!(run(100).iter().all(Option::is_some));
        assert!(run(101).iter().all(Option::is_none));
    }
}
