//! Every size of a single CLOCK level in one pass: the counters the engine's CLOCK (one reference bit,
//! inserted clear: its default parameters) would count at each of up to 32 capacities, so that a batch of
//! CLOCK configs differing only in size shares its look-ups instead of running one simulation each
//! ([`super::family`]). CLOCK after F. J. Corbató, "A paging experiment with the Multics system" (MIT
//! Project MAC, 1968); the machine simulated is the engine's `policy/clock.rs`.
//!
//! CLOCK is not a stack algorithm and its contents depend on the hits, so each size keeps its own ring; what
//! the sizes share is the block: one entry per block holds a mask of the sizes where it is resident and a
//! mask of the sizes where its reference bit is set. A hit at every size where the block is resident is
//! then one `or` of the two masks, and only a miss at a size costs that size's work, its hand's sweep.
//!
//! A size's ring is an array of block numbers with the hand an index into it. It fills in insertion order
//! with the hand on the oldest frame; once full, a miss moves the hand past referenced frames (clearing
//! their bit) to the first clear one, whose block is evicted, and the new block takes that frame, the one
//! the hand has just left: the engine's ring, where a new block enters at the head, right behind the hand.
//!
//! The engine's order inside a request is kept: every block of a request is looked up first (its hits set
//! their bits), then its missed blocks are inserted in block order, each into every size where it missed.
//! A request longer than a size evicts its own blocks there, as the engine does, so every size of at least
//! one block is computed. Counters as in `super::size_counts`: `evictions` are insertions beyond the
//! capacity (once full, every insertion evicts one block).

use super::ring::{insert_each, Ring};
use super::size_counts::{SizeCounts, SizePass};
use super::times::{BlockTimes, EXACT_FLOOR};
use crate::request::Request;

/// Memory the pass may use (bytes of block entries and frames): beyond it the pass gives up and the engine
/// runs the configs.
const MAX_BYTES: usize = 1 << 30;

/// Capacities one pass computes at most: a block's entry keeps 32 bits per mask, so that it is 8 bytes and
/// more of the entries stay in the processor's caches than with 64.
pub const MAX_CLOCK_SIZES: usize = 32;

/// A block's state at every size (bit `j`: size `j`).
#[derive(Clone, Copy, Debug, Default)]
struct Bits {
    resident: u32,
    referenced: u32,
}

/// The engine's single-level CLOCK at up to [`MAX_CLOCK_SIZES`] capacities, in one pass.
#[derive(Debug)]
pub struct ClockSizes {
    /// One ring per size, in the order of the sizes.
    rings: Vec<Ring>,
    /// Dense number of each block seen, in order of first reference.
    ids: BlockTimes,
    /// Per dense number, the block's state.
    bits: Vec<Bits>,
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

impl ClockSizes {
    /// A pass for `sizes` (ascending, distinct, at least 1, at most [`MAX_CLOCK_SIZES`]); the first `warmup`
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
            bits: Vec::new(),
            frames: 0,
            counts: SizeCounts::new(sizes, MAX_CLOCK_SIZES, warmup),
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
        // Below `u32::MAX`: `add` gives up before MAX_BYTES of entries.
        let id = self.bits.len() as u32;
        self.ids.insert(block, id);
        self.bits.push(Bits::default());
        id
    }

    /// Bytes the pass holds after `more` new blocks and frames.
    fn bytes_with(&self, more: usize) -> usize {
        (self.bits.len() + more) * std::mem::size_of::<Bits>() + (self.frames + more * self.rings.len()) * 4
    }

    /// Stop computing (the memory bound was reached); every size is then `None`.
    #[cold]
    fn give_up(&mut self) {
        self.gave_up = true;
        self.ids = BlockTimes::new(0);
        self.bits = Vec::new();
        self.rings.iter_mut().for_each(Ring::release);
    }
}

impl SizePass for ClockSizes {
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
        // Look-ups against the state before the request (the engine looks every block up first); a hit
        // sets the reference bit at every size where the block is resident.
        self.masks.clear();
        self.ids_of_request.clear();
        for block in req.blocks() {
            let id = self.id_of(block);
            let b = &mut self.bits[id as usize];
            b.referenced |= b.resident;
            self.masks.push(u64::from(b.resident));
            self.ids_of_request.push(id);
        }
        // Then its missed blocks are inserted, in block order, at every size where they missed.
        let all = self.counts.all();
        for (&mask, &id) in self.masks.iter().zip(&self.ids_of_request) {
            let missed = !mask & all;
            // Resident from now on at every size where it missed (set once: a per-size update of the same
            // word would chain each size's insertion to the last one's store).
            self.bits[id as usize].resident |= missed as u32;
            self.frames += insert(&mut self.rings, &mut self.bits, missed, id);
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

/// Insert block `id` into the ring of every size of mask `missed` (the caller has set the block's
/// resident bits): into a free frame while a ring fills, else into the frame of the first unreferenced
/// block its hand reaches (clearing the bits it passes). The frames added.
#[inline]
fn insert(rings: &mut [Ring], bits: &mut [Bits], missed: u64, id: u32) -> usize {
    insert_each(rings, missed, id, |ring, j| {
        let bit = 1u32 << j;
        let mut hand = ring.hand;
        loop {
            let next = ring.after(hand);
            let v = &mut bits[ring.frames[hand] as usize];
            if v.referenced & bit == 0 {
                v.resident &= !bit;
                ring.frames[hand] = id;
                ring.hand = next;
                return;
            }
            v.referenced &= !bit;
            hand = next;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::size_counts::testing::{after_new_blocks, check_against_direct, skewed_blocks};
    use super::ClockSizes;

    /// A direct CLOCK of `c` frames over one-block requests, written as the textbook's FIFO with second
    /// chances: (hits, evictions).
    fn direct(blocks: &[u64], c: usize) -> (u64, u64) {
        let mut queue: std::collections::VecDeque<(u64, bool)> = std::collections::VecDeque::new();
        let (mut hits, mut evictions) = (0, 0);
        for &b in blocks {
            if let Some(e) = queue.iter_mut().find(|e| e.0 == b) {
                e.1 = true;
                hits += 1;
                continue;
            }
            if queue.len() == c {
                loop {
                    let (v, r) = queue.pop_front().unwrap();
                    if r {
                        queue.push_back((v, false));
                    } else {
                        break;
                    }
                }
                evictions += 1;
            }
            queue.push_back((b, false));
        }
        (hits, evictions)
    }

    #[test]
    fn one_block_requests_match_a_direct_clock_at_every_size() {
        let blocks = skewed_blocks(987_654_321, 6_000, 500);
        check_against_direct(
            &mut ClockSizes::new(vec![1, 2, 3, 7, 20, 64, 150, 333, 499, 500, 1000], 0),
            &blocks,
            direct,
        );
    }

    #[test]
    fn past_its_memory_bound_the_pass_computes_nothing() {
        // At most 16 bytes of entries and frames per new block at 2 sizes: 100 blocks fit in 2,000 bytes,
        // 200 do not.
        let run = |blocks: u64| {
            let mut pass = ClockSizes::new(vec![10, 1000], 0);
            pass.max_bytes = 2_000;
            after_new_blocks(&mut pass, blocks)
        };
        assert!(run(100).iter().all(Option::is_some));
        assert!(run(200).iter().all(Option::is_none));
    }
}
