//! A set of positions `0..len` with rank queries, for the stack-distance counter ([`super::stack`]).
//!
//! One bit per position, and the number of set bits of each 64-bit word in three levels ([`WordCounts`]):
//! marking or unmarking a position is a bit flip and three increments; the marks in a range are popcounts
//! of its two end words plus a sum of the counts between. The whole structure is about 1/14 of a byte per
//! position, so it stays in the processor's caches for footprints of millions of blocks.

use super::levels::WordCounts;

/// Ranges of at most this many words are counted directly by [`Marks::count_after`], longer ones as a prefix.
const NEAR: usize = 16;

/// Positions `0..len` (a multiple of 64), each marked or not.
#[derive(Clone, Debug, Default)]
pub struct Marks {
    bits: Vec<u64>,
    words: WordCounts,
    count: u64,
}

impl Marks {
    /// At least `len` unmarked positions.
    #[must_use]
    pub fn new(len: usize) -> Self {
        let n = len.div_ceil(64);
        let bits = vec![0; n];
        Self { words: WordCounts::of(&bits), bits, count: 0 }
    }

    /// At least `len` positions whose first `ones` are marked (built in O(len / 64)).
    #[must_use]
    pub fn with_first(len: usize, ones: usize) -> Self {
        let n = len.max(ones).div_ceil(64);
        let mut bits = vec![0u64; n];
        let full = ones / 64;
        bits[..full].fill(u64::MAX);
        if ones % 64 != 0 {
            bits[full] = (1u64 << (ones % 64)) - 1;
        }
        Self { words: WordCounts::of(&bits), bits, count: ones as u64 }
    }

    /// Number of positions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bits.len() * 64
    }

    /// No position.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// Marked positions.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mark position `i` (unmarked).
    #[inline]
    pub fn insert(&mut self, i: usize) {
        debug_assert!(self.bits[i / 64] & (1 << (i % 64)) == 0);
        self.bits[i / 64] |= 1 << (i % 64);
        self.words.add(i / 64);
        self.count += 1;
    }

    /// Unmark position `i` (marked).
    #[inline]
    pub fn remove(&mut self, i: usize) {
        debug_assert!(self.bits[i / 64] & (1 << (i % 64)) != 0);
        self.bits[i / 64] &= !(1 << (i % 64));
        self.words.sub(i / 64);
        self.count -= 1;
    }

    /// Marked positions after `i`, up to `last` (inclusive; `i <= last`).
    #[inline]
    #[must_use]
    pub fn count_between(&self, i: usize, last: usize) -> u64 {
        let (wi, wl) = (i / 64, last / 64);
        // Bits above `i` in its word; bits up to `last` in its word.
        let above = |w: u64, b: usize| if b == 63 { 0 } else { w >> (b + 1) };
        let upto = |w: u64, b: usize| w & (u64::MAX >> (63 - b));
        if wi == wl {
            return u64::from(above(upto(self.bits[wi], last % 64), i % 64).count_ones());
        }
        let ends = above(self.bits[wi], i % 64).count_ones() + upto(self.bits[wl], last % 64).count_ones();
        u64::from(ends) + self.words.sum(wi + 1, wl)
    }

    /// Marks after `i` when no position after `last` is marked (`i <= last`). A short range (within
    /// `NEAR` words) is summed as it is; a longer one as all marks less those up to `i`, a prefix of
    /// fixed cost ([`WordCounts::prefix`]; the range sum it replaces took 42% of the exact pass on w106,
    /// and a fixed cost for every range made w106's many short ones dearer; docs/mrc.md, round 6).
    #[inline]
    #[must_use]
    pub fn count_after(&self, i: usize, last: usize) -> u64 {
        debug_assert!(i <= last && (last % 64 == 63 || self.bits[last / 64] >> (last % 64 + 1) == 0));
        let (wi, wl) = (i / 64, last / 64);
        if wl - wi <= NEAR {
            let above = if i % 64 == 63 { 0 } else { self.bits[wi] >> (i % 64 + 1) };
            return u64::from(above.count_ones()) + self.words.sum(wi + 1, wl + 1);
        }
        let upto = self.bits[wi] & (u64::MAX >> (63 - i % 64));
        self.count - self.words.prefix(wi) - u64::from(upto.count_ones())
    }

    /// The number of marks before each position, frozen: the new positions of a compaction that keeps the
    /// marks in order.
    #[must_use]
    pub fn ranks(&self) -> Ranks<'_> {
        let mut acc = 0u32;
        let before = self
            .bits
            .iter()
            .map(|w| {
                let b = acc;
                acc += w.count_ones();
                b
            })
            .collect();
        Ranks { bits: &self.bits, before }
    }
}

/// Marks before each position of a [`Marks`] (see [`Marks::ranks`]).
#[derive(Debug)]
pub struct Ranks<'a> {
    bits: &'a [u64],
    before: Vec<u32>,
}

impl Ranks<'_> {
    /// Marked positions before `i`.
    #[inline]
    #[must_use]
    pub fn before(&self, i: usize) -> u32 {
        let low = self.bits[i / 64] & ((1u64 << (i % 64)) - 1);
        self.before[i / 64] + low.count_ones()
    }
}

#[cfg(test)]
mod tests {
    use super::Marks;

    #[test]
    fn counts_between_agree_with_a_plain_count() {
        let mut m = Marks::new(2000);
        let mut plain = vec![false; m.len()];
        let mut x = 12345u64;
        for _ in 0..3000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let i = (x >> 33) as usize % plain.len();
            if plain[i] {
                m.remove(i);
            } else {
                m.insert(i);
            }
            plain[i] = !plain[i];
            let a = (x >> 13) as usize % plain.len();
            let b = (x >> 23) as usize % plain.len();
            let (lo, hi) = (a.min(b), a.max(b));
            let want = plain[lo + 1..=hi].iter().filter(|v| **v).count() as u64;
            assert_eq!(m.count_between(lo, hi), want, "({lo}, {hi}]");
        }
        assert_eq!(m.count(), plain.iter().filter(|v| **v).count() as u64);
        let ranks = m.ranks();
        for i in 0..plain.len() {
            assert_eq!(ranks.before(i) as usize, plain[..i].iter().filter(|v| **v).count(), "before {i}");
        }
    }

    /// With nothing marked after `last`, counting after `i` agrees with counting between.
    #[test]
    fn counts_after_agree_with_counts_between_below_the_last_mark() {
        let mut m = Marks::new(64 * 300);
        let mut marked = Vec::new();
        let mut x = 99u64;
        let mut top = 0usize;
        loop {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Marks are added at increasing positions (times); some earlier ones leave.
            top += 1 + (x >> 60) as usize % 3;
            if top + 8 >= m.len() {
                break;
            }
            m.insert(top);
            marked.push(top);
            if x % 3 == 0 {
                let k = (x >> 20) as usize % marked.len();
                m.remove(marked.swap_remove(k));
            }
            let i = (x >> 30) as usize % (top + 1);
            let last = top + (x >> 55) as usize % 8;
            assert_eq!(m.count_after(i, last), m.count_between(i, last), "after {i} up to {last}");
        }
    }

    #[test]
    fn with_first_marks_a_prefix() {
        for ones in [0, 1, 63, 64, 65, 200] {
            let m = Marks::with_first(256, ones);
            assert_eq!(m.count(), ones as u64);
            assert_eq!(m.count_between(0, 255), ones.saturating_sub(1) as u64);
        }
    }
}
