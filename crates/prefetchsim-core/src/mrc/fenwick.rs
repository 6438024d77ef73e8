//! A Fenwick (binary indexed) tree of counts: point updates and prefix sums in O(log n).
//!
//! Fenwick, "A new data structure for cumulative frequency tables", Software: Practice and Experience 24(3),
//! 1994. The mark set of the stack-distance counter ([`super::marks`]) keeps one count per 64-bit word.

/// Counts at positions `0..len`, with prefix sums.
#[derive(Clone, Debug, Default)]
pub struct Fenwick {
    tree: Vec<u32>,
}

impl Fenwick {
    /// `len` zero counts.
    #[must_use]
    pub fn new(len: usize) -> Self {
        Self { tree: vec![0; len + 1] }
    }

    /// Number of positions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tree.len() - 1
    }

    /// No position.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add `delta` (+1 or -1) at position `i`.
    #[inline]
    pub fn add(&mut self, i: usize, delta: i32) {
        let mut k = i + 1;
        while k < self.tree.len() {
            self.tree[k] = self.tree[k].wrapping_add_signed(delta);
            k += k & k.wrapping_neg();
        }
    }

    /// Sum of the counts at positions `0..=i`.
    #[inline]
    #[must_use]
    pub fn prefix(&self, i: usize) -> u64 {
        let mut k = i + 1;
        let mut s = 0u64;
        while k > 0 {
            s += u64::from(self.tree[k]);
            k &= k - 1;
        }
        s
    }

    /// A tree holding `counts` (built in O(len)).
    #[must_use]
    pub fn from_counts(counts: &[u32]) -> Self {
        let len = counts.len();
        let mut tree = vec![0u32; len + 1];
        for k in 1..=len {
            tree[k] += counts[k - 1];
            let parent = k + (k & k.wrapping_neg());
            if parent <= len {
                tree[parent] += tree[k];
            }
        }
        Self { tree }
    }
}
