//! STEP: sequentiality and thrashing detection based prefetching for a storage server's cache (S. Liang,
//! S. Jiang, X. Zhang, ICDCS 2007; technical report OSU-CISRC-3/07-TR23, whose sections are cited), with
//! the paper's comparison schemes PM-CON, PM-BB and PM-SA as presets. Rules, parameters and resolved
//! ambiguities: `shared/docs/algorithms/step.md`.
//!
//! Per request `[s, e]` (§4, §5: "on each block read request, our library creates or updates relevant
//! PCs, then it generates corresponding prefetching requests when appropriate"):
//! 1. Timers of the delayed queue that are due issue their prefetches ([`delayed`], §4.4).
//! 2. The request is matched to the prefetching context whose next block is `s` ([`context`], §4.1.1):
//!    it extends that stream (sequence length, request history, hit ratio, queue move, [`queues`]), or a
//!    new context is made, purging a batch first when the bound is reached.
//! 3. Seeks in and out of the context's neighborhood update its thrashing intensity ([`thrash`],
//!    §4.1.2), with seek times from a disk model ([`disk`]).
//! 4. The preset's length rule ([`cost`], §4.2.2, §4.3, §6.1) gives `PL`, the blocks to have beyond `e`.
//!    The blocks of `[e + 1, e + PL]` not yet prefetched are prefetched as one request when they are at
//!    least one estimated request, or when nothing is ahead ([`IssueRule::Window`]), or once less than
//!    one request is ahead ([`IssueRule::LowWater`]); both are readings, the sentences they rest on are at
//!    [`IssueRule`]. They are issued at once, after the demand read (one
//!    I/O when contiguous, §4.2.1), or wait in the delayed queue (§4.4).
//!
//! Raised priority (§4.4): prefetched blocks stay ahead of other blocks at eviction until their first
//! demand access, through [`Prefetcher::raise`], for up to `raised_cap` of the cache \[ours\]; the
//! first access is an ordinary first hit, so the priority is what the policy would have given.
//! Purging also removes the contexts of streams that use the cache poorly (§4.4), which then prefetch
//! only what low-confidence streams do.
//!
//! Time: only the delayed queue needs a clock (thrashing adds seek times). The instant engine has none,
//! so STEP runs a virtual one ([`delayed::VirtualClock`]); in the timed engine `clock = "engine"` reads
//! the simulated time off each request. A late prefetch (a demand access that waits for an in-flight
//! block, timed engine) is a prefetch hit when the block lies within what its stream prefetched.
//!
//! The server sees whole requests: the blocks a level above prefetched are part of the request here
//! (a storage server cannot tell them apart) \[ours\].

pub mod context;
pub mod cost;
pub mod delayed;
pub mod disk;
pub mod queues;
pub mod thrash;

use serde::{Deserialize, Serialize};

use self::context::{Context, Contexts, DelayedRun, MatchWindow, Queue, MAX_HISTORY};
pub use self::cost::StepPreset;
use self::cost::{Pdf, PdfShape, Sizing};
use self::delayed::{fire_time, ClockKind, DelayedQueue, VirtualClock};
use self::disk::DiskView;
use self::queues::{Queues, Thresholds};
use self::thrash::SeekTracker;
use super::{LevelGeometry, Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::ConfigError;
use crate::policy::Placement;

/// Where `ST` of the earning function comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StSource {
    /// The PC's thrashing intensity, itself a mean seek cost (default) \[ours\].
    #[default]
    Intensity,
    /// The disk model's mean seek time ("average time for one seek", §4.2.2).
    DiskAvg,
}

/// When a stream's prefetch is issued. The paper has no sentence of the form "prefetch when ...": both
/// rules are readings of ours (`shared/docs/algorithms/step.md`, pseudocode).
///
/// [`IssueRule::Window`] (the library default) rests on these (STEP, OSU-CISRC-3/07-TR23):
/// 1. "On each block read request, our library creates or updates relevant PCs, then it generates
///    corresponding prefetching requests when appropriate" (§5): the decision is taken on every request.
/// 2. "Under two circumstances, we generate prefetching requests: a) detection of a high confidence
///    sequential stream; b) detection of a thrashing condition" (§4.3): the length rules ([`cost`]) give
///    `PL > 0` only then (and `RL` for low-confidence streams, which "only prefetch conservatively", §4.4).
/// 3. `PL` is the "total expected prefetching length", its earning `E(x, PL)` integrated from `z = 0`, the
///    block after the stream's current position (§4.3).
/// 4. A PC keeps "the current prefetch address that a stream has recently requested prefetching"
///    (§4.1.1): blocks up to it are not prefetched again.
/// 5. "Prefetching less than the next request length is almost always a waste for a busy server"
///    (§4.2.2, case (a)): a top-up shorter than the estimated next request is not issued.
///
/// [`IssueRule::LowWater`] follows §4.2.2 instead: "The benefit of aggressive prefetching is further
/// magnified when a single prefetching request can cover multiple fetch requests later, as the cost of
/// multiple seeks can be avoided", and `E(x, PL)` charges one `PL`-long access (a single `dz/BW` transfer,
/// no seek per request): one prefetch of `PL` blocks, issued when less than one request is left, covers
/// the stream's next requests; the window rule instead issues one disk access per request. `prefetchsim
/// reproduce step` uses low-water by that criterion (`docs/papers/step.md`).
///
/// Either way the prefetch is issued "asynchronously after the fetch request is fulfilled" (§4.2.1),
/// unless its stream is expected back too late and the delayed queue takes it (§4.4). PM-SA's "prefetch
/// aggressively ... on a cache hit" (§6.1) uses the same rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueRule {
    /// Points 1-5 above (default): after every request `[s, e]` of a PC with `PL > 0`,
    /// prefetch `[max(e, pf_end) + 1, e + PL]` as one request when it holds at least `need` blocks (or
    /// when nothing is ahead). A stream of steady `r`-block requests thus tops its window up by `r`
    /// blocks per request once the window is full.
    #[default]
    Window,
    /// §4.2.2's single request covering several later fetches: top up to `e + PL` only when fewer than
    /// `max(need, refill * PL)` blocks are ahead. With `refill = 0` (the default) a stream tops up once
    /// less than one request is left, so its next request waits on the top-up.
    LowWater,
}

/// STEP's parameters. Every value the paper leaves open is one of them (\[ours\] in step.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StepParams {
    /// Length rule: `pm-ta` (STEP, default), `pm-con`, `pm-bb` or `pm-sa`. The other parameters apply to
    /// every preset (the schemes share STEP's context machinery and cache interaction) \[ours\].
    pub preset: StepPreset,
    /// `N`, requests a PC remembers for length, hit-ratio and arrival estimates (4, "very small, e.g. 4",
    /// §4.3; 1 to 8).
    pub history: usize,
    /// `α`, weight of the latest seek in the thrashing intensity (0.2, "e.g.", §4.1.2).
    pub alpha: f64,
    /// Bound on the number of PCs (1024) \[ours\].
    pub max_pcs: usize,
    /// PCs purged per batch (default `max_pcs / 8`, at least 1) \[ours\].
    pub purge_batch: Option<usize>,
    /// Weighted round-robin weights of the new, low and high queues ([4, 2, 1]) \[ours\].
    pub purge_weights: [u32; 3],
    /// Sequence length (blocks) to enter the high queue (64) \[ours\].
    pub high_min_len: u64,
    /// Requests of the PC's history (at most `history`) to enter the high queue (0) \[ours\]: with
    /// `history`, a PC whose whole recent history extended it, the window its `H` and `RL` rest on.
    pub high_min_requests: usize,
    /// Hit ratio to enter the high queue (0.5) \[ours\].
    pub promote_hr: f64,
    /// Hit ratio below which a high PC is demoted (0.3) \[ours\].
    pub demote_hr: f64,
    /// Intensity above which a neighborhood is thrashing, ms (default a quarter of the disk's mean seek
    /// over its whole stroke: 1.37 ms for the Cheetah 9LP, 2.11 ms for the 7200 rpm 1 TB disk) \[ours\]:
    /// the paper only says "a pre-defined threshold" (§4.1.2), relative to nothing, so the whole disk is
    /// our reading.
    pub thrash_threshold_ms: Option<f64>,
    /// The thrashing threshold as the time of a seek over this many cylinders of the disk model, when
    /// `thrash_threshold_ms` is not given \[ours\]: §4.1.2 reasons that "the seek latency beyond around ten
    /// cylinders is still at the magnitude of milliseconds", within which "at least several tens of
    /// kilobytes sequential data can be read", so 10 makes a neighborhood whose mean seek cost exceeds a
    /// ten-cylinder seek a thrashing one.
    pub thrash_cylinders: Option<u32>,
    /// `UB`, the most blocks prefetched ahead of a stream (256: 1 MiB of 4 KiB blocks), at most
    /// `upper_bound_share` of the cache \[ours\].
    pub upper_bound: u32,
    /// `UB` is "system-dependent" (§4.3): at most this share of the cache (1/64), so that the prefetched
    /// blocks of 32 streams fit in the raised half of the cache \[ours\]. 1 leaves `upper_bound` alone in
    /// any cache of 256 blocks or more.
    pub upper_bound_share: f64,
    /// `ST` of the earning function: `intensity` (default) or `disk_avg` \[ours\].
    pub st_source: StSource,
    /// `BW`, streaming bandwidth in blocks per ms (default the disk's: its mean media rate, or its bus rate
    /// when lower) \[ours\].
    pub bandwidth: Option<f64>,
    /// Disk model for seek times and bandwidth, a disk of the device registry (`cheetah9lp`) \[ours\].
    pub device: String,
    /// Shape of `P(x, y)`: `exp` (default) or `linear` (§4.3).
    pub pdf: PdfShape,
    /// `k`, weight of the past length in the pdf's scale `k x + c` (1.0) \[ours\].
    pub pdf_k: f64,
    /// `c`, the pdf's scale for a stream with no past, blocks (16) \[ours\].
    pub pdf_c: f64,
    /// PM-TA: low-confidence PCs prefetch one estimated request (true) or nothing unless thrashing
    /// (false: §4.3 names only two triggers) \[ours\]; see [`cost`].
    pub low_prefetch: bool,
    /// Request matching: `exact` (stride one), `overlap` (also a start in the last block read; default)
    /// or `prefetched` (also a start inside the prefetched blocks) \[ours\].
    pub match_window: MatchWindow,
    /// PM-BB: share of the PC's prefetch-hit length prefetched (0.5) \[ours\].
    pub bb_share: f64,
    /// Most unused prefetched blocks with raised priority, as a share of the cache (1: all; 0 turns the
    /// raise off); beyond it the oldest unused prefetched block leaves first \[ours\].
    pub raised_cap: f64,
    /// Extra passes through the eviction end an unused prefetched block gets (1): the raise ends at the
    /// first use or after this many, so that prefetches that are never used age out \[ours\].
    pub raised_passes: u8,
    /// Use the delayed queue (false) \[ours\]. Off by default, as step.md advises without a timing model:
    /// on the instant engine's virtual clock a stream often comes back before the timer of its delayed
    /// prefetch and misses (measured on 32 interleaved streams: STEP's hit ratio 0.988 -> 0.9875, PM-CON's
    /// 0.81 -> 0.59). In the timed engine turn it on with `clock = "engine"`.
    pub delayed: bool,
    /// A prefetch whose stream is expected back later than this waits in the delayed queue (100 ms)
    /// \[ours\].
    pub delay_horizon_ms: f64,
    /// A delayed prefetch is issued this many times its expected service time (mean seek plus transfer)
    /// before its stream's expected next arrival (2) \[ours\].
    pub delay_margin: f64,
    /// Clock of the delayed queue: `disk` (default), `requests` or `engine` (the requests' time: the
    /// timed engine's simulated time) \[ours\].
    pub clock: ClockKind,
    /// Time each request adds to the virtual clock, ms (0.1) \[ours\].
    pub request_ms: f64,
    /// The last valid block (inclusive): prefetches are clipped there. Default: none.
    pub max_block: Option<u64>,
    /// Top a stream's prefetched blocks up when they no longer cover the longest of its last `N`
    /// requests, not only when they fall short of the estimate `RL` (true) \[ours\].
    pub cover_longest: bool,
    /// When a stream's prefetch is issued: `window` (default) or `low-water` (with `refill`); both are
    /// readings, see [`IssueRule`].
    pub issue: IssueRule,
    /// `issue = "low-water"` only: top a stream's prefetched blocks up to its prefetch length once fewer
    /// than this share of that length are left ahead \[ours\]. 0 (default): only when less than one
    /// request is left (step.md's pseudocode).
    pub refill: f64,
}

impl Default for StepParams {
    fn default() -> Self {
        Self {
            preset: StepPreset::PmTa,
            history: 4,
            alpha: 0.2,
            max_pcs: 1024,
            purge_batch: None,
            purge_weights: [4, 2, 1],
            high_min_len: 64,
            high_min_requests: 0,
            promote_hr: 0.5,
            demote_hr: 0.3,
            thrash_threshold_ms: None,
            thrash_cylinders: None,
            upper_bound: 256,
            upper_bound_share: 1.0 / 64.0,
            st_source: StSource::Intensity,
            bandwidth: None,
            device: "cheetah9lp".into(),
            pdf: PdfShape::Exp,
            pdf_k: 1.0,
            pdf_c: 16.0,
            low_prefetch: true,
            match_window: MatchWindow::Overlap,
            bb_share: 0.5,
            raised_cap: 1.0,
            raised_passes: 1,
            delayed: false,
            delay_horizon_ms: 100.0,
            delay_margin: 2.0,
            clock: ClockKind::Disk,
            request_ms: 0.1,
            max_block: None,
            cover_longest: true,
            issue: IssueRule::Window,
            refill: 0.0,
        }
    }
}

impl StepParams {
    /// Check the values; errors name `path.key`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |key: &str, msg: String| Err(ConfigError::new(format!("{path}.{key}"), msg));
        let nonneg = |key: &str, x: f64| {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                err(key, format!("must be a finite number >= 0, got {x}"))
            }
        };
        let share = |key: &str, x: f64| {
            if (0.0..=1.0).contains(&x) {
                Ok(())
            } else {
                err(key, format!("must be in [0, 1], got {x}"))
            }
        };
        if !(1..=MAX_HISTORY).contains(&self.history) {
            return err("history", format!("must be in 1..={MAX_HISTORY}, got {}", self.history));
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return err("alpha", format!("must be in (0, 1], got {}", self.alpha));
        }
        if self.max_pcs == 0 || self.max_pcs > u32::MAX as usize / 2 {
            return err("max_pcs", format!("must be in 1..=2^31, got {}", self.max_pcs));
        }
        if let Some(b) = self.purge_batch {
            if b == 0 || b > self.max_pcs {
                return err("purge_batch", format!("must be in 1..=max_pcs ({}), got {b}", self.max_pcs));
            }
        }
        if self.purge_weights.iter().all(|&w| w == 0) {
            return err("purge_weights", "at least one weight must be positive".into());
        }
        if self.high_min_requests > self.history {
            return err(
                "high_min_requests",
                format!("must not exceed history ({}), got {}", self.history, self.high_min_requests),
            );
        }
        share("promote_hr", self.promote_hr)?;
        share("demote_hr", self.demote_hr)?;
        if self.demote_hr > self.promote_hr {
            return err(
                "demote_hr",
                format!("must not exceed promote_hr ({}), got {}", self.promote_hr, self.demote_hr),
            );
        }
        if let Some(t) = self.thrash_threshold_ms {
            nonneg("thrash_threshold_ms", t)?;
        }
        if self.upper_bound == 0 {
            return err("upper_bound", "must be at least 1 block".into());
        }
        if !(self.upper_bound_share > 0.0 && self.upper_bound_share <= 1.0) {
            return err("upper_bound_share", format!("must be in (0, 1], got {}", self.upper_bound_share));
        }
        if let Some(bw) = self.bandwidth {
            if !(bw.is_finite() && bw > 0.0) {
                return err("bandwidth", format!("must be a positive number of blocks per ms, got {bw}"));
            }
        }
        nonneg("pdf_k", self.pdf_k)?;
        if !(self.pdf_c.is_finite() && self.pdf_c > 0.0) {
            return err("pdf_c", format!("must be a positive number of blocks, got {}", self.pdf_c));
        }
        nonneg("bb_share", self.bb_share)?;
        share("raised_cap", self.raised_cap)?;
        if self.raised_passes == 0 {
            return err("raised_passes", "must be at least 1 (raised_cap = 0 turns the raise off)".into());
        }
        nonneg("delay_horizon_ms", self.delay_horizon_ms)?;
        nonneg("delay_margin", self.delay_margin)?;
        share("refill", self.refill)?;
        nonneg("request_ms", self.request_ms)?;
        Ok(())
    }
}

/// Event counts of a STEP run (tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepStats {
    /// PCs created.
    pub created: u64,
    /// PCs purged.
    pub purged: u64,
    /// PCs dropped because another took their key.
    pub displaced: u64,
    /// Requests counted to a better established PC whose key their PC would have taken (that PC was
    /// dropped, or not made).
    pub yielded: u64,
    /// Requests that extended a PC.
    pub extended: u64,
    /// Prefetches decided for a thrashing PC (PM-TA).
    pub thrashing: u64,
    /// Prefetch runs issued at once.
    pub immediate: u64,
    /// Prefetch runs put in the delayed queue.
    pub delayed: u64,
    /// Delayed runs issued by their timer.
    pub fired: u64,
    /// Delayed runs issued early because their stream came back.
    pub early: u64,
}

/// The STEP prefetcher (and the PM-* schemes).
#[derive(Debug)]
pub struct Step {
    params: StepParams,
    disk: DiskView,
    sizing: Sizing,
    thresholds: Thresholds,
    purge_batch: usize,
    pcs: Contexts,
    queues: Queues,
    seeks: SeekTracker,
    clock: VirtualClock,
    dq: DelayedQueue,
    raised: Option<super::Raise>,
    purge_buf: Vec<u32>,
    stats: StepStats,
}

impl Step {
    /// STEP with `params`, checked; errors name `path.key`.
    pub fn new(path: &str, params: StepParams) -> Result<Self, ConfigError> {
        params.validate(path)?;
        let disk = DiskView::new(&format!("{path}.device"), &params.device, 4096)?;
        let sizing = Sizing {
            preset: params.preset,
            upper_bound: u64::from(params.upper_bound),
            bb_share: params.bb_share,
            thrash_threshold: params
                .thrash_threshold_ms
                .or(params.thrash_cylinders.map(|d| disk.seek_cyl_ms(d)))
                .unwrap_or(0.25 * disk.mean_seek_ms()),
            fixed_st: (params.st_source == StSource::DiskAvg).then(|| disk.mean_seek_ms()),
            bw: params.bandwidth.unwrap_or(disk.blocks_per_ms()),
            pdf: Pdf { shape: params.pdf, k: params.pdf_k, c: params.pdf_c },
            low_prefetch: params.low_prefetch,
        };
        let thresholds = Thresholds {
            high_min_len: params.high_min_len,
            high_min_requests: params.high_min_requests,
            promote_hr: params.promote_hr,
            demote_hr: params.demote_hr,
        };
        Ok(Self {
            purge_batch: params.purge_batch.unwrap_or(params.max_pcs / 8).max(1),
            clock: VirtualClock::new(params.clock, params.request_ms),
            raised: (params.raised_cap > 0.0).then_some(super::Raise { cap: 0, passes: params.raised_passes }),
            disk,
            sizing,
            thresholds,
            pcs: Contexts::default(),
            queues: Queues::default(),
            seeks: SeekTracker::default(),
            dq: DelayedQueue::default(),
            purge_buf: Vec::new(),
            stats: StepStats::default(),
            params,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &StepParams {
        &self.params
    }

    /// The contexts.
    #[must_use]
    pub fn contexts(&self) -> &Contexts {
        &self.pcs
    }

    /// The PC queues.
    #[must_use]
    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// The PC a request starting at `s` would continue.
    #[must_use]
    pub fn context_for(&self, s: u64) -> Option<&Context> {
        self.pcs.find(s, self.params.match_window).map(|id| self.pcs.get(id))
    }

    /// The length rules in force (thresholds, bandwidth, pdf).
    #[must_use]
    pub fn sizing(&self) -> &Sizing {
        &self.sizing
    }

    /// The disk model.
    #[must_use]
    pub fn disk(&self) -> &DiskView {
        &self.disk
    }

    /// Event counts.
    #[must_use]
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// The virtual time, ms.
    #[must_use]
    pub fn now_ms(&self) -> f64 {
        self.clock.now()
    }

    /// Feed the time from an engine with a clock (ms); the virtual clock stops advancing by itself.
    pub fn set_now_ms(&mut self, now: f64) {
        self.clock.set_now(now);
    }

    /// Timers in the delayed queue.
    #[must_use]
    pub fn delayed_timers(&self) -> usize {
        self.dq.len()
    }

    /// Check the contexts, their index and the queues agree (tests).
    pub fn check(&self) -> Result<(), String> {
        self.pcs.check()?;
        let on_queues = [Queue::New, Queue::Low, Queue::High].iter().map(|&q| self.queues.len(q)).sum::<usize>();
        if on_queues != self.pcs.len() {
            return Err(format!("{on_queues} PCs on the queues, {} indexed", self.pcs.len()));
        }
        for q in [Queue::New, Queue::Low, Queue::High] {
            for id in self.queues.iter(q) {
                if self.pcs.get(id).queue != q {
                    return Err(format!("PC {id} on queue {q:?} says {:?}", self.pcs.get(id).queue));
                }
            }
        }
        if self.pcs.len() > self.params.max_pcs {
            return Err(format!("{} PCs over the bound {}", self.pcs.len(), self.params.max_pcs));
        }
        Ok(())
    }

    /// Drop a PC displaced from the index by another.
    fn drop_displaced(&mut self, displaced: Option<u32>) {
        if let Some(d) = displaced {
            self.queues.unlink(d, self.pcs.get(d).queue);
            self.pcs.free(d);
            self.stats.displaced += 1;
        }
    }

    /// Purge a batch of PCs (weighted round robin over the queues).
    fn purge(&mut self) {
        self.purge_buf.clear();
        self.queues.purge(self.purge_batch, self.params.purge_weights, &mut self.purge_buf);
        for &id in &self.purge_buf {
            self.pcs.remove(id);
        }
        self.stats.purged += self.purge_buf.len() as u64;
    }

    /// The PC of request `[s, e]`: the stream it extends, or a new one; the flag is false for a request
    /// that extends nothing (a re-read of a PC's last blocks), which moves no stream.
    ///
    /// Two PCs never share a key (the block each expects next): of two that would, the better established
    /// keeps it ([`Context::outranks`]) and the request is counted to it as an access to its neighborhood.
    /// A re-read of a stream's last blocks that does not start in them makes a new PC ending where the
    /// stream ends; it must not wipe the stream's history and confidence.
    fn match_request(&mut self, ctx: &PrefetchCtx<'_>) -> (u32, bool) {
        let (s, e, n) = (ctx.req.first, ctx.req.last(), ctx.req.len);
        let now = self.clock.now();
        if let Some(id) = self.pcs.find(s, self.params.match_window) {
            let pc = self.pcs.get_mut(id);
            if e <= pc.last {
                // A re-read of the PC's last block (the `overlap` window's `s = last` with nothing past
                // it) extends no stream (step.md, edge cases): it is an access to the neighborhood, not
                // sequentiality, so no length, history or promotion. Counting it as an extension let
                // chance re-reads on a random trace promote PCs and prefetch.
                let q = pc.queue;
                self.queues.touch(id, q, q);
                return (id, false);
            }
            let (fresh, pf_hits) = prefetch_hits(ctx, pc.last, pc.pf_end);
            pc.x += e.saturating_sub(pc.last);
            pc.hit_len += u64::from(pf_hits);
            pc.last = pc.last.max(e);
            pc.pf_end = pc.pf_end.max(e);
            pc.history.push(n, fresh, pf_hits, now, self.params.history);
            let from = pc.queue;
            pc.queue = self.thresholds.after_extension(from, pc.x, pc.history.len(), pc.history.hit_ratio());
            let to = pc.queue;
            self.queues.touch(id, from, to);
            let key = self.pcs.get(id).last.saturating_add(1);
            if let Some(holder) = self.pcs.holder(key).filter(|&h| h != id) {
                if !self.pcs.get(id).outranks(self.pcs.get(holder)) {
                    self.queues.unlink(id, to);
                    self.pcs.remove(id);
                    self.stats.yielded += 1;
                    let q = self.pcs.get(holder).queue;
                    self.queues.touch(holder, q, q);
                    return (holder, false);
                }
            }
            let displaced = self.pcs.reindex(id);
            self.drop_displaced(displaced);
            self.stats.extended += 1;
            return (id, true);
        }
        let pf_hits = ctx.outcomes.iter().filter(|&&o| o == Outcome::PrefetchHit).count() as u32;
        let pc = Context::new(e, n, pf_hits, now, ctx.req.stream, self.params.history);
        if let Some(holder) = self.pcs.holder(e.saturating_add(1)) {
            if !pc.outranks(self.pcs.get(holder)) {
                let q = self.pcs.get(holder).queue;
                self.queues.touch(holder, q, q);
                self.stats.yielded += 1;
                return (holder, false);
            }
        }
        if self.pcs.len() >= self.params.max_pcs {
            self.purge();
        }
        let mut pc = pc;
        pc.hit_len = u64::from(pf_hits);
        let (id, displaced) = self.pcs.insert(pc);
        self.drop_displaced(displaced);
        self.queues.push(id, Queue::New);
        self.stats.created += 1;
        (id, true)
    }

    /// Issue a prefetch run now.
    fn issue(&mut self, ctx: &mut PrefetchCtx<'_>, first: u64, len: u32, stream: u32) {
        ctx.prefetch_run(PrefetchRun { first, len, stream, placement: Placement::Default });
    }

    /// Timers due at `now` issue their PCs' waiting prefetches.
    fn fire_due(&mut self, ctx: &mut PrefetchCtx<'_>, now: f64) {
        while let Some((at, r)) = self.dq.pop_due(now) {
            let Some(id) = self.pcs.resolve(r) else { continue };
            let pc = self.pcs.get_mut(id);
            match pc.delayed {
                Some(d) if d.fire_at == at => {
                    pc.delayed = None;
                    self.issue(ctx, d.first, d.len, d.stream);
                    self.stats.fired += 1;
                }
                _ => {}
            }
        }
    }

    /// Decide and schedule the prefetch of PC `id` after request `[.., e]`.
    fn prefetch(&mut self, ctx: &mut PrefetchCtx<'_>, id: u32, e: u64, all_hit: bool) {
        let now = self.clock.now();
        let pc = self.pcs.get(id);
        if pc.queue == Queue::New {
            return;
        }
        // Less than one request is never worth prefetching (§4.2.2, case (a)), so the blocks ahead must
        // cover the next request: the estimate, or with `cover_longest` also the longest recent one.
        let rl = pc.history.next_len();
        let need = if self.params.cover_longest { rl.max(pc.history.max_len()) } else { rl };
        let len = self.sizing.length(pc, rl, all_hit);
        if self.params.issue == IssueRule::LowWater {
            let low_water = need.max((self.params.refill * len as f64) as u64);
            if pc.buffered() >= low_water {
                return;
            }
        }
        let mut target = e.saturating_add(len);
        if let Some(m) = self.params.max_block {
            target = target.min(m);
        }
        let first = e.max(pc.pf_end).saturating_add(1);
        if target < first {
            return;
        }
        // The window rule: every request, but never a prefetch request shorter than the next request
        // (§4.2.2, case (a); [`IssueRule`], points 1 and 5). A stream with nothing ahead gets its whole
        // length (the length rules never go below `RL`, but `UB` or `max_block` may).
        if self.params.issue == IssueRule::Window && pc.buffered() > 0 && target - first + 1 < need {
            return;
        }
        if self.params.preset == StepPreset::PmTa && self.sizing.thrashing(pc) {
            self.stats.thrashing += 1;
        }
        let count = u32::try_from(target - first + 1).unwrap_or(u32::MAX);
        let next_arrival = pc.history.next_arrival();
        let stream = pc.stream;
        let pc = self.pcs.get_mut(id);
        pc.pf_end = target;
        if self.params.delayed {
            let lead = self.params.delay_margin * (self.disk.mean_seek_ms() + f64::from(count) / self.sizing.bw);
            if let Some(at) = fire_time(now, next_arrival, lead, self.params.delay_horizon_ms) {
                pc.delayed = Some(DelayedRun { first, len: count, stream, fire_at: at });
                let r = self.pcs.pc_ref(id);
                self.dq.push(at, r);
                self.stats.delayed += 1;
                return;
            }
        }
        self.issue(ctx, first, count, stream);
        self.stats.immediate += 1;
    }

    /// Advance the virtual clock by this request: its missing blocks, then the runs issued for it.
    fn advance_clock(&mut self, ctx: &PrefetchCtx<'_>, runs_from: usize) {
        let s = ctx.req.first;
        let mut run: Option<usize> = None;
        for (i, o) in ctx.outcomes.iter().enumerate() {
            match (*o == Outcome::Miss, run) {
                (true, None) => run = Some(i),
                (false, Some(from)) => {
                    self.clock.read(&self.disk, s + from as u64, (i - from) as u64);
                    run = None;
                }
                _ => {}
            }
        }
        if let Some(from) = run {
            self.clock.read(&self.disk, s + from as u64, (ctx.outcomes.len() - from) as u64);
        }
        for r in &ctx.plan.runs[runs_from..] {
            self.clock.read(&self.disk, r.first, u64::from(r.len));
        }
        self.clock.request_done();
    }
}

impl Prefetcher for Step {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if ctx.req.len == 0 {
            return;
        }
        let (s, e) = (ctx.req.first, ctx.req.last());
        let runs_from = ctx.plan.runs.len();
        if self.clock.reads_requests() {
            self.clock.at_request(ctx.req.time_ns);
        }
        let now = self.clock.now();
        if !self.dq.is_empty() {
            self.fire_due(ctx, now);
        }
        // PM-SA's "on a cache hit" (§6.1): the whole request was cached (resident or in flight).
        let all_hit = ctx.outcomes.iter().all(|&o| o != Outcome::Miss);
        let (id, extends) = self.match_request(ctx);
        self.seeks.account(&mut self.pcs, &self.disk, id, s, e, self.params.alpha);
        // A stream back before its timer takes its waiting prefetch now (what it has not read itself).
        if let Some(d) = self.pcs.get_mut(id).delayed.take() {
            let end = d.first + u64::from(d.len) - 1;
            let first = d.first.max(e.saturating_add(1));
            if end >= first {
                self.issue(ctx, first, (end - first + 1) as u32, d.stream);
            }
            self.stats.early += 1;
        }
        if extends {
            self.prefetch(ctx, id, e, all_hit);
        }
        if self.params.delayed {
            self.advance_clock(ctx, runs_from);
        }
    }

    fn metadata_bytes(&self) -> u64 {
        self.pcs.metadata_bytes() + self.dq.metadata_bytes() + (self.purge_buf.capacity() * 4) as u64
    }

    fn raise(&self) -> Option<super::Raise> {
        self.raised
    }

    fn attach(&mut self, geometry: LevelGeometry) -> super::Capabilities {
        let share = (self.params.upper_bound_share * geometry.capacity as f64).floor() as u64;
        self.sizing.upper_bound = u64::from(self.params.upper_bound).min(share).max(1);
        self.disk.set_block_bytes(geometry.block_bytes);
        if self.params.bandwidth.is_none() {
            self.sizing.bw = self.disk.blocks_per_ms();
        }
        if let Some(r) = &mut self.raised {
            r.cap = (self.params.raised_cap * geometry.capacity as f64).floor() as usize;
        }
        super::Capabilities { raises: self.raised.is_some(), ..super::Capabilities::default() }
    }
}

/// For a request extending a stream whose last block was `last` and whose prefetch address is `pf_end`:
/// the request's blocks new to the stream (beyond `last`) and how many of them were prefetched and found
/// cached or in flight (§4's prefetch hit). A resident block is a prefetch hit when this is its first use
/// ([`Outcome::PrefetchHit`]); a block in flight when the stream had prefetched it (`last < b <= pf_end`),
/// a late prefetch.
fn prefetch_hits(ctx: &PrefetchCtx<'_>, last: u64, pf_end: u64) -> (u32, u32) {
    let (mut fresh, mut hits) = (0u32, 0u32);
    for (i, &o) in ctx.outcomes.iter().enumerate() {
        let b = ctx.req.first + i as u64;
        if b <= last {
            continue;
        }
        fresh += 1;
        hits += u32::from(o == Outcome::PrefetchHit || (o == Outcome::Pending && b <= pf_end));
    }
    (fresh, hits)
}

/// Build STEP from a config entry (`{ name = "step", preset = "pm-sa", … }`).
pub fn build(path: &str, params: StepParams) -> Result<Step, ConfigError> {
    Step::new(path, params)
}
