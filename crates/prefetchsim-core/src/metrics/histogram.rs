//! A log-bucketed histogram of non-negative integers (response times in ns) with a fixed relative
//! precision, in the manner of HdrHistogram (G. Tene): values below `2^P` have their own bucket, larger
//! values share a bucket with the values that agree on their `P + 1` leading bits, so a bucket is never
//! wider than `2^-P` of its lower bound. With `P = 8` that is 0.4%. Our own code, written from that
//! description.
//!
//! Memory grows with the largest value seen (about 2 KiB per doubling of the range), not with the
//! number of values; the mean, minimum and maximum are exact.

use serde::{Deserialize, Serialize};

/// Sub-bucket bits: relative bucket width at most `2^-P`.
const P: u32 = 8;
const SUB: u64 = 1 << P;

/// A histogram of `u64` values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

#[inline]
fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let shift = e - P;
    let mant = v >> shift; // in [SUB, 2 SUB)
    (u64::from(shift) * SUB + mant) as usize
}

/// The smallest and largest value of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let mant = i % SUB + SUB;
    let lo = mant << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

impl Histogram {
    /// An empty histogram.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        if self.total == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.total += 1;
        self.sum += u128::from(v);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.total == 0 {
            return;
        }
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.min = if self.total == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.total += other.total;
        self.sum += other.sum;
    }

    /// Number of values.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact mean (0 when empty).
    #[must_use]
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// Exact sum.
    #[must_use]
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Exact minimum (0 when empty).
    #[must_use]
    pub fn min(&self) -> u64 {
        self.min
    }

    /// Exact maximum (0 when empty).
    #[must_use]
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The `q` quantile (`0 < q <= 1`): the middle of the bucket holding the value of rank
    /// `ceil(q * count)`, clamped to the exact minimum and maximum. Within `2^-P` of the true value.
    #[must_use]
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                return (lo + (hi - lo) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Non-empty buckets as `(lowest value, highest value, count)`, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, &c)| {
            let (lo, hi) = bounds(i);
            (lo, hi, c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line_with_bounded_width() {
        let mut prev_hi = None;
        for i in 0..(40 * SUB as usize) {
            let (lo, hi) = bounds(i);
            if let Some(p) = prev_hi {
                assert_eq!(lo, p + 1, "bucket {i}");
            }
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            assert!((hi - lo) as f64 <= lo as f64 / SUB as f64 + 1e-9, "bucket {i}: {lo}..{hi}");
            prev_hi = Some(hi);
        }
        assert_eq!(bounds(index(u64::MAX)).1, u64::MAX);
    }

    #[test]
    fn quantiles_are_within_the_relative_precision() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (q, want) in [(0.5, 50_000_000.0), (0.95, 95_000_000.0), (0.99, 99_000_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 1.0 / SUB as f64, "q {q}: {got} vs {want}");
        }
        assert_eq!(h.quantile(1.0), 100_000_000);
        assert_eq!(h.min(), 1000);
        assert!((h.mean() - 50_000_500.0).abs() < 1e-6);
    }

    #[test]
    fn a_constant_sample_is_reported_exactly_and_merging_adds() {
        let mut a = Histogram::new();
        for _ in 0..10 {
            a.record(17_030_000);
        }
        assert_eq!(
            (a.quantile(0.5), a.quantile(0.99), a.max(), a.mean()),
            (17_030_000, 17_030_000, 17_030_000, 17_030_000.0)
        );
        let mut b = Histogram::new();
        b.record(5);
        b.merge(&a);
        assert_eq!((b.count(), b.min(), b.max()), (11, 5, 17_030_000));
        assert_eq!(b.buckets().map(|x| x.2).sum::<u64>(), 11);
        assert_eq!(Histogram::new().quantile(0.5), 0);
    }
}
