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
