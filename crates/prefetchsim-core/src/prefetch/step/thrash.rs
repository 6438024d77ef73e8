//! STEP's thrashing detection: seeks in and out of each neighborhood and the thrashing intensity.
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.1.2. A neighborhood is a run of
//! spatially close accesses, found with the sequential-stream detector, so each PC is also a
//! neighborhood. For each one STEP counts the seeks made to serve its accesses and the distance they
//! travel: in the paper's example 20046, 46, 234546, 47, 48, 9848, the neighborhood 46-48 is reached
//! from 20046, left for 234546, reached again from there and left for 9848: four seeks over
//! |46 - 20046| + |234546 - 46| + |47 - 234546| + |9848 - 48| blocks. Its intensity is a recency-biased
//! mean seek cost, with `i` the event count and `Sc(i)` the cost of event `i`:
//!
//! `In(i) = In(i-1) (1 - α)(i - 1)/i + Sc(i) (α (i - 1) + 1)/i`
//!
//! so `In(1) = Sc(1)`, and for large `i` it is an exponential average with weight `α`. A neighborhood
//! whose intensity exceeds a threshold is thrashing.
//!
//! Resolutions (`shared/docs/algorithms/step.md`, ambiguity 2) \[ours\]: seeks follow the arrival order of
//! requests at the server, not the disk's service order (as in the paper's example); moving from one PC
//! to another is one seek for each of the two, of the seek time for the distance from the end of the
//! previous request to the start of this one; a request that continues the PC of the previous request
//! is a zero-cost event (no head movement), which is what lets the intensity fall to zero when a
//! neighborhood is read without interleaving. `seeks` and `distance` count the PC changes only, `events`
//! (the paper's `i`) counts both.

use super::context::{Contexts, PcRef};
use super::disk::DiskView;

/// Thrashing statistics of one neighborhood (PC).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Thrash {
    /// Events counted in the intensity (`i`): seeks and zero-cost continuations.
    pub events: u32,
    /// Seeks into or out of the neighborhood.
    pub seeks: u32,
    /// Their total distance in blocks.
    pub distance: u64,
    /// Thrashing intensity `In(i)`, ms.
    pub intensity: f64,
    /// Cost of the latest seek, ms.
    pub last_cost: f64,
}

impl Thrash {
    /// Add event `i` of cost `cost` ms to the intensity with weight `alpha`.
    #[inline]
    pub fn event(&mut self, cost: f64, alpha: f64) {
        self.events = self.events.saturating_add(1);
        let i = f64::from(self.events);
        self.intensity = self.intensity * (1.0 - alpha) * (i - 1.0) / i + cost * (alpha * (i - 1.0) + 1.0) / i;
    }

    /// A seek into or out of the neighborhood over `distance` blocks costing `cost` ms.
    #[inline]
    pub fn seek(&mut self, distance: u64, cost: f64, alpha: f64) {
        self.seeks = self.seeks.saturating_add(1);
        self.distance = self.distance.saturating_add(distance);
        self.last_cost = cost;
        self.event(cost, alpha);
    }
}

/// Where the previous request went: its PC and its last block.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeekTracker {
    prev: Option<(PcRef, u64)>,
}

impl SeekTracker {
    /// Account request `[s, e]` served by PC `pc`: a zero-cost event when the previous request was the
    /// same PC's, otherwise a seek for both PCs (the previous one only if it still exists).
    pub fn account(&mut self, pcs: &mut Contexts, disk: &DiskView, pc: u32, s: u64, e: u64, alpha: f64) {
        match self.prev {
            None => {}
            Some((r, _)) if pcs.resolve(r) == Some(pc) => pcs.get_mut(pc).thrash.event(0.0, alpha),
            Some((r, end)) => {
                let distance = s.abs_diff(end);
                let cost = disk.seek_ms(end, s);
                if let Some(p) = pcs.resolve(r) {
                    pcs.get_mut(p).thrash.seek(distance, cost, alpha);
                }
                pcs.get_mut(pc).thrash.seek(distance, cost, alpha);
            }
        }
        self.prev = Some((pcs.pc_ref(pc), e));
    }

    /// The PC and last block of the previous request.
    #[must_use]
    pub fn previous(&self) -> Option<(PcRef, u64)> {
        self.prev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intensity_is_a_recency_biased_mean() {
        let mut t = Thrash::default();
        t.event(4.0, 0.2);
        assert_eq!(t.intensity, 4.0);
        t.event(2.0, 0.2); // 4 x 0.8 x 1/2 + 2 x 1.2/2 = 1.6 + 1.2
        assert!((t.intensity - 2.8).abs() < 1e-12);
        for _ in 0..200 {
            t.event(0.0, 0.2);
        }
        assert!(t.intensity < 1e-12, "continuous access without seeks converges to zero");
    }
}
