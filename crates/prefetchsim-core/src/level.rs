//! A level: one cache node = a replacement policy + a prefetcher + counters.
//!
//! A level answers a request with per-block hits and misses and a list of [`Fetch`]es for the level
//! below (its demand misses and its prefetches); it never knows about time. The engines drive it:
//! the instant engine feeds the fetches straight to the next level.
//!
//! In *timed mode* ([`AnyLevel::set_timed`], used by the timed engine) the blocks a request brings in
//! are reserved but not ready: right after the access, every block it inserted that is still resident
//! is pinned ([`AnyLevel::set_fetch_tags`]; `shared/docs/models/event-engine.md` §5; Linux allocates
//! page-cache pages before it issues the read). Pinning after the access, not at each insertion, keeps
//! every decision inside one access exactly as in the instant engine, so a timed run with zero
//! latencies counts what an instant run counts.
//! [`AnyLevel::complete`] makes blocks ready when their read arrives. A demand access to a pinned block
//! is an [`Outcome::Pending`] miss that waits for the read in flight: a late prefetch when the block was
//! prefetched and not yet used (the prefetcher hears [`Prefetcher::on_late`]), otherwise a join of an
//! in-flight demand read. The engine tags pinned blocks with the fetch that carries them
//! ([`AnyLevel::set_fetch_tags`]), so that a request finding a block pinned knows which read to wait
//! for and only that read's arrival unpins the block.

use serde::{Deserialize, Serialize};

use crate::eventlog::{EventKind as K, LevelEvent, Origin};
use crate::exclusive::Exclusive;
use crate::metrics::LevelCounters;
use crate::policy::list::{Links, List};
use crate::policy::{flags, BlockTable, Entry, FirstHit, Insert, Placement, Policy, Slot};
use crate::prefetch::{CacheView, LevelGeometry, Outcome, PrefetchCtx, PrefetchPlan, Prefetcher};
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
    /// Take the prefetcher's metadata out of the capacity (default false): after each request the level
    /// holds at most `capacity - ceil(metadata_bytes / block_size)` blocks (at least one), evicting down
    /// to it. CMimircache and the Mithril paper count metadata this way; a prefetcher can also ask for it
    /// itself (Mithril's `paper` preset).
    pub charge_metadata: bool,
    /// Exclusive caching against the level above (`none`, `du`, `demote`; multilevel.md). Only for a level
    /// below another.
    pub exclusive: Exclusive,
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
    /// Set the block size in bytes (default 4096); the prefetcher learns it (metadata limits).
    fn set_block_bytes(&mut self, _bytes: u64) {}
    /// The prefetcher's metadata in bytes.
    fn metadata_bytes(&self) -> u64 {
        0
    }
    /// Blocks the level may hold now: the capacity, less the charged metadata (option
    /// `charge_metadata`).
    fn data_capacity(&self) -> usize {
        self.capacity()
    }

    // Time support (timed engine). Defaults describe a level that cannot run timed, so wrappers written
    // before these methods existed keep compiling; the timed engine refuses such a level.

    /// Whether the level supports [`AnyLevel::set_timed`].
    fn supports_timed(&self) -> bool {
        false
    }
    /// Timed mode on or off: blocks brought in by an access are pinned (in flight) until
    /// [`AnyLevel::complete`]. Off (the default) is the instant engine's behaviour.
    fn set_timed(&mut self, _on: bool) {}
    /// Timed mode, `engine.prefetch_io = "apart"` (the last level only): the level's fetches never mix
    /// the blocks that answer the request with blocks it reads for itself (its prefetch, PFC's
    /// readmore), so that the engine can read the latter as I/Os of their own after the former. Returns
    /// whether the level can do this (the default cannot; the engine refuses it then).
    fn set_prefetch_apart(&mut self, _on: bool) -> bool {
        false
    }
    /// The next [`AnyLevel::access`] answers its requester with the blocks before `end` only; the
    /// request's blocks from `end` on are read for the level itself (PFC's readmore blocks appended to
    /// a forwarded request). With prefetch apart, no fetch of that access crosses `end`. Default: ignored.
    fn set_answer_end(&mut self, _end: u64) {}
    /// The per-block outcomes of the last [`AnyLevel::access`], in block order.
    fn last_outcomes(&self) -> &[Outcome] {
        &[]
    }
    /// Timed mode, right after every [`AnyLevel::access`]: pin the blocks that access brought in and
    /// kept, tagging each with the fetch carrying it, `ids[i]` for the access's `i`-th fetch. Tags are
    /// small integers (the engine's job indices). Returns how many blocks were pinned; fewer than the
    /// fetched blocks means some were not kept (no room, or evicted again within the access), so their
    /// reads have no resident block to wait on.
    fn set_fetch_tags(&mut self, _ids: &[u32]) -> u64 {
        0
    }
    /// Timed mode: for each [`Outcome::Pending`] of the last access, in block order, the tag of the
    /// fetch that carries the block.
    fn pending_tags(&self) -> &[u32] {
        &[]
    }
    /// Timed mode: the fetch tag of `block` if it is resident and pinned.
    fn pinned_tag(&self, _block: u64) -> Option<u32> {
        None
    }
    /// Fetch `tag` (blocks `first .. first + len`) arrived: those of its blocks that are still pinned
    /// under its tag become ready. A block pinned under another tag waits for that fetch: it was evicted
    /// and fetched again while this fetch was in flight.
    fn complete(&mut self, _first: u64, _len: u32, _tag: u32) {}
    /// Whether `block` is resident and pinned (in flight).
    fn is_pinned(&self, _block: u64) -> bool {
        false
    }
    /// Resident pinned blocks (tests: zero after a drained run).
    fn pinned_count(&self) -> usize {
        0
    }

    // Exclusive caching (DEMOTE) and coordination (PFC).

    /// DEMOTE: the level above (its instance serving `client`) evicted `block` and sends it down; cache
    /// it at the MRU end (a resident block is refreshed). Default: ignored.
    fn demote_in(&mut self, _block: u64, _client: u32) {}
    /// Cache `block`, ready, at the eviction end of the policy, with no access counted and nothing said
    /// to the prefetcher (PFC's `cache_bypassed`). A resident block is left as it is. Default: ignored.
    fn insert_cold(&mut self, _block: u64) {}
    /// The level's exclusive-caching mode (whether the engines must pass the level above's evictions).
    fn exclusive(&self) -> Exclusive {
        Exclusive::None
    }
    /// Whether `block` is resident or in flight, without touching the policy (PFC's look-ups).
    fn peek(&self, block: u64) -> bool {
        self.contains(block)
    }
    /// Whether the level holds as many blocks as it may (PFC's "L2 is full"; in-flight blocks count).
    fn is_full(&self) -> bool {
        self.len() >= self.data_capacity()
    }
    /// Count blocks a coordinator served from this level without the policy seeing them (PFC's silent
    /// hits) and blocks it read around the level (bypassed, not cached).
    fn count_coordinated(&mut self, _silent_hits: u64, _bypass_reads: u64, _readmore: u64) {}
    /// PFC: the bypassed `block`, resident or in flight here, was served to the level above without the
    /// policy seeing it (a silent hit): count the use of a prefetched or readmore block. Accounting only.
    fn silent_use(&mut self, _block: u64) {}
    /// PFC: blocks `first .. first + len` of the last access (which began at `access_first`) were appended
    /// by readmore: those it missed and cached count as prefetched (`readmore_issued`), and their first
    /// reference as a use. The policy and the prefetcher still see them as the demand blocks of that
    /// access. Accounting only.
    fn mark_readmore(&mut self, _access_first: u64, _first: u64, _len: u32) {}

    // The event log (`crate::eventlog`).

    /// Record events into the level's buffer (on) or not (off, the default; the buffer is dropped).
    fn record_events(&mut self, _on: bool) {}
    /// Hand the recorded events, oldest first, to `sink` with the instance each belongs to (0 for a level
    /// of one cache), and forget them.
    fn drain_events(&mut self, _sink: &mut dyn FnMut(u32, &LevelEvent)) {}
    /// Record an event a wrapper (PFC) observed, in order with the level's own (when recording).
    fn log_event(&mut self, _ev: LevelEvent) {}

    /// The policy's knowledge of the future (`opt`; [`crate::optimal`]). Default: none.
    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future> {
        None
    }

    // Levels of several caches ([`crate::fanout::FanOut`]).

    /// The independent caches of this level with their keys (client id or server index), in key order;
    /// empty for a level that is one cache.
    fn instances(&self) -> Vec<(u32, &dyn AnyLevel)> {
        Vec::new()
    }
    /// Whether the level is several caches that may each read the same block (the timed engine then
    /// makes a read of a block another instance is reading wait for that read).
    fn is_fan_out(&self) -> bool {
        false
    }
    /// Per-instance counters (the level's [`AnyLevel::counters`] are their sum); empty for one cache.
    fn instance_reports(&self) -> Vec<crate::metrics::InstanceReport> {
        Vec::new()
    }
}

/// Who brought `e` in, for the event log.
fn origin_of(e: Entry) -> Origin {
    if e.flags & flags::READMORE != 0 {
        Origin::Readmore
    } else if e.flags & flags::SECOND != 0 {
        Origin::Second
    } else if e.prefetched() {
        Origin::Native
    } else {
        Origin::Demand
    }
}

/// Block size a level assumes until told otherwise ([`AnyLevel::set_block_bytes`]).
pub const DEFAULT_BLOCK_BYTES: u64 = 4096;

/// "No tag" / end of a tag chain.
const NO_TAG: u32 = u32::MAX;
/// Tags below this are chained (a table indexed by tag); larger ones are found by block lookups.
const MAX_CHAINED_TAG: usize = 1 << 24;

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
    second_chances: u8,
    wants_evictions: bool,
    /// False for the `none` prefetcher: the per-request call and plan are skipped.
    pf_active: bool,
    /// The prefetcher raises the priority of unused prefetched blocks ([`Prefetcher::raise`]).
    raises: bool,
    /// Resident prefetched blocks without a demand access yet (the blocks a raise protects). Every path
    /// that inserts a prefetched block or removes or first-uses one keeps it exact; `check_invariants`
    /// verifies it.
    unused_resident: usize,
    /// With `raises`: the unused prefetched blocks in prefetch order, newest at the head.
    raised: List,
    raised_links: Links,
    counters: LevelCounters,
    outcomes: Vec<Outcome>,
    plan: PrefetchPlan,
    evicted: Option<Vec<u64>>,
    /// Timed mode: inserted blocks are pinned at the end of the access.
    timed: bool,
    /// Timed mode: (slot, block, index in `out` of its fetch) inserted by the current access.
    inserted: Vec<(Slot, u64, u32)>,
    /// Timed mode: index in `out` of the fetch the block being admitted goes to.
    cur_fetch: u32,
    /// Timed mode: `out.len()` when the current access began.
    fetch_base: u32,
    /// Timed mode: per slot, the tag of the fetch carrying the (pinned) block and its chain link.
    slot_tags: Vec<SlotTag>,
    /// Timed mode: tags of the pending blocks of the last access.
    pending: Vec<u32>,
    /// Timed mode: tagging passes so far.
    pass: u32,
    /// Timed mode: per tag, the first slot of the chain of blocks pinned under it (`NO_TAG`: none).
    tag_heads: Vec<u32>,
    /// DEMOTE in timed mode: blocks sent up while still in flight, dropped when their read arrives.
    drop_on_arrival: Vec<u64>,
    /// The event log's buffer, while recording.
    log: Option<Vec<LevelEvent>>,
    /// Where the current access's look-up events begin in `log`.
    log_mark: usize,
    /// The event log is on or some block was marked as readmore (PFC): accesses take the path that
    /// handles them.
    extra: bool,
    /// Timed mode, `prefetch_io = "apart"`: fetches do not mix answered blocks with prefetched ones.
    prefetch_apart: bool,
    /// [`AnyLevel::set_answer_end`] for the next access (cleared by it).
    answer_end: Option<u64>,
}

/// Timed mode: the fetch tag of a slot's pinned block.
#[derive(Clone, Copy, Debug)]
struct SlotTag {
    /// The fetch carrying the block.
    tag: u32,
    /// Next slot pinned under the same tag.
    next: u32,
    /// The tagging pass that last tagged it (a block inserted twice in one access is kept by its last
    /// insertion only).
    pass: u32,
}

impl<P: Policy> Level<P> {
    /// A level of `capacity` blocks.
    pub fn new(capacity: usize, policy: P, mut prefetcher: Box<dyn Prefetcher>, opts: LevelOptions) -> Self {
        let second_chances = opts.pf_second_chance.max(prefetcher.second_chances());
        let wants_evictions = prefetcher.wants_evictions();
        let pf_active = prefetcher.is_active();
        prefetcher.attach(LevelGeometry { capacity, block_bytes: DEFAULT_BLOCK_BYTES });
        let raises = prefetcher.raise().is_some();
        let charge = opts.charge_metadata || prefetcher.charge_metadata();
        let mut level = Self {
            table: BlockTable::with_capacity(capacity),
            policy,
            prefetcher,
            capacity,
            data_capacity: capacity,
            block_bytes: DEFAULT_BLOCK_BYTES,
            charge,
            opts,
            second_chances,
            wants_evictions,
            pf_active,
            raises,
            unused_resident: 0,
            raised: List::default(),
            raised_links: Links::default(),
            counters: LevelCounters::default(),
            outcomes: Vec::with_capacity(64),
            plan: PrefetchPlan::default(),
            evicted: None,
            timed: false,
            inserted: Vec::new(),
            cur_fetch: 0,
            fetch_base: 0,
            slot_tags: Vec::new(),
            pending: Vec::new(),
            pass: 0,
            tag_heads: Vec::new(),
            drop_on_arrival: Vec::new(),
            log: None,
            log_mark: 0,
            extra: false,
            prefetch_apart: false,
            answer_end: None,
        };
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

    /// Whether the unused prefetched victim `entry` keeps its place because its priority is raised
    /// ([`crate::prefetch::Raise`]): at most `cap` unused prefetched blocks, fewer than `passes` put-backs of
    /// this block, and `kept` (the victims already put back during this eviction) has not yet gone
    /// through all of them (then nothing but raised blocks is left to evict).
    #[inline]
    fn raised(&self, kept: usize, entry: &Entry) -> bool {
        self.raises
            && kept < self.unused_resident
            && self.prefetcher.raise().is_some_and(|r| self.unused_resident <= r.cap && entry.chances < r.passes)
    }

    /// With more unused prefetched blocks than the raise covers, the one prefetched longest ago (not in
    /// flight): the raised blocks form a partition of `cap` blocks in prefetch order.
    #[inline]
    fn raised_overflow(&self) -> Option<Slot> {
        if !self.raises || self.prefetcher.raise().is_none_or(|r| self.unused_resident <= r.cap) {
            return None;
        }
        self.raised.last_unpinned(&self.raised_links, &self.table)
    }

    /// Record an event when the log is on: a test and a branch not taken when it is off (the push is
    /// out of line, to keep the access loop small).
    #[inline(always)]
    fn note(&mut self, kind: K, origin: Origin, block: u64) {
        if self.log.is_some() {
            self.push_event(LevelEvent::block(kind, origin, block));
        }
    }

    #[cold]
    #[inline(never)]
    fn push_event(&mut self, ev: LevelEvent) {
        if let Some(log) = &mut self.log {
            log.push(ev);
        }
    }

    /// Record the start of an access; returns where its events begin in the buffer.
    #[cold]
    #[inline(never)]
    fn log_request(&mut self, req: &Request) {
        let Some(log) = &mut self.log else { return };
        log.push(LevelEvent { kind: K::Request, origin: Origin::None, block: req.first, len: req.len });
        self.log_mark = log.len();
    }

    /// Record the hits and misses of the access just looked up (from its outcomes), each block's before
    /// the events the look-up loop recorded for it (from `log_mark` on: in flight, first use, consumed).
    #[cold]
    #[inline(never)]
    fn log_outcomes(&mut self, req: &Request, demand_len: u32) {
        let Self { log, outcomes, log_mark, .. } = self;
        let Some(log) = log else { return };
        let in_loop: Vec<LevelEvent> = log.drain(*log_mark..).collect();
        let mut j = 0;
        for (i, &o) in outcomes.iter().enumerate() {
            let block = req.first + i as u64;
            let demand = (i as u32) < demand_len;
            let kind = match o {
                Outcome::Miss if demand => Some(K::Miss),
                Outcome::Miss => Some(K::UpperMiss),
                Outcome::Hit | Outcome::PrefetchHit if !demand => Some(K::UpperHit),
                Outcome::Hit => Some(K::Hit),
                Outcome::PrefetchHit => Some(K::PrefetchHit),
                // Recorded in the loop (late or join).
                Outcome::Pending => None,
            };
            if let Some(kind) = kind {
                log.push(LevelEvent::block(kind, Origin::None, block));
            }
            while j < in_loop.len() && in_loop[j].block == block {
                log.push(in_loop[j]);
                j += 1;
            }
        }
        log.extend_from_slice(&in_loop[j..]);
    }

    /// Record the fetches `out` of an access.
    #[cold]
    #[inline(never)]
    fn note_fetches(&mut self, out: &[Fetch]) {
        if let Some(log) = &mut self.log {
            for f in out {
                log.push(LevelEvent { kind: K::FetchSent, origin: Origin::None, block: f.first, len: f.len });
            }
        }
    }

    /// Record that the block in `slot` is ready (its read arrived).
    #[inline]
    fn note_arrived(&mut self, slot: Slot) {
        if let Some(log) = &mut self.log {
            let e = self.table.entry(slot);
            let origin = if e.counts_unused() { origin_of(*e) } else { Origin::Demand };
            log.push(LevelEvent::block(K::Arrived, origin, e.block));
        }
    }

    /// Accounting of a reference to the resident block `e` in `slot`: the first use of a prefetched block
    /// (native, unless a PFC silent hit used it already) or of a readmore block.
    #[inline]
    fn count_use(&mut self, slot: Slot, e: Entry) {
        if e.flags & (flags::PREFETCHED | flags::ACCESSED | flags::SILENT_USED) == flags::PREFETCHED {
            self.counters.prefetch_used += 1;
            self.counters.second_used += u64::from(e.flags & flags::SECOND != 0);
            self.note(K::PrefetchUsed, origin_of(e), e.block);
        } else if e.flags & flags::READMORE != 0 {
            self.table.entry_mut(slot).flags &= !flags::READMORE;
            self.counters.prefetch_used += 1;
            self.counters.readmore_used += 1;
            self.note(K::PrefetchUsed, Origin::Readmore, e.block);
        }
    }

    /// The evicted block in `slot` (already out of the policy) leaves the table.
    fn remove_evicted(&mut self, slot: Slot, entry: Entry) {
        if entry.counts_unused() {
            self.counters.unused_evicted += 1;
            self.counters.readmore_unused_evicted += u64::from(entry.flags & flags::READMORE != 0);
            self.note(K::EvictUnused, origin_of(entry), entry.block);
        } else {
            self.note(K::Evict, Origin::Demand, entry.block);
        }
        if entry.unused_prefetch() {
            self.unused_resident -= 1;
            if self.raises {
                self.raised.unlink(&mut self.raised_links, slot);
            }
        }
        self.counters.evictions += 1;
        self.table.remove(slot);
        if self.wants_evictions {
            self.prefetcher.on_evicted(&entry);
        }
        if let Some(log) = &mut self.evicted {
            log.push(entry.block);
        }
    }

    /// Evict one block to make room. Returns false when no block can be evicted.
    fn evict_one(&mut self) -> bool {
        if let Some(slot) = self.raised_overflow() {
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
            if entry.unused_prefetch() && self.raised(kept, &entry) {
                // Raised priority (STEP §4.4): back to the insertion end, as a second chance puts it, and
                // the policy picks again (counted as a pass, without calling the prefetcher).
                kept += 1;
                let e = self.table.entry_mut(slot);
                e.chances = e.chances.saturating_add(1);
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                continue;
            }
            if entry.unused_prefetch() && entry.chances < self.second_chances {
                self.table.entry_mut(slot).chances += 1;
                self.policy.on_insert(slot, &self.table, &Insert::second_chance());
                self.prefetcher.on_second_chance(&entry, CacheView::new(&self.table, self.data_capacity));
                continue;
            }
            self.policy.on_evicted(slot, &self.table);
            self.remove_evicted(slot, entry);
            return true;
        }
    }

    /// Make room for one block and insert it. Returns its slot, or `None` when nothing could be evicted.
    #[inline]
    fn admit(&mut self, block: u64, stream: u32, flag: u8, how: &Insert) -> Option<Slot> {
        self.policy.on_miss(block, how.origin, &self.table);
        while self.table.len() >= self.data_capacity {
            if !self.evict_one() {
                return None;
            }
        }
        // Making room may have evicted the block this one should follow (its slot is free now and could be
        // reused by this very block).
        let how = &Insert { after: how.after.filter(|&s| self.table.is_occupied(s)), ..*how };
        let slot = self.table.insert(block, stream, flag);
        self.policy.on_insert(slot, &self.table, how);
        if self.timed {
            self.inserted.push((slot, block, self.cur_fetch));
        }
        Some(slot)
    }

    /// Insert the missing demand blocks and append their fetches.
    #[inline(always)]
    fn fill_demand(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        let how = Insert { placement: self.plan.demand_placement, ..Insert::demand() };
        let stream = self.plan.demand_stream.unwrap_or(req.stream);
        // DEMOTE: a missed block goes up without being cached here.
        let cache_it = self.opts.cache_demand_miss && self.capacity > 0 && self.opts.exclusive != Exclusive::Demote;
        // A fetch is a run of consecutive missing blocks; its demand blocks are a prefix of it, since
        // the demand blocks are a prefix of the request.
        let push = |out: &mut Vec<Fetch>, from: u32, to: u32| {
            out.push(Fetch {
                first: req.first + u64::from(from),
                len: to - from,
                demand_len: demand_len.clamp(from, to) - from,
                stream: req.stream,
                client: req.client,
            });
        };
        // Prefetch apart: a run of missing blocks is cut where the answered blocks end (PFC's readmore
        // blocks past it are read as a prefetch of their own).
        let cut = match self.answer_end {
            Some(end) if self.prefetch_apart && end > req.first => (end - req.first).min(u64::from(req.len)) as u32,
            _ => req.len,
        };
        let mut run_from: Option<u32> = None;
        for i in 0..req.len {
            if i == cut {
                if let Some(from) = run_from.take() {
                    push(out, from, i);
                }
            }
            if self.outcomes[i as usize] != Outcome::Miss {
                if let Some(from) = run_from.take() {
                    push(out, from, i);
                }
                continue;
            }
            if cache_it {
                // A demand block that finds no evictable room is served without being cached.
                self.cur_fetch = out.len() as u32;
                let block = req.first + u64::from(i);
                if self.admit(block, stream, flags::ACCESSED, &how).is_some() {
                    self.note(K::Insert, Origin::Demand, block);
                }
            }
            run_from.get_or_insert(i);
        }
        if let Some(from) = run_from {
            push(out, from, req.len);
        }
    }

    /// Execute the prefetch runs of the plan and append their fetches. A prefetched block directly
    /// following the previous fetch of this request extends it: a demand read and its synchronous
    /// prefetch form one I/O. With prefetch apart, only a fetch of blocks past the answered ones
    /// (prefetched or read ahead) is extended.
    fn fill_prefetch(&mut self, req: &Request, out: &mut Vec<Fetch>, from: usize) {
        let answer_end = self.answer_end.unwrap_or(req.first + u64::from(req.len));
        let apart = self.prefetch_apart;
        // A fetch that a prefetched block may join.
        let joinable =
            move |f: &Fetch, block: u64| f.first + u64::from(f.len) == block && (!apart || f.first >= answer_end);
        let runs = std::mem::take(&mut self.plan.runs);
        let second_from = self.plan.second_from.unwrap_or(usize::MAX);
        for (index, run) in runs.iter().enumerate() {
            let (label, second) = if index >= second_from { (flags::SECOND, 1) } else { (0, 0) };
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
                    self.note(K::PrefetchDropped, Origin::None, block);
                    continue;
                }
                // The previous newly inserted block of this run may have been evicted meanwhile.
                let after =
                    prev.and_then(|(s, b)| (self.table.is_occupied(s) && self.table.entry(s).block == b).then_some(s));
                let how = Insert::prefetch(rank, after, placement);
                if self.timed {
                    let extends = matches!(out[from..].last(), Some(f) if joinable(f, block));
                    self.cur_fetch = (out.len() - usize::from(extends)) as u32;
                }
                let Some(slot) = self.admit(block, run.stream, flags::PREFETCHED | label, &how) else {
                    self.counters.prefetch_dropped += 1;
                    self.note(K::PrefetchDropped, Origin::None, block);
                    continue;
                };
                self.note(K::PrefetchIssued, if second == 1 { Origin::Second } else { Origin::Native }, block);
                prev = Some((slot, block));
                self.unused_resident += 1;
                if self.raises {
                    self.raised.push_front(&mut self.raised_links, slot);
                }
                self.counters.prefetch_issued += 1;
                self.counters.second_issued += second;
                match out[from..].last_mut() {
                    Some(f) if joinable(f, block) => f.len += 1,
                    _ => {
                        out.push(Fetch { first: block, len: 1, demand_len: 0, stream: run.stream, client: req.client })
                    }
                }
            }
        }
        self.plan.runs = runs;
    }
}

impl<P: Policy> Level<P> {
    /// [`AnyLevel::access`]. `EXTRA`: the event log is on or readmore blocks may be resident; without
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
        let demote = self.opts.exclusive == Exclusive::Demote;
        if self.timed {
            self.inserted.clear();
            self.pending.clear();
            self.fetch_base = out.len() as u32;
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
                None => {
                    if is_demand {
                        self.counters.misses += 1;
                    }
                    Outcome::Miss
                }
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
                        if first_use {
                            self.unused_resident -= 1;
                            if self.raises {
                                self.raised.unlink(&mut self.raised_links, slot);
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
                        if first_use || (EXTRA && e.flags & flags::READMORE != 0) {
                            self.count_use(slot, e);
                        }
                        self.policy.on_hit(slot, &self.table, first_use);
                        self.table.entry_mut(slot).flags |= flags::ACCESSED;
                        if demote {
                            self.drop_on_arrival.push(block);
                        }
                        self.pending.push(self.slot_tags.get(slot as usize).map_or(NO_TAG, |t| t.tag));
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
                            self.unused_resident -= 1;
                            if self.raises {
                                self.raised.unlink(&mut self.raised_links, slot);
                            }
                            self.count_use(slot, e);
                        } else if EXTRA && e.flags & flags::READMORE != 0 {
                            self.count_use(slot, e);
                        }
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
            let mut ctx = PrefetchCtx {
                req,
                demand_len,
                outcomes: &self.outcomes,
                cache: CacheView::new(&self.table, self.data_capacity),
                plan: &mut self.plan,
            };
            self.prefetcher.on_access(&mut ctx);
        }

        let from = out.len();
        self.fill_demand(req, demand_len, out);
        if self.opts.exclusive == Exclusive::Du {
            // DU: every block of the request goes up to the level above, which now holds it.
            for block in req.blocks() {
                if let Some(slot) = self.table.get(block) {
                    self.policy.demote(slot, &self.table);
                }
            }
        }
        if !self.plan.runs.is_empty() {
            self.fill_prefetch(req, out, from);
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
}

impl<P: Policy> AnyLevel for Level<P> {
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        if self.extra {
            self.access_body::<true>(req, demand_len, out);
        } else {
            self.access_body::<false>(req, demand_len, out);
        }
    }

    fn finish(&mut self) {
        let (mut resident, mut inflight) = (0u64, 0u64);
        for (_, e) in self.table.iter() {
            if e.counts_unused() {
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
        if self.table.len() > self.data_capacity {
            return Err(format!(
                "{} blocks resident but only {} left beside the charged metadata",
                self.table.len(),
                self.data_capacity
            ));
        }
        let mut unused = 0usize;
        for (slot, e) in self.table.iter() {
            if self.table.get(e.block) != Some(slot) {
                return Err(format!("block {} in slot {slot} is not mapped to it", e.block));
            }
            unused += usize::from(e.unused_prefetch());
        }
        if unused != self.unused_resident {
            return Err(format!("{unused} unused prefetched blocks resident, {} counted", self.unused_resident));
        }
        if self.raises {
            let mut n = 0usize;
            for s in self.raised.iter(&self.raised_links) {
                if !self.table.is_occupied(s) || !self.table.entry(s).unused_prefetch() {
                    return Err(format!("slot {s} on the raised list is not an unused prefetched block"));
                }
                n += 1;
            }
            if n != self.unused_resident || self.raised.len() != n {
                return Err(format!("raised list holds {n} blocks, {} unused prefetched", self.unused_resident));
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

    fn set_block_bytes(&mut self, bytes: u64) {
        self.block_bytes = bytes.max(1);
        self.prefetcher.attach(LevelGeometry { capacity: self.capacity, block_bytes: self.block_bytes });
        self.charge_metadata();
    }

    fn metadata_bytes(&self) -> u64 {
        self.prefetcher.metadata_bytes()
    }

    fn data_capacity(&self) -> usize {
        self.data_capacity
    }

    fn supports_timed(&self) -> bool {
        true
    }

    fn set_timed(&mut self, on: bool) {
        self.timed = on;
        self.inserted.clear();
        self.pending.clear();
    }

    fn set_prefetch_apart(&mut self, on: bool) -> bool {
        self.prefetch_apart = on;
        true
    }

    fn set_answer_end(&mut self, end: u64) {
        self.answer_end = Some(end);
    }

    fn set_fetch_tags(&mut self, ids: &[u32]) -> u64 {
        let bound = self.table.slot_bound();
        if self.slot_tags.len() < bound {
            self.slot_tags.resize(bound, SlotTag { tag: NO_TAG, next: NO_TAG, pass: 0 });
        }
        let max_id = ids.iter().copied().max().unwrap_or(0) as usize;
        if max_id < MAX_CHAINED_TAG && self.tag_heads.len() <= max_id {
            self.tag_heads.resize(max_id + 1, NO_TAG);
        }
        self.pass = self.pass.wrapping_add(1);
        if self.pass == 0 {
            self.slot_tags.iter_mut().for_each(|t| t.pass = 0);
            self.pass = 1;
        }
        let Self { inserted, table, slot_tags, tag_heads, pass, fetch_base, .. } = self;
        let mut kept = 0;
        // Newest first: a block inserted, evicted and inserted again belongs to its last fetch.
        for &(slot, block, fetch) in inserted.iter().rev() {
            if !(table.is_occupied(slot) && table.entry(slot).block == block) {
                continue;
            }
            let st = &mut slot_tags[slot as usize];
            if st.pass == *pass {
                continue;
            }
            let Some(&id) = ids.get((fetch - *fetch_base) as usize) else { continue };
            table.entry_mut(slot).flags |= flags::PINNED;
            st.tag = id;
            st.pass = *pass;
            kept += 1;
            // Chain the slot under its tag, so that the fetch's arrival finds its blocks without lookups.
            if let Some(h) = tag_heads.get_mut(id as usize) {
                st.next = *h;
                *h = slot;
            }
        }
        inserted.clear();
        kept
    }

    fn pending_tags(&self) -> &[u32] {
        &self.pending
    }

    fn pinned_tag(&self, block: u64) -> Option<u32> {
        let slot = self.table.get(block)?;
        self.table.entry(slot).pinned().then(|| self.slot_tags.get(slot as usize).map(|t| t.tag)).flatten()
    }

    fn last_outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    fn complete(&mut self, first: u64, len: u32, tag: u32) {
        if let Some(log) = &mut self.log {
            log.push(LevelEvent { kind: K::FetchDone, origin: Origin::None, block: first, len });
        }
        let t = tag as usize;
        if t < MAX_CHAINED_TAG {
            // Every slot chained under the tag is still pinned under it: pinned blocks are not evicted and
            // only this call unpins them.
            let mut slot = self.tag_heads.get(t).copied().unwrap_or(NO_TAG);
            while slot != NO_TAG {
                self.table.entry_mut(slot).flags &= !flags::PINNED;
                self.note_arrived(slot);
                slot = self.slot_tags[slot as usize].next;
            }
            if let Some(h) = self.tag_heads.get_mut(t) {
                *h = NO_TAG;
            }
            self.drop_arrived();
            return;
        }
        for block in first..first + u64::from(len) {
            if let Some(slot) = self.table.get(block) {
                if self.slot_tags.get(slot as usize).is_some_and(|t| t.tag == tag) {
                    self.table.entry_mut(slot).flags &= !flags::PINNED;
                    self.note_arrived(slot);
                }
            }
        }
        self.drop_arrived();
    }

    fn is_pinned(&self, block: u64) -> bool {
        self.table.lookup(block).is_some_and(Entry::pinned)
    }

    fn pinned_count(&self) -> usize {
        self.table.iter().filter(|(_, e)| e.pinned()).count()
    }

    fn demote_in(&mut self, block: u64, _client: u32) {
        self.counters.demoted_in += 1;
        self.note(K::DemoteIn, Origin::None, block);
        if let Some(slot) = self.table.get(block) {
            let e = *self.table.entry(slot);
            // A block this level prefetched and nobody used yet keeps its prefetch accounting.
            if !e.pinned() && !e.unused_prefetch() {
                self.policy.on_hit(slot, &self.table, false);
            }
            return;
        }
        if self.capacity == 0 {
            return;
        }
        // The data comes with the demotion: the block is ready, never pinned.
        let timed = std::mem::replace(&mut self.timed, false);
        if self.admit(block, 0, flags::ACCESSED, &Insert { placement: Placement::Mru, ..Insert::demand() }).is_some() {
            self.note(K::InsertReady, Origin::Demand, block);
        }
        self.timed = timed;
    }

    fn insert_cold(&mut self, block: u64) {
        if self.capacity == 0 || self.table.get(block).is_some() {
            return;
        }
        let timed = std::mem::replace(&mut self.timed, false);
        if self.admit(block, 0, flags::ACCESSED, &Insert { placement: Placement::Lru, ..Insert::demand() }).is_some() {
            self.note(K::InsertReady, Origin::Demand, block);
        }
        self.timed = timed;
    }

    fn exclusive(&self) -> Exclusive {
        self.opts.exclusive
    }

    fn count_coordinated(&mut self, silent_hits: u64, bypass_reads: u64, readmore: u64) {
        self.counters.silent_hits += silent_hits;
        self.counters.bypass_reads += bypass_reads;
        self.counters.readmore_blocks += readmore;
    }

    fn record_events(&mut self, on: bool) {
        self.log = on.then(|| Vec::with_capacity(256));
        self.extra |= on;
    }

    fn drain_events(&mut self, sink: &mut dyn FnMut(u32, &LevelEvent)) {
        if let Some(log) = &mut self.log {
            for e in log.drain(..) {
                sink(0, &e);
            }
        }
    }

    fn log_event(&mut self, ev: LevelEvent) {
        if let Some(log) = &mut self.log {
            log.push(ev);
        }
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

    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future> {
        self.policy.future()
    }
}

impl<P: Policy> Level<P> {
    /// DEMOTE in timed mode: blocks sent up while in flight leave once their read has arrived.
    fn drop_arrived(&mut self) {
        if self.drop_on_arrival.is_empty() {
            return;
        }
        let mut list = std::mem::take(&mut self.drop_on_arrival);
        list.retain(|&block| {
            let Some(slot) = self.table.get(block) else { return false };
            let e = *self.table.entry(slot);
            if e.pinned() {
                return true;
            }
            self.counters.prefetch_invalidated += u64::from(e.counts_unused());
            if let Some(log) = &mut self.log {
                let kind = if e.counts_unused() { K::Invalidated } else { K::Removed };
                log.push(LevelEvent::block(kind, origin_of(e), block));
            }
            if e.unused_prefetch() {
                self.unused_resident -= 1;
                if self.raises {
                    self.raised.unlink(&mut self.raised_links, slot);
                }
            }
            self.policy.on_remove(slot, &self.table);
            self.table.remove(slot);
            false
        });
        self.drop_on_arrival = list;
    }
}
