//! Linux read-ahead in three modes: `pfc-paper` (the PFC paper's account of Linux 2.6 prefetching),
//! `2.6.16` (current and ahead windows) and `ondemand` (one window and a marker page, 2.6.23 and later).
//!
//! Sources, read for facts and restated in our words: Zhang et al., PFC (ICDCS 2008) §2.2 for
//! `pfc-paper`; Linux 2.6.16 `mm/readahead.c` (`page_cache_readahead`, `make_ahead_window`,
//! `blockable_page_cache_readahead`, `check_ra_success`, `get_init_ra_size`, `get_next_ra_size`,
//! `handle_ra_miss`, `ra_off`) with the caller `do_generic_mapping_read` in `mm/filemap.c` for `2.6.16`;
//! Linux v6.x `mm/readahead.c` (`ondemand_readahead`, `try_context_readahead`) and `mm/filemap.c`
//! (`filemap_get_pages`, `filemap_read`) for `ondemand`. The rules, worked window sequences and
//! resolved ambiguities are in `shared/docs/algorithms/linux-readahead.md`.
//!
//! Units: one page is one block. Linux keeps its state per open file; here it is kept per *stream key*
//! (`key`). The default, `stream`, follows what the trace declares ([`crate::trace_facts`]): on a trace
//! whose stream field carries ids (a file id, ASU, device, LUN, volume or disk column, or a generator
//! with streams) every id, 0 included, has its context, as `key = "id"`; on a trace without stream ids
//! (every request has stream 0) and on a source that declares nothing, a non-zero `stream` has its
//! context and stream 0 is "no id": its requests get contexts detected by the rule of [`super::detect`]
//! (a request continues the context that read block `s-1` or `s`, requested or read ahead). The trace
//! decides because a request cannot: every format without a stream field writes 0, and formats with one
//! number their ids from 0 (SPC ASU 0, DiskSim/MQSim device 0). The default is settled when the level
//! is built ([`Linux`]'s `NamedPrefetcher::for_trace`). `key = "id"` keys every id whatever the trace,
//! `key = "detect"` always detects, `key = "device"` keeps one state for everything (STEP's `RA#` on a
//! raw device). Contexts live in a bounded LRU table (`max_streams`); a forgotten context starts afresh
//! like a file opened again. Block numbers stand in for file offsets (block 0 is "the start of the
//! file" for the `i == 0` rules) \[ours\].
//!
//! The level calls the prefetcher once per request after looking every block up, so the kernel's
//! page-by-page caller is replayed inside one call: a block counts as cached when it was resident or in
//! flight at lookup, when an earlier block of the request reached it, or when a window issued earlier in
//! the same request covers it. Windows are handed to the level as prefetch runs without the part inside
//! the request (those blocks are demand blocks, read by the level anyway); a run directly after the
//! demand read extends it into one I/O, as the kernel's synchronous read-ahead does. Device congestion
//! (`bdi_read_congested`) is not modelled: every read-ahead is issued \[ours\].

use serde::{Deserialize, Serialize};

mod k2616;
mod ondemand;
mod paper;

use k2616::K2616;
use ondemand::Ondemand;
use paper::paper;

use super::detect::StreamDetector;
use super::marks::MarkMap;
use super::stream_table::StreamTable;
use super::{CacheView, Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::{parse_params, ComponentSpec, ConfigError};
use crate::policy::{Entry, Placement};

/// Which Linux read-ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum LinuxMode {
    /// The PFC paper's description (§2.2): per-file group and window, groups doubling from 3 to 32
    /// blocks, 3 blocks after a non-sequential access. Default: it is what PFC's "Linux" means \[ours\].
    #[default]
    #[serde(rename = "pfc-paper", alias = "pfc_paper", alias = "paper")]
    PfcPaper,
    /// Linux 2.6.16 `page_cache_readahead`: current and ahead windows, ×4 / ×2 growth, off on random
    /// reads, shrink by 2 after a read-ahead miss, off after 256 cached pages.
    #[serde(rename = "2.6.16", alias = "linux-2.6.16", alias = "2616")]
    V2616,
    /// On-demand read-ahead (v6.x `ondemand_readahead`): one window with an asynchronous marker page.
    #[serde(rename = "ondemand", alias = "linux-ondemand", alias = "on-demand")]
    Ondemand,
}

/// How requests are mapped to per-stream states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKey {
    /// The trace's stream ids when it carries them, else detected (default).
    ///
    /// A request cannot tell "the trace has no stream field" (every format without one gives 0) from
    /// "stream id 0" (SPC ASU 0, DiskSim or MQSim device 0, the first SYSTOR LUN or Tencent volume, MSR
    /// disk 0, file 0); the trace can ([`TraceFacts`](crate::TraceFacts)). On a trace whose stream field
    /// carries ids this is [`StreamKey::Id`]: one context per id, 0 included, so the same workload gives
    /// the same results on stream 0 and stream 1 (before traces declared it, stream 0 was detected there:
    /// `studies/policies.md`, finding 2). On a trace without stream ids, and on a source that declares
    /// nothing (requests built in memory, a plugin's source), a non-zero `stream` keys its context and
    /// the requests of stream 0 get detected contexts.
    #[default]
    Stream,
    /// The request's `stream`, 0 included: one context per stream id, whatever the trace declares. On a
    /// trace without stream ids this is `device`.
    Id,
    /// Always detected from the block numbers, whatever the requests' stream ids.
    Detect,
    /// One state for the whole device (STEP's `RA#`; linux-readahead.md ambiguity 5).
    Device,
}

/// When `pfc-paper` starts a new group on a sequential access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaperTrigger {
    /// When the reader reaches the current group (default, \[ours\]).
    #[default]
    ReachGroup,
    /// On every access inside the window: the paper read literally (the window then outruns the reader).
    EveryAccess,
}

/// Linux read-ahead parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinuxParams {
    /// `pfc-paper` (default), `2.6.16` or `ondemand`.
    pub mode: LinuxMode,
    /// Maximum window in pages (`ra_pages`; default 32 = 128 KiB, `VM_MAX_READAHEAD` \[code\]; PFC's
    /// maximum group of 32 blocks \[paper\]).
    pub ra_pages: u32,
    /// `2.6.16`: the floor a read-ahead miss shrinks the window to (default 4, `VM_MIN_READAHEAD` \[code\]).
    pub min_pages: u32,
    /// `2.6.16`: consecutive already-cached pages after which read-ahead stops (default 256,
    /// `VM_MAX_CACHE_HIT` \[code\]).
    pub max_cache_hit: u32,
    /// `ondemand`: the device's optimal I/O size in pages; a read larger than `ra_pages` may use up to
    /// this (default none: off \[ours\]).
    pub io_pages: Option<u32>,
    /// `pfc-paper`: blocks prefetched after a non-sequential access (default 3 \[paper\]).
    pub pfc_paper_min: u32,
    /// `pfc-paper`: `reach_group` (default, \[ours\]) or `every_access`.
    pub pfc_paper_trigger: PaperTrigger,
    /// Per-stream state key: `stream` (default: every stream id, 0 included, on a trace that carries
    /// them; else the non-zero stream id, stream 0 detected), `id` (every stream id, 0 included), `detect`
    /// or `device`.
    pub key: StreamKey,
    /// Per-stream contexts kept (LRU; default 4096, \[ours\]).
    pub max_streams: usize,
    /// Block claims the stream detector remembers (default 16,384, \[ours\]).
    pub stream_memory: usize,
    /// Where prefetched blocks go: `default` (the level's `pf_insert`), `mru` or `lru`.
    pub insert_pos: Placement,
    /// The last valid block (inclusive), the device end or EOF: read-ahead is clipped there. Default:
    /// none.
    pub max_block: Option<u64>,
}

impl Default for LinuxParams {
    fn default() -> Self {
        Self {
            mode: LinuxMode::PfcPaper,
            ra_pages: 32,
            min_pages: 4,
            max_cache_hit: 256,
            io_pages: None,
            pfc_paper_min: 3,
            pfc_paper_trigger: PaperTrigger::ReachGroup,
            key: StreamKey::Stream,
            max_streams: 4096,
            stream_memory: 1 << 14,
            insert_pos: Placement::Default,
            max_block: None,
        }
    }
}

impl LinuxParams {
    /// Check the values; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.ra_pages == 0 {
            return Err(("ra_pages", "the maximum window must be at least 1 page".into()));
        }
        if self.pfc_paper_min == 0 {
            return Err(("pfc_paper_min", "must be at least 1 block".into()));
        }
        for (key, pages) in [
            ("ra_pages", Some(self.ra_pages)),
            ("min_pages", Some(self.min_pages)),
            ("io_pages", self.io_pages),
            ("pfc_paper_min", Some(self.pfc_paper_min)),
        ] {
            if let Some(msg) = pages.and_then(super::degree_too_large) {
                return Err((key, msg));
            }
        }
        if self.max_streams == 0 {
            return Err(("max_streams", "must be at least 1".into()));
        }
        if self.stream_memory == 0 {
            return Err(("stream_memory", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// "No page yet" for `prev_page` / `prev_index` (the kernel's -1).
pub const NO_PAGE: u64 = u64::MAX;

/// `pfc-paper` state of one stream: the current and previous read-ahead groups (inclusive ranges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PaperState {
    /// The current group `[g0, g1]`, none before the first access.
    pub group: Option<(u64, u64)>,
    /// The previous group; the window is both.
    pub prev_group: Option<(u64, u64)>,
}

/// `2.6.16` state of one stream (`struct file_ra_state` of that kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State2616 {
    /// First page of the current window.
    pub start: u64,
    /// Pages in the current window; 0 = read-ahead off.
    pub size: u64,
    /// First page of the ahead window; 0 = no ahead window.
    pub ahead_start: u64,
    /// Pages in the ahead window (after a reset: the old window end, as the kernel keeps it).
    pub ahead_size: u64,
    /// The page most recently inspected, [`NO_PAGE`] before the first read.
    pub prev_page: u64,
    /// `RA_FLAG_MISS`: a page was missing after read-ahead; the next window shrinks.
    pub miss: bool,
    /// `RA_FLAG_INCACHE`: read-ahead stopped because the pages were all cached.
    pub incache: bool,
    /// Consecutive pages found cached by read-ahead.
    pub cache_hit: u64,
}

impl Default for State2616 {
    fn default() -> Self {
        Self {
            start: 0,
            size: 0,
            ahead_start: 0,
            ahead_size: 0,
            prev_page: NO_PAGE,
            miss: false,
            incache: false,
            cache_hit: 0,
        }
    }
}

/// `ondemand` state of one stream (the v6.x `file_ra_state` fields it uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OndemandState {
    /// First page of the window.
    pub start: u64,
    /// Pages in the window.
    pub size: u64,
    /// Pages at the end of the window whose first carries the marker (`PG_readahead`).
    pub async_size: u64,
    /// Page index just after the previous read ([`NO_PAGE`] before the first).
    pub prev_index: u64,
}

impl Default for OndemandState {
    fn default() -> Self {
        Self { start: 0, size: 0, async_size: 0, prev_index: NO_PAGE }
    }
}

/// The read-ahead state of one stream, for tests and inspection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamState {
    /// `pfc-paper`.
    PfcPaper(PaperState),
    /// `2.6.16`.
    V2616(State2616),
    /// `ondemand`.
    Ondemand(OndemandState),
}

impl StreamState {
    fn new(mode: LinuxMode) -> Self {
        match mode {
            LinuxMode::PfcPaper => StreamState::PfcPaper(PaperState::default()),
            LinuxMode::V2616 => StreamState::V2616(State2616::default()),
            LinuxMode::Ondemand => StreamState::Ondemand(OndemandState::default()),
        }
    }
}

/// Initial window for a read of `n` pages (`get_init_ra_size`, the same in 2.6.16 and v6.x).
#[must_use]
pub fn init_size(n: u64, max: u64) -> u64 {
    let s = n.max(1).next_power_of_two();
    if s <= max / 32 {
        4 * s
    } else if s <= max / 4 {
        2 * s
    } else {
        max
    }
}

/// Next window after one of `size` pages, v6.x (`get_next_ra_size`).
#[must_use]
pub fn next_size_ondemand(size: u64, max: u64) -> u64 {
    if size < max / 16 {
        4 * size
    } else if size <= max / 2 {
        2 * size
    } else {
        max
    }
}

/// One stream's context: its read-ahead state and, for detected streams, the last range of blocks it
/// claimed in the detector.
#[derive(Clone, Copy, Debug)]
struct Context {
    state: StreamState,
    claimed: (u64, u64),
}

impl Context {
    fn new(mode: LinuxMode) -> Self {
        Self { state: StreamState::new(mode), claimed: (1, 0) }
    }
}

/// Claim `[a, b]` for stream `id`, skipping the part of it the stream claimed last (`claimed`, which
/// it extends): a sequential stream claims each block about once instead of at every request and window
/// that names it again \[ours; the latest claim still wins for every block claimed\].
fn claim_new(d: &mut StreamDetector<u64>, claimed: &mut (u64, u64), a: u64, b: u64, id: u64) {
    let (lo, hi) = *claimed;
    if a >= lo && a <= hi.saturating_add(1) && lo <= hi {
        if b > hi {
            d.claim(hi + 1, b - hi, id);
            claimed.1 = b;
        }
    } else {
        d.claim(a, b - a + 1, id);
        *claimed = (a, b);
    }
}

/// Key of detected streams in the context table (file ids use the low 32 bits).
const DETECTED: u64 = 1 << 32;
/// Key of the single context of `key = "device"`.
const DEVICE: u64 = 1 << 33;

/// One request as the kernel's page-by-page caller would see it.
struct Io<'a> {
    s: u64,
    e: u64,
    outcomes: &'a [Outcome],
    cache: CacheView<'a>,
    /// Blocks of the request before this one have been read (or found).
    cursor: u64,
    /// Last readable block (`max_block`, or `u64::MAX`).
    eof: u64,
    /// Windows issued during this request: (first, len).
    issued: &'a mut Vec<(u64, u64)>,
    /// `ondemand` marker pages.
    marks: &'a mut MarkMap<()>,
}

impl Io<'_> {
    /// Whether block `x` is cached at this point of the request.
    #[inline(always)]
    fn cached(&self, x: u64) -> bool {
        let here = if x >= self.s && x <= self.e {
            x < self.cursor || self.outcomes[(x - self.s) as usize] != Outcome::Miss
        } else {
            self.cache.cached(x)
        };
        here || self.issued.iter().any(|&(a, n)| x >= a && x - a < n)
    }

    /// [`Io::cached`] for the block at the cursor (the page the caller is at), without the range tests.
    #[inline(always)]
    fn cached_at_cursor(&self) -> bool {
        let x = self.cursor;
        self.outcomes[(x - self.s) as usize] != Outcome::Miss || self.issued.iter().any(|&(a, n)| x >= a && x - a < n)
    }

    /// Issue read-ahead of `[start, start+len)`, clipped at the device end.
    fn read(&mut self, start: u64, len: u64) {
        if len == 0 || start > self.eof {
            return;
        }
        let last = start.saturating_add(len - 1).min(self.eof);
        self.issued.push((start, last - start + 1));
    }

    /// [`Io::read`], returning whether any page of it was not cached (the kernel's `actual > 0`; the
    /// count itself is never needed). Only 2.6.16 looks at it, so only it pays for the lookups.
    fn read_fresh(&mut self, start: u64, len: u64) -> bool {
        if len == 0 || start > self.eof {
            return false;
        }
        let last = start.saturating_add(len - 1).min(self.eof);
        let fresh = (start..=last).any(|x| !self.cached(x));
        self.issued.push((start, last - start + 1));
        fresh
    }
}

/// Linux read-ahead.
#[derive(Debug)]
pub struct Linux {
    params: LinuxParams,
    max: u64,
    table: StreamTable<Context>,
    /// Detected streams: block claims tagged with the stream's [`tag`] (its id and its table slot).
    detector: Option<StreamDetector<u64>>,
    marks: MarkMap<()>,
    issued: Vec<(u64, u64)>,
    last_slot: Option<u32>,
    /// The last readable block: `max_block`, or `u64::MAX`.
    eof: u64,
}

/// Marker pages kept beyond the capacity before a sweep of those not resident \[ours\] (a marker whose
/// page found no room is never evicted).
const MARK_SLACK: usize = 64;

impl Linux {
    /// Linux read-ahead with `params` (see [`LinuxParams::validate`]).
    pub fn new(params: LinuxParams) -> Result<Self, (&'static str, String)> {
        params.validate()?;
        let detector = matches!(params.key, StreamKey::Stream | StreamKey::Detect)
            .then(|| StreamDetector::new(params.stream_memory));
        Ok(Self {
            max: u64::from(params.ra_pages),
            table: StreamTable::new(params.max_streams),
            detector,
            marks: MarkMap::default(),
            issued: Vec::with_capacity(8),
            last_slot: None,
            eof: params.max_block.unwrap_or(u64::MAX),
            params,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &LinuxParams {
        &self.params
    }

    /// The state of the stream the most recent request used (tests and inspection).
    #[must_use]
    pub fn last_state(&self) -> Option<StreamState> {
        self.last_slot.and_then(|s| self.table.slot(s)).map(|c| c.state)
    }

    /// The state kept for requests with stream id `stream` (`key = "id"`, or non-zero with `key = "stream"`).
    #[must_use]
    pub fn stream_state(&self, stream: u32) -> Option<StreamState> {
        self.table.get(u64::from(stream)).map(|c| c.state)
    }

    /// `ondemand` marker pages currently set, sorted (tests).
    #[must_use]
    pub fn marks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.marks.iter().map(|(b, ())| b).collect();
        v.sort_unstable();
        v
    }

    /// Number of per-stream contexts held.
    #[must_use]
    pub fn streams(&self) -> usize {
        self.table.len()
    }

    /// The table slot of the context of a request starting at `s` with stream id `stream`, made most
    /// recently used (created when absent), and the detector tag when the stream is a detected one.
    /// Detected contexts are found through the slot their claims carry, without hashing: a trace of
    /// random requests makes a new stream at almost every request.
    fn locate(&mut self, s: u64, stream: u32) -> (u32, Option<u64>) {
        let mode = self.params.mode;
        let key = match self.params.key {
            StreamKey::Device => DEVICE,
            StreamKey::Stream if stream != 0 => u64::from(stream),
            StreamKey::Id => u64::from(stream),
            _ => {
                let d = self.detector.as_mut().expect("a detector for key = stream or detect");
                let (id, known) = match d.continues_or_owner(s) {
                    Some(t) => ((t >> 32) as u32, Some(t as u32)),
                    None => (d.new_stream(), None),
                };
                let key = DETECTED | u64::from(id);
                let slot = match known {
                    // A fresh id: no context can have its key.
                    None => self.table.insert_unindexed(key, || Context::new(mode)).0,
                    Some(slot) if self.table.get_at(slot, key).is_some() => slot,
                    // The context the claim names was forgotten (and maybe made again from another old
                    // claim): the rare case goes through the index.
                    Some(_) => self.table.get_or_insert_with(key, || Context::new(mode)).0,
                };
                return (slot, Some(tag(id, slot)));
            }
        };
        (self.table.get_or_insert_with(key, || Context::new(mode)).0, None)
    }
}

/// The detector tag of detected stream `id` whose context is in table slot `slot`.
fn tag(id: u32, slot: u32) -> u64 {
    (u64::from(id) << 32) | u64::from(slot)
}

impl Prefetcher for Linux {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let (s, e) = (ctx.req.first, ctx.req.last());
        let (slot, detected) = self.locate(s, ctx.req.stream);
        self.last_slot = Some(slot);
        let Context { state, claimed } = self.table.slot_mut(slot);
        if self.marks.len() > ctx.cache.capacity() + MARK_SLACK {
            let cache = ctx.cache;
            self.marks.retain(|b, ()| cache.contains(b));
        }
        self.issued.clear();
        let mut io = Io {
            s,
            e,
            outcomes: ctx.outcomes,
            cache: ctx.cache,
            cursor: s,
            eof: self.eof,
            issued: &mut self.issued,
            marks: &mut self.marks,
        };
        match state {
            StreamState::PfcPaper(st) => paper(
                st,
                &mut io,
                u64::from(self.params.pfc_paper_min),
                self.max,
                self.params.pfc_paper_trigger == PaperTrigger::EveryAccess,
            ),
            StreamState::V2616(st) => {
                let k = K2616 {
                    max: self.max,
                    min: u64::from(self.params.min_pages),
                    max_cache_hit: u64::from(self.params.max_cache_hit),
                };
                k.request(st, &mut io);
            }
            StreamState::Ondemand(st) => {
                let k = Ondemand { max: self.max, io_pages: self.params.io_pages.map(u64::from) };
                k.request(st, &mut io);
            }
        }
        // One pass over the windows issued: each becomes a prefetch run (without its part inside the
        // request) and, for a detected stream, a claim. The claims are the request and the windows as
        // few ranges as possible: a window that continues the range before it joins it (the same blocks
        // claimed in the same order, with fewer probes).
        let mut claims = detected.zip(self.detector.as_mut());
        let (stream, placement) = (ctx.req.stream, self.params.insert_pos);
        let (mut lo, mut hi) = (s, e);
        for &(a, n) in &self.issued {
            let last = a + (n - 1);
            if let Some((id, d)) = &mut claims {
                if a >= lo && a <= hi.saturating_add(1) {
                    hi = hi.max(last);
                } else {
                    claim_new(d, claimed, lo, hi, *id);
                    (lo, hi) = (a, last);
                }
            }
            let first = if a <= e { e.saturating_add(1) } else { a };
            if first > last || first <= e {
                continue;
            }
            let len = u32::try_from(last - first + 1).unwrap_or(u32::MAX);
            ctx.prefetch_run(PrefetchRun { first, len, stream, placement });
        }
        if let Some((id, d)) = claims {
            claim_new(d, claimed, lo, hi, id);
        }
    }

    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities {
            wants_evictions: self.params.mode == LinuxMode::Ondemand,
            ..super::Capabilities::default()
        }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        self.marks.remove(entry.block);
    }

    /// A window's page the level had no room for was never allocated, so it carries no marker
    /// (linux-readahead.md: the marker is set "only if this read allocated that page").
    fn on_dropped(&mut self, block: u64) {
        self.marks.remove(block);
    }

    fn metadata_bytes(&self) -> u64 {
        (self.table.len() * 64 + self.marks.len() * 16) as u64
            + self.detector.as_ref().map_or(0, StreamDetector::metadata_bytes)
    }
}

/// Build `linux` from a config entry.
pub fn build(path: &str, spec: &ComponentSpec) -> Result<Linux, ConfigError> {
    let params: LinuxParams = parse_params(path, spec)?;
    Linux::new(params).map_err(|(field, msg)| ConfigError::new(format!("{path}.{field}"), msg))
}

impl super::NamedPrefetcher for Linux {
    const NAME: &'static str = "linux";
    const SUMMARY: &'static str = "Linux read-ahead: modes pfc-paper (PFC §2.2), 2.6.16, ondemand (v6.x)";
    type Params = LinuxParams;

    /// `key = "stream"` on a trace whose stream field carries ids is `key = "id"` ([`StreamKey::Stream`]).
    fn for_trace(mut params: LinuxParams, facts: &crate::TraceFacts) -> LinuxParams {
        if params.key == StreamKey::Stream && facts.stream_ids {
            params.key = StreamKey::Id;
        }
        params
    }

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        Ok(Box::new(Linux::new(params).map_err(|(field, msg)| ConfigError::new(format!("{path}.{field}"), msg))?))
    }
}
