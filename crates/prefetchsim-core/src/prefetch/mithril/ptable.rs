//! Mithril's prefetching table (Yang et al., SoCC 2017 §4.2, "Splitting the prefetching table into
//! shards"; libCacheSim's sizing rules from `shared/docs/algorithms/history.md`, "Derived sizes").
//!
//! A row is a source block and up to `pf_list_size` associated blocks, oldest first; a new association
//! of a full row drops the oldest (FIFO). Rows come in shards of `shard_rows` rows allocated when needed.
//! When no further shard is allowed, the table is full and new rows replace the oldest rows in turn
//! (the replaced source's mapping is removed).
//!
//! The metadata limit decides how many shards there may be:
//! - [`Growth::Bounded`] (the paper): the table's bytes plus the fixed tables' bytes never exceed the
//!   limit; shards are allocated on demand and the last one may be partial so the whole budget is used.
//! - [`Growth::Libcachesim`]: the first shard is allocated at start (even past the limit); another is
//!   added while `meta + shard bytes < limit` and fewer than `limit / (shard_rows · pf_list_size)` shards
//!   exist. Rows 0 and 1 are never used (its row cursor starts at 1 and is advanced before each new row).
//!   When the table is full it wraps to row 2, and from then on only the rows of the *first* shard are
//!   recycled (rows `2 .. shard_rows`): libCacheSim checks for the end of a shard with
//!   `(row + 1) % shard_rows == 0`, which after the wrap fires at the end of shard 0 and wraps again, so
//!   the later shards keep the associations they held at the first wrap for the rest of the run.
//!
//! Bytes per row: 8 per associated block plus 12 for the source (8 B id + 4 B index entry), the paper's
//! §4.4 accounting; 8 more per shard pointer.
//!
//! In memory, the row numbers above only order the replacement (each keeps its source block). A row's
//! contents live in its entry of a raw hash table keyed by source: the source, the row number, the count
//! and, up to [`INLINE`] associated blocks (the presets' `pf_list_size = 2`), the blocks themselves, so
//! that the look-up Mithril makes for every demand block reads the table's control bytes and one entry.
//! Wider rows keep their blocks in an array by row number. (The entries were 4-byte row numbers keyed
//! through an array of rows: control byte, entry and row, three cache misses per found block, measured
//! as most of the look-up's time on the 50 M-request synthetic trace.)

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::policy::table::BlockHasher;

/// How the table may grow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Growth {
    /// Never exceed `limit` bytes in all (`fixed` bytes of other tables included).
    Bounded {
        /// The metadata limit in bytes.
        limit: u64,
    },
    /// libCacheSim's rule.
    Libcachesim {
        /// The metadata limit in bytes.
        limit: f64,
        /// Most shards allowed.
        max_shards: u32,
    },
}

/// Associated blocks kept in the hash table's entry itself.
pub const INLINE: usize = 2;

/// One row's entry in the index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    source: u64,
    row: u32,
    count: u32,
    /// The blocks when the rows are at most [`INLINE`] wide.
    inline: [u64; INLINE],
}

/// The prefetching table.
#[derive(Debug)]
pub struct PrefetchTable {
    index: HashTable<Slot>,
    hasher: BlockHasher,
    width: usize,
    /// Blocks of rows wider than [`INLINE`], `width` cells per row number (empty otherwise).
    cells: Vec<u64>,
    /// The source of each numbered row, and whether the row holds one.
    sources: Vec<u64>,
    live: Vec<bool>,
    /// Rows allocated so far.
    rows: u32,
    /// The next row to hand out.
    next: u32,
    first_row: u32,
    full: bool,
    shard_rows: u32,
    shards: u32,
    growth: Growth,
    meta: u64,
}

impl PrefetchTable {
    /// Bytes of one row with `pf_list_size` associated blocks.
    #[must_use]
    pub fn row_bytes(pf_list_size: u32) -> u64 {
        8 * u64::from(pf_list_size) + 12
    }

    /// An empty table. `fixed` is the metadata of the other tables, counted against the same limit.
    #[must_use]
    pub fn new(pf_list_size: u32, shard_rows: u32, growth: Growth, fixed: u64) -> Self {
        let mut t = Self {
            index: HashTable::new(),
            hasher: BlockHasher::with_seed(0x5eed_b10c),
            width: pf_list_size as usize,
            cells: Vec::new(),
            sources: Vec::new(),
            live: Vec::new(),
            rows: 0,
            next: 0,
            first_row: 0,
            full: false,
            shard_rows: shard_rows.max(1),
            shards: 0,
            growth,
            meta: fixed,
        };
        if let Growth::Libcachesim { max_shards, .. } = growth {
            // The first shard exists from the start, its pointer array is sized for every shard allowed.
            t.meta += 8 * u64::from(max_shards);
            t.allocate(t.shard_rows);
            t.meta += u64::from(t.shard_rows) * Self::row_bytes(pf_list_size);
            t.first_row = 2;
            t.next = 2;
        }
        t
    }

    /// All metadata bytes: the fixed tables and this table's shards.
    #[must_use]
    pub fn metadata_bytes(&self) -> u64 {
        self.meta
    }

    /// Rows allocated.
    #[must_use]
    pub fn allocated_rows(&self) -> u32 {
        self.rows
    }

    /// Shards allocated.
    #[must_use]
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Whether no row holds an association.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Sources with a row.
    #[must_use]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// The hash of `block` in the index.
    #[inline]
    #[must_use]
    pub fn hash(&self, block: u64) -> u64 {
        self.hasher.hash_one(block)
    }

    /// Whether the blocks live in the entries.
    #[inline]
    fn inline(&self) -> bool {
        self.width <= INLINE
    }

    /// The blocks associated with `block`, oldest first (empty when it has no row).
    #[inline]
    #[must_use]
    pub fn get(&self, block: u64) -> &[u64] {
        self.get_hashed(self.hash(block), block)
    }

    /// [`PrefetchTable::get`] with the hash already computed.
    #[inline]
    #[must_use]
    pub fn get_hashed(&self, h: u64, block: u64) -> &[u64] {
        match self.index.find(h, |e| e.source == block) {
            Some(e) if self.inline() => &e.inline[..e.count as usize],
            Some(e) => {
                let i = e.row as usize * self.width;
                &self.cells[i..i + e.count as usize]
            }
            None => &[],
        }
    }

    /// Add `rows` rows (one shard or its last part).
    fn allocate(&mut self, rows: u32) {
        let n = (self.rows + rows) as usize;
        self.sources.resize(n, 0);
        self.live.resize(n, false);
        if !self.inline() {
            self.cells.resize(n * self.width, 0);
        }
        // Room for the new rows once (it was twice, when an entry was 4 bytes): an entry is 32 bytes, and
        // the spare room pushed ARC P6's table out of the second-level cache (measured 3% slower).
        let hasher = &self.hasher;
        self.index.reserve(rows as usize, |e| hasher.hash_one(e.source));
        self.rows += rows;
        self.shards += 1;
    }

    /// Try to add a shard; false when the limit forbids it.
    fn grow(&mut self) -> bool {
        let row_bytes = Self::row_bytes(self.width as u32);
        match self.growth {
            Growth::Bounded { limit } => {
                let room = limit.saturating_sub(self.meta + 8) / row_bytes;
                let rows = room.min(u64::from(self.shard_rows)) as u32;
                if self.meta + 8 > limit || rows == 0 {
                    return false;
                }
                self.allocate(rows);
                self.meta += 8 + u64::from(rows) * row_bytes;
                true
            }
            Growth::Libcachesim { limit, max_shards } => {
                let bytes = u64::from(self.shard_rows) * row_bytes;
                if self.shards >= max_shards || (self.meta + bytes) as f64 >= limit {
                    return false;
                }
                self.allocate(self.shard_rows);
                self.meta += bytes;
                true
            }
        }
    }

    /// A row for a new source: a fresh one, or (once full) the oldest in turn. `None` when the table
    /// has no usable row at all.
    fn take_row(&mut self) -> Option<u32> {
        // libCacheSim recycles only its first shard once full (module doc).
        let end = match self.growth {
            Growth::Libcachesim { .. } if self.full => self.rows.min(self.shard_rows),
            _ => self.rows,
        };
        if self.next >= end && (self.full || !self.grow()) {
            self.full = true;
            self.next = self.first_row;
        }
        if self.next >= self.rows {
            return None;
        }
        let r = self.next;
        self.next += 1;
        if std::mem::replace(&mut self.live[r as usize], false) {
            let h = self.hash(self.sources[r as usize]);
            if let Ok(e) = self.index.find_entry(h, |e| e.row == r) {
                e.remove();
            }
        }
        Some(r)
    }

    /// Record the association `a → b`.
    pub fn add(&mut self, a: u64, b: u64) {
        let (w, inline) = (self.width, self.inline());
        let h = self.hash(a);
        if let Some(e) = self.index.find_mut(h, |e| e.source == a) {
            let n = e.count as usize;
            let row = if inline {
                &mut e.inline[..w]
            } else {
                let i = e.row as usize * w;
                &mut self.cells[i..i + w]
            };
            if row[..n].contains(&b) {
                return;
            }
            if n == w {
                row.copy_within(1.., 0);
                row[w - 1] = b;
            } else {
                row[n] = b;
                e.count += 1;
            }
            return;
        }
        if let Some(r) = self.take_row() {
            self.sources[r as usize] = a;
            self.live[r as usize] = true;
            let mut slot = Slot { source: a, row: r, count: 1, inline: [0; INLINE] };
            if inline {
                slot.inline[0] = b;
            } else {
                self.cells[r as usize * w] = b;
            }
            let hasher = &self.hasher;
            self.index.insert_unique(h, slot, |e| hasher.hash_one(e.source));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_keeps_its_newest_associations_fifo() {
        let mut t = PrefetchTable::new(2, 4, Growth::Bounded { limit: 1 << 20 }, 0);
        t.add(1, 10);
        t.add(1, 11);
        t.add(1, 10); // already listed: nothing changes
        assert_eq!(t.get(1), &[10, 11]);
        t.add(1, 12);
        assert_eq!(t.get(1), &[11, 12]);
        assert_eq!(t.get(2), &[] as &[u64]);
    }

    #[test]
    fn shards_are_allocated_on_demand_within_the_limit_then_rows_are_replaced_oldest_first() {
        let row = PrefetchTable::row_bytes(2); // 28 bytes
                                               // Fixed tables of 100 B; room for one shard of 4 rows (8 + 112 B) and a partial one of 2 rows.
        let limit = 100 + (8 + 4 * row) + (8 + 2 * row);
        let mut t = PrefetchTable::new(2, 4, Growth::Bounded { limit }, 100);
        assert_eq!((t.shards(), t.metadata_bytes()), (0, 100));
        for a in 0..6 {
            t.add(a, a + 100);
            assert!(t.metadata_bytes() <= limit);
        }
        assert_eq!((t.shards(), t.allocated_rows(), t.metadata_bytes()), (2, 6, limit));
        // Full: source 6 takes the oldest row (source 0's), source 7 the next.
        t.add(6, 106);
        t.add(7, 107);
        assert_eq!(t.get(0), &[] as &[u64]);
        assert_eq!(t.get(1), &[] as &[u64]);
        assert_eq!((t.get(2), t.get(6), t.get(7)), (&[102][..], &[106][..], &[107][..]));
        assert_eq!((t.len(), t.metadata_bytes()), (6, limit));
    }

    #[test]
    fn libcachesim_growth_starts_with_one_shard_and_skips_row_zero() {
        let row = PrefetchTable::row_bytes(2);
        let limit = 10_000.0;
        let mut t = PrefetchTable::new(2, 4, Growth::Libcachesim { limit, max_shards: 1250 }, 0);
        let start = 8 * 1250 + 4 * row;
        assert_eq!((t.shards(), t.metadata_bytes()), (1, start));
        // Already past the limit: no second shard, rows 2 and 3 cycle (0 and 1 are never used).
        for a in 0..5 {
            t.add(a, a + 100);
        }
        assert_eq!(t.shards(), 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(2), &[] as &[u64]);
        assert_eq!((t.get(3), t.get(4)), (&[103][..], &[104][..]));
    }

    #[test]
    fn libcachesim_growth_recycles_only_the_first_shard_once_full() {
        let row = PrefetchTable::row_bytes(2);
        // Room for the first shard and one more: rows 2..3 and 4..7, then full.
        let limit = (8 * 10 + 2 * 4 * row + 1) as f64;
        let mut t = PrefetchTable::new(2, 4, Growth::Libcachesim { limit, max_shards: 10 }, 0);
        for a in 0..6 {
            t.add(a, a + 100);
        }
        assert_eq!((t.shards(), t.len()), (2, 6));
        // Full: sources 6, 7, 8, 9 take rows 2, 3, 2, 3; the second shard's sources 2..5 stay for good.
        for a in 6..10 {
            t.add(a, a + 100);
        }
        assert_eq!(t.len(), 6);
        for a in [0, 1, 6, 7] {
            assert_eq!(t.get(a), &[] as &[u64], "{a}");
        }
        for a in [2, 3, 4, 5, 8, 9] {
            assert_eq!(t.get(a), &[a + 100], "{a}");
        }
    }

    proptest::proptest! {
        /// The same answers, sizes and metadata as the table it replaced (rows by number, indexed by a
        /// raw hash table of row numbers), for any sequence of associations, rows kept in the entries and
        /// in the array, both growth rules and tight limits.
        #[test]
        fn answers_as_the_table_it_replaced(
            width in 1u32..5,
            shard_rows in 1u32..6,
            libcachesim in proptest::prelude::any::<bool>(),
            room in 0u64..400,
            adds in proptest::collection::vec((0u64..40, 0u64..12), 0..300),
        ) {
            let growth = if libcachesim {
                Growth::Libcachesim { limit: 200.0 + room as f64, max_shards: 1 + (room % 7) as u32 }
            } else {
                Growth::Bounded { limit: 100 + room }
            };
            let mut new = PrefetchTable::new(width, shard_rows, growth, 50);
            let mut old = super::super::ptable_reference::OldTable::new(width, shard_rows, growth, 50);
            for (a, b) in adds {
                // Sources spread over the key space too (high bits), as real block numbers are.
                let a = if a % 3 == 0 { a.wrapping_mul(0x1234_5678_9abc_def1) } else { a };
                new.add(a, b);
                old.add(a, b);
                proptest::prop_assert_eq!(new.get(a), old.get(a));
                proptest::prop_assert_eq!((new.len(), new.is_empty()), (old.len(), old.is_empty()));
                proptest::prop_assert_eq!(new.metadata_bytes(), old.metadata_bytes());
                proptest::prop_assert_eq!((new.shards(), new.allocated_rows()), (old.shards(), old.allocated_rows()));
            }
            for a in 0u64..40 {
                let a2 = a.wrapping_mul(0x1234_5678_9abc_def1);
                proptest::prop_assert_eq!(new.get(a), old.get(a));
                proptest::prop_assert_eq!(new.get(a2), old.get(a2));
            }
        }
    }
}
