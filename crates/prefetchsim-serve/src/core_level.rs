//! The one file that talks to `prefetchsim-core`: the server's cache decisions are those of a
//! [`Hierarchy`] built from the same config the simulator reads, driven request by request exactly as the
//! instant engine drives it ([`instant::serve`]), so a recorded trace replayed in the instant engine makes
//! the same decisions. The rest of the crate sees blocks only: which ranges the last level reads from the
//! backing store, which blocks some cache let go, and whether a block is resident anywhere.
//!
//! The level's public calls say what is resident; the per-block event log (`docs/events.md`) says which
//! blocks just left a cache, so that the server drops their data when no level holds them any more.

use std::sync::{Arc, Mutex};

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{instant, Hierarchy};
use prefetchsim_core::eventlog::{Event, EventKind, EventSink};
use prefetchsim_core::request::{Fetch, Op, Request};
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
}

impl CoreLevel {
    /// Build from the canonical JSON of a config (what the Python CLI makes of a TOML file). A size given
    /// as a share of the footprint is a share of the export's `export_blocks`.
    pub fn build(config_json: &str, block_size: u64, export_blocks: u64) -> Result<Self, String> {
        let v: Value = serde_json::from_str(config_json).map_err(|e| format!("config: not valid JSON: {e}"))?;
        let cfg = HierarchyConfig::from_json(v).map_err(|e| e.to_string())?;
        let mut h = Hierarchy::build(&cfg, block_size, Some(export_blocks)).map_err(|e| e.to_string())?;
        if h.levels.iter_mut().any(|l| l.future().is_some()) {
            return Err("config: a policy that knows the future (opt) cannot serve live requests".into());
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        h.set_event_sink(Box::new(SharedSink(Arc::clone(&events))));
        let scratch = (0..h.levels.len()).map(|_| Vec::with_capacity(64)).collect();
        Ok(Self { h, scratch, events, requests: 0, blocks: 0 })
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

    /// Whether some level holds `block`.
    #[must_use]
    pub fn resident(&self, block: u64) -> bool {
        self.h.levels.iter().any(|l| l.contains(block))
    }

    /// The most blocks the levels hold together (the data the server may keep in memory).
    #[must_use]
    pub fn capacity_blocks(&self) -> u64 {
        self.h.levels.iter().map(|l| l.capacity() as u64).sum()
    }

    /// End of the run: the levels' end-of-run accounting, then the counters in the result schema of the
    /// simulator (`requests`, `blocks`, `levels`: one flat record per level).
    pub fn finish(&mut self) -> Value {
        for l in &mut self.h.levels {
            l.finish();
        }
        if let Some(sink) = self.h.take_event_sink() {
            let _ = sink.finish();
        }
        let levels: Vec<Value> = self
            .h
            .reports()
            .iter()
            .map(|r| {
                Value::Object(r.record().into_iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect())
            })
            .collect();
        serde_json::json!({ "requests": self.requests, "blocks": self.blocks, "levels": levels })
    }
}

/// A device model of the core (`hdd7200`, `cheetah9lp`, ...) that times the backing reads
/// (`--emulate`).
pub struct DeviceModel {
    dev: Box<dyn prefetchsim_core::device::Device>,
    /// The device's capacity in bytes.
    pub capacity_bytes: u64,
}

impl DeviceModel {
    /// Build the preset `name` (with the core's defaults).
    pub fn build(name: &str) -> Result<Self, String> {
        let spec = serde_json::from_value(Value::String(name.to_string())).map_err(|e| e.to_string())?;
        let dev = prefetchsim_core::device::build("emulate", &spec, 1).map_err(|e| e.to_string())?;
        let capacity_bytes = dev.capacity().saturating_mul(512);
        Ok(Self { dev, capacity_bytes })
    }

    /// Dispatch a read of `len` bytes at `offset` at time `now_ns` (nondecreasing across calls); returns
    /// when the device starts and completes it, in the same clock, and whether it moved the arm. A busy device queues it (first come
    /// first served).
    pub fn read(&mut self, offset: u64, len: u64, now_ns: u64) -> Result<(u64, u64, bool), String> {
        let sectors = u32::try_from(len.div_ceil(512).max(1)).unwrap_or(u32::MAX);
        let io = prefetchsim_core::device::DiskIo::read(offset / 512, sectors);
        self.dev.start(&io, now_ns).map(|s| (s.start, s.done, s.seek_cyl > 0)).map_err(|e| e.to_string())
    }
}
