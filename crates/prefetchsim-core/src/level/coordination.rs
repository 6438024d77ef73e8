//! What a coordinator in front of a level (PFC, [`crate::pfc::PfcLevel`]) asks of it: look-ups that do
//! not touch the policy, blocks served or read around the policy, and readmore blocks appended to a
//! forwarded request.

use super::Level;
use crate::eventlog::{EventKind as K, Origin};
use crate::policy::{flags, Placement, Policy};
use crate::prefetch::Outcome;

/// The coordination hooks of a level.
pub trait Coordination {
    /// Whether `block` is resident or in flight, without touching the policy (PFC's look-ups).
    fn peek(&self, block: u64) -> bool;
    /// Whether the level holds as many blocks as it may (PFC's "L2 is full"; in-flight blocks count).
    fn is_full(&self) -> bool;
    /// The next access answers its requester with the blocks before `end` only; the request's blocks
    /// from `end` on are read for the level itself (PFC's readmore blocks appended to a forwarded
    /// request). With prefetch apart ([`super::Pinning::set_prefetch_apart`]), no fetch of that access
    /// crosses `end`.
    fn set_answer_end(&mut self, end: u64);
    /// Cache `block`, ready, at the eviction end of the policy, with no access counted and nothing said
    /// to the prefetcher (PFC's `cache_bypassed`). A resident block is left as it is.
    fn insert_cold(&mut self, block: u64);
    /// Count blocks a coordinator served from this level without the policy seeing them (PFC's silent
    /// hits) and blocks it read around the level (bypassed, not cached).
    fn count_coordinated(&mut self, silent_hits: u64, bypass_pending: u64, bypass_reads: u64, readmore: u64);
    /// The bypassed `block`, resident or in flight here, was served to the level above without the policy
    /// seeing it (a silent hit): count the use of a prefetched or readmore block. Accounting only.
    fn silent_use(&mut self, block: u64);
    /// Blocks `first .. first + len` of the last access (which began at `access_first`) were appended by
    /// readmore: those it missed and cached count as prefetched (`readmore_issued`), and their first
    /// reference as a use. The policy and the prefetcher still see them as the demand blocks of that
    /// access. Accounting only.
    fn mark_readmore(&mut self, access_first: u64, first: u64, len: u32);
}

impl<P: Policy> Coordination for Level<P> {
    fn peek(&self, block: u64) -> bool {
        self.table.contains(block)
    }

    fn is_full(&self) -> bool {
        self.table.len() >= self.data_capacity
    }

    fn set_answer_end(&mut self, end: u64) {
        self.answer_end = Some(end);
    }

    fn insert_cold(&mut self, block: u64) {
        if self.capacity == 0 || self.table.get(block).is_some() {
            return;
        }
        // The eviction end as DU and DEMOTE put a block there under every policy (the policy's `demote`):
        // a `Placement::Lru` insertion is only the end of the list the policy inserts into (MQ: the queue
        // of the block's remembered frequency, not Q0), which "like DU" does not mean.
        if let Some(slot) = self.admit_ready(block, Placement::Mru) {
            self.policy.demote(slot, &self.table);
        }
    }

    fn count_coordinated(&mut self, silent_hits: u64, bypass_pending: u64, bypass_reads: u64, readmore: u64) {
        self.counters.silent_hits += silent_hits;
        self.counters.bypass_pending += bypass_pending;
        self.counters.bypass_reads += bypass_reads;
        self.counters.readmore_blocks += readmore;
    }

    fn silent_use(&mut self, block: u64) {
        let Some(slot) = self.table.get(block) else { return };
        let e = *self.table.entry(slot);
        self.count_use(slot, e);
        if e.unused_prefetch() {
            self.table.entry_mut(slot).flags |= flags::SILENT_USED;
        }
    }

    fn mark_readmore(&mut self, access_first: u64, first: u64, len: u32) {
        for block in first..first + u64::from(len) {
            // Only a block this access missed and cached as a demand block (a block native prefetching
            // brought in is the native prefetcher's).
            let missed = block
                .checked_sub(access_first)
                .and_then(|i| self.outcomes.get(usize::try_from(i).ok()?))
                .is_some_and(|o| *o == Outcome::Miss);
            let Some(slot) = self.table.get(block).filter(|_| missed) else { continue };
            let e = self.table.entry_mut(slot);
            if e.flags & (flags::PREFETCHED | flags::ACCESSED) == flags::ACCESSED {
                e.flags |= flags::READMORE;
                self.extra = true;
                self.counters.prefetch_issued += 1;
                self.counters.readmore_issued += 1;
                self.note(K::PrefetchIssued, Origin::Readmore, block);
            }
        }
    }
}
