//! STEP's delayed prefetch queue, and the virtual clock it runs on in the instant engine.
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.2.1 and §4.4: prefetches are issued
//! right after the demand read that prompts them (no extra seek, the drive's own read-ahead helps), but
//! one whose stream will not be back for a long time waits in a delayed queue with a timer, so that its
//! blocks are not evicted before use. Rules \[ours\] (`shared/docs/algorithms/step.md`, `schedule`): the
//! next arrival is the last one plus the mean gap of the PC's last `N` arrivals; a prefetch is delayed
//! when that is more than `delay_horizon_ms` away, until twice its expected service time (mean seek plus
//! transfer) before the next arrival. A timer fires at the first request at or after its time (the
//! engine calls the prefetcher only at requests); blocks cached meanwhile are skipped by the level. A
//! stream that comes back before its timer gets the waiting prefetch at once.
//!
//! The instant engine has no clock, so STEP keeps a virtual one \[ours\]: `disk` (default) models a busy
//! server replaying closed-loop, each request advancing time by `request_ms` plus the modelled disk time
//! of what it fetches (seek from the modelled head, then transfer at the streaming bandwidth); `requests`
//! advances by `request_ms` per request only. [`VirtualClock::set_now`] is where an engine with real
//! time can feed it instead (the clock then only moves when told).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::context::PcRef;
use super::disk::DiskView;

/// What moves STEP's virtual clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// Per-request time plus modelled disk time of each request's fetches (default).
    #[default]
    Disk,
    /// Per-request time only.
    Requests,
}

/// STEP's clock, in ms.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    kind: ClockKind,
    request_ms: f64,
    now: f64,
    /// The modelled disk head (the last block read), `disk` clock only.
    head: Option<u64>,
    /// Time is fed from outside ([`VirtualClock::set_now`]).
    external: bool,
}

impl VirtualClock {
    /// A clock at 0.
    #[must_use]
    pub fn new(kind: ClockKind, request_ms: f64) -> Self {
        Self { kind, request_ms, now: 0.0, head: None, external: false }
    }

    /// The time, ms.
    #[must_use]
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Set the time from outside (an engine with a clock); from then on only this moves it.
    pub fn set_now(&mut self, now_ms: f64) {
        self.external = true;
        self.now = self.now.max(now_ms);
    }

    /// The disk reads `len` blocks from `first`: seek from the head, then transfer (`disk` clock).
    #[inline]
    pub fn read(&mut self, disk: &DiskView, first: u64, len: u64) {
        if self.external || self.kind != ClockKind::Disk || len == 0 {
            return;
        }
        let seek = self.head.map_or(disk.mean_seek_ms(), |h| if h.wrapping_add(1) == first { 0.0 } else { disk.seek_ms(h, first) });
        self.now += seek + len as f64 / disk.blocks_per_ms();
        self.head = Some(first + (len - 1));
    }

    /// The request is done: add the per-request time.
    #[inline]
    pub fn request_done(&mut self) {
        if !self.external {
            self.now += self.request_ms;
        }
    }
}

/// When a prefetch of expected service time `lead` ms should be issued, given the time `now` and the
/// stream's estimated next arrival: `None` for at once, else the timer's time.
#[must_use]
pub fn fire_time(now: f64, next_arrival: Option<f64>, lead: f64, horizon: f64) -> Option<f64> {
    let t = next_arrival?;
    if t - now <= horizon {
        return None;
    }
    let at = t - 2.0 * lead;
    (at > now).then_some(at)
}

/// Timers of delayed prefetches, earliest first. A timer names a PC; the prefetch itself waits in the PC
/// ([`super::context::DelayedRun`]), so a timer whose PC is gone or has issued it meanwhile is stale and
/// skipped.
#[derive(Debug, Default)]
pub struct DelayedQueue {
    /// (fire time as f64 bits, which order like the values for times >= 0; PC slot; generation).
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl DelayedQueue {
    /// Add a timer for PC `pc` at `fire_at` (>= 0).
    pub fn push(&mut self, fire_at: f64, pc: PcRef) {
        self.heap.push(Reverse((fire_at.max(0.0).to_bits(), pc.id, pc.gen)));
    }

    /// Take the earliest timer due at `now`, with its time.
    pub fn pop_due(&mut self, now: f64) -> Option<(f64, PcRef)> {
        let &Reverse((bits, id, gen)) = self.heap.peek()?;
        let at = f64::from_bits(bits);
        if at > now {
            return None;
        }
        self.heap.pop();
        Some((at, PcRef { id, gen }))
    }

    /// Timers waiting (stale ones included).
    #[must_use]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No timer.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Bytes held.
    #[must_use]
    pub fn metadata_bytes(&self) -> u64 {
        (self.heap.capacity() * 16) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_fire_in_time_order() {
        let mut q = DelayedQueue::default();
        q.push(5.0, PcRef { id: 1, gen: 0 });
        q.push(2.5, PcRef { id: 2, gen: 0 });
        assert_eq!(q.pop_due(2.0), None);
        assert_eq!(q.pop_due(6.0), Some((2.5, PcRef { id: 2, gen: 0 })));
        assert_eq!(q.pop_due(6.0), Some((5.0, PcRef { id: 1, gen: 0 })));
        assert!(q.is_empty());
    }

    #[test]
    fn only_far_arrivals_delay() {
        assert_eq!(fire_time(0.0, Some(50.0), 10.0, 100.0), None);
        assert_eq!(fire_time(0.0, Some(300.0), 10.0, 100.0), Some(280.0));
        assert_eq!(fire_time(0.0, Some(150.0), 80.0, 100.0), None, "too close to wait");
        assert_eq!(fire_time(0.0, None, 1.0, 100.0), None);
    }
}
