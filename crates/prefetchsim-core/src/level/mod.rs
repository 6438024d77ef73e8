//! A level: one cache node = a replacement policy + a prefetcher + counters.
//!
//! A level answers a request with per-block hits and misses and a list of [`Fetch`]es for the level
//! below (its demand misses and its prefetches); it never knows about time. The engines drive it: the
//! instant engine feeds the fetches straight to the next level, the timed engine pins the blocks in flight
//! ([`pins`]).
//!
//! What the engines hold is a [`Box<dyn AnyLevel>`](AnyLevel): the core trait [`CacheLevel`] (look-up,
//! admission, eviction, counters) plus one trait per role, none with defaults, each in its own file:
//! [`Pinning`] (the timed engine), [`Coordination`] (PFC's hooks), [`Demotion`] (DU/DEMOTE),
//! [`EventLog`] and [`Instances`] (levels of several caches, [`fanout::FanOut`]). A wrapper writes the
//! methods it changes and forwards the rest with [`forward_level!`](crate::forward_level).
//!
//! This file is the cache level proper ([`Level`]); [`protect`] keeps unused prefetched blocks (second
//! chance, raise, the one "mark used"), [`exclusive`] the DU/DEMOTE rules.

pub mod coordination;
mod demand;
pub mod events;
pub mod exclusive;
pub mod exclusive_options;
pub mod fanout;
mod fetches;
mod forward;
mod in_place;
pub mod pins;
mod prefetch_one;
pub mod protect;

use serde::{Deserialize, Serialize};

pub use coordination::Coordination;
pub use events::EventLog;
pub use exclusive::{Demotion, Exclusive};
pub use exclusive_options::{DemoteInsertPos, DemoteReadPos, DuPosition};
pub use fanout::Instances;
pub use pins::Pinning;

use crate::eventlog::{EventKind as K, LevelEvent, Origin};
use crate::metrics::LevelCounters;
use crate::policy::{flags, BlockTable, Entry, FirstHit, Insert, Placement, Policy, Slot};
use crate::prefetch::{LevelGeometry, Outcome, PrefetchCtx, PrefetchPlan, Prefetcher};
use crate::request::{Fetch, Request};
use pins::Pins;
use protect::Protect;

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
    /// Take the prefetcher's metadata out of the capacity (default false): after each request the level
    /// holds at most `capacity - ceil(metadata_bytes / block_size)` blocks (at least one), evicting down
    /// to it. CMimircache and the Mithril paper count metadata this way; a prefetcher can also ask for it
    /// itself (Mithril's `paper` preset).
    pub charge_metadata: bool,
    /// Exclusive caching against the level above (`none`, `du`, `demote`; multilevel.md). Only for a level
    /// below another.
    pub exclusive: Exclusive,
    /// DU: a block sent up goes to the eviction end (`lru_end`, default) or leaves (`evict_now`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub du_position: Option<DuPosition>,
    /// DU: the blocks this level prefetches go to the eviction end too (default false: they keep their
    /// place until asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub du_on_prefetch: Option<bool>,
    /// DEMOTE: a block sent up stays at the eviction end (`lru_end`, default) or leaves (`none`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demote_read_pos: Option<DemoteReadPos>,
    /// DEMOTE: where a demoted block goes (`mru`, default, or `lru_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demote_insert_pos: Option<DemoteInsertPos>,
}

impl Default for LevelOptions {
    fn default() -> Self {
        Self {
            pf_second_chance: 0,
            first_hit: FirstHit::Promote,
            pf_insert: Placement::Default,
            consume_on_hit: false,
            cache_demand_miss: true,
            charge_metadata: false,
            exclusive: Exclusive::None,
            du_position: None,
            du_on_prefetch: None,
            demote_read_pos: None,
            demote_insert_pos: None,
        }
    }
}

/// The core of a level: what every engine uses. At most 15 methods; the roles are separate traits.
pub trait CacheLevel: Send {
    /// Serve `req`, whose first `demand_len` blocks are demand blocks; append what must be fetched from
    /// below to `out` (not cleared).
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>);
    /// The per-block outcomes of the last [`CacheLevel::access`], in block order.
    fn last_outcomes(&self) -> &[Outcome];
    /// End-of-run accounting (unused prefetched blocks still resident).
    fn finish(&mut self);
    /// The counters.
    fn counters(&self) -> &LevelCounters;
    /// Zero the counters (end of warm-up); cache contents stay.
    fn reset_counters(&mut self);
    /// Capacity in blocks.
    fn capacity(&self) -> usize;
    /// Blocks the level may hold now: the capacity, less the charged metadata (option
    /// `charge_metadata`).
    fn data_capacity(&self) -> usize;
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
    /// Set the block size in bytes (default 4096); the prefetcher learns it (metadata limits).
    fn set_block_bytes(&mut self, bytes: u64);
    /// The prefetcher's metadata in bytes.
    fn metadata_bytes(&self) -> u64;
    /// The policy's knowledge of the future (`opt`; [`crate::optimal`]), if it has one.
    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future>;
}

/// A level whose policy is known only at run time: what engines and hierarchies hold. The core and every
/// role; implemented for any type that implements them all.
pub trait AnyLevel: CacheLevel + Pinning + Coordination + Demotion + EventLog + Instances {}

impl<T: CacheLevel + Pinning + Coordination + Demotion + EventLog + Instances + ?Sized> AnyLevel for T {}

/// Block size a level assumes until told otherwise ([`CacheLevel::set_block_bytes`]).
pub const DEFAULT_BLOCK_BYTES: u64 = 4096;

/// A cache level with policy `P`.
pub struct Level<P: Policy> {
    table: BlockTable,
    policy: P,
    prefetcher: Box<dyn Prefetcher>,
    capacity: usize,
    /// The capacity less the charged metadata (equal to `capacity` unless metadata is charged).
    data_capacity: usize,
    block_bytes: u64,
    /// Whether the prefetcher's metadata is taken out of the capacity.
    charge: bool,
    opts: LevelOptions,
    /// The prefetcher hears evictions ([`crate::prefetch::Capabilities::wants_evictions`]).
    wants_evictions: bool,
    /// False for the `none` prefetcher: the per-request call and plan are skipped.
    pf_active: bool,
    /// The prefetcher is not called for a request of plain hits
    /// ([`crate::prefetch::Capabilities::hits_are_noops`]).
    pf_skips_hits: bool,
    /// No prefetcher, no metadata charge and default demand options: one-block demand accesses may take
    /// the straight path ([`demand`]) while no event log, readmore block or timed pin needs the general
    /// one.
    plain: bool,
    /// An active prefetcher, a positive capacity and default demand options: one-block demand accesses
    /// may take the straight path of [`prefetch_one`] while no event log, readmore block or timed pin
    /// needs the general one.
    one_block_prefetching: bool,
    /// Unused prefetched blocks: second chances, raise.
    protect: Protect,
    counters: LevelCounters,
    outcomes: Vec<Outcome>,
    plan: PrefetchPlan,
    evicted: Option<Vec<u64>>,
    /// With `evicted` on: blocks inserted since the last `take_evictions` (the current access's), and
    /// the evicted blocks whose copy was one of them (never ready).
    inserted_since_take: Vec<u64>,
    fresh_evicted: Vec<u64>,
    /// The timed engine's in-flight state (off in the instant engine).
    pins: Pins,
    /// The event log's buffer, while recording.
    log: Option<Vec<LevelEvent>>,
    /// Where the current access's look-up events begin in `log`.
    log_mark: usize,
    /// The event log is on or some block was marked as readmore (PFC): accesses take the path that
    /// handles them.
    extra: bool,
    /// [`Coordination::set_answer_end`] for the next access (cleared by it).
    answer_end: Option<u64>,
    /// Evictions need none of the protection, pin and log machinery: a full level admits a block in
    /// its victim's slot ([`in_place`]). Kept by [`Level::refresh_in_place`], which every setter of what
    /// it depends on calls.
    in_place: bool,
}

impl<P: Policy> Level<P> {
    /// A level of `capacity` blocks.
    pub fn new(capacity: usize, policy: P, mut prefetcher: Box<dyn Prefetcher>, opts: LevelOptions) -> Self {
        let caps = prefetcher.attach(LevelGeometry { capacity, block_bytes: DEFAULT_BLOCK_BYTES });
        let charge = opts.charge_metadata || caps.charge_metadata;
        let default_demand =
            capacity > 0 && opts.cache_demand_miss && !opts.consume_on_hit && opts.exclusive == Exclusive::None;
        let plain = !caps.active && !charge && default_demand;
        let one_block_prefetching = caps.active && default_demand;
        let mut level = Self {
            table: BlockTable::with_capacity(capacity),
            policy,
            prefetcher,
            capacity,
            data_capacity: capacity,
            block_bytes: DEFAULT_BLOCK_BYTES,
            charge,
            protect: Protect::new(
                opts.pf_second_chance.max(caps.second_chances),
                opts.pf_second_chance.max(caps.second_component_chances.unwrap_or(caps.second_chances)),
                caps.raises,
            ),
            opts,
            wants_evictions: caps.wants_evictions,
            pf_active: caps.active,
            pf_skips_hits: caps.hits_are_noops,
            plain,
            one_block_prefetching,
            counters: LevelCounters::default(),
            outcomes: Vec::with_capacity(64),
            plan: PrefetchPlan::default(),
            evicted: None,
            inserted_since_take: Vec::new(),
            fresh_evicted: Vec::new(),
            pins: Pins::default(),
            log: None,
            log_mark: 0,
            extra: false,
            answer_end: None,
            in_place: false,
        };
        level.refresh_in_place();
        level.charge_metadata();
        level
    }

    /// The prefetcher (tests read its metadata).
    #[must_use]
    pub fn prefetcher(&self) -> &dyn Prefetcher {
        self.prefetcher.as_ref()
    }

    /// Recompute the room left by the charged metadata and evict down to it.
    fn charge_metadata(&mut self) {
        if !self.charge {
            return;
        }
        let meta = self.prefetcher.metadata_bytes();
        let blocks = usize::try_from(meta.div_ceil(self.block_bytes.max(1))).unwrap_or(usize::MAX);
        self.data_capacity = self.capacity.saturating_sub(blocks).max(1).min(self.capacity);
        while self.table.len() > self.data_capacity {
            if !self.evict_one() {
                break;
            }
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

    /// The evicted block in `slot` (already out of the policy) leaves the table.
    fn remove_evicted(&mut self, slot: Slot, entry: Entry) {
        if entry.counts_unused() {
            let measured = u64::from(entry.measured());
            self.counters.unused_evicted += measured;
            self.counters.readmore_unused_evicted += measured * u64::from(entry.flags & flags::READMORE != 0);
            self.note(K::EvictUnused, events::origin_of(entry), entry.block);
        } else {
            self.note(K::Evict, Origin::Demand, entry.block);
        }
        if entry.unused_prefetch() {
            self.protect.release(slot);
        }
        self.counters.evictions += 1;
        self.table.remove(slot);
        if self.wants_evictions {
            self.prefetcher.on_evicted_in(&entry, pins::cache_view(&self.table, self.data_capacity, &self.pins));
        }
        if let Some(log) = &mut self.evicted {
            log.push(entry.block);
            if self.inserted_since_take.contains(&entry.block) {
                self.fresh_evicted.push(entry.block);
            }
        }
    }

    /// Evict one block to make room. Returns false when no block can be evicted.
    fn evict_one(&mut self) -> bool {
        let pf = &self.prefetcher;
        if let Some(slot) = self.protect.overflow(&self.table, || pf.raise()) {
            let entry = *self.table.entry(slot);
            self.policy.on_remove(slot, &self.table);
            self.remove_evicted(slot, entry);
            return true;
        }
        let mut kept = 0usize;
        loop {
            let Some(slot) = self.policy.victim(&self.table) else {
                return false;
            };
            let entry = *self.table.entry(slot);
            let pf = &self.prefetcher;
            if entry.unused_prefetch() && self.protect.raised(kept, &entry, || pf.raise()) {
                // Raised priority (STEP §4.4): back to the insertion end, as a second chance puts it, and
                // the policy picks again (counted as a pass, without calling the prefetcher).
                kept += 1;
                let e = self.table.entry_mut(slot);
                e.chances = e.chances.saturating_add(1);
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                continue;
            }
            if self.protect.second_chance(&entry) {
                self.table.entry_mut(slot).chances += 1;
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                self.prefetcher.on_second_chance(&entry, pins::cache_view(&self.table, self.data_capacity, &self.pins));
                continue;
            }
            self.policy.on_evicted(slot, &self.table);
            self.remove_evicted(slot, entry);
            return true;
        }
    }

    /// Make room for one block and insert it. Returns its slot, or `None` when nothing could be evicted.
    #[inline(always)]
    fn admit(&mut self, block: u64, stream: u32, flag: u8, how: &Insert) -> Option<Slot> {
        self.policy.on_miss(block, how.origin, &self.table);
        if self.in_place && self.table.len() == self.data_capacity {
            return self.admit_in_place(block, stream, flag, how);
        }
        while self.table.len() >= self.data_capacity {
            if !self.evict_one() {
                return None;
            }
        }
        // Making room may have evicted the block this one should follow (its slot is free now and could be
        // reused by this very block).
        let how = &Insert { after: how.after.filter(|&s| self.table.is_occupied(s)), ..*how };
        let slot = self.table.insert(block, stream, flag);
        if self.evicted.is_some() {
            // DEMOTE above: which evicted copies were never ready (`take_evictions`).
            self.inserted_since_take.push(block);
        }
        self.policy.on_insert(slot, &self.table, how);
        if self.pins.on {
            self.pins.inserted(slot, block);
        }
        Some(slot)
    }
}

impl<P: Policy> Level<P> {
    /// [`CacheLevel::access`]. `EXTRA`: the event log is on or readmore blocks may be resident; without
    /// either, the look-up loop has no code for them (a PFC-free run without `--events` runs what it ran
    /// before them). The loop records only its rare events (in flight, consumed, first uses); the hits and
    /// misses are recorded from the outcomes after it ([`Level::log_outcomes`]).
    #[inline(always)]
    fn access_body<const EXTRA: bool>(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        self.counters.requests += 1;
        self.outcomes.clear();
        if EXTRA && self.log.is_some() {
            self.log_request(req);
        }
        // DU `evict_now`, DEMOTE `none`: what this level sends up leaves it.
        let demote = self.opts.drops_sent_up();
        if self.pins.on {
            self.pins.begin_access(out.len());
        }
        for (i, block) in req.blocks().enumerate() {
            self.policy.on_access(block);
            let is_demand = (i as u32) < demand_len;
            if is_demand {
                self.counters.demand_accesses += 1;
            } else {
                self.counters.upper_prefetch_accesses += 1;
            }
            let outcome = match self.table.get(block) {
                // Timed mode: a block an earlier access evicted while reading it, its read still in flight.
                None => match if self.pins.on { self.orphan_read(block) } else { None } {
                    // Timed mode: a block an earlier access evicted while reading it, its read in flight.
                    // It is cached again only after the look-ups ([`Level::rejoin_deferred`]): caching it
                    // here could evict a block this request has yet to look up. An upper level's prefetch
                    // of it waits for that read too, as for a block in flight in a frame (before, it read
                    // the block a second time: a 24-block Linux window into a 14-block MQ level, whose
                    // blocks an upper TaP then prefetched).
                    Some(tag) => {
                        self.pins.pending_orphan(block, tag, is_demand);
                        if is_demand {
                            self.counters.misses += 1;
                            self.counters.inflight_demand_joins += 1;
                        }
                        Outcome::Pending
                    }
                    None => {
                        if is_demand {
                            self.counters.misses += 1;
                        }
                        Outcome::Miss
                    }
                },
                Some(slot) => {
                    let e = *self.table.entry(slot);
                    if e.pinned() {
                        // In flight (timed mode only): the access waits for the read, no new I/O. It is a
                        // reference all the same, so the policy and the flags see it as the instant engine
                        // sees the hit it would have been.
                        let first_use = e.unused_prefetch();
                        if is_demand {
                            self.counters.misses += 1;
                            if first_use {
                                self.counters.late_prefetch += 1;
                                self.prefetcher.on_late(block);
                            } else {
                                self.counters.inflight_demand_joins += 1;
                            }
                        }
                        if EXTRA && self.log.is_some() {
                            let kind = match (is_demand, first_use) {
                                (true, true) => K::Late,
                                (true, false) => K::Join,
                                (false, _) => K::UpperPending,
                            };
                            self.push_event(LevelEvent::block(kind, Origin::None, block));
                        }
                        self.mark_used::<EXTRA>(slot, e, first_use);
                        self.policy.on_hit(slot, &self.table, first_use);
                        self.table.entry_mut(slot).flags |= flags::ACCESSED;
                        if demote {
                            self.pins.drop_on_arrival.push(block);
                        }
                        self.pins.pending(slot);
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
                        self.mark_used::<EXTRA>(slot, e, first_use);
                        if self.opts.consume_on_hit || demote {
                            self.policy.on_consumed_hit(slot, &self.table, first_use);
                            self.table.remove(slot);
                            if EXTRA && self.log.is_some() {
                                self.push_event(LevelEvent::block(K::Removed, Origin::None, block));
                            }
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
        if EXTRA && self.log.is_some() {
            self.log_outcomes(req, demand_len);
        }

        if self.pf_active {
            self.plan.clear();
        }
        if self.pf_active && !(self.pf_skips_hits && self.outcomes.iter().all(|&o| o == Outcome::Hit)) {
            let mut ctx = PrefetchCtx {
                req,
                demand_len,
                outcomes: &self.outcomes,
                cache: pins::cache_view(&self.table, self.data_capacity, &self.pins),
                plan: &mut self.plan,
            };
            self.prefetcher.on_access(&mut ctx);
        }

        let from = out.len();
        if !self.pins.rejoins.is_empty() {
            self.rejoin_deferred(req.stream);
        }
        self.fill_demand(req, demand_len, out);
        if self.opts.sent_up_to_eviction_end() {
            self.du_sent_up(req);
        }
        if !self.plan.runs.is_empty() {
            if EXTRA || self.pins.on || self.pins.apart {
                self.fill_prefetch(req, out, from);
            } else {
                self.fill_prefetch_lean(req, out, from);
            }
            if self.opts.prefetched_to_eviction_end() {
                self.du_prefetched(req, &out[from..]);
            }
        }
        if self.wants_evictions {
            // Marks kept over an old copy this access evicted are settled now (Prefetcher::after_access).
            self.prefetcher.after_access(pins::cache_view(&self.table, self.data_capacity, &self.pins));
        }
        for f in &out[from..] {
            self.counters.fetches += 1;
            self.counters.fetched_blocks += u64::from(f.len);
        }
        if EXTRA && self.log.is_some() {
            self.note_fetches(&out[from..]);
        }
        if self.charge {
            self.charge_metadata();
        }
        self.answer_end = None;
    }

    /// Cache `block`, ready (its data is here: a demotion or a bypassed read), at `placement`; its slot,
    /// unless nothing could be evicted.
    fn admit_ready(&mut self, block: u64, placement: Placement) -> Option<Slot> {
        let timed = std::mem::replace(&mut self.pins.on, false);
        let slot = self.admit(block, 0, flags::ACCESSED, &Insert { placement, ..Insert::demand() });
        if slot.is_some() {
            self.note(K::InsertReady, Origin::Demand, block);
        }
        self.pins.on = timed;
        slot
    }
}

impl<P: Policy> CacheLevel for Level<P> {
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        if self.takes_one_block_path(req, demand_len) {
            self.access_one(req, out);
        } else if self.takes_one_block_prefetch_path(req, demand_len) {
            self.access_one_prefetching(req, out);
        } else if self.extra {
            self.access_body::<true>(req, demand_len, out);
        } else {
            self.access_body::<false>(req, demand_len, out);
        }
    }

    fn last_outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    fn finish(&mut self) {
        let (mut resident, mut inflight) = (0u64, 0u64);
        for (_, e) in self.table.iter() {
            if e.counts_unused() && e.measured() {
                if e.pinned() {
                    inflight += 1;
                } else {
                    resident += 1;
                }
            }
        }
        self.counters.unused_resident_end = resident;
        self.counters.prefetch_inflight_end = inflight;
    }

    fn counters(&self) -> &LevelCounters {
        &self.counters
    }

    fn reset_counters(&mut self) {
        self.counters = LevelCounters::default();
        // The prefetches issued so far are not in the new `prefetch_issued`: leave them out of the rest.
        let issued: Vec<Slot> = self.table.iter().filter(|(_, e)| e.counts_unused()).map(|(s, _)| s).collect();
        for slot in issued {
            self.table.entry_mut(slot).flags |= flags::WARMUP;
        }
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn data_capacity(&self) -> usize {
        self.data_capacity
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
        if self.table.len() > self.data_capacity {
            return Err(format!(
                "{} blocks resident but only {} left beside the charged metadata",
                self.table.len(),
                self.data_capacity
            ));
        }
        for (slot, e) in self.table.iter() {
            if self.table.get(e.block) != Some(slot) {
                return Err(format!("block {} in slot {slot} is not mapped to it", e.block));
            }
        }
        let pinned = self.pinned_count();
        if pinned != self.table.pinned_len() {
            return Err(format!("{pinned} blocks pinned but the table counts {}", self.table.pinned_len()));
        }
        self.protect.check(&self.table)?;
        self.policy.check(&self.table)
    }

    fn set_block_bytes(&mut self, bytes: u64) {
        self.block_bytes = bytes.max(1);
        // The capabilities stay those of the first attachment (`Level::new`).
        let _ = self.prefetcher.attach(LevelGeometry { capacity: self.capacity, block_bytes: self.block_bytes });
        self.charge_metadata();
    }

    fn metadata_bytes(&self) -> u64 {
        self.prefetcher.metadata_bytes()
    }

    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future> {
        self.policy.future()
    }
}

impl<P: Policy> Instances for Level<P> {
    fn instances(&self) -> Vec<(u32, &dyn AnyLevel)> {
        Vec::new()
    }

    fn is_fan_out(&self) -> bool {
        false
    }

    fn instance_reports(&self) -> Vec<crate::metrics::InstanceReport> {
        Vec::new()
    }

    fn notes(&self) -> Vec<String> {
        let mut v = self.policy.notes(&self.counters);
        v.extend(self.prefetcher.notes());
        v
    }
}
