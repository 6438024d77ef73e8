//! Mithril: mining sporadic block associations for cache prefetching (J. Yang, R. Karimi,
//! T. Sæmundsson, A. Wildani, Y. Vigfusson, SoCC 2017), after `shared/docs/algorithms/history.md` §2.
//!
//! A prefetching layer over any replacement policy (and over another prefetcher, through `stack`):
//! - Recording (§4.2, §4.3): on each demand miss (or eviction, both, or every access: `record`) the
//!   block's logical timestamp goes to the recording table ([`recording`]); at `min_support` timestamps
//!   the row moves to the mining table, beyond `max_support` it is dropped as too frequent.
//! - Mining (§4.1): when the mining table is full it is sorted by first timestamp and mined for weak
//!   and strong associations within `lookahead` ([`mining`]), which go to the sharded prefetching table
//!   ([`ptable`]).
//! - Prefetching (§4.3): on every request, the blocks associated with each demand block are prefetched
//!   (one run per block, so with LRU the last one lands at MRU, as in libCacheSim).
//! - Second chance (§4.2): a prefetched block about to be evicted unused is re-inserted once at MRU
//!   ([`Capabilities::second_chances`](crate::prefetch::Capabilities::second_chances)).
//! - Metadata (§4.2, §4.4): recording, mining and prefetching tables are bounded by `max_metadata` of the
//!   cache bytes; the `paper` preset takes them out of the cache ([`Capabilities::charge_metadata`](crate::prefetch::Capabilities::charge_metadata)).
//!
//! The clock: a logical timestamp per demand block (`clock = "block"`, the libCacheSim per-block
//! convention: consecutive blocks of one request are 1 apart) or per request (`"request"`). Evictions
//! are recorded at the timestamp of the request that caused them. Timestamps are stored in `u32` cells:
//! 15-bit wrapped values with `compat_libcachesim` (libCacheSim's, and the paper's, width, wrap
//! unhandled), otherwise offsets from a base that is moved every 2^31 requests (rows older than that
//! are forgotten). The metadata accounting charges 2 bytes per timestamp, the paper's compressed layout.
//!
//! Two presets ([`MithrilPreset`]); any parameter given explicitly overrides its preset value.
//!
//! Choices of ours (each a parameter): the clock; demand blocks only (blocks a level above prefetched
//! are neither recorded nor looked up); recording at a miss means `Outcome::Miss` (a demand access that
//! waits for an in-flight prefetch is not recorded); for the paper preset the table sizes of libCacheSim
//! (recording table 2% of the cache, mining table `5120 / min_support` rows), shrunk in proportion when
//! they would take more than `table_share` of the metadata limit, and rows charged at the paper's layout
//! (four 15-bit timestamps per 8-byte word, 8 B address + 4 B index). Not reproduced from libCacheSim:
//! `sequential-type` (stack Mithril over a sequential prefetcher instead; `skip_sequential` reproduces its
//! recording filter), and its extra mining trigger when `min_support = 1`. With the `libcachesim` preset,
//! miss ratios equal `cachesim`'s to the printed digit on w106 (little-endian, 0.5-20% of the footprint)
//! and on the CloudPhysics sample's reference rows except one (4 KiB blocks at 5%: 0.5309 against 0.5308).

pub mod mining;
pub mod params;
pub mod ptable;
#[cfg(test)]
mod ptable_reference;
pub mod recording;

use self::mining::Rules;
pub use self::params::{Clock, MithrilConfig, MithrilParams, MithrilPreset, RecordOn};
use self::ptable::{Growth, PrefetchTable};
use self::recording::Tables;
use super::{LevelGeometry, Outcome, PrefetchCtx, Prefetcher};
use crate::component::ConfigError;
use crate::policy::Entry;

/// Sizes Mithril derives from the cache (history.md "Derived sizes").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MithrilSizes {
    /// The metadata limit in bytes.
    pub limit: f64,
    /// Recording table rows (libCacheSim: row 0 included, unused).
    pub recording_rows: u32,
    /// Mining table rows.
    pub mining_rows: u32,
    /// Bytes of the recording and mining tables.
    pub fixed_bytes: u64,
}

/// Stored timestamps are offsets from a base moved by this much ...
const REBASE_SHIFT: u64 = 1 << 31;
/// ... once the clock is this far from it.
const REBASE_AT: u64 = 3 << 30;
/// Mask of libCacheSim's 15-bit timestamps.
const TS15: u64 = 0x7fff;

/// The Mithril prefetcher.
#[derive(Debug)]
pub struct Mithril {
    cfg: MithrilConfig,
    rules: Rules,
    sizes: Option<MithrilSizes>,
    tables: Tables,
    ptable: PrefetchTable,
    scratch: mining::Scratch,
    /// The next timestamp to hand out; `now` is the last one handed out (evictions use it).
    next_ts: u64,
    now: u64,
    base: u64,
    miss: bool,
    each: bool,
    evict: bool,
    mined: u64,
}

impl Mithril {
    /// A Mithril prefetcher with resolved parameters. Its tables are sized when it is attached to a level
    /// ([`Prefetcher::attach`]; `Level::new` does it).
    #[must_use]
    pub fn new(cfg: MithrilConfig) -> Self {
        let rules = Rules { lookahead: cfg.lookahead, confidence: cfg.confidence, compat: cfg.compat_libcachesim };
        Self {
            rules,
            sizes: None,
            tables: Tables::new(cfg.min_support, cfg.max_support, 0, 0, cfg.compat_libcachesim),
            ptable: PrefetchTable::new(cfg.pf_list_size, cfg.shard_rows, Growth::Bounded { limit: 0 }, 0),
            scratch: mining::Scratch::default(),
            next_ts: 0,
            now: 0,
            base: 0,
            miss: matches!(cfg.record, RecordOn::Miss | RecordOn::MissEvict),
            each: cfg.record == RecordOn::EachReq,
            evict: matches!(cfg.record, RecordOn::Evict | RecordOn::MissEvict),
            mined: 0,
            cfg,
        }
    }

    /// From config parameters (errors name `path.key`).
    pub fn from_params(path: &str, p: MithrilParams) -> Result<Self, ConfigError> {
        Ok(Self::new(p.resolve(path)?))
    }

    /// The resolved parameters.
    #[must_use]
    pub fn config(&self) -> &MithrilConfig {
        &self.cfg
    }

    /// The sizes derived at attachment (`None` before).
    #[must_use]
    pub fn sizes(&self) -> Option<MithrilSizes> {
        self.sizes
    }

    /// The recording and mining tables (tests).
    #[must_use]
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The prefetching table (tests).
    #[must_use]
    pub fn prefetch_table(&self) -> &PrefetchTable {
        &self.ptable
    }

    /// Mining passes so far.
    #[must_use]
    pub fn minings(&self) -> u64 {
        self.mined
    }

    /// Table sizes for a cache of `cache_bytes` bytes.
    #[must_use]
    pub fn derive_sizes(cfg: &MithrilConfig, cache_bytes: f64) -> MithrilSizes {
        let limit = cfg.max_metadata * cache_bytes;
        let (min, max) = (u64::from(cfg.min_support), u64::from(cfg.max_support));
        let mut mining_rows = cfg.mining_threshold / cfg.min_support;
        if cfg.compat_libcachesim {
            // libCacheSim: the recording table has `bytes / (2·ceil(min/2) + 12)` rows but each is charged
            // `8·(ceil(min/4) + 1) + 4` bytes (its words plus a 4-byte index); mining rows are charged 2 B
            // per timestamp plus 12 B of id and index.
            let rec_row = 2 * min.div_ceil(2) + 12;
            let rec_charge = 8 * (min.div_ceil(4) + 1) + 4;
            let mining_row = 2 * max + 12;
            let recording_rows = (cache_bytes * cfg.recording_table / rec_row as f64).floor() as u32;
            let fixed = u64::from(recording_rows) * rec_charge + u64::from(mining_rows) * mining_row;
            return MithrilSizes { limit, recording_rows, mining_rows, fixed_bytes: fixed };
        }
        // The paper's layout: four 15-bit timestamps per 8-byte word, 8 B address + 4 B index per row.
        let rec_row = 8 * min.div_ceil(4) + 12;
        let mining_row = 8 * max.div_ceil(4) + 12;
        let mut recording_rows = (cache_bytes * cfg.recording_table / rec_row as f64).floor() as u32;
        if cfg.min_support == 1 {
            recording_rows = 0;
        }
        let bytes = |r: u32, m: u32| u64::from(r) * rec_row + u64::from(m) * mining_row;
        let budget = (cfg.table_share * limit).floor();
        let total = bytes(recording_rows, mining_rows) as f64;
        if total > budget {
            let f = budget / total;
            recording_rows = (f64::from(recording_rows) * f).floor() as u32;
            mining_rows = (f64::from(mining_rows) * f).floor() as u32;
        }
        MithrilSizes { limit, recording_rows, mining_rows, fixed_bytes: bytes(recording_rows, mining_rows) }
    }

    fn size_for(&mut self, geometry: LevelGeometry) {
        let cache_bytes = geometry.capacity as f64 * geometry.block_bytes as f64;
        let s = Self::derive_sizes(&self.cfg, cache_bytes);
        let c = &self.cfg;
        self.tables = Tables::new(c.min_support, c.max_support, s.recording_rows, s.mining_rows, c.compat_libcachesim);
        let growth = if c.compat_libcachesim {
            let max_shards = (s.limit / (f64::from(c.shard_rows) * f64::from(c.pf_list_size))).floor() as u32;
            Growth::Libcachesim { limit: s.limit, max_shards }
        } else {
            Growth::Bounded { limit: s.limit.floor() as u64 }
        };
        self.ptable = PrefetchTable::new(c.pf_list_size, c.shard_rows, growth, s.fixed_bytes);
        self.scratch = mining::Scratch::with_capacity(s.mining_rows as usize, c.max_support as usize);
        self.sizes = Some(s);
    }

    /// The stored form of timestamp `ts`.
    #[inline]
    fn stamp(&mut self, ts: u64) -> u32 {
        if self.cfg.compat_libcachesim {
            return (ts & TS15) as u32;
        }
        if ts - self.base >= REBASE_AT {
            self.tables.rebase(REBASE_SHIFT as u32);
            self.base += REBASE_SHIFT;
        }
        (ts - self.base) as u32
    }

    /// Record `block` at timestamp `ts`; mine when the mining table fills up.
    #[inline]
    fn record(&mut self, block: u64, ts: u64) {
        let stored = self.stamp(ts);
        // A cache too small for any mining row leaves Mithril inert.
        if self.tables.record(block, stored) && self.tables.mining_len() > 0 {
            self.mine();
        }
    }

    /// Whether `block` continues a cached run (`skip_sequential` blocks before it all cached).
    #[inline]
    fn sequential(&self, block: u64, ctx: &PrefetchCtx<'_>) -> bool {
        let k = u64::from(self.cfg.skip_sequential);
        k > 0 && block >= k && (1..=k).all(|d| ctx.cache.contains(block - d))
    }

    /// Mine the mining table into the prefetching table and clear it.
    fn mine(&mut self) {
        let (tables, ptable) = (&self.tables, &mut self.ptable);
        let (n, width) = (tables.mining_len(), self.cfg.max_support as usize);
        mining::mine(
            n,
            width,
            |r| tables.mining_ts(r),
            self.rules,
            &mut self.scratch,
            |i, j| {
                ptable.add(tables.mining_block(i), tables.mining_block(j));
            },
        );
        self.tables.clear_mining();
        self.mined += 1;
    }
}

impl Mithril {
    /// [`Prefetcher::on_access`] of a one-block request (every request of a block trace) in straight-line
    /// code: the same steps as the general loops, without them (measured together with the packed mining
    /// sort: 4-9% fewer instructions on one-block traces).
    #[inline]
    fn access_one(&mut self, b: u64, ctx: &mut PrefetchCtx<'_>) {
        let ts = self.next_ts;
        self.next_ts += 1;
        self.now = ts;
        if (self.each || (self.miss && ctx.outcomes[0] == Outcome::Miss)) && !self.sequential(b, ctx) {
            self.record(b, ts);
        }
        for &s in self.ptable.get(b) {
            ctx.prefetch(s, 1);
        }
    }
}

impl Prefetcher for Mithril {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if self.sizes.is_none() {
            self.attach(LevelGeometry { capacity: ctx.cache.capacity(), block_bytes: 4096 });
        }
        let n = ctx.demand_len.min(ctx.req.len) as usize;
        let first = ctx.req.first;
        if n == 1 {
            self.access_one(first, ctx);
            return;
        }
        let per_block = self.cfg.clock == Clock::Block;
        for i in 0..n {
            let ts = self.next_ts;
            if per_block {
                self.next_ts += 1;
            }
            self.now = ts;
            if self.each || (self.miss && ctx.outcomes[i] == Outcome::Miss) {
                let b = first + i as u64;
                if !self.sequential(b, ctx) {
                    self.record(b, ts);
                }
            }
        }
        if !per_block && n > 0 {
            self.next_ts += 1;
        }
        if self.ptable.is_empty() {
            return;
        }
        for i in 0..n {
            let b = first + i as u64;
            for &s in self.ptable.get(b) {
                ctx.prefetch(s, 1);
            }
        }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        if self.evict {
            self.record(entry.block, self.now);
        }
    }

    fn metadata_bytes(&self) -> u64 {
        self.ptable.metadata_bytes()
    }

    fn attach(&mut self, geometry: LevelGeometry) -> crate::prefetch::Capabilities {
        self.size_for(geometry);
        crate::prefetch::Capabilities {
            second_chances: self.cfg.second_chances,
            wants_evictions: self.evict,
            charge_metadata: self.cfg.charge_metadata,
            ..crate::prefetch::Capabilities::default()
        }
    }
}

impl super::NamedPrefetcher for Mithril {
    const NAME: &'static str = "mithril";
    const SUMMARY: &'static str =
        "Mithril, mining sporadic block associations (Yang et al., SoCC'17): presets paper, libcachesim";
    type Params = MithrilParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        Ok(Box::new(Mithril::from_params(path, params)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::BlockTable;
    use crate::prefetch::{CacheView, PrefetchPlan};
    use crate::request::Request;

    fn small(record: RecordOn) -> Mithril {
        let p = MithrilParams {
            lookahead: Some(3),
            mining_threshold: Some(4),
            record: Some(record),
            recording_table: Some(0.02),
            ..MithrilParams::default()
        };
        let mut m = Mithril::from_params("m", p).unwrap();
        let _ = m.attach(SMALL);
        m
    }

    const SMALL: LevelGeometry = LevelGeometry { capacity: 2, block_bytes: 4096 };

    /// One request of `block` with `outcome`; returns the blocks Mithril prefetches.
    fn access(m: &mut Mithril, block: u64, outcome: Outcome) -> Vec<u64> {
        let table = BlockTable::with_capacity(2);
        let mut plan = PrefetchPlan::default();
        let req = Request::read(block, 1);
        let outcomes = [outcome];
        let mut ctx = PrefetchCtx {
            req: &req,
            demand_len: 1,
            outcomes: &outcomes,
            cache: CacheView::new(&table, 2),
            plan: &mut plan,
        };
        m.on_access(&mut ctx);
        plan.runs.iter().map(|r| r.first).collect()
    }

    #[test]
    fn skip_sequential_does_not_record_a_block_whose_predecessor_is_cached() {
        let p = MithrilParams { skip_sequential: Some(1), ..MithrilParams::default() };
        let mut m = Mithril::from_params("m", p).unwrap();
        m.attach(LevelGeometry { capacity: 1000, block_bytes: 4096 });
        let mut table = BlockTable::with_capacity(4);
        table.insert(99, 0, 0);
        for block in [100u64, 200] {
            let mut plan = PrefetchPlan::default();
            let req = Request::read(block, 1);
            let mut ctx = PrefetchCtx {
                req: &req,
                demand_len: 1,
                outcomes: &[Outcome::Miss],
                cache: CacheView::new(&table, 4),
                plan: &mut plan,
            };
            m.on_access(&mut ctx);
        }
        assert_eq!(m.tables().lookup(100), None, "99 is cached: 100 continues a run");
        assert_eq!(m.tables().lookup(200), Some((false, &[1][..])));
    }

    #[test]
    fn presets_resolve_and_single_parameters_override_them() {
        let paper = MithrilParams::default().resolve("p").unwrap();
        assert_eq!(
            (paper.lookahead, paper.confidence, paper.charge_metadata, paper.compat_libcachesim),
            (50, 0, true, false)
        );
        let p = MithrilParams { preset: MithrilPreset::Libcachesim, lookahead: Some(30), ..MithrilParams::default() };
        let lcs = p.resolve("p").unwrap();
        assert_eq!((lcs.lookahead, lcs.min_support, lcs.max_support, lcs.confidence), (30, 2, 8, 1));
        assert_eq!(
            (lcs.pf_list_size, lcs.record, lcs.mining_threshold, lcs.second_chances),
            (2, RecordOn::Miss, 5120, 1)
        );
        assert!(!lcs.charge_metadata && lcs.compat_libcachesim);
        let e = MithrilParams { min_support: Some(9), ..MithrilParams::default() }.resolve("level[0].prefetcher");
        assert_eq!(e.unwrap_err().path, "level[0].prefetcher.min_support");
        let e = MithrilParams { max_metadata: Some(0.0), ..MithrilParams::default() }.resolve("x");
        assert_eq!(e.unwrap_err().path, "x.max_metadata");
    }

    #[test]
    fn libcachesim_sizes_follow_its_formulas() {
        let cfg = MithrilConfig::preset(MithrilPreset::Libcachesim);
        // blk4k at 0.1% of the footprint: 1,102,684 bytes.
        let s = Mithril::derive_sizes(&cfg, 1_102_684.0);
        assert_eq!((s.recording_rows, s.mining_rows), (1575, 2560));
        assert_eq!(s.fixed_bytes, 1575 * 20 + 2560 * 28);
        let mut m = Mithril::new(cfg);
        m.attach(LevelGeometry { capacity: 269, block_bytes: 4096 });
        // Fixed tables, the first shard and the shard pointers: past the limit from the start.
        let limit = 0.1 * 269.0 * 4096.0;
        assert!(m.metadata_bytes() as f64 > limit);
        assert_eq!(m.prefetch_table().shards(), 1);
    }

    #[test]
    fn bounded_sizes_keep_the_fixed_tables_within_their_share_of_the_limit() {
        let cfg = MithrilConfig::preset(MithrilPreset::Paper);
        for blocks in [10u64, 100, 269, 1000, 100_000] {
            let bytes = blocks as f64 * 4096.0;
            let s = Mithril::derive_sizes(&cfg, bytes);
            assert!(s.fixed_bytes as f64 <= 0.5 * s.limit, "{blocks}: {s:?}");
            let mut m = Mithril::new(cfg.clone());
            m.attach(LevelGeometry { capacity: blocks as usize, block_bytes: 4096 });
            assert!(m.metadata_bytes() as f64 <= s.limit);
        }
        // Large caches keep libCacheSim's table sizes (2% of the cache, 5120 / min_support rows).
        let s = Mithril::derive_sizes(&cfg, 1e9);
        assert_eq!((s.recording_rows, s.mining_rows), ((1e9 * 0.02 / 20.0) as u32, 2560));
    }

    #[test]
    fn two_misses_one_apart_twice_become_an_association_and_are_prefetched() {
        let mut m = small(RecordOn::Miss);
        assert_eq!(m.tables().recording_capacity(), 8);
        for b in [1000, 2000, 3001, 3002, 1000] {
            assert!(access(&mut m, b, Outcome::Miss).is_empty());
        }
        assert_eq!(m.tables().mining_len(), 1, "1000 reached min_support");
        // 2000's second miss fills the two-row mining table: mined at once, 1000 -> 2000 is strong.
        access(&mut m, 2000, Outcome::Miss);
        assert_eq!((m.minings(), m.tables().mining_len()), (1, 0));
        assert_eq!(m.prefetch_table().get(1000), &[2000]);
        assert_eq!(m.prefetch_table().get(2000), &[] as &[u64], "the later block is not a source");
        // Hits are not recorded, but they prefetch.
        assert_eq!(access(&mut m, 1000, Outcome::Hit), vec![2000]);
        assert_eq!(m.tables().lookup(1000), None);
    }

    #[test]
    fn recording_events_follow_the_setting() {
        let mut each = small(RecordOn::EachReq);
        access(&mut each, 5, Outcome::Hit);
        assert_eq!(each.tables().lookup(5), Some((false, &[0][..])));
        let mut evict = small(RecordOn::Evict);
        assert!(small(RecordOn::Evict).attach(SMALL).wants_evictions);
        access(&mut evict, 5, Outcome::Miss);
        assert_eq!(evict.tables().lookup(5), None);
        access(&mut evict, 6, Outcome::Miss);
        // An eviction during request 1 is recorded at timestamp 1.
        evict.on_evicted(&Entry { block: 5, ..Entry::default() });
        assert_eq!(evict.tables().lookup(5), Some((false, &[1][..])));
        assert!(!small(RecordOn::Miss).attach(SMALL).wants_evictions);
    }

    #[test]
    fn the_block_clock_ticks_per_demand_block_and_the_request_clock_per_request() {
        let table = BlockTable::with_capacity(2);
        for (clock, want) in [(Clock::Block, [0u32, 1, 2]), (Clock::Request, [0, 0, 0])] {
            let p = MithrilParams { clock: Some(clock), record: Some(RecordOn::EachReq), ..MithrilParams::default() };
            let mut m = Mithril::from_params("m", p).unwrap();
            m.attach(LevelGeometry { capacity: 1000, block_bytes: 4096 });
            let mut plan = PrefetchPlan::default();
            let req = Request::read(10, 3);
            let outcomes = [Outcome::Miss; 3];
            let mut ctx = PrefetchCtx {
                req: &req,
                demand_len: 3,
                outcomes: &outcomes,
                cache: CacheView::new(&table, 2),
                plan: &mut plan,
            };
            m.on_access(&mut ctx);
            let got: Vec<u32> = (10..13).map(|b| m.tables().lookup(b).unwrap().1[0]).collect();
            assert_eq!(got, want, "{clock:?}");
        }
    }

    #[test]
    fn libcachesim_timestamps_wrap_at_15_bits_and_ours_move_their_base() {
        let lcs = MithrilParams { preset: MithrilPreset::Libcachesim, ..MithrilParams::default() };
        let mut m = Mithril::from_params("m", lcs).unwrap();
        m.attach(LevelGeometry { capacity: 1000, block_bytes: 4096 });
        m.next_ts = 32768 + 5;
        access(&mut m, 9, Outcome::Miss);
        assert_eq!(m.tables().lookup(9), Some((false, &[5][..])));

        let mut m = small(RecordOn::Miss);
        access(&mut m, 7, Outcome::Miss);
        m.next_ts = REBASE_AT + 10;
        access(&mut m, 8, Outcome::Miss);
        // Block 7 (timestamp 0) is older than the shift and forgotten; 8 is stored from the new base.
        assert_eq!(m.base, REBASE_SHIFT);
        assert_eq!(m.tables().lookup(7), None);
        assert_eq!(m.tables().lookup(8), Some((false, &[(REBASE_AT + 10 - REBASE_SHIFT) as u32][..])));
    }
}
