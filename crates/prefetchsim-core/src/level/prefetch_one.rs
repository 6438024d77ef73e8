//! The one-block demand access of a level with a prefetcher: what [`Level::access_body`](super::Level)
//! does for a request of one demand block, in straight-line code. Object traces (the w106 block array,
//! ARC OLTP) consist of such requests, and there the general loops over the request's blocks and its runs
//! of missing blocks cost as much as the prefetcher itself (measured on OLTP with OBL: a third of the run
//! in the general access). The same counters, outcome, prefetcher call, policy calls and fetches, in the
//! same order, so results are identical (the behaviour snapshot and the libCacheSim parity tests hold
//! it); the prefetches go through [`Level::fill_prefetch_lean`].

use super::Level;
use crate::eventlog::{EventKind as K, Origin};
use crate::policy::{flags, Insert, Policy};
use crate::prefetch::{CacheView, Outcome, PrefetchCtx};
use crate::request::{Fetch, Request};

impl<P: Policy> Level<P> {
    /// Whether `req` (with `demand_len` demand blocks) can take [`Level::access_one_prefetching`]: one
    /// demand block at a level with an active prefetcher and default demand options (fixed at
    /// construction), without event log, readmore blocks or timed pins.
    #[inline(always)]
    pub(super) fn takes_one_block_prefetch_path(&self, req: &Request, demand_len: u32) -> bool {
        self.one_block_prefetching && req.len == 1 && demand_len == 1 && !self.extra && !self.pins.on
    }

    /// Serve the one demand block of `req` ([`Level::takes_one_block_prefetch_path`] holds).
    #[inline(always)]
    pub(super) fn access_one_prefetching(&mut self, req: &Request, out: &mut Vec<Fetch>) {
        let block = req.first;
        self.counters.requests += 1;
        self.outcomes.clear();
        self.policy.on_access(block);
        self.counters.demand_accesses += 1;
        let outcome = match self.table.get(block) {
            None => {
                self.counters.misses += 1;
                Outcome::Miss
            }
            Some(slot) => {
                let e = *self.table.entry(slot);
                // Blocks are pinned only while the timed pins are on, which this path excludes.
                debug_assert!(!e.pinned(), "block {block} pinned outside a timed run");
                let first_use = e.unused_prefetch();
                self.counters.hits += 1;
                if first_use {
                    self.counters.prefetch_hits += 1;
                }
                self.mark_used::<false>(slot, e, first_use);
                self.policy.on_hit(slot, &self.table, first_use);
                self.table.entry_mut(slot).flags |= flags::ACCESSED;
                if first_use {
                    Outcome::PrefetchHit
                } else {
                    Outcome::Hit
                }
            }
        };
        self.outcomes.push(outcome);

        self.plan.clear();
        if !(self.pf_skips_hits && outcome == Outcome::Hit) {
            let mut ctx = PrefetchCtx {
                req,
                demand_len: 1,
                outcomes: &self.outcomes,
                cache: CacheView::new(&self.table, self.data_capacity),
                plan: &mut self.plan,
            };
            self.prefetcher.on_access(&mut ctx);
        }

        let from = out.len();
        if outcome == Outcome::Miss {
            let how = Insert { placement: self.plan.demand_placement, ..Insert::demand() };
            let stream = self.plan.demand_stream.unwrap_or(req.stream);
            self.pins.cur_fetch = out.len() as u32;
            // A demand block that finds no evictable room is served without being cached.
            if self.admit(block, stream, flags::ACCESSED, &how).is_some() {
                self.note(K::Insert, Origin::Demand, block);
            }
            out.push(Fetch { first: block, len: 1, demand_len: 1, stream: req.stream, client: req.client });
        }
        if !self.plan.runs.is_empty() {
            if self.pins.apart {
                self.fill_prefetch(req, out, from);
            } else {
                self.fill_prefetch_lean(req, out, from);
            }
        }
        if self.wants_evictions {
            // Marks kept over an old copy this access evicted are settled now (Prefetcher::after_access).
            self.prefetcher.after_access(CacheView::new(&self.table, self.data_capacity));
        }
        for f in &out[from..] {
            self.counters.fetches += 1;
            self.counters.fetched_blocks += u64::from(f.len);
        }
        if self.charge {
            self.charge_metadata();
        }
        self.answer_end = None;
    }
}
