//! Admission in place: when a full level needs none of the eviction machinery beyond second chances (no
//! raise, no timed pins, no event log, no eviction record), the block it admits takes its victim's slot
//! in one step: the victim leaves the policy and the index, the entry is overwritten and the new block
//! enters the index and the policy. [`Level::evict_one`] followed by an insertion does the same through
//! the free list (the victim's slot, pushed, is the one popped) with the checks for every role; a
//! prefetched block costs one such admission, so this is most of what a prefetched block costs
//! (`docs/prefetcher-speed.md`, third round). The same policy and prefetcher calls in the same order, the
//! same counters and the same slot, so results are identical (the behaviour snapshot and the
//! libCacheSim parity tests hold it).

use super::{pins, Level};
use crate::policy::{Insert, Policy, Slot};

impl<P: Policy> Level<P> {
    /// Recompute whether a full level may admit in place: call after any change to the timed pins, the
    /// event log or the eviction record (the protection settings are fixed at construction).
    pub(super) fn refresh_in_place(&mut self) {
        self.in_place = !self.pins.on && self.log.is_none() && self.evicted.is_none() && !self.protect.raises;
    }

    /// Admit `block` into the slot of the policy's victim (the level is exactly full and
    /// [`Level::refresh_in_place`] allowed it; the policy has already heard the miss). `None` when the
    /// policy has no victim, as [`Level::admit`].
    #[inline(always)]
    pub(super) fn admit_in_place(&mut self, block: u64, stream: u32, flag: u8, how: &Insert) -> Option<Slot> {
        let (slot, old) = loop {
            let slot = self.policy.victim(&self.table)?;
            let old = *self.table.entry(slot);
            if self.protect.second_chance(&old) {
                // A second chance, as [`Level::evict_one`] gives it: back to the insertion end, and the
                // policy picks again.
                self.table.entry_mut(slot).chances += 1;
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                self.prefetcher.on_second_chance(&old, pins::cache_view(&self.table, self.data_capacity, &self.pins));
                continue;
            }
            break (slot, old);
        };
        self.policy.on_evicted(slot, &self.table);
        if old.counts_unused() {
            let measured = u64::from(old.measured());
            self.counters.unused_evicted += measured;
            self.counters.readmore_unused_evicted +=
                measured * u64::from(old.flags & crate::policy::flags::READMORE != 0);
        }
        if old.unused_prefetch() {
            self.protect.release(slot);
        }
        self.counters.evictions += 1;
        // Before the new block takes the slot: the prefetcher hears the eviction with the cache as
        // [`Level::evict_one`] leaves it, but for the victim still there.
        if self.wants_evictions {
            self.prefetcher.on_evicted_in(&old, pins::cache_view(&self.table, self.data_capacity, &self.pins));
        }
        self.table.replace(slot, block, stream, flag);
        // The block this one should follow may have been the victim (its slot now holds this block).
        let how = &Insert { after: how.after.filter(|&s| s != slot && self.table.is_occupied(s)), ..*how };
        self.policy.on_insert(slot, &self.table, how);
        Some(slot)
    }
}
