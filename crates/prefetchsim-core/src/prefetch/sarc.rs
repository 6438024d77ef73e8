//! SARC's prefetch side: sequential detection by a per-block counter, a synchronous prefetch of `u`
//! blocks on a sequential miss, and a trigger block `g` before the end of each group that prefetches the
//! next group asynchronously. Follows B. S. Gill and D. S. Modha, "SARC: Sequential Prefetching in
//! Adaptive Replacement Cache", USENIX ATC 2005 ("Sequential Detection", "Synchronous and Asynchronous
//! Prefetching" and the LRU anomaly of asynchronous prefetching), as restated in
//! `shared/docs/algorithms/sarc.md`; the cache side is [`crate::policy::sarc`].
//!
//! # What it tells the policy
//!
//! A sequential miss puts `Placement::List(1)` (SEQ) on the request's missing demand blocks (missing
//! blocks inside a group the same request set off get `List(2)`: SEQ, not a sequential miss); prefetch
//! runs use the default placement, which the SARC policy sends to SEQ (and other policies treat as any
//! prefetch, so the level option `pf_insert` applies). When a trigger is hit, the not yet accessed blocks
//! of its group are named again in runs of their own, before the next group: a cached block named by a
//! run gets [`crate::policy::Policy::on_prefetch_cached`], which moves it to MRU(SEQ) — the fix for the
//! prefetch/LRU anomaly — and the new group is then inserted above them.
//!
//! Over other policies the prefetcher is a fixed-degree synchronous + asynchronous read-ahead with
//! SARC's detection: LRU, FIFO, CLOCK, ARC, MQ, 2Q and StreamLRU read `List(1)` and `List(2)` as their
//! default demand placement (SEQ is ignored) and the anomaly-fix runs as ordinary runs over cached blocks
//! (StreamLRU keeps such blocks in sequence order). SplitLRU reads `List(1)` as its Down list: there a
//! sequential miss's demand blocks enter MRU(Down), SplitLRU's nearest analogue of SEQ.
//!
//! # Decisions of ours (\[ours\]; the first and the prefetched blocks' counter read sarc.md otherwise,
//! see the guide's algorithms page)
//!
//! - A request is one step of the detection counter, as a track is in the paper (sarc.md runs its
//!   pseudocode block by block; with 4 KiB blocks a request plays the part of the paper's track): its first missing
//!   block `x` gets `cnt = cached(x-1) ? min(seqThreshold, cnt(x-1)+1) : 1`, its other missing blocks the
//!   same value, and it is a sequential miss when that value reaches `seqThreshold`. A miss after hits in
//!   the same request has a cached predecessor. Prefetched blocks get `cnt = seqThreshold` (sarc.md computes it from the predecessor). With the
//!   default threshold 2, `cnt` is never stored: a block is sequential exactly when its predecessor is
//!   cached.
//! - The synchronous group of a multi-block request starts after its last block (sequential.md).
//! - Blocks are processed in order before the miss. A cached block may be a trigger; so may a missing
//!   block that a group planned earlier in the same request covers: block by block it would be a hit on
//!   that group, in flight. Groups thus chain through a long request, and missing blocks they cover are
//!   no sequential miss: they go to SEQ as `Placement::List(2)`, which the policy does not count in
//!   `seqMiss`. Only the first missing block no planned group covers is tested for sequentiality.
//! - The level inserts a request's demand blocks before any prefetch run, so a demand insertion may evict
//!   a group block that the anomaly fix was about to move; the level then fetches it again as a prefetch.
//! - Trigger lookups go through the counting filter of [`MarkMap`], so hits and evictions of blocks that
//!   are no trigger (nearly all) do not probe the trigger map.
//! - A trigger mark is set even when its block is already cached, and is dropped when the block leaves,
//!   except when the access that set it evicts the block's old copy and fetches it again: the mark is
//!   for the new copy ([`MarkMap::evicted`]; `studies/policies.md`, finding 1). Likewise a cached block of
//!   a new group keeps its counter (set once, when it entered), but when the same access evicts its old
//!   copy and fetches it again the new copy gets `seqThreshold`, as any prefetched block (with
//!   `seqThreshold > 2`; before, it had no counter and the stream's next miss was not sequential).

use serde::{Deserialize, Serialize};

use super::marks::MarkMap;
use super::old_copies::OldCopies;
use super::{CacheView, Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::ConfigError;
use crate::policy::sarc::{GROUP, SEQ};
use crate::policy::table::{block_map, BlockMap};
use crate::policy::{Entry, Placement};

/// Parameters of the SARC prefetcher.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SarcPrefetchParams {
    /// `u`: blocks per prefetch group, fixed (default 8 \[ours\]; the paper calls it system-specific).
    #[serde(alias = "u")]
    pub degree: u32,
    /// `g`: the trigger sits `g` blocks before the end of its group, `0 <= g < u` (default `u/2` \[ours\],
    /// after the AMP paper's fixed-asynchronous experiments).
    #[serde(alias = "g")]
    pub trigger_distance: Option<u32>,
    /// `seqThreshold`: counter value at which a miss counts as sequential (default 2 \[ours\]).
    pub seq_threshold: u8,
}

impl Default for SarcPrefetchParams {
    fn default() -> Self {
        Self { degree: 8, trigger_distance: None, seq_threshold: 2 }
    }
}

impl SarcPrefetchParams {
    /// Reject impossible values, naming the key under `path`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.degree == 0 {
            return Err(ConfigError::new(format!("{path}.degree"), "the prefetch degree must be at least 1"));
        }
        if let Some(msg) = super::degree_too_large(self.degree) {
            return Err(ConfigError::new(format!("{path}.degree"), msg));
        }
        if let Some(g) = self.trigger_distance {
            if g >= self.degree {
                return Err(ConfigError::new(
                    format!("{path}.trigger_distance"),
                    format!("must be below the degree {} (the trigger lies inside its group), got {g}", self.degree),
                ));
            }
        }
        if self.seq_threshold == 0 {
            return Err(ConfigError::new(format!("{path}.seq_threshold"), "must be at least 1"));
        }
        Ok(())
    }

    /// `g` in blocks.
    #[must_use]
    pub fn g(&self) -> u32 {
        self.trigger_distance.unwrap_or(self.degree / 2).min(self.degree.saturating_sub(1))
    }
}

/// A prefetch group `[first, last]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// First block.
    pub first: u64,
    /// Last block.
    pub last: u64,
}

/// The SARC prefetcher.
#[derive(Debug)]
pub struct SarcPrefetcher {
    u: u32,
    g: u32,
    threshold: u8,
    /// Trigger block → the group it belongs to.
    triggers: MarkMap<Group>,
    /// `cnt(x)` of cached blocks; kept only when `seqThreshold > 2`.
    counters: BlockMap<u8>,
    /// Cached blocks of groups the current access started (only when `seqThreshold > 2`): those whose old
    /// copy the access evicts and fetches again are prefetched blocks when it is done.
    counted_over: OldCopies,
    /// Size above which marks of blocks that never entered the cache are swept out.
    sweep_at: usize,
    /// Groups planned during the current request.
    planned: Vec<Group>,
}

impl SarcPrefetcher {
    /// A new SARC prefetcher.
    #[must_use]
    pub fn new(params: SarcPrefetchParams) -> Self {
        Self {
            u: params.degree.max(1),
            g: params.g(),
            threshold: params.seq_threshold.max(1),
            triggers: MarkMap::default(),
            counters: block_map(0),
            counted_over: OldCopies::default(),
            sweep_at: 64,
            planned: Vec::new(),
        }
    }

    /// The group whose trigger is `block`, if it is one (tests).
    #[must_use]
    pub fn trigger(&self, block: u64) -> Option<Group> {
        self.triggers.get(block).copied()
    }

    /// The trigger blocks, sorted (tests).
    #[must_use]
    pub fn triggers(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.triggers.iter().map(|(b, _)| b).collect();
        v.sort_unstable();
        v
    }

    /// Mark `block` (resident or not: the access may evict its old copy and fetch it again, which keeps
    /// the mark; see [`MarkMap::evicted`]).
    fn set_trigger(&mut self, block: u64, group: Group, resident: bool) {
        self.triggers.insert_over(block, group, resident);
    }

    #[inline]
    fn take_trigger(&mut self, block: u64) -> Option<Group> {
        self.triggers.remove(block)
    }

    fn keeps_counters(&self) -> bool {
        self.threshold > 2
    }

    /// `cnt` of a block entering the cache after `prev = x - 1`.
    fn counter_after(&self, x: u64, cache: CacheView<'_>) -> u8 {
        let Some(prev) = x.checked_sub(1) else { return 1 };
        if self.covered(prev) {
            return self.threshold;
        }
        if !cache.contains(prev) {
            return 1;
        }
        let before = if self.keeps_counters() { self.counters.get(&prev).copied().unwrap_or(1) } else { 1 };
        before.saturating_add(1).min(self.threshold)
    }

    /// Whether a group planned earlier in the current request covers `block`.
    #[inline]
    fn covered(&self, block: u64) -> bool {
        self.planned.iter().any(|g| (g.first..=g.last).contains(&block))
    }

    /// Drop marks of blocks that are not resident (blocks a level could not insert); amortised O(1).
    fn sweep(&mut self, cache: CacheView<'_>) {
        let limit = self.sweep_at.max(2 * cache.capacity() + 64);
        if self.triggers.len() > limit || self.counters.len() > limit {
            self.triggers.retain(|b, _| cache.contains(b));
            self.counters.retain(|b, _| cache.contains(*b));
            self.sweep_at = 2 * self.triggers.len().max(self.counters.len());
        }
    }

    /// Prefetch the group `[first, first+u-1]` and mark its trigger.
    fn start_group(&mut self, ctx: &mut PrefetchCtx<'_>, first: u64) {
        let Some(last) = first.checked_add(u64::from(self.u) - 1) else { return };
        let stream = ctx.req.stream;
        ctx.prefetch_run(PrefetchRun { first, len: self.u, stream, placement: Placement::Default });
        let t = last - u64::from(self.g);
        self.set_trigger(t, Group { first, last }, ctx.cache.contains(t));
        self.planned.push(Group { first, last });
        if self.keeps_counters() {
            for b in first..=last {
                if !ctx.cache.contains(b) {
                    self.counters.insert(b, self.threshold);
                } else {
                    self.counted_over.cover(b, b);
                }
            }
        }
    }

    /// The access is done (or the next one starts): marks and counters of blocks whose old copy the
    /// access evicted. A group block that was cached keeps its counter (counters are set once, when a
    /// block enters); when the same access evicted that old copy and fetched the block again, the new
    /// copy is a prefetched block and gets `seqThreshold` (test `marks_within_access`; the trigger marks
    /// case is [`MarkMap::settle`]).
    fn settle(&mut self, cache: CacheView<'_>) {
        self.triggers.settle(|b| cache.contains(b));
        for b in self.counted_over.settle() {
            if cache.contains(b) {
                self.counters.insert(b, self.threshold);
            }
        }
    }

    /// The trigger of `group` was hit: move its cached, not yet accessed blocks to MRU(SEQ) in address
    /// order (runs over exactly those blocks), then prefetch the next group.
    fn fire(&mut self, ctx: &mut PrefetchCtx<'_>, group: Group) {
        let stream = ctx.req.stream;
        let mut run: Option<(u64, u32)> = None;
        for b in group.first..=group.last {
            let waiting = ctx.cache.entry(b).is_some_and(Entry::unused_prefetch);
            match (&mut run, waiting) {
                (Some((_, len)), true) => *len += 1,
                (None, true) => run = Some((b, 1)),
                (Some((first, len)), false) => {
                    let (first, len) = (*first, *len);
                    ctx.prefetch_run(PrefetchRun { first, len, stream, placement: Placement::Default });
                    run = None;
                }
                (None, false) => {}
            }
        }
        if let Some((first, len)) = run {
            ctx.prefetch_run(PrefetchRun { first, len, stream, placement: Placement::Default });
        }
        if let Some(next) = group.last.checked_add(1) {
            self.start_group(ctx, next);
        }
    }
}

impl Prefetcher for SarcPrefetcher {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.planned.clear();
        self.settle(ctx.cache);
        self.sweep(ctx.cache);
        let first = ctx.req.first;
        // Cached blocks, in block order, may be triggers; so may missing blocks that a group planned
        // earlier in this request covers (they are in flight by the time the request reaches them).
        if !self.triggers.is_empty() {
            for i in 0..ctx.outcomes.len() {
                let b = first + i as u64;
                if ctx.outcomes[i] == Outcome::Miss && !self.covered(b) {
                    continue;
                }
                if let Some(group) = self.take_trigger(b) {
                    self.fire(ctx, group);
                }
            }
        }
        // The miss: sequential detection on the first missing block no planned group covers.
        let Some(i) = ctx.outcomes.iter().position(|o| *o == Outcome::Miss) else { return };
        let uncovered =
            (i..ctx.outcomes.len()).find(|&j| ctx.outcomes[j] == Outcome::Miss && !self.covered(first + j as u64));
        let Some(j) = uncovered else {
            // Every missing block belongs to a group this request set off: no sequential miss.
            ctx.plan.demand_placement = Placement::List(GROUP);
            return;
        };
        let x = first + j as u64;
        let cnt = self.counter_after(x, ctx.cache);
        if self.keeps_counters() {
            for (k, o) in ctx.outcomes.iter().enumerate().skip(i) {
                let b = first + k as u64;
                // Blocks a planned group covers already have their group's counter.
                if *o == Outcome::Miss && !self.covered(b) {
                    self.counters.insert(b, cnt);
                }
            }
        }
        if cnt >= self.threshold {
            ctx.plan.demand_placement = Placement::List(SEQ);
            if let Some(next) = ctx.req.last().checked_add(1) {
                self.start_group(ctx, next);
            }
        }
    }

    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities { wants_evictions: true, ..super::Capabilities::default() }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        // A mark this access set over the block's old copy stays (see `MarkMap::evicted`).
        self.triggers.evicted(entry.block);
        if !self.counters.is_empty() {
            self.counters.remove(&entry.block);
        }
        // A covered block's new copy, if the access fetches it again, gets its counter at `settle`.
        self.counted_over.evicted(entry.block);
    }

    fn after_access(&mut self, cache: CacheView<'_>) {
        self.settle(cache);
    }

    fn metadata_bytes(&self) -> u64 {
        let t = self.triggers.len() * std::mem::size_of::<(u64, Group)>();
        let c = self.counters.len() * std::mem::size_of::<(u64, u8)>();
        (t + c) as u64
    }
}

impl super::NamedPrefetcher for SarcPrefetcher {
    const NAME: &'static str = "sarc";
    const SUMMARY: &'static str = "SARC's sequential prefetcher (Gill & Modha, USENIX ATC'05); pairs with policy sarc";
    type Params = SarcPrefetchParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        params.validate(path)?;
        Ok(Box::new(SarcPrefetcher::new(params)))
    }
}
