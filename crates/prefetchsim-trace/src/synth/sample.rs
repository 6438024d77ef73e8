//! Random sampling for the generators: our own uniform, exponential, Poisson, geometric and Zipf samplers
//! over `Pcg64Mcg`, and a keyed pseudo-random permutation of `0..n` (Zipf after Hörmann & Derflinger 1996,
//! "Rejection-inversion to generate variates from monotone discrete distributions").
//!
//! Only `next_u64` of the generator is used, and every transformation is written here, so a trace depends
//! on the seed and on this file alone, not on the sampling code of a `rand`/`rand_distr` release.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// SplitMix64's finaliser: a bijective mix of all 64 bits (used for seeds and the permutation's rounds).
#[must_use]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A seeded random source with the samplers the generators need.
#[derive(Clone, Debug)]
pub struct SimRng(Pcg64Mcg);

impl SimRng {
    /// A generator for `seed`; `lane` separates independent sub-generators (one per Split generator, …)
    /// so that changing one part of a workload leaves the others' draws unchanged.
    #[must_use]
    pub fn new(seed: u64, lane: u64) -> Self {
        Self(Pcg64Mcg::seed_from_u64(mix64(seed ^ mix64(lane))))
    }

    /// 64 random bits.
    #[inline]
    pub fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `(0, 1]`: safe to take the logarithm of.
    #[inline]
    pub fn open_unit(&mut self) -> f64 {
        ((self.u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` without bias (Lemire's multiply-and-reject). `n` must be at least 1.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = u128::from(self.u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `lo..=hi` (`lo <= hi`).
    #[inline]
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Exponential with mean `mean` (inversion: `-mean * ln U`).
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.open_unit().ln()
    }

    /// An exponential gap of mean `mean_ns` nanoseconds, rounded to whole nanoseconds.
    #[inline]
    pub fn exp_ns(&mut self, mean_ns: f64) -> u64 {
        if mean_ns <= 0.0 {
            return 0;
        }
        (self.exp(mean_ns) + 0.5) as u64
    }

    /// Poisson with mean `lambda` by inversion (sequential search of the CDF); means above 256 are drawn as
    /// a sum of Poisson parts (exact, since Poisson means add), keeping `e^-lambda` far from underflow.
    pub fn poisson(&mut self, lambda: f64) -> u64 {
        let mut total = 0;
        let mut rest = lambda;
        while rest > 0.0 {
            let part = rest.min(256.0);
            rest -= part;
            total += self.poisson_small(part);
        }
        total
    }

    fn poisson_small(&mut self, lambda: f64) -> u64 {
        let u = self.unit();
        let mut p = (-lambda).exp();
        let mut cdf = p;
        let mut k = 0u64;
        // The cap only guards against a CDF that rounding keeps just below `u`; it is far in the tail.
        let cap = (lambda * 20.0) as u64 + 100;
        while u >= cdf && k < cap {
            k += 1;
            p *= lambda / k as f64;
            cdf += p;
        }
        k
    }

    /// Geometric on `1, 2, …` with mean `mean >= 1` (inversion), the number of requests of a run whose
    /// every request ends it with probability `1/mean`.
    pub fn geometric(&mut self, mean: f64) -> u64 {
        if mean <= 1.0 {
            return 1;
        }
        let q = 1.0 - 1.0 / mean;
        let k = (self.open_unit().ln() / q.ln()).floor();
        1 + if k >= 1e18 { 1e18 as u64 } else { k as u64 }
    }
}

/// A keyed pseudo-random permutation of `0..n`, O(1) memory: a generator visits every block of a region
/// exactly once in a random-looking order without a set of used blocks, and Zipf ranks are scattered over
/// the id space.
///
/// On the `m`-bit words, `m` the bits of `n - 1`, it composes steps that are each a bijection: xor with a
/// key, multiplication by a random odd number modulo `2^m` (carries spread low bits up), and
/// `x ^= x >> (m/2 + 1)` (spreads high bits down), three times (the shape of a 64-bit hash finaliser, cut
/// to `m` bits and keyed; with three rounds the gaps between consecutive images are as varied as under a
/// uniformly random permutation); cycle walking then restricts it to `0..n` (fewer than 2 steps on
/// average, since `2^m < 2n`).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; 5],
}

impl Permutation {
    /// A permutation of `0..n` keyed by `rng` (`n = 0` gives an empty one).
    #[must_use]
    pub fn new(n: u64, rng: &mut SimRng) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let keys = [rng.u64() & mask, rng.u64() | 1, rng.u64() | 1, rng.u64() | 1, rng.u64() & mask];
        Self { n, mask, shift: bits / 2 + 1, keys }
    }

    /// The size of the permuted range.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the range is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline]
    fn step(&self, x: u64) -> u64 {
        let [k0, m1, m2, m3, k1] = self.keys;
        let mut x = x ^ k0;
        for m in [m1, m2, m3] {
            x = x.wrapping_mul(m) & self.mask;
            x ^= x >> self.shift;
        }
        x ^ k1
    }

    /// The image of `i < n`.
    #[inline]
    #[must_use]
    pub fn apply(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = self.step(i);
        while x >= self.n {
            x = self.step(x);
        }
        x
    }
}

/// Zipf ranks `1..=n` with `P(k) ∝ k^-alpha` by rejection-inversion (Hörmann & Derflinger 1996): O(1)
/// memory and expected time for any `n`, exact for every `alpha >= 0`.
///
/// `H(x) = (x^q - 1) / q` with `q = 1 - alpha` (`ln x` when `q = 0`) is an antiderivative of
/// `h(x) = x^-alpha`. A uniform draw `y` between `H(1.5) - 1` and `H(n + 0.5)`, mapped through `H⁻¹` and
/// rounded, gives `k`; it is accepted when `y` lies in the top `h(k)` of the slice of `k`, so every rank
/// keeps exactly its weight. `s` is the paper's constant for the cheap early accept (no `H` needed).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    alpha: f64,
    q: f64,
    inv_q: f64,
    lo: f64,
    hi: f64,
    s: f64,
}

impl Zipf {
    /// A sampler over `1..=n` (`n >= 1`) with exponent `alpha >= 0`.
    #[must_use]
    pub fn new(n: u64, alpha: f64) -> Self {
        let q = 1.0 - alpha;
        let inv_q = if q == 0.0 { 0.0 } else { 1.0 / q };
        let mut z = Self { n, alpha, q, inv_q, lo: 0.0, hi: 0.0, s: 0.0 };
        z.lo = z.big_h(1.5) - 1.0;
        z.hi = z.big_h(n as f64 + 0.5);
        z.s = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    /// `x^-alpha`.
    #[inline]
    fn h(&self, x: f64) -> f64 {
        (-self.alpha * x.ln()).exp()
    }

    /// `H(x)`; `expm1` and `ln_1p` keep it accurate when `q` is tiny.
    #[inline]
    fn big_h(&self, x: f64) -> f64 {
        if self.q == 0.0 {
            x.ln()
        } else {
            (self.q * x.ln()).exp_m1() * self.inv_q
        }
    }

    /// `H⁻¹(y) = (1 + q·y)^(1/q)`. `ln(1 + t)` is only off by an absolute 1e-16 where `ln_1p` is exact,
    /// which after the division by `q` moves `x` by a relative `1e-16 / |q|`: harmless unless `q` is tiny,
    /// and `ln` is several times faster than `ln_1p` (this is the sampler's hot path).
    #[inline]
    fn big_h_inv(&self, y: f64) -> f64 {
        if self.q == 0.0 {
            y.exp()
        } else if self.q.abs() < 1e-6 {
            ((self.q * y).ln_1p() * self.inv_q).exp()
        } else {
            ((1.0 + self.q * y).ln() * self.inv_q).exp()
        }
    }

    /// A rank in `1..=n`.
    #[inline]
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        loop {
            let y = self.hi + rng.unit() * (self.lo - self.hi);
            let x = self.big_h_inv(y);
            // `x > 0`, so truncation is rounding here (and cheaper than `floor`, a libm call on x86-64).
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s || y >= self.big_h(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permutation_is_a_bijection_for_awkward_sizes() {
        let mut rng = SimRng::new(7, 0);
        for n in [1u64, 2, 3, 5, 8, 17, 100, 1000, 4097] {
            let p = Permutation::new(n, &mut rng);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i);
                assert!(j < n);
                assert!(!seen[j as usize], "n={n}: {j} twice");
                seen[j as usize] = true;
            }
        }
    }

    #[test]
    fn the_permutation_scatters_neighbours() {
        let p = Permutation::new(1_000_000, &mut SimRng::new(9, 0));
        let adjacent = (0..10_000).filter(|&i| p.apply(i).abs_diff(p.apply(i + 1)) <= 1).count();
        assert!(adjacent <= 2, "{adjacent} neighbours stayed neighbours");
        let low = (0..10_000).filter(|&i| p.apply(i) < 500_000).count();
        assert!((4_700..5_300).contains(&low), "{low} of 10,000 in the lower half");
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = SimRng::new(1, 2);
        let mut hits = [0u32; 7];
        for _ in 0..70_000 {
            hits[rng.below(7) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (9_000..11_000).contains(&h)), "{hits:?}");
    }

    #[test]
    fn exponential_poisson_and_geometric_have_their_means() {
        let mut rng = SimRng::new(3, 0);
        let n = 200_000;
        let e: f64 = (0..n).map(|_| rng.exp(2.0)).sum::<f64>() / f64::from(n);
        assert!((e - 2.0).abs() < 0.03, "exp mean {e}");
        let p: f64 = (0..n).map(|_| rng.poisson(10.0) as f64).sum::<f64>() / f64::from(n);
        assert!((p - 10.0).abs() < 0.05, "poisson mean {p}");
        let big: f64 = (0..20_000).map(|_| rng.poisson(1000.0) as f64).sum::<f64>() / 20_000.0;
        assert!((big - 1000.0).abs() < 1.0, "large poisson mean {big}");
        let g: f64 = (0..n).map(|_| rng.geometric(8.0) as f64).sum::<f64>() / f64::from(n);
        assert!((g - 8.0).abs() < 0.1, "geometric mean {g}");
    }

    #[test]
    fn zipf_frequencies_match_the_exact_probabilities() {
        for alpha in [0.0, 0.5, 0.999_999_999, 1.0, 1.3, 2.5] {
            let n = 10u64;
            let z = Zipf::new(n, alpha);
            let mut rng = SimRng::new(11, 0);
            let draws = 400_000;
            let mut hits = vec![0u64; n as usize + 1];
            for _ in 0..draws {
                hits[z.sample(&mut rng) as usize] += 1;
            }
            let norm: f64 = (1..=n).map(|k| (k as f64).powf(-alpha)).sum();
            for k in 1..=n {
                let want = (k as f64).powf(-alpha) / norm;
                let got = hits[k as usize] as f64 / f64::from(draws);
                assert!((got - want).abs() < 0.004, "alpha {alpha} rank {k}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn the_same_seed_and_lane_repeat_and_lanes_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::new(5, 1);
                move |_| r.u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::new(5, 1);
                move |_| r.u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::new(5, 2);
                move |_| r.u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
