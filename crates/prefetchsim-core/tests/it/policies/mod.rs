//! CLOCK, ARC, MQ and 2Q: hand-worked sequences (derived from the papers' rules, replacement.md §1-4),
//! pinned-entry and prefetch rules, and property tests driving whole levels.

use prefetchsim_core::build::build_level;
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::level::{AnyLevel, CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::arc::{Arc, ArcParams};
use prefetchsim_core::policy::clock::{Clock, ClockParams};
use prefetchsim_core::policy::mq::{Mq, MqParams};
use prefetchsim_core::policy::two_q::{TwoQ, TwoQParams};
use prefetchsim_core::policy::{flags, BlockTable, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::prefetch::obl::Obl;
use prefetchsim_core::prefetch::Prefetcher;
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

mod arc;
mod clock;
mod mq;
mod properties;
mod registry;
mod two_q;

fn env(capacity: usize) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: FirstHit::Promote }
}

fn level<P: Policy>(capacity: usize, policy: P) -> Level<P> {
    let mut l = Level::new(capacity, policy, Box::new(NoPrefetch), LevelOptions::default());
    l.record_evictions(true);
    l
}

fn obl_level<P: Policy>(capacity: usize, policy: P) -> Level<P> {
    let mut l = Level::new(capacity, policy, Box::new(Obl::new(Default::default())), LevelOptions::default());
    l.record_evictions(true);
    l
}

/// One demand read of `block`; returns whether it hit.
fn read<P: Policy>(l: &mut Level<P>, block: u64) -> bool {
    let hits = l.counters().hits;
    let mut out = Vec::new();
    l.access(&Request::read(block, 1), 1, &mut out);
    l.check_invariants().unwrap();
    l.counters().hits > hits
}

// ---------------------------------------------------------------------------------------------------------
// A policy driven hook by hook, as the level drives it, with pins, removals and demotions the instant
// engine never issues.

struct Drive<P: Policy> {
    table: BlockTable,
    policy: P,
    capacity: usize,
}

impl<P: Policy> Drive<P> {
    fn new(capacity: usize, policy: P) -> Self {
        Self { table: BlockTable::with_capacity(capacity), policy, capacity }
    }

    fn check(&self) {
        assert!(self.table.len() <= self.capacity);
        self.policy.check(&self.table).unwrap();
    }

    /// A demand access; returns whether it hit.
    fn demand(&mut self, block: u64) -> bool {
        let hit = match self.table.get(block) {
            Some(s) => {
                let first = self.table.entry(s).unused_prefetch();
                self.policy.on_hit(s, &self.table, first);
                self.table.entry_mut(s).flags |= flags::ACCESSED;
                true
            }
            None => {
                self.admit(block, Origin::Demand);
                false
            }
        };
        self.check();
        hit
    }

    fn prefetch(&mut self, block: u64) {
        if !self.table.contains(block) {
            self.admit(block, Origin::Prefetch);
        }
        self.check();
    }

    /// Insert `block` as the level does; `None` when no victim could be found.
    fn admit(&mut self, block: u64, origin: Origin) -> Option<Slot> {
        self.policy.on_miss(block, origin, &self.table);
        while self.table.len() >= self.capacity {
            let s = self.policy.victim(&self.table)?;
            assert!(!self.table.entry(s).pinned(), "victim is pinned");
            self.policy.on_evicted(s, &self.table);
            self.table.remove(s);
        }
        let (flag, how) = match origin {
            Origin::Demand => (flags::ACCESSED, Insert::demand()),
            Origin::Prefetch => (flags::PREFETCHED, Insert::prefetch(0, None, Placement::Default)),
        };
        let s = self.table.insert(block, 0, flag);
        self.policy.on_insert(s, &self.table, &how);
        Some(s)
    }

    fn pin(&mut self, block: u64, on: bool) {
        let s = self.table.get(block).unwrap();
        self.table.set_pinned(s, on);
    }

    fn remove(&mut self, block: u64) {
        if let Some(s) = self.table.get(block) {
            self.policy.on_remove(s, &self.table);
            self.table.remove(s);
        }
        self.check();
    }

    fn demote(&mut self, block: u64) {
        if let Some(s) = self.table.get(block) {
            self.policy.demote(s, &self.table);
        }
        self.check();
    }

    fn resident(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.table.iter().map(|(_, e)| e.block).collect();
        v.sort_unstable();
        v
    }
}
