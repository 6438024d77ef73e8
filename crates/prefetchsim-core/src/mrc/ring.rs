//! One size's frames in the FIFO and CLOCK size passes ([`super::fifo_family`], [`super::clock_family`]):
//! an array of dense block numbers that fills in insertion order and then has its frames overwritten at a
//! hand that goes round. FIFO overwrites the frame under the hand (the oldest); CLOCK first moves the hand
//! past referenced blocks. The passes share the insertion at every size where a block missed
//! ([`insert_each`]); each brings its own eviction.

/// One size's frames and hand.
#[derive(Debug)]
pub(super) struct Ring {
    /// Dense numbers of the blocks in the frames.
    pub(super) frames: Vec<u32>,
    /// Frames at most.
    capacity: usize,
    /// The frame under the hand, once the ring is full: FIFO's oldest block, the first CLOCK examines.
    pub(super) hand: usize,
}

impl Ring {
    /// An empty ring of `capacity` frames (allocated as they fill).
    pub(super) fn new(capacity: u64) -> Self {
        Self { frames: Vec::new(), capacity: usize::try_from(capacity).unwrap_or(usize::MAX), hand: 0 }
    }

    /// Take block `id` into a free frame while the ring fills; false (and nothing done) once it is full.
    #[inline]
    pub(super) fn fill(&mut self, id: u32) -> bool {
        if self.frames.len() < self.capacity {
            self.frames.push(id);
            return true;
        }
        false
    }

    /// The frame after `at`, going round.
    #[inline]
    pub(super) fn after(&self, at: usize) -> usize {
        if at + 1 == self.frames.len() {
            0
        } else {
            at + 1
        }
    }

    /// Drop the frames (the pass gave up).
    pub(super) fn release(&mut self) {
        self.frames = Vec::new();
    }
}

/// Insert block `id` at every size of mask `missed` (bit `j`: `rings[j]`), lowest first: into a free frame
/// while that size's ring fills, else by `evict(ring, j)`, which puts `id` in the frame it frees (moving
/// the hand past it and clearing the evicted block's state at size `j`). The frames added.
#[inline]
pub(super) fn insert_each(rings: &mut [Ring], missed: u64, id: u32, mut evict: impl FnMut(&mut Ring, usize)) -> usize {
    let mut added = 0;
    for j in sizes_of(missed) {
        let ring = &mut rings[j];
        if ring.fill(id) {
            added += 1;
            continue;
        }
        evict(ring, j);
    }
    added
}

/// The positions of the set bits of `mask`, lowest first (the sizes where a block missed).
#[inline]
fn sizes_of(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let j = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            j
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{sizes_of, Ring};

    #[test]
    fn a_ring_fills_to_its_capacity_and_its_hand_goes_round() {
        let mut r = Ring::new(3);
        assert!(r.fill(7) && r.fill(8) && r.fill(9));
        assert!(!r.fill(10));
        assert_eq!(r.frames, [7, 8, 9]);
        assert_eq!((r.after(0), r.after(1), r.after(2)), (1, 2, 0));
    }

    #[test]
    fn the_sizes_of_a_mask_are_its_set_bits_in_order() {
        assert_eq!(sizes_of(0).count(), 0);
        assert_eq!(sizes_of(0b1011_0001).collect::<Vec<_>>(), [0, 4, 5, 7]);
        assert_eq!(sizes_of(1 << 63).collect::<Vec<_>>(), [63]);
    }
}
