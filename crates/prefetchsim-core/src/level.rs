//! A level: one cache node = a replacement policy + a prefetcher + counters.
//!
//! A level answers a request with per-block hits and misses and a list of [`Fetch`]es for the level
//! below (its demand misses and its prefetches); it never knows about time. The engines drive it:
//! the instant engine feeds the fetches straight to the next level.

use serde::{Deserialize, Serialize};

use crate::metrics::LevelCounters;
use crate::policy::{flags, BlockTable, FirstHit, Insert, Placement, Policy, Slot};
use crate::prefetch::{CacheView, Outcome, PrefetchCtx, PrefetchPlan, Prefetcher};
use crate::request::{Fetch, Request};

/// Behaviour switches of a level that do not belong to one policy or prefetcher
/// (replacement.md §0 and §6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LevelOptions {
    /// Second chances for an unused prefetched block reaching the eviction end (default 0).
    pub pf_second_chance: u8,
    /// What a prefetched block's first demand hit does: `promote` (default) or `stay` (AMP).
    pub first_hit: FirstHit,
    /// Default placement of prefetched blocks: `default`/`mru` (default) or `lru`.
    pub pf_insert: Placement,
    /// A hit block leaves the cache (the Split paper's no-re-reference setting; default false).
    pub consume_on_hit: bool,
    /// Missed demand blocks are cached (default true; the Split paper's tables use false).
    pub cache_demand_miss: bool,
}

impl Default for LevelOptions {
    fn default() -> Self {
        Self {
            pf_second_chance: 0,
            first_hit: FirstHit::Promote,
            pf_insert: Placement::Default,
            consume_on_hit: false,
            cache_demand_miss: true,
        }
    }
}

/// A level whose policy is known only at run time: what engines and hierarchies hold.
pub trait AnyLevel: Send {
    /// Serve `req`, whose first `demand_len` blocks are demand blocks; append what must be fetched from
    /// below to `out` (not cleared).
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>);
    /// End-of-run accounting (unused prefetched blocks still resident).
    fn finish(&mut self);
    /// The counters.
    fn counters(&self) -> &LevelCounters;
    /// Zero the counters (end of warm-up); cache contents stay.
    fn reset_counters(&mut self);
    /// Capacity in blocks.
    fn capacity(&self) -> usize;
    /// Resident blocks.
    fn len(&self) -> usize;
    /// No resident block.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether `block` is resident.
    fn contains(&self, block: u64) -> bool;
    /// Resident blocks, sorted (tests and debugging).
    fn resident_blocks(&self) -> Vec<u64>;
    /// Check capacity, table and policy invariants (tests).
    fn check_invariants(&self) -> Result<(), String>;
    /// Blocks evicted since the last call, in eviction order (tests and exclusive caching), if
    /// recording was switched on with [`AnyLevel::record_evictions`].
    fn take_evicted(&mut self) -> Vec<u64>;
    /// Switch eviction recording on or off.
    fn record_evictions(&mut self, on: bool);
}

/// A cache level with policy `P`.
pub struct Level<P: Policy> {
    table: BlockTable,
    policy: P,
    prefetcher: Box<dyn Prefetcher>,
    capacity: usize,
    opts: LevelOptions,
    second_chances: u8,
    wants_evictions: bool,
    counters: LevelCounters,
    outcomes: Vec<Outcome>,
    plan: PrefetchPlan,
    evicted: Option<Vec<u64>>,
}

impl<P: Policy> Level<P> {
    /// A level of `capacity` blocks.
    pub fn new(capacity: usize, policy: P, prefetcher: Box<dyn Prefetcher>, opts: LevelOptions) -> Self {
        let second_chances = opts.pf_second_chance.max(prefetcher.second_chances());
        let wants_evictions = prefetcher.wants_evictions();
        Self {
            table: BlockTable::with_capacity(capacity),
            policy,
            prefetcher,
            capacity,
            opts,
            second_chances,
            wants_evictions,
            counters: LevelCounters::default(),
            outcomes: Vec::with_capacity(64),
            plan: PrefetchPlan::default(),
            evicted: None,
        }
    }

    /// The block table (tests).
    #[must_use]
    pub fn table(&self) -> &BlockTable {
        &self.table
    }

    /// The policy (tests read its lists).
    #[must_use]
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Evict one block to make room. Returns false when no block can be evicted.
    fn evict_one(&mut self) -> bool {
        loop {
            let Some(slot) = self.policy.victim(&self.table) else {
                return false;
            };
            let entry = *self.table.entry(slot);
            if entry.unused_prefetch() && entry.chances < self.second_chances {
                self.table.entry_mut(slot).chances += 1;
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                self.prefetcher.on_second_chance(&entry, CacheView::new(&self.table, self.capacity));
                continue;
            }
            if entry.unused_prefetch() {
                self.counters.unused_evicted += 1;
            }
            self.counters.evictions += 1;
            self.policy.on_evicted(slot, &self.table);
            self.table.remove(slot);
            if self.wants_evictions {
                self.prefetcher.on_evicted(&entry);
            }
            if let Some(log) = &mut self.evicted {
                log.push(entry.block);
            }
            return true;
        }
    }

    /// Make room for one block and insert it. Returns its slot, or `None` when nothing could be evicted.
    #[inline]
    fn admit(&mut self, block: u64, stream: u32, flag: u8, how: &Insert) -> Option<Slot> {
        self.policy.on_miss(block, how.origin, &self.table);
        while self.table.len() >= self.capacity {
            if !self.evict_one() {
                return None;
            }
        }
        // Making room may have evicted the block this one was to follow (a run longer than the cache);
        // its slot is then free and about to be reused by this very block.
        let mut how = *how;
        if how.after.is_some_and(|s| !self.table.is_occupied(s)) {
            how.after = None;
        }
        let slot = self.table.insert(block, stream, flag);
        self.policy.on_insert(slot, &self.table, &how);
        Some(slot)
    }

    /// Insert the missing demand blocks and append their fetches.
    fn fill_demand(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        let placement = self.plan.demand_placement;
        let stream = self.plan.demand_stream.unwrap_or(req.stream);
        let mut run: Option<Fetch> = None;
        for (i, block) in req.blocks().enumerate() {
            if self.outcomes[i] != Outcome::Miss {
                if let Some(f) = run.take() {
                    out.push(f);
                }
                continue;
            }
            let is_demand = (i as u32) < demand_len;
            if self.opts.cache_demand_miss && self.capacity > 0 {
                let how = Insert { placement, ..Insert::demand() };
                // A demand block that finds no evictable room is served without being cached.
                let _ = self.admit(block, stream, flags::ACCESSED, &how);
            }
            match &mut run {
                Some(f) if f.first + u64::from(f.len) == block => {
                    f.len += 1;
                    if is_demand {
                        f.demand_len = f.len;
                    }
                }
                _ => {
                    if let Some(f) = run.take() {
                        out.push(f);
                    }
                    run = Some(Fetch {
                        first: block,
                        len: 1,
                        demand_len: u32::from(is_demand),
                        stream: req.stream,
                        client: req.client,
                    });
                }
            }
        }
        if let Some(f) = run {
            out.push(f);
        }
    }

    /// Execute the prefetch runs of the plan and append their fetches. A prefetched block directly
    /// following the previous fetch of this request extends it: a demand read and its synchronous
    /// prefetch form one I/O.
    fn fill_prefetch(&mut self, req: &Request, out: &mut Vec<Fetch>, from: usize) {
        let runs = std::mem::take(&mut self.plan.runs);
        for run in &runs {
            let placement = match run.placement {
                Placement::Default => self.opts.pf_insert,
                p => p,
            };
            let mut prev: Option<(Slot, u64)> = None;
            for rank in 0..run.len {
                let Some(block) = run.first.checked_add(u64::from(rank)) else { break };
                if let Some(slot) = self.table.get(block) {
                    self.policy.on_prefetch_cached(slot, &self.table, rank);
                    continue;
                }
                if self.capacity == 0 {
                    self.counters.prefetch_dropped += 1;
                    continue;
                }
                // The previous newly inserted block of this run may have been evicted meanwhile.
                let after =
                    prev.and_then(|(s, b)| (self.table.is_occupied(s) && self.table.entry(s).block == b).then_some(s));
                let how = Insert::prefetch(rank, after, placement);
                let Some(slot) = self.admit(block, run.stream, flags::PREFETCHED, &how) else {
                    self.counters.prefetch_dropped += 1;
                    continue;
                };
                prev = Some((slot, block));
                self.counters.prefetch_issued += 1;
                match out[from..].last_mut() {
                    Some(f) if f.first + u64::from(f.len) == block => f.len += 1,
                    _ => {
                        out.push(Fetch { first: block, len: 1, demand_len: 0, stream: run.stream, client: req.client })
                    }
                }
            }
        }
        self.plan.runs = runs;
    }
}

impl<P: Policy> AnyLevel for Level<P> {
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        self.counters.requests += 1;
        self.outcomes.clear();
        for (i, block) in req.blocks().enumerate() {
            let is_demand = (i as u32) < demand_len;
            if is_demand {
                self.counters.demand_accesses += 1;
            } else {
                self.counters.upper_prefetch_accesses += 1;
            }
            let outcome = match self.table.get(block) {
                None => {
                    if is_demand {
                        self.counters.misses += 1;
                    }
                    Outcome::Miss
                }
                Some(slot) => {
                    let e = *self.table.entry(slot);
                    if e.pinned() {
                        if is_demand {
                            self.counters.misses += 1;
                            if e.prefetched() && !e.accessed() {
                                self.counters.late_prefetch += 1;
                            }
                        }
                        Outcome::Pending
                    } else {
                        let first_use = e.unused_prefetch();
                        if is_demand {
                            self.counters.hits += 1;
                            if first_use {
                                self.counters.prefetch_hits += 1;
                            }
                        } else {
                            self.counters.upper_prefetch_hits += 1;
                        }
                        if first_use {
                            self.counters.prefetch_used += 1;
                        }
                        if self.opts.consume_on_hit {
                            self.policy.on_consumed_hit(slot, &self.table, first_use);
                            self.table.remove(slot);
                        } else {
                            self.policy.on_hit(slot, &self.table, first_use);
                            self.table.entry_mut(slot).flags |= flags::ACCESSED;
                        }
                        if first_use {
                            Outcome::PrefetchHit
                        } else {
                            Outcome::Hit
                        }
                    }
                }
            };
            self.outcomes.push(outcome);
        }

        self.plan.clear();
        let mut ctx = PrefetchCtx {
            req,
            demand_len,
            outcomes: &self.outcomes,
            cache: CacheView::new(&self.table, self.capacity),
            plan: &mut self.plan,
        };
        self.prefetcher.on_access(&mut ctx);

        let from = out.len();
        self.fill_demand(req, demand_len, out);
        if !self.plan.runs.is_empty() {
            self.fill_prefetch(req, out, from);
        }
        for f in &out[from..] {
            self.counters.fetches += 1;
            self.counters.fetched_blocks += u64::from(f.len);
        }
    }

    fn finish(&mut self) {
        self.counters.unused_resident_end = self.table.iter().filter(|(_, e)| e.unused_prefetch()).count() as u64;
    }

    fn counters(&self) -> &LevelCounters {
        &self.counters
    }

    fn reset_counters(&mut self) {
        self.counters = LevelCounters::default();
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    fn contains(&self, block: u64) -> bool {
        self.table.contains(block)
    }

    fn resident_blocks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.table.iter().map(|(_, e)| e.block).collect();
        v.sort_unstable();
        v
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.table.len() > self.capacity {
            return Err(format!("{} blocks resident in a cache of {}", self.table.len(), self.capacity));
        }
        for (slot, e) in self.table.iter() {
            if self.table.get(e.block) != Some(slot) {
                return Err(format!("block {} in slot {slot} is not mapped to it", e.block));
            }
        }
        self.policy.check(&self.table)
    }

    fn take_evicted(&mut self) -> Vec<u64> {
        self.evicted.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn record_evictions(&mut self, on: bool) {
        self.evicted = on.then(Vec::new);
    }
}
