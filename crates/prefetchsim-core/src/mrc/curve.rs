//! A weighted stack-distance histogram and the miss-ratio curves it gives: for block references (the
//! engine's demand hit ratio, and the byte curve since every block has the same size) and for requests (a
//! request misses when any of its blocks does).

use serde::Serialize;

/// Weighted counts of stack distances. Index `d` holds the references whose (scaled) distance rounds to `d`;
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

    /// Block references that hit an LRU cache of `size` blocks (weighted; exact counts without sampling).
    #[must_use]
    pub fn block_hits(&self, size: u64) -> f64 {
        prefix(&self.blocks, size)
    }

    /// Requests all of whose blocks hit an LRU cache of `size` blocks.
    #[must_use]
    pub fn request_hits(&self, size: u64) -> f64 {
        prefix(&self.requests, size)
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
                miss_ratio: miss(at(&blocks, s), self.total_blocks),
                request_miss_ratio: miss(at(&requests, s), self.total_requests),
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
        let n = points.max(1);
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
