//! A weighted stack-distance histogram and the miss-ratio curves it gives: for block references (the
//! engine's demand hit ratio, and the byte curve since every block has the same size) and for requests (a
//! request misses when any of its blocks does).

use serde::Serialize;

/// Weighted counts of stack distances. Index `d` holds the references whose (scaled) distance rounds to `d`,
/// or, with `scale`, whose distance among sampled blocks is `d` (standing for [`scaled_distance`]`(d)`);
/// first references are `cold`. With sampling each reference weighs `1 / rate`, so every count estimates
/// references of the whole trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DistanceHistogram {
    /// Block references by distance.
    pub blocks: Vec<f64>,
    /// Requests by the largest distance of their blocks.
    pub requests: Vec<f64>,
    /// First references to a block (misses at every size).
    pub cold_blocks: f64,
    /// Requests with a first reference.
    pub cold_requests: f64,
    /// All block references (weighted).
    pub total_blocks: f64,
    /// All requests (weighted).
    pub total_requests: f64,
    /// Requests read, sampled or not: counted, not weighted (a SHARDS pass reads every request, and the
    /// weighted `total_requests` was reported as the trace's: P6 at 1%, 1,628,100 for 519,711).
    pub read_requests: u64,
    /// Block references read, sampled or not (counted).
    pub read_blocks: u64,
    /// Block references in the sample (every one without sampling).
    pub sampled_blocks: u64,
    /// Fixed-rate sampling: the rate by which the indices (distances among sampled blocks) scale. Kept
    /// unscaled, the histogram spans the sample's distances (thousands) instead of the trace's (up to its
    /// footprint), which a curve would otherwise allocate and fill on every call.
    pub scale: Option<f64>,
}

/// The distance in the whole trace estimated from a distance `d` among blocks sampled at `rate` (both
/// count the block itself): each of the `D - 1` other blocks referenced since is sampled with probability
/// `rate`, so `d - 1` is Binomial(`D - 1`, `rate`) and `1 + (d - 1) / rate` is unbiased (docs/mrc.md,
/// method 8; `d / rate` would add `1 / rate - 1` to every distance).
#[inline]
#[must_use]
pub fn scaled_distance(d: u64, rate: f64) -> usize {
    (1.0 + d.saturating_sub(1) as f64 / rate).round() as usize
}

impl DistanceHistogram {
    /// Add weight `w` at distance `d` of `hist`, growing it as needed.
    pub(crate) fn bump(hist: &mut Vec<f64>, d: usize, w: f64) {
        if d >= hist.len() {
            hist.resize((d + 1).max(hist.len() * 2), 0.0);
        }
        hist[d] += w;
    }

    /// The estimated number of distinct blocks (the first references).
    #[must_use]
    pub fn footprint(&self) -> f64 {
        self.cold_blocks
    }

    /// The last index whose distance is at most `size` blocks (with `scale`, the largest sampled distance
    /// whose scaled distance is; 0 when none).
    fn last_index(&self, size: u64) -> u64 {
        let Some(rate) = self.scale else { return size };
        let fits = |d: u64| d >= 1 && scaled_distance(d, rate) as u64 <= size;
        // Scaled distances grow with d: start near the inverse and step to the exact boundary.
        let mut d = ((size as f64 - 0.5) * rate).max(0.0) as u64 + 1;
        while fits(d + 1) {
            d += 1;
        }
        while d > 0 && !fits(d) {
            d -= 1;
        }
        d
    }

    /// Block references that hit an LRU cache of `size` blocks (weighted; exact counts without sampling).
    #[must_use]
    pub fn block_hits(&self, size: u64) -> f64 {
        prefix(&self.blocks, self.last_index(size))
    }

    /// Requests all of whose blocks hit an LRU cache of `size` blocks.
    #[must_use]
    pub fn request_hits(&self, size: u64) -> f64 {
        prefix(&self.requests, self.last_index(size))
    }

    /// The curve at `sizes` (blocks, any order; kept in the given order).
    #[must_use]
    pub fn curve(&self, sizes: &[u64]) -> MissRatioCurve {
        let miss = |hits: f64, total: f64| if total > 0.0 { (1.0 - hits / total).clamp(0.0, 1.0) } else { 0.0 };
        let (blocks, requests) = (cumulative(&self.blocks), cumulative(&self.requests));
        let points = sizes
            .iter()
            .map(|&s| CurvePoint {
                size: s,
                miss_ratio: miss(at(&blocks, self.last_index(s)), self.total_blocks),
                request_miss_ratio: miss(at(&requests, self.last_index(s)), self.total_requests),
            })
            .collect();
        MissRatioCurve {
            points,
            footprint: self.footprint(),
            references: self.total_blocks,
            requests: self.total_requests,
        }
    }

    /// `points` sizes evenly spaced up to the footprint (at least 1 block each, distinct, ascending).
    #[must_use]
    pub fn default_sizes(&self, points: usize) -> Vec<u64> {
        let fp = self.footprint().ceil().max(1.0);
        // More points than blocks of footprint only repeat sizes (and 2^63 of them overflowed the vector).
        let n = points.clamp(1, fp.min(usize::MAX as f64) as usize);
        let mut out: Vec<u64> = (1..=n).map(|i| ((fp * i as f64 / n as f64).round() as u64).max(1)).collect();
        out.dedup();
        out
    }
}

fn cumulative(hist: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    hist.iter()
        .map(|w| {
            acc += w;
            acc
        })
        .collect()
}

/// The cumulative count at `size` (the last one beyond the histogram's end).
fn at(cum: &[f64], size: u64) -> f64 {
    let i = usize::try_from(size).unwrap_or(usize::MAX).min(cum.len().saturating_sub(1));
    cum.get(i).copied().unwrap_or(0.0)
}

fn prefix(hist: &[f64], size: u64) -> f64 {
    let end = usize::try_from(size).unwrap_or(usize::MAX).saturating_add(1).min(hist.len());
    hist[..end].iter().sum()
}

/// One point of a miss-ratio curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// LRU cache size in blocks.
    pub size: u64,
    /// Missed block references / block references (= missed bytes / bytes read: blocks are of one size).
    pub miss_ratio: f64,
    /// Requests with at least one missed block / requests.
    pub request_miss_ratio: f64,
}

/// A miss-ratio curve with what it was estimated from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MissRatioCurve {
    /// Points in the order of the sizes asked for.
    pub points: Vec<CurvePoint>,
    /// Estimated distinct blocks.
    pub footprint: f64,
    /// Estimated block references.
    pub references: f64,
    /// Estimated requests.
    pub requests: f64,
}

#[cfg(test)]
mod tests {
    use super::{scaled_distance, DistanceHistogram};

    #[test]
    fn a_scaled_histogram_reads_as_its_dense_expansion() {
        for rate in [0.01, 0.037, 0.5] {
            let mut x = 99u64;
            let mut compact =
                DistanceHistogram { scale: Some(rate), total_blocks: 1e6, total_requests: 1e6, ..Default::default() };
            let mut dense = DistanceHistogram { total_blocks: 1e6, total_requests: 1e6, ..Default::default() };
            for d in 1..400u64 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let w = (x >> 54) as f64;
                DistanceHistogram::bump(&mut compact.blocks, d as usize, w);
                DistanceHistogram::bump(&mut dense.blocks, scaled_distance(d, rate), w);
                DistanceHistogram::bump(&mut compact.requests, d as usize, w / 2.0);
                DistanceHistogram::bump(&mut dense.requests, scaled_distance(d, rate), w / 2.0);
            }
            let sizes: Vec<u64> = (0..(400.0 / rate) as u64 + 300).step_by(7).collect();
            for &s in &sizes {
                assert_eq!(compact.block_hits(s), dense.block_hits(s), "rate {rate} size {s}");
                assert_eq!(compact.request_hits(s), dense.request_hits(s), "rate {rate} size {s}");
            }
            assert_eq!(compact.curve(&sizes), dense.curve(&sizes), "rate {rate}");
        }
    }

    #[test]
    fn more_points_than_blocks_give_every_size_once() {
        let hist =
            DistanceHistogram { cold_blocks: 10.0, total_blocks: 40.0, total_requests: 40.0, ..Default::default() };
        let fp = hist.footprint().ceil() as u64;
        let every: Vec<u64> = (1..=fp).collect();
        assert_eq!(every.len(), 10);
        // 2^63 points overflowed the vector of sizes (a panic through `ps.mrc(points=2**63)`).
        assert_eq!(hist.default_sizes(usize::MAX), every);
        assert_eq!(hist.default_sizes(1000), every);
        assert_eq!(hist.default_sizes(0), vec![fp]);
    }
}
