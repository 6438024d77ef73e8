//! Serving a job at a level: look its blocks up, attach it to the reads it waits for (its own fetches and
//! older ones in flight), forward its fetches, and wake the jobs whose last awaited block arrived.

use super::{internal, Engine, Ev, TimedObserver, DONE};
use crate::config::Replay;
use crate::engine::inflight::{Job, JobKind, NIL};
use crate::engine::SourceError;
use crate::prefetch::Outcome;
use crate::request::{Op, Request};

impl<O: TimedObserver + ?Sized> Engine<'_, O> {
    /// Serve job `job` (an application request at level 0, or a fetch of level `k - 1`) at level `k`:
    /// look its blocks up, attach it to the reads it must wait for, and forward the new fetches.
    pub(super) fn serve(&mut self, k: usize, job: u32, now: u64) -> Result<(), SourceError> {
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
        // below when it arrives (a completion: with zero latency, before any other access); those it
        // evicted while reading them wait for their read's arrival.
        self.send_demotions(k, j.client, now);
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
            self.demand_waits();
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
                self.forward(k, g, now);
            }
        }
        if waiting == 0 {
            self.ready.push_back(job);
        }
        Ok(())
    }

    /// Jobs whose last awaited block is ready: finish them.
    pub(super) fn process_ready(&mut self, now: u64) -> Result<(), SourceError> {
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
                        self.reply(k, j, job.len, now);
                    }
                }
            }
        }
        Ok(())
    }

    /// The blocks of fetch `g` arrive at its level: make them ready and wake its waiters.
    pub(super) fn arrive(&mut self, g: u32, now: u64) {
        let f = self.fl.jobs[g];
        let k = usize::from(f.level);
        self.h.levels[k].complete(f.first, f.len, g);
        self.h.log_level(k, now);
        if f.held_demotions != NIL {
            self.send_held_demotions(k, g, now);
        }
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

    pub(super) fn app_done(&mut self, j: u32, now: u64) -> Result<(), SourceError> {
        let job = self.fl.jobs[j];
        self.fl.jobs.release(j);
        self.outstanding_apps -= 1;
        self.stats.last_app_done = self.stats.last_app_done.max(now);
        self.obs.completed(job.index, now);
        if job.measured {
            self.stats.record_response(job.client, job.write, now - job.t_origin);
        }
        match self.s.replay {
            Replay::Closed => {
                if job.blocking {
                    self.replay.slot_free(&mut self.rd, job.key, now)?;
                }
            }
            Replay::Open => {
                // The arrival waiting for admission is issued now, in the class of the trace's arrivals:
                // after what this instant still holds that takes no time (DEMOTE blocks held for the read
                // that just arrived, requests arriving at levels), as an arrival at this instant would be.
                if let Some(id) = self.replay.blocked.take() {
                    let c = self.class_arrival();
                    self.q.schedule(now, c, Ev::Issue(id));
                }
            }
        }
        Ok(())
    }
}
