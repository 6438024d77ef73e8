//! The replay reader both engines read their requests with ([`Reader`]: batches, the request limit) and
//! the run totals they count ([`RunTotals`]); and the replay sources of the timed engine: when each trace
//! request is issued (`shared/docs/models/event-engine.md` §4; DiskSim's lazy trace input, where only the next arrival sits in the queue, and its
//! closed mode of `closedios` requests with a think time; the Butt, Gniady & Hu simulator's synchronous
//! per-process replay).
//!
//! - Open loop: request i is issued at `(ts_i - ts_0) * time_scale` (never before the previous one), one
//!   staged arrival at a time. With `max_outstanding` K, an arrival that finds K requests outstanding
//!   waits (in trace order) for a completion.
//! - Closed loop: one loop per stream of the trace (its (client, stream) pair, its client or its stream,
//!   as `stream_key` says), or a single loop in trace order; each loop keeps `iodepth` requests
//!   outstanding and issues its next one a think time after a completion. Every loop starts at time 0
//!   (at its first record's scaled trace time under `think = "gap"`): streams run concurrently (event-engine.md
//!   §4, §8), so the first [`READ_AHEAD`] records are read before time 0 to find them, and buffered by
//!   loop (only up to the last stream's first record when the source can be read twice,
//!   [`RequestSource::rescan`]). Past that the trace is read as the loops need it, records of other loops met on the way are
//!   buffered for them, and a loop first met there starts when the reader meets it.

use std::collections::VecDeque;

use super::inflight::Slab;
use super::{Hierarchy, RequestSource, SourceError};
use crate::config::{Replay, StreamKey, Think, TimedSettings};
use crate::device::ms_to_ns;
use crate::metrics::{RunResult, TimingReport};
use crate::policy::table::{block_map, BlockMap};
use crate::request::Request;

/// Requests decoded per batch.
const BATCH: usize = 8192;

/// Closed loop, one loop per stream: records read before time 0 to find the streams, so that all start
/// together (32 bytes each: at most 512 MiB). A trace of one stream, or with all its streams near its start,
/// gives the same replay with less; a stream first met beyond this starts when the reader meets it.
pub const READ_AHEAD: usize = 1 << 24;

/// Batched reading of a request source, with the run's request limit.
pub struct Reader<'a> {
    src: &'a mut dyn RequestSource,
    buf: Vec<Request>,
    pos: usize,
    exhausted: bool,
    read: u64,
    limit: u64,
    /// The limit stopped the reading.
    pub limited: bool,
}

impl<'a> Reader<'a> {
    /// Read `src`, at most `limit` requests.
    pub fn new(src: &'a mut dyn RequestSource, limit: Option<u64>) -> Self {
        Self {
            src,
            buf: Vec::with_capacity(BATCH),
            pos: 0,
            exhausted: false,
            read: 0,
            limit: limit.unwrap_or(u64::MAX),
            limited: false,
        }
    }

    /// The next request, `None` at the end (or at the limit).
    #[inline]
    pub fn next_request(&mut self) -> Result<Option<Request>, SourceError> {
        if self.pos == self.buf.len() && !self.refill()? {
            return Ok(None);
        }
        let r = self.buf[self.pos];
        self.pos += 1;
        self.read += 1;
        Ok(Some(r))
    }

    /// The requests read and not handed out yet, or the next batch; empty at the end (or at the limit).
    /// The instant engine reads this way; [`Reader::next_request`] hands out the same requests one by one.
    #[inline]
    pub fn next_batch(&mut self) -> Result<&[Request], SourceError> {
        if self.pos == self.buf.len() && !self.refill()? {
            return Ok(&[]);
        }
        let from = self.pos;
        self.pos = self.buf.len();
        self.read += (self.pos - from) as u64;
        Ok(&self.buf[from..])
    }

    /// Requests handed out so far.
    #[must_use]
    pub fn handed_out(&self) -> u64 {
        self.read
    }

    /// The `k`-th request after those handed out (0: the next), reading on as far as needed and keeping
    /// what it reads for [`Reader::next_request`]; `None` past the end or the limit.
    pub fn peek(&mut self, k: usize) -> Result<Option<Request>, SourceError> {
        if self.read.saturating_add(k as u64) >= self.limit {
            return Ok(None);
        }
        while self.pos + k >= self.buf.len() {
            if self.exhausted {
                return Ok(None);
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            let room = self.limit - self.read - self.buf.len() as u64;
            let want = BATCH.min(usize::try_from(room).unwrap_or(BATCH));
            if self.src.fill(&mut self.buf, want)? == 0 {
                self.exhausted = true;
                return Ok(None);
            }
        }
        Ok(Some(self.buf[self.pos + k]))
    }

    /// Whether the source has ended (or the limit was reached) and everything read was handed out.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.exhausted && self.pos == self.buf.len()
    }

    /// Everything read was handed out: read the next batch. False at the end of the source or at the
    /// limit (then `limited`).
    fn refill(&mut self) -> Result<bool, SourceError> {
        if self.exhausted {
            return Ok(false);
        }
        if self.read >= self.limit {
            self.limited = true;
            self.exhausted = true;
            return Ok(false);
        }
        self.buf.clear();
        self.pos = 0;
        let want = BATCH.min(usize::try_from(self.limit - self.read).unwrap_or(BATCH));
        if self.src.fill(&mut self.buf, want)? == 0 {
            self.exhausted = true;
            return Ok(false);
        }
        Ok(true)
    }
}

/// What both engines count of a run: the requests and blocks replayed, and whether the run stopped before
/// the end of its source (the request limit, or the caller's progress callback).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunTotals {
    /// Requests replayed.
    pub requests: u64,
    /// Blocks those requests asked for.
    pub blocks: u64,
    /// The run stopped before the end of its source.
    pub stopped_early: bool,
}

impl RunTotals {
    /// Count one replayed request.
    #[inline]
    pub fn count(&mut self, req: &Request) {
        self.requests += 1;
        self.blocks += u64::from(req.len);
    }

    /// Count a run of replayed requests.
    #[inline]
    pub fn count_all(&mut self, reqs: &[Request]) {
        self.requests += reqs.len() as u64;
        self.blocks += reqs.iter().map(|r| u64::from(r.len)).sum::<u64>();
    }

    /// The run's result: these totals, the first `warmup` requests not measured, the levels' reports
    /// and the timed engine's timing.
    pub fn result(self, warmup: u64, h: &Hierarchy, timing: Option<TimingReport>) -> RunResult {
        RunResult {
            requests: self.requests,
            blocks: self.blocks,
            warmup_requests: warmup.min(self.requests),
            stopped_early: self.stopped_early,
            levels: h.reports(),
            timing,
            notes: h.notes(),
        }
    }
}

/// A request waiting for its issue time.
#[derive(Clone, Copy, Debug)]
pub struct Staged {
    /// The request.
    pub req: Request,
    /// Its loop (closed loop; 0 in open loop).
    pub key: u32,
    /// Open loop: its scaled trace time (the origin of its response time).
    pub t_origin: u64,
}

#[derive(Debug, Default)]
struct Loop {
    fifo: VecDeque<Request>,
    last_ts: u64,
    active: u32,
}

/// When requests are issued.
pub struct ReplayState {
    s: TimedSettings,
    /// Staged requests (the payload of issue events).
    pub staged: Slab<Staged>,
    /// Issue events to schedule: (time, staged id). The engine drains it after each call.
    pub to_schedule: Vec<(u64, u32)>,
    ts0: Option<u64>,
    /// Open loop: the previous arrival's time (arrivals never go back in time).
    last_arrival: u64,
    /// Open loop: an arrival waiting for admission.
    pub blocked: Option<u32>,
    keys: BlockMap<u32>,
    loops: Vec<Loop>,
    new_keys: Vec<u32>,
    /// Staged requests not yet issued.
    pub pending: usize,
}

impl ReplayState {
    /// A replay with the engine's settings.
    #[must_use]
    pub fn new(s: &TimedSettings) -> Self {
        Self {
            s: s.clone(),
            staged: Slab::default(),
            to_schedule: Vec::with_capacity(64),
            ts0: None,
            last_arrival: 0,
            blocked: None,
            keys: block_map(64),
            loops: Vec::new(),
            new_keys: Vec::new(),
            pending: 0,
        }
    }

    /// `ts` relative to the first record, scaled (ns).
    fn scaled(&self, ts: u64) -> u64 {
        let d = ts.saturating_sub(self.ts0.unwrap_or(ts));
        self.scale(d)
    }

    fn scale(&self, d: u64) -> u64 {
        if self.s.time_scale == 1.0 {
            d
        } else {
            (d as f64 * self.s.time_scale).round() as u64
        }
    }

    /// Stage `req` to be issued at `t`; its response time counts from `t_origin`.
    fn stage(&mut self, req: Request, key: u32, t_origin: u64, t: u64) {
        let id = self.staged.alloc(Staged { req, key, t_origin });
        self.pending += 1;
        self.to_schedule.push((t, id));
    }

    /// Take a staged request at its issue.
    pub fn take(&mut self, id: u32) -> Staged {
        let st = self.staged[id];
        self.staged.release(id);
        self.pending -= 1;
        st
    }

    /// Stage the first request(s) at time 0.
    pub fn start(&mut self, rd: &mut Reader<'_>) -> Result<(), SourceError> {
        match self.s.replay {
            Replay::Open => self.next_open(rd, 0),
            Replay::Closed => {
                // One loop in trace order needs only its first record to start.
                let ahead = if self.s.per_stream { self.read_ahead(rd)? } else { 1 };
                for _ in 0..ahead {
                    let Some(r) = rd.next_request()? else { break };
                    self.ts0.get_or_insert(r.time_ns);
                    let k = self.key_of(&r);
                    self.loops[k as usize].fifo.push_back(r);
                }
                self.start_new_keys(rd, 0)
            }
        }
    }

    /// Open loop: stage the next arrival. Its arrival time is its scaled trace time (never before the
    /// previous arrival); it is issued then, or now if that has passed (the previous arrival waited for
    /// admission).
    pub fn next_open(&mut self, rd: &mut Reader<'_>, now: u64) -> Result<(), SourceError> {
        if let Some(r) = rd.next_request()? {
            if self.ts0.is_none() {
                self.ts0 = Some(r.time_ns);
            }
            let arrival = self.scaled(r.time_ns).max(self.last_arrival);
            self.last_arrival = arrival;
            self.stage(r, 0, arrival, arrival.max(now));
        }
        Ok(())
    }

    /// Open loop: the arrival time `r` gets when read after an arrival at `prev` (as in
    /// [`Self::next_open`]).
    #[must_use]
    pub fn open_arrival(&self, r: &Request, prev: u64) -> u64 {
        self.scaled(r.time_ns).max(prev)
    }

    /// Open loop: the arrival time of the latest request read.
    #[must_use]
    pub fn last_arrival(&self) -> u64 {
        self.last_arrival
    }

    /// Closed loop, one loop per stream: how many records to read before time 0. Up to the first record
    /// of the last stream the first [`READ_AHEAD`] records name, when a second reader of the source can
    /// tell (a trace of one stream then reads one record ahead, not the whole trace); else all of them.
    fn read_ahead(&self, rd: &Reader<'_>) -> Result<usize, SourceError> {
        let Some(mut scan) = rd.src.rescan()? else { return Ok(READ_AHEAD) };
        let cap = usize::try_from(rd.limit.saturating_sub(rd.read)).unwrap_or(usize::MAX).min(READ_AHEAD);
        let mut seen = block_map::<()>(64);
        let mut buf = Vec::with_capacity(BATCH);
        let (mut read, mut last_new) = (0, 0);
        while read < cap {
            buf.clear();
            if scan.fill(&mut buf, BATCH.min(cap - read))? == 0 {
                break;
            }
            for r in &buf {
                if seen.insert(self.stream_id(r), ()).is_none() {
                    last_new = read;
                }
                read += 1;
            }
        }
        Ok(last_new + 1)
    }

    /// The id of `r`'s loop under `stream_key` (one loop per stream).
    fn stream_id(&self, r: &Request) -> u64 {
        match self.s.stream_key {
            StreamKey::ClientStream => (u64::from(r.client) << 32) | u64::from(r.stream),
            StreamKey::Client => u64::from(r.client),
            StreamKey::Stream => u64::from(r.stream),
        }
    }

    fn key_of(&mut self, r: &Request) -> u32 {
        if !self.s.per_stream {
            if self.loops.is_empty() {
                self.loops.push(Loop::default());
                self.new_keys.push(0);
            }
            return 0;
        }
        let id = self.stream_id(r);
        if let Some(&k) = self.keys.get(&id) {
            return k;
        }
        let k = self.loops.len() as u32;
        self.keys.insert(id, k);
        self.loops.push(Loop::default());
        self.new_keys.push(k);
        k
    }

    /// The next request of loop `k` (buffered, or read on, buffering other loops' records).
    fn pull_for(&mut self, rd: &mut Reader<'_>, k: u32) -> Result<Option<Request>, SourceError> {
        if let Some(r) = self.loops[k as usize].fifo.pop_front() {
            return Ok(Some(r));
        }
        while let Some(r) = rd.next_request()? {
            let kk = self.key_of(&r);
            if kk == k {
                return Ok(Some(r));
            }
            self.loops[kk as usize].fifo.push_back(r);
        }
        Ok(None)
    }

    /// Start the loops met since the last call, in the order the trace first names them.
    fn start_new_keys(&mut self, rd: &mut Reader<'_>, now: u64) -> Result<(), SourceError> {
        while !self.new_keys.is_empty() {
            for k in std::mem::take(&mut self.new_keys) {
                self.start_loop(rd, k, now)?;
            }
        }
        Ok(())
    }

    /// Stage the first `iodepth` requests of loop `k`.
    fn start_loop(&mut self, rd: &mut Reader<'_>, k: u32, now: u64) -> Result<(), SourceError> {
        for _ in 0..self.s.iodepth {
            let Some(r) = self.pull_for(rd, k)? else { break };
            let t = if self.s.think == Think::Gap { self.scaled(r.time_ns).max(now) } else { now };
            let lp = &mut self.loops[k as usize];
            lp.last_ts = lp.last_ts.max(r.time_ns);
            lp.active += 1;
            self.stage(r, k, t, t);
        }
        Ok(())
    }

    /// Closed loop: a slot of loop `k` freed at `now` (a completion, or a non-blocking write issued):
    /// stage the loop's next request after the think time.
    pub fn slot_free(&mut self, rd: &mut Reader<'_>, k: u32, now: u64) -> Result<(), SourceError> {
        match self.pull_for(rd, k)? {
            None => self.loops[k as usize].active -= 1,
            Some(r) => {
                let lp = &mut self.loops[k as usize];
                let gap = r.time_ns.saturating_sub(lp.last_ts);
                lp.last_ts = lp.last_ts.max(r.time_ns);
                let think = match self.s.think {
                    Think::Gap => self.scale(gap),
                    Think::Constant => ms_to_ns(self.s.think_ms),
                    Think::None => 0,
                };
                self.stage(r, k, now + think, now + think);
            }
        }
        self.start_new_keys(rd, now)
    }
}
