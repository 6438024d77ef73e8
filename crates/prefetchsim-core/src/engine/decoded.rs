//! A trace decoded once into memory, to be replayed to every config of a task (issue 16, "decode once"):
//! reading and parsing a trace (decompression, text or binary records) costs as much as simulating it,
//! so a task of several configs pays it once instead of once per config. The footprint, needed when a
//! size is a share of it, is counted in the same pass.
//!
//! Memory: one [`Request`] per request, [`REQUEST_BYTES`] (32) bytes each. Above the caller's request
//! limit the copy is dropped (the caller streams the trace per config) while the footprint is still
//! counted to the end.

use super::blockset::BlockSet;
use super::{RequestSource, SourceError, SourceReport};
use crate::request::Request;

/// Bytes one decoded request takes in memory.
pub const REQUEST_BYTES: usize = std::mem::size_of::<Request>();
// The figure the module header states.
const _: () = assert!(REQUEST_BYTES == 32);

/// Most requests kept decoded in memory by default: 2^25 (33.5 M requests, 1 GiB at 32 bytes each).
/// Longer traces are streamed per config.
pub const MAX_DECODED_REQUESTS: usize = 1 << 25;

/// Requests read from the source per call.
const CHUNK: usize = 8192;

/// The outcome of one decoding pass over a trace.
#[derive(Debug, Clone)]
pub struct DecodedTrace {
    /// The requests in trace order, or `None` when the trace was longer than the limit.
    requests: Option<Vec<Request>>,
    /// Unique blocks of the whole trace, when asked for.
    footprint: Option<u64>,
    /// What the source skipped or noticed over the whole trace.
    report: SourceReport,
}

impl DecodedTrace {
    /// Read `src` to its end, keeping up to `max_requests` requests (past that the copy is dropped, and
    /// the pass stops early unless the footprint is wanted) and counting the unique blocks when
    /// `want_footprint`.
    pub fn decode(src: &mut dyn RequestSource, want_footprint: bool, max_requests: usize) -> Result<Self, SourceError> {
        let mut kept: Option<Vec<Request>> = Some(Vec::new());
        let mut seen = want_footprint.then(BlockSet::new);
        let mut buf = Vec::with_capacity(CHUNK);
        loop {
            buf.clear();
            if src.fill(&mut buf, CHUNK)? == 0 {
                break;
            }
            if let Some(set) = seen.as_mut() {
                for r in &buf {
                    set.insert_range(r.first, r.first.saturating_add(u64::from(r.len.max(1)) - 1));
                }
            }
            if let Some(v) = kept.as_mut() {
                if v.len() + buf.len() > max_requests {
                    kept = None;
                    if seen.is_none() {
                        break;
                    }
                } else {
                    v.extend_from_slice(&buf);
                }
            }
        }
        if let Some(v) = kept.as_mut() {
            v.shrink_to_fit();
        }
        Ok(Self { requests: kept, footprint: seen.map(|s| s.len()), report: src.report() })
    }

    /// Unique blocks of the whole trace, when the pass counted them.
    #[must_use]
    pub fn footprint(&self) -> Option<u64> {
        self.footprint
    }

    /// What the source skipped or noticed over the whole trace.
    #[must_use]
    pub fn report(&self) -> &SourceReport {
        &self.report
    }

    /// Whether the requests were kept (the trace fitted in the limit).
    #[must_use]
    pub fn is_kept(&self) -> bool {
        self.requests.is_some()
    }

    /// A replay of the kept requests from the start, reporting what the decoding pass saw, as the
    /// trace's own source would have; `None` when the copy was dropped.
    #[must_use]
    pub fn replay(&self) -> Option<SliceSource<'_>> {
        self.requests.as_deref().map(|reqs| SliceSource { reqs, pos: 0, report: &self.report })
    }
}

/// A replay of decoded requests, shared read-only between the threads of a task.
#[derive(Debug)]
pub struct SliceSource<'a> {
    reqs: &'a [Request],
    pos: usize,
    report: &'a SourceReport,
}

impl RequestSource for SliceSource<'_> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = max.min(self.reqs.len() - self.pos);
        buf.extend_from_slice(&self.reqs[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VecSource;

    fn trace() -> Vec<Request> {
        (0..20_000u64).map(|i| Request::read(i % 700, 1 + (i % 3) as u32)).collect()
    }

    #[test]
    fn keeps_the_requests_and_counts_the_footprint() {
        let d = DecodedTrace::decode(&mut VecSource::new(trace()), true, 1 << 20).unwrap();
        assert_eq!(d.footprint(), Some(702));
        let mut replay = d.replay().unwrap();
        let mut buf = Vec::new();
        while replay.fill(&mut buf, 999).unwrap() > 0 {}
        assert_eq!(buf, trace());
    }

    #[test]
    fn past_the_limit_drops_the_copy_but_still_counts_the_footprint() {
        let d = DecodedTrace::decode(&mut VecSource::new(trace()), true, 10_000).unwrap();
        assert!(!d.is_kept() && d.replay().is_none());
        assert_eq!(d.footprint(), Some(702));
        let d = DecodedTrace::decode(&mut VecSource::new(trace()), false, 10_000).unwrap();
        assert!(!d.is_kept() && d.footprint().is_none());
    }
}
