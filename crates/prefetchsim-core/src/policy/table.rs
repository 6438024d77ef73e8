//! The block table of one cache level: which blocks are resident, in which slot, with which flags.
//!
//! Every policy orders *slots* (dense `u32` indices) with its own index-linked lists; the table owns the
//! single hash map from block number to slot and the per-block state shared by the level, the policy and
//! the prefetcher. One hash lookup per block access is the whole cost of finding a block.

use super::index::SlotIndex;

pub use super::entry::{block_map, flags, BlockHasher, BlockMap, Entry, Slot};

/// Resident blocks of one level: the block → slot index and the entry arena.
#[derive(Debug)]
pub struct BlockTable {
    index: SlotIndex,
    entries: Vec<Entry>,
    occupied: Vec<bool>,
    free: Vec<Slot>,
    len: usize,
    /// Resident entries with [`flags::PINNED`] (in flight), so that a victim search over a cache whose
    /// every block is in flight ends at once instead of walking the whole list.
    pinned: usize,
    /// The slots unpinned lately, oldest first, so that a victim search resuming over blocks in flight
    /// learns which of them are ready now (`tail_memo`); cut when long.
    unpins: Vec<Slot>,
    /// How many unpins were cut from the front of `unpins`.
    unpins_cut: u64,
}

/// Length at which the unpin log is cut (a search that has not read it since begins again from its tail).
const UNPIN_LOG_MAX: usize = 1 << 16;

impl BlockTable {
    /// An empty table sized for `capacity` blocks.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            index: SlotIndex::new(capacity),
            entries: Vec::with_capacity(capacity),
            occupied: Vec::with_capacity(capacity),
            free: Vec::new(),
            len: 0,
            pinned: 0,
            unpins: Vec::new(),
            unpins_cut: 0,
        }
    }

    /// Pin (`true`) or unpin the block in `slot`: the only way [`flags::PINNED`] changes on a resident
    /// entry, so that the count of pinned entries stays exact.
    #[inline]
    pub fn set_pinned(&mut self, slot: Slot, on: bool) {
        let e = &mut self.entries[slot as usize];
        if e.pinned() != on {
            e.flags ^= flags::PINNED;
            if on {
                self.pinned += 1;
            } else {
                self.pinned -= 1;
                if self.unpins.len() == UNPIN_LOG_MAX {
                    self.unpins_cut += UNPIN_LOG_MAX as u64;
                    self.unpins.clear();
                }
                self.unpins.push(slot);
            }
        }
    }

    /// The slots unpinned since absolute position `pos` of the unpin log (`None` if part of them was cut).
    #[must_use]
    pub fn unpins_since(&self, pos: u64) -> Option<&[Slot]> {
        let i = usize::try_from(pos.checked_sub(self.unpins_cut)?).ok()?;
        self.unpins.get(i..)
    }

    /// The absolute position of the end of the unpin log.
    #[must_use]
    pub fn unpins_end(&self) -> u64 {
        self.unpins_cut + self.unpins.len() as u64
    }

    /// Resident blocks in flight.
    #[must_use]
    pub fn pinned_len(&self) -> usize {
        self.pinned
    }

    /// Every resident block is in flight (or none is resident): no victim can be found.
    #[inline]
    #[must_use]
    pub fn all_pinned(&self) -> bool {
        self.pinned == self.len
    }

    /// Number of resident blocks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// No resident block.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// One past the highest slot ever handed out (policies size their link arrays by it).
    #[must_use]
    pub fn slot_bound(&self) -> usize {
        self.entries.len()
    }

    /// The slot of `block`, if resident.
    #[inline]
    #[must_use]
    pub fn get(&self, block: u64) -> Option<Slot> {
        self.index.get(block, &self.entries)
    }

    /// Whether `block` is resident (or in flight).
    #[inline]
    #[must_use]
    pub fn contains(&self, block: u64) -> bool {
        self.get(block).is_some()
    }

    /// The entry in `slot`.
    #[inline]
    #[must_use]
    pub fn entry(&self, slot: Slot) -> &Entry {
        &self.entries[slot as usize]
    }

    /// The entry in `slot`, mutable.
    #[inline]
    pub fn entry_mut(&mut self, slot: Slot) -> &mut Entry {
        &mut self.entries[slot as usize]
    }

    /// The entry of `block`, if resident.
    #[must_use]
    pub fn lookup(&self, block: u64) -> Option<&Entry> {
        self.get(block).map(|s| self.entry(s))
    }

    /// Whether `slot` currently holds a block.
    #[must_use]
    pub fn is_occupied(&self, slot: Slot) -> bool {
        self.occupied.get(slot as usize).copied().unwrap_or(false)
    }

    /// Insert a block that is not resident; returns its slot.
    ///
    /// # Panics
    /// In debug builds, if `block` is already resident (a level bug).
    #[inline]
    pub fn insert(&mut self, block: u64, stream: u32, flags: u8) -> Slot {
        let entry = Entry { block, stream, flags, chances: 0, aux: 0 };
        let slot = if let Some(slot) = self.free.pop() {
            self.entries[slot as usize] = entry;
            self.occupied[slot as usize] = true;
            slot
        } else {
            let slot = Slot::try_from(self.entries.len()).expect("more than 2^32 resident blocks");
            self.entries.push(entry);
            self.occupied.push(true);
            slot
        };
        debug_assert!(self.get(block).is_none(), "block {block} inserted twice");
        self.index.insert(block, slot, &self.entries);
        self.len += 1;
        self.pinned += usize::from(flags & flags::PINNED != 0);
        slot
    }

    /// Remove the block in `slot`; returns its last entry.
    #[inline]
    pub fn remove(&mut self, slot: Slot) -> Entry {
        let entry = self.entries[slot as usize];
        debug_assert!(self.occupied[slot as usize]);
        self.index.remove(entry.block, slot);
        self.occupied[slot as usize] = false;
        self.free.push(slot);
        self.len -= 1;
        self.pinned -= usize::from(entry.pinned());
        entry
    }

    /// Put `block` (not resident) in the occupied `slot` in place of its block: what [`BlockTable::remove`]
    /// of `slot` followed by [`BlockTable::insert`] does (the insertion pops the slot the removal freed),
    /// without the trip through the free list.
    #[inline(always)]
    pub fn replace(&mut self, slot: Slot, block: u64, stream: u32, flags: u8) {
        debug_assert!(self.occupied[slot as usize]);
        debug_assert!(self.get(block).is_none(), "block {block} inserted twice");
        let old = self.entries[slot as usize].block;
        self.pinned -= usize::from(self.entries[slot as usize].pinned());
        self.pinned += usize::from(flags & flags::PINNED != 0);
        self.index.remove(old, slot);
        self.entries[slot as usize] = Entry { block, stream, flags, chances: 0, aux: 0 };
        self.index.insert(block, slot, &self.entries);
    }

    /// Iterate over resident entries (in slot order, which is deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (Slot, &Entry)> {
        self.entries
            .iter()
            .zip(&self.occupied)
            .enumerate()
            .filter(|(_, (_, occ))| **occ)
            .map(|(i, (e, _))| (i as Slot, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `replace` leaves the table exactly as `remove` then `insert` of the same slot would, in the dense
    /// index and, past its budget, the hashed one.
    #[test]
    fn replace_is_remove_then_insert() {
        for spread in [1u64 << 10, 1 << 40] {
            let (mut a, mut b) = (BlockTable::with_capacity(64), BlockTable::with_capacity(64));
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut resident: Vec<u64> = Vec::new();
            for step in 0..20_000 {
                let block = next() % spread;
                if a.contains(block) {
                    continue;
                }
                if resident.len() < 64 {
                    assert_eq!(a.insert(block, 1, 2), b.insert(block, 1, 2));
                    resident.push(block);
                } else {
                    let i = (next() % 64) as usize;
                    let slot = a.get(resident[i]).expect("resident");
                    a.remove(slot);
                    assert_eq!(a.insert(block, 3, 4), slot, "the freed slot is reused");
                    b.replace(slot, block, 3, 4);
                    resident[i] = block;
                }
                if step % 500 == 0 {
                    for &r in &resident {
                        assert_eq!(a.get(r), b.get(r), "step {step}");
                        assert_eq!(a.lookup(r), b.lookup(r), "step {step}");
                    }
                    assert_eq!(a.len(), b.len());
                }
            }
            for &r in &resident {
                assert_eq!(a.get(r), b.get(r));
            }
            assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        }
    }
}
