//! The timed engine: discrete events in integer nanoseconds through a chain of cache levels, the links
//! between them, a Linux-like I/O scheduler and a device (`shared/docs/models/event-engine.md` §2-8,
//! `network.md` §3, `iosched.md` §3; the event loop after DiskSim 4.0's, in-flight reads and late
//! prefetches after the Butt, Gniady & Hu simulator; our own code).
//!
//! # Model
//!
//! An application request (a *job*) is served by the first level. The level answers with per-block
//! outcomes and fetches for the level below ([`AnyLevel::access`]); in timed mode it pins the blocks it
//! brings in. A fetch is itself a job: it travels over the link to the next level as a `ReadReq`
//! (`alpha`), is served there the same way, and when its last block is ready there a `ReadResp` carries
//! its blocks back (`alpha + beta * pages`); on arrival the blocks become ready ([`AnyLevel::complete`])
//! and the jobs waiting for them are woken. Under the last level, fetches become bios of at most
//! `max_sectors` for the scheduler, sync when they hold demand blocks (Linux reads a synchronous
//! read-ahead window as one READ), dispatched to the device whenever it has a free slot. A device
//! request's class (demand, prefetch, mixed) is that of the blocks its bios carry. A job completes when
//! its last block is ready; an application request's response time is that moment (or its issue plus
//! `t_l1_hit`, whichever is later) minus its issue (its scaled trace time in open loop).
//!
//! A level tags each block it pins with the fetch carrying it, so that a request that finds a block
//! pinned (in flight) waits for that fetch: a late prefetch when it was prefetched, a join otherwise;
//! no second read is issued. Under the last level the engine also keeps the reads of blocks the level
//! did not keep (no room, or evicted again within the same access): a later fetch of such a block waits
//! for the read in flight instead of reading it twice. When the last level is several caches (K servers
//! or per-client caches over one device, [`crate::level::fanout`]) it keeps every read: a server reading a block
//! another server is reading waits for that read (the scheduler holds no two overlapping requests).
//!
//! # Order of events at one instant
//!
//! Events of the same nanosecond run by class: completions first (device done, replies, DEMOTE
//! arrivals, unplug timers), then requests arriving at a level, deeper levels first, then the trace's next request; each
//! class in scheduling order. So everything a request sets off at time t that takes no time is over
//! before the next request at t is looked up, and with zero latencies everywhere the levels see exactly
//! the access sequence of the instant engine: the same hits, misses and prefetches.
//!
//! # Prefetch I/O (`engine.prefetch_io`)
//!
//! `joined` (default): a level's prefetch contiguous with a missed run joins that run's read, one I/O
//! the request waits for whole. `apart`: the last level's fetches never mix the blocks that answer the
//! request with the blocks it reads for itself (its native prefetch, PFC's readmore); the latter, every
//! fetch of the access lying outside the served request, are held at a *gate* and submitted when all of
//! the access's reads of requested blocks have arrived ("asynchronously after the fetch request is
//! fulfilled", STEP §4.2.1). Their blocks are pinned from the access on, so a request finding one waits
//! for its read. An access that reads no requested block issues its prefetch at once, as in `joined`.
//!
//! Writes are served by the caches like reads (the instant engine's convention; no write-back traffic
//! reaches the device); they block a closed-loop stream only with `sync_writes`.

use std::collections::VecDeque;

use super::bottom::Bottom;
use super::events::EventQueue;
use super::inflight::{InFlight, Job, JobKind, Slab, NIL};
use super::replay::{Reader, ReplayState};
use super::{Hierarchy, Progress, RequestSource, SourceError};
use crate::component::ConfigError;
use crate::config::{EngineConfig, PrefetchIo, Replay, TimedSettings};
use crate::device::iosched::{Bio, SchedError, SchedStats};
use crate::device::{ms_to_ns, Device, IoScheduler};
use crate::link::{Link, LinkModel, MsgKind};
use crate::metrics::{ClientTiming, DeviceReport, Histogram, RtSummary, RunResult, TimingReport};
use crate::policy::table::{block_map, BlockMap};
use crate::prefetch::Outcome;
use crate::request::{Fetch, Op, Request};

/// Progress is reported about every this many issued requests.
const TICK: u64 = 1 << 16;
/// Levels a timed run supports (event classes are a byte).
pub const MAX_LEVELS: usize = 64;
/// Event class of completions.
const DONE: u8 = 0;

/// Watches a timed run (tests: invariants on time, completions and reads). Every method defaults to
/// nothing.
pub trait TimedObserver {
    /// An event is handled at `t`.
    fn event(&mut self, _t: u64) {}
    /// Application request `index` (0-based, in issue order) is issued at `t`.
    fn issued(&mut self, _index: u64, _t: u64) {}
    /// Application request `index` completes at `t`.
    fn completed(&mut self, _index: u64, _t: u64) {}
    /// A read of `len` blocks from `first` goes to the device's scheduler at `t`.
    fn read_start(&mut self, _first: u64, _len: u32, _t: u64) {}
    /// That read is done at `t`.
    fn read_done(&mut self, _first: u64, _len: u32, _t: u64) {}
}

/// Observes nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl TimedObserver for NoObserver {}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A staged trace request is due.
    Issue(u32),
    /// The warm-up is over.
    WarmupEnd,
    /// A batch of DEMOTE blocks arrives at the level below the one that evicted them.
    DemoteArrive(u32),
    /// A fetch arrives at the level below the one that issued it.
    ReqArrive(u32),
    /// The reply to a fetch arrives at the level that issued it.
    RespArrive(u32),
    /// The device finished a scheduler request.
    DeviceDone(u32),
    /// An application request whose data is there completes (after the L1 hit time).
    AppDone(u32),
    /// The scheduler's unplug timer (generation).
    Unplug(u32),
}

/// A bio at the scheduler: blocks of one fetch.
#[derive(Clone, Copy, Debug)]
struct BioRec {
    fetch: u32,
    first: u64,
    len: u32,
    /// Scheduler chunks still at the device or queued.
    chunks: u32,
    /// Carries demand blocks (a sync bio).
    demand: bool,
    /// Carries prefetched blocks.
    prefetch: bool,
}

/// `prefetch_io = "apart"`: the prefetch reads of one access, held until its reads of requested blocks
/// have arrived.
#[derive(Debug, Default)]
struct Gate {
    /// Reads of requested blocks not yet arrived.
    remaining: u32,
    /// The access kept every block it fetched (see [`Engine::read`]).
    all_kept: bool,
    /// The held prefetch fetches.
    held: Vec<u32>,
}

#[derive(Debug)]
struct ClientHist {
    client: u32,
    reads: Histogram,
    writes: Histogram,
}

struct Engine<'a, O: TimedObserver + ?Sized> {
    h: &'a mut Hierarchy,
    rd: Reader<'a>,
    obs: &'a mut O,
    s: TimedSettings,
    n: usize,
    q: EventQueue<Ev>,
    fl: InFlight,
    replay: ReplayState,
    links: Vec<Link>,
    /// The last level is several caches over the one device: every block it reads is registered, so
    /// that another instance's read of it waits instead of overlapping it at the scheduler.
    shared_bottom: bool,
    /// The links are pure delays (`link = "none"`): delays come from these tables, counted here.
    fast_links: bool,
    req_delay_ns: u64,
    /// ReadResp delay by pages (computed on first use).
    resp_delay_ns: Vec<u64>,
    /// Messages and pages sent over fast links.
    sent: (u64, u64),
    sched: IoScheduler,
    dev: Box<dyn Device>,
    /// Sectors per block.
    spb: u64,
    /// Blocks per bio.
    bio_blocks: u32,
    max_sectors: u32,
    bios: Slab<BioRec>,
    /// DEMOTE batches on a link: (evicting level, client, blocks).
    demotions: Slab<(usize, u32, Vec<u64>)>,
    /// `prefetch_io = "apart"`.
    apart: bool,
    /// Prefetch reads held until an access's demand reads arrive.
    gates: Slab<Gate>,
    /// Per job index: the gate its arrival counts down (`NIL`: none).
    gate_of: Vec<u32>,
    blocked: VecDeque<Bio>,
    unplug_gen: u32,
    unplug_armed: Option<u64>,
    /// The scheduler's queue changed since the last [`Engine::kick`].
    dirty: bool,
    l1_hit_ns: u64,
    l2_cpu_ns: u64,
    block_size: u64,
    page_bytes: u64,
    // Scratch.
    out: Vec<Fetch>,
    new_ids: Vec<u32>,
    tags: Vec<u64>,
    ready: VecDeque<u32>,
    // Progress.
    issued: u64,
    issued_blocks: u64,
    outstanding_apps: u64,
    stop: bool,
    // Statistics.
    warmup: u64,
    t_measure: u64,
    last_app_done: u64,
    reads: Histogram,
    writes: Histogram,
    admission: Histogram,
    stall_ns: u128,
    clients: Vec<ClientHist>,
    client_idx: BlockMap<u32>,
    /// The last client seen and its index in `clients`.
    last_client: Option<(u32, usize)>,
    dev_rep: DeviceReport,
    sched_base: SchedStats,
    link_base: (u64, u64),
    /// Time integral of the scheduler's queue length since measuring began (requests x ns).
    q_area: u128,
    q_last_t: u64,
    q_last: u64,
    measuring: bool,
}

fn internal(msg: String) -> SourceError {
    format!("internal error in the timed engine (please report): {msg}").into()
}

/// Check that `h` can run timed (1 to [`MAX_LEVELS`] levels, each able to) and switch its levels to
/// timed mode, where they stay.
pub fn switch_levels(h: &mut Hierarchy) -> Result<(), ConfigError> {
    let n = h.levels.len();
    if n == 0 || n > MAX_LEVELS {
        return Err(ConfigError::new("level", format!("a timed run needs 1 to {MAX_LEVELS} levels")));
    }
    for (i, l) in h.levels.iter_mut().enumerate() {
        if !l.supports_timed() {
            return Err(ConfigError::new(format!("level[{i}]"), "this level cannot run in the timed engine"));
        }
        l.set_timed(true);
    }
    Ok(())
}

/// Replay `src` through `h` (switched by [`switch_levels`]) in simulated time over `bottom` (the links,
/// device and scheduler built for it), with the engine settings `engine` and their timed values `s`.
/// The config-level entry is [`crate::run::run_timed`].
pub fn run_on<O: TimedObserver + ?Sized>(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    engine: &EngineConfig,
    s: TimedSettings,
    bottom: Bottom,
    progress: &mut dyn Progress,
    obs: &mut O,
) -> Result<RunResult, SourceError> {
    let n = h.levels.len();
    let Bottom { link: lp, links, req_delay_ns, dev, sched, spb, bio_blocks, max_sectors, dev_report: dev_rep } =
        bottom;
    let block_size = h.block_size();
    let apart = s.prefetch_io == PrefetchIo::Apart;
    if apart && !h.levels[n - 1].set_prefetch_apart(true) {
        return Err(ConfigError::new(
            "engine.prefetch_io",
            "'apart' needs a last level that can keep its prefetch out of its demand reads; this one cannot",
        )
        .into());
    }
    let warmup = engine.warmup_requests;
    let mut e = Engine {
        rd: Reader::new(src, engine.limit),
        obs,
        replay: ReplayState::new(&s),
        n,
        q: EventQueue::new(),
        fl: InFlight::new(),
        links,
        shared_bottom: h.levels[n - 1].is_fan_out(),
        fast_links: lp.link == LinkModel::None,
        req_delay_ns,
        resp_delay_ns: Vec::new(),
        sent: (0, 0),
        sched,
        dev,
        spb,
        bio_blocks,
        max_sectors,
        bios: Slab::default(),
        demotions: Slab::default(),
        apart,
        gates: Slab::default(),
        gate_of: Vec::new(),
        blocked: VecDeque::new(),
        unplug_gen: 0,
        unplug_armed: None,
        dirty: false,
        l1_hit_ns: ms_to_ns(lp.t_l1_hit_ms),
        l2_cpu_ns: ms_to_ns(lp.t_l2_cpu_ms),
        block_size,
        page_bytes: u64::from(lp.page_bytes.max(1)),
        out: Vec::with_capacity(64),
        new_ids: Vec::with_capacity(64),
        tags: Vec::with_capacity(64),
        ready: VecDeque::with_capacity(64),
        issued: 0,
        issued_blocks: 0,
        outstanding_apps: 0,
        stop: false,
        warmup,
        t_measure: 0,
        last_app_done: 0,
        reads: Histogram::new(),
        writes: Histogram::new(),
        admission: Histogram::new(),
        stall_ns: 0,
        clients: Vec::new(),
        client_idx: block_map(16),
        last_client: None,
        dev_rep,
        sched_base: SchedStats::default(),
        link_base: (0, 0),
        q_area: 0,
        q_last_t: 0,
        q_last: 0,
        measuring: warmup == 0,
        s,
        h,
    };
    e.run(progress)?;
    Ok(e.finish())
}

impl<O: TimedObserver + ?Sized> Engine<'_, O> {
    /// Event class of a request arriving at `level` (>= 1): deeper levels first.
    #[inline]
    fn class_req(&self, level: usize) -> u8 {
        (self.n - level) as u8
    }

    /// Event class of trace arrivals: last.
    #[inline]
    fn class_arrival(&self) -> u8 {
        self.n as u8
    }

    fn flush_staged(&mut self) {
        let c = self.class_arrival();
        for i in 0..self.replay.to_schedule.len() {
            let (t, id) = self.replay.to_schedule[i];
            self.q.schedule(t, c, Ev::Issue(id));
        }
        self.replay.to_schedule.clear();
    }

    fn run(&mut self, progress: &mut dyn Progress) -> Result<(), SourceError> {
        self.replay.start(&mut self.rd)?;
        self.flush_staged();
        while let Some((now, ev)) = self.q.pop() {
            self.obs.event(now);
            match ev {
                Ev::Issue(id) => self.on_issue(id, now, progress)?,
                Ev::WarmupEnd => self.on_warmup_end(now),
                Ev::DemoteArrive(id) => {
                    let (k, client, blocks) = std::mem::take(&mut self.demotions[id]);
                    self.demotions.release(id);
                    self.h.land_demotions(k, client, &blocks);
                    self.h.log_level(k + 1, now);
                }
                Ev::ReqArrive(g) => {
                    let k = usize::from(self.fl.jobs[g].level) + 1;
                    self.serve(k, g, now)?;
                }
                Ev::RespArrive(g) => self.arrive(g, now),
                Ev::DeviceDone(id) => self.on_device_done(id, now)?,
                Ev::AppDone(j) => self.app_done(j, now)?,
                Ev::Unplug(gen) => {
                    if gen == self.unplug_gen {
                        self.unplug_armed = None;
                        self.dirty = true;
                    }
                }
            }
            self.process_ready(now)?;
            if self.dirty {
                self.kick(now)?;
            }
            if !self.replay.to_schedule.is_empty() {
                self.flush_staged();
            }
            if self.stop {
                break;
            }
            if !self.s.drain
                && self.outstanding_apps == 0
                && self.replay.pending == 0
                && self.replay.blocked.is_none()
                && self.rd.is_done()
            {
                break;
            }
        }
        Ok(())
    }

    fn on_issue(&mut self, id: u32, now: u64, progress: &mut dyn Progress) -> Result<(), SourceError> {
        if let Some(k) = self.s.max_outstanding {
            if self.outstanding_apps >= k {
                // Admission FIFO: the arrival waits for a completion; later arrivals are not read yet.
                self.replay.blocked = Some(id);
                return Ok(());
            }
        }
        self.issue_staged(id, now)?;
        if self.issued % TICK == 0 && !progress.tick(self.issued) {
            self.stop = true;
        }
        Ok(())
    }

    /// Issue staged request `id` now; in open loop, stage the next arrival.
    fn issue_staged(&mut self, id: u32, now: u64) -> Result<(), SourceError> {
        let st = self.replay.take(id);
        self.issue_app(st.req, st.key, st.t_origin, now)?;
        if self.s.replay == Replay::Open {
            self.replay.next_open(&mut self.rd, now)?;
        }
        Ok(())
    }

    fn issue_app(&mut self, req: Request, key: u32, t_staged: u64, now: u64) -> Result<(), SourceError> {
        let index = self.issued;
        self.issued += 1;
        self.issued_blocks += u64::from(req.len);
        if self.warmup > 0 && index + 1 == self.warmup {
            // After everything this request sets off at this instant, before the next arrival.
            let c = self.class_arrival();
            self.q.schedule(now, c, Ev::WarmupEnd);
        }
        let write = req.op == Op::Write;
        let blocking = !write || self.s.sync_writes;
        let open = self.s.replay == Replay::Open;
        let measured = index >= self.warmup;
        if measured && self.s.max_outstanding.is_some() {
            self.admission.record(now - t_staged);
        }
        let j = self.fl.jobs.alloc(Job {
            first: req.first,
            len: req.len,
            demand_len: req.len,
            outstanding: 0,
            waiters: NIL,
            waiters_tail: NIL,
            level: 0,
            kind: JobKind::App,
            write,
            measured,
            blocking,
            stream: req.stream,
            client: req.client,
            key,
            t_origin: if open { t_staged } else { now },
            t_start: now,
            index,
        });
        self.outstanding_apps += 1;
        self.obs.issued(index, now);
        self.serve(0, j, now)?;
        if !open && !blocking {
            self.replay.slot_free(&mut self.rd, key, now)?;
        }
        Ok(())
    }

    /// Serve job `job` (an application request at level 0, or a fetch of level `k - 1`) at level `k`:
    /// look its blocks up, attach it to the reads it must wait for, and forward the new fetches.
    fn serve(&mut self, k: usize, job: u32, now: u64) -> Result<(), SourceError> {
        let j = self.fl.jobs[job];
        let req = Request {
            time_ns: now,
            first: j.first,
            len: j.len,
            op: if j.write { Op::Write } else { Op::Read },
            stream: j.stream,
            client: j.client,
        };
        self.out.clear();
        self.h.levels[k].access(&req, j.demand_len, &mut self.out);
        self.h.log_level(k, now);
        self.new_ids.clear();
        let mut fetched = 0u64;
        for f in &self.out {
            let g = self.fl.jobs.alloc(Job::fetch(k, f.first, f.len, f.demand_len, f.stream, f.client, now));
            self.new_ids.push(g);
            fetched += u64::from(f.len);
        }
        // Nothing is inserted without a fetch: an access with none has nothing to pin.
        let kept = if self.new_ids.is_empty() { 0 } else { self.h.levels[k].set_fetch_tags(&self.new_ids) };
        // DEMOTE: the blocks this access evicted go down the link as one message and land at the level
        // below when it arrives (a completion: with zero latency, before any other access).
        let demoted = self.h.take_demotions(k);
        if !demoted.is_empty() {
            let pages = (demoted.len() as u64 * self.block_size).div_ceil(self.page_bytes);
            let t = self.send(k, MsgKind::Demote, u32::try_from(pages).unwrap_or(u32::MAX), now);
            let id = self.demotions.alloc((k, j.client, demoted));
            self.q.schedule(t, DONE, Ev::DemoteArrive(id));
        }
        let bottom = k + 1 == self.n;
        // Attach the job to the reads it waits for: its missing blocks are in this access's fetches (in
        // block order), its pending blocks in older fetches the level names.
        let level = &self.h.levels[k];
        let outcomes = level.last_outcomes();
        let pending = level.pending_tags();
        if outcomes.len() != j.len as usize {
            return Err(internal(format!("level {k} gave {} outcomes for {} blocks", outcomes.len(), j.len)));
        }
        let mut waiting = 0u32;
        let (mut cur, mut cnt) = (NIL, 0u32);
        let (mut c, mut p) = (0usize, 0usize);
        let mut kick_sync = false;
        for (i, &o) in outcomes.iter().enumerate() {
            let b = j.first + i as u64;
            let g = match o {
                Outcome::Hit | Outcome::PrefetchHit => continue,
                Outcome::Miss => {
                    // The missing blocks are in the first fetches, in ascending order.
                    while c < self.out.len() && b >= self.out[c].first + u64::from(self.out[c].len) {
                        c += 1;
                    }
                    match (self.out.get(c), self.new_ids.get(c)) {
                        (Some(f), Some(&g)) if f.first <= b => g,
                        _ => return Err(internal(format!("level {k} missed block {b} without fetching it"))),
                    }
                }
                Outcome::Pending => {
                    kick_sync |= bottom && (i as u32) < j.demand_len;
                    p += 1;
                    match pending.get(p - 1) {
                        Some(&g) if g != NIL => g,
                        _ => return Err(internal(format!("block {b} pinned at level {k} but not in flight"))),
                    }
                }
            };
            waiting += 1;
            if g == cur {
                cnt += 1;
            } else {
                if cur != NIL {
                    self.fl.add_waiter(cur, job, cnt);
                }
                cur = g;
                cnt = 1;
            }
        }
        if cur != NIL {
            self.fl.add_waiter(cur, job, cnt);
        }
        self.fl.jobs[job].outstanding = waiting;
        if kick_sync {
            // A task now waits on queued work: Linux kicks a plugged queue at once (iosched.md §3).
            self.sched.unplug_sync();
        }
        if bottom {
            let all_kept = kept == fetched;
            if self.apart {
                self.read_apart(j.first, j.len, all_kept, now)?;
            } else {
                for i in 0..self.new_ids.len() {
                    let g = self.new_ids[i];
                    self.read(g, all_kept, false, now)?;
                }
            }
        } else {
            for i in 0..self.new_ids.len() {
                let g = self.new_ids[i];
                let t = self.send(k, MsgKind::ReadReq, 0, now) + self.l2_cpu_ns;
                let c = self.class_req(k + 1);
                self.q.schedule(t, c, Ev::ReqArrive(g));
            }
        }
        if waiting == 0 {
            self.ready.push_back(job);
        }
        Ok(())
    }

    /// `prefetch_io = "apart"`: read this access's fetches (`new_ids`) of the requested blocks `first ..
    /// first + len` now and hold the others (prefetch) at a gate until those reads have arrived.
    fn read_apart(&mut self, first: u64, len: u32, all_kept: bool, now: u64) -> Result<(), SourceError> {
        let end = first + u64::from(len);
        let answers = |f: &Job| f.first < end && f.first + u64::from(f.len) > first;
        let demand = self.new_ids.iter().filter(|&&g| answers(&self.fl.jobs[g])).count() as u32;
        let held = self.new_ids.len() as u32 - demand;
        let gate = if demand > 0 && held > 0 {
            self.gates.alloc(Gate { remaining: demand, all_kept, held: Vec::with_capacity(held as usize) })
        } else {
            NIL
        };
        for i in 0..self.new_ids.len() {
            let g = self.new_ids[i];
            if gate == NIL {
                self.read(g, all_kept, false, now)?;
            } else if answers(&self.fl.jobs[g]) {
                if self.gate_of.len() <= g as usize {
                    self.gate_of.resize(g as usize + 1, NIL);
                }
                self.gate_of[g as usize] = gate;
                self.read(g, all_kept, false, now)?;
            } else {
                self.gates[gate].held.push(g);
            }
        }
        Ok(())
    }

    /// A read of requested blocks (`g`) arrived: when it was its access's last, submit the held prefetch.
    fn pass_gate(&mut self, g: u32, now: u64) -> Result<(), SourceError> {
        let Some(gate) = self.gate_of.get_mut(g as usize).map(|x| std::mem::replace(x, NIL)) else {
            return Ok(());
        };
        if gate == NIL {
            return Ok(());
        }
        let gt = &mut self.gates[gate];
        gt.remaining -= 1;
        if gt.remaining > 0 {
            return Ok(());
        }
        let held = std::mem::take(&mut gt.held);
        let all_kept = gt.all_kept;
        self.gates.release(gate);
        for &p in &held {
            self.read(p, all_kept, true, now)?;
        }
        Ok(())
    }

    /// Read fetch `g` of the last level from the device. `all_kept`: the level kept (pinned) every
    /// block of this access's fetches. A block already being read by an orphan read is waited for, not
    /// read again; a block of `g` the level did not keep becomes an orphan read itself.
    ///
    /// `held`: a prefetch read that waited at its gate (`prefetch_io = "apart"`). It reads only the blocks
    /// nobody else brings: a block another read carries (the level had not kept it and fetched it again
    /// while this read waited) is skipped, not waited for, since only the blocks pinned under `g` (or read
    /// by it as orphans) have waiters on `g`; waiting could tie two held reads in a cycle.
    fn read(&mut self, g: u32, all_kept: bool, held: bool, now: u64) -> Result<(), SourceError> {
        let f = self.fl.jobs[g];
        let end = f.first + u64::from(f.len);
        let cap = self.dev.capacity();
        if end.checked_mul(self.spb).is_none_or(|e| e > cap) {
            return Err(ConfigError::new(
                "device",
                format!(
                    "block {} ({} sectors of 512 B each) lies past the end of device '{}' ({cap} sectors); \
                     choose a larger device or a trace that fits",
                    end - 1,
                    self.spb,
                    self.dev.name()
                ),
            )
            .into());
        }
        if all_kept && self.fl.orphans.is_empty() && !self.shared_bottom {
            // (A held read with `all_kept`: its blocks stayed pinned under it, nobody read them since.)
            // The usual case: nothing to deduplicate.
            let n = self.submit_run(g, f.first, end, f.demand_len, now)?;
            self.fl.jobs[g].outstanding = n;
            return Ok(());
        }
        let k = self.n - 1;
        let mut outstanding = 0u32;
        let mut run: Option<u64> = None;
        let (mut cur, mut cnt) = (NIL, 0u32);
        for b in f.first..=end {
            // NIL: end of the fetch; Some(o): being read by orphan read o; None: read it.
            let old = if b == end {
                Some(NIL)
            } else if let Some(&o) = self.fl.orphans.get(&b) {
                // A held read skips a block another read brings: nobody waits on it for that block.
                Some(if held { NIL } else { o })
            } else if held && !self.shared_bottom && self.h.levels[k].pinned_tag(b).is_some_and(|h| h != g) {
                // Prefetch apart: while this read waited at its gate, the level (which had not kept the
                // block) fetched it again in another read, which the block's waiters wait for.
                Some(NIL)
            } else {
                if self.shared_bottom || (!all_kept && self.h.levels[k].pinned_tag(b) != Some(g)) {
                    self.fl.orphans.insert(b, g);
                }
                None
            };
            match old {
                None => {
                    run.get_or_insert(b);
                }
                Some(o) => {
                    if let Some(a) = run.take() {
                        outstanding += self.submit_run(g, a, b, f.demand_len, now)?;
                    }
                    if o == NIL {
                        continue;
                    }
                    outstanding += 1;
                    if o == cur {
                        cnt += 1;
                    } else {
                        if cur != NIL {
                            self.fl.add_waiter(cur, g, cnt);
                        }
                        cur = o;
                        cnt = 1;
                    }
                }
            }
        }
        if cur != NIL {
            self.fl.add_waiter(cur, g, cnt);
        }
        self.fl.jobs[g].outstanding = outstanding;
        if outstanding == 0 {
            if held {
                // Every block is brought by other reads: done at once.
                self.ready.push_back(g);
                return Ok(());
            }
            return Err(internal(format!("fetch of {} blocks at {} with nothing to wait for", f.len, f.first)));
        }
        Ok(())
    }

    /// Submit blocks `a .. e` of fetch `g` (whose first `demand_len` blocks from `g.first` are demand) as
    /// bios of at most `max_sectors`; returns the scheduler chunks to wait for.
    fn submit_run(&mut self, g: u32, a: u64, e: u64, demand_len: u32, now: u64) -> Result<u32, SourceError> {
        let demand_end = self.fl.jobs[g].first + u64::from(demand_len);
        let mut chunks = 0u32;
        let mut x = a;
        while x < e {
            // One bio per `max_sectors`; a bio holding demand blocks is sync (Linux reads a synchronous
            // read-ahead window as one READ), and the request's class comes from the bios' blocks.
            let y = e.min(x + u64::from(self.bio_blocks));
            let len = (y - x) as u32;
            let sectors = u64::from(len) * self.spb;
            let sectors = u32::try_from(sectors).map_err(|_| internal("bio too large".into()))?;
            let n_chunks = sectors.div_ceil(self.max_sectors);
            let (demand, prefetch) = (x < demand_end, y > demand_end);
            let id = self.bios.alloc(BioRec { fetch: g, first: x, len, chunks: n_chunks, demand, prefetch });
            let bio = Bio { lbn: x * self.spb, sectors, write: false, sync: demand, tag: u64::from(id) };
            self.obs.read_start(x, len, now);
            if self.measuring {
                self.dev_rep.bios += 1;
            }
            self.dirty = true;
            if !self.blocked.is_empty() {
                self.blocked.push_back(bio);
            } else {
                match self.sched.submit(bio, now) {
                    Ok(_) => {}
                    Err(SchedError::Full) => self.blocked.push_back(bio),
                    Err(err) => return Err(internal(format!("scheduler refused a bio: {err}"))),
                }
            }
            chunks += n_chunks;
            x = y;
        }
        Ok(chunks)
    }

    /// Send a message over link `k` at `now`; returns its arrival time. Pure-delay links use cached
    /// delays, computed as [`Link::send`] computes them.
    #[inline]
    fn send(&mut self, k: usize, kind: MsgKind, pages: u32, now: u64) -> u64 {
        if !self.fast_links {
            return self.links[k].send(kind, pages, now);
        }
        self.sent.0 += 1;
        self.sent.1 += u64::from(pages);
        let d = match kind {
            MsgKind::ReadReq if pages == 0 => self.req_delay_ns,
            MsgKind::ReadResp if (pages as usize) < 4096 => {
                let p = pages as usize;
                if self.resp_delay_ns.len() <= p {
                    let l = &self.links[k];
                    let from = self.resp_delay_ns.len();
                    self.resp_delay_ns.extend((from..=p).map(|q| ms_to_ns(l.delay_ms(MsgKind::ReadResp, q as u32))));
                }
                self.resp_delay_ns[p]
            }
            _ => ms_to_ns(self.links[k].delay_ms(kind, pages)),
        };
        now + d
    }

    /// Jobs whose last awaited block is ready: finish them.
    fn process_ready(&mut self, now: u64) -> Result<(), SourceError> {
        while let Some(j) = self.ready.pop_front() {
            let job = self.fl.jobs[j];
            match job.kind {
                JobKind::App => {
                    let done = now.max(job.t_start + self.l1_hit_ns);
                    if done > now {
                        self.q.schedule(done, DONE, Ev::AppDone(j));
                    } else {
                        self.app_done(j, now)?;
                    }
                }
                JobKind::Fetch => {
                    let k = usize::from(job.level);
                    if k + 1 == self.n {
                        // Read from the device: the data is at the level now.
                        self.arrive(j, now);
                        if self.apart {
                            self.pass_gate(j, now)?;
                        }
                    } else {
                        let pages = (u64::from(job.len) * self.block_size).div_ceil(self.page_bytes);
                        let pages = u32::try_from(pages).unwrap_or(u32::MAX);
                        let t = self.send(k, MsgKind::ReadResp, pages, now);
                        self.q.schedule(t, DONE, Ev::RespArrive(j));
                    }
                }
            }
        }
        Ok(())
    }

    /// The blocks of fetch `g` arrive at its level: make them ready and wake its waiters.
    fn arrive(&mut self, g: u32, now: u64) {
        let f = self.fl.jobs[g];
        let k = usize::from(f.level);
        self.h.levels[k].complete(f.first, f.len, g);
        self.h.log_level(k, now);
        if k + 1 == self.n && !self.fl.orphans.is_empty() {
            let orphans = &mut self.fl.orphans;
            for b in f.first..f.first + u64::from(f.len) {
                if let hashbrown::hash_map::Entry::Occupied(o) = orphans.entry(b) {
                    if *o.get() == g {
                        o.remove();
                    }
                }
            }
        }
        while let Some((w, c)) = self.fl.pop_waiter(g) {
            let job = &mut self.fl.jobs[w];
            job.outstanding -= c;
            if job.outstanding == 0 {
                self.ready.push_back(w);
            }
        }
        self.fl.jobs.release(g);
    }

    fn app_done(&mut self, j: u32, now: u64) -> Result<(), SourceError> {
        let job = self.fl.jobs[j];
        self.fl.jobs.release(j);
        self.outstanding_apps -= 1;
        self.last_app_done = self.last_app_done.max(now);
        self.obs.completed(job.index, now);
        if job.measured {
            let rt = now - job.t_origin;
            let ci = match self.last_client {
                Some((c, i)) if c == job.client => i,
                _ => {
                    let i = match self.client_idx.get(&u64::from(job.client)) {
                        Some(&i) => i as usize,
                        None => {
                            self.client_idx.insert(u64::from(job.client), self.clients.len() as u32);
                            self.clients.push(ClientHist {
                                client: job.client,
                                reads: Histogram::new(),
                                writes: Histogram::new(),
                            });
                            self.clients.len() - 1
                        }
                    };
                    self.last_client = Some((job.client, i));
                    i
                }
            };
            // Per client only; the totals are their sum (finish).
            if job.write {
                self.clients[ci].writes.record(rt);
            } else {
                self.clients[ci].reads.record(rt);
                self.stall_ns += u128::from(rt);
            }
        }
        match self.s.replay {
            Replay::Closed => {
                if job.blocking {
                    self.replay.slot_free(&mut self.rd, job.key, now)?;
                }
            }
            Replay::Open => {
                if let Some(id) = self.replay.blocked.take() {
                    self.issue_staged(id, now)?;
                }
            }
        }
        Ok(())
    }

    fn on_device_done(&mut self, id: u32, now: u64) -> Result<(), SourceError> {
        self.tags.clear();
        self.tags.extend_from_slice(self.sched.tags(id));
        self.sched.complete(id).map_err(|e| internal(e.to_string()))?;
        self.dirty = true;
        for i in 0..self.tags.len() {
            let b = self.tags[i] as u32;
            let rec = &mut self.bios[b];
            rec.chunks -= 1;
            let rec = *rec;
            if rec.chunks == 0 {
                self.obs.read_done(rec.first, rec.len, now);
                self.bios.release(b);
            }
            let job = &mut self.fl.jobs[rec.fetch];
            job.outstanding -= 1;
            if job.outstanding == 0 {
                self.ready.push_back(rec.fetch);
            }
        }
        while let Some(&bio) = self.blocked.front() {
            match self.sched.submit(bio, now) {
                Ok(_) => {
                    self.blocked.pop_front();
                }
                Err(SchedError::Full) => break,
                Err(err) => return Err(internal(format!("scheduler refused a bio: {err}"))),
            }
        }
        Ok(())
    }

    /// Dispatch to the device while it has room; arm the unplug timer; account the queue.
    fn kick(&mut self, now: u64) -> Result<(), SourceError> {
        self.dirty = false;
        while let Some(d) = self.sched.dispatch(now) {
            let s = self.dev.start(&d.io, now).map_err(|e| ConfigError::new("device", e.to_string()))?;
            if self.measuring {
                // The class by the blocks the request carries (demand, prefetched or both).
                let (mut dem, mut pf) = (false, false);
                for &t in self.sched.tags(d.id) {
                    let b = &self.bios[t as u32];
                    dem |= b.demand;
                    pf |= b.prefetch;
                }
                let r = &mut self.dev_rep;
                let sectors = u64::from(d.io.sectors);
                match (dem, pf) {
                    (true, false) => {
                        r.requests_demand += 1;
                        r.sectors_demand += sectors;
                    }
                    (false, true) => {
                        r.requests_prefetch += 1;
                        r.sectors_prefetch += sectors;
                    }
                    _ => {
                        r.requests_mixed += 1;
                        r.sectors_mixed += sectors;
                    }
                }
                r.service_ns += s.done - s.start;
            }
            self.q.schedule(s.done, DONE, Ev::DeviceDone(d.id));
        }
        // A plugged queue wants a dispatch attempt at its unplug time. When that time has come and the
        // queue is still plugged, the device is busy and its completion will dispatch (and unplug).
        if let Some(w) = self.sched.next_wakeup().filter(|&w| w > now) {
            if self.unplug_armed != Some(w) {
                self.unplug_gen = self.unplug_gen.wrapping_add(1);
                self.unplug_armed = Some(w);
                self.q.schedule(w.max(now), DONE, Ev::Unplug(self.unplug_gen));
            }
        }
        if self.measuring {
            let q = self.sched.queued() as u64;
            self.q_area += u128::from(self.q_last) * u128::from(now - self.q_last_t);
            self.q_last_t = now;
            self.q_last = q;
            self.dev_rep.queue_max = self.dev_rep.queue_max.max(q);
        }
        Ok(())
    }

    fn on_warmup_end(&mut self, now: u64) {
        for l in &mut self.h.levels {
            l.reset_counters();
        }
        self.h.log_counters_reset(now);
        self.measuring = true;
        self.t_measure = now;
        self.sched_base = self.sched.stats().clone();
        let r = &mut self.dev_rep;
        *r = DeviceReport {
            name: std::mem::take(&mut r.name),
            queue_depth: r.queue_depth,
            block_sectors: r.block_sectors,
            ..DeviceReport::default()
        };
        self.link_base = self.link_totals();
        self.q_area = 0;
        self.q_last_t = now;
        self.q_last = self.sched.queued() as u64;
    }

    fn link_totals(&self) -> (u64, u64) {
        self.links.iter().fold(self.sent, |(m, p), l| (m + l.stats().messages, p + l.stats().pages))
    }

    fn finish(mut self) -> RunResult {
        for l in &mut self.h.levels {
            l.finish();
        }
        let end = self.q.now();
        let st = self.sched.stats();
        let base = &self.sched_base;
        let mut dev = std::mem::take(&mut self.dev_rep);
        dev.merges =
            (st.back_merges + st.front_merges + st.fused) - (base.back_merges + base.front_merges + base.fused);
        dev.expired = st.expired - base.expired;
        dev.queue_wait_ns = st.queue_wait_ns - base.queue_wait_ns;
        let span = end.saturating_sub(self.t_measure);
        if self.measuring {
            self.q_area += u128::from(self.q_last) * u128::from(end - self.q_last_t);
        }
        dev.queue_mean = if span == 0 { 0.0 } else { self.q_area as f64 / span as f64 };
        let (m, p) = self.link_totals();
        let mut clients: Vec<ClientTiming> = self
            .clients
            .iter()
            .map(|c| ClientTiming {
                client: c.client,
                reads: RtSummary::of(&c.reads),
                writes: RtSummary::of(&c.writes),
            })
            .collect();
        clients.sort_by_key(|c| c.client);
        for c in &self.clients {
            self.reads.merge(&c.reads);
            self.writes.merge(&c.writes);
        }
        let timing = TimingReport {
            replay: match self.s.replay {
                Replay::Open => "open".into(),
                Replay::Closed => "closed".into(),
            },
            start_ns: self.t_measure,
            end_ns: end,
            makespan_ns: self.last_app_done.saturating_sub(self.t_measure),
            reads: RtSummary::of(&self.reads),
            writes: RtSummary::of(&self.writes),
            rt_histogram: std::mem::take(&mut self.reads),
            clients,
            device: dev,
            net_messages: m - self.link_base.0,
            net_pages: p - self.link_base.1,
            stall_ns: self.stall_ns,
            admission_wait: RtSummary::of(&self.admission),
            requests_incomplete: self.outstanding_apps,
        };
        RunResult {
            requests: self.issued,
            blocks: self.issued_blocks,
            warmup_requests: self.warmup.min(self.issued),
            stopped_early: self.stop || self.rd.limited,
            levels: self.h.reports(),
            timing: Some(timing),
        }
    }
}
