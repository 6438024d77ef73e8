//! ARC: Adaptive Replacement Cache, two resident LRU lists T1/T2 and two ghost lists B1/B2 (replacement.md §2).
//! Follows N. Megiddo and D. S. Modha, "ARC: a self-tuning, low overhead replacement cache", FAST'03, §IV
//! (Fig. 4), with our prefetch rules from replacement.md §2.
//!
//! The paper's cases map onto the level's hooks: `on_miss` does the ghost look-up, the adaptation of `p`
//! and the directory trimming of case IV; `victim` is REPLACE; `on_evicted` puts the victim on its ghost
//! list; `on_insert` links the new page to MRU(T1) or, after a ghost hit, MRU(T2). Since the level asks
//! for a victim only when the cache is full, REPLACE is skipped when `|T1|+|T2| < c`, as §2 says.
//!
//! `p` is a real number and `δ = max(1, |B2|/|B1|)` (or `|B1|/|B2|`) a real ratio; the paper does not say
//! whether they are whole numbers. libCacheSim's `ARC` (the `libcachesim` 0.3.5 package we compare against)
//! also keeps them real (its older versions rounded `δ` down to an integer, which moves `p` less). Two
//! details differ from the paper's text but not its outcome on a demand-only stream: it does case IV's
//! directory trimming only when it must evict (the paper does it on every miss; they differ only after a
//! block left without eviction), and it tests `|B1| > 0` where the paper tests `|T1| < c` (the same thing
//! when `|T1|+|B1| = c`). Its REPLACE takes from T1 when T2 is empty, as our pinned-entry fallback does.

use serde::{Deserialize, Serialize};

use super::list::grow;
use super::list::{KeyedList, Links, List};
use super::lru::place;
use super::{BlockTable, FirstHit, Insert, Origin, Policy, PolicyEnv, Slot};

/// Parameters of ARC: none (the paper's ARC tunes itself).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArcParams {}

const NONE: u8 = 0;
const T1: u8 = 1;
const T2: u8 = 2;

/// Adaptive Replacement Cache.
#[derive(Debug)]
pub struct Arc {
    c: usize,
    links: Links,
    t1: List,
    t2: List,
    b1: KeyedList<()>,
    b2: KeyedList<()>,
    /// Target size of T1, in `[0, c]`.
    p: f64,
    /// Which resident list each slot is on (kept through `victim` so a second chance goes back home).
    home: Vec<u8>,
    first_hit: FirstHit,
    /// Set by `on_miss`: the block about to enter was a demand hit in B1 or B2, so it goes to T2.
    into_t2: bool,
    /// Set by `on_miss`: the block was in B2 (REPLACE's tie rule).
    in_b2: bool,
    /// Set by `on_miss` in case IV(A) with `|T1| = c`: the next victim leaves T1 without a ghost.
    drop_unghosted: bool,
}

impl Arc {
    /// An empty ARC cache of `env.capacity` pages.
    #[must_use]
    pub fn new(env: &PolicyEnv, _params: ArcParams) -> Self {
        let c = env.capacity;
        Self {
            c,
            links: Links::with_capacity(c),
            t1: List::default(),
            t2: List::default(),
            b1: KeyedList::with_capacity(c + 1),
            b2: KeyedList::with_capacity(c + 1),
            p: 0.0,
            home: vec![NONE; c],
            first_hit: env.first_hit,
            into_t2: false,
            in_b2: false,
            drop_unghosted: false,
        }
    }

    /// The adaptation target `p`.
    #[must_use]
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Blocks of T1, MRU first (tests).
    #[must_use]
    pub fn t1_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.t1.iter(&self.links).map(|s| table.entry(s).block).collect()
    }

    /// Blocks of T2, MRU first (tests).
    #[must_use]
    pub fn t2_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.t2.iter(&self.links).map(|s| table.entry(s).block).collect()
    }

    /// Ghost blocks of B1, MRU first (tests).
    #[must_use]
    pub fn b1_blocks(&self) -> Vec<u64> {
        self.b1.iter().collect()
    }

    /// Ghost blocks of B2, MRU first (tests).
    #[must_use]
    pub fn b2_blocks(&self) -> Vec<u64> {
        self.b2.iter().collect()
    }

    /// The resident list `which` names, with the link arena (two disjoint borrows).
    fn list(&mut self, which: u8) -> (&mut List, &mut Links) {
        let list = if which == T2 { &mut self.t2 } else { &mut self.t1 };
        (list, &mut self.links)
    }

    fn directory(&self) -> usize {
        self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len()
    }

    /// Restore the ghost bounds `|T1|+|B1| <= c` and `|T1|+|T2|+|B1|+|B2| <= 2c` by dropping the oldest
    /// ghosts. The paper's cases keep them already; this matters only after pinned-entry fallbacks or a
    /// timed engine's brief overflow.
    fn trim(&mut self) {
        while self.t1.len() + self.b1.len() > self.c && self.b1.pop_back().is_some() {}
        while self.directory() > 2 * self.c {
            if self.b2.pop_back().is_none() && self.b1.pop_back().is_none() {
                break;
            }
        }
    }
}

impl Policy for Arc {
    /// Case I: a hit moves the page to MRU(T2). The first demand access of a prefetched page is its first
    /// reference: it goes to MRU(T1) (or stays, with `first_hit = stay`).
    #[inline]
    fn on_hit(&mut self, slot: Slot, _table: &BlockTable, first_use: bool) {
        let home = self.home[slot as usize];
        if first_use {
            if self.first_hit == FirstHit::Promote {
                let (list, links) = self.list(home);
                list.move_to_front(links, slot);
            }
            return;
        }
        if home == T2 {
            self.t2.move_to_front(&mut self.links, slot);
        } else {
            self.t1.unlink(&mut self.links, slot);
            self.t2.push_front(&mut self.links, slot);
            self.home[slot as usize] = T2;
        }
    }

    /// Cases II-IV before REPLACE. A prefetch is no reference: it never adapts `p`, and a ghost it finds is
    /// dropped before it takes case IV's path into T1.
    fn on_miss(&mut self, block: u64, origin: Origin, _table: &BlockTable) {
        self.into_t2 = false;
        self.in_b2 = false;
        self.drop_unghosted = false;
        let c = self.c as f64;
        if origin == Origin::Demand {
            if self.b1.contains(block) {
                // Case II.
                let delta = (self.b2.len() as f64 / self.b1.len() as f64).max(1.0);
                self.p = (self.p + delta).min(c);
                self.b1.remove(block);
                self.into_t2 = true;
                return;
            }
            if self.b2.contains(block) {
                // Case III.
                let delta = (self.b1.len() as f64 / self.b2.len() as f64).max(1.0);
                self.p = (self.p - delta).max(0.0);
                self.b2.remove(block);
                self.into_t2 = true;
                self.in_b2 = true;
                return;
            }
        } else if self.b1.remove(block).is_none() {
            self.b2.remove(block);
        }
        // Case IV.
        let t1 = self.t1.len();
        if t1 + self.b1.len() >= self.c {
            if t1 < self.c {
                self.b1.pop_back();
            } else {
                self.drop_unghosted = true;
            }
        } else if self.directory() >= 2 * self.c && self.b2.pop_back().is_none() {
            self.b1.pop_back();
        }
    }

    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        grow(&mut self.home, slot, NONE);
        if how.reinsert {
            // A second chance: back to MRU of the list it was taken from.
            let home = if self.home[slot as usize] == T2 { T2 } else { T1 };
            let (list, links) = self.list(home);
            list.push_front(links, slot);
            self.home[slot as usize] = home;
            return;
        }
        let target = if self.into_t2 && how.origin == Origin::Demand { T2 } else { T1 };
        self.into_t2 = false;
        self.in_b2 = false;
        let after = how.after.filter(|&a| self.home.get(a as usize) == Some(&target));
        let how = Insert { after, ..*how };
        let (list, links) = self.list(target);
        place(list, links, slot, &how);
        self.home[slot as usize] = target;
        self.trim();
    }

    /// REPLACE: LRU(T1) if `|T1| > p` (or `|T1| = p` on a B2 hit), else LRU(T2); pinned pages are passed
    /// over, and a list with no unpinned page yields to the other.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let t1 = self.t1.len() as f64;
        let from_t1 = self.drop_unghosted || (!self.t1.is_empty() && (t1 > self.p || (self.in_b2 && t1 == self.p)));
        let order = if from_t1 { [T1, T2] } else { [T2, T1] };
        for which in order {
            let (list, links) = self.list(which);
            if let Some(s) = list.last_unpinned(links, table) {
                list.unlink(links, s);
                return Some(s);
            }
        }
        None
    }

    fn on_evicted(&mut self, slot: Slot, table: &BlockTable) {
        let block = table.entry(slot).block;
        let home = std::mem::replace(&mut self.home[slot as usize], NONE);
        let unghosted = std::mem::take(&mut self.drop_unghosted) && home == T1;
        if unghosted {
            return;
        }
        if home == T2 {
            self.b2.push_front(block, ());
        } else {
            self.b1.push_front(block, ());
        }
        self.trim();
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        let home = std::mem::replace(&mut self.home[slot as usize], NONE);
        let (list, links) = self.list(home);
        list.unlink(links, slot);
    }

    /// To the LRU end of its own list (which of T1 and T2 loses a page next is still REPLACE's choice).
    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        let home = self.home[slot as usize];
        let (list, links) = self.list(home);
        list.move_to_back(links, slot);
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        let mut seen = vec![NONE; table.slot_bound()];
        for (which, list) in [(T1, &self.t1), (T2, &self.t2)] {
            let mut n = 0usize;
            for s in list.iter(&self.links) {
                if !table.is_occupied(s) {
                    return Err(format!("T{which} holds free slot {s}"));
                }
                if seen[s as usize] != NONE {
                    return Err(format!("slot {s} twice in T1/T2"));
                }
                seen[s as usize] = which;
                if self.home[s as usize] != which {
                    return Err(format!("slot {s} on T{which} but marked {}", self.home[s as usize]));
                }
                n += 1;
            }
            if n != list.len() {
                return Err(format!("T{which} has {n} nodes, length {}", list.len()));
            }
        }
        let (t1, t2, b1, b2) = (self.t1.len(), self.t2.len(), self.b1.len(), self.b2.len());
        if t1 + t2 != table.len() {
            return Err(format!("|T1|+|T2| = {} but {} resident", t1 + t2, table.len()));
        }
        for (name, ghosts, other) in [("B1", &self.b1, &self.b2), ("B2", &self.b2, &self.b1)] {
            for b in ghosts.iter() {
                if table.contains(b) {
                    return Err(format!("ghost {b} of {name} is resident"));
                }
                if other.contains(b) {
                    return Err(format!("ghost {b} in both B1 and B2"));
                }
            }
        }
        if b1 > 0 && t1 + b1 > self.c {
            return Err(format!("|T1|+|B1| = {} > c = {}", t1 + b1, self.c));
        }
        if b1 + b2 > 0 && t1 + t2 + b1 + b2 > 2 * self.c {
            return Err(format!("directory {} > 2c = {}", t1 + t2 + b1 + b2, 2 * self.c));
        }
        if !(0.0..=self.c as f64).contains(&self.p) {
            return Err(format!("p = {} outside [0, {}]", self.p, self.c));
        }
        Ok(())
    }
}

impl super::NamedPolicy for Arc {
    const NAME: &'static str = "arc";
    const SUMMARY: &'static str = "Adaptive Replacement Cache (Megiddo & Modha, FAST'03)";
    const BYTES_PER_BLOCK: u64 = 100;
    type Params = ArcParams;

    fn from_params(_path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env, params))
    }
}
