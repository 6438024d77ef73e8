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

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

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
        place(&mut self.ring, &mut self.links, slot, how);
    }

    /// Sweep: a pinned frame is passed over untouched, a frame with a positive counter loses one and is
    /// passed, the first unpinned frame at 0 is the victim. Counters only fall, so this ends unless every
    /// frame is pinned, which a full lap of pinned frames detects.
    #[inline]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let mut pinned_run = 0usize;
        loop {
            let s = self.ring.tail()?;
            if table.entry(s).pinned() {
                pinned_run += 1;
                self.ring.move_to_front(&mut self.links, s);
                // A full lap over pinned frames: nothing to evict, and the hand is back where it began.
                if pinned_run >= self.ring.len() {
                    return None;
                }
                continue;
            }
            if self.count[s as usize] > 0 {
                pinned_run = 0;
                self.count[s as usize] -= 1;
            } else {
                self.ring.unlink(&mut self.links, s);
                return Some(s);
            }
            self.ring.move_to_front(&mut self.links, s);
        }
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.ring.unlink(&mut self.links, slot);
    }

    /// Under the hand with a clear counter: the next victim.
    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
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
