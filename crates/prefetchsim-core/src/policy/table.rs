//! The block table of one cache level: which blocks are resident, in which slot, with which flags.
//!
//! Every policy orders *slots* (dense `u32` indices) with its own index-linked lists; the table owns the
//! single hash map from block number to slot and the per-block state shared by the level, the policy and
//! the prefetcher. One hash lookup per block access is the whole cost of finding a block.

use hashbrown::HashMap;

use super::index::SlotIndex;

/// Index of a resident entry; dense in `0..capacity` (plus temporary overflow in timed runs).
pub type Slot = u32;

/// The hasher of every block-keyed map: foldhash with a fixed seed, so runs are reproducible, and a
/// mixing function that spreads aligned block numbers (style.md: the hashing trap).
pub type BlockHasher = foldhash::fast::FixedState;

/// A block-keyed hash map with the project's hasher.
pub type BlockMap<V> = HashMap<u64, V, BlockHasher>;

/// A new, empty [`BlockMap`] with room for `cap` entries.
#[must_use]
pub fn block_map<V>(cap: usize) -> BlockMap<V> {
    HashMap::with_capacity_and_hasher(cap, BlockHasher::with_seed(0x5eed_b10c))
}

/// Per-block flags.
pub mod flags {
    /// The block entered this cache because of a prefetch (kept until eviction).
    pub const PREFETCHED: u8 = 1;
    /// At least one demand access since the block entered.
    pub const ACCESSED: u8 = 2;
    /// I/O in flight: resident slot reserved but data not ready (timed engine).
    pub const PINNED: u8 = 4;
    /// Free for the policy's own use (e.g. CLOCK's reference bit is kept by the policy itself).
    pub const POLICY: u8 = 8;
    /// Prefetched by the second prefetcher of a `stack` (counted apart, see `LevelCounters::second_issued`).
    pub const SECOND: u8 = 16;
    /// Accounting only (no policy or prefetcher reads it): cached by PFC's readmore and not referenced
    /// since. The native level treats the block as an ordinary demand block.
    pub const READMORE: u8 = 32;
    /// Accounting only: a prefetched block first referenced by a PFC silent hit (or a bypassed wait for
    /// its read), which the native level does not see; its use is counted then, not again.
    pub const SILENT_USED: u8 = 64;
}

/// The state of one resident block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Block number.
    pub block: u64,
    /// Stream the block belongs to (assigned by the request or by the prefetcher).
    pub stream: u32,
    /// Bit set of [`flags`].
    pub flags: u8,
    /// Second chances already given (prefetched-unused re-insertions).
    pub chances: u8,
    /// Scratch value for the prefetcher (e.g. AMP's `old` or a trigger mark).
    pub aux: u16,
}

impl Entry {
    /// Entered by prefetch.
    #[must_use]
    pub fn prefetched(&self) -> bool {
        self.flags & flags::PREFETCHED != 0
    }
    /// Had a demand access since it entered.
    #[must_use]
    pub fn accessed(&self) -> bool {
        self.flags & flags::ACCESSED != 0
    }
    /// I/O in flight.
    #[must_use]
    pub fn pinned(&self) -> bool {
        self.flags & flags::PINNED != 0
    }
    /// Prefetched and never used yet.
    #[must_use]
    pub fn unused_prefetch(&self) -> bool {
        self.flags & (flags::PREFETCHED | flags::ACCESSED) == flags::PREFETCHED
    }
    /// Counted as an unused prefetch: prefetched and referenced by nobody (the native level or a PFC silent
    /// hit), or cached by readmore and not referenced since. [`Entry::unused_prefetch`] is what the policy
    /// and the prefetcher see.
    #[must_use]
    pub fn counts_unused(&self) -> bool {
        self.flags & (flags::PREFETCHED | flags::ACCESSED | flags::SILENT_USED) == flags::PREFETCHED
            || self.flags & flags::READMORE != 0
    }
}

/// Resident blocks of one level: the block → slot index and the entry arena.
#[derive(Debug)]
pub struct BlockTable {
    index: SlotIndex,
    entries: Vec<Entry>,
    occupied: Vec<bool>,
    free: Vec<Slot>,
    len: usize,
}

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
        }
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
        entry
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
