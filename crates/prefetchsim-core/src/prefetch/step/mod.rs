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
pub mod key_index;
pub mod params;
pub mod queues;
pub mod thrash;

use self::context::{Context, Contexts, DelayedRun, MatchWindow, Queue};
pub use self::cost::StepPreset;
use self::cost::{Pdf, Sizing};
use self::delayed::{fire_time, DelayedQueue, VirtualClock};
use self::disk::DiskView;
pub use self::params::{IssueRule, StSource, StepParams, DEFAULT_DISK};
use self::queues::{Queues, Thresholds};
use self::thrash::SeekTracker;
use super::{LevelGeometry, Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::ConfigError;
use crate::policy::Placement;

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
    /// The highest block a request reached, for the note on addresses past the disk's end.
    highest: Option<u64>,
    /// The timed run's device when it has no seek curve (STEP kept [`DEFAULT_DISK`]), for a note.
    not_a_disk: Option<&'static str>,
}

impl Step {
    /// STEP with `params`, checked; errors name `path.key`.
    pub fn new(path: &str, params: StepParams) -> Result<Self, ConfigError> {
        params.validate(path)?;
        let disk = DiskView::new(&format!("{path}.device"), params.device.as_deref().unwrap_or(DEFAULT_DISK), 4096)?;
        let mut sizing = Sizing {
            preset: params.preset,
            upper_bound: u64::from(params.upper_bound),
            bb_share: params.bb_share,
            thrash_threshold: 0.0,
            fixed_st: None,
            bw: 0.0,
            pdf: Pdf { shape: params.pdf, k: params.pdf_k, c: params.pdf_c },
            low_prefetch: params.low_prefetch,
        };
        sizing.set_disk(&params, &disk);
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
            pcs: Contexts::new(params.match_window == MatchWindow::Prefetched),
            queues: Queues::default(),
            seeks: SeekTracker::default(),
            dq: DelayedQueue::default(),
            purge_buf: Vec::new(),
            stats: StepStats::default(),
            highest: None,
            not_a_disk: None,
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
        self.highest = self.highest.max(Some(crate::request::device_block(e)));
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

    /// A trace reaching past STEP's disk model had the seek costs of folded addresses (disk.rs): said, so
    /// that no run passes it silently.
    fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(device) = self.not_a_disk {
            v.push(format!(
                "the timed run's device '{device}' has no seek curve: STEP took its seek costs and bandwidth from \
                 '{}' (give STEP a `device` to choose another disk model)",
                self.disk.name()
            ));
        }
        let blocks = self.disk.blocks();
        if let Some(h) = self.highest.filter(|&h| h >= blocks) {
            v.push(format!(
                "STEP's disk model '{}' holds {blocks} blocks of {} bytes and the trace reached block {h}: the seek \
                 costs of addresses past its end were those of addresses folded onto it (give STEP a `device` \
                 large enough for the trace, such as 'hdd7200')",
                self.disk.name(),
                self.disk.block_bytes()
            ));
        }
        v
    }

    /// STEP's seek costs are the simulated disk's (§4.1.2: "the disk's parameters"): without a `device`
    /// of its own, STEP takes a timed run's device when it is a disk (a device of another kind has no
    /// seek curve; STEP keeps [`DEFAULT_DISK`]).
    fn use_device(&mut self, device: &crate::device::DeviceBelow) {
        if self.params.device.is_some() {
            return;
        }
        match DiskView::from_spec("device", &device.spec, self.disk.block_bytes()) {
            Ok(disk) => {
                self.disk = disk;
                self.sizing.set_disk(&self.params, &self.disk);
            }
            // The spec built the run's device, so only a kind without a seek curve is refused here.
            Err(_) => self.not_a_disk = crate::device::resolve("device", &device.spec).ok().map(|(name, _)| name),
        }
    }

    fn raise(&self) -> Option<super::Raise> {
        self.raised
    }

    fn attach(&mut self, geometry: LevelGeometry) -> super::Capabilities {
        let share = (self.params.upper_bound_share * geometry.capacity as f64).floor() as u64;
        self.sizing.upper_bound = u64::from(self.params.upper_bound).min(share).max(1);
        self.disk.set_block_bytes(geometry.block_bytes);
        self.sizing.set_disk(&self.params, &self.disk);
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

impl super::NamedPrefetcher for Step {
    const NAME: &'static str = "step";
    const SUMMARY: &'static str = "STEP, sequentiality and thrashing detection (Liang, Jiang & Zhang, ICDCS'07): presets pm-ta, pm-con, pm-bb, pm-sa";
    type Params = StepParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        Ok(Box::new(Step::new(path, params)?))
    }
}
