//! Purely sequential streams: the workload every sequential prefetcher must win on (a test fixture in the
//! spirit of the Split paper's single-sequential generator, §4, without the random part).
//!
//! Stream `i` reads `len`-block requests from block `start + i × spacing` upwards, never looking back; the
//! streams are interleaved round-robin (default) or by a seeded uniform pick. `stream` is the stream index.

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::SimRng;
use super::{bad, check_interarrival, check_request_blocks, check_units};
use crate::error::TraceError;

/// How several streams share the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interleave {
    /// 0, 1, 2, …, 0, 1, 2, …
    #[default]
    RoundRobin,
    /// Each request from a stream picked uniformly (seeded).
    Random,
}

/// Parameters of the sequential generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SequentialParams {
    /// Concurrent streams. Default 1 \[ours\].
    pub streams: u32,
    /// Requests in the trace (all streams). Default 100,000 \[ours\].
    pub requests: u64,
    /// Blocks per request. Default 1 \[ours\].
    pub len: u32,
    /// First block of stream 0. Default 0 \[ours\].
    pub start: u64,
    /// Blocks between the starts of consecutive streams; must exceed what one stream reads. Default 2^30
    /// \[ours\] (4 TiB of 4 KiB blocks: streams never meet).
    pub spacing: u64,
    /// `round-robin` (default) or `random` \[ours\].
    pub interleave: Interleave,
    /// Mean inter-arrival time, seconds (exponential); 0 = no time. Default 0 \[ours\].
    pub mean_interarrival_s: f64,
    /// Random seed (used by `random` interleaving and times). Default 1 \[ours\].
    pub seed: u64,
}

impl Default for SequentialParams {
    fn default() -> Self {
        Self {
            streams: 1,
            requests: 100_000,
            len: 1,
            start: 0,
            spacing: 1 << 30,
            interleave: Interleave::RoundRobin,
            mean_interarrival_s: 0.0,
            seed: 1,
        }
    }
}

/// The sequential generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct Sequential {
    next: Vec<u64>,
    len: u32,
    interleave: Interleave,
    turn: usize,
    rng: SimRng,
    mean_ns: f64,
    time_ns: u64,
    left: u64,
}

impl Sequential {
    /// A generator for `p`.
    pub fn new(p: &SequentialParams) -> Result<Self, TraceError> {
        check_units("streams", u64::from(p.streams))?;
        if p.len == 0 {
            return Err(bad("len", "must be at least 1 block"));
        }
        check_request_blocks("len", p.len)?;
        check_interarrival("mean_interarrival_s", p.mean_interarrival_s)?;
        let span = p.requests.saturating_mul(u64::from(p.len));
        if p.streams > 1 && p.spacing < span {
            return Err(bad(
                "spacing",
                format!("{} blocks between streams is less than the {span} one stream may read", p.spacing),
            ));
        }
        let last_start = p.spacing.checked_mul(u64::from(p.streams - 1)).and_then(|x| x.checked_add(p.start));
        if last_start.and_then(|s| s.checked_add(span)).is_none() {
            return Err(bad("spacing", "the streams run past the 64-bit block space"));
        }
        Ok(Self {
            next: (0..u64::from(p.streams)).map(|i| p.start + i * p.spacing).collect(),
            len: p.len,
            interleave: p.interleave,
            turn: 0,
            rng: SimRng::new(p.seed, 0),
            mean_ns: p.mean_interarrival_s * 1e9,
            time_ns: 0,
            left: p.requests,
        })
    }
}

impl Iterator for Sequential {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let s = match self.interleave {
            Interleave::RoundRobin => {
                let s = self.turn;
                self.turn = (self.turn + 1) % self.next.len();
                s
            }
            Interleave::Random => self.rng.below(self.next.len() as u64) as usize,
        };
        let first = self.next[s];
        self.next[s] += u64::from(self.len);
        if self.mean_ns > 0.0 {
            self.time_ns = self.time_ns.saturating_add(self.rng.exp_ns(self.mean_ns));
        }
        Some(Request { time_ns: self.time_ns, first, len: self.len, op: Op::Read, stream: s as u32, client: 0 })
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
    fn round_robin_streams_each_read_contiguously() {
        let p = SequentialParams { streams: 3, requests: 9, len: 2, ..SequentialParams::default() };
        let reqs: Vec<_> = Sequential::new(&p).unwrap().collect();
        let firsts: Vec<_> = reqs.iter().map(|r| r.first).collect();
        let s = 1 << 30;
        assert_eq!(firsts, vec![0, s, 2 * s, 2, s + 2, 2 * s + 2, 4, s + 4, 2 * s + 4]);
        assert_eq!(reqs[4].stream, 1);
    }

    #[test]
    fn a_request_longer_than_a_trace_record_may_span_is_refused() {
        // len = 2^31 made each request admit two billion blocks: 300 requests did not finish in 20 s.
        let max = crate::convert::MAX_REQUEST_BLOCKS as u32;
        let p = |len| SequentialParams { streams: 1, requests: 4, len, ..SequentialParams::default() };
        let e = Sequential::new(&p(max + 1)).err().unwrap().to_string();
        assert!(e.contains("trace.params.len") && e.contains("16777216"), "{e}");
        assert!(Sequential::new(&p(max)).is_ok());
    }
}
