//! Statistics of a timed run: response times per client (the totals are their sum), admission waits,
//! stall time, the device's and scheduler's counters and queue length, counted over the measured window
//! (from the issue of the first measured request to the end of the run); and the report built from them
//! at the end.
//!
//! The counts of the device, the scheduler and the links run from the start of the run; the window's are
//! their growth from the instant it opens (so everything dispatched, submitted or sent at or after that
//! nanosecond, even earlier in event order than the request that opens it). The device's busy time is
//! the part of each service interval inside the window, added when the request completes or, for one
//! still at the device when the run stops, at the end.

use super::{Engine, TimedObserver};
use crate::config::Replay;
use crate::metrics::{ClientTiming, DeviceReport, Histogram, RtSummary, RunResult, TimingReport};
use crate::policy::table::{block_map, BlockMap};

/// Counts that run from the start of the run; a window counts their growth since it opened.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    /// Device requests dispatched, by class: demand only, prefetch only, both.
    pub(super) requests: [u64; 3],
    /// Their sectors, by class.
    pub(super) sectors: [u64; 3],
    /// Their service times, ns.
    pub(super) service_ns: u64,
    /// Bios submitted to the scheduler.
    pub(super) bios: u64,
    /// Scheduler merges, expiries and queue waits; link messages and pages (read from the scheduler and
    /// the links, see [`Engine::counts`]).
    merges: u64,
    expired: u64,
    queue_wait_ns: u64,
    net: (u64, u64),
}

impl Counts {
    fn since(&self, b: &Self) -> Self {
        let d3 = |x: [u64; 3], y: [u64; 3]| [x[0] - y[0], x[1] - y[1], x[2] - y[2]];
        Self {
            requests: d3(self.requests, b.requests),
            sectors: d3(self.sectors, b.sectors),
            service_ns: self.service_ns - b.service_ns,
            bios: self.bios - b.bios,
            merges: self.merges - b.merges,
            expired: self.expired - b.expired,
            queue_wait_ns: self.queue_wait_ns - b.queue_wait_ns,
            net: (self.net.0 - b.net.0, self.net.1 - b.net.1),
        }
    }
}

#[derive(Debug)]
struct ClientHist {
    client: u32,
    reads: Histogram,
    writes: Histogram,
}

/// What a timed run measures.
pub(super) struct Stats {
    /// Requests of the warm-up (not measured).
    pub(super) warmup: u64,
    /// When the measured window began: the issue of the first measured request (its arrival in open
    /// loop, where its response time starts), so the window holds no warm-up request's response time.
    t_measure: u64,
    /// When the last application request completed.
    pub(super) last_app_done: u64,
    reads: Histogram,
    writes: Histogram,
    /// Waits for admission (`max_outstanding`).
    pub(super) admission: Histogram,
    stall_ns: u128,
    clients: Vec<ClientHist>,
    client_idx: BlockMap<u32>,
    /// The last client seen and its index in `clients`.
    last_client: Option<(u32, usize)>,
    pub(super) dev_rep: DeviceReport,
    /// The device's counts from the start of the run (the scheduler's and links' are theirs).
    pub(super) dev: Counts,
    /// Before the window opens: the time of the latest event, and every count as that instant began.
    snap_t: u64,
    snap: Counts,
    /// Every count when the window opened.
    base: Counts,
    /// Device time inside the window, summed over the channels, ns.
    busy_ns: u64,
    /// Time integral of the scheduler's queue length since measuring began (requests x ns).
    q_area: u128,
    q_last_t: u64,
    q_last: u64,
    /// Inside the measured window (the first measured request has been issued).
    pub(super) measuring: bool,
    /// The levels' counters are to be zeroed at the end of the warm-up (`on_warmup_end`) and
    /// have not been yet.
    pub(super) reset_pending: bool,
}

impl Stats {
    /// Statistics of a run with `warmup` requests of warm-up, over a device reported in `dev_rep`.
    pub(super) fn new(warmup: u64, dev_rep: DeviceReport) -> Self {
        Self {
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
            dev: Counts::default(),
            snap_t: 0,
            snap: Counts::default(),
            base: Counts::default(),
            busy_ns: 0,
            q_area: 0,
            q_last_t: 0,
            q_last: 0,
            measuring: warmup == 0,
            reset_pending: false,
        }
    }

    /// A measured application request of `client` completed after `rt` ns.
    pub(super) fn record_response(&mut self, client: u32, write: bool, rt: u64) {
        let ci = match self.last_client {
            Some((c, i)) if c == client => i,
            _ => {
                let i = match self.client_idx.get(&u64::from(client)) {
                    Some(&i) => i as usize,
                    None => {
                        self.client_idx.insert(u64::from(client), self.clients.len() as u32);
                        self.clients.push(ClientHist { client, reads: Histogram::new(), writes: Histogram::new() });
                        self.clients.len() - 1
                    }
                };
                self.last_client = Some((client, i));
                i
            }
        };
        // Per client only; the totals are their sum (finish).
        if write {
            self.clients[ci].writes.record(rt);
        } else {
            self.clients[ci].reads.record(rt);
            self.stall_ns += u128::from(rt);
        }
    }

    /// The device served a request from `start` to `done`, and the run is at `now` (`done`, or the end of
    /// a run that stopped first): count its time inside the window.
    pub(super) fn served(&mut self, start: u64, done: u64, now: u64) {
        if self.measuring {
            self.busy_ns = self.busy_ns.saturating_add(done.min(now).saturating_sub(start.max(self.t_measure)));
        }
    }

    /// The scheduler holds `q` requests from `now` on.
    pub(super) fn queue_length(&mut self, now: u64, q: u64) {
        self.q_area += u128::from(self.q_last) * u128::from(now - self.q_last_t);
        self.q_last_t = now;
        self.q_last = q;
        self.dev_rep.queue_max = self.dev_rep.queue_max.max(q);
    }
}

impl<O: TimedObserver + ?Sized> Engine<'_, O> {
    /// Every count of the device, the scheduler and the links from the start of the run.
    fn counts(&self) -> Counts {
        let st = self.io.sched.stats();
        Counts {
            merges: st.back_merges + st.front_merges + st.fused,
            expired: st.expired,
            queue_wait_ns: st.queue_wait_ns,
            net: self.net.totals(),
            ..self.stats.dev
        }
    }

    /// Before the window opens, at each event: when it is the first of its instant, keep the counts as
    /// the instant begins, where they start from if the window opens in it.
    #[inline]
    pub(super) fn note_instant(&mut self, now: u64) {
        if !self.stats.measuring && now != self.stats.snap_t {
            self.stats.snap_t = now;
            self.stats.snap = self.counts();
        }
    }

    /// The warm-up's last request has made its accesses: zero the levels' counters, so that they count
    /// the accesses of measured requests only. The time window starts later, at the first measured
    /// request's issue ([`Self::start_window`]): the last warm-up request is still being served until
    /// then (closed loop), and its response time is not measured. Runs once: from its event, or earlier,
    /// just before the first measured request's accesses when that request is issued at the same instant
    /// ahead of the event (loops started together: a closed loop with `iodepth` above 1, or one loop per
    /// stream, stage their first requests at once; the reset used to come after the first measured
    /// request's accesses, which the levels then did not count although its response time was measured).
    pub(super) fn on_warmup_end(&mut self, now: u64) {
        if !std::mem::take(&mut self.stats.reset_pending) {
            return;
        }
        for l in &mut self.h.levels {
            l.reset_counters();
        }
        self.h.log_counters_reset(now);
    }

    /// The first measured request is issued (arrives, in open loop) at `now`: the measured window starts,
    /// so `makespan_ms`, `sim_time_ms` and with it `device_utilization`, and the device, scheduler and
    /// link counters all count from here: from the counts as this instant began, and the device's busy
    /// time from `now` on (a request in service now counts its time from here). Starting at the end of
    /// the warm-up's last access instead put that request's response time into the makespan (closed
    /// loop, one loop: warm-up 500 and 501 gave the same makespan).
    pub(super) fn start_window(&mut self, now: u64) {
        debug_assert_eq!(self.stats.snap_t, now, "the counts of this instant were not kept");
        self.stats.measuring = true;
        self.stats.t_measure = now;
        self.stats.base = self.stats.snap;
        let q = self.io.sched.queued() as u64;
        self.stats.dev_rep.queue_max = q;
        self.stats.q_area = 0;
        self.stats.q_last_t = now;
        self.stats.q_last = q;
    }

    pub(super) fn finish(mut self) -> RunResult {
        for l in &mut self.h.levels {
            l.finish();
        }
        let end = self.q.now();
        let now = self.counts();
        if !self.stats.measuring {
            // Stopped before the first measured request: an empty window, no time measured.
            self.stats.t_measure = end;
            self.stats.base = now;
        }
        // Requests still at the device (a run that does not drain): their time up to the end.
        for &(start, done) in self.io.served.iter().flatten() {
            self.stats.served(start, done, end);
        }
        let c = now.since(&self.stats.base);
        let mut dev = std::mem::take(&mut self.stats.dev_rep);
        [dev.requests_demand, dev.requests_prefetch, dev.requests_mixed] = c.requests;
        [dev.sectors_demand, dev.sectors_prefetch, dev.sectors_mixed] = c.sectors;
        dev.service_ns = c.service_ns;
        dev.busy_ns = self.stats.busy_ns;
        dev.bios = c.bios;
        dev.merges = c.merges;
        dev.expired = c.expired;
        dev.queue_wait_ns = c.queue_wait_ns;
        let span = end.saturating_sub(self.stats.t_measure);
        if self.stats.measuring {
            self.stats.q_area += u128::from(self.stats.q_last) * u128::from(end - self.stats.q_last_t);
        }
        dev.queue_mean = if span == 0 { 0.0 } else { self.stats.q_area as f64 / span as f64 };
        let (m, p) = c.net;
        let mut clients: Vec<ClientTiming> = self
            .stats
            .clients
            .iter()
            .map(|c| ClientTiming {
                client: c.client,
                reads: RtSummary::of(&c.reads),
                writes: RtSummary::of(&c.writes),
            })
            .collect();
        clients.sort_by_key(|c| c.client);
        for c in &self.stats.clients {
            self.stats.reads.merge(&c.reads);
            self.stats.writes.merge(&c.writes);
        }
        let timing = TimingReport {
            replay: match self.s.replay {
                Replay::Open => "open".into(),
                Replay::Closed => "closed".into(),
            },
            start_ns: self.stats.t_measure,
            end_ns: end,
            makespan_ns: self.stats.last_app_done.saturating_sub(self.stats.t_measure),
            reads: RtSummary::of(&self.stats.reads),
            writes: RtSummary::of(&self.stats.writes),
            rt_histogram: std::mem::take(&mut self.stats.reads),
            clients,
            device: dev,
            net_messages: m,
            net_pages: p,
            stall_ns: self.stats.stall_ns,
            admission_wait: RtSummary::of(&self.stats.admission),
            requests_incomplete: self.outstanding_apps,
        };
        self.totals.stopped_early = self.stop || self.rd.limited;
        self.totals.result(self.stats.warmup, self.h, Some(timing))
    }
}
