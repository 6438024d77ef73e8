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

#[cfg(test)]
mod tests {
    use super::{mix, threshold, Universal};

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
}
