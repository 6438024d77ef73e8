//! The prefetching table as it was before its rows moved into the entries of its index (rows in an
//! array by number, a raw hash table of row numbers as the index): the reference of the property test
//! in [`super::ptable`], kept for tests only.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::ptable::{Growth, PrefetchTable};
use crate::policy::table::BlockHasher;

/// The old prefetching table.
#[derive(Debug)]
pub struct OldTable {
    index: HashTable<u32>,
    hasher: BlockHasher,
    width: usize,
    /// Rows of `[source, count, blocks…]`, `width + 2` cells each.
    cells: Vec<u64>,
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

impl OldTable {
    /// An empty table. `fixed` is the metadata of the other tables, counted against the same limit.
    #[must_use]
    pub fn new(pf_list_size: u32, shard_rows: u32, growth: Growth, fixed: u64) -> Self {
        let mut t = Self {
            index: HashTable::new(),
            hasher: BlockHasher::with_seed(0x5eed_b10c),
            width: pf_list_size as usize,
            cells: Vec::new(),
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
            t.meta += u64::from(t.shard_rows) * PrefetchTable::row_bytes(pf_list_size);
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

    #[inline]
    fn stride(&self) -> usize {
        self.width + 2
    }

    /// The row of `block` (hash `h`).
    #[inline]
    fn find(&self, h: u64, block: u64) -> Option<u32> {
        let s = self.stride();
        self.index.find(h, |&r| self.cells[r as usize * s] == block).copied()
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
        match self.find(h, block) {
            Some(r) => {
                let i = r as usize * self.stride();
                &self.cells[i + 2..i + 2 + self.cells[i + 1] as usize]
            }
            None => &[],
        }
    }

    /// Add `rows` rows (one shard or its last part).
    fn allocate(&mut self, rows: u32) {
        let n = (self.rows + rows) as usize;
        self.cells.resize(n * self.stride(), 0);
        let (cells, hasher, s) = (&self.cells, &self.hasher, self.stride());
        self.index.reserve(2 * rows as usize, |&r| hasher.hash_one(cells[r as usize * s]));
        self.rows += rows;
        self.shards += 1;
    }

    /// Try to add a shard; false when the limit forbids it.
    fn grow(&mut self) -> bool {
        let row_bytes = PrefetchTable::row_bytes(self.width as u32);
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
        let i = r as usize * self.stride();
        if self.cells[i + 1] > 0 {
            let h = self.hash(self.cells[i]);
            if let Ok(e) = self.index.find_entry(h, |&x| x == r) {
                e.remove();
            }
            self.cells[i + 1] = 0;
        }
        Some(r)
    }

    /// Record the association `a → b`.
    pub fn add(&mut self, a: u64, b: u64) {
        let (w, s) = (self.width, self.stride());
        let h = self.hash(a);
        if let Some(r) = self.find(h, a) {
            let i = r as usize * s;
            let n = self.cells[i + 1] as usize;
            let row = &mut self.cells[i + 2..i + 2 + w];
            if row[..n].contains(&b) {
                return;
            }
            if n == w {
                for k in 1..w {
                    row[k - 1] = row[k];
                }
                row[w - 1] = b;
            } else {
                row[n] = b;
                self.cells[i + 1] += 1;
            }
            return;
        }
        if let Some(r) = self.take_row() {
            let i = r as usize * s;
            self.cells[i] = a;
            self.cells[i + 1] = 1;
            self.cells[i + 2] = b;
            let (cells, hasher) = (&self.cells, &self.hasher);
            self.index.insert_unique(h, r, |&x| hasher.hash_one(cells[x as usize * s]));
        }
    }
}
