//! Every size of a single FIFO level in one pass: the counters the engine's FIFO would count at each of up
//! to 64 capacities, so that a batch of FIFO configs differing only in size costs one pass instead of one
//! simulation each ([`super::family`]).
//!
//! FIFO is not a stack algorithm (Belady's anomaly), so there is no distance that serves every size, and
//! each size keeps its own queue; what the sizes share is the block. One word per block holds a mask of the
//! sizes where it is resident, so a look-up at every size is one load, and only a miss at a size costs that
//! size's work: its queue, a ring of dense block numbers whose oldest frame the new block takes, clearing the
//! evicted block's bit. A hit moves nothing. (The first version kept, per block and size, the number of
//! the block's last insertion and compared it with the size's insertion count, with no eviction work; but
//! 4 bytes per block and size for every block of the trace made it 4x one run on CloudPhysics w106, where
//! a run keeps state for the cached blocks only: docs/decode-once.md, "FIFO's state per block".)
//!
//! The engine's order inside a request is kept: every block of a request is looked up first, then its
//! missed blocks are inserted in block order (a request longer than the cache evicts its own first
//! blocks, which this model counts alike, so every size of at least one block is computed). Counters that
//! follow: `hits`, `misses`, `demand_accesses`, `requests`; `fetches` (runs of consecutive missed blocks of
//! a request) and `fetched_blocks`; `evictions` = insertions beyond the capacity. With no prefetcher and
//! the instant engine every other counter is 0.

use super::lru_family::MAX_SIZES;
use super::ring::{insert_each, Ring};
use super::size_counts::{SizeCounts, SizePass};
use super::times::{BlockTimes, EXACT_FLOOR};
use crate::request::Request;

/// Memory the pass may use (bytes of block masks and frames): beyond it the pass gives up and the engine
/// runs the configs.
const MAX_BYTES: usize = 1 << 30;

/// The engine's single-level FIFO at up to [`MAX_SIZES`] capacities, in one pass.
#[derive(Debug)]
pub struct FifoSizes {
    /// One ring per size, in the order of the sizes.
    rings: Vec<Ring>,
    /// Dense number of each block seen, in order of first reference (a flat array for small block
    /// numbers, as the exact curve keeps its times).
    ids: BlockTimes,
    /// Per dense number, the sizes where the block is resident (bit `j`: size `j`).
    resident: Vec<u64>,
    /// Frames of every ring together.
    frames: usize,
    counts: SizeCounts,
    /// Bytes the pass may hold ([`MAX_BYTES`]; lower in tests).
    max_bytes: usize,
    /// The memory bound was reached: nothing is computed.
    gave_up: bool,
    /// Outcome masks and dense numbers of the request being processed.
    masks: Vec<u64>,
    ids_of_request: Vec<u32>,
}

impl FifoSizes {
    /// A pass for `sizes` (ascending, distinct, at least 1, at most [`MAX_SIZES`]); the first `warmup`
    /// requests are not counted (the engine resets the counters after them).
    ///
    /// # Panics
    /// When `sizes` is empty, too long, not strictly ascending or starts at 0 (a caller's error).
    #[must_use]
    pub fn new(sizes: Vec<u64>, warmup: u64) -> Self {
        let rings = sizes.iter().map(|&c| Ring::new(c)).collect();
        Self {
            rings,
            ids: BlockTimes::new(EXACT_FLOOR),
            resident: Vec::new(),
            frames: 0,
            counts: SizeCounts::new(sizes, MAX_SIZES, warmup),
            max_bytes: MAX_BYTES,
            gave_up: false,
            masks: Vec::new(),
            ids_of_request: Vec::new(),
        }
    }

    /// The dense number of `block`, giving it one when new.
    #[inline]
    fn id_of(&mut self, block: u64) -> u32 {
        if let Some(id) = self.ids.get(block) {
            return id;
        }
        // Below `u32::MAX`: `add` gives up before MAX_BYTES of masks.
        let id = self.resident.len() as u32;
        self.ids.insert(block, id);
        self.resident.push(0);
        id
    }

    /// Bytes the pass holds after `more` new blocks and frames.
    fn bytes_with(&self, more: usize) -> usize {
        (self.resident.len() + more) * 8 + (self.frames + more * self.rings.len()) * 4
    }

    /// Stop computing (the memory bound was reached); every size is then `None`.
    #[cold]
    fn give_up(&mut self) {
        self.gave_up = true;
        self.ids = BlockTimes::new(0);
        self.resident = Vec::new();
        self.rings.iter_mut().for_each(Ring::release);
    }
}

impl SizePass for FifoSizes {
    /// Account one request.
    fn add(&mut self, req: &Request) {
        let len = req.len as usize;
        if len == 0 || self.gave_up {
            return;
        }
        if self.bytes_with(len) > self.max_bytes {
            self.give_up();
            return;
        }
        // Look-ups against the state before the request (the engine looks every block up first).
        self.masks.clear();
        self.ids_of_request.clear();
        for block in req.blocks() {
            let id = self.id_of(block);
            self.masks.push(self.resident[id as usize]);
            self.ids_of_request.push(id);
        }
        // Then its missed blocks are inserted, in block order, at every size where they missed.
        let all = self.counts.all();
        for (&mask, &id) in self.masks.iter().zip(&self.ids_of_request) {
            let missed = !mask & all;
            // Resident from now on at every size where it missed (set once: a per-size update of the same
            // word would chain each size's insertion to the last one's store).
            self.resident[id as usize] |= missed;
            self.frames += insert(&mut self.rings, &mut self.resident, missed, id);
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

/// Insert block `id` into the ring of every size of mask `missed` (the caller has set the block's bits):
/// into a free frame while a ring fills, else into its oldest frame, whose block is evicted. The frames
/// added.
#[inline]
fn insert(rings: &mut [Ring], resident: &mut [u64], missed: u64, id: u32) -> usize {
    insert_each(rings, missed, id, |ring, j| {
        let at = ring.hand;
        ring.hand = ring.after(at);
        resident[ring.frames[at] as usize] &= !(1u64 << j);
        ring.frames[at] = id;
    })
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
        // At most 16 bytes of masks and frames per new block at 2 sizes: 100 blocks fit in 2,000 bytes,
        // 200 do not.
        let run = |blocks: u64| {
            let mut pass = FifoSizes::new(vec![10, 1000], 0);
            pass.max_bytes = 2_000;
            after_new_blocks(&mut pass, blocks)
        };
        assert!(run(100).iter().all(Option::is_some));
        assert!(run(200).iter().all(Option::is_none));
    }
}
