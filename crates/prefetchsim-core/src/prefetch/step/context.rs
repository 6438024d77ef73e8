//! STEP's prefetching contexts (PCs) and the balanced tree that finds them.
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.1.1 and §5: a PC stands for one
//! potential or running sequential stream and records where it is (the last block accessed, the end of
//! what was prefetched for it), how long it has run, its recent prefetch hit ratio and the lengths and
//! arrival times of its last `N` requests (§4.3); §4.1.2 adds the thrashing statistics of the
//! neighborhood it also stands for. PCs are indexed for search, insertion and deletion (a red-black tree
//! in the paper's prototype; here a hash map, with a `BTreeMap` beside it only where the nearest PC below
//! is searched, [`KeyIndex`]).
//!
//! The tree is keyed by the block a PC expects next (`last + 1`), so the stride-one match of §4 is one
//! exact search; the `prefetched` match window also accepts a request that starts inside what was
//! prefetched for the nearest PC below it (`shared/docs/algorithms/step.md`, edge cases). Two PCs never
//! share a key (two streams at the same position are one stream from then on) \[ours\]: of two PCs that
//! meet on a key the better established one keeps it ([`Context::outranks`]: higher queue, then longer
//! sequence; the holder on a tie), so a re-read of a stream's last blocks, which makes a new PC ending
//! where the stream ends, never wipes a high-confidence stream. PCs live in a slab with a generation per
//! slot, so a stale reference (to a purged PC) is recognised.

use super::key_index::KeyIndex;
use super::thrash::Thrash;

/// Longest request history a PC keeps (`N` may be 1 to this).
pub const MAX_HISTORY: usize = 8;

/// The three PC queues (§4.1.1, Figure 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// Just created: one request seen, no sequentiality yet.
    New = 0,
    /// Low-confidence sequentiality: short, or long with a low prefetch hit ratio.
    Low = 1,
    /// High-confidence sequentiality: long, with a high prefetch hit ratio.
    High = 2,
}

/// The last `N` requests of a PC: length, blocks new to the stream, prefetched blocks among them found
/// cached or in flight, arrival time (oldest first).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct History {
    lens: [u32; MAX_HISTORY],
    fresh: [u32; MAX_HISTORY],
    pf_hits: [u32; MAX_HISTORY],
    times: [f64; MAX_HISTORY],
    /// Entries held (at most the PC's `N`).
    len: u8,
    /// Index of the oldest entry.
    head: u8,
}

impl History {
    /// Record a request of `len` blocks, `fresh` of them beyond the stream's last block and `pf_hits` of
    /// those prefetched blocks found cached or in flight, arriving at `time`, keeping the last `n`
    /// requests (`1 <= n <= MAX_HISTORY`).
    pub fn push(&mut self, len: u32, fresh: u32, pf_hits: u32, time: f64, n: usize) {
        let n = n.clamp(1, MAX_HISTORY);
        // Entries occupy head .. head + len (mod MAX_HISTORY); the new one goes right after them, and when
        // `n` are held the oldest is dropped first.
        if usize::from(self.len) >= n {
            self.head = ((usize::from(self.head) + 1) % MAX_HISTORY) as u8;
            self.len = (n - 1) as u8;
        }
        let at = (usize::from(self.head) + usize::from(self.len)) % MAX_HISTORY;
        self.len += 1;
        self.lens[at] = len;
        self.fresh[at] = fresh;
        self.pf_hits[at] = pf_hits.min(fresh);
        self.times[at] = time;
    }

    /// Requests held.
    #[must_use]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// No request held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        (usize::from(self.head) + i) % MAX_HISTORY
    }

    /// Request lengths, oldest first.
    pub fn lens(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).map(|i| self.lens[self.at(i)])
    }

    /// Estimated length of the next request (§4.3, `RL`): the latest length plus the average gradient of
    /// the lengths held, `L_k + (L_k - L_1) / (k - 1)`, rounded, at least 1 \[ours: the rounding and floor\].
    #[must_use]
    pub fn next_len(&self) -> u64 {
        let k = self.len();
        if k == 0 {
            return 1;
        }
        let last = f64::from(self.lens[self.at(k - 1)]);
        if k == 1 {
            return (last as u64).max(1);
        }
        let first = f64::from(self.lens[self.at(0)]);
        let grad = (last - first) / (k - 1) as f64;
        (last + grad).round().max(1.0) as u64
    }

    /// The longest request held (0 when none).
    #[must_use]
    pub fn max_len(&self) -> u64 {
        self.lens().max().map_or(0, u64::from)
    }

    /// Recent prefetch hit ratio `H` (§4: "the stream's recent prefetch hit ratio"): over the requests
    /// held, the blocks new to the stream that were prefetched and found cached or in flight (first uses of
    /// prefetched blocks) per block new to the stream \[ours: the estimator\]. A block cached for another
    /// reason (an earlier demand read) is no prefetch hit, and a re-read of the stream's last block is not
    /// new to it.
    #[must_use]
    pub fn hit_ratio(&self) -> f64 {
        let (mut hits, mut fresh) = (0u64, 0u64);
        for i in 0..self.len() {
            let j = self.at(i);
            hits += u64::from(self.pf_hits[j]);
            fresh += u64::from(self.fresh[j]);
        }
        if fresh == 0 {
            0.0
        } else {
            hits as f64 / fresh as f64
        }
    }

    /// Arrival time of the latest request.
    #[must_use]
    pub fn last_arrival(&self) -> Option<f64> {
        (self.len > 0).then(|| self.times[self.at(self.len() - 1)])
    }

    /// Estimated arrival of the next request \[ours\]: the latest arrival plus the mean gap between the
    /// arrivals held; `None` with fewer than two.
    #[must_use]
    pub fn next_arrival(&self) -> Option<f64> {
        let k = self.len();
        if k < 2 {
            return None;
        }
        let (first, last) = (self.times[self.at(0)], self.times[self.at(k - 1)]);
        Some(last + (last - first) / (k - 1) as f64)
    }
}

/// A prefetch run waiting in the delayed queue (§4.4), kept with its PC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayedRun {
    /// First block.
    pub first: u64,
    /// Blocks.
    pub len: u32,
    /// Stream id of the prefetched blocks.
    pub stream: u32,
    /// When to issue it (virtual ms).
    pub fire_at: f64,
}

/// One prefetching context.
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    /// The block accessed most recently (the end of the latest request).
    pub last: u64,
    /// The last block prefetched for the stream (equal to `last` or below when nothing is ahead).
    pub pf_end: u64,
    /// Total sequence length in blocks (`x` of the pdf).
    pub x: u64,
    /// Blocks of the stream's requests that were first uses of prefetched blocks (PM-BB's benefit).
    pub hit_len: u64,
    /// The last `N` requests.
    pub history: History,
    /// The queue the PC is on.
    pub queue: Queue,
    /// Thrashing statistics of the neighborhood.
    pub thrash: Thrash,
    /// Stream id given to the stream's prefetched blocks (the creating request's stream).
    pub stream: u32,
    /// A prefetch waiting in the delayed queue.
    pub delayed: Option<DelayedRun>,
    /// The key it is indexed under (`last + 1` when it was last indexed).
    key: u64,
}

impl Context {
    /// A PC for a first request `[first, last]` of `len` blocks, `pf_hits` of them first uses of
    /// prefetched blocks, at `time`.
    #[must_use]
    pub fn new(last: u64, len: u32, pf_hits: u32, time: f64, stream: u32, n: usize) -> Self {
        let mut history = History::default();
        history.push(len, len, pf_hits, time, n);
        Self {
            last,
            pf_end: last,
            x: u64::from(len),
            hit_len: 0,
            history,
            queue: Queue::New,
            thrash: Thrash::default(),
            stream,
            delayed: None,
            key: last.saturating_add(1),
        }
    }

    /// Blocks prefetched beyond the last access.
    #[must_use]
    pub fn buffered(&self) -> u64 {
        self.pf_end.saturating_sub(self.last)
    }

    /// Whether this PC is better established than `other`, so that it keeps a key both want: a higher
    /// queue (high over low over new), or the same queue and a longer sequence. Neither outranks the other
    /// on a tie (the key's holder keeps it).
    #[must_use]
    pub fn outranks(&self, other: &Context) -> bool {
        (self.queue as u8, self.x) > (other.queue as u8, other.x)
    }
}

/// A reference to a PC that notices when the PC is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcRef {
    /// Slot.
    pub id: u32,
    /// Generation of the slot when the reference was taken.
    pub gen: u32,
}

/// How a request is matched to a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchWindow {
    /// Stride one: the request starts at `last + 1` (§4).
    Exact,
    /// Stride one, or a start in the last block accessed, `s = last` (default) \[ours\]: with cache blocks
    /// larger than the trace's unit (4 KiB blocks over 512-byte sectors) a sequential request that is not
    /// block-aligned starts in the block where the previous one ended. A request that ends in that block
    /// too is a re-read: it touches the PC but extends nothing.
    #[default]
    Overlap,
    /// Also a start inside the PC's prefetched blocks, `last <= s <= pf_end + 1` \[ours\].
    Prefetched,
}

/// All PCs: a slab with generations and the index by key.
#[derive(Debug, Default)]
pub struct Contexts {
    slots: Vec<Context>,
    gens: Vec<u32>,
    live: Vec<bool>,
    free: Vec<u32>,
    index: KeyIndex,
}

impl Contexts {
    /// No PC; `ordered`: the index also keeps the keys in order, which only the
    /// [`MatchWindow::Prefetched`] search needs (the default, [`Contexts::default`], keeps them).
    #[must_use]
    pub fn new(ordered: bool) -> Self {
        Self { index: KeyIndex::new(ordered), ..Self::default() }
    }

    /// Live PCs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// No PC.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The PC a request starting at `s` continues, if any.
    #[inline]
    #[must_use]
    pub fn find(&self, s: u64, window: MatchWindow) -> Option<u32> {
        if let Some(id) = self.index.get(s) {
            return Some(id);
        }
        if window == MatchWindow::Exact {
            return None;
        }
        if let Some(id) = s.checked_add(1).and_then(|k| self.index.get(k)) {
            return Some(id);
        }
        if window == MatchWindow::Prefetched {
            let id = self.index.below(s)?;
            let pc = &self.slots[id as usize];
            if s <= pc.pf_end.max(pc.last).saturating_add(1) {
                return Some(id);
            }
        }
        None
    }

    /// The PC indexed under `key` (whose next block is `key`), if any.
    #[inline]
    #[must_use]
    pub fn holder(&self, key: u64) -> Option<u32> {
        self.index.get(key)
    }

    /// The PC in slot `id` (must be live).
    #[inline]
    #[must_use]
    pub fn get(&self, id: u32) -> &Context {
        &self.slots[id as usize]
    }

    /// The PC in slot `id`, mutable (must be live). Changing `last` needs [`Contexts::reindex`].
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Context {
        &mut self.slots[id as usize]
    }

    /// A reference to the live PC `id`.
    #[must_use]
    pub fn pc_ref(&self, id: u32) -> PcRef {
        PcRef { id, gen: self.gens[id as usize] }
    }

    /// The slot of `r` if that PC still lives.
    #[inline]
    #[must_use]
    pub fn resolve(&self, r: PcRef) -> Option<u32> {
        let i = r.id as usize;
        (i < self.live.len() && self.live[i] && self.gens[i] == r.gen).then_some(r.id)
    }

    /// Add a PC; returns its slot and the PC it displaced from the index (already out of the index, to be
    /// unlinked from its queue and [`Contexts::free`]d by the caller).
    pub fn insert(&mut self, pc: Context) -> (u32, Option<u32>) {
        let key = pc.key;
        let id = if let Some(id) = self.free.pop() {
            self.slots[id as usize] = pc;
            self.live[id as usize] = true;
            id
        } else {
            let id = u32::try_from(self.slots.len()).expect("more than 2^32 PCs");
            self.slots.push(pc);
            self.gens.push(0);
            self.live.push(true);
            id
        };
        let displaced = self.index.insert(key, id);
        (id, displaced)
    }

    /// Index PC `id` under its new `last + 1`; returns a PC displaced from that key (see
    /// [`Contexts::insert`]).
    pub fn reindex(&mut self, id: u32) -> Option<u32> {
        let pc = &mut self.slots[id as usize];
        let key = pc.last.saturating_add(1);
        if key == pc.key {
            return None;
        }
        let old = std::mem::replace(&mut pc.key, key);
        if self.index.get(old) == Some(id) {
            self.index.remove(old);
        }
        self.index.insert(key, id).filter(|&d| d != id)
    }

    /// Remove PC `id` from the index (if it is still indexed there) and free its slot.
    pub fn remove(&mut self, id: u32) {
        let key = self.slots[id as usize].key;
        if self.index.get(key) == Some(id) {
            self.index.remove(key);
        }
        self.free(id);
    }

    /// Free the slot of a PC that is no longer indexed (displaced).
    pub fn free(&mut self, id: u32) {
        let i = id as usize;
        debug_assert!(self.live[i]);
        self.live[i] = false;
        self.gens[i] = self.gens[i].wrapping_add(1);
        self.free.push(id);
    }

    /// Live PCs with their slots, in key order (tests).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Context)> + '_ {
        self.index.in_order().into_iter().map(|(_, id)| (id, &self.slots[id as usize]))
    }

    /// Check that the index and the slab agree (tests).
    pub fn check(&self) -> Result<(), String> {
        for (key, id) in self.index.in_order() {
            let pc = &self.slots[id as usize];
            if !self.live[id as usize] || pc.key != key || key != pc.last.saturating_add(1) {
                return Err(format!(
                    "PC {id} indexed at {key}: live {}, key {}, last {}",
                    self.live[id as usize], pc.key, pc.last
                ));
            }
        }
        let live = self.live.iter().filter(|&&l| l).count();
        if live != self.index.len() {
            return Err(format!("{live} live PCs, {} indexed", self.index.len()));
        }
        Ok(())
    }

    /// Bytes held: the slab and the tree (an entry of 12 bytes in nodes of 11 entries plus their links,
    /// about 24 bytes an entry).
    #[must_use]
    pub fn metadata_bytes(&self) -> u64 {
        (self.slots.capacity() * (std::mem::size_of::<Context>() + 5) + self.index.len() * 24) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_length_adds_the_average_gradient() {
        let mut h = History::default();
        h.push(4, 4, 0, 0.0, 4);
        assert_eq!(h.next_len(), 4);
        for (l, t) in [(8, 1.0), (12, 2.0), (16, 3.0)] {
            h.push(l, l, 0, t, 4);
        }
        assert_eq!(h.lens().collect::<Vec<_>>(), vec![4, 8, 12, 16]);
        assert_eq!(h.next_len(), 20); // 16 + (16 - 4) / 3
        h.push(16, 16, 16, 4.0, 4); // 8, 12, 16, 16: 16 + 8/3 = 18.67
        assert_eq!(h.next_len(), 19);
        assert_eq!(h.next_arrival(), Some(5.0));
        let mut d = History::default();
        for l in [9, 5, 1] {
            d.push(l, l, 0, 0.0, 4);
        }
        assert_eq!(d.next_len(), 1, "a falling trend is floored at one block");
    }

    #[test]
    fn hit_ratio_is_prefetched_blocks_found_per_block_new_to_the_stream() {
        let mut h = History::default();
        h.push(4, 4, 0, 0.0, 2);
        h.push(4, 4, 2, 0.0, 2);
        assert!((h.hit_ratio() - 0.25).abs() < 1e-12);
        // A request of 3 blocks whose first block re-reads the stream's last one: 2 new, both prefetched.
        h.push(3, 2, 2, 0.0, 2); // the oldest drops out: (2 + 2) / (4 + 2)
        assert!((h.hit_ratio() - 4.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn the_index_finds_by_next_block_and_a_collision_displaces() {
        let mut c = Contexts::default();
        let (a, _) = c.insert(Context::new(10, 1, 0, 0.0, 0, 4));
        let (b, _) = c.insert(Context::new(99, 1, 0, 0.0, 0, 4));
        assert_eq!(c.holder(100), Some(b));
        assert_eq!(c.find(11, MatchWindow::Exact), Some(a));
        assert_eq!(c.find(100, MatchWindow::Exact), Some(b));
        assert_eq!(c.find(12, MatchWindow::Exact), None);
        c.get_mut(a).pf_end = 20;
        assert_eq!(c.find(15, MatchWindow::Prefetched), Some(a));
        assert_eq!(c.find(22, MatchWindow::Prefetched), None);
        let r = c.pc_ref(a);
        // a moves onto b's key: b is displaced.
        c.get_mut(a).last = 99;
        assert_eq!(c.reindex(a), Some(b));
        c.free(b);
        assert_eq!(c.find(100, MatchWindow::Exact), Some(a));
        assert_eq!(c.len(), 1);
        c.check().unwrap();
        assert_eq!(c.resolve(r), Some(a));
        c.remove(a);
        assert_eq!(c.resolve(r), None);
        assert!(c.is_empty());
    }
}
