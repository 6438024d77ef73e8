//! STEP's three PC queues: new, low-confidence and high-confidence, with promotion, demotion and
//! weighted round-robin purging.
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.1.1, §4.4 and §5: every PC is on one of
//! three lists kept in access-recency order; a new PC enters *new*; as its sequentiality and prefetch hit
//! ratio grow it is promoted to *high-confidence*; a high-confidence PC whose hit ratio drops below a
//! threshold is demoted to *low-confidence*; only PCs with a high hit ratio reach the high queue, so
//! streams that use the cache poorly are purged earlier. When the number of PCs reaches its bound, PCs
//! are purged in batches, least recently used first within a queue, by a weighted round robin that
//! favours new, then low, then high.
//!
//! The paper leaves the thresholds, the entry to *low*, the batch size and the weights open
//! (`shared/docs/algorithms/step.md`, ambiguity 1) \[ours\]: new to low on the first stride-one extension;
//! low to high at `high_min_len` blocks of sequence with a hit ratio of at least `promote_hr`; high to
//! low below `demote_hr`; a batch of `purge_batch` PCs taken in rounds of `purge_weights` = (new, low,
//! high) PCs from the queues' LRU ends, skipping empty queues. Purging removes metadata only (prefetched
//! blocks stay cached) and happens at once when a PC must be created with the bound reached, where the
//! paper uses a background process.

use super::context::Queue;
use crate::policy::list::{Links, List};

/// Promotion and demotion thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Sequence length (blocks) a PC needs to enter the high queue.
    pub high_min_len: u64,
    /// Requests of history a PC needs to enter the high queue.
    pub high_min_requests: usize,
    /// Hit ratio a PC needs to enter the high queue.
    pub promote_hr: f64,
    /// A high PC whose hit ratio falls below this is demoted to low.
    pub demote_hr: f64,
}

impl Thresholds {
    /// The queue of a PC on `q` after a stride-one extension, with sequence length `x`, `held` requests of
    /// history and hit ratio `h`.
    #[must_use]
    pub fn after_extension(&self, q: Queue, x: u64, held: usize, h: f64) -> Queue {
        match q {
            Queue::New => Queue::Low,
            Queue::Low if x >= self.high_min_len && held >= self.high_min_requests && h >= self.promote_hr => {
                Queue::High
            }
            Queue::High if h < self.demote_hr => Queue::Low,
            q => q,
        }
    }
}

/// The three recency-ordered queues over PC slots.
#[derive(Debug, Default)]
pub struct Queues {
    links: Links,
    lists: [List; 3],
}

impl Queues {
    /// PCs on `q`.
    #[must_use]
    pub fn len(&self, q: Queue) -> usize {
        self.lists[q as usize].len()
    }

    /// Put PC `id` at the MRU end of `q`.
    pub fn push(&mut self, id: u32, q: Queue) {
        self.lists[q as usize].push_front(&mut self.links, id);
    }

    /// PC `id` was accessed: move it from `from` to the MRU end of `to` (which may be the same queue).
    pub fn touch(&mut self, id: u32, from: Queue, to: Queue) {
        if from == to {
            self.lists[to as usize].move_to_front(&mut self.links, id);
        } else {
            self.lists[from as usize].unlink(&mut self.links, id);
            self.lists[to as usize].push_front(&mut self.links, id);
        }
    }

    /// Take PC `id` off `q`.
    pub fn unlink(&mut self, id: u32, q: Queue) {
        self.lists[q as usize].unlink(&mut self.links, id);
    }

    /// Choose up to `batch` PCs to purge and take them off their queues, appending their slots to `out`:
    /// rounds of `weights[q]` PCs from the LRU end of new, low, high in that order, skipping empty
    /// queues, until the batch is complete or every queue is empty.
    pub fn purge(&mut self, batch: usize, weights: [u32; 3], out: &mut Vec<u32>) {
        let mut left = batch;
        while left > 0 && self.lists.iter().any(|l| !l.is_empty()) {
            let before = left;
            for (q, &w) in weights.iter().enumerate() {
                for _ in 0..w {
                    if left == 0 {
                        break;
                    }
                    let Some(id) = self.lists[q].pop_back(&mut self.links) else { break };
                    out.push(id);
                    left -= 1;
                }
            }
            if left == before {
                break; // only queues with weight 0 are left
            }
        }
    }

    /// PC slots on `q`, MRU first (tests).
    pub fn iter(&self, q: Queue) -> impl Iterator<Item = u32> + '_ {
        self.lists[q as usize].iter(&self.links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_round_robin_takes_new_then_low_then_high() {
        let mut q = Queues::default();
        for id in 0..10 {
            q.push(id, Queue::New);
        }
        for id in 10..15 {
            q.push(id, Queue::Low);
        }
        for id in 15..18 {
            q.push(id, Queue::High);
        }
        let mut out = Vec::new();
        q.purge(9, [4, 2, 1], &mut out);
        // Round 1: new 0..3, low 10, 11, high 15; round 2: new 4, 5.
        assert_eq!(out, vec![0, 1, 2, 3, 10, 11, 15, 4, 5]);
        assert_eq!((q.len(Queue::New), q.len(Queue::Low), q.len(Queue::High)), (4, 3, 2));
    }
}
