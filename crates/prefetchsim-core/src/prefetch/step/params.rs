//! STEP's parameters: the defaults of Liang, Jiang & Zhang, "STEP: Sequentiality and Thrashing Detection
//! Based Prefetching to Improve Performance of Networked Storage Servers" (ICDCS 2007), the presets,
//! and their checks (every bad value names its field).

use serde::{Deserialize, Serialize};

use super::context::{MatchWindow, MAX_HISTORY};
use super::cost::{PdfShape, StepPreset};
use super::delayed::ClockKind;
use crate::component::ConfigError;

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
///    sequential stream; b) detection of a thrashing condition" (§4.3): the length rules (`cost`) give
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

/// STEP's disk when its `device` is not given and no timed run's disk is there to follow: the timed
/// engine's default device (DiskSim's Cheetah 9LP).
pub const DEFAULT_DISK: &str = "cheetah9lp";

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
    /// blocks of 32 streams take at most half of the cache \[ours\]. 1 leaves `upper_bound` alone in
    /// any cache of 256 blocks or more.
    pub upper_bound_share: f64,
    /// `ST` of the earning function: `intensity` (default) or `disk_avg` \[ours\].
    pub st_source: StSource,
    /// `BW`, streaming bandwidth in blocks per ms (default the disk's: its mean media rate, or its bus rate
    /// when lower) \[ours\].
    pub bandwidth: Option<f64>,
    /// Disk model for seek times and bandwidth, a disk of the device registry. Not given (default): a
    /// timed run's device when it is a disk, otherwise [`DEFAULT_DISK`] \[ours\].
    pub device: Option<String>,
    /// Shape of `P(x, y)`: `exp` (default) or `linear` (§4.3).
    pub pdf: PdfShape,
    /// `k`, weight of the past length in the pdf's scale `k x + c` (1.0) \[ours\].
    pub pdf_k: f64,
    /// `c`, the pdf's scale for a stream with no past, blocks (16) \[ours\].
    pub pdf_c: f64,
    /// PM-TA: low-confidence PCs prefetch one estimated request (true) or nothing unless thrashing
    /// (false: §4.3 names only two triggers) \[ours\]; see `cost`.
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
            device: None,
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
