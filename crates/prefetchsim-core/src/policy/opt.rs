//! `opt`: Belady's MIN, the optimal offline replacement. L. A. Belady, "A study of replacement algorithms
//! for a virtual-storage computer", IBM Systems Journal 5(2), 1966: evict the block whose next use lies
//! furthest in the future.
//!
//! The future is the level's own request stream, block-split: every block of every request the level
//! serves is one access, demand or upper-level prefetch alike (both cost a fetch from below when they
//! miss). Its next uses are computed before the run ([`crate::optimal::prepare`]); this policy only
//! replays them ([`Future`]) and so runs in the instant engine only.
//!
//! Prefetched blocks: a block the level's own prefetcher (or a DEMOTE from above) brings in is not an
//! access; its key is the position of its next access in the stream, known like any other block's, so
//! MIN keeps a prefetched block exactly as long as a demand-fetched block with the same next use, and a
//! prefetched block never used goes before every block that will be used. Ties (blocks never used again)
//! go in the order of their last touch, an access or an admission, the oldest first: a rule of ours
//! (MIN's misses are the same under any tie rule; what a prefetcher asks for may not be). MIN decides
//! only evictions: what is prefetched, and when, stays the prefetcher's choice, and every block the level
//! admits is cached (no bypass), as in Belady's demand paging. So `opt` with a prefetcher is the best replacement for the blocks that
//! prefetcher brings in while they do not change what it asks for; a prefetcher that reacts to hits can
//! ask for different blocks under MIN than under LRU, and then MIN is not guaranteed to win
//! (docs/optimal.md). Placement hints ([`Placement`](super::Placement)) and demotions to the eviction end
//! (DU) are ignored: the next use alone orders the blocks.

use std::collections::BinaryHeap;

use super::next_use::{Future, NEVER};
use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// A block's eviction order: its next use, then (for blocks never used again) the reverse of its last
/// touch, so that the block touched longest ago is the largest.
type Key = (u64, u64);

/// Belady's MIN over the level's stream.
#[derive(Debug)]
pub struct Opt {
    future: Future,
    /// Per slot: its key (larger is evicted first) while the slot is in the policy.
    keys: Vec<Option<Key>>,
    /// (key, slot), largest first; entries whose key is no longer the slot's are stale and skipped.
    heap: BinaryHeap<(Key, Slot)>,
    live: usize,
    /// Touches so far, for the least-recently-used order used while recording.
    clock: u64,
}

impl Opt {
    /// A MIN policy with nothing known of the future yet.
    #[must_use]
    pub fn new(env: &PolicyEnv) -> Self {
        Self {
            future: Future::Unknown,
            keys: Vec::with_capacity(env.capacity.min(1 << 20)),
            heap: BinaryHeap::with_capacity(env.capacity.min(1 << 20)),
            live: 0,
            clock: 0,
        }
    }

    /// The key of `slot`'s block now: its next use, ties among blocks never used again broken by the
    /// last touch (oldest first); while recording (or unprepared), the reverse of its last touch (least
    /// recently used first), which keeps the recording run deterministic.
    fn key(&mut self, slot: Slot, table: &BlockTable) -> Key {
        self.clock += 1;
        match &self.future {
            Future::Known(o) => match o.next_use(table.entry(slot).block) {
                NEVER => (NEVER, NEVER - self.clock),
                next => (next, 0),
            },
            Future::Record(_) | Future::Unknown => (NEVER - self.clock, 0),
        }
    }

    fn set(&mut self, slot: Slot, table: &BlockTable) {
        let key = self.key(slot, table);
        let i = slot as usize;
        if self.keys.len() <= i {
            self.keys.resize(i + 1, None);
        }
        if self.keys[i].replace(key).is_none() {
            self.live += 1;
        }
        self.heap.push((key, slot));
        if self.heap.len() > 4 * self.live + 1024 {
            let keys = &self.keys;
            self.heap.retain(|&(k, s)| keys[s as usize] == Some(k));
        }
    }

    fn unset(&mut self, slot: Slot) {
        if let Some(k) = self.keys.get_mut(slot as usize) {
            if k.take().is_some() {
                self.live -= 1;
            }
        }
    }
}

impl Policy for Opt {
    #[inline]
    fn on_access(&mut self, block: u64) {
        match &mut self.future {
            Future::Known(o) => {
                o.access(block);
            }
            Future::Record(b) => b.push(block),
            Future::Unknown => {}
        }
    }

    fn future(&mut self) -> Option<&mut Future> {
        Some(&mut self.future)
    }

    /// A level serves a request's resident blocks as hits before it admits the missing ones, an order the
    /// flattened block stream MIN sees does not have: with requests of several blocks an online policy
    /// can miss less (docs/optimal.md). Said, so that no one reads these misses as a bound unawares.
    fn notes(&self, counters: &crate::metrics::LevelCounters) -> Vec<String> {
        if counters.demand_accesses <= counters.requests {
            return Vec::new();
        }
        vec!["`opt` served requests of several blocks: it evicts by next use but serves a request's resident \
              blocks before its missing ones, so its misses are not a lower bound here (docs/optimal.md, \
              \"Multi-block requests and `opt`\")"
            .to_string()]
    }

    fn on_hit(&mut self, slot: Slot, table: &BlockTable, _first_use: bool) {
        self.set(slot, table);
    }

    fn on_insert(&mut self, slot: Slot, table: &BlockTable, _how: &Insert) {
        self.set(slot, table);
    }

    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let mut pinned = Vec::new();
        let mut found = None;
        while let Some((k, s)) = self.heap.pop() {
            if self.keys.get(s as usize).copied().flatten() != Some(k) {
                continue;
            }
            if table.entry(s).pinned() {
                pinned.push((k, s));
                continue;
            }
            found = Some(s);
            break;
        }
        self.heap.extend(pinned);
        let s = found?;
        self.unset(s);
        Some(s)
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.unset(slot);
    }

    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {}

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        if self.live != table.len() {
            return Err(format!("opt holds {} blocks, the table {}", self.live, table.len()));
        }
        for (slot, _) in table.iter() {
            if self.keys.get(slot as usize).copied().flatten().is_none() {
                return Err(format!("resident slot {slot} has no key"));
            }
        }
        Ok(())
    }
}

impl super::NamedPolicy for Opt {
    const NAME: &'static str = "opt";
    const SUMMARY: &'static str =
        "Belady's MIN, the offline optimum (IBM Sys. J. 1966): next uses from a pre-pass; instant engine";
    /// Not measured (`benches/memory.py` leaves `opt` out): MQ's figure, the largest, as the memory check
    /// gave it before.
    const BYTES_PER_BLOCK: u64 = 260;
    type Params = super::NoParams;

    fn from_params(_path: &str, env: &PolicyEnv, _params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env))
    }
}
