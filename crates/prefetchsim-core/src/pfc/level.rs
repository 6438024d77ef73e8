//! PFC in front of a level: applies the decisions of [`super::algorithm`] to any level, which it does not
//! change (Z. Zhang, K. Lee, X. Ma, Y. Zhou, "PFC: Transparent Optimization of Existing Prefetching
//! Strategies for Multi-level Storage Systems", ICDCS 2008, §3.1-3.2; serving details of `pfc.md`).
//!
//! A request `[s, e]` from the level above is split into the bypass prefix `[s, start_pfc - 1]` and the
//! forwarded part `[start_pfc, end_pfc]`:
//!
//! - a bypassed block in the wrapped level (ready) is a *silent hit*: served with no policy update, no
//!   counted hit and no prefetcher call; one in flight there waits for its read; a missing one is read
//!   from below in a fetch of its own and is **not** cached (no block is inserted, so the timed engine
//!   reads it as a read nobody keeps);
//! - the forwarded part, readmore blocks included, is one ordinary access of the wrapped level, as if the
//!   level above had asked for it. Its blocks up to `e` answer the request; readmore blocks stay below.
//!   With the timed engine's `prefetch_io = "apart"` the readmore blocks are read as a prefetch of their
//!   own, after the read of the blocks that answer the request and not waited for by it (PFC calls
//!   readmore "additional blocks to prefetch", §3.1); `readmore_joined` keeps them in that read.
//!
//! With `cache_bypassed` (pfc.md, for studies) the bypassed blocks read from below are cached at the
//! level's eviction end: after the access in the instant engine, and in the timed one once every read of
//! the access has arrived (the bypass reads and the wrapped level's). Cached when their own read arrived,
//! they could come before the same access's forwarded read at one instant, with every cached block in
//! flight, and were dropped: at zero latencies the engines differed.
//!
//! The outcomes, fetches and pending tags the engines read are those of `[s, e]` in block order: the
//! bypass fetches come first, then the wrapped level's, so the fetch tags are split at that point.

use std::collections::HashMap;

use super::algorithm::{Decision, PfcState};
use super::PfcParams;
use crate::device::DeviceBelow;
use crate::eventlog::{EventKind, LevelEvent, Origin};
use crate::forward_level;
use crate::level::{AnyLevel, CacheLevel, Coordination, Demotion, EventLog, Instances, Pinning};
use crate::prefetch::Outcome;
use crate::request::{device_block, Fetch, Request};

/// `cache_bypassed`, timed: one access's reads in flight and the blocks of its bypass reads that arrived,
/// cached when the last read arrives.
struct BypassingAccess {
    /// The access's reads not arrived yet.
    waiting: Vec<u32>,
    /// Its bypass reads in order, with their blocks once arrived.
    bypass: Vec<(u32, Option<(u64, u32)>)>,
}

/// A level with PFC in front of it.
pub struct PfcLevel {
    inner: Box<dyn AnyLevel>,
    params: PfcParams,
    queue_cap: usize,
    /// The global context, or the context of client 0 with `per_client`.
    global: PfcState,
    /// `per_client`: contexts of the other clients.
    clients: HashMap<u32, PfcState>,
    outcomes: Vec<Outcome>,
    pending: Vec<u32>,
    /// Bypass fetches at the head of the last access's fetches.
    bypass_fetches: usize,
    /// The wrapped level had fetches in the last access.
    inner_fetched: bool,
    /// Timed mode (`cache_bypassed` caches bypassed blocks once the access's reads have arrived).
    timed: bool,
    /// `cache_bypassed`, timed: the accesses with bypass reads whose reads are not all in.
    bypassing: Vec<BypassingAccess>,
    /// Timed, `engine.prefetch_io = "apart"`: readmore blocks are read as a prefetch of their own
    /// (unless `readmore_joined`).
    prefetch_apart: bool,
    /// Timed: the device's blocks per volume; readmore stops at the device's end.
    device_blocks: Option<u64>,
    last: Option<Decision>,
    /// The event log is on (PFC's events go to the wrapped level's buffer, in order with its own).
    log: bool,
}

impl PfcLevel {
    /// PFC with `params` in front of `inner`.
    #[must_use]
    pub fn new(inner: Box<dyn AnyLevel>, params: PfcParams) -> Self {
        let queue_cap = params.queue_cap(inner.capacity());
        let global = PfcState::new(params.clone(), queue_cap);
        Self {
            inner,
            params,
            queue_cap,
            global,
            clients: HashMap::new(),
            outcomes: Vec::with_capacity(64),
            pending: Vec::new(),
            bypass_fetches: 0,
            inner_fetched: false,
            timed: false,
            bypassing: Vec::new(),
            prefetch_apart: false,
            device_blocks: None,
            last: None,
            log: false,
        }
    }

    /// The wrapped level.
    #[must_use]
    pub fn inner(&self) -> &dyn AnyLevel {
        self.inner.as_ref()
    }

    /// The decision on the last request (tests).
    #[must_use]
    pub fn last_decision(&self) -> Option<Decision> {
        self.last
    }

    /// The context requests of `client` use.
    #[must_use]
    pub fn state(&self, client: u32) -> &PfcState {
        if self.params.per_client && client != 0 {
            self.clients.get(&client).unwrap_or(&self.global)
        } else {
            &self.global
        }
    }

    /// Record a PFC event in the wrapped level's log, when on.
    #[inline]
    fn note(&mut self, kind: EventKind, block: u64, len: u32) {
        if self.log {
            self.inner.log_event(LevelEvent { kind, origin: Origin::None, block, len });
        }
    }

    /// Serve `req` as decision `d` says (bypass prefix, forwarded part with readmore) and leave the
    /// outcomes, pending tags and fetches the engines read. [`CacheLevel::access`] is Algorithm 2 then this;
    /// tests drive it with a fixed decision (the paper's Figure 3).
    pub fn serve_with(&mut self, req: &Request, demand_len: u32, d: &Decision, out: &mut Vec<Fetch>) {
        let clipped = self.clip_readmore(req, d);
        let d = clipped.as_ref().unwrap_or(d);
        self.outcomes.clear();
        self.pending.clear();
        self.inner_fetched = false;
        self.last = Some(*d);
        self.bypass_fetches = 0;
        if req.len == 0 {
            return;
        }
        let (s, e) = (req.first, req.first + u64::from(req.len) - 1);

        // Bypass prefix.
        let base = out.len();
        let demand_end = s + u64::from(demand_len);
        let (mut silent, mut pending, mut bypass_reads) = (0u64, 0u64, 0u64);
        let mut run: Option<u64> = None;
        let push = |out: &mut Vec<Fetch>, a: u64, b: u64| {
            out.push(Fetch {
                first: a,
                len: (b - a) as u32,
                demand_len: demand_end.clamp(a, b).saturating_sub(a) as u32,
                stream: req.stream,
                client: req.client,
            });
        };
        for b in s..d.start_pfc {
            let o = if self.inner.peek(b) {
                match self.inner.pinned_tag(b) {
                    Some(tag) => {
                        self.note(EventKind::BypassPending, b, 1);
                        self.inner.silent_use(b);
                        self.pending.push(tag);
                        pending += 1;
                        Outcome::Pending
                    }
                    None => {
                        self.note(EventKind::SilentHit, b, 1);
                        self.inner.silent_use(b);
                        silent += 1;
                        Outcome::Hit
                    }
                }
            } else if let Some(tag) = self.inner.orphan_tag(b) {
                // Timed: evicted by the access that reads it, the read still in flight (a readmore block
                // of a small L2, say). Wait for it, as for a bypassed block in flight in a frame: before,
                // it was read a second time.
                self.note(EventKind::BypassJoin, b, 1);
                self.pending.push(tag);
                pending += 1;
                Outcome::Pending
            } else {
                self.note(EventKind::BypassRead, b, 1);
                bypass_reads += 1;
                Outcome::Miss
            };
            if o == Outcome::Miss {
                run.get_or_insert(b);
            } else if let Some(a) = run.take() {
                push(out, a, b);
            }
            self.outcomes.push(o);
        }
        if let Some(a) = run {
            push(out, a, d.start_pfc);
        }
        self.bypass_fetches = out.len() - base;
        if self.log {
            for f in &out[base..] {
                let ev = LevelEvent { kind: EventKind::FetchSent, origin: Origin::Bypass, block: f.first, len: f.len };
                self.inner.log_event(ev);
            }
        }

        // Forwarded part (readmore included).
        let mut readmore = 0u64;
        if d.start_pfc <= d.end_pfc {
            let len = (d.end_pfc - d.start_pfc + 1) as u32;
            let fwd = Request { first: d.start_pfc, len, ..*req };
            let fwd_demand = demand_end.saturating_sub(d.start_pfc).min(u64::from(len)) as u32;
            let before = out.len();
            if d.end_pfc > e && self.prefetch_apart && !self.params.readmore_joined {
                // Readmore is PFC's own prefetch [paper §3.1: "appending additional blocks to prefetch"]:
                // the blocks after `e` are not read with the ones that answer the request.
                self.inner.set_answer_end(e + 1);
            }
            self.inner.access(&fwd, fwd_demand, out);
            self.inner_fetched = out.len() > before;
            let answered = (e + 1).saturating_sub(d.start_pfc).min(u64::from(len)) as usize;
            let inner_out = &self.inner.last_outcomes()[..answered];
            let pend = inner_out.iter().filter(|o| **o == Outcome::Pending).count();
            self.outcomes.extend_from_slice(inner_out);
            self.pending.extend_from_slice(&self.inner.pending_tags()[..pend]);
            readmore = d.end_pfc.saturating_sub(e);
            if readmore > 0 {
                for b in e + 1..=d.end_pfc {
                    self.note(EventKind::Readmore, b, 1);
                }
                self.inner.mark_readmore(d.start_pfc, e + 1, readmore as u32);
            }
        }
        self.inner.count_coordinated(silent, pending, bypass_reads, readmore);
        if self.params.cache_bypassed && !self.timed {
            // Read at once: cached after the native access, at the eviction end (timed: on arrival).
            for f in &out[base..base + self.bypass_fetches] {
                for b in f.first..f.first + u64::from(f.len) {
                    self.inner.insert_cold(b);
                }
            }
        }
    }
}

impl CacheLevel for PfcLevel {
    fn access(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        self.outcomes.clear();
        self.pending.clear();
        self.inner_fetched = false;
        if req.len == 0 {
            self.bypass_fetches = 0;
            return;
        }
        let (s, e) = (req.first, req.first + u64::from(req.len) - 1);
        let inner = &self.inner;
        let in_l2 = |b: u64| inner.peek(b);
        let full = inner.is_full();
        let state = if self.params.per_client && req.client != 0 {
            let (p, cap) = (&self.params, self.queue_cap);
            self.clients.entry(req.client).or_insert_with(|| PfcState::new(p.clone(), cap))
        } else {
            &mut self.global
        };
        let d = state.decide(s, e, &in_l2, full);
        self.serve_with(req, demand_len, &d, out);
        let state = if self.params.per_client && req.client != 0 {
            self.clients.get_mut(&req.client).expect("context made above")
        } else {
            &mut self.global
        };
        state.record(s, &d);
    }

    fn last_outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }
    /// Not offered through PFC: the wrapped level sees the requests PFC forwards, not the trace's.
    fn future(&mut self) -> Option<&mut crate::policy::next_use::Future> {
        None
    }
    forward_level!(inner: finish, counters, reset_counters, capacity, data_capacity, len, contains, resident_blocks,
        check_invariants, set_block_bytes, metadata_bytes);
}

impl PfcLevel {
    /// Timed: `d` with its readmore stopped at the device's end (a prefetch past it is not read, as a
    /// prefetcher's run is not); `None` when nothing needs cutting.
    fn clip_readmore(&self, req: &Request, d: &Decision) -> Option<Decision> {
        let n = self.device_blocks?;
        let e = req.first.checked_add(u64::from(req.len.checked_sub(1)?))?;
        // The last block of `e`'s volume on the device (a demand block past it is the engine's error).
        let last = e.saturating_add(n.saturating_sub(1).saturating_sub(device_block(e)));
        (d.end_pfc > e && d.end_pfc > last).then(|| Decision { end_pfc: last.max(e), ..*d })
    }
}

impl Pinning for PfcLevel {
    fn set_timed(&mut self, on: bool) {
        self.timed = on;
        self.inner.set_timed(on);
    }
    fn set_prefetch_apart(&mut self, on: bool) -> bool {
        self.prefetch_apart = on;
        self.inner.set_prefetch_apart(on)
    }
    fn set_device(&mut self, device: &DeviceBelow) {
        self.device_blocks = Some(device.blocks);
        self.inner.set_device(device);
    }
    fn set_fetch_tags(&mut self, ids: &[u32]) -> u64 {
        let n = self.bypass_fetches.min(ids.len());
        if self.params.cache_bypassed && n > 0 {
            self.bypassing
                .push(BypassingAccess { waiting: ids.to_vec(), bypass: ids[..n].iter().map(|&t| (t, None)).collect() });
        }
        match ids.get(self.bypass_fetches..) {
            Some(rest) if self.inner_fetched && !rest.is_empty() => self.inner.set_fetch_tags(rest),
            _ => 0,
        }
    }
    fn pending_tags(&self) -> &[u32] {
        &self.pending
    }
    fn complete(&mut self, first: u64, len: u32, tag: u32) {
        self.inner.complete(first, len, tag);
        let Some(i) = self.bypassing.iter().position(|a| a.waiting.contains(&tag)) else { return };
        let access = &mut self.bypassing[i];
        access.waiting.retain(|&t| t != tag);
        if let Some(read) = access.bypass.iter_mut().find(|(t, _)| *t == tag) {
            read.1 = Some((first, len));
        }
        if access.waiting.is_empty() {
            let done = self.bypassing.remove(i);
            for (first, len) in done.bypass.into_iter().filter_map(|(_, r)| r) {
                for b in first..first + u64::from(len) {
                    self.inner.insert_cold(b);
                }
            }
        }
    }
    forward_level!(inner: supports_timed, pinned_tag, orphan_tag, is_pinned, pinned_count);
}

impl Coordination for PfcLevel {
    forward_level!(inner: peek, is_full, set_answer_end, insert_cold, count_coordinated, silent_use, mark_readmore);
}

impl Demotion for PfcLevel {
    forward_level!(inner: exclusive, record_evictions, take_evictions, demote_in);
}

impl EventLog for PfcLevel {
    fn record_events(&mut self, on: bool) {
        self.log = on;
        self.inner.record_events(on);
    }
    forward_level!(inner: drain_events, log_event);
}

/// One cache: PFC wraps a level of one cache (a level of several caches wraps PFC levels instead).
impl Instances for PfcLevel {
    fn instances(&self) -> Vec<(u32, &dyn AnyLevel)> {
        Vec::new()
    }
    fn is_fan_out(&self) -> bool {
        false
    }
    fn instance_reports(&self) -> Vec<crate::metrics::InstanceReport> {
        Vec::new()
    }
    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
}
