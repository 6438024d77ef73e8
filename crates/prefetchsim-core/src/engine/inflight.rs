//! The timed engine's in-flight state: jobs (application requests and fetches between levels), the
//! waiter lists that tie a job to the reads it waits for, and the table of reads in flight whose block
//! no level holds (`shared/docs/models/event-engine.md` §5; the late-prefetch rule of the Butt, Gniady &
//! Hu simulator: a demand for a block inside a pending read waits on that read).
//!
//! The in-flight table proper is split between the levels and the engine. A block a level brought in
//! and kept is resident and pinned, tagged with the fetch carrying it, so a request that finds it pinned
//! learns from the level which fetch to wait for ([`Pinning::pending_tags`]). A fetched block a level
//! did not keep (no room, or evicted again within the same access) is an *orphan*: it is recorded here,
//! for the last level only, so that a later fetch of it waits for the read in flight instead of reading
//! it again.
//!
//! [`Pinning::pending_tags`]: crate::level::Pinning::pending_tags
//!
//! Everything lives in slabs with free lists, so a run in steady state allocates nothing.

use crate::policy::table::{block_map, BlockMap};

/// "No entry" in the intrusive lists.
pub const NIL: u32 = u32::MAX;

/// A vector of reusable slots.
#[derive(Debug)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self { items: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Store `v`; returns its index.
    #[inline]
    pub fn alloc(&mut self, v: T) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = v;
                i
            }
            None => {
                self.items.push(v);
                (self.items.len() - 1) as u32
            }
        }
    }

    /// Give slot `i` back.
    #[inline]
    pub fn release(&mut self, i: u32) {
        self.live -= 1;
        self.free.push(i);
    }

    /// Slots in use.
    #[must_use]
    pub fn live(&self) -> usize {
        self.live
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

/// What a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// An application request, served at the first level.
    App,
    /// A run of blocks a level fetches from below: in flight at `level`, served by `level + 1` (or by
    /// the device under the last level).
    Fetch,
}

/// An application request or a fetch.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// First block.
    pub first: u64,
    /// Blocks.
    pub len: u32,
    /// Leading demand blocks (the rest were prefetched by the level above).
    pub demand_len: u32,
    /// Blocks, bios or joined reads still awaited.
    pub outstanding: u32,
    /// First waiter on this fetch (jobs at `level` waiting for its blocks).
    pub waiters: u32,
    /// Last waiter.
    pub waiters_tail: u32,
    /// App: 0. Fetch: the level that issued it (where its blocks are in flight).
    pub level: u8,
    /// App or fetch.
    pub kind: JobKind,
    /// App: a write.
    pub write: bool,
    /// App: counted in the statistics (after the warm-up).
    pub measured: bool,
    /// App: its completion frees a closed-loop slot.
    pub blocking: bool,
    /// Stream of the request.
    pub stream: u32,
    /// Client of the request.
    pub client: u32,
    /// App: its replay loop.
    pub key: u32,
    /// App: the origin of its response time (trace time in open loop, issue time in closed loop).
    pub t_origin: u64,
    /// App: when it entered the first level (after any admission wait). Fetch: when it was created.
    pub t_start: u64,
    /// App: its issue index (0-based). Fetch: 0.
    pub index: u64,
    /// Fetch, DEMOTE: the batch of blocks its level evicted while this fetch was reading them, sent down
    /// when it arrives, since only then has the level their data (an id of the engine's DEMOTE batches;
    /// `NIL`: none).
    pub held_demotions: u32,
}

impl Job {
    /// A fetch issued by `level` at `now`.
    #[must_use]
    pub fn fetch(level: usize, first: u64, len: u32, demand_len: u32, stream: u32, client: u32, now: u64) -> Self {
        Self {
            first,
            len,
            demand_len,
            outstanding: 0,
            waiters: NIL,
            waiters_tail: NIL,
            level: level as u8,
            kind: JobKind::Fetch,
            write: false,
            measured: false,
            blocking: false,
            stream,
            client,
            key: 0,
            t_origin: now,
            t_start: now,
            index: 0,
            held_demotions: NIL,
        }
    }
}

/// A job waiting for `count` blocks (or reads) of a fetch.
#[derive(Clone, Copy, Debug)]
pub struct Waiter {
    /// The waiting job.
    pub job: u32,
    /// How much of its `outstanding` this fetch settles.
    pub count: u32,
    /// Next waiter on the same fetch.
    pub next: u32,
}

/// Jobs, waiters and the orphan reads of the last level.
#[derive(Debug)]
pub struct InFlight {
    /// Jobs.
    pub jobs: Slab<Job>,
    /// Waiter nodes.
    pub waiters: Slab<Waiter>,
    /// Last level: block being read by a fetch whose block the level did not keep → that fetch.
    pub orphans: BlockMap<u32>,
}

impl Default for InFlight {
    fn default() -> Self {
        Self::new()
    }
}

impl InFlight {
    /// Empty state.
    #[must_use]
    pub fn new() -> Self {
        Self { jobs: Slab::default(), waiters: Slab::default(), orphans: block_map(64) }
    }

    /// `job` waits for `count` units of `fetch` (appended: waiters are woken in the order they came).
    #[inline]
    pub fn add_waiter(&mut self, fetch: u32, job: u32, count: u32) {
        let w = self.waiters.alloc(Waiter { job, count, next: NIL });
        let f = &mut self.jobs[fetch];
        if f.waiters_tail == NIL {
            f.waiters = w;
        } else {
            let tail = f.waiters_tail;
            self.waiters[tail].next = w;
        }
        self.jobs[fetch].waiters_tail = w;
    }

    /// Pop the first waiter of `fetch`: `(job, count)`.
    #[inline]
    pub fn pop_waiter(&mut self, fetch: u32) -> Option<(u32, u32)> {
        let head = self.jobs[fetch].waiters;
        if head == NIL {
            return None;
        }
        let w = self.waiters[head];
        self.waiters.release(head);
        let f = &mut self.jobs[fetch];
        f.waiters = w.next;
        if w.next == NIL {
            f.waiters_tail = NIL;
        }
        Some((w.job, w.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_come_back_in_order_and_slots_are_reused() {
        let mut f = InFlight::new();
        let g = f.jobs.alloc(Job::fetch(0, 10, 4, 4, 0, 0, 0));
        f.add_waiter(g, 7, 2);
        f.add_waiter(g, 8, 1);
        assert_eq!(f.pop_waiter(g), Some((7, 2)));
        f.add_waiter(g, 9, 3);
        assert_eq!(f.pop_waiter(g), Some((8, 1)));
        assert_eq!(f.pop_waiter(g), Some((9, 3)));
        assert_eq!(f.pop_waiter(g), None);
        assert_eq!(f.waiters.live(), 0);
        f.jobs.release(g);
        let h = f.jobs.alloc(Job::fetch(0, 0, 1, 1, 0, 0, 0));
        assert_eq!(h, g);
    }
}
