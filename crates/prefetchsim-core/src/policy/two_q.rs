//! 2Q, full version: a FIFO A1in for first references, a ghost FIFO A1out, an LRU Am (replacement.md §4).
//! Follows T. Johnson and D. Shasha, "2Q: a low overhead high performance buffer management replacement
//! algorithm", VLDB'94, §2 (the full version), with Butt, Gniady and Hu (SIGMETRICS'05) for prefetching.
//!
//! `|A1in| > Kin` with `Kin = kin · c` is the same test as `|A1in| > ⌊kin · c⌋`, since lengths are whole;
//! A1out keeps at most `⌊kout · c⌋` ids. libCacheSim's `TwoQ` (the `libcachesim` 0.3.5 package we compare
//! against) sizes its three queues with those same truncated numbers and gives Am a fixed share
//! `c - ⌊kin · c⌋`; the paper's reclaim rule never lets Am grow past that share once A1in has reached Kin,
//! so on demand-only streams the two agree. Below 4 blocks its A1in share is 0 and it caches nothing.

use serde::{Deserialize, Serialize};

use super::list::grow;
use super::list::{KeyedList, Links, List};
use super::lru::place;
use super::{BlockTable, FirstHit, Insert, Origin, Policy, PolicyEnv, Slot};

/// Parameters of 2Q.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TwoQParams {
    /// Target size of A1in as a fraction of capacity, `Kin` (default 0.25, the paper's recommendation).
    #[serde(deserialize_with = "de_fraction")]
    pub kin: f64,
    /// Size of the A1out ghost queue as a fraction of capacity, `Kout` (default 0.5, the paper's
    /// recommendation).
    #[serde(deserialize_with = "de_fraction")]
    pub kout: f64,
    /// Give prefetched blocks evicted from A1in without a demand access an A1out entry (default false:
    /// Butt et al. discard them, since they were never referenced).
    pub ghost_prefetched_unused: bool,
}

impl Default for TwoQParams {
    fn default() -> Self {
        Self { kin: 0.25, kout: 0.5, ghost_prefetched_unused: false }
    }
}

fn de_fraction<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(serde::de::Error::custom(format!("expected a fraction of capacity from 0 to 1, got {x}")))
    }
}

const NONE: u8 = 0;
const A1IN: u8 = 1;
const AM: u8 = 2;

/// 2Q (full version).
#[derive(Debug)]
pub struct TwoQ {
    links: Links,
    /// FIFO of blocks seen once; head = newest.
    a1in: List,
    /// LRU of blocks re-referenced after leaving A1in; head = MRU.
    am: List,
    /// Ids of blocks evicted from A1in, newest first.
    a1out: KeyedList<()>,
    kin: usize,
    kout: usize,
    ghost_prefetched_unused: bool,
    home: Vec<u8>,
    /// Set by `on_miss`: the missed block was in A1out, so it goes to Am.
    into_am: bool,
    first_hit: FirstHit,
}

impl TwoQ {
    /// An empty 2Q cache of `env.capacity` blocks.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: TwoQParams) -> Self {
        let c = env.capacity;
        // Truncation toward zero, as the comparisons `|A1in| > Kin` and `|A1out| <= Kout` on whole lengths.
        let kin = (params.kin.clamp(0.0, 1.0) * c as f64) as usize;
        let kout = (params.kout.clamp(0.0, 1.0) * c as f64) as usize;
        Self {
            links: Links::with_capacity(c),
            a1in: List::default(),
            am: List::default(),
            a1out: KeyedList::with_capacity(kout + 1),
            kin,
            kout,
            ghost_prefetched_unused: params.ghost_prefetched_unused,
            home: vec![NONE; c],
            into_am: false,
            first_hit: env.first_hit,
        }
    }

    /// Blocks of A1in, newest first (tests).
    #[must_use]
    pub fn a1in_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.a1in.iter(&self.links).map(|s| table.entry(s).block).collect()
    }

    /// Blocks of Am, MRU first (tests).
    #[must_use]
    pub fn am_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.am.iter(&self.links).map(|s| table.entry(s).block).collect()
    }

    /// Ghost ids of A1out, newest first (tests).
    #[must_use]
    pub fn a1out_blocks(&self) -> Vec<u64> {
        self.a1out.iter().collect()
    }

    /// The resident list `which` names, with the link arena (two disjoint borrows).
    fn list(&mut self, which: u8) -> (&mut List, &mut Links) {
        let list = if which == AM { &mut self.am } else { &mut self.a1in };
        (list, &mut self.links)
    }
}

impl Policy for TwoQ {
    /// In Am: to MRU. In A1in: nothing (a correlated reference), except for a prefetched block whose id
    /// is still in A1out: its first demand access is the re-reference A1out remembers, so it moves to Am
    /// as a miss on A1out would have (our rule; with `first_hit = stay` the next access does it).
    #[inline]
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        let stay = self.first_hit.stays(first_use, table.entry(slot));
        if self.home[slot as usize] == AM {
            if !stay {
                self.am.move_to_front(&mut self.links, slot);
            }
            return;
        }
        let e = table.entry(slot);
        if e.prefetched() && !stay && self.a1out.remove(e.block).is_some() {
            self.a1in.unlink(&mut self.links, slot);
            self.am.push_front(&mut self.links, slot);
            self.home[slot as usize] = AM;
        }
    }

    /// A demand miss on an A1out id goes to Am. A prefetch is no reference: the id stays in A1out until the
    /// block is demanded, and the block enters A1in.
    fn on_miss(&mut self, block: u64, origin: Origin, _table: &BlockTable) {
        self.into_am = origin == Origin::Demand && self.a1out.remove(block).is_some();
    }

    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        grow(&mut self.home, slot, NONE);
        if how.reinsert {
            // A second chance: back to the young end of the queue it was taken from.
            let home = if self.home[slot as usize] == AM { AM } else { A1IN };
            let (list, links) = self.list(home);
            list.push_front(links, slot);
            self.home[slot as usize] = home;
            return;
        }
        let target = if self.into_am && how.origin == Origin::Demand { AM } else { A1IN };
        self.into_am = false;
        let after = how.after.filter(|&a| self.home.get(a as usize) == Some(&target));
        let (list, links) = self.list(target);
        place(list, links, slot, &Insert { after, ..*how });
        self.home[slot as usize] = target;
    }

    /// Reclaim: the oldest of A1in if `|A1in| > Kin`, else the LRU of Am; pinned blocks are passed over and
    /// a queue with no unpinned block yields to the other.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let order = if self.a1in.len() > self.kin { [A1IN, AM] } else { [AM, A1IN] };
        for which in order {
            let (list, links) = self.list(which);
            if let Some(s) = list.last_unpinned(links, table) {
                list.unlink(links, s);
                return Some(s);
            }
        }
        None
    }

    /// An A1in victim leaves its id in A1out (oldest id dropped beyond Kout), unless it is a prefetched
    /// block never accessed and `ghost_prefetched_unused` is off. Am victims leave nothing.
    fn on_evicted(&mut self, slot: Slot, table: &BlockTable) {
        let home = std::mem::replace(&mut self.home[slot as usize], NONE);
        let e = table.entry(slot);
        if home != A1IN || self.kout == 0 || (e.unused_prefetch() && !self.ghost_prefetched_unused) {
            return;
        }
        self.a1out.push_front(e.block, ());
        if self.a1out.len() > self.kout {
            self.a1out.pop_back();
        }
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        let home = std::mem::replace(&mut self.home[slot as usize], NONE);
        let (list, links) = self.list(home);
        list.unlink(links, slot);
    }

    /// To the eviction end of its own queue.
    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        let home = self.home[slot as usize];
        let (list, links) = self.list(home);
        list.move_to_back(links, slot);
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        let mut seen = vec![false; table.slot_bound()];
        for (which, name, list) in [(A1IN, "A1in", &self.a1in), (AM, "Am", &self.am)] {
            let mut n = 0usize;
            for s in list.iter(&self.links) {
                if !table.is_occupied(s) {
                    return Err(format!("{name} holds free slot {s}"));
                }
                if std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("slot {s} twice in A1in/Am"));
                }
                if self.home[s as usize] != which {
                    return Err(format!("slot {s} on {name} but marked {}", self.home[s as usize]));
                }
                n += 1;
            }
            if n != list.len() {
                return Err(format!("{name} has {n} nodes, length {}", list.len()));
            }
        }
        if self.a1in.len() + self.am.len() != table.len() {
            return Err(format!("|A1in|+|Am| = {} but {} resident", self.a1in.len() + self.am.len(), table.len()));
        }
        if self.a1out.len() > self.kout {
            return Err(format!("A1out holds {} > Kout = {}", self.a1out.len(), self.kout));
        }
        for b in self.a1out.iter() {
            if let Some(s) = table.get(b) {
                // Only a prefetch brings back a block whose id is in A1out, into A1in; its first demand access
                // (or, with `first_hit = stay`, the one after) takes the id.
                if !table.entry(s).prefetched() || self.home[s as usize] != A1IN {
                    return Err(format!("A1out remembers {b}, which is resident in Am or not prefetched"));
                }
            }
        }
        Ok(())
    }
}

impl super::NamedPolicy for TwoQ {
    const NAME: &'static str = "2q";
    const SUMMARY: &'static str = "2Q, full version (Johnson & Shasha, VLDB'94)";
    const ALIASES: &'static [&'static str] = &["two_q", "twoq"];
    const BYTES_PER_BLOCK: u64 = 70;
    type Params = TwoQParams;

    fn from_params(_path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env, params))
    }
}
