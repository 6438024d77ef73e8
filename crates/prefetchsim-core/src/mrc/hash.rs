//! The hash that decides spatial sampling: a fixed, seedable 64-bit mix of a block (or extent) number, so
//! that a block is in or out of the sample for the whole trace and in every run (SHARDS, FAST'15 §3).

/// SplitMix64's finaliser (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014) applied to `key` xor a seed-derived constant: uniform over `u64` for distinct keys.
#[inline]
#[must_use]
pub fn mix(key: u64, seed: u64) -> u64 {
    let mut z = key ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hash threshold of sampling rate `rate` in (0, 1]: a key is sampled when `mix(key) <= threshold`.
#[must_use]
pub fn threshold(rate: f64) -> u64 {
    if rate >= 1.0 {
        u64::MAX
    } else {
        // 2^64 * rate, below 2^64 since rate < 1.
        (rate * 18_446_744_073_709_551_616.0) as u64
    }
}

/// The sampling rate a threshold stands for.
#[must_use]
pub fn rate_of(threshold: u64) -> f64 {
    if threshold == u64::MAX {
        1.0
    } else {
        threshold as f64 / 18_446_744_073_709_551_616.0
    }
}

/// A hash drawn from a strongly universal (pairwise independent) family, seeded: Dietzfelbinger's
/// multiply-add-shift ("Universal hashing and k-wise independent random variables via integer
/// arithmetic without primes", STACS 1996) for 64-bit keys and 64-bit values: the high 64 bits of
/// `(a * key + b) mod 2^128`, with `a` and `b` drawn from `seed`. SHARDS hashes every block of the trace,
/// which makes this its main cost: two independent multiplications and two additions, where [`mix`]
/// chains two multiplications and three shifts. Pairwise independence is what SHARDS' estimates need to be
/// unbiased (docs/mrc.md, method 11). The miniature simulation's sampling keeps [`mix`].
#[derive(Clone, Copy, Debug)]
pub struct Universal {
    a: u128,
    b: u128,
}

impl Universal {
    /// The member of the family that `seed` draws (its parameters from SplitMix64 outputs).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        let word = |i: u64| u128::from(mix(i, seed));
        Self { a: word(1) << 64 | word(2), b: word(3) << 64 | word(4) }
    }

    /// The hash of `key`.
    #[inline]
    #[must_use]
    pub fn hash(&self, key: u64) -> u64 {
        (self.a.wrapping_mul(u128::from(key)).wrapping_add(self.b) >> 64) as u64
    }
}

/// A hash drawn from Thorup's strongly universal multiply-shift family for a vector of two 32-bit
/// characters ("High speed hashing for integers and strings", arXiv 1504.06804, after Dietzfelbinger,
/// STACS 1996): a key `x = (x1, x0)` (its high and low 32-bit halves) hashes to the high 32 bits of
/// `(a0 x0 + a1 x1 + b) mod 2^64`, with `a0`, `a1` and `b` drawn from `seed`. Strongly universal onto 32 bits
/// because 64 >= 32 + 32 - 1: each key is uniform and any two independent, which is what SHARDS' scaled
/// distances need to be unbiased (docs/mrc.md, methods 8, 11 and 15).
///
/// Its 64-bit [`Self::sum`] is what SHARDS compares: the hash is `sum >> 32`, and `hash <= T >> 32` exactly
/// when `sum <= T | (2^32 - 1)` ([`Self::test`]). Two identities make a request cheap without changing a
/// value: a key below 2^32 has `a1 x1 = 0`, and while the low half does not wrap, `sum(x + 1) = sum(x) + a0`
/// ([`Self::step`]), so a request costs one multiplication and one addition per further block.
#[derive(Clone, Copy, Debug)]
pub struct MultiplyShift {
    a0: u64,
    a1: u64,
    b: u64,
}

impl MultiplyShift {
    /// The member of the family that `seed` draws (its parameters from SplitMix64 outputs).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self { a0: mix(1, seed), a1: mix(2, seed), b: mix(3, seed) }
    }

    /// `(a0 x0 + a1 x1 + b) mod 2^64`, whose high 32 bits are the hash of `key`.
    #[inline]
    #[must_use]
    pub fn sum(&self, key: u64) -> u64 {
        let (lo, hi) = (key & 0xFFFF_FFFF, key >> 32);
        let s = self.a0.wrapping_mul(lo).wrapping_add(self.b);
        if hi == 0 {
            s
        } else {
            s.wrapping_add(self.a1.wrapping_mul(hi))
        }
    }

    /// The hash of `key` as a 64-bit value: its 32 bits on top, zeros below (so thresholds of the
    /// sampling rate, [`threshold`], compare with it directly).
    #[inline]
    #[must_use]
    pub fn hash(&self, key: u64) -> u64 {
        self.sum(key) & !0xFFFF_FFFF
    }

    /// What [`Self::sum`] gains from a key to the next one while the key's low half does not wrap.
    #[inline]
    #[must_use]
    pub fn step(&self) -> u64 {
        self.a0
    }

    /// The bound on [`Self::sum`] that samples the keys whose [`Self::hash`] is at most `threshold`.
    #[inline]
    #[must_use]
    pub fn test(threshold: u64) -> u64 {
        threshold | 0xFFFF_FFFF
    }

    /// The first block of `first..first + len` whose hash is at most `threshold` (with `bound =
    /// Self::test(threshold)`), stepping the sum by additions while the low half does not wrap.
    #[inline]
    #[must_use]
    pub fn first_sampled(&self, first: u64, len: u32, bound: u64) -> Option<u64> {
        if len == 0 {
            return None;
        }
        let mut s = self.sum(first);
        if s <= bound {
            return Some(first);
        }
        let n = u64::from(len);
        if (first & 0xFFFF_FFFF) + n <= 1 << 32 {
            for k in 1..n {
                s = s.wrapping_add(self.a0);
                if s <= bound {
                    return Some(first + k);
                }
            }
            None
        } else {
            (1..n).map_while(|k| first.checked_add(k)).find(|&b| self.sum(b) <= bound)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{mix, threshold, MultiplyShift, Universal};

    #[test]
    fn the_universal_hash_samples_about_the_rate_of_consecutive_and_scattered_keys() {
        let t = threshold(0.01);
        for seed in 0..4 {
            let h = Universal::new(seed);
            let consecutive = (0..200_000u64).filter(|&k| h.hash(k) <= t).count();
            let scattered = (0..200_000u64).filter(|&k| h.hash(mix(k, 99)) <= t).count();
            // 2,000 expected; the binomial standard deviation is 44.
            for n in [consecutive, scattered] {
                assert!((1_800..=2_200).contains(&n), "seed {seed}: {n} of 200,000 sampled");
            }
        }
    }

    #[test]
    fn multiply_shift_samples_about_the_rate_of_consecutive_and_scattered_keys() {
        let t = threshold(0.01);
        for seed in 0..4 {
            let h = MultiplyShift::new(seed);
            let count = |keys: &mut dyn Iterator<Item = u64>| keys.filter(|&k| h.hash(k) <= t).count();
            let consecutive = count(&mut (0..200_000u64));
            let scattered = count(&mut (0..200_000u64).map(|k| mix(k, 99)));
            let high = count(&mut (0..200_000u64).map(|k| (k << 32) | 7));
            for n in [consecutive, scattered, high] {
                assert!((1_800..=2_200).contains(&n), "seed {seed}: {n} of 200,000 sampled");
            }
        }
    }

    /// The sum's test is the hash's, and a request's first sampled block found by steps is the one found
    /// by hashing each block, also across the wrap of the low half and at the top of the key space.
    #[test]
    fn stepping_a_request_finds_what_hashing_each_block_finds() {
        let mut x = 5u64;
        for seed in 0..8 {
            let h = MultiplyShift::new(seed);
            for rate in [0.01, 0.3, 0.9] {
                let t = threshold(rate);
                let bound = MultiplyShift::test(t);
                for i in 0..20_000u64 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let first = match i % 4 {
                        0 => x >> 40,
                        1 => (x >> 32) << 32 | (0xFFFF_FFFF - (x & 15)),
                        2 => u64::MAX - (x & 31),
                        _ => x,
                    };
                    let len = if i % 3 == 0 { (x >> 61) as u32 + 1 } else { (x >> 58) as u32 * 2 };
                    let want = (0..u64::from(len)).map_while(|k| first.checked_add(k)).find(|&b| h.hash(b) <= t);
                    assert_eq!(h.first_sampled(first, len, bound), want, "seed {seed} first {first} len {len}");
                    assert_eq!(h.sum(first) <= bound, h.hash(first) <= t);
                }
            }
        }
    }
}
