//! TaP: table-based prefetching for storage caches (M. Li, E. Varki, S. Bhatia, A. Merchant, FAST 2008),
//! as reconstructed in `shared/docs/algorithms/tap.md`.
//!
//! Only the detection rule is the paper's (abstract and a third-party summary): when a request misses,
//! its address is looked up in a table of recently missed requests; if it continues one of them it
//! belongs to a sequential stream and prefetching starts, otherwise its address goes into the table.
//! Everything else is our reconstruction \[ours\], each piece a parameter, as tap.md gives it:
//! - The table holds the block each recorded request expects next (`e + 1`), FIFO, `table_init` entries
//!   at first; entries pushed out go to a ghost list of the same size, and a miss that would have matched
//!   a ghost doubles the table, up to `table_max`. A match removes its entry; `match_slack` lets a start
//!   up to that many blocks past the expected one match.
//! - A detected stream is prefetched in groups of `P = max(p_min, p_factor · n)` blocks (`n` the request's
//!   length) with the trigger on the group's first block: a hit on it starts the next group (the FA class
//!   of sequential.md). Each group also puts the block after it into the table, so a stream whose trigger
//!   was lost (evicted) is recognised again at its next miss.
//! - The prefetch cache has an adaptive size `Cp` (`cp_init` of the cache at first). A prefetched block
//!   evicted unused goes to a ghost list of `Cp` entries; a demand miss on it grows `Cp` by `cp_step`
//!   (default `P`), up to the cache less `min_demand` of it; at the end of each `epoch` (requests) with no
//!   such miss and whose oldest unused prefetched block came more than two epochs ago (or with none), `Cp`
//!   shrinks by the step, down to `P`.
//!
//! The simulator has one cache per level, so the prefetch cache is emulated \[ours\]: up to `Cp` unused
//! prefetched blocks have raised priority ([`Prefetcher::raise`]), i.e. demand traffic cannot push
//! them out; beyond `Cp` they compete with the other blocks under the level's policy. A prefetched
//! block's first demand hit moves it to the demand side (an ordinary hit). "Miss" is
//! [`Outcome::Miss`]: a block in flight counts as cached.
//!
//! TaP's own list of the prefetch cache's blocks (for PF_ghost and the epochs) follows what the level did
//! once an access is done (`Tap::settle`): a block every group named that the level did not keep leaves
//! it, a block whose old copy the access evicted and fetched again joins it, and a trigger set over such an
//! old copy stays on the new copy (as RA's and SARC's, [`super::marks`]). Before, the list was trimmed to
//! the cache when a group was planned, before the level's evictions, so a block that the same access then
//! evicted unused never reached PF_ghost (an outside model's case: its miss did not grow `Cp`).

use serde::{Deserialize, Serialize};

use super::marks::MarkMap;
use super::old_copies::OldCopies;
use super::{CacheView, LevelGeometry, Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::ConfigError;
use crate::policy::list::KeyedList;
use crate::policy::{Entry, Placement};

/// The largest `p_factor`: a group of more request lengths than this only evicts itself (and 10^6 of
/// them made a short run take minutes).
pub const MAX_P_FACTOR: u32 = 1024;

/// The largest detection table (and ghost list): 2^24 entries, hundreds of MiB allocated.
pub const MAX_TABLE: usize = 1 << 24;

/// TaP's parameters (all \[ours\], tap.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TapParams {
    /// Initial table length (64 entries).
    pub table_init: usize,
    /// Largest table (4096 entries).
    pub table_max: usize,
    /// Smallest group `P` (4 blocks).
    pub p_min: u32,
    /// `P` as a multiple of the request length (2).
    pub p_factor: u32,
    /// Initial prefetch-cache size as a share of the cache (0.05).
    pub cp_init: f64,
    /// Growth and shrink step of the prefetch cache, blocks (default: the current request's `P`).
    pub cp_step: Option<u32>,
    /// Shrink-check period, requests (1000).
    pub epoch: u64,
    /// A miss up to this many blocks past a table entry's block matches it (0).
    pub match_slack: u32,
    /// Share of the cache the prefetch cache always leaves to demand blocks (0.1).
    pub min_demand: f64,
    /// The last valid block (inclusive): groups are clipped there. Default: none.
    pub max_block: Option<u64>,
}

impl Default for TapParams {
    fn default() -> Self {
        Self {
            table_init: 64,
            table_max: 4096,
            p_min: 4,
            p_factor: 2,
            cp_init: 0.05,
            cp_step: None,
            epoch: 1000,
            match_slack: 0,
            min_demand: 0.1,
            max_block: None,
        }
    }
}

impl TapParams {
    /// Check the values; errors name `path.key`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |key: &str, msg: String| Err(ConfigError::new(format!("{path}.{key}"), msg));
        if self.table_init == 0 {
            return err("table_init", "must be at least 1 entry".into());
        }
        // The table and its ghost list are allocated at `table_init` up front and may grow to `table_max`:
        // 10^12 entries aborted the process on a failed allocation.
        for (key, v) in [("table_init", self.table_init), ("table_max", self.table_max)] {
            if v > MAX_TABLE {
                return err(key, format!("must be at most {MAX_TABLE} entries (2^24), got {v}"));
            }
        }
        if self.table_max < self.table_init {
            return err(
                "table_max",
                format!("must be at least table_init ({}), got {}", self.table_init, self.table_max),
            );
        }
        if self.p_min == 0 {
            return err("p_min", "must be at least 1 block".into());
        }
        if self.p_factor == 0 {
            return err("p_factor", "must be at least 1".into());
        }
        if let Some(msg) = super::degree_too_large(self.p_min) {
            return err("p_min", msg);
        }
        if self.p_factor > MAX_P_FACTOR {
            return err("p_factor", format!("must be at most {MAX_P_FACTOR} request lengths, got {}", self.p_factor));
        }
        if !(self.cp_init > 0.0 && self.cp_init <= 1.0) {
            return err("cp_init", format!("must be in (0, 1], got {}", self.cp_init));
        }
        if self.cp_step == Some(0) {
            return err("cp_step", "must be at least 1 block".into());
        }
        if self.epoch == 0 {
            return err("epoch", "must be at least 1 request".into());
        }
        if self.match_slack > 1024 {
            return err("match_slack", format!("must be at most 1024, got {}", self.match_slack));
        }
        if !(0.0..1.0).contains(&self.min_demand) {
            return err("min_demand", format!("must be in [0, 1), got {}", self.min_demand));
        }
        Ok(())
    }
}

/// Event counts of a TaP run (tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapStats {
    /// Misses that matched a table entry (streams detected or re-detected).
    pub matches: u64,
    /// Misses whose address went into the table.
    pub inserts: u64,
    /// Table doublings.
    pub grows: u64,
    /// Groups started (by a match or a trigger).
    pub groups: u64,
    /// Prefetch-cache growths and shrinks.
    pub cp_grows: u64,
    /// See `cp_grows`.
    pub cp_shrinks: u64,
}

/// The TaP prefetcher.
#[derive(Debug)]
pub struct Tap {
    params: TapParams,
    /// Expected next block → request number of the entry; newest at the front.
    table: KeyedList<u64>,
    table_cap: usize,
    /// Expected blocks recently pushed out of the table.
    ghost: KeyedList<()>,
    /// Trigger block → (last block of its group, stream id). A mark set on a resident block outlives the
    /// access's eviction of that old copy when the access fetches it again (as RA's and SARC's do).
    marks: MarkMap<(u64, u32)>,
    /// Unused prefetched blocks → epoch they were prefetched in; newest at the front: the prefetch cache
    /// as TaP sees it, kept to the level's resident unused prefetched blocks after each access.
    unused: KeyedList<u64>,
    /// Blocks the current access's groups named that were not resident (each should become an unused
    /// prefetched block; [`Tap::settle`] drops those the level did not keep).
    planned: Vec<u64>,
    /// Blocks the current access's groups named while resident: if the access evicts such an old copy
    /// and fetches the block again, the new copy is a prefetch of this access ([`Tap::settle`]).
    old_copies: OldCopies,
    /// Prefetched blocks evicted unused.
    pf_ghost: KeyedList<()>,
    cp: usize,
    capacity: usize,
    requests: u64,
    epoch_ghost_hit: bool,
    last_stream: u32,
    stats: TapStats,
}

impl Tap {
    /// TaP with `params`, checked; errors name `path.key`.
    pub fn new(path: &str, params: TapParams) -> Result<Self, ConfigError> {
        params.validate(path)?;
        Ok(Self {
            table: KeyedList::with_capacity(params.table_init + 1),
            table_cap: params.table_init,
            ghost: KeyedList::with_capacity(params.table_init + 1),
            marks: MarkMap::default(),
            unused: KeyedList::with_capacity(0),
            planned: Vec::new(),
            old_copies: OldCopies::default(),
            pf_ghost: KeyedList::with_capacity(0),
            cp: 0,
            capacity: 0,
            requests: 0,
            epoch_ghost_hit: false,
            last_stream: 0,
            stats: TapStats::default(),
            params,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &TapParams {
        &self.params
    }

    /// Table entries (expected next blocks), newest first.
    #[must_use]
    pub fn table(&self) -> Vec<u64> {
        self.table.iter().collect()
    }

    /// The table's current length limit `T`.
    #[must_use]
    pub fn table_limit(&self) -> usize {
        self.table_cap
    }

    /// Expected blocks in the table's ghost list, newest first.
    #[must_use]
    pub fn table_ghost(&self) -> Vec<u64> {
        self.ghost.iter().collect()
    }

    /// Trigger marks (block, last block of its group), sorted.
    #[must_use]
    pub fn marks(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.marks.iter().map(|(b, &(g, _))| (b, g)).collect();
        v.sort_unstable();
        v
    }

    /// The prefetch-cache size `Cp`, blocks.
    #[must_use]
    pub fn cp(&self) -> usize {
        self.cp
    }

    /// Unused prefetched blocks TaP knows of.
    #[must_use]
    pub fn unused_blocks(&self) -> usize {
        self.unused.len()
    }

    /// Event counts.
    #[must_use]
    pub fn stats(&self) -> TapStats {
        self.stats
    }

    fn cp_max(&self) -> usize {
        let keep = (self.params.min_demand * self.capacity as f64).ceil() as usize;
        self.capacity.saturating_sub(keep).max(1)
    }

    /// Push `next` into the table (replacing an entry with the same block) and trim it to `T`.
    fn remember(&mut self, next: u64) {
        self.table.push_front(next, self.requests);
        while self.table.len() > self.table_cap {
            let Some((old, _)) = self.table.pop_back() else { break };
            self.ghost.push_front(old, ());
        }
        while self.ghost.len() > self.table_cap {
            self.ghost.pop_back();
        }
    }

    /// The table entry a miss starting at `s` matches, removed.
    fn take_match(&mut self, s: u64) -> bool {
        (0..=u64::from(self.params.match_slack))
            .any(|k| s.checked_sub(k).is_some_and(|b| self.table.remove(b).is_some()))
    }

    /// Prefetch the group `[a, a+P-1]` for stream `sid` and mark its trigger on `a`.
    fn start_group(&mut self, ctx: &mut PrefetchCtx<'_>, a: u64, sid: u32, p: u32) {
        let mut last = a.saturating_add(u64::from(p) - 1);
        if let Some(m) = self.params.max_block {
            if a > m {
                return;
            }
            last = last.min(m);
        }
        let len = (last - a + 1) as u32;
        ctx.prefetch_run(PrefetchRun { first: a, len, stream: sid, placement: Placement::Default });
        let epoch = self.requests / self.params.epoch;
        for b in a..=last {
            if !ctx.cached_after_demand(b) {
                self.unused.push_front(b, epoch);
                self.planned.push(b);
            } else if ctx.cache.contains(b) {
                self.old_copies.cover(b, b);
            }
        }
        self.marks.insert_over(a, (last, sid), ctx.cache.contains(a));
        self.remember(last.saturating_add(1));
        self.stats.groups += 1;
    }

    /// The access is done (or the next one starts): the prefetch cache as TaP sees it follows what the
    /// level did. A named block the level did not keep (no room) leaves `unused` (it would stay listed for
    /// ever); a resident block whose old copy the access evicted and fetched again is a prefetch of this
    /// access; a trigger mark set over an old copy stays only if the block is resident again.
    fn settle(&mut self, cache: CacheView<'_>) {
        // Still the planning access's epoch: `requests` moves only after this, at the next access.
        let epoch = self.requests / self.params.epoch;
        for b in std::mem::take(&mut self.planned) {
            if !cache.entry(b).is_some_and(Entry::unused_prefetch) {
                self.unused.remove(b);
            }
        }
        for b in self.old_copies.settle() {
            if cache.entry(b).is_some_and(Entry::unused_prefetch) && !self.unused.contains(b) {
                self.unused.push_front(b, epoch);
            }
        }
        self.marks.settle(|b| cache.contains(b));
    }

    fn new_stream(&mut self) -> u32 {
        self.last_stream = self.last_stream.wrapping_add(1).max(1);
        self.last_stream
    }

    /// End of an epoch: give prefetch-cache space back if it went unneeded.
    fn end_epoch(&mut self, p: usize) {
        let epoch = self.requests / self.params.epoch;
        let stale = self.unused.back().is_none_or(|(_, e)| e + 2 < epoch);
        if !self.epoch_ghost_hit && stale {
            let step = self.params.cp_step.map_or(p, |s| s as usize);
            let shrunk = self.cp.saturating_sub(step).max(p.min(self.cp_max()));
            if shrunk < self.cp {
                self.cp = shrunk;
                self.stats.cp_shrinks += 1;
            }
        }
        self.epoch_ghost_hit = false;
    }
}

impl Prefetcher for Tap {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.settle(ctx.cache);
        self.requests += 1;
        let (s, e, n) = (ctx.req.first, ctx.req.last(), ctx.req.len.max(1));
        let p = self.params.p_min.max(self.params.p_factor.saturating_mul(n));
        let mut miss = false;
        for (i, o) in ctx.outcomes.iter().enumerate() {
            let b = s + i as u64;
            match o {
                Outcome::Miss => {
                    miss = true;
                    if !self.pf_ghost.is_empty() && self.pf_ghost.remove(b).is_some() {
                        let step = self.params.cp_step.unwrap_or(p) as usize;
                        self.cp = (self.cp + step).min(self.cp_max());
                        self.epoch_ghost_hit = true;
                        self.stats.cp_grows += 1;
                    }
                    // A block that missed carries no mark: one left on it is from a group never read.
                    if !self.marks.is_empty() {
                        self.marks.remove(b);
                    }
                }
                Outcome::PrefetchHit => {
                    self.unused.remove(b);
                }
                Outcome::Hit | Outcome::Pending => {}
            }
        }
        if miss {
            if self.take_match(s) {
                self.stats.matches += 1;
                let sid = self.new_stream();
                self.start_group(ctx, e.saturating_add(1), sid, p);
            } else {
                if !self.ghost.is_empty() && self.ghost.remove(s).is_some() && self.table_cap < self.params.table_max {
                    self.table_cap = (self.table_cap * 2).min(self.params.table_max);
                    self.stats.grows += 1;
                }
                self.remember(e.saturating_add(1));
                self.stats.inserts += 1;
            }
        }
        if !self.marks.is_empty() {
            for i in 0..ctx.outcomes.len() {
                if ctx.outcomes[i] == Outcome::Miss {
                    continue;
                }
                if let Some((gend, sid)) = self.marks.remove(s + i as u64) {
                    self.start_group(ctx, gend.saturating_add(1), sid, p);
                }
            }
        }
        if self.requests % self.params.epoch == 0 {
            self.end_epoch(p as usize);
        }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        if !self.marks.is_empty() {
            self.marks.evicted(entry.block);
        }
        // An old copy the current access named: the copy it may fetch again is settled after the access.
        self.old_copies.evicted(entry.block);
        if self.unused.remove(entry.block).is_some() && entry.unused_prefetch() {
            self.pf_ghost.push_front(entry.block, ());
            while self.pf_ghost.len() > self.cp.max(1) {
                self.pf_ghost.pop_back();
            }
        }
    }

    fn after_access(&mut self, cache: CacheView<'_>) {
        self.settle(cache);
    }

    fn raise(&self) -> Option<super::Raise> {
        Some(super::Raise { cap: self.cp, passes: u8::MAX })
    }

    fn attach(&mut self, geometry: LevelGeometry) -> super::Capabilities {
        if geometry.capacity != self.capacity {
            self.capacity = geometry.capacity;
            self.cp = ((self.params.cp_init * self.capacity as f64).round() as usize)
                .max(self.params.p_min as usize)
                .min(self.cp_max());
        }
        super::Capabilities { wants_evictions: true, raises: true, ..super::Capabilities::default() }
    }

    fn metadata_bytes(&self) -> u64 {
        ((self.table.len() + self.ghost.len() + self.unused.len() + self.pf_ghost.len()) * 32 + self.marks.len() * 24)
            as u64
    }
}

impl super::NamedPrefetcher for Tap {
    const NAME: &'static str = "tap";
    const SUMMARY: &'static str =
        "TaP, table-based sequential detection with an adaptive prefetch cache (Li et al., FAST'08; reconstructed)";
    type Params = TapParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        Ok(Box::new(Tap::new(path, params)?))
    }
}
