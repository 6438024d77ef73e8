//! The one-block demand path: an access of a single demand block at a plain level (no prefetcher, no
//! event log, no readmore blocks, no timed pins, no metadata charge, no exclusive caching, no consume on
//! hit). Object traces (oracleGeneral, the w106 block array, LIRS) consist only of such accesses, and it
//! is the whole of a plain LRU, FIFO or CLOCK run, so it does in straight-line code what
//! [`Level::access_body`](super::Level) does in its general loops: the same counters, outcome, policy
//! calls and fetch, in the same order, so results are identical (the behaviour snapshot and the
//! libCacheSim parity tests hold it).

use super::Level;
use crate::policy::{flags, Insert, Policy};
use crate::prefetch::Outcome;
use crate::request::{Fetch, Request};

impl<P: Policy> Level<P> {
    /// Whether `req` (with `demand_len` demand blocks) can take [`Level::access_one`].
    #[inline(always)]
    pub(super) fn takes_one_block_path(&self, req: &Request, demand_len: u32) -> bool {
        self.plain && req.len == 1 && demand_len == 1 && !self.extra && !self.pins.on
    }

    /// Serve the one demand block of `req` ([`Level::takes_one_block_path`] holds).
    #[inline(always)]
    pub(super) fn access_one(&mut self, req: &Request, out: &mut Vec<Fetch>) {
        let block = req.first;
        self.counters.requests += 1;
        self.counters.demand_accesses += 1;
        self.outcomes.clear();
        self.policy.on_access(block);
        if let Some(slot) = self.table.get(block) {
            // A plain level holds demand blocks only, each accessed since it entered: no prefetcher of
            // its own, no timed pins, no readmore (which turns `extra` on for good). So a hit is never a
            // first use and changes no flag, and the entry (a cache miss of its own) is not read.
            debug_assert_eq!(
                self.table.entry(slot).flags & (flags::PREFETCHED | flags::ACCESSED | flags::PINNED | flags::READMORE),
                flags::ACCESSED
            );
            self.counters.hits += 1;
            self.policy.on_hit(slot, &self.table, false);
            self.outcomes.push(Outcome::Hit);
        } else {
            self.counters.misses += 1;
            self.outcomes.push(Outcome::Miss);
            let how = Insert { placement: self.plan.demand_placement, ..Insert::demand() };
            let stream = self.plan.demand_stream.unwrap_or(req.stream);
            // A demand block that finds no evictable room is served without being cached.
            if self.admit(block, stream, flags::ACCESSED, &how).is_some() {
                self.note(crate::eventlog::EventKind::Insert, crate::eventlog::Origin::Demand, block);
            }
            out.push(Fetch { first: block, len: 1, demand_len: 1, stream: req.stream, client: req.client });
            self.counters.fetches += 1;
            self.counters.fetched_blocks += 1;
        }
        self.answer_end = None;
    }
}
