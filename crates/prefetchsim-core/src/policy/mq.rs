//! MQ: Multi-Queue, m LRU queues by access frequency with expiry demotion and a Qout history (replacement.md §3).
//! Follows Y. Zhou, J. F. Philbin and K. Li, "The multi-queue replacement algorithm for second level buffer
//! caches", USENIX ATC'01, §4 (MQ and its Adjust routine), with our prefetch rules from replacement.md §3.
//!
//! A block with frequency `f` lives in queue `min(⌊log2 f⌋, m-1)`; the logical clock `now` counts demand
//! accesses; a block at the LRU end of `Qk` (k >= 1) whose `expire` has passed drops to `Qk-1`; victims
//! come from the LRU end of the lowest non-empty queue and leave `(id, f)` in Qout.
//!
//! On a miss the victim is evicted first (its `(id, f)` enters Qout, dropping Qout's oldest entry when
//! full) and the missed block is looked up in Qout after that, as the paper's text and figure order it
//! ("MQ evicts the head of the lowest non-empty queue … If the requested block b is in Qout, then it is
//! loaded and its frequency f is set to be the remembered value plus 1") and replacement.md §3 restates:
//! with a full Qout the victim's entry can push out the missed block's own history, which then comes
//! back with `f = 1`. The look-up is therefore in `on_insert`, which the level calls after making room,
//! not in `on_miss`, which it calls before (`studies/policies.md`, finding 4).
//!
//! libCacheSim's `MQ` (the `libcachesim` 0.3.5 package we compare against) has the same queues, `QueueNum`,
//! Qout (4 × capacity ids) and victim rule. It differs in three ways. It looks the missed block up in
//! Qout before it evicts (so an eviction cannot push the block's own history out first), where we follow
//! the paper. Its default `lifetime` is a fixed 10 000 requests (ours: 4 × capacity). Its
//! clock ticks after an access has set the block's expiry and before Adjust runs, where ours ticks first:
//! a block it has just loaded or hit expires one access earlier than ours with the same lifetime, while a
//! block Adjust demotes gets the same new lifetime in both.

use serde::{Deserialize, Serialize};

use super::list::grow;
use super::list::{KeyedList, Links, List};
use super::lru::place;
use super::{BlockTable, FirstHit, Insert, Origin, Policy, PolicyEnv, Slot};

/// Parameters of MQ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MqParams {
    /// Number of LRU queues `m`, 1 to 32 (default 8, the paper's setting).
    #[serde(deserialize_with = "de_queues")]
    pub queues: u8,
    /// `lifeTime` in demand accesses (default: 4 × capacity, replacement.md §3; the paper derives it from
    /// the observed temporal distance).
    pub life_time: Option<u64>,
    /// Capacity of the Qout history, `kout` (default: 4 × capacity, replacement.md §3).
    pub history: Option<usize>,
}

impl Default for MqParams {
    fn default() -> Self {
        Self { queues: 8, life_time: None, history: None }
    }
}

impl MqParams {
    /// The largest explicit Qout history: 2^26 blocks (a few GiB of ghost entries, allocated up front).
    pub const MAX_HISTORY: usize = 1 << 26;

    /// Check `history` (`path` is the policy's key path).
    pub fn validate(&self, path: &str) -> Result<(), crate::component::ConfigError> {
        match self.history {
            Some(h) if h > Self::MAX_HISTORY => Err(crate::component::ConfigError::new(
                format!("{path}.history"),
                format!("{h} blocks is more than the {} a Qout history may hold", Self::MAX_HISTORY),
            )),
            _ => Ok(()),
        }
    }
}

fn de_queues<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let m = u8::deserialize(d)?;
    if (1..=32).contains(&m) {
        Ok(m)
    } else {
        Err(serde::de::Error::custom(format!("queues must be 1 to 32, got {m}")))
    }
}

/// Multi-Queue.
#[derive(Debug)]
pub struct Mq {
    links: Links,
    /// Q0..Q(m-1); head = MRU end.
    queues: Vec<List>,
    /// Evicted blocks and their frequencies, newest first.
    qout: KeyedList<u32>,
    kout: usize,
    life: u64,
    /// Logical clock: demand accesses seen.
    now: u64,
    freq: Vec<u32>,
    expire: Vec<u64>,
    queue: Vec<u8>,
    /// Whether the block `on_miss` was told about is a demand miss (its Qout look-up is due in
    /// `on_insert`, after the eviction that makes room for it).
    pending_demand: bool,
    first_hit: FirstHit,
}

impl Mq {
    /// An empty MQ cache of `env.capacity` blocks.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: MqParams) -> Self {
        let c = env.capacity;
        let m = usize::from(params.queues.clamp(1, 32));
        let kout = params.history.unwrap_or(4 * c);
        Self {
            links: Links::with_capacity(c),
            queues: vec![List::default(); m],
            qout: KeyedList::with_capacity(kout + 1),
            kout,
            life: params.life_time.unwrap_or(4 * c as u64),
            now: 0,
            freq: vec![0; c],
            expire: vec![0; c],
            queue: vec![0; c],
            pending_demand: false,
            first_hit: env.first_hit,
        }
    }

    /// `QueueNum(f)`: `⌊log2 f⌋` capped at `m-1`; frequencies 0 and 1 map to Q0.
    #[inline]
    #[must_use]
    pub fn queue_num(&self, freq: u32) -> usize {
        if freq <= 1 {
            0
        } else {
            (freq.ilog2() as usize).min(self.queues.len() - 1)
        }
    }

    /// The logical clock (demand accesses seen).
    #[must_use]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Blocks of queue `k` with their frequencies, MRU first (tests).
    #[must_use]
    pub fn queue_blocks(&self, k: usize, table: &BlockTable) -> Vec<(u64, u32)> {
        self.queues[k].iter(&self.links).map(|s| (table.entry(s).block, self.freq[s as usize])).collect()
    }

    /// Qout's blocks and remembered frequencies, newest first (tests).
    #[must_use]
    pub fn history_blocks(&self) -> Vec<(u64, u32)> {
        self.qout.iter().map(|b| (b, self.qout.get(b).unwrap_or(0))).collect()
    }

    /// The frequency a demand reference gives `block` if it is not resident: its remembered one plus 1.
    #[inline]
    fn recall(&mut self, block: u64) -> u32 {
        self.qout.remove(block).map_or(1, |f| f.saturating_add(1))
    }

    /// Unlink `slot` from its queue and push it at the MRU end of `Qk`.
    #[inline]
    fn requeue(&mut self, slot: Slot, k: usize) {
        let from = usize::from(self.queue[slot as usize]);
        self.queues[from].unlink(&mut self.links, slot);
        self.queues[k].push_front(&mut self.links, slot);
        self.queue[slot as usize] = k as u8;
    }

    /// Adjust: the LRU block of each `Qk`, k >= 1, whose lifetime has run out drops to MRU of `Qk-1`.
    #[inline]
    fn adjust(&mut self) {
        for k in 1..self.queues.len() {
            if let Some(h) = self.queues[k].tail() {
                if self.expire[h as usize] < self.now {
                    self.requeue(h, k - 1);
                    self.expire[h as usize] = self.now.saturating_add(self.life);
                }
            }
        }
    }
}

impl Policy for Mq {
    /// A reference: `f += 1` (the first demand access of a prefetched block takes its remembered frequency
    /// plus 1, or 1), MRU of `Q(QueueNum(f))`, a new expiry, then Adjust.
    #[inline]
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        self.now += 1;
        let f =
            if first_use { self.recall(table.entry(slot).block) } else { self.freq[slot as usize].saturating_add(1) };
        self.freq[slot as usize] = f;
        if !self.first_hit.stays(first_use, table.entry(slot)) {
            self.requeue(slot, self.queue_num(f));
        }
        self.expire[slot as usize] = self.now.saturating_add(self.life);
        self.adjust();
    }

    /// A demand miss is a reference: the clock ticks, and the block will take its Qout frequency once
    /// the level has made room (`on_insert`: the paper evicts before the look-up). A prefetch is not: it
    /// enters with `f = 0` and leaves the block's history in Qout until the block is demanded.
    fn on_miss(&mut self, _block: u64, origin: Origin, _table: &BlockTable) {
        if origin == Origin::Demand {
            self.now += 1;
        }
        self.pending_demand = origin == Origin::Demand;
    }

    fn on_insert(&mut self, slot: Slot, table: &BlockTable, how: &Insert) {
        grow(&mut self.freq, slot, 0);
        grow(&mut self.expire, slot, 0);
        grow(&mut self.queue, slot, 0);
        if how.reinsert {
            // A second chance: MRU of the queue it was taken from, nothing else changes.
            let k = usize::from(self.queue[slot as usize]);
            self.queues[k].push_front(&mut self.links, slot);
            return;
        }
        // After the eviction that made room (the paper's order): the victim's entry is in Qout already.
        let f = if how.origin == Origin::Demand && self.pending_demand {
            self.recall(table.entry(slot).block)
        } else if how.origin == Origin::Demand {
            1
        } else {
            0
        };
        self.pending_demand = false;
        let k = self.queue_num(f);
        self.freq[slot as usize] = f;
        self.queue[slot as usize] = k as u8;
        self.expire[slot as usize] = self.now.saturating_add(self.life);
        let after = how.after.filter(|&a| usize::from(self.queue[a as usize]) == k);
        place(&mut self.queues[k], &mut self.links, slot, &Insert { after, ..*how });
        if how.origin == Origin::Demand {
            self.adjust();
        }
    }

    /// The LRU end of the lowest non-empty queue, passing over pinned blocks.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        for k in 0..self.queues.len() {
            if let Some(s) = self.queues[k].last_unpinned(&mut self.links, table) {
                self.queues[k].unlink(&mut self.links, s);
                return Some(s);
            }
        }
        None
    }

    /// Remember `(id, f)` in Qout, dropping the oldest entry beyond `kout`. A block never referenced
    /// (`f = 0`, an unused prefetch) leaves no history (our rule): an entry with 0 would give the same 1 on
    /// a later miss as no entry, and would push a useful one out.
    fn on_evicted(&mut self, slot: Slot, table: &BlockTable) {
        let f = self.freq[slot as usize];
        if f == 0 || self.kout == 0 {
            return;
        }
        self.qout.push_front(table.entry(slot).block, f);
        if self.qout.len() > self.kout {
            self.qout.pop_back();
        }
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        let k = usize::from(self.queue[slot as usize]);
        self.queues[k].unlink(&mut self.links, slot);
    }

    /// To the LRU end of Q0: the next victim.
    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        let k = usize::from(self.queue[slot as usize]);
        self.queues[k].unlink(&mut self.links, slot);
        self.queues[0].push_back(&mut self.links, slot);
        self.queue[slot as usize] = 0;
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        let mut seen = vec![false; table.slot_bound()];
        let mut total = 0usize;
        for (k, q) in self.queues.iter().enumerate() {
            let mut n = 0usize;
            for s in q.iter(&self.links) {
                if !table.is_occupied(s) {
                    return Err(format!("Q{k} holds free slot {s}"));
                }
                if std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("slot {s} twice in the queues"));
                }
                if usize::from(self.queue[s as usize]) != k {
                    return Err(format!("slot {s} on Q{k} but marked Q{}", self.queue[s as usize]));
                }
                let f = self.freq[s as usize];
                if k > self.queue_num(f) {
                    return Err(format!("slot {s} with frequency {f} above its queue in Q{k}"));
                }
                if f == 0 && !table.entry(s).unused_prefetch() {
                    return Err(format!("referenced block in slot {s} has frequency 0"));
                }
                n += 1;
            }
            if n != q.len() {
                return Err(format!("Q{k} has {n} nodes, length {}", q.len()));
            }
            total += n;
        }
        if total != table.len() {
            return Err(format!("queues hold {total} blocks, {} resident", table.len()));
        }
        if self.qout.len() > self.kout {
            return Err(format!("Qout holds {} > kout = {}", self.qout.len(), self.kout));
        }
        for b in self.qout.iter() {
            if table.lookup(b).is_some_and(|e| !e.unused_prefetch()) {
                return Err(format!("Qout remembers {b}, which is resident and referenced"));
            }
        }
        Ok(())
    }
}

impl super::NamedPolicy for Mq {
    const NAME: &'static str = "mq";
    const SUMMARY: &'static str = "Multi-Queue (Zhou, Philbin & Li, USENIX ATC'01)";
    /// Qout keeps 4 × capacity ghost entries by default.
    const BYTES_PER_BLOCK: u64 = 260;
    type Params = MqParams;

    fn from_params(path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        params.validate(path)?;
        Ok(Self::new(env, params))
    }
}
