//! SARC's cache side: a SEQ and a RANDOM LRU list whose split adapts by equalizing marginal utilities.
//! Follows B. S. Gill and D. S. Modha, "SARC: Sequential Prefetching in Adaptive Replacement Cache",
//! USENIX ATC 2005 ("Marginal Utility of SEQ/RANDOM", "Equalizing Marginal Utilities" eq. 6, Figure 4),
//! as restated in `shared/docs/algorithms/sarc.md`; the prefetch side is [`crate::prefetch::sarc`].
//!
//! # How SARC is split
//!
//! The policy owns everything the paper keeps per list: the two lists, the per-block timestamps `T(x)`,
//! `seqMiss`, `adapt`, `ratio` and `desiredSeqListSize`. The prefetcher owns the sequential-detection
//! counters and the trigger marks, and talks to the policy only through placements:
//!
//! - a demand block enters SEQ when the prefetcher puts `Placement::List(1)` on the request (a
//!   *sequential miss*) or `List(2)` (a block of a group the same request set off, in flight block by
//!   block: not a miss in SARC's sense); every other demand block enters RANDOM. Each demand block placed
//!   with `List(1)` counts one sequential miss (`seqMiss += 1`): block accesses are the unit on both sides
//!   of eq. 6, since RANDOM's utility is counted in block hits.
//! - every prefetched block enters SEQ (`Placement::List(0)` would send it to RANDOM; no SARC rule does).
//! - a prefetch run naming a block already in SEQ moves it to MRU(SEQ) ([`Policy::on_prefetch_cached`]);
//!   a block in RANDOM keeps its place. This is both the "already cached group blocks only move to MRU"
//!   rule and, with the runs the prefetcher builds, the fix of the prefetch/LRU anomaly.
//!
//! The policy with any prefetcher other than `sarc` or `none` is rejected by the configuration (its
//! `NamedPolicy::refuse_prefetcher`, applied by [`crate::build::check_pairing`]): SEQ's marginal utility is
//! estimated from sequential misses, which only the SARC prefetcher reports, so SEQ would be squeezed to
//! nothing whatever the workload. With `none`, SEQ stays empty and the policy is LRU over RANDOM.
//!
//! # Decisions where the reference is silent (all \[ours\])
//!
//! - Virtual time `t` counts demand block accesses (hits and demand insertions); a prefetched block takes
//!   the current `t`. Timestamps never decrease from the LRU end to the MRU end of a list.
//! - New blocks go to the MRU end one by one in address order (the farther block ends nearer MRU), as
//!   the reference writes "insert x, then x+1 .. x+u, at MRU of SEQ"; the level's `after` hint is not used.
//!   `Placement::Lru` (level option `pf_insert = "lru"`) puts a block at the LRU end with that end's stamp.
//! - `ΔL` is real-valued, `max(1, delta_l_share × C)` as sarc.md gives it (1.28 at C = 64): the paper
//!   uses it as a factor (`ratio = 2·seqMiss·ΔL/|SEQ|`, the bottom test's `ΔL/L`) and as a size compared
//!   with list lengths (`|SEQ| < ΔL`), none of which needs a whole number; the paper gives no value. Where
//!   it counts blocks (the exact bottom holds the blocks at positions `1..=ΔL` from the LRU end, and a
//!   list of `n <= ΔL` blocks is all bottom) only `floor(ΔL)` can differ, and those tests are the same for
//!   `ΔL` and `floor(ΔL)`. Before, `ΔL` was `floor` in every use, which made C = 64 behave as ΔL = 1
//!   (`studies/policies.md`, finding 5).
//! - In the global-LRU case of the eviction rule, equal timestamps evict from SEQ.
//! - `desiredSeqListSize` moves by `adapt/2` on every block that really leaves (not on a second chance).
//! - The level option `first_hit = "stay"` is honoured like in the other list policies (no move, no new
//!   stamp), though SARC itself always moves a hit block.

use serde::{Deserialize, Serialize};

use super::list::{grow, Links, List, NIL};
use super::{BlockTable, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};
use crate::component::ConfigError;

/// `Placement::List` index of RANDOM.
pub const RANDOM: u8 = 0;
/// `Placement::List` index of SEQ, on demand blocks: a sequential miss.
pub const SEQ: u8 = 1;
/// `Placement::List` index for demand blocks that a prefetch group set off by the same request covers:
/// SEQ, but not a sequential miss (block by block they would be hits on that group, in flight).
pub const GROUP: u8 = 2;
/// Not on a list (a slot's list, not a placement: distinct from [`GROUP`]).
const NONE: u8 = 3;

/// How "is `x` in the bottom `ΔL` of its list" is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BottomMode {
    /// The paper's cheap test from per-block timestamps and the list's temporal length:
    /// `T(x) - T(LRU) <= (ΔL / |list|) × (T(MRU) - T(LRU))` (default).
    #[default]
    Timestamp,
    /// The block is among the `ΔL` blocks nearest the LRU end (tracked exactly, O(1) per list operation).
    Exact,
}

/// The value of `desiredSeqListSize` before the first adaptation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitDesired {
    /// Start at 0 and let `adapt` grow it (default, \[ours\]).
    #[default]
    Zero,
    /// Take the size of SEQ the first time `adapt` is set (the third-party port's choice).
    CurrentSeqSize,
}

/// Parameters of the SARC policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SarcParams {
    /// `ΔL`, the size of a list's bottom, as a share of the capacity: `max(1, floor(share × C))` blocks.
    /// Default 0.02 \[ours\]: the paper says "a small constant fraction of the cache size".
    pub delta_l_share: f64,
    /// `ΔL` in blocks; overrides `delta_l_share` when set.
    pub delta_l: Option<u64>,
    /// `largeRatio`: a hit in SEQ's bottom forces SEQ to grow when `ratio` exceeds it (default 20, the
    /// constant of the paper's Figure 4).
    pub large_ratio: f64,
    /// The bottom test (default `timestamp`).
    pub bottom_mode: BottomMode,
    /// `desiredSeqListSize` before the first adaptation (default `zero`).
    pub init_desired: InitDesired,
}

impl Default for SarcParams {
    fn default() -> Self {
        Self {
            delta_l_share: 0.02,
            delta_l: None,
            large_ratio: 20.0,
            bottom_mode: BottomMode::Timestamp,
            init_desired: InitDesired::Zero,
        }
    }
}

impl SarcParams {
    /// Reject impossible values, naming the key under `path`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if !(self.delta_l_share.is_finite() && self.delta_l_share > 0.0 && self.delta_l_share <= 1.0) {
            return Err(ConfigError::new(
                format!("{path}.delta_l_share"),
                format!("must be in (0, 1], got {}", self.delta_l_share),
            ));
        }
        if self.delta_l == Some(0) {
            return Err(ConfigError::new(format!("{path}.delta_l"), "must be at least 1 block"));
        }
        if !(self.large_ratio.is_finite() && self.large_ratio >= 0.0) {
            return Err(ConfigError::new(
                format!("{path}.large_ratio"),
                format!("must be a non-negative number, got {}", self.large_ratio),
            ));
        }
        Ok(())
    }

    /// `ΔL` for a cache of `capacity` blocks: `delta_l` when set, else `max(1, delta_l_share × C)`.
    #[must_use]
    pub fn delta_l_value(&self, capacity: usize) -> f64 {
        match self.delta_l {
            Some(d) => (d as f64).max(1.0),
            None => (self.delta_l_share * capacity as f64).max(1.0),
        }
    }

    /// `floor(ΔL)`: the number of blocks in a list's bottom, for a cache of `capacity` blocks.
    #[must_use]
    pub fn delta_l_blocks(&self, capacity: usize) -> usize {
        match self.delta_l {
            Some(d) => usize::try_from(d).unwrap_or(usize::MAX).max(1),
            None => ((self.delta_l_share * capacity as f64).floor() as usize).max(1),
        }
    }
}

/// What SARC keeps per slot, packed in one word so the per-slot array stays small (it is touched on
/// every hit and insertion): `T(x)` in bits 0..61, the list in bits 61..63, the exact-mode bottom mark in
/// bit 63. 2^61 demand accesses are out of any trace's reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotState(u64);

const STAMP_BITS: u32 = 61;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;
const BOTTOM_BIT: u64 = 1 << 63;
const FREE: SlotState = SlotState((NONE as u64) << STAMP_BITS);

impl SlotState {
    /// Stamped `t`, on list `home`, not in a bottom.
    #[inline]
    fn at(t: u64, home: u8) -> Self {
        Self((t & STAMP_MASK) | (u64::from(home & 3) << STAMP_BITS))
    }
    /// `T(x)`: the virtual time `x` was last placed at the MRU end of its list.
    #[inline]
    fn stamp(self) -> u64 {
        self.0 & STAMP_MASK
    }
    /// The list the slot is on (kept through `victim`, so a second chance goes back home).
    #[inline]
    fn home(self) -> u8 {
        ((self.0 >> STAMP_BITS) & 3) as u8
    }
    /// Exact mode: the slot is in its list's bottom `ΔL`.
    #[inline]
    fn in_bot(self) -> bool {
        self.0 & BOTTOM_BIT != 0
    }
    #[inline]
    fn set_stamp(&mut self, t: u64) {
        self.0 = (self.0 & !STAMP_MASK) | (t & STAMP_MASK);
    }
    #[inline]
    fn set_home(&mut self, home: u8) {
        self.0 = (self.0 & !(3 << STAMP_BITS)) | (u64::from(home & 3) << STAMP_BITS);
    }
    #[inline]
    fn set_in_bot(&mut self, on: bool) {
        self.0 = if on { self.0 | BOTTOM_BIT } else { self.0 & !BOTTOM_BIT };
    }
}

/// One of the two lists and, in exact mode, the MRU-most block of its bottom `ΔL`.
#[derive(Clone, Debug)]
struct Side {
    list: List,
    bound: u32,
}

/// SARC's SEQ and RANDOM lists with marginal-utility adaptation.
#[derive(Debug)]
pub struct Sarc {
    c: usize,
    links: Links,
    /// Indexed by [`RANDOM`] and [`SEQ`].
    sides: [Side; 2],
    /// Per slot: `T(x)`, the list, the bottom mark (one record, so a hit touches one cache line).
    slots: Vec<SlotState>,
    exact: bool,
    t: u64,
    seq_miss: u64,
    adapt: f64,
    desired: f64,
    ratio: f64,
    adapted: bool,
    /// `floor(ΔL)`: the bottom's block count.
    delta_l: usize,
    /// `ΔL` itself, for the ratio, the bottom test's fraction and the list-size comparison.
    delta_l_real: f64,
    large_ratio: f64,
    init_desired: InitDesired,
    first_hit: FirstHit,
}

impl Sarc {
    /// An empty SARC cache of `env.capacity` blocks.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: SarcParams) -> Self {
        let c = env.capacity;
        let side = Side { list: List::default(), bound: NIL };
        Self {
            c,
            links: Links::with_capacity(c),
            sides: [side.clone(), side],
            slots: vec![FREE; c],
            exact: params.bottom_mode == BottomMode::Exact,
            t: 0,
            seq_miss: 0,
            adapt: 0.0,
            desired: 0.0,
            ratio: 0.0,
            adapted: false,
            delta_l: params.delta_l_blocks(c),
            delta_l_real: params.delta_l_value(c),
            large_ratio: params.large_ratio,
            init_desired: params.init_desired,
            first_hit: env.first_hit,
        }
    }

    /// `desiredSeqListSize`.
    #[must_use]
    pub fn desired(&self) -> f64 {
        self.desired
    }
    /// `adapt`, in `[-1, 1]`.
    #[must_use]
    pub fn adapt(&self) -> f64 {
        self.adapt
    }
    /// Sequential misses since the last hit in RANDOM's bottom.
    #[must_use]
    pub fn seq_miss(&self) -> u64 {
        self.seq_miss
    }
    /// The `ratio = 2·seqMiss·ΔL/|SEQ|` of the last hit.
    #[must_use]
    pub fn ratio(&self) -> f64 {
        self.ratio
    }
    /// `ΔL` in blocks.
    #[must_use]
    pub fn delta_l(&self) -> usize {
        self.delta_l
    }
    /// The virtual time: demand block accesses so far.
    #[must_use]
    pub fn now(&self) -> u64 {
        self.t
    }
    /// Blocks of SEQ, MRU first (tests).
    #[must_use]
    pub fn seq_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.blocks(SEQ, table)
    }
    /// Blocks of RANDOM, MRU first (tests).
    #[must_use]
    pub fn random_blocks(&self, table: &BlockTable) -> Vec<u64> {
        self.blocks(RANDOM, table)
    }
    /// `T(block)` of a resident block (tests).
    #[must_use]
    pub fn stamp_of(&self, block: u64, table: &BlockTable) -> Option<u64> {
        table.get(block).map(|s| self.slots[s as usize].stamp())
    }

    fn blocks(&self, which: u8, table: &BlockTable) -> Vec<u64> {
        self.sides[which as usize].list.iter(&self.links).map(|s| table.entry(s).block).collect()
    }

    fn len(&self, which: u8) -> usize {
        self.sides[which as usize].list.len()
    }

    fn ensure(&mut self, slot: Slot) {
        grow(&mut self.slots, slot, FREE);
    }

    /// Put an unlinked `slot` at the MRU end of `which`, stamped now.
    #[inline]
    fn link_front(&mut self, which: u8, slot: Slot) {
        let side = &mut self.sides[which as usize];
        side.list.push_front(&mut self.links, slot);
        // One store of the whole state: stamp now, home `which`, bottom mark only in exact mode.
        let mut state = SlotState::at(self.t, which);
        if self.exact {
            let bottom = side.list.len() <= self.delta_l;
            state.set_in_bot(bottom);
            if bottom {
                side.bound = slot;
            }
        }
        self.slots[slot as usize] = state;
    }

    /// Put an unlinked `slot` at the LRU end of `which`, with that end's stamp (timestamps stay ordered).
    #[inline]
    fn link_back(&mut self, which: u8, slot: Slot) {
        let side = &mut self.sides[which as usize];
        let stamp = side.list.tail().map_or(self.t, |s| self.slots[s as usize].stamp());
        side.list.push_back(&mut self.links, slot);
        if self.exact {
            self.slots[slot as usize].set_in_bot(true);
            let n = side.list.len();
            if n == 1 {
                side.bound = slot;
            } else if n > self.delta_l {
                // The bottom keeps ΔL blocks: its MRU-most block leaves it.
                let old = side.bound;
                self.slots[old as usize].set_in_bot(false);
                side.bound = self.links.next(old).unwrap_or(NIL);
            }
        }
        self.slots[slot as usize].set_home(which);
        self.slots[slot as usize].set_stamp(stamp);
    }

    /// Take `slot` off list `which` (its home stays until the caller changes it).
    #[inline]
    fn unlink(&mut self, which: u8, slot: Slot) {
        let side = &mut self.sides[which as usize];
        if self.exact && self.slots[slot as usize].in_bot() {
            if side.list.len() > self.delta_l {
                // The block just above the bottom joins it.
                if let Some(p) = self.links.prev(side.bound) {
                    self.slots[p as usize].set_in_bot(true);
                    side.bound = p;
                }
            } else if side.bound == slot {
                side.bound = self.links.next(slot).unwrap_or(NIL);
            }
            self.slots[slot as usize].set_in_bot(false);
        }
        side.list.unlink(&mut self.links, slot);
    }

    /// Whether `slot` (on list `which`) is in that list's bottom `ΔL`.
    #[inline]
    fn in_bottom(&self, which: u8, slot: Slot) -> bool {
        if self.exact {
            return self.slots[slot as usize].in_bot();
        }
        let list = &self.sides[which as usize].list;
        let n = list.len();
        if n <= self.delta_l {
            return true;
        }
        let (Some(tail), Some(head)) = (list.tail(), list.head()) else { return true };
        let lo = self.slots[tail as usize].stamp();
        let hi = self.slots[head as usize].stamp();
        let x = self.slots[slot as usize].stamp();
        x.saturating_sub(lo) as f64 <= self.delta_l_real / n as f64 * hi.saturating_sub(lo) as f64
    }

    fn set_adapt(&mut self, value: f64) {
        if !self.adapted {
            self.adapted = true;
            if self.init_desired == InitDesired::CurrentSeqSize {
                self.desired = self.len(SEQ) as f64;
            }
        }
        self.adapt = value;
    }
}

impl Policy for Sarc {
    /// Figure 4's hit path: `ratio` from the current `seqMiss` and `|SEQ|`; a hit in RANDOM's bottom sets
    /// `adapt = clamp(ratio - 1)` and restarts `seqMiss`; a hit in SEQ's bottom with `ratio > largeRatio`
    /// sets `adapt = 1`; the block moves to MRU of its own list.
    #[inline]
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        self.t += 1;
        let which = self.slots[slot as usize].home();
        self.ratio = 2.0 * self.seq_miss as f64 * self.delta_l_real / self.len(SEQ).max(1) as f64;
        if which == RANDOM && self.in_bottom(RANDOM, slot) {
            self.seq_miss = 0;
            self.set_adapt((self.ratio - 1.0).clamp(-1.0, 1.0));
        }
        if which == SEQ && self.ratio > self.large_ratio && self.in_bottom(SEQ, slot) {
            self.set_adapt(1.0);
        }
        if !self.first_hit.stays(first_use, table.entry(slot)) {
            self.unlink(which, slot);
            self.link_front(which, slot);
        }
    }

    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        self.ensure(slot);
        if how.reinsert {
            let home = if self.slots[slot as usize].home() == SEQ { SEQ } else { RANDOM };
            self.link_front(home, slot);
            return;
        }
        let which = match (how.placement, how.origin) {
            (Placement::List(RANDOM), _) => RANDOM,
            (Placement::List(SEQ | GROUP), _) | (_, Origin::Prefetch) => SEQ,
            (_, Origin::Demand) => RANDOM,
        };
        if how.origin == Origin::Demand {
            self.t += 1;
            if how.placement == Placement::List(SEQ) {
                self.seq_miss += 1;
            }
        }
        if how.placement == Placement::Lru {
            self.link_back(which, slot);
        } else {
            self.link_front(which, slot);
        }
    }

    /// The eviction rule: global LRU while either list is smaller than `ΔL`, else LRU(SEQ) when
    /// `|SEQ| > desiredSeqListSize`, else LRU(RANDOM). Pinned blocks are passed over; a list with nothing
    /// evictable yields to the other.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let (ns, nr) = (self.len(SEQ), self.len(RANDOM));
        let last = |this: &mut Self, which: u8| this.sides[which as usize].list.last_unpinned(&mut this.links, table);
        // Only the global-LRU case compares the two lists' ends; otherwise one list's end is read.
        let first = if ns == 0 {
            RANDOM
        } else if nr == 0 {
            SEQ
        } else if (ns as f64) < self.delta_l_real || (nr as f64) < self.delta_l_real {
            match (last(self, SEQ), last(self, RANDOM)) {
                (Some(s), Some(r)) => {
                    if self.slots[s as usize].stamp() <= self.slots[r as usize].stamp() {
                        SEQ
                    } else {
                        RANDOM
                    }
                }
                (Some(_), None) => SEQ,
                _ => RANDOM,
            }
        } else if ns as f64 > self.desired {
            SEQ
        } else {
            RANDOM
        };
        let other = if first == SEQ { RANDOM } else { SEQ };
        let (which, slot) = match last(self, first) {
            Some(s) => (first, s),
            None => (other, last(self, other)?),
        };
        self.unlink(which, slot);
        Some(slot)
    }

    /// A block really left: `desiredSeqListSize += adapt/2`, within `[0, C]`.
    fn on_evicted(&mut self, slot: Slot, _table: &BlockTable) {
        self.slots[slot as usize].set_home(NONE);
        self.desired = (self.desired + self.adapt / 2.0).clamp(0.0, self.c as f64);
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        let which = self.slots[slot as usize].home();
        if which != NONE {
            self.unlink(which, slot);
            self.slots[slot as usize].set_home(NONE);
        }
    }

    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        let which = self.slots[slot as usize].home();
        self.unlink(which, slot);
        self.link_back(which, slot);
    }

    /// A prefetch run named a cached block: a block in SEQ moves to MRU(SEQ); one in RANDOM stays.
    fn on_prefetch_cached(&mut self, slot: Slot, _table: &BlockTable, _rank: u32) {
        if self.slots[slot as usize].home() == SEQ {
            self.unlink(SEQ, slot);
            self.link_front(SEQ, slot);
        }
    }

    /// List membership and sizes, timestamps ordered from LRU to MRU, the bottom marks (exact mode) and
    /// the ranges of `desiredSeqListSize` and `adapt`.
    fn check(&self, table: &BlockTable) -> Result<(), String> {
        let name = |w: u8| if w == SEQ { "SEQ" } else { "RANDOM" };
        let mut seen = vec![false; table.slot_bound()];
        let mut total = 0usize;
        for which in [RANDOM, SEQ] {
            let side = &self.sides[which as usize];
            let mut n = 0usize;
            let mut prev_stamp = u64::MAX;
            for s in side.list.iter(&self.links) {
                if !table.is_occupied(s) {
                    return Err(format!("{} holds free slot {s}", name(which)));
                }
                if std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("slot {s} twice on SEQ/RANDOM"));
                }
                if self.slots[s as usize].home() != which {
                    return Err(format!("slot {s} on {} but marked {}", name(which), self.slots[s as usize].home()));
                }
                let st = self.slots[s as usize].stamp();
                if st > prev_stamp {
                    return Err(format!("{}: stamp {st} of slot {s} above a newer {prev_stamp}", name(which)));
                }
                if st > self.t {
                    return Err(format!("{}: stamp {st} of slot {s} is in the future ({})", name(which), self.t));
                }
                prev_stamp = st;
                n += 1;
            }
            if n != side.list.len() {
                return Err(format!("{} has {n} nodes, length {}", name(which), side.list.len()));
            }
            total += n;
            if self.exact {
                let k = self.delta_l.min(n);
                for (i, s) in side.list.iter_from_tail(&self.links).enumerate() {
                    let want = i < k;
                    if self.slots[s as usize].in_bot() != want {
                        return Err(format!("{}: slot {s} at depth {i} bottom mark {}", name(which), !want));
                    }
                    if i + 1 == k && side.bound != s {
                        return Err(format!("{}: bottom bound {} but {s} is its top", name(which), side.bound));
                    }
                }
                if n == 0 && side.bound != NIL {
                    return Err(format!("{}: empty with bottom bound {}", name(which), side.bound));
                }
            }
        }
        if total != table.len() {
            return Err(format!("|SEQ|+|RANDOM| = {total} but {} resident", table.len()));
        }
        if !(0.0..=self.c as f64).contains(&self.desired) {
            return Err(format!("desiredSeqListSize {} outside [0, {}]", self.desired, self.c));
        }
        if !(-1.0..=1.0).contains(&self.adapt) {
            return Err(format!("adapt {} outside [-1, 1]", self.adapt));
        }
        Ok(())
    }
}

impl super::NamedPolicy for Sarc {
    const NAME: &'static str = "sarc";
    const SUMMARY: &'static str =
        "SARC's SEQ and RANDOM lists, adaptive split (Gill & Modha, USENIX ATC'05); prefetcher sarc";
    const BYTES_PER_BLOCK: u64 = 50;
    type Params = SarcParams;

    fn from_params(path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        params.validate(path)?;
        Ok(Self::new(env, params))
    }

    /// SEQ's marginal utility is estimated from the sequential misses that only the `sarc` prefetcher
    /// reports (as `Placement::List(1)` on demand blocks): with another prefetcher the adaptation would
    /// squeeze SEQ to nothing whatever the workload. `none` is allowed (SEQ stays empty: LRU over RANDOM).
    fn refuse_prefetcher(prefetcher: &str) -> Option<String> {
        (!matches!(prefetcher, "sarc" | "none")).then(|| {
            format!(
                "policy 'sarc' needs prefetcher 'sarc' (its SEQ list adapts to the sequential misses only that \
                 prefetcher reports), or 'none'; got '{prefetcher}'"
            )
        })
    }
}
