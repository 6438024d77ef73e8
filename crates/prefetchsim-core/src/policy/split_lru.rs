//! SplitLRU: the replacement queue split into an Up and a Down LRU list that share the capacity.
//!
//! Follows Varki, Hubbe & Merchant, "Improve Prefetch Performance by Splitting the Cache Replacement
//! Queue": §3 (the mechanics and Tables 3-4), §5 (Split as one queue whose second prefetched block
//! enters at depth `c_up`) and §6 (an Up list twice as long as Down); `shared/docs/models/replacement.md`
//! §6 fills the gaps the paper leaves (more than two blocks per prefetch, re-referenced blocks).
//!
//! - Up holds at most `c_up = round(up_ratio * c)` blocks; its LRU overflow goes to MRU(Down).
//! - Blocks leave only from LRU(Down); Up is used only when Down has nothing evictable.
//! - The nearest block of a prefetch run goes to MRU(Up) (moved there if already cached); the farther
//!   ones to MRU(Down), the nearer one nearer MRU.
//! - A demand hit on `b` moves the next cached, still unused prefetched block of its stream (`b+1`) to
//!   MRU(Up) — the prefetch-aware LRU of the paper; the hit block itself goes to MRU(Up).

use serde::{Deserialize, Deserializer, Serialize};

use super::list::{Links, List};
use super::{BlockTable, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};

/// Parameters of SplitLRU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitLruParams {
    /// Share of the capacity given to Up, in `[0, 1]`: `c_up = round(up_ratio * c)`. The paper's
    /// experiments use 1/2; §6 reports that 2/3 does better. Accepts a number or a fraction string
    /// such as `"2/3"`.
    #[serde(deserialize_with = "de_ratio")]
    pub up_ratio: f64,
}

impl Default for SplitLruParams {
    fn default() -> Self {
        Self { up_ratio: 0.5 }
    }
}

impl SplitLruParams {
    /// Up's share of the capacity.
    #[must_use]
    pub fn with_up_ratio(up_ratio: f64) -> Self {
        Self { up_ratio }
    }

    /// Up's size for a cache of `capacity` blocks: `round(up_ratio * capacity)`, within `0..=capacity`.
    #[must_use]
    pub fn c_up(&self, capacity: usize) -> usize {
        let r = if self.up_ratio.is_finite() { self.up_ratio.clamp(0.0, 1.0) } else { 0.5 };
        ((r * capacity as f64).round() as usize).min(capacity)
    }
}

/// A ratio written as a number (`0.6667`) or as a fraction (`"2/3"`), checked to lie in `[0, 1]`.
fn de_ratio<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Num(f64),
        Text(String),
        Other(serde_json::Value),
    }
    let bad = |what: &str| serde::de::Error::custom(format!("up_ratio {what}: expected a number in [0, 1] or 'a/b'"));
    let r = match Raw::deserialize(d)? {
        Raw::Other(v) => return Err(bad(&format!("{v}"))),
        Raw::Num(x) => x,
        Raw::Text(s) => {
            let parse = |t: &str| t.trim().parse::<f64>().map_err(|_| bad(&format!("'{s}'")));
            match s.split_once('/') {
                Some((a, b)) => {
                    let (a, b) = (parse(a)?, parse(b)?);
                    if b == 0.0 {
                        return Err(bad(&format!("'{s}'")));
                    }
                    a / b
                }
                None => parse(&s)?,
            }
        }
    };
    if !(0.0..=1.0).contains(&r) {
        return Err(bad(&format!("{r}")));
    }
    Ok(r)
}

/// Which list a slot is on.
const NONE: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

/// Split replacement queue (Up and Down LRU lists).
#[derive(Debug)]
pub struct SplitLru {
    links: Links,
    up: List,
    down: List,
    /// The list each slot is on (`NONE`, `UP`, `DOWN`), so a hook can unlink a slot in O(1).
    on: Vec<u8>,
    c_up: usize,
    first_hit: FirstHit,
    /// The block last placed on Down by an insertion (not by a spill): the next block of the same run
    /// goes right after it.
    last_down: Option<Slot>,
}

impl SplitLru {
    /// An empty policy for `env.capacity` blocks.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: SplitLruParams) -> Self {
        Self {
            links: Links::with_capacity(env.capacity),
            up: List::default(),
            down: List::default(),
            on: vec![NONE; env.capacity],
            c_up: params.c_up(env.capacity),
            first_hit: env.first_hit,
            last_down: None,
        }
    }

    /// Up's bound in blocks.
    #[must_use]
    pub fn c_up(&self) -> usize {
        self.c_up
    }

    /// The blocks of Up and of Down, each MRU first (tests and debugging).
    #[must_use]
    pub fn up_down(&self, table: &BlockTable) -> (Vec<u64>, Vec<u64>) {
        let blocks = |l: &List| l.iter(&self.links).map(|s| table.entry(s).block).collect();
        (blocks(&self.up), blocks(&self.down))
    }

    #[inline]
    fn mark(&mut self, slot: Slot, list: u8) {
        let i = slot as usize;
        if i >= self.on.len() {
            self.on.resize((i + 1).max(self.on.len() * 2), NONE);
        }
        self.on[i] = list;
    }

    #[inline]
    fn list_of(&self, slot: Slot) -> u8 {
        self.on.get(slot as usize).copied().unwrap_or(NONE)
    }

    /// Take `slot` off whichever list holds it.
    #[inline]
    fn unlink(&mut self, slot: Slot) {
        match self.list_of(slot) {
            UP => self.up.unlink(&mut self.links, slot),
            DOWN => self.down.unlink(&mut self.links, slot),
            _ => return,
        }
        self.on[slot as usize] = NONE;
        if self.last_down == Some(slot) {
            self.last_down = None;
        }
    }

    /// Keep |Up| <= c_up: Up's LRU blocks go to MRU(Down).
    #[inline]
    fn spill(&mut self) {
        while self.up.len() > self.c_up {
            let Some(s) = self.up.pop_back(&mut self.links) else { break };
            self.down.push_front(&mut self.links, s);
            self.on[s as usize] = DOWN;
        }
    }

    /// Put an unlinked `slot` at MRU(Up), then restore Up's bound.
    #[inline]
    fn push_up(&mut self, slot: Slot) {
        self.up.push_front(&mut self.links, slot);
        self.mark(slot, UP);
        self.spill();
    }

    /// Put an unlinked `slot` on Down: right after `after` if that block was itself placed on Down (the
    /// farther blocks of a run keep their order, nearer block nearer MRU), else at the MRU end (or the
    /// LRU end when `at_lru`). A run's first block that only overflowed from Up is no anchor: the
    /// paper puts the second block at MRU(Down), above whatever Up pushed down.
    #[inline]
    fn push_down(&mut self, slot: Slot, after: Option<Slot>, at_lru: bool) {
        match after.filter(|&a| self.last_down == Some(a) && self.list_of(a) == DOWN) {
            Some(a) => self.down.insert_after(&mut self.links, a, slot),
            None if at_lru => self.down.push_back(&mut self.links, slot),
            None => self.down.push_front(&mut self.links, slot),
        }
        self.mark(slot, DOWN);
        self.last_down = Some(slot);
    }

    /// Put a linked or unlinked `slot` at MRU(Up).
    #[inline]
    fn move_up(&mut self, slot: Slot) {
        self.unlink(slot);
        self.push_up(slot);
    }

    /// The demand-hit rule: the next cached, still unused prefetched block of the hit block's stream
    /// (b+1) moves to MRU(Up).
    fn promote_next(&mut self, slot: Slot, table: &BlockTable) {
        let e = *table.entry(slot);
        if let Some(next) = e.block.checked_add(1).and_then(|b| table.get(b)) {
            let ne = table.entry(next);
            if ne.stream == e.stream && ne.unused_prefetch() {
                self.move_up(next);
            }
        }
    }

    /// Unlink the first unpinned slot of `list` from its LRU end.
    fn take_unpinned(&mut self, which: u8, table: &BlockTable) -> Option<Slot> {
        let list = if which == UP { &mut self.up } else { &mut self.down };
        let s = list.last_unpinned(&mut self.links, table)?;
        self.unlink(s);
        Some(s)
    }
}

impl Policy for SplitLru {
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        let stay = self.first_hit.stays(first_use, table.entry(slot));
        // Take the hit block out first, so that b+1 is placed as if b had already left (the paper's
        // setting), then put b on top: the most recently used block.
        if !stay {
            self.unlink(slot);
        }
        self.promote_next(slot, table);
        if !stay {
            self.push_up(slot);
        }
    }

    /// The paper's setting: the hit block leaves at once, so it never takes room in Up; only the
    /// demand-hit rule for b+1 applies (Tables 3-4, request 1a).
    fn on_consumed_hit(&mut self, slot: Slot, table: &BlockTable, _first_use: bool) {
        self.unlink(slot);
        self.promote_next(slot, table);
    }

    /// `Default` and `Mru` follow the split rule; `Lru` puts the blocks at LRU(Down) ("LRU-Bottom");
    /// `List(0)` and `List(1)` name Up and Down.
    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        if how.reinsert {
            // A second chance: the top of the single queue.
            self.push_up(slot);
            return;
        }
        match (how.origin, how.placement) {
            (_, Placement::Lru) => self.push_down(slot, how.after, true),
            (_, Placement::List(1)) => self.push_down(slot, how.after, false),
            (Origin::Demand, _) | (_, Placement::List(0)) => self.push_up(slot),
            // The split rule: the nearest block of a run to Up, the farther ones to Down.
            (Origin::Prefetch, _) if how.rank == 0 => self.push_up(slot),
            (Origin::Prefetch, _) => self.push_down(slot, how.after, false),
        }
    }

    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        // Down is the only exit; Up gives a block only when Down has none that can go.
        self.take_unpinned(DOWN, table).or_else(|| self.take_unpinned(UP, table))
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.unlink(slot);
    }

    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        self.unlink(slot);
        self.down.push_back(&mut self.links, slot);
        self.mark(slot, DOWN);
    }

    fn on_prefetch_cached(&mut self, slot: Slot, _table: &BlockTable, rank: u32) {
        if rank == 0 {
            self.move_up(slot);
        }
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        if self.up.len() > self.c_up {
            return Err(format!("Up holds {} blocks, bound {}", self.up.len(), self.c_up));
        }
        let mut seen = vec![false; table.slot_bound()];
        for (which, list, name) in [(UP, &self.up, "Up"), (DOWN, &self.down, "Down")] {
            let mut n = 0usize;
            for s in list.iter(&self.links) {
                if !table.is_occupied(s) {
                    return Err(format!("{name} holds free slot {s}"));
                }
                if std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("slot {s} (block {}) on two lists or twice", table.entry(s).block));
                }
                if self.list_of(s) != which {
                    return Err(format!("slot {s} on {name} but marked {}", self.list_of(s)));
                }
                n += 1;
            }
            if n != list.len() {
                return Err(format!("{name} counts {} nodes, holds {n}", list.len()));
            }
        }
        if self.up.len() + self.down.len() != table.len() {
            return Err(format!("Up {} + Down {} != {} resident", self.up.len(), self.down.len(), table.len()));
        }
        if let Some(s) = (0..self.on.len()).find(|&i| self.on[i] != NONE && !seen.get(i).copied().unwrap_or(false)) {
            return Err(format!("slot {s} marked on a list but not linked"));
        }
        Ok(())
    }
}

impl super::NamedPolicy for SplitLru {
    const NAME: &'static str = "splitlru";
    const SUMMARY: &'static str = "Split replacement queue, Up and Down LRU lists (Varki, Hubbe & Merchant)";
    const ALIASES: &'static [&'static str] = &["split", "split_lru"];
    const BYTES_PER_BLOCK: u64 = 40;
    type Params = SplitLruParams;

    fn from_params(_path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env, params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_size_rounds_the_ratio() {
        assert_eq!(SplitLruParams::default().c_up(4), 2);
        assert_eq!(SplitLruParams::with_up_ratio(0.6667).c_up(4), 3);
        assert_eq!(SplitLruParams::with_up_ratio(2.0 / 3.0).c_up(90), 60);
        assert_eq!(SplitLruParams::with_up_ratio(1.0).c_up(7), 7);
        assert_eq!(SplitLruParams::with_up_ratio(0.0).c_up(7), 0);
    }

    #[test]
    fn ratio_parses_numbers_and_fractions() {
        let p: SplitLruParams = serde_json::from_str(r#"{"up_ratio": "2/3"}"#).unwrap();
        assert!((p.up_ratio - 2.0 / 3.0).abs() < 1e-12);
        let p: SplitLruParams = serde_json::from_str(r#"{"up_ratio": 0.6667}"#).unwrap();
        assert_eq!(p.c_up(3), 2);
        let p: SplitLruParams = serde_json::from_str("{}").unwrap();
        assert_eq!(p, SplitLruParams::default());
        assert!(serde_json::from_str::<SplitLruParams>(r#"{"up_ratio": 1.5}"#).is_err());
        assert!(serde_json::from_str::<SplitLruParams>(r#"{"up_ratio": "2/0"}"#).is_err());
        assert!(serde_json::from_str::<SplitLruParams>(r#"{"up": 0.5}"#).is_err());
    }
}
