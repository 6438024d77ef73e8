//! The exact curve's counts by stack distance, kept as integers while the pass runs and turned into a
//! [`DistanceHistogram`] at its end (the same numbers: sums of ones are exact in `f64`).
//!
//! Why not the histogram's own `f64` vectors: a trace of one-block requests bumps two histograms
//! (blocks, requests) at the same random distance for every reference, each as large as the footprint
//! (2.2 MB for w106's 275 K blocks in `f64`), and the running `f64` totals chain an addition through
//! memory per reference. Here a one-block request bumps one `u32` count (its block's distance is the
//! request's), multi-block requests their own two, and totals are integers (docs/mrc.md, round 5).

use super::curve::DistanceHistogram;

/// Integer counts of the exact pass.
#[derive(Debug, Default)]
pub struct ExactCounts {
    /// One-block requests by distance (each is also a block reference at that distance).
    single: Vec<u32>,
    /// Block references of multi-block requests by distance.
    blocks: Vec<u32>,
    /// Multi-block requests by the largest distance of their blocks.
    requests: Vec<u32>,
    /// Counts that passed `u32::MAX`: 2^32 more at (vector, distance); 0 single, 1 blocks, 2 requests.
    carries: Vec<(u8, usize)>,
    /// Block references, first references, requests, requests with a first reference.
    pub total_blocks: u64,
    /// First references.
    pub cold_blocks: u64,
    /// Requests.
    pub total_requests: u64,
    /// Requests with a first reference.
    pub cold_requests: u64,
}

/// Add one at `d` of `v`; a wrap is noted in `carries` as `which`.
#[inline]
fn bump(v: &mut Vec<u32>, d: usize, carries: &mut Vec<(u8, usize)>, which: u8) {
    if d >= v.len() {
        v.resize((d + 1).max(v.len() * 2), 0);
    }
    let c = &mut v[d];
    *c = c.wrapping_add(1);
    if *c == 0 {
        carries.push((which, d));
    }
}

impl ExactCounts {
    /// A one-block request whose block is at distance `d`.
    #[inline]
    pub fn single(&mut self, d: usize) {
        bump(&mut self.single, d, &mut self.carries, 0);
    }

    /// A block of a multi-block request at distance `d`.
    #[inline]
    pub fn block(&mut self, d: usize) {
        bump(&mut self.blocks, d, &mut self.carries, 1);
    }

    /// A multi-block request whose largest distance is `d`.
    #[inline]
    pub fn request(&mut self, d: usize) {
        bump(&mut self.requests, d, &mut self.carries, 2);
    }

    /// The histogram these counts stand for.
    #[must_use]
    pub fn into_histogram(self) -> DistanceHistogram {
        let len = |a: &[u32], b: &[u32]| a.len().max(b.len());
        let merged = |a: &[u32], b: &[u32], wa: u8, wb: u8| -> Vec<f64> {
            let mut out: Vec<f64> = (0..len(a, b))
                .map(|d| f64::from(a.get(d).copied().unwrap_or(0)) + f64::from(b.get(d).copied().unwrap_or(0)))
                .collect();
            for &(which, d) in &self.carries {
                if which == wa || which == wb {
                    out[d] += 4_294_967_296.0;
                }
            }
            out
        };
        DistanceHistogram {
            blocks: merged(&self.single, &self.blocks, 0, 1),
            requests: merged(&self.single, &self.requests, 0, 2),
            cold_blocks: self.cold_blocks as f64,
            cold_requests: self.cold_requests as f64,
            total_blocks: self.total_blocks as f64,
            total_requests: self.total_requests as f64,
            ..DistanceHistogram::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExactCounts;
    use crate::mrc::curve::DistanceHistogram;

    /// The counts read as the histogram bumped directly, including a count past `u32::MAX`.
    #[test]
    fn reads_as_the_histogram_bumped_directly() {
        let mut c = ExactCounts::default();
        let mut h = DistanceHistogram::default();
        let mut x = 1u64;
        for _ in 0..5000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let d = (x >> 50) as usize % 300;
            match x % 3 {
                0 => {
                    c.single(d);
                    DistanceHistogram::bump(&mut h.blocks, d, 1.0);
                    DistanceHistogram::bump(&mut h.requests, d, 1.0);
                }
                1 => {
                    c.block(d);
                    DistanceHistogram::bump(&mut h.blocks, d, 1.0);
                }
                _ => {
                    c.request(d);
                    DistanceHistogram::bump(&mut h.requests, d, 1.0);
                }
            }
        }
        // A count that wraps: raised to u32::MAX, then one more.
        let more = f64::from(u32::MAX - c.single[7]) + 1.0;
        c.single[7] = u32::MAX;
        c.single(7);
        DistanceHistogram::bump(&mut h.blocks, 7, more);
        DistanceHistogram::bump(&mut h.requests, 7, more);
        let got = c.into_histogram();
        let pad = |mut v: Vec<f64>, n: usize| {
            v.resize(n, 0.0);
            v
        };
        let n = got.blocks.len().max(h.blocks.len()).max(got.requests.len()).max(h.requests.len());
        assert_eq!(pad(got.blocks, n), pad(h.blocks, n));
        assert_eq!(pad(got.requests, n), pad(h.requests, n));
    }
}
