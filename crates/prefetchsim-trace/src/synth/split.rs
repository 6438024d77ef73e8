//! The Split paper's workload generator (Varki, Hubbe, Merchant, "Improve Prefetch Performance by
//! Splitting the Cache Replacement Queue", §4), with the gaps filled as docs/algorithms/sequential.md says.
//!
//! `single + multi + random` independent generators start at time 0; each issues one-block reads with
//! exponential inter-arrival times, and the trace is their time-ordered interleaving (a heap of each
//! generator's next arrival). The disk is cut into one equal region per generator and no block is ever
//! requested twice, so every cache hit is a prefetch hit:
//!
//! - *single sequential*: one run of contiguous blocks from the start of its region;
//! - *multiple sequential*: runs of Poisson length (a draw of 0 becomes 1), each in a fresh slot of its
//!   region picked in a pseudo-random order (a region is cut into slots of `mean_run + 10·√mean_run + 8`
//!   blocks and a run starts at a uniform offset of its slot; a longer run would be cut to the slot, which
//!   happens with probability below 1e-15);
//! - *random*: the blocks of its region in a pseudo-random order (a keyed permutation).
//!
//! `stream` is the generator's index (singles first, then multiples, then randoms), `client` is 0. A
//! generator that has used up its region stops (it never repeats a block); parameters for which that is
//! expected are rejected.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::{Permutation, SimRng};
use super::{bad, blocks_in, check_interarrival, check_units};
use crate::error::TraceError;

/// Cheetah 9LP capacity in 512-byte blocks [paper: Split Table 5].
pub const CHEETAH_9LP_BLOCKS: u64 = 17_783_240;

/// Parameters of the Split generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitParams {
    /// Single-sequential generators. Default 0 (mix 1) [paper: Split Fig. 1].
    pub single: u32,
    /// Multiple-sequential generators. Default 90 (mix 1) [paper: Split Fig. 1].
    pub multi: u32,
    /// Random generators. Default 10 (mix 1) [paper: Split Fig. 1].
    pub random: u32,
    /// Requests in the trace. Default 100,000 [paper: Split §4].
    pub requests: u64,
    /// Mean inter-arrival time of each generator, seconds (exponential). Default 2 s [ours, sequential.md];
    /// 0 gives a trace without time (every request at time 0, in a uniformly random interleaving).
    pub mean_interarrival_s: f64,
    /// Mean run length of multiple-sequential generators, requests (Poisson; 0 becomes 1). Default 10
    /// [ours, sequential.md].
    pub mean_run: f64,
    /// Disk size in bytes, cut into one region per generator. Default 17,783,240 × 512 B, the Cheetah 9LP
    /// [paper: Split Table 5].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub disk_bytes: u64,
    /// Random seed. Default 1 \[ours\].
    pub seed: u64,
}

impl Default for SplitParams {
    fn default() -> Self {
        Self {
            single: 0,
            multi: 90,
            random: 10,
            requests: 100_000,
            mean_interarrival_s: 2.0,
            mean_run: 10.0,
            disk_bytes: CHEETAH_9LP_BLOCKS * 512,
            seed: 1,
        }
    }
}

impl SplitParams {
    /// The paper's mixes: 1 = 90 multi + 10 random (Fig. 1), 2 = 50 single + 50 random (Fig. 2),
    /// 3 = 10 single + 40 multi + 50 random (Fig. 3).
    ///
    /// # Panics
    /// For a mix other than 1, 2 or 3.
    #[must_use]
    pub fn mix(n: u32) -> Self {
        let (single, multi, random) = match n {
            1 => (0, 90, 10),
            2 => (50, 0, 50),
            3 => (10, 40, 50),
            _ => panic!("the Split paper has mixes 1, 2 and 3"),
        };
        Self { single, multi, random, ..Self::default() }
    }

    /// Number of generators.
    #[must_use]
    pub fn generators(&self) -> u64 {
        u64::from(self.single) + u64::from(self.multi) + u64::from(self.random)
    }
}

/// Blocks of a multiple-sequential slot: a run of Poisson(`mean_run`) requests exceeds it with a
/// probability below 1e-15 for any mean (ten standard deviations, plus 8).
fn slot_len(mean_run: f64) -> u64 {
    (mean_run + 10.0 * mean_run.sqrt()).ceil() as u64 + 8
}

/// The kind of one generator and its position.
#[derive(Clone, Debug)]
enum Kind {
    /// Next offset in the region.
    Single { next: u64 },
    /// Runs in slots: `slots` visits the slots in a pseudo-random order.
    Multi { slots: Permutation, slot_len: u64, used: u64, next: u64, left: u64 },
    /// The region's blocks in the order of `perm`.
    Random { perm: Permutation, used: u64 },
}

#[derive(Clone, Debug)]
struct Generator {
    base: u64,
    region: u64,
    kind: Kind,
    rng: SimRng,
    time_ns: u64,
}

impl Generator {
    /// The next block (offset from `base`), or `None` when the region is used up.
    fn next_block(&mut self, mean_run: f64) -> Option<u64> {
        match &mut self.kind {
            Kind::Single { next } => {
                if *next >= self.region {
                    return None;
                }
                *next += 1;
                Some(*next - 1)
            }
            Kind::Multi { slots, slot_len, used, next, left } => {
                if *left == 0 {
                    if *used >= slots.len() {
                        return None;
                    }
                    let slot = slots.apply(*used);
                    *used += 1;
                    let len = self.rng.poisson(mean_run).clamp(1, *slot_len);
                    *next = slot * *slot_len + self.rng.below(*slot_len - len + 1);
                    *left = len;
                }
                *left -= 1;
                *next += 1;
                Some(*next - 1)
            }
            Kind::Random { perm, used } => {
                if *used >= perm.len() {
                    return None;
                }
                *used += 1;
                Some(perm.apply(*used - 1))
            }
        }
    }
}

/// The Split paper's generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct SplitGen {
    gens: Vec<Generator>,
    /// Next arrival of each live generator: (time, generator index); ties go to the lower index.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    mean_ns: f64,
    mean_run: f64,
    left: u64,
    /// Without time: the live generators, one picked uniformly per request.
    live: Vec<u32>,
    /// Picks the generator when there is no time.
    order: SimRng,
}

impl SplitGen {
    /// A generator for `p`, addressing blocks of `block_size` bytes.
    pub fn new(p: &SplitParams, block_size: u64) -> Result<Self, TraceError> {
        let n = p.generators();
        if n == 0 {
            return Err(bad("single", "single + multi + random must be at least 1"));
        }
        check_units("single", n)?;
        check_interarrival("mean_interarrival_s", p.mean_interarrival_s)?;
        if !(p.mean_run.is_finite() && p.mean_run > 0.0 && p.mean_run <= 1e6) {
            return Err(bad("mean_run", format!("must be in (0, 1e6] requests, got {}", p.mean_run)));
        }
        let disk = blocks_in(p.disk_bytes, block_size);
        let region = disk / n;
        // Each generator issues about requests / n (binomial); leave room for six standard deviations more,
        // so that running out of fresh blocks or slots is practically impossible.
        let with_margin = |mean: f64| mean + 6.0 * mean.sqrt() + 8.0;
        let most = with_margin(p.requests as f64 / n as f64);
        let slot_len = slot_len(p.mean_run);
        let short =
            (region as f64) < most || (p.multi > 0 && ((region / slot_len) as f64) < with_margin(most / p.mean_run));
        if short {
            return Err(bad(
                "disk_bytes",
                format!(
                    "{region} blocks per generator region are too few for {} requests from {n} generators without \
                     repeating a block; raise disk_bytes or lower requests",
                    p.requests
                ),
            ));
        }
        let mut gens = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut rng = SimRng::new(p.seed, i);
            let kind = if i < u64::from(p.single) {
                Kind::Single { next: 0 }
            } else if i < u64::from(p.single) + u64::from(p.multi) {
                Kind::Multi {
                    slots: Permutation::new(region / slot_len, &mut rng),
                    slot_len,
                    used: 0,
                    next: 0,
                    left: 0,
                }
            } else {
                Kind::Random { perm: Permutation::new(region, &mut rng), used: 0 }
            };
            gens.push(Generator { base: i * region, region, kind, rng, time_ns: 0 });
        }
        let mean_ns = p.mean_interarrival_s * 1e9;
        let mut heap = BinaryHeap::with_capacity(n as usize);
        let mut live = Vec::new();
        for (i, g) in gens.iter_mut().enumerate() {
            if mean_ns > 0.0 {
                g.time_ns = g.rng.exp_ns(mean_ns);
                heap.push(Reverse((g.time_ns, i as u32)));
            } else {
                live.push(i as u32);
            }
        }
        Ok(Self {
            gens,
            heap,
            mean_ns,
            mean_run: p.mean_run,
            left: p.requests,
            live,
            order: SimRng::new(p.seed, u64::MAX),
        })
    }
}

impl Iterator for SplitGen {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        while self.left > 0 {
            let timed = self.mean_ns > 0.0;
            let (i, k) = if timed {
                (self.heap.pop()?.0 .1 as usize, 0)
            } else {
                // No time: every live generator is equally likely to go next (the limit of equal rates).
                if self.live.is_empty() {
                    return None;
                }
                let k = self.order.below(self.live.len() as u64) as usize;
                (self.live[k] as usize, k)
            };
            let g = &mut self.gens[i];
            let Some(off) = g.next_block(self.mean_run) else {
                if !timed {
                    self.live.swap_remove(k);
                }
                continue;
            };
            let req =
                Request { time_ns: g.time_ns, first: g.base + off, len: 1, op: Op::Read, stream: i as u32, client: 0 };
            if timed {
                g.time_ns = g.time_ns.saturating_add(g.rng.exp_ns(self.mean_ns));
                self.heap.push(Reverse((g.time_ns, i as u32)));
            }
            self.left -= 1;
            return Some(req);
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.left).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiple_sequential_runs_fit_their_slots_and_never_overlap() {
        let p = SplitParams { single: 0, multi: 3, random: 0, requests: 3000, ..SplitParams::default() };
        let reqs: Vec<_> = SplitGen::new(&p, 512).unwrap().collect();
        assert_eq!(reqs.len(), 3000);
        let mut seen = std::collections::HashSet::new();
        assert!(reqs.iter().all(|r| seen.insert(r.first)));
    }

    #[test]
    fn a_tiny_disk_is_rejected_naming_disk_bytes() {
        let p = SplitParams { disk_bytes: 512 * 1000, ..SplitParams::default() };
        let e = SplitGen::new(&p, 512).unwrap_err().to_string();
        assert!(e.starts_with("trace.params.disk_bytes:"), "{e}");
    }

    #[test]
    fn without_time_the_interleaving_is_still_seeded() {
        let p = SplitParams { mean_interarrival_s: 0.0, requests: 2000, ..SplitParams::mix(3) };
        let a: Vec<_> = SplitGen::new(&p, 512).unwrap().collect();
        let b: Vec<_> = SplitGen::new(&p, 512).unwrap().collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|r| r.time_ns == 0));
        assert_eq!(a.len(), 2000);
    }
}
