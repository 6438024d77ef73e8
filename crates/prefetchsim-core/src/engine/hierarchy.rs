//! A hierarchy as the engines run it: levels top first, their identities for reports, DEMOTE between
//! them and the event log. Built from a config by [`crate::build`].

use crate::eventlog::{Event, EventKind, EventSink, LevelEvent, Origin};
use crate::level::exclusive::Exclusive;
use crate::level::AnyLevel;
use crate::metrics::LevelReport;
use crate::request::Fetch;

/// Levels top (closest to the application) first, each with its identity for reports.
pub struct Hierarchy {
    /// The levels.
    pub levels: Vec<Box<dyn AnyLevel>>,
    names: Vec<(String, String, String)>,
    block_size: u64,
    /// Per level: its evictions go down to the next level (DEMOTE there).
    demote_below: Vec<bool>,
    /// The event log's sink, when the run records one.
    events: Option<Box<dyn EventSink>>,
}

impl Hierarchy {
    /// Levels top first with their (name, policy, prefetcher) for reports; `block_size` in bytes. A level
    /// whose `exclusive()` is DEMOTE makes the level above it record its evictions.
    #[must_use]
    pub fn from_levels(
        mut levels: Vec<Box<dyn AnyLevel>>,
        names: Vec<(String, String, String)>,
        block_size: u64,
    ) -> Self {
        let mut demote_below = vec![false; levels.len()];
        for i in 1..levels.len() {
            if levels[i].exclusive() == Exclusive::Demote {
                demote_below[i - 1] = true;
                levels[i - 1].record_evictions(true);
            }
        }
        Self { levels, names, block_size, demote_below, events: None }
    }

    /// Record the run's per-block events into `sink` (`crate::eventlog`); every level starts recording.
    pub fn set_event_sink(&mut self, sink: Box<dyn EventSink>) {
        for l in &mut self.levels {
            l.record_events(true);
        }
        self.events = Some(sink);
    }

    /// Stop recording and give the sink back (to finish it).
    pub fn take_event_sink(&mut self) -> Option<Box<dyn EventSink>> {
        for l in &mut self.levels {
            l.record_events(false);
        }
        self.events.take()
    }

    /// Whether the run records events.
    #[inline]
    #[must_use]
    pub fn logging(&self) -> bool {
        self.events.is_some()
    }

    /// Send the events level `k` recorded since the last call to the sink, at `time` (request index or
    /// nanoseconds). Nothing when the run records no events.
    #[inline]
    pub fn log_level(&mut self, k: usize, time: u64) {
        if let Some(sink) = &mut self.events {
            let level = k as u32;
            self.levels[k].drain_events(&mut |instance, ev| sink.record(&Event { time, level, instance, ev: *ev }));
        }
    }

    /// [`Hierarchy::log_level`] for every level, top first.
    #[inline]
    pub fn log_all(&mut self, time: u64) {
        if self.events.is_some() {
            for k in 0..self.levels.len() {
                self.log_level(k, time);
            }
        }
    }

    /// Log that every level's counters were zeroed (the warm-up ended) at `time`.
    pub fn log_counters_reset(&mut self, time: u64) {
        self.log_all(time);
        if let Some(sink) = &mut self.events {
            for k in 0..self.levels.len() {
                let ev = LevelEvent { kind: EventKind::CountersReset, origin: Origin::None, block: 0, len: 0 };
                sink.record(&Event { time, level: k as u32, instance: 0, ev });
            }
        }
    }

    /// DEMOTE, the instant engine: pass the blocks level `k` evicted in its last access (for `client`)
    /// down to level `k + 1` when that level is `exclusive = "demote"`. Those whose data the level had
    /// land at once; those the access evicted while reading them go to `held` (see
    /// [`Hierarchy::take_demotions`]), to land once the level below has served the access's fetches
    /// ([`Hierarchy::land_held`]). `fetches` are the level's fetches so far, the access's from `from` on.
    /// Returns how many blocks were sent or held.
    #[inline]
    pub fn pass_demotions(
        &mut self,
        k: usize,
        client: u32,
        fetches: &[Fetch],
        from: usize,
        held: &mut Vec<(usize, u64)>,
    ) -> usize {
        if !self.demotes_below(k) {
            return 0;
        }
        let before = held.len();
        let ready = self.take_demotions(k, fetches, from, held);
        self.land_demotions(k, client, &ready);
        ready.len() + held.len() - before
    }

    /// DEMOTE, the instant engine: the level below `k` has served every fetch of level `k`'s access
    /// (`fetches`): the blocks `held` names (index in `fetches`, block) land there now, in fetch order,
    /// so that the level below missed them and read them as the device's data. After all of the fetches,
    /// not each: the timed engine with zero latencies lands them once the level below is done with that
    /// instant's requests (its prefetches arrived too), and both engines must count the same.
    pub fn land_held(&mut self, k: usize, fetches: &[Fetch], held: &mut [(usize, u64)]) {
        held.sort_by_key(|&(f, _)| f);
        for &(f, b) in held.iter() {
            let client = fetches.get(f).map_or(0, |f| f.client);
            self.land_demotions(k, client, &[b]);
        }
    }

    /// DEMOTE: the blocks level `k` evicted since the last call, when level `k + 1` takes them (else
    /// none). Returned: those whose data the level had, which go down at once. A copy the access itself
    /// inserted (in one of its own fetches, `fetches[from..]`) and evicted again before its read arrived
    /// never had its data (Wong & Wilkes demote a block with its data), so it goes to `held` with the
    /// index in `fetches` of the read bringing it, and goes down when that read arrives (the timed
    /// engine) or after the level below served the access's reads (the instant engine). A ready copy
    /// the access evicted before reading the block again goes down at once (it was held too, until an
    /// outside model found it, 2026-12-07).
    #[inline]
    pub fn take_demotions(
        &mut self,
        k: usize,
        fetches: &[Fetch],
        from: usize,
        held: &mut Vec<(usize, u64)>,
    ) -> Vec<u64> {
        if !self.demotes_below(k) {
            return Vec::new();
        }
        let (evicted, mut fresh) = self.levels[k].take_evictions();
        let own = &fetches[from.min(fetches.len())..];
        if own.is_empty() || fresh.is_empty() {
            return evicted;
        }
        // Only a copy the access itself inserted waits for its read. A block's ready copy, if the access
        // evicted one, went before the block was read again, so of a block's evictions the last ones are
        // the fresh copies: match them from the end, and the ready copy keeps its place in the message.
        let mut wait = vec![None; evicted.len()];
        for (n, &b) in evicted.iter().enumerate().rev() {
            let Some(j) = fresh.iter().position(|&x| x == b) else { continue };
            fresh.swap_remove(j);
            wait[n] = own.iter().position(|f| b >= f.first && b - f.first < u64::from(f.len));
        }
        let mut now = Vec::with_capacity(evicted.len());
        for (b, w) in evicted.into_iter().zip(wait) {
            match w {
                Some(i) => held.push((from + i, b)),
                None => now.push(b),
            }
        }
        now
    }

    /// DEMOTE: blocks evicted by level `k` (its access for `client`) arrive at level `k + 1`. A block the
    /// level above holds again by then (resident or in flight: fetched anew while the demotion was on
    /// the link or its read was in flight, or re-inserted within the evicting access) is dropped: caching
    /// it would put it in both levels.
    pub fn land_demotions(&mut self, k: usize, client: u32, blocks: &[u64]) {
        for &b in blocks {
            if !self.levels[k].contains(b) {
                self.levels[k + 1].demote_in(b, client);
            }
        }
    }

    /// Whether level `k + 1` takes the blocks level `k` evicts (DEMOTE).
    #[inline]
    #[must_use]
    pub fn demotes_below(&self, k: usize) -> bool {
        self.demote_below.get(k).copied().unwrap_or(false)
    }

    /// The block size in bytes.
    #[must_use]
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// The levels' notes ([`Instances::notes`](crate::level::Instances::notes)), each prefixed with its level's path and name.
    #[must_use]
    pub fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (i, (l, (name, _, _))) in self.levels.iter().zip(&self.names).enumerate() {
            v.extend(l.notes().into_iter().map(|n| format!("level[{i}] ({name}): {n}")));
        }
        v
    }

    /// Reports of every level (call after the run's end-of-run accounting).
    #[must_use]
    pub fn reports(&self) -> Vec<LevelReport> {
        self.levels
            .iter()
            .zip(&self.names)
            .enumerate()
            .map(|(i, (l, (name, pol, pf)))| LevelReport {
                level: i,
                name: name.clone(),
                policy: pol.clone(),
                prefetcher: pf.clone(),
                capacity_blocks: l.capacity() as u64,
                block_size: self.block_size,
                counters: l.counters().clone(),
                instances: l.instance_reports(),
            })
            .collect()
    }
}
