//! Counts of marks per 64-bit word of a bit set, in three levels, for the mark set of the stack-distance
//! counter ([`super::marks`]): a count per word (`u8`), per 64 words (`u16`) and per 4,096 words (`u32`).
//!
//! An update is three increments (a Fenwick tree over the words, used before, walked ~15 levels per
//! update, and every reference makes two updates); a range sum reads at most ~64 consecutive counts of each
//! level, contiguous bytes the compiler sums with vector instructions. The whole structure is 1/8 of the
//! bit set's size and stays in the processor's caches.

/// Words per count of the next level.
const FAN: usize = 64;

/// [`FAN`] all-ones values then [`FAN`] zeros, of an unsigned type: the [`FAN`] entries from `FAN - k` on
/// keep the first `k` counts of a group.
macro_rules! keep_first_masks {
    ($t:ty) => {{
        let mut m: [$t; 2 * FAN] = [0; 2 * FAN];
        let mut i = 0;
        while i < FAN {
            m[i] = <$t>::MAX;
            i += 1;
        }
        m
    }};
}

/// Masks for the `u8` word counts.
const BYTE_MASKS: [u8; 2 * FAN] = keep_first_masks!(u8);
/// Masks for the `u16` group counts.
const HALF_MASKS: [u16; 2 * FAN] = keep_first_masks!(u16);

/// Counts of marks per word, per `FAN` words and per `FAN`² words.
#[derive(Clone, Debug, Default)]
pub struct WordCounts {
    words: Vec<u8>,
    groups: Vec<u16>,
    supers: Vec<u32>,
}

impl WordCounts {
    /// The counts of `bits` (one count per word).
    #[must_use]
    pub fn of(bits: &[u64]) -> Self {
        // Padded with zero counts to whole groups at both levels, for [`Self::prefix`]'s fixed-length reads.
        let mut words: Vec<u8> = bits.iter().map(|w| w.count_ones() as u8).collect();
        words.resize(words.len().div_ceil(FAN).max(1) * FAN, 0);
        let mut groups: Vec<u16> = words.chunks(FAN).map(|c| c.iter().map(|&n| u16::from(n)).sum()).collect();
        groups.resize(groups.len().div_ceil(FAN).max(1) * FAN, 0);
        let supers: Vec<u32> = groups.chunks(FAN).map(|c| c.iter().map(|&n| u32::from(n)).sum()).collect();
        Self { words, groups, supers }
    }

    /// One more mark in word `w`.
    #[inline]
    pub fn add(&mut self, w: usize) {
        self.words[w] += 1;
        self.groups[w / FAN] += 1;
        self.supers[w / (FAN * FAN)] += 1;
    }

    /// One mark less in word `w`.
    #[inline]
    pub fn sub(&mut self, w: usize) {
        self.words[w] -= 1;
        self.groups[w / FAN] -= 1;
        self.supers[w / (FAN * FAN)] -= 1;
    }

    /// Marks in words `a..b`. Always inlined: the exact pass calls it once per reference, and left to
    /// itself the compiler kept it out of line in the Python extension (a call per reference there, 23% of
    /// `ps.mrc(method="exact")` on w106 in `perf`).
    #[inline(always)]
    #[must_use]
    pub fn sum(&self, a: usize, b: usize) -> u64 {
        if b <= a {
            return 0;
        }
        let (ga, gb) = (a.div_ceil(FAN), b / FAN);
        if ga >= gb {
            return sum(&self.words[a..b]);
        }
        sum(&self.words[a..ga * FAN]) + self.sum_groups(ga, gb) + sum(&self.words[gb * FAN..b])
    }

    /// Marks in words `0..w` (`w` below the number of words): the whole counts of the supergroups before,
    /// plus the counts before `w` in its own group and before its group in its supergroup, each read as all
    /// `FAN` counts of the group under a mask of the first ones (a fixed-length loop the compiler turns
    /// into a few vector instructions, with no branch on where `w` falls; docs/mrc.md, round 6).
    #[inline(always)]
    #[must_use]
    pub fn prefix(&self, w: usize) -> u64 {
        let g = w / FAN;
        let s = g / FAN;
        let words: &[u8; FAN] = self.words[g * FAN..(g + 1) * FAN].try_into().expect("padded to whole groups");
        let groups: &[u16; FAN] = self.groups[s * FAN..(s + 1) * FAN].try_into().expect("padded to whole groups");
        let word_mask: &[u8; FAN] = BYTE_MASKS[FAN - (w - g * FAN)..2 * FAN - (w - g * FAN)].try_into().expect("FAN");
        let group_mask: &[u16; FAN] = HALF_MASKS[FAN - (g - s * FAN)..2 * FAN - (g - s * FAN)].try_into().expect("FAN");
        let in_group: u32 = words.iter().zip(word_mask).map(|(&n, &m)| u32::from(n & m)).sum();
        let in_super: u32 = groups.iter().zip(group_mask).map(|(&n, &m)| u32::from(n & m)).sum();
        sum(&self.supers[..s]) + u64::from(in_super) + u64::from(in_group)
    }

    /// Marks in the groups `a..b` (of [`FAN`] words each).
    #[inline(always)]
    fn sum_groups(&self, a: usize, b: usize) -> u64 {
        let (sa, sb) = (a.div_ceil(FAN), b / FAN);
        if sa >= sb {
            return sum(&self.groups[a..b]);
        }
        sum(&self.groups[a..sa * FAN]) + sum(&self.supers[sa..sb]) + sum(&self.groups[sb * FAN..b])
    }
}

#[inline]
fn sum<T: Copy + Into<u32>>(v: &[T]) -> u64 {
    u64::from(v.iter().map(|&n| n.into()).sum::<u32>())
}

#[cfg(test)]
mod tests {
    use super::WordCounts;

    #[test]
    fn sums_agree_with_a_plain_sum() {
        let mut x = 5u64;
        let bits: Vec<u64> = (0..70_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                x & (x >> 17)
            })
            .collect();
        let mut c = WordCounts::of(&bits);
        let mut plain: Vec<u64> = bits.iter().map(|w| u64::from(w.count_ones())).collect();
        for k in 0..2000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let w = (x >> 20) as usize % plain.len();
            if plain[w] < 64 && k % 2 == 0 {
                c.add(w);
                plain[w] += 1;
            } else if plain[w] > 0 {
                c.sub(w);
                plain[w] -= 1;
            }
            let a = (x >> 30) as usize % (plain.len() + 1);
            let b = if k % 3 == 0 {
                (a + (x >> 50) as usize % 300).min(plain.len())
            } else {
                (x >> 7) as usize % (plain.len() + 1)
            };
            let want: u64 = if a < b { plain[a..b].iter().sum() } else { 0 };
            assert_eq!(c.sum(a, b), want, "words {a}..{b}");
            let p = (x >> 40) as usize % plain.len();
            assert_eq!(c.prefix(p), plain[..p].iter().sum::<u64>(), "words 0..{p}");
        }
    }
}
