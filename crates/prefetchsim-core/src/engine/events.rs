//! The timed engine's event queue: a binary heap keyed by (time, class, sequence number) with the
//! payloads in a slab (`shared/docs/models/event-engine.md` §2, after DiskSim's single time-ordered queue
//! and MQSim's integer-nanosecond clock; our own code).
//!
//! Time is `u64` nanoseconds. Events of the same time run by *class* first, then in the order they were
//! scheduled (DiskSim's FIFO rule for equal times), which makes every run bit-for-bit deterministic.
//! Classes let the engine say what happens first at one instant; it uses them so that the work a
//! request sets off at time t (forwarding, device service, replies) is done before the next request
//! of the trace arrives at t (see `timed.rs`). Cancellation is lazy: an event carries a generation
//! that its handler compares with its target's, and stale events are dropped when popped, or before
//! ([`EventQueue::drop_cancelled`]) when running them, even as no-ops, would move the clock.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Bits of the order key below the class.
const SEQ_BITS: u32 = 56;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    t: u64,
    /// `class << 56 | seq`.
    ord: u64,
    slot: u32,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` pops its largest element, we want the earliest.
        (other.t, other.ord).cmp(&(self.t, self.ord))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A time-ordered queue of events of type `E`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    slab: Vec<E>,
    free: Vec<u32>,
    seq: u64,
    now: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time 0.
    #[must_use]
    pub fn new() -> Self {
        Self { heap: BinaryHeap::with_capacity(1024), slab: Vec::with_capacity(1024), free: Vec::new(), seq: 0, now: 0 }
    }

    /// The time of the last popped event.
    #[inline]
    #[must_use]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Events waiting.
    #[must_use]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No event waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `ev` at time `t` (never before the current time) in `class` (lower runs first among
    /// events of the same time).
    #[inline]
    pub fn schedule(&mut self, t: u64, class: u8, ev: E) {
        debug_assert!(t >= self.now, "event scheduled in the past: {t} < {}", self.now);
        let t = t.max(self.now);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = ev;
                s
            }
            None => {
                self.slab.push(ev);
                (self.slab.len() - 1) as u32
            }
        };
        self.seq += 1;
        self.heap.push(Key { t, ord: (u64::from(class) << SEQ_BITS) | self.seq, slot });
    }

    /// Drop the earliest events while `cancelled(time, event)` says they were cancelled, leaving the clock
    /// where it is: a cancelled event neither runs nor makes the run last until its time.
    pub fn drop_cancelled(&mut self, mut cancelled: impl FnMut(u64, &E) -> bool) {
        while let Some(&k) = self.heap.peek() {
            if !cancelled(k.t, &self.slab[k.slot as usize]) {
                break;
            }
            self.heap.pop();
            self.free.push(k.slot);
        }
    }

    /// Remove the earliest event and advance the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let k = self.heap.pop()?;
        debug_assert!(k.t >= self.now);
        self.now = k.t;
        self.free.push(k.slot);
        Some((k.t, self.slab[k.slot as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_class_then_scheduling_order() {
        let mut q = EventQueue::new();
        q.schedule(10, 1, 'a');
        q.schedule(5, 2, 'b');
        q.schedule(10, 0, 'c');
        q.schedule(10, 1, 'd');
        q.schedule(5, 2, 'e');
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, 'b'), (5, 'e'), (10, 'c'), (10, 'a'), (10, 'd')]);
        assert_eq!(q.now(), 10);
        // Slots are reused.
        q.schedule(11, 0, 'f');
        assert_eq!(q.slab.len(), 5);
        assert_eq!(q.pop(), Some((11, 'f')));
        assert!(q.is_empty());
    }

    #[test]
    fn cancelled_events_are_dropped_without_moving_the_clock() {
        let mut q = EventQueue::new();
        q.schedule(10, 0, 'a');
        q.schedule(20, 0, 'x');
        q.schedule(30, 0, 'b');
        q.schedule(40, 0, 'x');
        assert_eq!(q.pop(), Some((10, 'a')));
        q.drop_cancelled(|_, &e| e == 'x');
        assert_eq!((q.now(), q.len()), (10, 2), "only the events before the first live one go");
        assert_eq!(q.pop(), Some((30, 'b')));
        q.drop_cancelled(|_, &e| e == 'x');
        assert!(q.is_empty());
        assert_eq!(q.now(), 30);
    }
}
