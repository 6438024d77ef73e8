//! Block I/O scheduler imitating the Linux 2.6 request queue: front/back merging up to a maximum
//! request size, plugging, and the NOOP, DEADLINE and C-LOOK dispatch policies (Linux 2.6.12
//! `ll_rw_blk.c`, `elevator.c`, `deadline-iosched.c`, read for behaviour and restated here;
//! `shared/docs/models/iosched.md`).
//!
//! Engine-agnostic state machine: [`IoScheduler::submit`] bios as a cache level produces them, call
//! [`IoScheduler::dispatch`] whenever the device may have a free slot (after the submissions of one
//! instant, at a completion, at the wake-up time), and [`IoScheduler::complete`] when the device
//! finishes. The only timer the scheduler needs is the Linux unplug delay, exposed as
//! [`IoScheduler::next_wakeup`]; DEADLINE expiries are checked when a batch starts, as in Linux, so
//! they need no timer. Steady state is allocation-free: requests live in a slab, the sort index is a
//! sorted `Vec` per direction (at most `nr_requests` entries), the FIFOs are intrusive lists.

use serde::{Deserialize, Serialize};

use super::{ms_to_ns, DiskIo};
use crate::component::ConfigError;

/// Dispatch policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// Arrival order (merging still applies).
    Noop,
    /// Linux 2.6 deadline: one-way elevator in batches per direction, FIFO expiry, write starvation
    /// limit (default).
    #[default]
    Deadline,
    /// Circular LOOK over both directions, no deadlines.
    Clook,
}

/// When a queue that received work may dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plugging {
    /// No delay: the engine submits everything of one instant, then dispatches (default).
    #[default]
    Instant,
    /// Linux 2.6: an empty queue that receives a request is plugged until `unplug_thresh` requests are
    /// queued, `unplug_delay_ms` passes, or a sync (demand) bio arrives.
    Linux,
}

/// Scheduler parameters (defaults: Linux 2.6.12, iosched.md §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedParams {
    /// Dispatch policy (default `deadline`).
    pub policy: SchedPolicy,
    /// Read FIFO expiry, ms (default 500 = HZ/2).
    pub read_expire_ms: f64,
    /// Write FIFO expiry, ms (default 5000 = 5*HZ).
    pub write_expire_ms: f64,
    /// Read batches a queued write may be passed over before writes go first (default 2).
    pub writes_starved: u32,
    /// Requests per batch (default 16).
    pub fifo_batch: u32,
    /// Allow front merges (default true).
    pub front_merges: bool,
    /// A non-contiguous "next" request ends the batch (2.6.12 behaviour, default true).
    pub batch_ends_on_gap: bool,
    /// Largest request in sectors; merges never exceed it and bigger bios are split (default 256).
    pub max_sectors: u32,
    /// Requests per direction, queued plus dispatched (default 128 = `BLKDEV_MAX_RQ`).
    pub nr_requests: u32,
    /// Plugging (default `instant`).
    pub plugging: Plugging,
    /// Linux plugging: queued requests that unplug (default 4).
    pub unplug_thresh: u32,
    /// Linux plugging: unplug delay, ms (default 3).
    pub unplug_delay_ms: f64,
    /// Requests outstanding at the device; `None` = the device's own queue depth (HDD 1).
    pub device_qdepth: Option<u32>,
}

impl Default for SchedParams {
    fn default() -> Self {
        Self {
            policy: SchedPolicy::Deadline,
            read_expire_ms: 500.0,
            write_expire_ms: 5000.0,
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
            batch_ends_on_gap: true,
            max_sectors: 256,
            nr_requests: 128,
            plugging: Plugging::Instant,
            unplug_thresh: 4,
            unplug_delay_ms: 3.0,
            device_qdepth: None,
        }
    }
}

impl SchedParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        for (k, x) in [
            ("read_expire_ms", self.read_expire_ms),
            ("write_expire_ms", self.write_expire_ms),
            ("unplug_delay_ms", self.unplug_delay_ms),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(ConfigError::new(format!("{path}.{k}"), format!("must be a finite number >= 0, got {x}")));
            }
        }
        for (k, x) in
            [("fifo_batch", self.fifo_batch), ("max_sectors", self.max_sectors), ("nr_requests", self.nr_requests)]
        {
            if x == 0 {
                return Err(ConfigError::new(format!("{path}.{k}"), "must be at least 1"));
            }
        }
        if self.nr_requests > 1 << 20 {
            return Err(ConfigError::new(format!("{path}.nr_requests"), "must be at most 2^20"));
        }
        if self.device_qdepth == Some(0) {
            return Err(ConfigError::new(format!("{path}.device_qdepth"), "must be at least 1"));
        }
        Ok(())
    }
}

/// A contiguous run of sectors of one direction from a cache level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// First sector.
    pub lbn: u64,
    /// Sectors (split into `max_sectors` chunks if larger).
    pub sectors: u32,
    /// A write.
    pub write: bool,
    /// Someone waits for it now (demand); else asynchronous (prefetch).
    pub sync: bool,
    /// Caller's token, reported back with the request that carries the bio.
    pub tag: u64,
}

/// Index of a request in the scheduler.
pub type ReqId = u32;

/// Why a bio was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    /// `nr_requests` of this direction are allocated: wait for a completion, then submit again.
    #[error("request table full for this direction")]
    Full,
    /// Zero sectors.
    #[error("bio of zero sectors")]
    Empty,
    /// Overlaps a queued request of the same direction (the cache layer must prevent this).
    #[error("bio overlaps a queued request")]
    Overlap,
    /// Not a dispatched request.
    #[error("request {0} is not at the device")]
    NotDispatched(ReqId),
}

/// What a submission did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Submitted {
    /// Chunks appended to a queued request.
    pub back_merges: u32,
    /// Chunks prepended to a queued request.
    pub front_merges: u32,
    /// Queued requests fused with a neighbour after a merge.
    pub fused: u32,
    /// New requests.
    pub created: u32,
}

/// A request handed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Its id, for [`IoScheduler::complete`] and [`IoScheduler::tags`].
    pub id: ReqId,
    /// What the device must do.
    pub io: DiskIo,
    /// Carries at least one sync bio.
    pub sync: bool,
    /// Carries at least one async bio.
    pub has_async: bool,
    /// When its first bio arrived.
    pub arrived: u64,
}

/// Scheduler counters (iosched.md §7).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedStats {
    /// Bios submitted (after splitting: chunks).
    pub bios: u64,
    /// Requests created.
    pub requests: u64,
    /// Back merges.
    pub back_merges: u64,
    /// Front merges.
    pub front_merges: u64,
    /// Requests fused into a neighbour.
    pub fused: u64,
    /// Requests dispatched.
    pub dispatched: u64,
    /// Dispatched with only sync bios.
    pub dispatched_sync: u64,
    /// Dispatched with only async bios.
    pub dispatched_async: u64,
    /// Dispatched with both.
    pub dispatched_mixed: u64,
    /// Sectors dispatched.
    pub sectors: u64,
    /// Dispatches of an expired FIFO head (DEADLINE).
    pub expired: u64,
    /// Sum over dispatched requests of (dispatch - first arrival), ns.
    pub queue_wait_ns: u64,
    /// Submissions refused because the table was full.
    pub full: u64,
    /// Unplugs by the delay timer / the threshold / a sync bio (Linux plugging).
    pub unplug_timer: u64,
    /// See `unplug_timer`.
    pub unplug_thresh: u64,
    /// See `unplug_timer`.
    pub unplug_sync: u64,
}

const NIL: u32 = u32::MAX;
const READ: usize = 0;
const WRITE: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    Queued,
    Dispatched,
}

#[derive(Clone, Debug)]
struct Req {
    start: u64,
    sectors: u32,
    dir: usize,
    seq: u64,
    arrived: u64,
    expire: u64,
    sync_bios: u32,
    async_bios: u32,
    tags: Vec<u64>,
    prev: u32,
    next: u32,
    state: State,
}

impl Req {
    fn end(&self) -> u64 {
        self.start + u64::from(self.sectors)
    }
}

/// The request queue of one device.
#[derive(Clone, Debug)]
pub struct IoScheduler {
    p: SchedParams,
    qdepth: u32,
    reqs: Vec<Req>,
    free: Vec<u32>,
    /// Sort index per direction: (start, id), ascending.
    sorted: [Vec<(u64, u32)>; 2],
    fifo_head: [u32; 2],
    fifo_tail: [u32; 2],
    allocated: [u32; 2],
    in_flight: u32,
    seq: u64,
    next: [Option<u32>; 2],
    last_end: u64,
    batching: u32,
    starved: u32,
    plugged: bool,
    unplug_at: u64,
    stats: SchedStats,
}

impl IoScheduler {
    /// A scheduler for a device accepting `device_qdepth` requests at once (overridden by
    /// `params.device_qdepth`).
    pub fn new(params: SchedParams, device_qdepth: u32, path: &str) -> Result<Self, ConfigError> {
        params.validate(path)?;
        let qdepth = params.device_qdepth.unwrap_or(device_qdepth).max(1);
        let cap = params.nr_requests.min(1024) as usize;
        Ok(Self {
            p: params,
            qdepth,
            reqs: Vec::with_capacity(2 * cap),
            free: Vec::with_capacity(2 * cap),
            sorted: [Vec::with_capacity(cap), Vec::with_capacity(cap)],
            fifo_head: [NIL; 2],
            fifo_tail: [NIL; 2],
            allocated: [0; 2],
            in_flight: 0,
            seq: 0,
            next: [None; 2],
            last_end: 0,
            batching: 0,
            starved: 0,
            plugged: false,
            unplug_at: 0,
            stats: SchedStats::default(),
        })
    }

    /// Parameters in force.
    #[must_use]
    pub fn params(&self) -> &SchedParams {
        &self.p
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &SchedStats {
        &self.stats
    }

    /// Requests waiting (not dispatched).
    #[must_use]
    pub fn queued(&self) -> usize {
        self.sorted[READ].len() + self.sorted[WRITE].len()
    }

    /// Requests at the device.
    #[must_use]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Whether a new request of this direction can be allocated.
    #[must_use]
    pub fn has_room(&self, write: bool) -> bool {
        self.allocated[usize::from(write)] < self.p.nr_requests
    }

    /// Whether the queue is plugged (Linux plugging).
    #[must_use]
    pub fn is_plugged(&self) -> bool {
        self.plugged
    }

    /// A task now waits synchronously for queued work (a demand joined an in-flight prefetch): a
    /// plugged queue is unplugged at once, as Linux kicks the queue when a task waits on a page
    /// (iosched.md §3). Nothing happens to an unplugged queue.
    pub fn unplug_sync(&mut self) {
        if self.plugged {
            self.plugged = false;
            self.stats.unplug_sync += 1;
        }
    }

    /// When the scheduler wants [`IoScheduler::dispatch`] called even if nothing else happens: the
    /// unplug deadline of a plugged queue. `None` otherwise.
    #[must_use]
    pub fn next_wakeup(&self) -> Option<u64> {
        (self.plugged && self.queued() > 0).then_some(self.unplug_at)
    }

    /// The queued requests of one direction in sort order: `(start, sectors)` (tests, inspection).
    pub fn sorted(&self, write: bool) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.sorted[usize::from(write)].iter().map(|&(s, id)| (s, self.reqs[id as usize].sectors))
    }

    /// The bio tags carried by request `id` (valid until it completes).
    #[must_use]
    pub fn tags(&self, id: ReqId) -> &[u64] {
        self.reqs.get(id as usize).map_or(&[], |r| r.tags.as_slice())
    }

    /// Submit a bio at `now`. Bios above `max_sectors` are split into chunks, each merged or queued
    /// as its own bio (the caller should normally respect the limit already).
    pub fn submit(&mut self, bio: Bio, now: u64) -> Result<Submitted, SchedError> {
        if bio.sectors == 0 {
            return Err(SchedError::Empty);
        }
        let dir = usize::from(bio.write);
        let max = self.p.max_sectors;
        let chunks = bio.sectors.div_ceil(max);
        let end = bio.lbn + u64::from(bio.sectors);
        if self.overlaps(dir, bio.lbn, end) {
            return Err(SchedError::Overlap);
        }
        if chunks > 1 && self.allocated[dir] + chunks > self.p.nr_requests {
            self.stats.full += 1;
            return Err(SchedError::Full);
        }
        let was_empty = self.queued() == 0;
        let mut out = Submitted::default();
        let mut lbn = bio.lbn;
        while lbn < end {
            let n = (end - lbn).min(u64::from(max)) as u32;
            self.submit_chunk(Bio { lbn, sectors: n, ..bio }, now, &mut out)?;
            lbn += u64::from(n);
        }
        if self.p.plugging == Plugging::Linux {
            if was_empty && !self.plugged {
                self.plugged = true;
                self.unplug_at = now + ms_to_ns(self.p.unplug_delay_ms);
            }
            if self.plugged && bio.sync {
                self.plugged = false;
                self.stats.unplug_sync += 1;
            } else if self.plugged && self.queued() >= self.p.unplug_thresh as usize {
                self.plugged = false;
                self.stats.unplug_thresh += 1;
            }
        }
        Ok(out)
    }

    fn overlaps(&self, dir: usize, a: u64, b: u64) -> bool {
        let s = &self.sorted[dir];
        let i = s.partition_point(|&(st, _)| st < b);
        i > 0 && self.reqs[s[i - 1].1 as usize].end() > a
    }

    fn submit_chunk(&mut self, c: Bio, now: u64, out: &mut Submitted) -> Result<(), SchedError> {
        let dir = usize::from(c.write);
        let max = u64::from(self.p.max_sectors);
        let c_end = c.lbn + u64::from(c.sectors);
        let idx = self.sorted[dir].partition_point(|&(s, _)| s < c.lbn);
        // Back merge into the request ending where the chunk starts.
        if idx > 0 {
            let id = self.sorted[dir][idx - 1].1;
            let r = &self.reqs[id as usize];
            if r.end() == c.lbn && u64::from(r.sectors) + u64::from(c.sectors) <= max {
                self.add_bio(id, &c);
                self.reqs[id as usize].sectors += c.sectors;
                self.stats.back_merges += 1;
                out.back_merges += 1;
                // Fuse with the next request if they now touch.
                if let Some(&(ns, nid)) = self.sorted[dir].get(idx) {
                    let (r, n) = (&self.reqs[id as usize], &self.reqs[nid as usize]);
                    if ns == r.end() && u64::from(r.sectors) + u64::from(n.sectors) <= max {
                        self.fuse(id, nid);
                        out.fused += 1;
                    }
                }
                return Ok(());
            }
        }
        // Front merge into the request starting where the chunk ends.
        if self.p.front_merges {
            if let Some(&(ns, nid)) = self.sorted[dir].get(idx) {
                let n = &self.reqs[nid as usize];
                if ns == c_end && u64::from(n.sectors) + u64::from(c.sectors) <= max {
                    self.add_bio(nid, &c);
                    let n = &mut self.reqs[nid as usize];
                    n.start = c.lbn;
                    n.sectors += c.sectors;
                    self.sorted[dir][idx].0 = c.lbn; // same position: nothing lies in between
                    self.stats.front_merges += 1;
                    out.front_merges += 1;
                    if idx > 0 {
                        let pid = self.sorted[dir][idx - 1].1;
                        let (p, n) = (&self.reqs[pid as usize], &self.reqs[nid as usize]);
                        if p.end() == n.start && u64::from(p.sectors) + u64::from(n.sectors) <= max {
                            self.fuse(pid, nid);
                            out.fused += 1;
                        }
                    }
                    return Ok(());
                }
            }
        }
        if self.allocated[dir] >= self.p.nr_requests {
            self.stats.full += 1;
            return Err(SchedError::Full);
        }
        let id = self.alloc(&c, now);
        self.sorted[dir].insert(idx, (c.lbn, id));
        self.fifo_push(dir, id);
        self.stats.requests += 1;
        out.created += 1;
        Ok(())
    }

    fn add_bio(&mut self, id: u32, c: &Bio) {
        let r = &mut self.reqs[id as usize];
        r.tags.push(c.tag);
        if c.sync {
            r.sync_bios += 1;
        } else {
            r.async_bios += 1;
        }
        self.stats.bios += 1;
    }

    fn alloc(&mut self, c: &Bio, now: u64) -> u32 {
        let dir = usize::from(c.write);
        let expire_ms = if c.write { self.p.write_expire_ms } else { self.p.read_expire_ms };
        self.seq += 1;
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.reqs.push(Req {
                    start: 0,
                    sectors: 0,
                    dir,
                    seq: 0,
                    arrived: 0,
                    expire: 0,
                    sync_bios: 0,
                    async_bios: 0,
                    tags: Vec::new(),
                    prev: NIL,
                    next: NIL,
                    state: State::Free,
                });
                (self.reqs.len() - 1) as u32
            }
        };
        let r = &mut self.reqs[id as usize];
        r.start = c.lbn;
        r.sectors = 0;
        r.dir = dir;
        r.seq = self.seq;
        r.arrived = now;
        r.expire = now + ms_to_ns(expire_ms);
        r.sync_bios = 0;
        r.async_bios = 0;
        r.tags.clear();
        r.state = State::Queued;
        self.add_bio(id, c);
        self.reqs[id as usize].sectors = c.sectors;
        self.allocated[dir] += 1;
        id
    }

    /// Fuse queued request `gone` into its neighbour `keep` (`keep` ends where `gone` starts, or
    /// `gone` ends where `keep` starts). The survivor keeps the earlier expiry and FIFO position.
    fn fuse(&mut self, keep: u32, gone: u32) {
        let dir = self.reqs[keep as usize].dir;
        let (g_start, g_sectors, g_seq, g_arrived, g_expire, g_sync, g_async) = {
            let g = &self.reqs[gone as usize];
            (g.start, g.sectors, g.seq, g.arrived, g.expire, g.sync_bios, g.async_bios)
        };
        // FIFO: if `gone` is older, `keep` takes its place.
        if g_seq < self.reqs[keep as usize].seq {
            self.fifo_unlink(dir, keep);
            self.fifo_insert_before(dir, keep, gone);
        }
        if self.next[dir] == Some(gone) {
            self.next[dir] = self.successor(dir, g_start);
        }
        self.sorted_remove(dir, g_start);
        self.fifo_unlink(dir, gone);
        let mut tags = std::mem::take(&mut self.reqs[gone as usize].tags);
        {
            let k = &mut self.reqs[keep as usize];
            k.start = k.start.min(g_start);
            k.sectors += g_sectors;
            k.seq = k.seq.min(g_seq);
            k.arrived = k.arrived.min(g_arrived);
            k.expire = k.expire.min(g_expire);
            k.sync_bios += g_sync;
            k.async_bios += g_async;
            k.tags.append(&mut tags);
        }
        // Re-key `keep` (its start may have moved down to `gone`'s).
        let ks = self.reqs[keep as usize].start;
        if let Some(e) = self.sorted[dir].iter_mut().find(|e| e.1 == keep) {
            e.0 = ks;
        }
        self.reqs[gone as usize].tags = tags; // give the (empty) buffer back for reuse
        self.release(gone);
        self.stats.fused += 1;
    }

    fn release(&mut self, id: u32) {
        let r = &mut self.reqs[id as usize];
        let dir = r.dir;
        r.state = State::Free;
        r.tags.clear();
        self.allocated[dir] -= 1;
        self.free.push(id);
    }

    fn sorted_remove(&mut self, dir: usize, start: u64) {
        let s = &mut self.sorted[dir];
        let i = s.partition_point(|&(st, _)| st < start);
        if i < s.len() && s[i].0 == start {
            s.remove(i);
        }
    }

    /// The queued request of `dir` following position `start` in sort order.
    fn successor(&self, dir: usize, start: u64) -> Option<u32> {
        let s = &self.sorted[dir];
        let i = s.partition_point(|&(st, _)| st <= start);
        s.get(i).map(|e| e.1)
    }

    fn fifo_push(&mut self, dir: usize, id: u32) {
        let tail = self.fifo_tail[dir];
        self.reqs[id as usize].prev = tail;
        self.reqs[id as usize].next = NIL;
        if tail == NIL {
            self.fifo_head[dir] = id;
        } else {
            self.reqs[tail as usize].next = id;
        }
        self.fifo_tail[dir] = id;
    }

    fn fifo_insert_before(&mut self, dir: usize, id: u32, at: u32) {
        let prev = self.reqs[at as usize].prev;
        self.reqs[id as usize].prev = prev;
        self.reqs[id as usize].next = at;
        self.reqs[at as usize].prev = id;
        if prev == NIL {
            self.fifo_head[dir] = id;
        } else {
            self.reqs[prev as usize].next = id;
        }
    }

    fn fifo_unlink(&mut self, dir: usize, id: u32) {
        let (prev, next) = (self.reqs[id as usize].prev, self.reqs[id as usize].next);
        if prev == NIL {
            self.fifo_head[dir] = next;
        } else {
            self.reqs[prev as usize].next = next;
        }
        if next == NIL {
            self.fifo_tail[dir] = prev;
        } else {
            self.reqs[next as usize].prev = prev;
        }
        self.reqs[id as usize].prev = NIL;
        self.reqs[id as usize].next = NIL;
    }

    /// Hand the next request to the device, if the device has a free slot, the queue is not plugged
    /// (a plugged queue whose unplug time has come unplugs here) and a request is queued.
    pub fn dispatch(&mut self, now: u64) -> Option<Dispatch> {
        if self.in_flight >= self.qdepth {
            return None;
        }
        if self.plugged {
            if now < self.unplug_at {
                return None;
            }
            self.plugged = false;
            self.stats.unplug_timer += 1;
        }
        let id = match self.p.policy {
            SchedPolicy::Noop => self.pick_noop(),
            SchedPolicy::Deadline => self.pick_deadline(now),
            SchedPolicy::Clook => self.pick_clook(),
        }?;
        Some(self.take(id, now))
    }

    fn pick_noop(&self) -> Option<u32> {
        let (r, w) = (self.fifo_head[READ], self.fifo_head[WRITE]);
        match (r, w) {
            (NIL, NIL) => None,
            (r, NIL) => Some(r),
            (NIL, w) => Some(w),
            (r, w) => Some(if self.reqs[r as usize].seq <= self.reqs[w as usize].seq { r } else { w }),
        }
    }

    fn pick_clook(&self) -> Option<u32> {
        let from = |dir: usize, at: u64| {
            let s = &self.sorted[dir];
            s.get(s.partition_point(|&(st, _)| st < at)).copied()
        };
        let best = |a: Option<(u64, u32)>, b: Option<(u64, u32)>| match (a, b) {
            (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
            (x, None) => x,
            (None, y) => y,
        };
        best(from(READ, self.last_end), from(WRITE, self.last_end))
            .or_else(|| best(from(READ, 0), from(WRITE, 0)))
            .map(|e| e.1)
    }

    fn pick_deadline(&mut self, now: u64) -> Option<u32> {
        let batch = self.p.fifo_batch;
        if let Some(id) = self.next[WRITE].or(self.next[READ]) {
            if self.p.batch_ends_on_gap && self.reqs[id as usize].start != self.last_end {
                self.batching = self.batching.saturating_add(batch);
            }
            if self.batching < batch {
                return Some(id);
            }
        }
        let reads = self.fifo_head[READ] != NIL;
        let writes = self.fifo_head[WRITE] != NIL;
        let dir = if reads {
            let starved = writes && {
                let s = self.starved;
                self.starved += 1;
                s >= self.p.writes_starved
            };
            if starved {
                WRITE
            } else {
                READ
            }
        } else if writes {
            WRITE
        } else {
            return None;
        };
        if dir == WRITE {
            self.starved = 0;
        }
        let head = self.fifo_head[dir];
        if now > self.reqs[head as usize].expire {
            self.batching = 0;
            self.stats.expired += 1;
            Some(head)
        } else if let Some(id) = self.next[dir] {
            Some(id)
        } else {
            self.batching = 0;
            self.sorted[dir].first().map(|e| e.1)
        }
    }

    fn take(&mut self, id: u32, now: u64) -> Dispatch {
        let (dir, start, end) = {
            let r = &self.reqs[id as usize];
            (r.dir, r.start, r.end())
        };
        if self.p.policy == SchedPolicy::Deadline {
            self.batching = self.batching.saturating_add(1);
        }
        self.next = [None; 2];
        self.next[dir] = self.successor(dir, start);
        self.last_end = end;
        self.sorted_remove(dir, start);
        self.fifo_unlink(dir, id);
        let r = &mut self.reqs[id as usize];
        r.state = State::Dispatched;
        self.in_flight += 1;
        let s = &mut self.stats;
        s.dispatched += 1;
        s.sectors += u64::from(r.sectors);
        s.queue_wait_ns += now.saturating_sub(r.arrived);
        match (r.sync_bios > 0, r.async_bios > 0) {
            (true, false) => s.dispatched_sync += 1,
            (false, true) => s.dispatched_async += 1,
            _ => s.dispatched_mixed += 1,
        }
        Dispatch {
            id,
            io: DiskIo { lbn: r.start, sectors: r.sectors, write: dir == WRITE, fua: false },
            sync: r.sync_bios > 0,
            has_async: r.async_bios > 0,
            arrived: r.arrived,
        }
    }

    /// The device finished request `id`: free its slot and its table entry.
    pub fn complete(&mut self, id: ReqId) -> Result<(), SchedError> {
        match self.reqs.get(id as usize) {
            Some(r) if r.state == State::Dispatched => {
                self.in_flight -= 1;
                self.release(id);
                Ok(())
            }
            _ => Err(SchedError::NotDispatched(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sched(policy: SchedPolicy) -> IoScheduler {
        IoScheduler::new(SchedParams { policy, ..SchedParams::default() }, 1, "sched").unwrap()
    }

    fn rd(lbn: u64, sectors: u32) -> Bio {
        Bio { lbn, sectors, write: false, sync: true, tag: lbn }
    }

    fn wr(lbn: u64, sectors: u32) -> Bio {
        Bio { lbn, sectors, write: true, sync: false, tag: lbn }
    }

    /// Dispatch and complete everything, returning the (lbn, sectors, write) order.
    fn drain(s: &mut IoScheduler, now: u64) -> Vec<(u64, u32, bool)> {
        let mut out = vec![];
        while let Some(d) = s.dispatch(now) {
            out.push((d.io.lbn, d.io.sectors, d.io.write));
            s.complete(d.id).unwrap();
        }
        out
    }

    #[test]
    fn two_adjacent_64k_prefetches_back_merge_into_one_128k_request() {
        let mut s = sched(SchedPolicy::Deadline);
        assert_eq!(s.submit(rd(1000, 128), 0).unwrap().created, 1);
        let r = s.submit(rd(1128, 128), 0).unwrap();
        assert_eq!(r.back_merges, 1);
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(1000, 256)]);
        // A third one does not fit under max_sectors = 256: a new request.
        assert_eq!(s.submit(rd(1256, 8), 0).unwrap().created, 1);
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(1000, 256), (1256, 8)]);
        let d = s.dispatch(0).unwrap();
        assert_eq!((d.io.lbn, d.io.sectors), (1000, 256));
        assert_eq!(s.tags(d.id), &[1000, 1128]);
        assert_eq!(s.stats().back_merges, 1);
    }

    #[test]
    fn front_merge_rekeys_and_fuses_with_the_previous_request() {
        let mut s = sched(SchedPolicy::Deadline);
        s.submit(rd(116, 8), 0).unwrap();
        // [108, 116) front-merges into [116, 124): the request is re-keyed at 108.
        let r = s.submit(rd(108, 8), MS).unwrap();
        assert_eq!((r.back_merges, r.front_merges, r.created), (0, 1, 0));
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(108, 16)]);
        // [92, 100) is queued apart; [100, 108) back-merges into it (back merges are tried first) and
        // the result fuses with [108, 124).
        s.submit(rd(92, 8), 2 * MS).unwrap();
        let r = s.submit(rd(100, 8), 3 * MS).unwrap();
        assert_eq!((r.back_merges, r.fused), (1, 1));
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(92, 32)]);
        assert_eq!(s.stats().fused, 1);
        // A front merge that closes a gap fuses too: [200, 208) + [216, 224), then [208, 216) with
        // back merges impossible (the request before is full).
        let mut s = IoScheduler::new(SchedParams { max_sectors: 16, ..SchedParams::default() }, 1, "s").unwrap();
        s.submit(rd(192, 16), 0).unwrap();
        s.submit(rd(216, 8), 0).unwrap();
        let r = s.submit(rd(208, 8), 0).unwrap();
        assert_eq!((r.back_merges, r.front_merges, r.fused), (0, 1, 0));
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(192, 16), (208, 16)]);
        // Without front merges a new request is made.
        let mut s = IoScheduler::new(SchedParams { front_merges: false, ..SchedParams::default() }, 1, "s").unwrap();
        s.submit(rd(116, 8), 0).unwrap();
        assert_eq!(s.submit(rd(108, 8), 0).unwrap().created, 1);
    }

    #[test]
    fn fused_request_keeps_the_earlier_expiry_and_fifo_place() {
        let mut s = sched(SchedPolicy::Noop);
        s.submit(rd(200, 8), 0).unwrap(); // oldest
        s.submit(rd(50, 8), MS).unwrap();
        s.submit(rd(208, 8), 2 * MS).unwrap(); // back-merges into 200
        s.submit(rd(42, 8), 3 * MS).unwrap(); // front-merges into 50
                                              // NOOP serves arrival order: 200 first (it arrived first), then 42.
        assert_eq!(drain(&mut s, 4 * MS), vec![(200, 16, false), (42, 16, false)]);
    }

    #[test]
    fn merges_never_cross_directions_or_the_size_limit_and_large_bios_split() {
        let mut s = sched(SchedPolicy::Deadline);
        s.submit(rd(0, 8), 0).unwrap();
        assert_eq!(s.submit(wr(8, 8), 0).unwrap().created, 1);
        let r = s.submit(rd(1000, 600), 0).unwrap();
        assert_eq!(r.created, 3);
        assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(0, 8), (1000, 256), (1256, 256), (1512, 88)]);
        assert_eq!(s.submit(rd(1004, 8), 0), Err(SchedError::Overlap));
        assert_eq!(s.submit(rd(0, 0), 0), Err(SchedError::Empty));
    }

    #[test]
    fn deadline_sweeps_upward_in_batches_and_wraps_one_way() {
        let mut s = sched(SchedPolicy::Deadline);
        for lbn in [500, 100, 900, 300] {
            s.submit(rd(lbn, 8), 0).unwrap();
        }
        // First pick: no "next", reads, not expired -> lowest start; then upward.
        let d = s.dispatch(0).unwrap();
        assert_eq!(d.io.lbn, 100);
        s.complete(d.id).unwrap();
        s.submit(rd(50, 8), 0).unwrap(); // behind the head: waits for the wrap
        assert_eq!(drain(&mut s, 0), vec![(300, 8, false), (500, 8, false), (900, 8, false), (50, 8, false)]);
    }

    #[test]
    fn deadline_serves_an_expired_read_out_of_lbn_order() {
        let mut s = sched(SchedPolicy::Deadline);
        s.submit(rd(5000, 8), 0).unwrap(); // expires at 500 ms
        s.submit(rd(100, 8), 0).unwrap();
        let d = s.dispatch(0).unwrap();
        assert_eq!(d.io.lbn, 100);
        s.complete(d.id).unwrap();
        for i in 0..3 {
            s.submit(rd(200 + i * 100, 8), 600 * MS).unwrap();
        }
        // At 600 ms the "next" request (200) does not continue the last one (108), so the batch ends;
        // the new batch starts with the expired FIFO head 5000.
        let d = s.dispatch(600 * MS).unwrap();
        assert_eq!(d.io.lbn, 5000);
        assert_eq!(s.stats().expired, 1);
        s.complete(d.id).unwrap();
        // After it, "next" is empty above 5000: wrap to the lowest.
        assert_eq!(drain(&mut s, 600 * MS), vec![(200, 8, false), (300, 8, false), (400, 8, false)]);
    }

    #[test]
    fn deadline_batches_reads_then_lets_starved_writes_in() {
        // fifo_batch 16 with contiguous requests: a batch of 16, then direction choice.
        let mut s =
            IoScheduler::new(SchedParams { batch_ends_on_gap: false, ..SchedParams::default() }, 1, "s").unwrap();
        s.submit(wr(1_000_000, 8), 0).unwrap();
        for i in 0..40u64 {
            s.submit(rd(i * 1000, 8), 0).unwrap();
        }
        let order = drain(&mut s, 0);
        // Linux 2.6.12 semantics: the first direction choice (starved 0 -> 1) starts a batch of 16
        // reads; after it every dispatch is a direction choice (`batching` is only reset by a new
        // sweep or an expiry), so read 17 (starved 1 -> 2) precedes the write (starved 2 >= 2).
        let w = order.iter().position(|o| o.2).unwrap();
        assert_eq!(w, 17, "{order:?}");
        assert_eq!(order.len(), 41);
    }

    #[test]
    fn deadline_in_2612_mode_ends_a_batch_on_a_gap() {
        let mut s = sched(SchedPolicy::Deadline);
        s.submit(wr(1_000_000, 8), 0).unwrap();
        for i in 0..5u64 {
            s.submit(rd(i * 1000, 8), 0).unwrap();
        }
        // Every read leaves a gap, so every dispatch is a new batch and a direction choice: R, R, W.
        let order = drain(&mut s, 0);
        assert_eq!(order.iter().position(|o| o.2), Some(2), "{order:?}");
    }

    #[test]
    fn clook_sweeps_up_across_directions_and_jumps_back() {
        let mut s = sched(SchedPolicy::Clook);
        s.submit(rd(700, 8), 0).unwrap();
        let d = s.dispatch(0).unwrap(); // head now at 708
        s.complete(d.id).unwrap();
        for b in [rd(100, 8), wr(800, 8), rd(750, 8), wr(300, 8), rd(990, 8)] {
            s.submit(b, 0).unwrap();
        }
        assert_eq!(
            drain(&mut s, 0),
            vec![(750, 8, false), (800, 8, true), (990, 8, false), (100, 8, false), (300, 8, true)]
        );
    }

    #[test]
    fn queue_depth_and_request_table_limit_dispatch_and_submission() {
        let mut s = IoScheduler::new(SchedParams { nr_requests: 2, ..SchedParams::default() }, 1, "s").unwrap();
        s.submit(rd(0, 8), 0).unwrap();
        s.submit(rd(100, 8), 0).unwrap();
        assert_eq!(s.submit(rd(200, 8), 0), Err(SchedError::Full));
        assert!(!s.has_room(false));
        // A merge needs no new request.
        assert_eq!(s.submit(rd(8, 8), 0).unwrap().back_merges, 1);
        let d = s.dispatch(0).unwrap();
        assert!(s.dispatch(0).is_none(), "qdepth 1");
        // Dispatched but not completed still counts against nr_requests.
        assert_eq!(s.submit(rd(200, 8), 0), Err(SchedError::Full));
        s.complete(d.id).unwrap();
        assert_eq!(s.complete(d.id), Err(SchedError::NotDispatched(d.id)));
        assert!(s.submit(rd(200, 8), 0).is_ok());
        assert_eq!(s.stats().full, 2);
    }

    #[test]
    fn linux_plugging_holds_async_work_until_threshold_timer_or_sync() {
        let p = SchedParams { plugging: Plugging::Linux, ..SchedParams::default() };
        let mut s = IoScheduler::new(p.clone(), 1, "s").unwrap();
        let pf = |lbn| Bio { lbn, sectors: 8, write: false, sync: false, tag: 0 };
        s.submit(pf(0), 0).unwrap();
        assert!(s.is_plugged());
        assert_eq!(s.next_wakeup(), Some(3 * MS));
        assert!(s.dispatch(MS).is_none());
        assert!(s.dispatch(3 * MS).is_some());
        assert_eq!(s.stats().unplug_timer, 1);
        // Threshold: 4 queued requests unplug at once.
        let mut s = IoScheduler::new(p.clone(), 1, "s").unwrap();
        for i in 0..4 {
            s.submit(pf(i * 100), 0).unwrap();
        }
        assert!(!s.is_plugged());
        assert_eq!(s.stats().unplug_thresh, 1);
        // A sync (demand) bio unplugs immediately.
        let mut s = IoScheduler::new(p, 1, "s").unwrap();
        s.submit(pf(0), 0).unwrap();
        s.submit(rd(500, 8), 0).unwrap();
        assert!(!s.is_plugged() && s.next_wakeup().is_none());
        assert!(s.dispatch(0).is_some());
        // Instant plugging never holds anything.
        let mut s = sched(SchedPolicy::Deadline);
        s.submit(pf(0), 0).unwrap();
        assert!(s.dispatch(0).is_some());
    }

    #[test]
    fn dispatch_classes_and_waits_are_counted() {
        let mut s = sched(SchedPolicy::Noop);
        s.submit(rd(0, 8), 0).unwrap();
        s.submit(Bio { lbn: 8, sectors: 8, write: false, sync: false, tag: 9 }, 0).unwrap();
        s.submit(Bio { lbn: 100, sectors: 8, write: false, sync: false, tag: 9 }, 0).unwrap();
        let d = s.dispatch(2 * MS).unwrap();
        assert!(d.sync && d.has_async);
        s.complete(d.id).unwrap();
        let d = s.dispatch(5 * MS).unwrap();
        assert!(!d.sync);
        let st = s.stats();
        assert_eq!((st.dispatched_mixed, st.dispatched_async, st.sectors), (1, 1, 24));
        assert_eq!(st.queue_wait_ns, 7 * MS);
    }

    #[test]
    fn bad_parameters_name_the_key() {
        let e = IoScheduler::new(SchedParams { fifo_batch: 0, ..SchedParams::default() }, 1, "sched").unwrap_err();
        assert_eq!(e.path, "sched.fifo_batch");
        let e = serde_json::from_value::<SchedParams>(serde_json::json!({"policy": "cfq"})).unwrap_err();
        assert!(e.to_string().contains("cfq"));
    }
}
