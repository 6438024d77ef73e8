//! `multi-like`: a file-level workload shaped like the Purdue "Multi" trace of the PFC paper (Zhang et
//! al., ICDCS 2008, §4.2: cscope, gcc and viewperf run concurrently over 12,514 files with a combined
//! footprint of 792 MB; 25% of accesses random).
//!
//! The model: `files` files, laid out one after another, with geometric sizes of mean `mean_file_bytes`;
//! each of `apps` applications owns an equal slice of them. Each request comes from an application picked
//! uniformly. With probability `random` it is an isolated read at a uniform offset of one of the
//! application's files (an index lookup, a header probed); otherwise it is the next request of the
//! application's current file scan, which reads the whole file from its start in requests of
//! `min_blocks..=max_blocks` blocks. A new scan and a random read pick the file by Zipf(`alpha`) popularity
//! over the application's files (scattered over its slice), so a few hot files are read again and again.
//! `stream` is the file id and `client` the application. The paper replays this trace closed-loop; the
//! times here (exponential) are for open-loop runs and may be ignored.
//!
//! Random share as [`TraceStats`](crate::stats::TraceStats) counts it: `random` plus the first request
//! of every scan (a jump to a file's start); the default `random` is calibrated so that the measured share
//! is 25% (tests pin it within ±2 points).

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::{Permutation, SimRng, Zipf};
use super::{bad, check_interarrival, check_share, check_units};
use crate::error::TraceError;

/// Parameters of `multi-like`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MultiLikeParams {
    /// Requests in the trace. Default 1,000,000 \[ours\].
    pub requests: u64,
    /// Concurrent applications (the `client` field). Default 3 [paper: PFC §4.2, cscope + gcc + viewperf].
    pub apps: u32,
    /// Files (the `stream` field). Default 12,514 [paper: PFC §4.2].
    pub files: u32,
    /// Mean file size, bytes (geometric in blocks). Default 64 KiB [paper-derived: 792 MB / 12,514 files
    /// ≈ 63 KiB].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub mean_file_bytes: u64,
    /// Zipf skew of file popularity within an application. Default 0.8 \[ours\].
    pub alpha: f64,
    /// Probability that a request is an isolated random read. Calibrated \[ours\] so that the measured random
    /// share (window 32, gap 0) is 25% [paper: PFC §4.2].
    pub random: f64,
    /// Smallest request, blocks. Default 1 \[ours\].
    pub min_blocks: u32,
    /// Largest request, blocks. Default 4 \[ours\].
    pub max_blocks: u32,
    /// Share of reads; the rest are writes. Default 1.0 \[ours\] (the applications read their inputs).
    pub read_share: f64,
    /// Mean inter-arrival time, seconds (exponential); 0 = no time. Default 1 ms \[ours\].
    pub mean_interarrival_s: f64,
    /// Random seed. Default 1 \[ours\].
    pub seed: u64,
}

impl Default for MultiLikeParams {
    fn default() -> Self {
        Self {
            requests: 1_000_000,
            apps: 3,
            files: 12_514,
            mean_file_bytes: 64 << 10,
            alpha: 0.8,
            random: 0.124,
            min_blocks: 1,
            max_blocks: 4,
            read_share: 1.0,
            mean_interarrival_s: 0.001,
            seed: 1,
        }
    }
}

#[derive(Clone, Debug)]
struct App {
    /// First file id of the application's slice.
    base: u32,
    popularity: Zipf,
    scatter: Permutation,
    /// The current scan: file, next block, end (exclusive); `next == end` when idle.
    file: u32,
    next: u64,
    end: u64,
}

/// The `multi-like` generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct MultiLike {
    /// Start block of every file, and the end of the last one.
    starts: Vec<u64>,
    apps: Vec<App>,
    rng: SimRng,
    random: f64,
    min: u64,
    max: u64,
    read_share: f64,
    mean_ns: f64,
    time_ns: u64,
    left: u64,
}

impl MultiLike {
    /// A generator for `p` over blocks of `block_size` bytes.
    pub fn new(p: &MultiLikeParams, block_size: u64) -> Result<Self, TraceError> {
        check_share("random", p.random)?;
        check_share("read_share", p.read_share)?;
        check_interarrival("mean_interarrival_s", p.mean_interarrival_s)?;
        if p.apps == 0 {
            return Err(bad("apps", "must be at least 1"));
        }
        check_units("files", u64::from(p.files))?;
        if p.files < p.apps {
            return Err(bad("files", format!("must be at least apps ({}), got {}", p.apps, p.files)));
        }
        if p.mean_file_bytes == 0 {
            return Err(bad("mean_file_bytes", "must be at least 1 byte"));
        }
        if p.min_blocks == 0 {
            return Err(bad("min_blocks", "must be at least 1 block"));
        }
        if p.max_blocks < p.min_blocks {
            return Err(bad(
                "max_blocks",
                format!("must be at least min_blocks ({}), got {}", p.min_blocks, p.max_blocks),
            ));
        }
        super::check_request_blocks("max_blocks", p.max_blocks)?;
        if !(p.alpha.is_finite() && (0.0..=10.0).contains(&p.alpha)) {
            return Err(bad("alpha", format!("must be between 0 and 10, got {}", p.alpha)));
        }
        let mut layout = SimRng::new(p.seed, 0);
        let mean_blocks = (p.mean_file_bytes as f64 / block_size as f64).max(1.0);
        let mut starts = Vec::with_capacity(p.files as usize + 1);
        let mut at = 0u64;
        for _ in 0..p.files {
            starts.push(at);
            at += layout.geometric(mean_blocks);
        }
        starts.push(at);
        let apps = (0..p.apps)
            .map(|a| {
                let lo = (u64::from(a) * u64::from(p.files) / u64::from(p.apps)) as u32;
                let hi = (u64::from(a + 1) * u64::from(p.files) / u64::from(p.apps)) as u32;
                let mut r = SimRng::new(p.seed, 1 + u64::from(a));
                App {
                    base: lo,
                    popularity: Zipf::new(u64::from(hi - lo), p.alpha),
                    scatter: Permutation::new(u64::from(hi - lo), &mut r),
                    file: lo,
                    next: 0,
                    end: 0,
                }
            })
            .collect();
        Ok(Self {
            starts,
            apps,
            rng: SimRng::new(p.seed, u64::MAX),
            random: p.random,
            min: u64::from(p.min_blocks),
            max: u64::from(p.max_blocks),
            read_share: p.read_share,
            mean_ns: p.mean_interarrival_s * 1e9,
            time_ns: 0,
            left: p.requests,
        })
    }

    fn pick_file(&mut self, a: usize) -> u32 {
        let app = &self.apps[a];
        app.base + app.scatter.apply(app.popularity.sample(&mut self.rng) - 1) as u32
    }

    fn next_request(&mut self) -> Request {
        let a = self.rng.below(self.apps.len() as u64) as usize;
        let want = self.rng.between(self.min, self.max);
        let (file, first, len) = if self.rng.chance(self.random) {
            let f = self.pick_file(a);
            let (start, end) = (self.starts[f as usize], self.starts[f as usize + 1]);
            let first = start + self.rng.below(end - start);
            (f, first, want.min(end - first))
        } else {
            if self.apps[a].next >= self.apps[a].end {
                let f = self.pick_file(a);
                let app = &mut self.apps[a];
                app.file = f;
                app.next = self.starts[f as usize];
                app.end = self.starts[f as usize + 1];
            }
            let app = &mut self.apps[a];
            let len = want.min(app.end - app.next);
            app.next += len;
            (app.file, app.next - len, len)
        };
        let op = if self.read_share >= 1.0 || self.rng.chance(self.read_share) { Op::Read } else { Op::Write };
        self.time_ns = self.time_ns.saturating_add(self.rng.exp_ns(self.mean_ns));
        Request { time_ns: self.time_ns, first, len: len as u32, op, stream: file, client: a as u32 }
    }
}

impl Iterator for MultiLike {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(self.next_request())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_stays_inside_its_file_and_its_application_slice() {
        let p = MultiLikeParams { requests: 20_000, files: 300, ..MultiLikeParams::default() };
        let g = MultiLike::new(&p, 4096).unwrap();
        let starts = g.starts.clone();
        for r in g {
            let f = r.stream as usize;
            assert!(starts[f] <= r.first && r.last() < starts[f + 1], "{r:?}");
            assert_eq!(u64::from(r.stream) * 3 / 300, u64::from(r.client), "{r:?}");
        }
    }
}
