//! Sporadic block associations: the workload Mithril is built for (Yang et al., "Mithril: Mining
//! Sporadic Associations for Cache Prefetching", SoCC 2017, §2-3): groups of blocks scattered over the
//! address space that are always requested together, each group only now and then (mid-frequency), mixed
//! with hot blocks that any cache keeps and one-off blocks that no cache can help.
//!
//! Several "applications" run at once: each walks through one group occurrence at a time, and their
//! requests interleave, so the blocks of a group arrive close together but not back to back (what
//! Mithril's lookahead range is for). Group block ids are a keyed hash of (group, position), so the
//! generator stores nothing per group. No two blocks of a group are adjacent, so sequential prefetchers
//! find nothing to do in them.
//!
//! Two options (off by default) make it the workload of `reproduce mithril`: `seq_share` of the requests
//! continue `seq_streams` sequential runs of `seq_run` blocks in a region of their own (AMP's case, so
//! AMP and LRU differ), and `epoch_requests` redraws every group's blocks but its first after that many
//! requests (a group's first block keeps recurring with new partners: its old associations go stale, so
//! long prefetch lists cost precision, as in the paper's §5.4).

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::{mix64, SimRng, Zipf};
use super::{bad, check_share, check_units};
use crate::error::TraceError;

/// Parameters of the associations generator. Defaults are \[ours\].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AssociationsParams {
    /// Association groups. Default 20,000.
    pub groups: u64,
    /// Blocks per group. Default 4.
    pub group_len: u32,
    /// Zipf skew of group popularity. Default 0.6: most groups recur sporadically.
    pub group_alpha: f64,
    /// Concurrent applications whose group occurrences interleave. Default 4.
    pub concurrency: u32,
    /// Share of requests to hot blocks. Default 0.2.
    pub hot_share: f64,
    /// Hot blocks (Zipf 1.0 over them). Default 5,000.
    pub hot_blocks: u64,
    /// Share of requests to one-off random blocks. Default 0.2.
    pub oneoff_share: f64,
    /// Size of the block address space the ids are drawn from. Default 2^30 blocks.
    pub space_blocks: u64,
    /// Requests in the trace. Default 1,000,000.
    pub requests: u64,
    /// Random seed. Default 1.
    pub seed: u64,
    /// Share of requests that continue a sequential run. Default 0.
    pub seq_share: f64,
    /// Concurrent sequential runs. Default 4.
    pub seq_streams: u32,
    /// Blocks per sequential run. Default 64.
    pub seq_run: u32,
    /// Requests after which every group's blocks but its first are redrawn (0: never, the default).
    pub epoch_requests: u64,
}

impl Default for AssociationsParams {
    fn default() -> Self {
        Self {
            groups: 20_000,
            group_len: 4,
            group_alpha: 0.6,
            concurrency: 4,
            hot_share: 0.2,
            hot_blocks: 5_000,
            oneoff_share: 0.2,
            space_blocks: 1 << 30,
            requests: 1_000_000,
            seed: 1,
            seq_share: 0.0,
            seq_streams: 4,
            seq_run: 64,
            epoch_requests: 0,
        }
    }
}

/// The associations generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct Associations {
    p: AssociationsParams,
    groups: Zipf,
    hot: Zipf,
    rng: SimRng,
    /// Per application: (group, next position in it).
    active: Vec<(u64, u32)>,
    /// Per sequential stream: (next block, blocks left in its run).
    seq: Vec<(u64, u32)>,
    left: u64,
}

impl Associations {
    /// A generator for `p`.
    pub fn new(p: &AssociationsParams) -> Result<Self, TraceError> {
        if p.groups == 0 {
            return Err(bad("groups", "must be at least 1"));
        }
        if p.group_len < 2 {
            return Err(bad("group_len", "an association needs at least 2 blocks"));
        }
        check_units("concurrency", u64::from(p.concurrency))?;
        if p.hot_blocks == 0 {
            return Err(bad("hot_blocks", "must be at least 1"));
        }
        if !(p.group_alpha.is_finite() && (0.0..=10.0).contains(&p.group_alpha)) {
            return Err(bad("group_alpha", format!("must be between 0 and 10, got {}", p.group_alpha)));
        }
        check_share("hot_share", p.hot_share)?;
        check_share("oneoff_share", p.oneoff_share)?;
        if p.hot_share + p.oneoff_share > 1.0 {
            return Err(bad("oneoff_share", "hot_share + oneoff_share must not exceed 1"));
        }
        if p.space_blocks < 1 << 16 {
            return Err(bad("space_blocks", "must be at least 65536 blocks"));
        }
        if p.space_blocks > 1 << 60 {
            return Err(bad("space_blocks", "must be at most 2^60 blocks"));
        }
        check_share("seq_share", p.seq_share)?;
        if p.hot_share + p.oneoff_share + p.seq_share > 1.0 {
            return Err(bad("seq_share", "hot_share + oneoff_share + seq_share must not exceed 1"));
        }
        check_units("seq_streams", u64::from(p.seq_streams))?;
        if p.seq_run == 0 || u64::from(p.seq_run) > p.space_blocks / 2 {
            return Err(bad("seq_run", "must be between 1 and half of space_blocks"));
        }
        let mut rng = SimRng::new(p.seed, 7);
        let groups = Zipf::new(p.groups, p.group_alpha);
        let active = (0..p.concurrency).map(|_| (groups.sample(&mut rng) - 1, 0)).collect();
        let seq = vec![(0, 0); p.seq_streams as usize];
        Ok(Self { groups, hot: Zipf::new(p.hot_blocks, 1.0), rng, active, seq, left: p.requests, p: p.clone() })
    }

    /// The current epoch (0 when groups never change).
    fn epoch(&self) -> u64 {
        let done = self.p.requests - self.left;
        done.checked_div(self.p.epoch_requests).unwrap_or(0)
    }

    /// Block `j` of group `g` in `epoch`: a keyed hash into the address space, spaced so no two are
    /// adjacent.
    fn group_block_in(&self, g: u64, j: u32, epoch: u64) -> u64 {
        let h = mix64(self.p.seed ^ mix64(g.wrapping_mul(64) + u64::from(j)) ^ mix64(epoch.wrapping_add(0xe90c)));
        (h % (self.p.space_blocks / 4)) * 4 + 1
    }

    /// Block `j` of group `g` now (the first block never changes).
    fn group_block(&self, g: u64, j: u32) -> u64 {
        if self.p.epoch_requests == 0 || j == 0 {
            let h = mix64(self.p.seed ^ mix64(g.wrapping_mul(64) + u64::from(j)));
            return (h % (self.p.space_blocks / 4)) * 4 + 1;
        }
        self.group_block_in(g, j, self.epoch())
    }

    /// The next block of a random sequential stream; a finished run restarts at a random place in the
    /// sequential region (blocks `space_blocks .. 2 · space_blocks`).
    fn seq_block(&mut self) -> u64 {
        let i = self.rng.below(self.seq.len() as u64) as usize;
        if self.seq[i].1 == 0 {
            let run = u64::from(self.p.seq_run);
            self.seq[i] = (self.p.space_blocks + self.rng.below(self.p.space_blocks - run), self.p.seq_run);
        }
        let (b, left) = self.seq[i];
        self.seq[i] = (b + 1, left - 1);
        b
    }
}

impl Iterator for Associations {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let u = self.rng.unit();
        let seq_from = 1.0 - self.p.seq_share;
        let first = if self.p.seq_share > 0.0 && u >= seq_from {
            self.seq_block()
        } else if u < self.p.hot_share {
            let rank = self.hot.sample(&mut self.rng);
            (mix64(self.p.seed.wrapping_add(0x407) ^ rank) % (self.p.space_blocks / 4)) * 4 + 2
        } else if u < self.p.hot_share + self.p.oneoff_share {
            self.rng.below(self.p.space_blocks / 4) * 4 + 3
        } else {
            let i = self.rng.below(self.active.len() as u64) as usize;
            let (g, j) = self.active[i];
            let b = self.group_block(g, j);
            self.active[i] =
                if j + 1 == self.p.group_len { (self.groups.sample(&mut self.rng) - 1, 0) } else { (g, j + 1) };
            b
        };
        Some(Request { time_ns: 0, first, len: 1, op: Op::Read, stream: 0, client: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_blocks_recur_together_and_are_never_adjacent() {
        let p = AssociationsParams {
            requests: 50_000,
            hot_share: 0.0,
            oneoff_share: 0.0,
            concurrency: 1,
            ..Default::default()
        };
        let reqs: Vec<u64> = Associations::new(&p).unwrap().map(|r| r.first).collect();
        // With one application and no noise, the trace is whole groups back to back.
        let g = Associations::new(&p).unwrap();
        for w in reqs.chunks(4).take(20) {
            let found = (0..p.groups).find(|&k| g.group_block(k, 0) == w[0]).expect("a group start");
            assert_eq!(w, &(0..4).map(|j| g.group_block(found, j)).collect::<Vec<_>>()[..]);
        }
        assert!(reqs.windows(2).all(|w| w[1] != w[0] + 1), "no sequential pairs");
    }

    #[test]
    fn shares_of_hot_and_oneoff_requests_follow_the_parameters() {
        let p = AssociationsParams { requests: 100_000, ..Default::default() };
        let reqs: Vec<u64> = Associations::new(&p).unwrap().map(|r| r.first).collect();
        let hot = reqs.iter().filter(|&&b| b % 4 == 2).count() as f64 / 1e5;
        let oneoff = reqs.iter().filter(|&&b| b % 4 == 3).count() as f64 / 1e5;
        assert!((hot - 0.2).abs() < 0.01 && (oneoff - 0.2).abs() < 0.01, "{hot} {oneoff}");
    }

    #[test]
    fn sequential_runs_and_epochs_when_asked() {
        let p = AssociationsParams {
            requests: 40_000,
            seq_share: 0.3,
            seq_streams: 1,
            epoch_requests: 20_000,
            ..Default::default()
        };
        let reqs: Vec<u64> = Associations::new(&p).unwrap().map(|r| r.first).collect();
        let seq: Vec<u64> = reqs.iter().copied().filter(|&b| b >= p.space_blocks).collect();
        let share = seq.len() as f64 / reqs.len() as f64;
        assert!((share - 0.3).abs() < 0.01, "{share}");
        let continued = seq.windows(2).filter(|w| w[1] == w[0] + 1).count() as f64 / seq.len() as f64;
        assert!(continued > 0.95, "one stream of 64-block runs: {continued}");
        // In the second epoch only the groups' first blocks (a quarter of group requests) recur.
        let group = |r: &[u64]| r.iter().copied().filter(|&b| b < p.space_blocks && b % 4 == 1).collect::<Vec<_>>();
        let (a, b) = (group(&reqs[..20_000]), group(&reqs[20_000..]));
        let first: std::collections::HashSet<u64> = a.iter().copied().collect();
        let g = Associations::new(&p).unwrap();
        let starts: std::collections::HashSet<u64> = (0..p.groups).map(|k| g.group_block(k, 0)).collect();
        let again: Vec<u64> = b.iter().copied().filter(|x| first.contains(x)).collect();
        assert!(!again.is_empty() && again.iter().all(|x| starts.contains(x)));
    }

    #[test]
    fn bad_parameters_name_the_key() {
        let e = Associations::new(&AssociationsParams { group_len: 1, ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("trace.params.group_len"), "{e}");
    }
}
