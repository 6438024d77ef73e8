//! A level made of several independent caches: one per client (`per_client = true`, every client's own
//! L1) or K servers (`instances = K`) picked by client or by stripe.
//!
//! The engines see one [`AnyLevel`] per position in the chain, so a fan-out level routes each call to
//! the instance it concerns and keeps what the engines need to route the calls that carry no request:
//! the instance of the last access (its outcomes, pending tags, evictions and the bottom level's
//! `pinned_tag`, which the timed engine asks right after that access) and, per fetch tag, the instance
//! that pinned the fetch's blocks (its arrival, [`Pinning::complete`]). DEMOTE's evictions come down
//! with the evicting client ([`Demotion::demote_in`]), so they reach that client's server. PFC's hooks
//! ([`Coordination`]) go to the instance of the last access.
//!
//! Routing by stripe sends a whole request to the server of its first block (`first / stripe_blocks`
//! mod K); a request that crosses a stripe-unit boundary is not split, and a server's prefetches stay at
//! that server whatever their stripe. Every instance addresses the same block numbers (one device).

use serde::{Deserialize, Serialize};

use super::{AnyLevel, CacheLevel, Coordination, Demotion, EventLog, Exclusive, Pinning};
use crate::device::DeviceBelow;
use crate::eventlog::LevelEvent;
use crate::forward_level;
use crate::metrics::{InstanceReport, LevelCounters};
use crate::policy::table::{block_map, BlockMap};
use crate::request::{Fetch, Request};

/// A level made of several caches: what reports and the timed engine need to know of them.
pub trait Instances {
    /// The independent caches of this level with their keys (client id or server index), in key order;
    /// empty for a level that is one cache.
    fn instances(&self) -> Vec<(u32, &dyn AnyLevel)>;
    /// Whether the level is several caches that may each read the same block (the timed engine then
    /// makes a read of a block another instance is reading wait for that read).
    fn is_fan_out(&self) -> bool;
    /// Per-instance counters (the level's [`CacheLevel::counters`] are their sum); empty for one cache.
    fn instance_reports(&self) -> Vec<InstanceReport>;
    /// What the level's components want known about the run that is not an error (a model's assumption
    /// the trace broke), for the run's notes ([`crate::metrics::RunResult::notes`]); a level of several
    /// caches says each note once.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// Client `client` will send no more requests (its connection to the live server ended): free its
    /// per-client cache, keeping its counters (finished now) for the reports. Whether it was freed: not
    /// for a level that is one cache, a client without a cache here, or a cache with fetches or events
    /// still pending.
    fn retire_client(&mut self, _client: u32) -> bool {
        false
    }
}

/// How a request picks one of K instances.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// `client mod K`: each client talks to one server.
    #[default]
    Client,
    /// `(first block / stripe_blocks) mod K`: the address space striped over the servers.
    Stripe,
}

/// Which instance serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// One instance per client id, made on its first request.
    PerClient,
    /// K instances, `client mod K`.
    Client(u32),
    /// K instances, by stripe unit of `unit` blocks.
    Stripe(u32, u64),
}

/// Makes a new instance (built from the level's config, which already built once).
pub type Factory = Box<dyn Fn() -> Box<dyn AnyLevel> + Send>;

/// Tag owner meaning "no instance".
const NONE: u32 = u32::MAX;

/// A level of independent cache instances behind one routing rule.
pub struct FanOut {
    routing: Routing,
    make: Factory,
    /// The instances, in creation order.
    inst: Vec<Box<dyn AnyLevel>>,
    /// Per instance: its client id (per-client) or its index.
    keys: Vec<u32>,
    /// Per-client: client id -> instance.
    by_client: BlockMap<u32>,
    /// The instance of the last access.
    last: usize,
    /// Per fetch tag: the instance whose access issued it.
    tag_owner: Vec<u32>,
    /// Sum of the instances' counters (kept by [`CacheLevel::finish`] and [`CacheLevel::reset_counters`]).
    sum: LevelCounters,
    /// The counters of retired per-client caches ([`Instances::retire_client`]): no cache any more, but
    /// still their level's and their own report's.
    retired: Vec<InstanceReport>,
    /// One instance's capacity, timed support and exclusive mode (from a probe instance).
    probe: (usize, bool, Exclusive),
    // Settings every instance gets, including ones made later.
    timed: bool,
    record: bool,
    block_bytes: Option<u64>,
    /// The event log is on.
    log: bool,
    /// With the log on: instances that may hold events not drained yet.
    log_touched: Vec<u32>,
    prefetch_apart: bool,
    /// The device, for instances made later ([`Pinning::set_device`]).
    device: Option<DeviceBelow>,
    /// [`Coordination::set_answer_end`] for the next access, passed to the instance it routes to.
    answer_end: Option<u64>,
}

impl FanOut {
    /// A fan-out level; K-instance routings make their K instances now, per-client makes them on demand.
    #[must_use]
    pub fn new(routing: Routing, make: Factory) -> Self {
        let p = make();
        let probe = (p.capacity(), p.supports_timed(), p.exclusive());
        drop(p);
        let mut f = Self {
            routing,
            make,
            inst: Vec::new(),
            keys: Vec::new(),
            by_client: block_map(16),
            last: 0,
            tag_owner: Vec::new(),
            sum: LevelCounters::default(),
            retired: Vec::new(),
            probe,
            timed: false,
            record: false,
            block_bytes: None,
            log: false,
            log_touched: Vec::new(),
            prefetch_apart: false,
            device: None,
            answer_end: None,
        };
        if let Routing::Client(k) | Routing::Stripe(k, _) = routing {
            for i in 0..k {
                f.add(i);
            }
        }
        f
    }

    fn add(&mut self, key: u32) -> usize {
        let mut l = (self.make)();
        if let Some(b) = self.block_bytes {
            l.set_block_bytes(b);
        }
        l.set_timed(self.timed);
        l.set_prefetch_apart(self.prefetch_apart);
        if let Some(d) = &self.device {
            l.set_device(d);
        }
        l.record_evictions(self.record);
        l.record_events(self.log);
        self.inst.push(l);
        self.keys.push(key);
        self.inst.len() - 1
    }

    /// The instance serving `client`'s request for `block`.
    #[inline]
    fn route(&mut self, client: u32, block: u64) -> usize {
        match self.routing {
            Routing::PerClient => match self.by_client.get(&u64::from(client)) {
                Some(&i) => i as usize,
                None => {
                    let i = self.add(client);
                    self.by_client.insert(u64::from(client), i as u32);
                    i
                }
            },
            Routing::Client(k) => (client % k) as usize,
            Routing::Stripe(k, unit) => ((block / unit) % u64::from(k)) as usize,
        }
    }

    /// With the log on, remember that instance `i` may have recorded events.
    #[inline]
    fn touch(&mut self, i: usize) {
        if self.log {
            self.log_touched.push(i as u32);
        }
    }

    /// The instance of the last access (none before the first access of a per-client level).
    fn current(&self) -> Option<&dyn AnyLevel> {
        self.inst.get(self.last).map(AsRef::as_ref)
    }

    /// [`FanOut::current`], mutable.
    fn current_mut(&mut self) -> Option<&mut (dyn AnyLevel + 'static)> {
        self.inst.get_mut(self.last).map(AsMut::as_mut)
    }

    fn resum(&mut self) {
        self.sum = LevelCounters::default();
        for l in &self.inst {
            self.sum.add(l.counters());
        }
        for r in &self.retired {
            self.sum.add(&r.counters);
        }
    }
}

impl CacheLevel for FanOut {
    forward_level!(current / current_mut: last_outcomes);
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        self.last = self.route(req.client, req.first);
        self.touch(self.last);
        if let Some(end) = self.answer_end.take() {
            self.inst[self.last].set_answer_end(end);
        }
        self.inst[self.last].access(req, demand_len, out);
    }
    fn finish(&mut self) {
        for l in &mut self.inst {
            l.finish();
        }
        self.resum();
    }
    /// The instances' counters summed at the last [`CacheLevel::finish`] or reset.
    fn counters(&self) -> &LevelCounters {
        &self.sum
    }
    fn reset_counters(&mut self) {
        for l in &mut self.inst {
            l.reset_counters();
        }
        for r in &mut self.retired {
            r.counters = LevelCounters::default();
        }
        self.resum();
    }
    /// One instance's capacity (every instance has the level's size).
    fn capacity(&self) -> usize {
        self.probe.0
    }
    fn len(&self) -> usize {
        self.inst.iter().map(|l| l.len()).sum()
    }
    fn contains(&self, block: u64) -> bool {
        self.inst.iter().any(|l| l.contains(block))
    }
    fn resident_blocks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.inst.iter().flat_map(|l| l.resident_blocks()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    fn check_invariants(&self) -> Result<(), String> {
        for (k, l) in self.keys.iter().zip(&self.inst) {
            l.check_invariants().map_err(|e| format!("instance {k}: {e}"))?;
        }
        Ok(())
    }
    fn set_block_bytes(&mut self, bytes: u64) {
        self.block_bytes = Some(bytes);
        for l in &mut self.inst {
            l.set_block_bytes(bytes);
        }
    }
    fn metadata_bytes(&self) -> u64 {
        self.inst.iter().map(|l| l.metadata_bytes()).sum()
    }
    fn data_capacity(&self) -> usize {
        self.inst.get(self.last).map_or_else(|| self.capacity(), |l| l.data_capacity())
    }
    /// The instances' policies have no knowledge of the future (`opt` is not offered per instance).
    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future> {
        None
    }
}

/// The timed engine asks `pinned_tag` of the bottom level right after an access: the last instance's.
impl Pinning for FanOut {
    forward_level!(current / current_mut: pending_tags, pinned_tag, orphan_tag);
    fn supports_timed(&self) -> bool {
        self.probe.1
    }
    fn set_timed(&mut self, on: bool) {
        self.timed = on;
        for l in &mut self.inst {
            l.set_timed(on);
        }
    }
    fn set_prefetch_apart(&mut self, on: bool) -> bool {
        self.prefetch_apart = on;
        let mut ok = (self.make)().set_prefetch_apart(on);
        for l in &mut self.inst {
            ok &= l.set_prefetch_apart(on);
        }
        ok
    }
    fn set_device(&mut self, device: &DeviceBelow) {
        self.device = Some(device.clone());
        for l in &mut self.inst {
            l.set_device(device);
        }
    }
    fn set_fetch_tags(&mut self, ids: &[u32]) -> u64 {
        let Some(l) = self.inst.get_mut(self.last) else { return 0 };
        if let Some(&max) = ids.iter().max() {
            if self.tag_owner.len() <= max as usize {
                self.tag_owner.resize(max as usize + 1, NONE);
            }
        }
        for &id in ids {
            self.tag_owner[id as usize] = self.last as u32;
        }
        l.set_fetch_tags(ids)
    }
    fn complete(&mut self, first: u64, len: u32, tag: u32) {
        let Some(owner) = self.tag_owner.get_mut(tag as usize) else { return };
        let i = std::mem::replace(owner, NONE);
        if let Some(l) = self.inst.get_mut(i as usize) {
            l.complete(first, len, tag);
            self.touch(i as usize);
        }
    }
    fn is_pinned(&self, block: u64) -> bool {
        self.inst.iter().any(|l| l.is_pinned(block))
    }
    fn pinned_count(&self) -> usize {
        self.inst.iter().map(|l| l.pinned_count()).sum()
    }
}

/// Evictions happen within an access: `take_evicted` is the last accessed instance's.
impl Demotion for FanOut {
    forward_level!(current / current_mut: take_evictions);
    fn exclusive(&self) -> Exclusive {
        self.probe.2
    }
    fn record_evictions(&mut self, on: bool) {
        self.record = on;
        for l in &mut self.inst {
            l.record_evictions(on);
        }
    }
    fn demote_in(&mut self, block: u64, client: u32) {
        let i = self.route(client, block);
        self.touch(i);
        self.inst[i].demote_in(block, client);
    }
}

/// PFC's hooks go to the instance of the last access.
impl Coordination for FanOut {
    forward_level!(current / current_mut: peek, is_full, insert_cold, count_coordinated, silent_use, mark_readmore);
    fn set_answer_end(&mut self, end: u64) {
        self.answer_end = Some(end);
    }
}

impl EventLog for FanOut {
    forward_level!(current / current_mut: log_event);
    fn record_events(&mut self, on: bool) {
        self.log = on;
        self.log_touched.clear();
        for l in &mut self.inst {
            l.record_events(on);
        }
    }
    fn drain_events(&mut self, sink: &mut dyn FnMut(u32, &LevelEvent)) {
        if self.log_touched.is_empty() {
            return;
        }
        self.log_touched.sort_unstable();
        self.log_touched.dedup();
        for &i in &self.log_touched {
            let key = self.keys[i as usize];
            self.inst[i as usize].drain_events(&mut |_, e| sink(key, e));
        }
        self.log_touched.clear();
    }
}

impl Instances for FanOut {
    fn is_fan_out(&self) -> bool {
        true
    }
    fn instances(&self) -> Vec<(u32, &dyn AnyLevel)> {
        let mut v: Vec<(u32, &dyn AnyLevel)> =
            self.keys.iter().copied().zip(self.inst.iter().map(AsRef::as_ref)).collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }
    fn notes(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (_, l) in self.instances() {
            for n in l.notes() {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
        }
        v
    }
    fn instance_reports(&self) -> Vec<InstanceReport> {
        let mut v: Vec<InstanceReport> = self
            .instances()
            .into_iter()
            .map(|(key, l)| InstanceReport {
                instance: key,
                client: (self.routing == Routing::PerClient).then_some(key),
                counters: l.counters().clone(),
            })
            .collect();
        v.extend(self.retired.iter().cloned());
        v.sort_by_key(|r| r.instance);
        v
    }
    fn retire_client(&mut self, client: u32) -> bool {
        if self.routing != Routing::PerClient {
            return false;
        }
        let Some(&i) = self.by_client.get(&u64::from(client)) else { return false };
        let i = i as usize;
        // A fetch still to complete at it, or events not drained yet, still need the cache.
        let pending = self.tag_owner.iter().any(|&o| o as usize == i) || self.log_touched.contains(&(i as u32));
        if pending || self.inst[i].pinned_count() > 0 {
            return false;
        }
        let mut l = self.inst.remove(i);
        l.finish();
        self.retired.push(InstanceReport { instance: client, client: Some(client), counters: l.counters().clone() });
        drop(l);
        self.keys.remove(i);
        self.by_client.remove(&u64::from(client));
        // Later instances moved down one place.
        let moved = i as u32;
        for v in self.by_client.values_mut().filter(|v| **v > moved) {
            *v -= 1;
        }
        for o in self.tag_owner.iter_mut().filter(|o| **o != NONE && **o > moved) {
            *o -= 1;
        }
        for t in self.log_touched.iter_mut().filter(|t| **t > moved) {
            *t -= 1;
        }
        if self.last == i {
            // The last access's instance is gone: `current` would otherwise name another client's.
            self.last = usize::MAX;
        } else if self.last != usize::MAX && self.last > i {
            self.last -= 1;
        }
        self.resum();
        true
    }
}
