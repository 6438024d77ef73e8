//! The bottom of the chain: fetches of the last level become bios for the I/O scheduler, the scheduler's
//! requests go to the device, and with `prefetch_io = "apart"` prefetch reads wait at a gate until the
//! access's reads of requested blocks have arrived. A block another read is already bringing is waited
//! for, not read twice (the orphan reads of [`crate::engine::inflight`]).

use super::{internal, Engine, Ev, TimedObserver, DONE};
use crate::component::ConfigError;
use crate::device::iosched::{Bio, SchedError};
use std::collections::VecDeque;

use crate::device::{Device, IoScheduler};
use crate::engine::inflight::{Job, Slab, NIL};
use crate::engine::SourceError;
use crate::request::device_block;

/// A bio at the scheduler: blocks of one fetch.
#[derive(Clone, Copy, Debug)]
pub(super) struct BioRec {
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
pub(super) struct Gate {
    /// Reads of requested blocks not yet arrived.
    remaining: u32,
    /// The access kept every block it fetched (see [`Engine::read`]).
    all_kept: bool,
    /// The held prefetch fetches.
    held: Vec<u32>,
}

/// The scheduler and the device under the last level, with the bios in flight between them.
pub(super) struct Io {
    pub(super) sched: IoScheduler,
    pub(super) dev: Box<dyn Device>,
    /// Sectors per block.
    pub(super) spb: u64,
    /// Blocks per bio.
    pub(super) bio_blocks: u32,
    pub(super) max_sectors: u32,
    pub(super) bios: Slab<BioRec>,
    /// Per scheduler request at the device: when the device serves it (start, done).
    pub(super) served: Vec<Option<(u64, u64)>>,
    /// Prefetch reads held until an access's demand reads arrive.
    pub(super) gates: Slab<Gate>,
    /// Per job index: the gate its arrival counts down (`NIL`: none).
    pub(super) gate_of: Vec<u32>,
    /// Bios the scheduler had no room for, in submission order; also a bio of one volume over the
    /// sectors of another volume's queued request (volumes share the device's LBA range), until it ends.
    pub(super) blocked: VecDeque<Bio>,
    /// A bio of a volume after the first was submitted: overlapping sectors can then be two volumes'.
    pub(super) volumes: bool,
    pub(super) unplug_gen: u32,
    pub(super) unplug_armed: Option<u64>,
    /// The scheduler's queue changed since the last [`Engine::kick`].
    pub(super) dirty: bool,
}

impl Io {
    /// `sched` over `dev`, blocks of `spb` sectors, bios of at most `bio_blocks` blocks (`max_sectors`).
    pub(super) fn new(sched: IoScheduler, dev: Box<dyn Device>, spb: u64, bio_blocks: u32, max_sectors: u32) -> Self {
        Self {
            sched,
            dev,
            spb,
            bio_blocks,
            max_sectors,
            bios: Slab::default(),
            served: Vec::new(),
            gates: Slab::default(),
            gate_of: Vec::new(),
            blocked: VecDeque::new(),
            volumes: false,
            unplug_gen: 0,
            unplug_armed: None,
            dirty: false,
        }
    }
}

impl Io {
    /// Whether the unplug timer of generation `gen` due at `t` still has its plug: the newest timer, and
    /// the queue is plugged until `t`. A plug gone (a sync bio, `unplug_thresh` or a waiting task unplugged
    /// it) or replaced by a later one leaves a stale timer, which is no event of the run.
    pub(super) fn unplug_timer_live(&self, gen: u32, t: u64) -> bool {
        gen == self.unplug_gen && self.sched.next_wakeup() == Some(t)
    }
}

impl<O: TimedObserver + ?Sized> Engine<'_, O> {
    /// `prefetch_io = "apart"`: read this access's fetches (`new_ids`) of the requested blocks `first ..
    /// first + len` now and hold the others (prefetch) at a gate until those reads have arrived.
    pub(super) fn read_apart(&mut self, first: u64, len: u32, all_kept: bool, now: u64) -> Result<(), SourceError> {
        let end = first + u64::from(len);
        let answers = |f: &Job| f.first < end && f.first + u64::from(f.len) > first;
        let demand = self.new_ids.iter().filter(|&&g| answers(&self.fl.jobs[g])).count() as u32;
        let held = self.new_ids.len() as u32 - demand;
        let gate = if demand > 0 && held > 0 {
            self.io.gates.alloc(Gate { remaining: demand, all_kept, held: Vec::with_capacity(held as usize) })
        } else {
            NIL
        };
        for i in 0..self.new_ids.len() {
            let g = self.new_ids[i];
            if gate == NIL {
                self.read(g, all_kept, false, now)?;
            } else if answers(&self.fl.jobs[g]) {
                if self.io.gate_of.len() <= g as usize {
                    self.io.gate_of.resize(g as usize + 1, NIL);
                }
                self.io.gate_of[g as usize] = gate;
                self.read(g, all_kept, false, now)?;
            } else {
                self.io.gates[gate].held.push(g);
            }
        }
        Ok(())
    }

    /// A read of requested blocks (`g`) arrived: when it was its access's last, submit the held prefetch.
    pub(super) fn pass_gate(&mut self, g: u32, now: u64) -> Result<(), SourceError> {
        let Some(gate) = self.io.gate_of.get_mut(g as usize).map(|x| std::mem::replace(x, NIL)) else {
            return Ok(());
        };
        if gate == NIL {
            return Ok(());
        }
        let gt = &mut self.io.gates[gate];
        gt.remaining -= 1;
        if gt.remaining > 0 {
            return Ok(());
        }
        let held = std::mem::take(&mut gt.held);
        let all_kept = gt.all_kept;
        self.io.gates.release(gate);
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
    /// by it as orphans) have waiters on `g`; waiting could tie two held reads in a cycle. Over a shared
    /// bottom (several caches over one device) a block another cache is reading is waited for: that
    /// cache's read was submitted before, so it waits on nothing of `g`'s.
    pub(super) fn read(&mut self, g: u32, all_kept: bool, held: bool, now: u64) -> Result<(), SourceError> {
        let f = self.fl.jobs[g];
        let cap = self.io.dev.capacity();
        // Checked: a fetch ending at block 2^64 - 1 (a plugin's prefetch) wrapped to 0, passed this test
        // and was counted as issued but never read.
        // On the device a block lies at its number inside its volume (`device_block`: the volumes of a
        // trace over one LBA range).
        let fits = device_block(f.first)
            .checked_add(u64::from(f.len))
            .is_some_and(|e| e.checked_mul(self.io.spb).is_some_and(|s| s <= cap));
        let end = f.first.checked_add(u64::from(f.len)).filter(|_| fits);
        let Some(end) = end else {
            // The block as the trace numbers it, and where it would lie when that is inside a volume.
            let last = f.first.saturating_add(u64::from(f.len).saturating_sub(1));
            let on_device = device_block(f.first).saturating_add(u64::from(f.len).saturating_sub(1));
            let inside = if on_device == last { String::new() } else { format!("block {on_device} of its volume; ") };
            return Err(ConfigError::new(
                "device",
                format!(
                    "block {last} ({inside}{} sectors of 512 B each) lies past the end of device '{}' ({cap} \
                     sectors); choose a larger device or a trace that fits",
                    self.io.spb,
                    self.io.dev.name()
                ),
            )
            .into());
        };
        if all_kept && self.fl.orphans.is_empty() && !self.shared_bottom {
            // (A held read with `all_kept`: its blocks stayed pinned under it, nobody read them since.)
            // The usual case: nothing to deduplicate.
            let n = self.submit_run(g, f.first, end, f.demand_len, now)?;
            self.fl.jobs[g].outstanding = n;
            return Ok(());
        }
        let k = self.n - 1;
        let demand_end = f.first + u64::from(f.demand_len);
        let mut demand_waits = false;
        let mut outstanding = 0u32;
        let mut run: Option<u64> = None;
        let (mut cur, mut cnt) = (NIL, 0u32);
        for b in f.first..=end {
            // NIL: end of the fetch; Some(o): being read by orphan read o; None: read it.
            let old = if b == end {
                Some(NIL)
            } else if let Some(&o) = self.fl.orphans.get(&b) {
                // A held read of the one last-level cache skips a block another read brings: nobody waits
                // on it for that block. Over a shared bottom the other read is another cache's, and this
                // cache's block waits on `g`: wait for `o` (already submitted, so no cycle), or the block
                // would arrive before the device has read it.
                Some(if held && !self.shared_bottom { NIL } else { o })
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
                    demand_waits |= b < demand_end;
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
        if demand_waits {
            // A demand block waits for another read of it (another cache's, or one its level did not keep).
            self.demand_waits();
        }
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

    /// A demand read starts waiting for a read in flight (a late prefetch, a join, another cache's read):
    /// Linux kicks a plugged queue at once (iosched.md §3), so unplug it and run it after this event.
    /// Unplugging alone left that read queued behind the plug, the device idle, until the unplug timer.
    pub(super) fn demand_waits(&mut self) {
        if self.io.sched.unplug_sync() {
            self.io.dirty = true;
        }
    }

    /// Submit blocks `a .. e` of fetch `g` (whose first `demand_len` blocks from `g.first` are demand) as
    /// bios of at most `max_sectors`; returns the scheduler chunks to wait for.
    pub(super) fn submit_run(&mut self, g: u32, a: u64, e: u64, demand_len: u32, now: u64) -> Result<u32, SourceError> {
        let demand_end = self.fl.jobs[g].first + u64::from(demand_len);
        let mut chunks = 0u32;
        let mut x = a;
        while x < e {
            // One bio per `max_sectors`; a bio holding demand blocks is sync (Linux reads a synchronous
            // read-ahead window as one READ), and the request's class comes from the bios' blocks.
            let y = e.min(x + u64::from(self.io.bio_blocks));
            let len = (y - x) as u32;
            let sectors = u64::from(len) * self.io.spb;
            let sectors = u32::try_from(sectors).map_err(|_| internal("bio too large".into()))?;
            let n_chunks = sectors.div_ceil(self.io.max_sectors);
            let (demand, prefetch) = (x < demand_end, y > demand_end);
            let id = self.io.bios.alloc(BioRec { fetch: g, first: x, len, chunks: n_chunks, demand, prefetch });
            let bio =
                Bio { lbn: device_block(x) * self.io.spb, sectors, write: false, sync: demand, tag: u64::from(id) };
            self.obs.read_start(x, len, now);
            self.stats.dev.bios += 1;
            self.io.dirty = true;
            self.io.volumes |= device_block(x) != x;
            if !self.io.blocked.is_empty() {
                self.io.blocked.push_back(bio);
            } else {
                match self.io.sched.submit(bio, now) {
                    Ok(_) => {}
                    Err(SchedError::Full) => self.io.blocked.push_back(bio),
                    // Two volumes' blocks at the same sectors read at once: the later waits (it was an
                    // internal error).
                    Err(SchedError::Overlap) if self.io.volumes => self.io.blocked.push_back(bio),
                    Err(err) => return Err(internal(format!("scheduler refused a bio: {err}"))),
                }
            }
            chunks += n_chunks;
            x = y;
        }
        Ok(chunks)
    }

    pub(super) fn on_device_done(&mut self, id: u32, now: u64) -> Result<(), SourceError> {
        self.tags.clear();
        self.tags.extend_from_slice(self.io.sched.tags(id));
        self.io.sched.complete(id).map_err(|e| internal(e.to_string()))?;
        if let Some((start, done)) = self.io.served.get_mut(id as usize).and_then(Option::take) {
            self.stats.served(start, done, now);
        }
        self.io.dirty = true;
        for i in 0..self.tags.len() {
            let b = self.tags[i] as u32;
            let rec = &mut self.io.bios[b];
            rec.chunks -= 1;
            let rec = *rec;
            if rec.chunks == 0 {
                self.obs.read_done(rec.first, rec.len, now);
                self.io.bios.release(b);
            }
            let job = &mut self.fl.jobs[rec.fetch];
            job.outstanding -= 1;
            if job.outstanding == 0 {
                self.ready.push_back(rec.fetch);
            }
        }
        while let Some(&bio) = self.io.blocked.front() {
            match self.io.sched.submit(bio, now) {
                Ok(_) => {
                    self.io.blocked.pop_front();
                }
                Err(SchedError::Full) => break,
                Err(SchedError::Overlap) if self.io.volumes => break,
                Err(err) => return Err(internal(format!("scheduler refused a bio: {err}"))),
            }
        }
        Ok(())
    }

    /// Dispatch to the device while it has room; arm the unplug timer; account the queue.
    pub(super) fn kick(&mut self, now: u64) -> Result<(), SourceError> {
        self.io.dirty = false;
        while let Some(d) = self.io.sched.dispatch(now) {
            let s = self.io.dev.start(&d.io, now).map_err(|e| ConfigError::new("device", e.to_string()))?;
            self.obs.device_io(now, s.start, s.done);
            // The class by the blocks the request carries (demand, prefetched or both).
            let (mut dem, mut pf) = (false, false);
            for &t in self.io.sched.tags(d.id) {
                let b = &self.io.bios[t as u32];
                dem |= b.demand;
                pf |= b.prefetch;
            }
            let class = match (dem, pf) {
                (true, false) => 0,
                (false, true) => 1,
                _ => 2,
            };
            let c = &mut self.stats.dev;
            c.requests[class] += 1;
            c.sectors[class] += u64::from(d.io.sectors);
            c.service_ns = c.service_ns.saturating_add(s.done - s.start);
            let i = d.id as usize;
            if self.io.served.len() <= i {
                self.io.served.resize(i + 1, None);
            }
            self.io.served[i] = Some((s.start, s.done));
            self.q.schedule(s.done, DONE, Ev::DeviceDone(d.id));
        }
        // A plugged queue wants a dispatch attempt at its unplug time. When that time has come and the
        // queue is still plugged, the device is busy and its completion will dispatch (and unplug).
        if let Some(w) = self.io.sched.next_wakeup().filter(|&w| w > now) {
            if self.io.unplug_armed != Some(w) {
                self.io.unplug_gen = self.io.unplug_gen.wrapping_add(1);
                self.io.unplug_armed = Some(w);
                self.q.schedule(w.max(now), DONE, Ev::Unplug(self.io.unplug_gen));
            }
        }
        if self.stats.measuring {
            self.stats.queue_length(now, self.io.sched.queued() as u64);
        }
        Ok(())
    }
}
