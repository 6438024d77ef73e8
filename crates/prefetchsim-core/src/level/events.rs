//! A level's side of the event log ([`crate::eventlog`]): recording, draining, and the out-of-line
//! helpers that keep the access loop small when the log is off.

use super::Level;
use crate::eventlog::{EventKind as K, LevelEvent, Origin};
use crate::policy::{flags, Entry, Policy};
use crate::prefetch::Outcome;
use crate::request::{Fetch, Request};

/// The event log of a level.
pub trait EventLog {
    /// Record events into the level's buffer (on) or not (off; the buffer is dropped).
    fn record_events(&mut self, on: bool);
    /// Hand the recorded events, oldest first, to `sink` with the instance each belongs to (0 for a level
    /// of one cache), and forget them.
    fn drain_events(&mut self, sink: &mut dyn FnMut(u32, &LevelEvent));
    /// Record an event a wrapper (PFC) observed, in order with the level's own (when recording).
    fn log_event(&mut self, ev: LevelEvent);
}

/// Who brought `e` in, for the event log.
pub(super) fn origin_of(e: Entry) -> Origin {
    if e.flags & flags::READMORE != 0 {
        Origin::Readmore
    } else if e.flags & flags::SECOND != 0 {
        Origin::Second
    } else if e.prefetched() {
        Origin::Native
    } else {
        Origin::Demand
    }
}

impl<P: Policy> EventLog for Level<P> {
    fn record_events(&mut self, on: bool) {
        self.log = on.then(|| Vec::with_capacity(256));
        self.extra |= on;
        self.refresh_in_place();
    }

    fn drain_events(&mut self, sink: &mut dyn FnMut(u32, &LevelEvent)) {
        if let Some(log) = &mut self.log {
            for e in log.drain(..) {
                sink(0, &e);
            }
        }
    }

    fn log_event(&mut self, ev: LevelEvent) {
        if let Some(log) = &mut self.log {
            log.push(ev);
        }
    }
}

impl<P: Policy> Level<P> {
    /// Record an event when the log is on: a test and a branch not taken when it is off (the push is
    /// out of line, to keep the access loop small).
    #[inline(always)]
    pub(super) fn note(&mut self, kind: K, origin: Origin, block: u64) {
        if self.log.is_some() {
            self.push_event(LevelEvent::block(kind, origin, block));
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn push_event(&mut self, ev: LevelEvent) {
        if let Some(log) = &mut self.log {
            log.push(ev);
        }
    }

    /// Record the start of an access; remembers where its events begin in the buffer.
    #[cold]
    #[inline(never)]
    pub(super) fn log_request(&mut self, req: &Request) {
        let Some(log) = &mut self.log else { return };
        log.push(LevelEvent { kind: K::Request, origin: Origin::None, block: req.first, len: req.len });
        self.log_mark = log.len();
    }

    /// Record the hits and misses of the access just looked up (from its outcomes), each block's before
    /// the events the look-up loop recorded for it (from `log_mark` on: in flight, first use, consumed).
    #[cold]
    #[inline(never)]
    pub(super) fn log_outcomes(&mut self, req: &Request, demand_len: u32) {
        let Self { log, outcomes, log_mark, .. } = self;
        let Some(log) = log else { return };
        let in_loop: Vec<LevelEvent> = log.drain(*log_mark..).collect();
        let mut j = 0;
        for (i, &o) in outcomes.iter().enumerate() {
            let block = req.first + i as u64;
            let demand = (i as u32) < demand_len;
            let kind = match o {
                Outcome::Miss if demand => Some(K::Miss),
                Outcome::Miss => Some(K::UpperMiss),
                Outcome::Hit | Outcome::PrefetchHit if !demand => Some(K::UpperHit),
                Outcome::Hit => Some(K::Hit),
                Outcome::PrefetchHit => Some(K::PrefetchHit),
                // Recorded in the loop (late or join).
                Outcome::Pending => None,
            };
            if let Some(kind) = kind {
                log.push(LevelEvent::block(kind, Origin::None, block));
            }
            while j < in_loop.len() && in_loop[j].block == block {
                log.push(in_loop[j]);
                j += 1;
            }
        }
        log.extend_from_slice(&in_loop[j..]);
    }

    /// Record the fetches `out` of an access.
    #[cold]
    #[inline(never)]
    pub(super) fn note_fetches(&mut self, out: &[Fetch]) {
        if let Some(log) = &mut self.log {
            for f in out {
                log.push(LevelEvent { kind: K::FetchSent, origin: Origin::None, block: f.first, len: f.len });
            }
        }
    }
}
