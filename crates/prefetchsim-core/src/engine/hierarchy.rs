//! A hierarchy as the engines run it: levels top first, their identities for reports, DEMOTE between
//! them and the event log. Built from a config by [`crate::build`].

use crate::eventlog::{Event, EventKind, EventSink, LevelEvent, Origin};
use crate::level::exclusive::Exclusive;
use crate::level::AnyLevel;
use crate::metrics::LevelReport;

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

    /// DEMOTE: pass the blocks level `k` evicted since the last call (its access for `client`) down to
    /// level `k + 1` at once when that level is `exclusive = "demote"` (the instant engine). Returns how
    /// many were sent.
    #[inline]
    pub fn pass_demotions(&mut self, k: usize, client: u32) -> usize {
        if !self.demotes_below(k) {
            return 0;
        }
        let evicted = self.take_demotions(k);
        self.land_demotions(k, client, &evicted);
        evicted.len()
    }

    /// DEMOTE: the blocks level `k` evicted since the last call, when level `k + 1` takes them (else
    /// none). The timed engine sends them over the link and lands them on arrival.
    #[inline]
    pub fn take_demotions(&mut self, k: usize) -> Vec<u64> {
        if !self.demotes_below(k) {
            return Vec::new();
        }
        self.levels[k].take_evicted()
    }

    /// DEMOTE: blocks evicted by level `k` (its access for `client`) arrive at level `k + 1`. A block the
    /// level above holds again by then (fetched anew while the demotion was on the link, or re-inserted
    /// within the evicting access) is dropped: caching it would put it in both levels.
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
