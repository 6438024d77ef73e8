//! The one file that talks to `prefetchsim-core`: the server's cache decisions are those of a
//! [`Hierarchy`] built from the same config the simulator reads, driven request by request exactly as the
//! instant engine drives it ([`instant::serve`]), so a recorded trace replayed in the instant engine makes
//! the same decisions. The rest of the crate sees blocks only: which ranges the last level reads from the
//! backing store, which blocks some cache let go, and whether a block is resident anywhere.
//!
//! The level's public calls say what is resident; the per-block event log (`docs/events.md`) says which
//! blocks just left a cache, so that the server drops their data when no level holds them any more.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{instant, Hierarchy};
use prefetchsim_core::eventlog::{Event, EventKind, EventSink};
use prefetchsim_core::metrics::{LevelReport, Value as RecValue};
use prefetchsim_core::request::{Fetch, Op, Request};
use prefetchsim_core::TraceFacts;
use serde_json::Value;

/// Collects the levels' events for [`CoreLevel`] (shared with it; the engines own the sink).
struct SharedSink(Arc<Mutex<Vec<Event>>>);

impl EventSink for SharedSink {
    fn record(&mut self, e: &Event) {
        if let Ok(mut v) = self.0.lock() {
            v.push(*e);
        }
    }
    fn finish(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

/// One request of a client, in blocks.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// The connection number.
    pub client: u32,
    /// First block.
    pub first: u64,
    /// Blocks.
    pub len: u32,
    /// A write (else a read).
    pub write: bool,
    /// Nanoseconds since the server started.
    pub time_ns: u64,
}

/// A hierarchy of prefetchsim levels deciding what the server caches and prefetches.
pub struct CoreLevel {
    h: Hierarchy,
    scratch: Vec<Vec<Fetch>>,
    events: Arc<Mutex<Vec<Event>>>,
    requests: u64,
    blocks: u64,
    /// Per level: `per_client = true` (one cache per client, made at the client's first request).
    per_client: Vec<bool>,
    /// Clients whose connection ended. Their per-client caches are retired (freed, counters kept; a
    /// client id is never reused, so no decision changes) or, above a DEMOTE level, stay untouched; either
    /// way they no longer count as holding a block: the server frees their data.
    closed: HashSet<u32>,
}

impl CoreLevel {
    /// Build from the canonical JSON of a config (what the Python CLI makes of a TOML file). A size given
    /// as a share of the footprint is a share of the export's `export_blocks`.
    pub fn build(config_json: &str, block_size: u64, export_blocks: u64) -> Result<Self, String> {
        let v: Value = serde_json::from_str(config_json).map_err(|e| format!("config: not valid JSON: {e}"))?;
        let cfg = HierarchyConfig::from_json(v).map_err(|e| e.to_string())?;
        // NBD requests carry no stream (each is stream 0, below): nothing to declare, so stream 0 means "no
        // stream id" (Linux read-ahead detects streams under its default key; StreamLRU's blocks are random).
        let mut h = Hierarchy::build_for(&cfg, block_size, Some(export_blocks), TraceFacts::UNKNOWN)
            .map_err(|e| e.to_string())?;
        if h.levels.iter_mut().any(|l| l.future().is_some()) {
            return Err("config: a policy that knows the future (opt) cannot serve live requests".into());
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        h.set_event_sink(Box::new(SharedSink(Arc::clone(&events))));
        let scratch = (0..h.levels.len()).map(|_| Vec::with_capacity(64)).collect();
        let per_client = (0..h.levels.len()).map(|i| cfg.level.get(i).is_some_and(|l| l.per_client)).collect();
        Ok(Self { h, scratch, events, requests: 0, blocks: 0, per_client, closed: HashSet::new() })
    }

    /// Serve one client request through the levels. Appends to `reads` the ranges `(first, len)` the last
    /// level fetches from the backing store (demand and prefetch), and to `left` the blocks some cache
    /// evicted or removed during the access.
    pub fn access(&mut self, a: &Access, reads: &mut Vec<(u64, u32)>, left: &mut Vec<u64>) {
        let op = if a.write { Op::Write } else { Op::Read };
        let req = Request { time_ns: a.time_ns, first: a.first, len: a.len, op, stream: 0, client: a.client };
        instant::serve(&mut self.h, &mut self.scratch, &req);
        self.h.log_all(self.requests);
        self.requests += 1;
        self.blocks += u64::from(a.len);
        if let Some(last) = self.scratch.last() {
            reads.extend(last.iter().map(|f| (f.first, f.len)));
        }
        if let Ok(mut evs) = self.events.lock() {
            for e in evs.drain(..) {
                if matches!(
                    e.ev.kind,
                    EventKind::Evict | EventKind::EvictUnused | EventKind::Invalidated | EventKind::Removed
                ) {
                    left.push(e.ev.block);
                }
            }
        }
    }

    /// Whether some level holds `block` (in a per-client level: the cache of a client still connected).
    #[must_use]
    pub fn resident(&self, block: u64) -> bool {
        self.h.levels.iter().zip(&self.per_client).any(|(l, &per_client)| {
            if per_client && !self.closed.is_empty() {
                l.instances().iter().any(|(client, c)| !self.closed.contains(client) && c.contains(block))
            } else {
                l.contains(block)
            }
        })
    }

    /// The most blocks the levels hold together (the data the server may keep in memory): every cache of
    /// a level counts, the K of `instances = K` and, for `per_client`, one per connected client (at
    /// least one: the memory check at start counts the first client's).
    #[must_use]
    pub fn capacity_blocks(&self) -> u64 {
        self.h
            .levels
            .iter()
            .zip(&self.per_client)
            .map(|(l, &per_client)| {
                let caches = l.instances().iter().filter(|(k, _)| !per_client || !self.closed.contains(k)).count();
                (l.capacity() as u64).saturating_mul(caches.max(1) as u64)
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Whether some level is `per_client` (closing a connection then frees data).
    #[must_use]
    pub fn has_per_client(&self) -> bool {
        self.per_client.iter().any(|&p| p)
    }

    /// `client`'s connection ended: its per-client caches no longer hold data (see [`CoreLevel::resident`]).
    /// Each is freed, policy and prefetcher state included, keeping its counters
    /// ([`prefetchsim_core::level::Instances::retire_client`]), unless DEMOTE lands the blocks of that
    /// level below: a demoted block is dropped when the level above holds it, in any client's cache, so
    /// the closed client's cache still takes part in that decision and stays (data freed, metadata kept).
    pub fn client_closed(&mut self, client: u32) {
        if !self.has_per_client() {
            return;
        }
        self.closed.insert(client);
        for k in 0..self.h.levels.len() {
            if self.per_client[k] && !self.h.demotes_below(k) {
                self.h.levels[k].retire_client(client);
            }
        }
    }

    /// End of the run: the levels' end-of-run accounting, then the counters in the result schema of the
    /// simulator (`requests`, `blocks`, `levels`: one flat record per level; and, when some level is
    /// several caches, `instances`: one record per cache, as a simulation's result has them, so that a
    /// live per-client count needs no replay of the recorded trace).
    pub fn finish(&mut self) -> Value {
        for l in &mut self.h.levels {
            l.finish();
        }
        if let Some(sink) = self.h.take_event_sink() {
            let _ = sink.finish();
        }
        let reports = self.h.reports();
        let levels: Vec<Value> = reports.iter().map(|r| record_json(r.record())).collect();
        let mut out = serde_json::json!({ "requests": self.requests, "blocks": self.blocks, "levels": levels });
        let instances: Vec<Value> = reports.iter().flat_map(LevelReport::instance_records).map(record_json).collect();
        if !instances.is_empty() {
            out["instances"] = Value::Array(instances);
        }
        out
    }
}

/// A flat record of the core's result schema as a JSON object, keys in schema order.
fn record_json(rec: Vec<(&'static str, RecValue)>) -> Value {
    Value::Object(rec.into_iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect())
}

/// A disk of the core's device models behind the core's I/O scheduler (`--emulate`): the timed engine's
/// device path, driven in wall-clock time. Reads are queued as bios (demand reads synchronous, prefetches
/// asynchronous), merged and ordered by the scheduler (DEADLINE with Linux 2.6.12 parameters, the timed
/// engine's default) and served by the device model one dispatch at a time.
pub struct EmulatedDisk {
    sched: prefetchsim_core::device::IoScheduler,
    dev: Box<dyn prefetchsim_core::device::Device>,
    backlog: std::collections::VecDeque<prefetchsim_core::device::iosched::Bio>,
    /// The device's capacity in bytes.
    pub capacity_bytes: u64,
    requests: u64,
    seeks: u64,
    service_ns: u64,
    /// The latest time handed to the device (its calls must not go back in time).
    clock: u64,
}

/// A request the device started: complete it with [`EmulatedDisk::complete`] at `done_ns`.
#[derive(Clone, Copy, Debug)]
pub struct Started {
    /// The scheduler's request id.
    pub id: u32,
    /// Completion time (ns since the server started).
    pub done_ns: u64,
}

impl EmulatedDisk {
    /// The preset `name` with the core's defaults, and the default scheduler.
    pub fn build(name: &str) -> Result<Self, String> {
        let spec = serde_json::from_value(Value::String(name.to_string())).map_err(|e| e.to_string())?;
        let dev = prefetchsim_core::device::build("emulate", &spec, 1).map_err(|e| e.to_string())?;
        let sched = prefetchsim_core::device::IoScheduler::new(Default::default(), dev.channels(), "emulate")
            .map_err(|e| e.to_string())?;
        let capacity_bytes = dev.capacity().saturating_mul(512);
        Ok(Self {
            sched,
            dev,
            backlog: std::collections::VecDeque::new(),
            capacity_bytes,
            requests: 0,
            seeks: 0,
            service_ns: 0,
            clock: 0,
        })
    }

    /// Queue a read of `len` bytes at `offset` under `tag`, cut into chunks the scheduler accepts; returns
    /// the number of chunks (each completes the tag once).
    pub fn submit(&mut self, tag: u64, offset: u64, len: u64, sync: bool, now: u64) -> u32 {
        use prefetchsim_core::device::iosched::Bio;
        let max = u64::from(self.sched.params().max_sectors.max(1));
        let (mut lbn, end) = (offset / 512, (offset + len.max(1)).div_ceil(512));
        let mut chunks = 0;
        while lbn < end {
            let sectors = (end - lbn).min(max) as u32;
            self.push(Bio { lbn, sectors, write: false, sync, tag }, now);
            lbn += u64::from(sectors);
            chunks += 1;
        }
        chunks
    }

    fn push(&mut self, bio: prefetchsim_core::device::iosched::Bio, now: u64) {
        if !self.backlog.is_empty() || self.sched.submit(bio, now).is_err() {
            // The request table is full, or the bio overlaps a queued one: retry after a completion.
            self.backlog.push_back(bio);
        }
    }

    /// Dispatch what the scheduler hands out at `now`. After a completion, `now` is the completion's
    /// emulated time (not the later moment its timer fired), so the disk does not idle for the timer's
    /// lateness; a request that arrived later starts at its arrival.
    pub fn poll(&mut self, now: u64) -> Result<Vec<Started>, String> {
        let mut out = Vec::new();
        while let Some(d) = self.sched.dispatch(now) {
            self.clock = self.clock.max(now).max(d.arrived);
            let s = self.dev.start(&d.io, self.clock).map_err(|e| e.to_string())?;
            self.requests += 1;
            self.seeks += u64::from(s.seek_cyl > 0);
            self.service_ns += s.done - s.start;
            out.push(Started { id: d.id, done_ns: s.done });
        }
        Ok(out)
    }

    /// Request `id` completed: the tags it carried (once per chunk), after which queued bios are
    /// resubmitted.
    pub fn complete(&mut self, id: u32, now: u64) -> Result<Vec<u64>, String> {
        let tags = self.sched.tags(id).to_vec();
        self.sched.complete(id).map_err(|e| e.to_string())?;
        let waiting: Vec<_> = self.backlog.drain(..).collect();
        for bio in waiting {
            self.push(bio, now);
        }
        Ok(tags)
    }

    /// When the scheduler wants a poll even if nothing completes (a plugged queue's deadline).
    #[must_use]
    pub fn wakeup(&self) -> Option<u64> {
        self.sched.next_wakeup()
    }

    /// What the disk did: requests, merges, seeks, mean service.
    #[must_use]
    pub fn stats(&self) -> Value {
        let st = self.sched.stats();
        serde_json::json!({
            "device_requests": self.requests,
            "bios": st.bios,
            "merges": st.back_merges + st.front_merges,
            "seeks": self.seeks,
            "service_mean_ms": if self.requests == 0 { 0.0 } else { self.service_ns as f64 / self.requests as f64 / 1e6 },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CoreLevel;

    /// The memory check counts every cache a level makes: `instances = 3` is three caches of the size.
    #[test]
    fn capacity_counts_every_instance() {
        let one = CoreLevel::build(r#"{"level": [{"size": 64, "policy": "lru"}]}"#, 4096, 1000).unwrap();
        let three =
            CoreLevel::build(r#"{"level": [{"size": 64, "policy": "lru", "instances": 3}]}"#, 4096, 1000).unwrap();
        assert_eq!((one.capacity_blocks(), three.capacity_blocks()), (64, 192));
    }
}
