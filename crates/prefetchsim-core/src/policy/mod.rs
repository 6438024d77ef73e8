//! Replacement policies over the blocks of one level.
//!
//! A policy orders the slots of a [`BlockTable`]; the table holds the block → slot map and the
//! per-block flags, the policy only its own lists (and ghost lists, which it keys by block itself).
//! The level calls the policy with static dispatch (`Level<P: Policy>`), so a policy's hooks inline into
//! the per-block loop. Semantics follow `shared/docs/models/replacement.md`; each file credits its paper.

pub mod arc;
pub mod clock;
mod clock_runs;
pub mod entry;
pub mod fifo;
mod index;
pub mod list;
pub mod lru;
pub mod mq;
pub mod next_use;
pub mod opt;
pub mod sarc;
pub mod split_lru;
pub mod stream_lru;
pub mod table;
mod tail_memo;
pub mod two_q;

use serde::de::DeserializeOwned;

use crate::component::ConfigError;
use serde::{Deserialize, Serialize};

pub use table::{flags, BlockTable, Entry, Slot};

/// Why a block enters the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A demand miss (or, at a lower level, a request from the level above).
    Demand,
    /// This level's prefetcher asked for it.
    Prefetch,
}

/// Where a prefetcher asks a block to go; policies honour what fits their structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// The policy's own rule (MRU for LRU-like lists).
    #[default]
    Default,
    /// The insertion (MRU) end.
    Mru,
    /// The eviction (LRU) end ("LRU-Bottom").
    Lru,
    /// A policy-specific list (SARC: 0 = RANDOM, 1 = SEQ, 2 = SEQ without counting a sequential miss).
    #[serde(skip)]
    List(u8),
}

/// How a block is being inserted.
#[derive(Clone, Copy, Debug)]
pub struct Insert {
    /// Demand or prefetch.
    pub origin: Origin,
    /// Index of the block in its prefetch run (0 = the nearest block); 0 for demand blocks.
    pub rank: u32,
    /// The previous block of the same prefetch run that was newly inserted just before, if it is still
    /// resident: list policies place this block right after it (the nearer block nearer MRU).
    pub after: Option<Slot>,
    /// The placement the prefetcher asked for.
    pub placement: Placement,
    /// A second-chance re-insertion of an unused prefetched block (not a new block).
    pub reinsert: bool,
}

impl Insert {
    /// A demand insertion.
    #[must_use]
    pub fn demand() -> Self {
        Self { origin: Origin::Demand, rank: 0, after: None, placement: Placement::Default, reinsert: false }
    }
    /// A prefetch insertion at `rank` of its run.
    #[must_use]
    pub fn prefetch(rank: u32, after: Option<Slot>, placement: Placement) -> Self {
        Self { origin: Origin::Prefetch, rank, after, placement, reinsert: false }
    }
    /// A second-chance re-insertion.
    #[must_use]
    pub fn second_chance() -> Self {
        Self { origin: Origin::Prefetch, rank: 0, after: None, placement: Placement::Mru, reinsert: true }
    }
}

/// What a prefetched block's first demand access does to its position (replacement.md §0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FirstHit {
    /// Move it like any hit (Linux, Butt et al.).
    #[default]
    Promote,
    /// Leave it in place; only a repeated access promotes it (AMP).
    Stay,
    /// `stay` for the blocks of a stack's second prefetcher only ([`flags::SECOND`]), `promote` for the
    /// first's: AMP's rule kept to AMP's pages when another prefetcher (Mithril) is stacked over it.
    #[serde(rename = "stay_second")]
    StaySecond,
}

impl FirstHit {
    /// Whether a hit on `entry` leaves it in place: `first_use` (its first demand access since it was
    /// prefetched) and the rule covers it.
    #[inline]
    #[must_use]
    pub fn stays(self, first_use: bool, entry: &Entry) -> bool {
        first_use
            && match self {
                Self::Promote => false,
                Self::Stay => true,
                Self::StaySecond => entry.flags & flags::SECOND != 0,
            }
    }
}

/// Settings every policy receives at construction.
#[derive(Clone, Copy, Debug)]
pub struct PolicyEnv {
    /// Capacity in blocks.
    pub capacity: usize,
    /// Effect of a prefetched block's first demand hit.
    pub first_hit: FirstHit,
}

/// A replacement policy. All hooks get the level's table for reading flags and finding neighbours.
pub trait Policy: Send + 'static {
    /// A demand access hit the resident, ready block in `slot`. `first_use` is true for the first demand
    /// access of a prefetched block (its `ACCESSED` flag is still clear during this call).
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool);

    /// A demand hit on a block that leaves the cache at once (level option `consume_on_hit`, the Split
    /// paper's no-re-reference setting). Default: [`Policy::on_hit`] then [`Policy::on_remove`]; a policy
    /// whose hit rule would make room for the leaving block (SplitLRU) overrides it.
    fn on_consumed_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        self.on_hit(slot, table, first_use);
        self.on_remove(slot, table);
    }

    /// `block` is about to be inserted (before room is made for it): ghost-list lookups and adaptation.
    fn on_miss(&mut self, _block: u64, _origin: Origin, _table: &BlockTable) {}

    /// The block in `slot` has just been put in the table; link it.
    fn on_insert(&mut self, slot: Slot, table: &BlockTable, how: &Insert);

    /// Choose a victim, unlink it and return its slot; never a pinned entry. `None` when nothing can go.
    /// The level may re-insert it (second chance) or confirm with [`Policy::on_evicted`].
    fn victim(&mut self, table: &BlockTable) -> Option<Slot>;

    /// The victim in `slot` really leaves (still in the table during this call): record ghosts.
    fn on_evicted(&mut self, _slot: Slot, _table: &BlockTable) {}

    /// The block in `slot` leaves for another reason (consumed, invalidated, handed off); unlink it.
    fn on_remove(&mut self, slot: Slot, table: &BlockTable);

    /// Move the block in `slot` to the eviction end (DU, exclusive caching).
    fn demote(&mut self, slot: Slot, table: &BlockTable);

    /// A prefetch run named a block that is already resident, at `rank` in the run (SplitLRU moves the
    /// nearest one to Up). Default: nothing.
    fn on_prefetch_cached(&mut self, _slot: Slot, _table: &BlockTable, _rank: u32) {}

    /// Check the policy's internal invariants against the table (tests; may be slow).
    fn check(&self, table: &BlockTable) -> Result<(), String>;

    /// Each block of each request the level serves, in order, before its hit or miss is handled: the
    /// level's stream, for a policy that knows its future (`opt`). Default: nothing.
    #[inline]
    fn on_access(&mut self, _block: u64) {}

    /// The policy's knowledge of the future, for a policy that uses it (`opt`;
    /// `optimal::prepare` fills it in). Default: none.
    fn future(&mut self) -> Option<&mut next_use::Future> {
        None
    }

    /// What the run's user should know about this policy's results that is not an error, given the
    /// level's `counters` at the end of the run (`opt` over requests of several blocks is no lower
    /// bound); reported with the level's path in [`crate::metrics::RunResult::notes`]. Default: nothing.
    fn notes(&self, _counters: &crate::metrics::LevelCounters) -> Vec<String> {
        Vec::new()
    }
}

/// A replacement policy as the registry names it: one line in [`crate::build::registry`] makes it
/// buildable from a config, listed by `prefetchsim list` and in the Python registry, counted by the memory
/// check and checked against its level's prefetcher. Implemented in each policy's own file.
pub trait NamedPolicy: Policy + Sized {
    /// Canonical name in configs (lowercase).
    const NAME: &'static str;
    /// One line for listings: what it is and whose paper.
    const SUMMARY: &'static str;
    /// Other spellings accepted in configs (lowercase).
    const ALIASES: &'static [&'static str] = &[];
    /// Bytes of memory per cached block at most (the table entry, the block index, the policy's links
    /// and its ghost lists when full), measured by `benches/memory.py` and rounded up: the memory check
    /// refuses levels whose metadata would not fit before allocating them.
    const BYTES_PER_BLOCK: u64;
    /// The typed parameters (unknown keys are errors naming the key).
    type Params: DeserializeOwned;

    /// The policy of a level of `env` with `params`; errors name `path.key`.
    fn from_params(path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, ConfigError>;

    /// The parameters for a run over a trace that declares `facts`: a default that depends on the trace
    /// is settled here, when the level is built (StreamLRU's `stream_zero_is_random`). Default: the
    /// parameters unchanged.
    fn for_trace(params: Self::Params, _facts: &crate::TraceFacts) -> Self::Params {
        params
    }

    /// Why this policy cannot work with the level's prefetcher `prefetcher` (a canonical name), if it
    /// cannot; the error is reported at the level's `prefetcher` key. Default: any prefetcher.
    fn refuse_prefetcher(_prefetcher: &str) -> Option<String> {
        None
    }
}

/// Parameters of a policy or prefetcher that takes none.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stay_second_keeps_only_the_second_prefetchers_blocks_in_place_on_their_first_hit() {
        let first = Entry { flags: flags::PREFETCHED, ..Entry::default() };
        let second = Entry { flags: flags::PREFETCHED | flags::SECOND, ..Entry::default() };
        assert!(!FirstHit::StaySecond.stays(true, &first));
        assert!(FirstHit::StaySecond.stays(true, &second));
        assert!(!FirstHit::StaySecond.stays(false, &second), "a later hit promotes");
        assert!(FirstHit::Stay.stays(true, &first) && !FirstHit::Promote.stays(true, &second));
        let opts: crate::level::LevelOptions = serde_json::from_str(r#"{"first_hit": "stay_second"}"#).unwrap();
        assert_eq!(opts.first_hit, FirstHit::StaySecond);
    }
}
