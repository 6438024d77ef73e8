//! CLOCK (second chance): a ring of frames swept by a hand that clears reference counters (replacement.md §1).
//! After F. J. Corbató, "A paging experiment with the Multics system" (MIT Project MAC, 1968), with the
//! n-bit counter of libCacheSim's `Clock`.
//!
//! The ring is a [`List`] whose tail is the frame under the hand: moving the tail to the head is the hand
//! stepping past it, and a new block enters at the head, the frame the hand has just left. libCacheSim's
//! `Clock` (the `libcachesim` 0.3.5 package we compare against) is the same machine described as a FIFO
//! with re-insertion: a counter per object, capped at `2^n - 1` (n = 1 by default); a hit adds one up to the
//! cap; a new object enters at the young end with the counter at its `init_freq` (0 by default); to evict,
//! it looks at the oldest object and, while that object's counter is positive, takes one off and moves it to
//! the young end, until it finds an object at 0, which it evicts. Our `bits` and `insert_ref` are its
//! `n_bit_counter` and `init_freq`, so both give the same misses on the same stream.
//!
//! In the timed engine a frame in flight is passed untouched; a cache mostly in flight would have the hand
//! walk thousands of such frames at every eviction, so runs of them the hand passed on an earlier lap are
//! passed again in one move (`policy::clock_runs`), with the walk's result.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::clock_runs::PinnedRuns;
use super::list::{grow, Links, List};
use super::lru::{check_single_list, place};
use super::{BlockTable, FirstHit, Insert, Origin, Policy, PolicyEnv, Slot};

/// Parameters of CLOCK.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockParams {
    /// Bits of each frame's reference counter, 1 to 8 (default 1: Corbató's reference bit; libCacheSim's
    /// `n_bit_counter`). A hit adds one up to `2^bits - 1`; each pass of the hand takes one off.
    #[serde(deserialize_with = "de_bits")]
    pub bits: u8,
    /// Counter of a block inserted on a demand miss: `false`/`0` (default, replacement.md §1 and
    /// libCacheSim's `init_freq`), `true`/`1`, or any value up to `2^bits - 1`. Prefetched blocks always
    /// start at 0.
    #[serde(deserialize_with = "de_insert_ref")]
    pub insert_ref: u8,
}

impl Default for ClockParams {
    fn default() -> Self {
        Self { bits: 1, insert_ref: 0 }
    }
}

fn de_bits<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let bits = u8::deserialize(d)?;
    if (1..=8).contains(&bits) {
        Ok(bits)
    } else {
        Err(de::Error::custom(format!("bits must be 1 to 8, got {bits}")))
    }
}

/// Accepts a flag or a counter value, since with one bit the two mean the same.
fn de_insert_ref<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    struct RefVisitor;
    impl Visitor<'_> for RefVisitor {
        type Value = u8;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a boolean or a counter value from 0 to 255")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<u8, E> {
            Ok(u8::from(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u8, E> {
            u8::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u8, E> {
            u8::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
        }
    }
    d.deserialize_any(RefVisitor)
}

/// CLOCK with an n-bit counter per frame.
#[derive(Debug)]
pub struct Clock {
    links: Links,
    /// The ring, read from the hand: tail = the frame under the hand, head = the frame it just passed.
    ring: List,
    count: Vec<u8>,
    max: u8,
    insert_ref: u8,
    first_hit: FirstHit,
    /// Runs of frames in flight the hand has passed, stepped over in one move on the next lap.
    runs: PinnedRuns,
    /// Walk every frame (tests: the reference the runs must equal).
    walk_only: bool,
    /// Runs passed in one move (tests).
    #[cfg(test)]
    runs_passed: u64,
}

impl Clock {
    /// An empty ring for `env.capacity` frames.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: ClockParams) -> Self {
        let bits = u32::from(params.bits.clamp(1, 8));
        let max = u8::try_from((1u32 << bits) - 1).unwrap_or(u8::MAX);
        Self {
            links: Links::with_capacity(env.capacity),
            ring: List::default(),
            count: vec![0; env.capacity],
            max,
            insert_ref: params.insert_ref.min(max),
            first_hit: env.first_hit,
            runs: PinnedRuns::default(),
            walk_only: false,
            #[cfg(test)]
            runs_passed: 0,
        }
    }

    /// The sweep once a frame in flight is under the hand or runs exist ([`Policy::victim`]).
    #[inline(never)]
    fn sweep_in_flight(&mut self, table: &BlockTable) -> Option<Slot> {
        // Every frame in flight: the sweep would go round once and leave the ring as it was.
        if table.all_pinned() {
            return None;
        }
        self.runs.begin_search(table);
        #[cfg(debug_assertions)]
        let before = (!self.walk_only
            && self.ring.len() <= 1 << 14
            && self.ring.tail().is_some_and(|t| table.entry(t).pinned()))
        .then(|| self.walking_copy());
        let mut rotated = false;
        let mut pinned_run = 0usize;
        let mut tracking = self.runs.any();
        let found = loop {
            let Some(s) = self.ring.tail() else { break None };
            if table.entry(s).pinned() {
                if !self.walk_only {
                    let links = &self.links;
                    let pass = self.runs.pass_at(s, table, |x| links.prev(x), |x| links.next(x));
                    if let Some(pass) = pass.filter(|p| pinned_run + p.len < self.ring.len()) {
                        self.ring.rotate_tail_through(&mut self.links, pass.through);
                        pinned_run += pass.len;
                        rotated = true;
                        #[cfg(test)]
                        {
                            self.runs_passed += 1;
                        }
                        continue;
                    }
                    self.runs.walked_pinned(s, table);
                    tracking = true;
                }
                pinned_run += 1;
                self.ring.move_to_front(&mut self.links, s);
                // A full lap over pinned frames: nothing to evict, and the hand is back where it began.
                if pinned_run >= self.ring.len() {
                    break None;
                }
                continue;
            }
            if tracking {
                self.runs.close();
                let links = &self.links;
                self.runs.leaves_tail(s, |x| links.prev(x));
            }
            if self.count[s as usize] > 0 {
                pinned_run = 0;
                self.count[s as usize] -= 1;
            } else {
                self.ring.unlink(&mut self.links, s);
                break Some(s);
            }
            self.ring.move_to_front(&mut self.links, s);
        };
        self.runs.close();
        #[cfg(debug_assertions)]
        if let (Some(mut reference), true) = (before, rotated) {
            let walked = reference.sweep_in_flight(table);
            assert_eq!(found, walked, "CLOCK's run passing found another victim than the walk");
            assert!(
                reference.hand_order(table) == self.hand_order(table),
                "CLOCK's run passing left the ring unlike the walk"
            );
        }
        let _ = rotated;
        found
    }

    /// A copy that walks every frame, to check a search that passed runs (debug builds).
    #[cfg(debug_assertions)]
    fn walking_copy(&self) -> Self {
        Self {
            links: self.links.clone(),
            ring: self.ring.clone(),
            count: self.count.clone(),
            max: self.max,
            insert_ref: self.insert_ref,
            first_hit: self.first_hit,
            runs: PinnedRuns::default(),
            walk_only: true,
            #[cfg(test)]
            runs_passed: 0,
        }
    }

    /// Blocks in hand order: the frame under the hand first (tests).
    #[must_use]
    pub fn hand_order(&self, table: &BlockTable) -> Vec<(u64, u8)> {
        self.ring.iter_from_tail(&self.links).map(|s| (table.entry(s).block, self.count[s as usize])).collect()
    }
}

impl Policy for Clock {
    #[inline]
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        if !self.first_hit.stays(first_use, table.entry(slot)) {
            let c = &mut self.count[slot as usize];
            *c = c.saturating_add(1).min(self.max);
        }
    }

    #[inline]
    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        grow(&mut self.count, slot, 0);
        self.count[slot as usize] = if how.origin == Origin::Demand { self.insert_ref } else { 0 };
        self.runs.touch(slot);
        if let Some(at) = how.after {
            self.runs.touch(at);
        }
        place(&mut self.ring, &mut self.links, slot, how);
    }

    /// Sweep: a pinned frame is passed over untouched, a frame with a positive counter loses one and is
    /// passed, the first unpinned frame at 0 is the victim. Counters only fall, so this ends unless every
    /// frame is pinned, which a full lap of pinned frames detects. The plain sweep runs until it meets a
    /// frame in flight; from there (or from the start, once runs of frames in flight exist) the sweep
    /// passes a run of pinned frames the hand passed on an earlier lap, and that nothing has touched since,
    /// in one move (`policy::clock_runs`), and the ring ends as the frame-by-frame walk leaves it.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        if !self.runs.any() {
            loop {
                let s = self.ring.tail()?;
                if table.entry(s).pinned() {
                    break;
                }
                if self.count[s as usize] == 0 {
                    self.ring.unlink(&mut self.links, s);
                    return Some(s);
                }
                self.count[s as usize] -= 1;
                self.ring.move_to_front(&mut self.links, s);
            }
        }
        self.sweep_in_flight(table)
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.runs.touch(slot);
        self.ring.unlink(&mut self.links, slot);
    }

    /// Under the hand with a clear counter: the next victim.
    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        self.runs.touch(slot);
        self.count[slot as usize] = 0;
        self.ring.move_to_back(&mut self.links, slot);
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        check_single_list(&self.ring, &self.links, table)?;
        for s in self.ring.iter(&self.links) {
            if self.count[s as usize] > self.max {
                return Err(format!("slot {s} counter {} over {}", self.count[s as usize], self.max));
            }
        }
        Ok(())
    }
}

impl super::NamedPolicy for Clock {
    const NAME: &'static str = "clock";
    const SUMMARY: &'static str = "CLOCK (second chance), one reference bit";
    const ALIASES: &'static [&'static str] = &["second_chance"];
    const BYTES_PER_BLOCK: u64 = 40;
    type Params = ClockParams;

    fn from_params(_path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env, params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::table::flags;
    use super::super::Placement;

    proptest::proptest! {
        /// Through random insertions (head, tail, after a frame; pinned or not), hits, pins, unpins,
        /// removals, demotions and victim takes, a CLOCK that passes runs of frames in flight in one move
        /// finds every victim a frame-by-frame walk finds and leaves the ring in the same order with the
        /// same counters.
        #[test]
        fn passing_runs_in_one_move_equals_the_walk(
            bits in 1u8..3,
            ops in proptest::collection::vec((0u8..12, 0u32..64, 0u32..64), 1..800),
        ) {
            let env = PolicyEnv { capacity: 48, first_hit: FirstHit::Promote };
            let params = ClockParams { bits, insert_ref: 0 };
            let mut fast = Clock::new(&env, params.clone());
            let mut walk = Clock::new(&env, params);
            walk.walk_only = true;
            let mut table = BlockTable::with_capacity(48);
            let mut on: Vec<Slot> = Vec::new();
            let mut next_block = 0u64;
            for (op, a, b) in ops {
                let pick = |k: u32| (!on.is_empty()).then(|| on[k as usize % on.len()]);
                match op {
                    // Insert, pinned three times in four (a cache mostly in flight).
                    0..=2 if table.len() < 44 => {
                        let pinned = if b % 4 != 0 { flags::PINNED } else { 0 };
                        let s = table.insert(next_block, 0, pinned);
                        next_block += 1;
                        let how = match (op, pick(a)) {
                            (1, _) => Insert::prefetch(0, None, Placement::Lru),
                            (2, Some(at)) => Insert::prefetch(1, Some(at), Placement::Default),
                            _ => Insert::demand(),
                        };
                        fast.on_insert(s, &table, &how);
                        walk.on_insert(s, &table, &how);
                        on.push(s);
                    }
                    3 | 4 => {
                        if let Some(s) = pick(a) {
                            table.set_pinned(s, op == 3 && b % 3 != 0);
                        }
                    }
                    5 => {
                        if let Some(s) = pick(a) {
                            fast.on_hit(s, &table, false);
                            walk.on_hit(s, &table, false);
                        }
                    }
                    6 => {
                        if let Some(s) = pick(a) {
                            if b % 2 == 0 {
                                fast.on_remove(s, &table);
                                walk.on_remove(s, &table);
                                on.retain(|&x| x != s);
                                table.remove(s);
                            } else {
                                fast.demote(s, &table);
                                walk.demote(s, &table);
                            }
                        }
                    }
                    _ => {
                        let got = fast.victim(&table);
                        let want = walk.victim(&table);
                        proptest::prop_assert_eq!(got, want);
                        proptest::prop_assert_eq!(fast.hand_order(&table), walk.hand_order(&table));
                        if let Some(s) = got {
                            if b % 3 == 0 {
                                // Not taken: the level puts it back at the head (as a refused eviction).
                                let how = Insert::demand();
                                fast.on_insert(s, &table, &how);
                                walk.on_insert(s, &table, &how);
                            } else {
                                on.retain(|&x| x != s);
                                table.remove(s);
                            }
                        }
                    }
                }
                fast.check(&table).map_err(proptest::test_runner::TestCaseError::fail)?;
            }
        }
    }

    /// Twelve frames, blocks 0-9 in flight, 10 and 11 referenced twice (2-bit counters): the first
    /// search walks 0-9, clears 10 and 11 in two laps, passing 0-9 in one move each time, and evicts 10;
    /// the second evicts 11. Then 4, 7, 8 and 0 are read, one before each search: the third search passes
    /// 0-3 in one move and evicts 4, the fourth passes 5-6 and evicts 7, the fifth evicts 8 under the hand
    /// (the first frame of what is left of the run), the sixth passes 9 and evicts 0. At every step as a
    /// walk does.
    #[test]
    fn later_laps_pass_untouched_runs_of_frames_in_flight_in_one_move() {
        let env = PolicyEnv { capacity: 16, first_hit: FirstHit::Promote };
        let params = ClockParams { bits: 2, insert_ref: 0 };
        let mut fast = Clock::new(&env, params.clone());
        let mut walk = Clock::new(&env, params);
        walk.walk_only = true;
        let mut table = BlockTable::with_capacity(16);
        let mut slots = Vec::new();
        for b in 0..12u64 {
            let s = table.insert(b, 0, if b < 10 { flags::PINNED } else { 0 });
            fast.on_insert(s, &table, &Insert::demand());
            walk.on_insert(s, &table, &Insert::demand());
            for _ in 0..2 * u8::from(b >= 10) {
                fast.on_hit(s, &table, false);
                walk.on_hit(s, &table, false);
            }
            slots.push(s);
        }
        let mut evicted = Vec::new();
        for read in [None, None, Some(4), Some(7), Some(8), Some(0)] {
            if let Some(b) = read {
                table.set_pinned(slots[b], false);
            }
            let got = fast.victim(&table).unwrap();
            assert_eq!(Some(got), walk.victim(&table));
            assert_eq!(fast.hand_order(&table), walk.hand_order(&table));
            evicted.push(table.entry(got).block);
            table.remove(got);
        }
        assert_eq!(evicted, [10, 11, 4, 7, 8, 0]);
        assert_eq!(fast.runs_passed, 5);
        // Every frame in flight: a full lap, nothing found, the ring as the walk leaves it.
        assert_eq!(fast.victim(&table), walk.victim(&table));
        assert_eq!(fast.hand_order(&table), walk.hand_order(&table));
    }

    #[test]
    fn clock_params_accept_flags_and_counts_and_reject_bad_bits() {
        let p: ClockParams = serde_json::from_str(r#"{"insert_ref": true}"#).unwrap();
        assert_eq!(p, ClockParams { bits: 1, insert_ref: 1 });
        let p: ClockParams = serde_json::from_str(r#"{"bits": 2, "insert_ref": 3}"#).unwrap();
        assert_eq!(p, ClockParams { bits: 2, insert_ref: 3 });
        assert!(serde_json::from_str::<ClockParams>(r#"{"bits": 0}"#).is_err());
        assert!(serde_json::from_str::<ClockParams>(r#"{"bits": 9}"#).is_err());
        assert!(serde_json::from_str::<ClockParams>(r#"{"insert_ref": -1}"#).is_err());
        assert!(serde_json::from_str::<ClockParams>(r#"{"ref": 1}"#).is_err());
    }
}
