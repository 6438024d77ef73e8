//! One resident block's record and the types every policy shares with the block table: the slot index,
//! the block hasher and map, and the per-block flags. Apart from `table.rs` so that the slot index
//! (`index.rs`), which stores entries, and the table, which owns the index, do not import each other.

use hashbrown::HashMap;

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
    /// I/O in flight: resident slot reserved but data not ready (timed engine). Set and cleared only through
    /// `BlockTable::set_pinned`, which keeps the count of pinned blocks that victim searches read.
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
    /// Accounting only: prefetched (or cached by readmore) before the warm-up ended. The counters start
    /// at the warm-up's end with `prefetch_issued` at 0, so this block's use, eviction unused or end
    /// state is not counted either, and the prefetches a run reports stay conserved (metrics.md §1).
    pub const WARMUP: u8 = 128;
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
    /// Its prefetch was issued after the warm-up (or there was none): it counts in the prefetch counters.
    #[inline]
    #[must_use]
    pub fn measured(&self) -> bool {
        self.flags & flags::WARMUP == 0
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
