//! Block-keyed metadata maps of the prefetchers: open addressing with linear probing and Fibonacci
//! hashing.
//!
//! AMP probes its maps on every eviction, second chance and hit, and the stream detector on every
//! request, almost always finding the key in its home slot or learning there that it is absent. A
//! general-purpose table pays for a keyed hasher and group-wise control bytes on each of those probes
//! (two cache lines: control bytes and bucket); here a probe is one multiply, one shift and a key compare
//! in one slot. The load stays at most 1/2
//! and deletion shifts entries back (no tombstones), so probe runs stay short. Callers work with slot
//! indices, so a lookup followed by an update or a removal costs one probe. Iteration order is the
//! table's and carries no meaning: AMP's results never depend on it.

/// The key that marks an empty slot; a value under this key lives in the extra last slot.
const EMPTY: u64 = u64::MAX;

/// A map from `u64` keys to small `Copy` values.
#[derive(Debug)]
pub(crate) struct FlatMap<V> {
    /// `mask + 1` probed slots, then the slot of key [`EMPTY`] (empty when the map never grew).
    slots: Vec<(u64, V)>,
    mask: usize,
    shift: u32,
    len: usize,
    /// Whether key [`EMPTY`] is present (its value is in the last slot).
    has_max: bool,
}

impl<V: Copy + Default> FlatMap<V> {
    /// An empty map (allocates on the first insertion).
    pub(crate) fn new() -> Self {
        Self { slots: Vec::new(), mask: 0, shift: 64, len: 0, has_max: false }
    }

    /// Number of keys.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// No key.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The home slot of `key` (Fibonacci hashing: neighbouring keys land far apart).
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot of `key`, or `Err` with the slot where [`FlatMap::insert_at`] would put it.
    #[inline]
    pub(crate) fn entry(&self, key: u64) -> Result<usize, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        if key == EMPTY {
            let i = self.mask + 1;
            return if self.has_max { Ok(i) } else { Err(i) };
        }
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].0;
            if k == key {
                return Ok(i);
            }
            if k == EMPTY {
                return Err(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The slot of `key`, if present.
    #[inline]
    pub(crate) fn find(&self, key: u64) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        self.entry(key).ok()
    }

    /// The slot of `key`, if present, trying slot `hint` first (the slot a neighbouring key had).
    #[inline]
    pub(crate) fn find_from(&self, key: u64, hint: usize) -> Option<usize> {
        // Only an occupied probed slot holds a key other than EMPTY.
        if key != EMPTY && self.slots.get(hint).is_some_and(|e| e.0 == key) {
            return Some(hint);
        }
        self.find(key)
    }

    /// The value of `key`, if present.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<&V> {
        self.find(key).map(|i| &self.slots[i].1)
    }

    /// The value in slot `i` (from [`FlatMap::entry`] or [`FlatMap::find`]), mutable.
    #[inline]
    pub(crate) fn at_mut(&mut self, i: usize) -> &mut V {
        &mut self.slots[i].1
    }

    /// Insert absent `key` with `value` at `vacant`, the slot [`FlatMap::entry`] returned for it (no
    /// change in between); returns the key's slot.
    pub(crate) fn insert_at(&mut self, vacant: usize, key: u64, value: V) -> usize {
        if self.slots.is_empty() || 2 * (self.len + 1) > self.mask + 1 {
            self.grow();
            let Err(v) = self.entry(key) else { unreachable!("key {key} inserted twice") };
            return self.insert_at(v, key, value);
        }
        if key == EMPTY {
            self.has_max = true;
        } else {
            self.slots[vacant].0 = key;
        }
        self.slots[vacant].1 = value;
        self.len += 1;
        vacant
    }

    /// The slot of `key`, inserted with `value` when absent.
    #[inline]
    pub(crate) fn slot_or_insert(&mut self, key: u64, value: V) -> usize {
        match self.entry(key) {
            Ok(i) => i,
            Err(v) => self.insert_at(v, key, value),
        }
    }

    /// Insert or replace.
    pub(crate) fn insert(&mut self, key: u64, value: V) {
        let i = self.slot_or_insert(key, value);
        self.slots[i].1 = value;
    }

    /// Remove `key`; returns its value when it was present.
    #[inline]
    pub(crate) fn remove(&mut self, key: u64) -> Option<V> {
        let i = self.find(key)?;
        let v = self.slots[i].1;
        self.remove_at(i);
        Some(v)
    }

    /// Remove the key in slot `i`. Later entries of its probe run shift back into the hole, so that
    /// every key stays reachable from its home slot without tombstones.
    pub(crate) fn remove_at(&mut self, mut i: usize) {
        self.len -= 1;
        if i > self.mask {
            self.has_max = false;
            return;
        }
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let k = self.slots[j].0;
            if k == EMPTY {
                break;
            }
            // The entry at `j` may fill the hole at `i` when `i` lies on its path from home to `j`.
            if (j.wrapping_sub(self.home(k)) & self.mask) >= (j.wrapping_sub(i) & self.mask) {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i].0 = EMPTY;
    }

    /// Double the probed slots (64 at first) and place every key again.
    #[cold]
    fn grow(&mut self) {
        let n = if self.slots.is_empty() { 64 } else { 2 * (self.mask + 1) };
        let old = std::mem::replace(&mut self.slots, vec![(EMPTY, V::default()); n + 1]);
        self.mask = n - 1;
        self.shift = 64 - n.trailing_zeros();
        self.len = 0;
        let had_max = std::mem::take(&mut self.has_max);
        for (i, &(k, v)) in old.iter().enumerate() {
            if k != EMPTY && i + 1 < old.len() {
                self.insert(k, v);
            }
        }
        if had_max {
            let last = old[old.len() - 1].1;
            self.insert(EMPTY, last);
        }
    }

    /// Remove every key, keeping the allocated slots.
    pub(crate) fn clear(&mut self) {
        if self.len > 0 || self.has_max {
            self.slots.iter_mut().for_each(|s| *s = (EMPTY, V::default()));
            self.len = 0;
            self.has_max = false;
        }
    }

    /// Slots allocated (for metadata accounting).
    #[must_use]
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Keep the keys for which `keep` holds (a rare sweep: the table is rebuilt).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64, &mut V) -> bool) {
        let mut kept = Vec::with_capacity(self.len);
        for (k, v) in self.iter() {
            let mut v = *v;
            if keep(k, &mut v) {
                kept.push((k, v));
            }
        }
        *self = Self::new();
        for (k, v) in kept {
            self.insert(k, v);
        }
    }

    /// The keys and their values, in no meaningful order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        let probed = self.slots.len().saturating_sub(1);
        let max = self.has_max.then(|| (EMPTY, &self.slots[probed].1));
        self.slots[..probed].iter().filter(|(k, _)| *k != EMPTY).map(|(k, v)| (*k, v)).chain(max)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A pseudo-random sequence of inserts and removals, checked against a `BTreeMap`.
    #[test]
    fn behaves_as_a_map_through_growth_and_backward_shifts() {
        let mut m: FlatMap<u32> = FlatMap::new();
        let mut r: BTreeMap<u64, u32> = BTreeMap::new();
        assert_eq!(m.get(3), None);
        assert_eq!(m.remove(3), None);
        let mut x = 12345u64;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct keys, clustered (as block groups are), plus the sentinel key.
            let key = match x % 97 {
                0 => EMPTY,
                _ => (x >> 8) % 3000 + if x & 1 == 0 { 0 } else { 1 << 40 },
            };
            if x % 3 == 0 {
                assert_eq!(m.remove(key), r.remove(&key), "step {step}");
            } else {
                m.insert(key, step);
                r.insert(key, step);
            }
            assert_eq!(m.len(), r.len());
            if step % 1000 == 0 {
                for k in r.keys() {
                    assert_eq!(m.get(*k), r.get(k), "step {step} key {k}");
                }
            }
        }
        let mut all: Vec<(u64, u32)> = m.iter().map(|(k, v)| (k, *v)).collect();
        all.sort_unstable();
        assert_eq!(all, r.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
        m.retain(|k, v| {
            *v += 1;
            k % 2 == 0
        });
        r.retain(|k, _| k % 2 == 0);
        assert_eq!(m.len(), r.len());
        for (k, v) in &r {
            assert_eq!(m.get(*k), Some(&(v + 1)));
        }
    }
}
