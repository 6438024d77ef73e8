//! Protection of prefetched blocks not used yet, and the bookkeeping of their first use.
//!
//! - **Second chance** (`replacement.md` §6; AMP, Gill & Bathen FAST'07): an unused prefetched block that
//!   reaches the eviction end goes back to the insertion end, at most `second_chances` times, and the
//!   prefetcher hears it.
//! - **Raise** (STEP §4.4, Liang, Jiang & Zhang ICDCS'07; TaP's prefetch cache): while the level holds at
//!   most `cap` unused prefetched blocks, one the policy picks as victim is put back and the policy picks
//!   again ([`crate::prefetch::Raise`]); past the cap the one prefetched longest ago leaves first.
//! - **Mark used** (`Level::mark_used`): the one place where a prefetched (or PFC readmore) block's
//!   first reference is counted and the block leaves the protected set.

use super::Level;
use crate::eventlog::{EventKind as K, Origin};
use crate::policy::list::{Links, List};
use crate::policy::{flags, BlockTable, Entry, Policy, Slot};
use crate::prefetch::Raise;

/// The unused prefetched blocks of a level: how many, and with a raise, in prefetch order.
#[derive(Debug, Default)]
pub(super) struct Protect {
    /// Second chances of an unused prefetched block at eviction (the level option or the prefetcher's).
    pub(super) second_chances: u8,
    /// The same for a block a stack's second component prefetched ([`flags::SECOND`]).
    pub(super) second_component_chances: u8,
    /// The prefetcher raises the priority of unused prefetched blocks ([`crate::prefetch::Prefetcher::raise`]).
    pub(super) raises: bool,
    /// Resident prefetched blocks without a demand access yet (the blocks a raise protects). Every path
    /// that inserts a prefetched block or removes or first-uses one keeps it exact; [`Protect::check`]
    /// verifies it.
    pub(super) unused: usize,
    /// With `raises`: the unused prefetched blocks in prefetch order, newest at the head.
    raised: List,
    raised_links: Links,
}

impl Protect {
    /// Protection with `second_chances` (`second_component_chances` for the blocks of a stack's second
    /// component) and, when `raises`, the raise list.
    pub(super) fn new(second_chances: u8, second_component_chances: u8, raises: bool) -> Self {
        Self { second_chances, second_component_chances, raises, ..Self::default() }
    }

    /// Whether the victim `entry` gets a second chance: an unused prefetched block that has had fewer than
    /// its prefetcher's.
    #[inline]
    pub(super) fn second_chance(&self, entry: &Entry) -> bool {
        let chances =
            if entry.flags & flags::SECOND != 0 { self.second_component_chances } else { self.second_chances };
        entry.unused_prefetch() && entry.chances < chances
    }

    /// A prefetched block entered `slot`.
    #[inline]
    pub(super) fn prefetched(&mut self, slot: Slot) {
        self.unused += 1;
        if self.raises {
            self.raised.push_front(&mut self.raised_links, slot);
        }
    }

    /// The unused prefetched block in `slot` is used or leaves: it is no longer protected.
    #[inline]
    pub(super) fn release(&mut self, slot: Slot) {
        self.unused -= 1;
        if self.raises {
            self.raised.unlink(&mut self.raised_links, slot);
        }
    }

    /// Whether the unused prefetched victim `entry` keeps its place because its priority is raised
    /// (`raise`, the prefetcher's current one): at most `cap` unused prefetched blocks, fewer than `passes`
    /// put-backs of this block, and `kept` (the victims already put back during this eviction) has not yet
    /// gone through all of them (then nothing but raised blocks is left to evict).
    #[inline]
    pub(super) fn raised(&self, kept: usize, entry: &Entry, raise: impl FnOnce() -> Option<Raise>) -> bool {
        self.raises && kept < self.unused && raise().is_some_and(|r| self.unused <= r.cap && entry.chances < r.passes)
    }

    /// With more unused prefetched blocks than the raise covers, the one prefetched longest ago (not in
    /// flight): the raised blocks form a partition of `cap` blocks in prefetch order.
    #[inline]
    pub(super) fn overflow(&mut self, table: &BlockTable, raise: impl FnOnce() -> Option<Raise>) -> Option<Slot> {
        if !self.raises || raise().is_none_or(|r| self.unused <= r.cap) {
            return None;
        }
        self.raised.last_unpinned(&mut self.raised_links, table)
    }

    /// Check the count and the raise list against the table (tests).
    pub(super) fn check(&self, table: &BlockTable) -> Result<(), String> {
        let unused = table.iter().filter(|(_, e)| e.unused_prefetch()).count();
        if unused != self.unused {
            return Err(format!("{unused} unused prefetched blocks resident, {} counted", self.unused));
        }
        if self.raises {
            let mut n = 0usize;
            for s in self.raised.iter(&self.raised_links) {
                if !table.is_occupied(s) || !table.entry(s).unused_prefetch() {
                    return Err(format!("slot {s} on the raised list is not an unused prefetched block"));
                }
                n += 1;
            }
            if n != self.unused || self.raised.len() != n {
                return Err(format!("raised list holds {n} blocks, {} unused prefetched", self.unused));
            }
        }
        Ok(())
    }
}

impl<P: Policy> Level<P> {
    /// A reference to the resident block `e` in `slot` (`first_use`: it is an unused prefetched block):
    /// the block leaves the protected set and its first use is counted. `EXTRA`: PFC readmore blocks may
    /// be resident (their first reference is counted too).
    #[inline(always)]
    pub(super) fn mark_used<const EXTRA: bool>(&mut self, slot: Slot, e: Entry, first_use: bool) {
        if first_use {
            self.protect.release(slot);
            self.count_use(slot, e);
        } else if EXTRA && e.flags & flags::READMORE != 0 {
            self.count_use(slot, e);
        }
    }

    /// Accounting of a reference to the resident block `e` in `slot`: the first use of a prefetched block
    /// (native, unless a PFC silent hit used it already) or of a readmore block.
    #[inline]
    pub(super) fn count_use(&mut self, slot: Slot, e: Entry) {
        let measured = u64::from(e.measured());
        if e.flags & (flags::PREFETCHED | flags::ACCESSED | flags::SILENT_USED) == flags::PREFETCHED {
            self.counters.prefetch_used += measured;
            self.counters.second_used += measured * u64::from(e.flags & flags::SECOND != 0);
            self.note(K::PrefetchUsed, super::events::origin_of(e), e.block);
        } else if e.flags & flags::READMORE != 0 {
            self.table.entry_mut(slot).flags &= !flags::READMORE;
            self.counters.prefetch_used += measured;
            self.counters.readmore_used += measured;
            self.note(K::PrefetchUsed, Origin::Readmore, e.block);
        }
    }
}
