//! Exclusive caching between a level and the level above it: DU and DEMOTE
//! (`shared/docs/algorithms/multilevel.md`); their parameters are [`super::exclusive_options`].
//!
//! - **DU**: Z. Chen, Y. Zhang, Y. Zhou, H. Scott, B. Schiefer, "Empirical Evaluation of Multi-level
//!   Buffer Cache Collaboration for Storage Systems", SIGMETRICS 2005, as described and used as a
//!   baseline in Z. Zhang, K. Lee, X. Ma, Y. Zhou, "PFC: Transparent Optimization of Existing
//!   Prefetching Strategies for Multi-level Storage Systems", ICDCS 2008, §4.3: every block the level
//!   sends up gets the highest eviction priority (the eviction end of its list, or with `du_position =
//!   "evict_now"` it leaves), because the level above now holds it. Blocks the level prefetched on its
//!   own keep their place until they are asked for (unless `du_on_prefetch`).
//! - **DEMOTE**: T. M. Wong, J. Wilkes, "My Cache or Yours? Making Storage More Exclusive", USENIX ATC
//!   2002: the level above sends every block it evicts down (`DEMOTE`), this level caches it at
//!   `demote_insert_pos` (MRU), and keeps the blocks it sends up at `demote_read_pos`: by default the
//!   eviction end, a hit as a miss (the reference's "Ambiguities" §2), so they go first but may still be
//!   in both caches for a while; with `none` a hit leaves the cache and a missed block is passed up
//!   without being cached, and without a prefetcher at this level the two levels are disjoint.
//!
//! The option belongs to the lower level (`level[i].options.exclusive`, i >= 1); the engines pass the
//! evictions of level `i - 1` down when level `i` is `demote`. Every block is treated as clean (the
//! engines model no dirty data), so every eviction is demoted.

use serde::{Deserialize, Serialize};

use super::Level;
use crate::eventlog::{EventKind as K, LevelEvent, Origin};
use crate::policy::{Placement, Policy};
use crate::request::{Fetch, Request};

/// How a level keeps itself exclusive of the level above.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exclusive {
    /// Inclusive (default): the level caches what it sends up like any other block.
    #[default]
    None,
    /// DU: blocks sent up move to the eviction end.
    Du,
    /// DEMOTE: the level above's evictions come down; blocks sent up go to the eviction end (or leave).
    Demote,
}

/// What the engines need of a level for exclusive caching: its mode, the evictions of the level above
/// (recorded here, passed down by the engine) and the demoted blocks coming in.
pub trait Demotion {
    /// The level's exclusive-caching mode (whether the engines must pass the level above's evictions).
    fn exclusive(&self) -> Exclusive;
    /// Switch eviction recording on or off.
    fn record_evictions(&mut self, on: bool);
    /// Blocks evicted since the last call, in eviction order, if recording was switched on with
    /// [`Demotion::record_evictions`]; and, as a multiset, those of them whose evicted copy the access
    /// that evicted it had itself inserted (read but never ready: DEMOTE sends such a copy down only once
    /// its read arrives). A block read again by the access that evicted its ready copy is in the first
    /// list twice and in the second once: it goes down at once, as every ready block does.
    fn take_evictions(&mut self) -> (Vec<u64>, Vec<u64>);
    /// The blocks of [`Demotion::take_evictions`] (tests).
    fn take_evicted(&mut self) -> Vec<u64> {
        self.take_evictions().0
    }
    /// DEMOTE: the level above (its instance serving `client`) evicted `block` and sends it down; cache
    /// it at `demote_insert_pos` (MRU by default; a resident block moves there).
    fn demote_in(&mut self, block: u64, client: u32);
}

impl<P: Policy> Demotion for Level<P> {
    fn exclusive(&self) -> Exclusive {
        self.opts.exclusive
    }

    fn record_evictions(&mut self, on: bool) {
        self.evicted = on.then(Vec::new);
        self.refresh_in_place();
    }

    fn take_evictions(&mut self) -> (Vec<u64>, Vec<u64>) {
        self.inserted_since_take.clear();
        (self.evicted.as_mut().map(std::mem::take).unwrap_or_default(), std::mem::take(&mut self.fresh_evicted))
    }

    fn demote_in(&mut self, block: u64, _client: u32) {
        self.counters.demoted_in += 1;
        self.note(K::DemoteIn, Origin::None, block);
        if let Some(slot) = self.table.get(block) {
            let e = *self.table.entry(slot);
            // A block this level prefetched and nobody used yet keeps its prefetch accounting.
            if !e.pinned() && !e.unused_prefetch() {
                if self.opts.demoted_to_eviction_end() {
                    self.policy.demote(slot, &self.table);
                } else {
                    self.policy.on_hit(slot, &self.table, false);
                }
            }
            return;
        }
        if self.capacity == 0 {
            return;
        }
        // The data comes with the demotion: the block is ready, never pinned. The eviction end is where
        // DU's `demote` puts a block under every policy (a placement is only what fits the policy).
        let slot = self.admit_ready(block, Placement::Mru);
        if let Some(slot) = slot.filter(|_| self.opts.demoted_to_eviction_end()) {
            self.policy.demote(slot, &self.table);
        }
    }
}

impl<P: Policy> Level<P> {
    /// DU, and DEMOTE with `demote_read_pos = "lru_end"`, after an access: every block of the request
    /// goes up to the level above, which now holds it, so it moves to the eviction end (a missed block is
    /// cached there).
    #[inline]
    pub(super) fn du_sent_up(&mut self, req: &Request) {
        for block in req.blocks() {
            if let Some(slot) = self.table.get(block) {
                self.policy.demote(slot, &self.table);
            }
        }
    }

    /// DU with `du_on_prefetch`, after the prefetches: the blocks this access prefetched on its own (those
    /// of `fetches`, the access's, outside the request) move to the eviction end too.
    pub(super) fn du_prefetched(&mut self, req: &Request, fetches: &[Fetch]) {
        let (first, end) = (req.first, req.first + u64::from(req.len));
        for f in fetches {
            for block in f.first..f.first + u64::from(f.len) {
                if (first..end).contains(&block) {
                    continue;
                }
                if let Some(slot) = self.table.get(block) {
                    self.policy.demote(slot, &self.table);
                }
            }
        }
    }

    /// DU `evict_now`, DEMOTE `none`, in timed mode: blocks sent up while in flight leave once their read
    /// has arrived.
    pub(super) fn drop_arrived(&mut self) {
        if self.pins.drop_on_arrival.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut self.pins.drop_on_arrival);
        list.retain(|&block| {
            let Some(slot) = self.table.get(block) else { return false };
            let e = *self.table.entry(slot);
            if e.pinned() {
                return true;
            }
            self.counters.prefetch_invalidated += u64::from(e.counts_unused() && e.measured());
            if let Some(log) = &mut self.log {
                let kind = if e.counts_unused() { K::Invalidated } else { K::Removed };
                log.push(LevelEvent::block(kind, super::events::origin_of(e), block));
            }
            if e.unused_prefetch() {
                self.protect.release(slot);
            }
            self.policy.on_remove(slot, &self.table);
            self.table.remove(slot);
            false
        });
        self.pins.drop_on_arrival = list;
    }
}
