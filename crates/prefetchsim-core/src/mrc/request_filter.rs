//! Which requests may hold a block that SHARDS samples at a fixed rate, decided per request in constant
//! time, whatever its length: most requests hold none (99% at a 1% rate), and testing their blocks one by
//! one costs a loop whose length varies from request to request (docs/mrc.md, sections 7 and 9).
//!
//! The sampling hash ([`MultiplyShift`]) gives block `first + k` of a request the 64-bit sum `s + k a0`
//! (`s` the first block's sum, while the low half does not wrap), and the block is sampled when that sum is
//! at most the bound. So block `k` is sampled exactly when `s` lies in the arc `[-k a0, -k a0 + bound]` of
//! the circle of 64-bit values. The circle is cut into [`BUCKETS`] equal arcs; bit `k` of a bucket's entry
//! says whether that bucket meets the arc of some block `j <= k`. A request of `len` blocks whose first sum
//! falls in a bucket without bit `len - 1` has no sampled block; otherwise the blocks are tested one by one
//! ([`MultiplyShift::first_sampled`]), so the answer is always the per-block one. A request is sent to
//! that test with probability about `len x (rate + 2 / BUCKETS)`.

use super::hash::MultiplyShift;

/// Bits of a sum that choose its bucket.
const BUCKET_BITS: u32 = 12;
/// Arcs of the circle of sums (16 KiB of entries: the table stays in the first-level cache).
pub const BUCKETS: usize = 1 << BUCKET_BITS;
/// Blocks of a request the table covers (bits of an entry); longer requests are tested block by block.
pub const OFFSETS: u32 = 32;

/// The per-request filter of one hash and bound.
#[derive(Clone, Debug)]
pub struct RequestFilter {
    hasher: MultiplyShift,
    table: Box<[u32; BUCKETS]>,
}

impl RequestFilter {
    /// The filter for `hasher` sampling sums at most `bound` ([`MultiplyShift::test`]).
    #[must_use]
    pub fn new(hasher: MultiplyShift, bound: u64) -> Self {
        let shift = 64 - BUCKET_BITS;
        let mut table = Box::new([0u32; BUCKETS]);
        for k in 0..OFFSETS {
            // Sums x with (x + k a0) mod 2^64 <= bound: the arc from c = -k a0 over bound + 1 values.
            let c = hasher.step().wrapping_mul(u64::from(k)).wrapping_neg();
            let start = (c >> shift) as usize;
            // Buckets from c's to (c + bound)'s, all of them when the arc goes round.
            let span = ((u128::from(c & ((1 << shift) - 1)) + u128::from(bound)) >> shift) as usize;
            for i in 0..=span.min(BUCKETS - 1) {
                table[(start + i) % BUCKETS] |= 1 << k;
            }
        }
        // Bit k: some block j <= k, so a request tests one bit of its bucket's entry.
        for e in table.iter_mut() {
            for k in 1..OFFSETS {
                *e |= (*e >> (k - 1) & 1) << k;
            }
        }
        Self { hasher, table }
    }

    /// False when no block of the request `first..first + len` is sampled; true when one may be.
    #[inline]
    #[must_use]
    pub fn may_sample(&self, first: u64, len: u32) -> bool {
        let last = len.wrapping_sub(1);
        // Beyond the table (or no block at all), or the low half wraps within the request: let the
        // per-block test decide.
        if last >= OFFSETS || (first as u32).checked_add(last).is_none() {
            return true;
        }
        let s = self.hasher.sum(first);
        self.table[(s >> (64 - BUCKET_BITS)) as usize] >> last & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::{RequestFilter, BUCKETS, OFFSETS};
    use crate::mrc::hash::{threshold, MultiplyShift};

    /// Never says no to a request with a sampled block, and says yes to few others.
    #[test]
    fn passes_every_request_with_a_sampled_block_and_few_others() {
        let mut x = 3u64;
        for seed in 0..6 {
            let h = MultiplyShift::new(seed);
            for rate in [0.0001, 0.01, 0.2, 0.999_999_99, 1.0 - 1e-16] {
                let bound = MultiplyShift::test(threshold(rate));
                let f = RequestFilter::new(h, bound);
                let (mut passed, mut sampled, mut n) = (0u64, 0u64, 0u64);
                for i in 0..30_000u64 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let first = match i % 3 {
                        0 => x >> 36,
                        1 => (x >> 32) << 32 | (0xFFFF_FFFF - (x & 7)),
                        _ => x,
                    };
                    let len = if i % 2 == 0 { (x >> 61) as u32 } else { (x >> 58) as u32 };
                    let has = h.first_sampled(first, len, bound).is_some();
                    let may = f.may_sample(first, len);
                    assert!(may || !has, "seed {seed} rate {rate}: {first} + {len} has a sampled block");
                    if len == 0 || len > OFFSETS || (first & 0xFFFF_FFFF) + u64::from(len) >= 1 << 32 {
                        continue;
                    }
                    n += 1;
                    passed += u64::from(may);
                    sampled += u64::from(has);
                }
                if rate < 0.5 {
                    // The excess is at most 2 buckets per block of a request (16 on average here).
                    let excess = (passed - sampled) as f64 / n as f64;
                    assert!(excess < 32.0 / BUCKETS as f64, "seed {seed} rate {rate}: {excess}");
                }
            }
        }
    }
}
