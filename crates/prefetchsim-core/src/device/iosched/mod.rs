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

mod io;
mod params;
#[cfg(test)]
mod tests;

pub use io::{Bio, Dispatch, ReqId, SchedError, SchedStats, Submitted};
pub use params::{Plugging, SchedParams, SchedPolicy};

use super::{ms_to_ns, DiskIo};
use crate::component::ConfigError;
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

    /// A task now waits synchronously for a read in flight (a demand joined it, or found its prefetch
    /// late): a plugged queue is unplugged at once, as Linux kicks the queue when a task waits on a page
    /// (iosched.md §3). Returns whether it was plugged: the caller must then call
    /// [`IoScheduler::dispatch`] now, or the queue sits unplugged with the device idle until something
    /// else happens. Nothing happens to an unplugged queue.
    pub fn unplug_sync(&mut self) -> bool {
        let was = std::mem::replace(&mut self.plugged, false);
        if was {
            self.stats.unplug_sync += 1;
        }
        was
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
