//! The timed engine: discrete events in integer nanoseconds through a chain of cache levels, the links
//! between them, a Linux-like I/O scheduler and a device (`shared/docs/models/event-engine.md` §2-8,
//! `network.md` §3, `iosched.md` §3; the event loop after DiskSim 4.0's, in-flight reads and late
//! prefetches after the Butt, Gniady & Hu simulator; our own code).
//!
//! # Model
//!
//! An application request (a *job*) is served by the first level. The level answers with per-block
//! outcomes and fetches for the level below ([`crate::level::CacheLevel::access`]); in timed mode it pins the blocks it
//! brings in. A fetch is itself a job: it travels over the link to the next level as a `ReadReq`
//! (`alpha`), is served there the same way, and when its last block is ready there a `ReadResp` carries
//! its blocks back (`alpha + beta * pages`); on arrival the blocks become ready ([`crate::level::Pinning::complete`])
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
//! arrivals, unplug timers), then requests arriving at a level, deeper levels first, then the trace's next
//! request (an arrival admitted when a completion frees its slot too); each
//! class in scheduling order. DEMOTE blocks the upper level evicted while reading them (sent when that
//! read arrives) land with the requests arriving at their level, after those scheduled before them. So everything a request sets off at time t that takes no time is over
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
//!
//! # Files
//!
//! This file is the event loop and the issue of application requests; `serve.rs` serves a job at a
//! level and wakes its waiters, `bottom.rs` reads from the device through the scheduler, `net.rs` sends
//! messages over the links (fetches, replies, DEMOTE batches), `stats.rs` keeps the statistics and
//! builds the report.

use std::collections::VecDeque;

mod bottom;
mod net;
mod serve;
mod stats;

use super::bottom::Bottom;
use super::events::EventQueue;
use super::inflight::{InFlight, Job, JobKind, NIL};
use super::replay::{Reader, ReplayState, RunTotals};
use super::{Hierarchy, Progress, RequestSource, SourceError};
use crate::component::ConfigError;
use crate::config::{EngineConfig, PrefetchIo, Replay, TimedSettings};
use crate::device::{ms_to_ns, DeviceBelow, CLOCK_LIMIT_NS};
use crate::link::LinkModel;
use crate::metrics::RunResult;
use crate::request::{Fetch, Op, Request};
use bottom::Io;
use net::Net;
use stats::Stats;

/// The error of a run whose clock reached [`CLOCK_LIMIT_NS`]: a time beyond it comes from a link, device,
/// think or trace time far too large (or cut to [`crate::device::MAX_DURATION_NS`]), and going on could
/// wrap 64 bits and give nonsense response times instead of an error.
fn clock_overflow(now: u64) -> ConfigError {
    ConfigError::new(
        "engine",
        format!(
            "simulated time reached {:.3e} ns, past the 2^61 ns (73 years) a run may last: a link (alpha_ms, \
             beta_ms_per_page, gap_ms, t_l1_hit_ms, t_l2_cpu_ms), device, think or trace time is far too large",
            now as f64
        ),
    )
}

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
    /// A request is dispatched to the device at `dispatched`, which serves it from `start` to `done`.
    fn device_io(&mut self, _dispatched: u64, _start: u64, _done: u64) {}
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
    /// The first measured request arrives while an earlier one waits for admission: the window opens.
    WindowStart,
    /// Read ahead again for the first measured request's arrival ([`Engine::look_ahead`]).
    LookAhead,
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

struct Engine<'a, O: TimedObserver + ?Sized> {
    h: &'a mut Hierarchy,
    rd: Reader<'a>,
    obs: &'a mut O,
    s: TimedSettings,
    n: usize,
    q: EventQueue<Ev>,
    fl: InFlight,
    replay: ReplayState,
    /// The links between levels and the messages on them.
    net: Net,
    /// The last level is several caches over the one device: every block it reads is registered, so
    /// that another instance's read of it waits instead of overlapping it at the scheduler.
    shared_bottom: bool,
    /// The scheduler and the device under the last level.
    io: Io,
    /// `prefetch_io = "apart"`.
    apart: bool,
    l1_hit_ns: u64,
    // Scratch.
    out: Vec<Fetch>,
    new_ids: Vec<u32>,
    tags: Vec<u64>,
    ready: VecDeque<u32>,
    /// DEMOTE: (fetch index in `out`, block) of the blocks an access evicted while reading them.
    held_scratch: Vec<(usize, u64)>,
    // Progress.
    totals: RunTotals,
    outstanding_apps: u64,
    stop: bool,
    stats: Stats,
    ahead: Ahead,
}

/// Open loop with a warm-up and admission: how far the trace was read ahead for the first measured
/// request's arrival ([`Engine::look_ahead`]).
#[derive(Debug, Default)]
struct Ahead {
    /// The next request to look at (index in the trace) and the arrival of the one before it, when
    /// that request has not been handed out yet.
    next: u64,
    arrival: u64,
    /// A `LookAhead` event is due then.
    armed: Option<u64>,
    /// The window's opening is scheduled (or the trace ends before it).
    done: bool,
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
    let Bottom {
        link: lp,
        links,
        req_delay_ns,
        dev,
        dev_spec,
        sched,
        spb,
        bio_blocks,
        max_sectors,
        dev_report: dev_rep,
    } = bottom;
    let block_size = h.block_size();
    // A prefetch run stops at the device's end; a demand block past it stays the trace's error.
    let below = DeviceBelow { blocks: dev.capacity() / spb.max(1), spec: dev_spec };
    for l in &mut h.levels {
        l.set_device(&below);
    }
    let apart = s.prefetch_io == PrefetchIo::Apart;
    if apart && !h.levels[n - 1].set_prefetch_apart(true) {
        return Err(ConfigError::new(
            "engine.prefetch_io",
            "'apart' needs a last level that can keep its prefetch out of its demand reads; this one cannot",
        )
        .into());
    }
    let warmup = engine.warmup_requests;
    let net = Net::new(links, lp.link == LinkModel::None, req_delay_ns, &lp, block_size);
    let mut e = Engine {
        rd: Reader::new(src, engine.limit),
        obs,
        replay: ReplayState::new(&s),
        n,
        q: EventQueue::new(),
        fl: InFlight::new(),
        net,
        shared_bottom: h.levels[n - 1].is_fan_out(),
        io: Io::new(sched, dev, spb, bio_blocks, max_sectors),
        apart,
        l1_hit_ns: ms_to_ns(lp.t_l1_hit_ms),
        out: Vec::with_capacity(64),
        new_ids: Vec::with_capacity(64),
        tags: Vec::with_capacity(64),
        ready: VecDeque::with_capacity(64),
        held_scratch: Vec::new(),
        totals: RunTotals::default(),
        outstanding_apps: 0,
        stop: false,
        stats: Stats::new(warmup, dev_rep),
        ahead: Ahead::default(),
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
        loop {
            // An unplug timer whose plug is gone (an unplug came first) is deleted, as Linux deletes it:
            // it would only have made the run last until it and diluted the device's utilisation.
            let io = &self.io;
            self.q.drop_cancelled(|t, ev| matches!(*ev, Ev::Unplug(gen) if !io.unplug_timer_live(gen, t)));
            let Some((now, ev)) = self.q.pop() else {
                break;
            };
            if now >= CLOCK_LIMIT_NS {
                return Err(clock_overflow(now).into());
            }
            self.obs.event(now);
            self.note_instant(now);
            match ev {
                Ev::Issue(id) => self.on_issue(id, now, progress)?,
                Ev::WarmupEnd => self.on_warmup_end(now),
                Ev::WindowStart => {
                    if !self.stats.measuring {
                        self.start_window(now);
                    }
                }
                Ev::LookAhead => {
                    self.ahead.armed = None;
                    if self.replay.blocked.is_some() {
                        self.look_ahead(now)?;
                    }
                }
                Ev::DemoteArrive(id) => self.land_demotions(id, now),
                Ev::ReqArrive(g) => {
                    let k = usize::from(self.fl.jobs[g].level) + 1;
                    self.serve(k, g, now)?;
                }
                Ev::RespArrive(g) => self.arrive(g, now),
                Ev::DeviceDone(id) => self.on_device_done(id, now)?,
                Ev::AppDone(j) => self.app_done(j, now)?,
                Ev::Unplug(_) => {
                    // Live (the stale ones were dropped): the plug's delay is over.
                    self.io.unplug_armed = None;
                    self.io.dirty = true;
                }
            }
            self.process_ready(now)?;
            if self.io.dirty {
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
        // Requests are issued in index order (one open-loop arrival is staged at a time, and a closed loop
        // issues at once), so this one is the next index. The window opens at its arrival, before a wait
        // for admission, because its response time counts from there.
        if !self.stats.measuring && self.totals.requests == self.stats.warmup {
            self.start_window(now);
        }
        if let Some(k) = self.s.max_outstanding {
            if self.outstanding_apps >= k {
                // Admission FIFO: the arrival waits for a completion; later arrivals are not read yet.
                self.replay.blocked = Some(id);
                if !self.stats.measuring {
                    self.look_ahead(now)?;
                }
                return Ok(());
            }
        }
        self.issue_staged(id, now)?;
        if self.totals.requests % TICK == 0 && !progress.tick(self.totals.requests) {
            self.stop = true;
        }
        Ok(())
    }

    /// Open loop, before the window: an arrival waits for admission (`max_outstanding`), and the trace is
    /// not read on until it is admitted, but the window opens at the first measured request's arrival
    /// (where its response time starts), which may come first. Read ahead the requests that have arrived
    /// by `now` (the reader keeps them for their issue): if the first measured one is among them or the
    /// next, open the window at its arrival; else look again at the next arrival, if an arrival still
    /// waits then. Memory: the requests arrived and not yet admitted, up to the first measured one.
    fn look_ahead(&mut self, now: u64) -> Result<(), SourceError> {
        if self.ahead.done {
            return Ok(());
        }
        let w = self.stats.warmup;
        let base = self.rd.handed_out();
        let (mut j, mut prev) = if self.ahead.next > base {
            (self.ahead.next, self.ahead.arrival)
        } else {
            (base, self.replay.last_arrival())
        };
        while j <= w {
            let Some(r) = self.rd.peek((j - base) as usize)? else {
                break;
            };
            let a = self.replay.open_arrival(&r, prev);
            if j == w {
                self.q.schedule(a.max(now), self.class_arrival(), Ev::WindowStart);
                break;
            }
            if a > now {
                if self.ahead.armed != Some(a) {
                    self.ahead.armed = Some(a);
                    self.q.schedule(a, self.class_arrival(), Ev::LookAhead);
                }
                (self.ahead.next, self.ahead.arrival) = (j, prev);
                return Ok(());
            }
            (j, prev) = (j + 1, a);
        }
        self.ahead.done = true;
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
        let index = self.totals.requests;
        self.totals.requests += 1;
        self.totals.blocks += u64::from(req.len);
        if self.stats.warmup > 0 && index + 1 == self.stats.warmup {
            // After everything this request sets off at this instant, before the next arrival.
            let c = self.class_arrival();
            self.q.schedule(now, c, Ev::WarmupEnd);
            self.stats.reset_pending = true;
        } else if index == self.stats.warmup && self.stats.reset_pending {
            // The first measured request, issued at the warm-up's last instant before its reset event.
            self.on_warmup_end(now);
        }
        let write = req.op == Op::Write;
        let blocking = !write || self.s.sync_writes;
        let open = self.s.replay == Replay::Open;
        let measured = index >= self.stats.warmup;
        if measured && self.s.max_outstanding.is_some() {
            self.stats.admission.record(now - t_staged);
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
            held_demotions: NIL,
        });
        self.outstanding_apps += 1;
        self.obs.issued(index, now);
        self.serve(0, j, now)?;
        if !open && !blocking {
            self.replay.slot_free(&mut self.rd, key, now)?;
        }
        Ok(())
    }
}
