//! Replacement policies over the blocks of one level.
//!
//! A policy orders the slots of a [`BlockTable`]; the table holds the block → slot map and the
//! per-block flags, the policy only its own lists (and ghost lists, which it keys by block itself).
//! The level calls the policy with static dispatch (`Level<P: Policy>`), so a policy's hooks inline into
//! the per-block loop. Semantics follow `shared/docs/models/replacement.md`; each file credits its paper.

pub mod arc;
pub mod clock;
pub mod fifo;
mod index;
pub mod list;
pub mod lru;
pub mod mq;
pub mod opt;
pub mod sarc;
pub mod split_lru;
pub mod stream_lru;
pub mod table;
pub mod two_q;

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
    /// [`crate::optimal::prepare`] fills it in). Default: none.
    fn future(&mut self) -> Option<&mut crate::optimal::Future> {
        None
    }
}

/// Names and summaries of the registered policies (the one list the CLI, config and docs derive from).
pub const POLICIES: &[(&str, &str)] = &[
    ("lru", "least recently used"),
    ("fifo", "first in, first out"),
    ("clock", "CLOCK (second chance), one reference bit"),
    ("arc", "Adaptive Replacement Cache (Megiddo & Modha, FAST'03)"),
    ("mq", "Multi-Queue (Zhou, Philbin & Li, USENIX ATC'01)"),
    ("2q", "2Q, full version (Johnson & Shasha, VLDB'94)"),
    ("streamlru", "stream-grouped prefetch-aware LRU (Varki et al., Split paper §2)"),
    ("splitlru", "Split replacement queue, Up and Down LRU lists (Varki, Hubbe & Merchant)"),
    ("sarc", "SARC's SEQ and RANDOM lists, adaptive split (Gill & Modha, USENIX ATC'05); prefetcher sarc"),
    ("opt", "Belady's MIN, the offline optimum (IBM Sys. J. 1966): next uses from a pre-pass; instant engine"),
];

/// Other spellings accepted for policy names.
pub const POLICY_ALIASES: &[(&str, &str)] = &[
    ("two_q", "2q"),
    ("twoq", "2q"),
    ("split", "splitlru"),
    ("split_lru", "splitlru"),
    ("stream_lru", "streamlru"),
    ("second_chance", "clock"),
];

/// Parameters of a policy that takes none.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Build a level whose policy is named by `spec` (the policy registry). Returns the canonical policy
/// name and the level.
pub fn build_level(
    path: &str,
    spec: &crate::component::ComponentSpec,
    capacity: usize,
    opts: crate::level::LevelOptions,
    prefetcher: Box<dyn crate::prefetch::Prefetcher>,
) -> Result<(&'static str, Box<dyn crate::level::AnyLevel>), crate::component::ConfigError> {
    use crate::component::{parse_params, resolve_name};
    use crate::level::Level;
    if crate::plugin::is_plugin_name(&spec.name) {
        return crate::plugin::build_level(path, spec, capacity, opts, prefetcher);
    }
    let mut prefetcher = prefetcher;
    let mut opts = opts;
    // The geometry `Level::new` attaches the prefetcher with: its first-hit rule is the policy's.
    let geometry = crate::prefetch::LevelGeometry { capacity, block_bytes: crate::level::DEFAULT_BLOCK_BYTES };
    if let Some(rule) = prefetcher.attach(geometry).first_hit {
        opts.first_hit = rule;
    }
    let env = PolicyEnv { capacity, first_hit: opts.first_hit };
    let name = resolve_name(path, "policy", &spec.name, POLICIES, POLICY_ALIASES)?;
    let level: Box<dyn crate::level::AnyLevel> = match name {
        "lru" => {
            parse_params::<NoParams>(path, spec)?;
            Box::new(Level::new(capacity, lru::Lru::new(&env), prefetcher, opts))
        }
        "fifo" => {
            parse_params::<NoParams>(path, spec)?;
            Box::new(Level::new(capacity, fifo::Fifo::new(&env), prefetcher, opts))
        }
        "clock" => Box::new(Level::new(capacity, clock::Clock::new(&env, parse_params(path, spec)?), prefetcher, opts)),
        "arc" => Box::new(Level::new(capacity, arc::Arc::new(&env, parse_params(path, spec)?), prefetcher, opts)),
        "mq" => {
            let params: mq::MqParams = parse_params(path, spec)?;
            params.validate(path)?;
            Box::new(Level::new(capacity, mq::Mq::new(&env, params), prefetcher, opts))
        }
        "2q" => Box::new(Level::new(capacity, two_q::TwoQ::new(&env, parse_params(path, spec)?), prefetcher, opts)),
        "streamlru" => Box::new(Level::new(
            capacity,
            stream_lru::StreamLru::new(&env, parse_params(path, spec)?),
            prefetcher,
            opts,
        )),
        "splitlru" => {
            Box::new(Level::new(capacity, split_lru::SplitLru::new(&env, parse_params(path, spec)?), prefetcher, opts))
        }
        "sarc" => {
            let params: sarc::SarcParams = parse_params(path, spec)?;
            params.validate(path)?;
            Box::new(Level::new(capacity, sarc::Sarc::new(&env, params), prefetcher, opts))
        }
        "opt" => {
            parse_params::<NoParams>(path, spec)?;
            Box::new(Level::new(capacity, opt::Opt::new(&env), prefetcher, opts))
        }
        _ => unreachable!("registered policy {name} without a constructor"),
    };
    let canonical = POLICIES.iter().find(|(n, _)| *n == name).map_or("?", |(n, _)| *n);
    Ok((canonical, level))
}

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
