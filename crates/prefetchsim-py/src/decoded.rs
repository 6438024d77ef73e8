//! Decode once for `simulate_many`: the trace is read and parsed a single time into memory and the
//! decoded requests are replayed to every config, instead of each config reopening and parsing the file
//! (issue 16, "decode once"). The footprint, when a size is a share of it, is counted in the same pass.
//!
//! Memory: one `Request` per request, `REQUEST_BYTES` (32) bytes each. Above `MAX_DECODED_REQUESTS`
//! the decoded copy is dropped and the caller streams the trace per config as before.

use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_core::Request;
use prefetchsim_trace::blockset::BlockSet;

/// Bytes one decoded request takes in memory.
pub const REQUEST_BYTES: usize = std::mem::size_of::<Request>();
// The figure the module header states.
const _: () = assert!(REQUEST_BYTES == 32);

/// Most requests kept decoded in memory: 2^25 (33.5 M requests, 1 GiB at 32 bytes each). Longer traces
/// are streamed per config.
pub const MAX_DECODED_REQUESTS: usize = 1 << 25;

/// The outcome of the decoding pass.
pub struct Decoded {
    /// The requests in trace order, or `None` when the trace is longer than the limit.
    pub requests: Option<Vec<Request>>,
    /// Unique blocks of the whole trace, when asked for.
    pub footprint: Option<u64>,
    /// What the source skipped or noticed over the whole trace.
    pub report: SourceReport,
}

/// Read `src` to its end (or to `max_requests` + 1 when no footprint is needed: past the limit the copy is
/// useless), keeping the requests while they fit and counting the footprint when `want_footprint`.
pub fn decode(src: &mut dyn RequestSource, want_footprint: bool, max_requests: usize) -> Result<Decoded, SourceError> {
    let mut kept: Option<Vec<Request>> = Some(Vec::new());
    let mut seen = want_footprint.then(BlockSet::new);
    let mut buf = Vec::with_capacity(8192);
    loop {
        buf.clear();
        if src.fill(&mut buf, 8192)? == 0 {
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
    Ok(Decoded { requests: kept, footprint: seen.map(|s| s.len()), report: src.report() })
}

/// A replay of decoded requests, shared read-only between the config threads; it reports what the
/// decoding pass saw, as the file's own source would have.
pub struct SliceSource<'a> {
    reqs: &'a [Request],
    pos: usize,
    report: &'a SourceReport,
}

impl<'a> SliceSource<'a> {
    /// A source yielding `reqs` in order and reporting `report`.
    pub fn new(reqs: &'a [Request], report: &'a SourceReport) -> Self {
        Self { reqs, pos: 0, report }
    }
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
    use prefetchsim_core::engine::VecSource;

    fn trace() -> Vec<Request> {
        (0..20_000u64).map(|i| Request::read(i % 700, 1 + (i % 3) as u32)).collect()
    }

    #[test]
    fn keeps_the_requests_and_counts_the_footprint() {
        let d = decode(&mut VecSource::new(trace()), true, 1 << 20).unwrap();
        assert_eq!(d.requests.as_deref(), Some(&trace()[..]));
        assert_eq!(d.footprint, Some(702));
        let mut replay = SliceSource::new(d.requests.as_deref().unwrap(), &d.report);
        let mut buf = Vec::new();
        while replay.fill(&mut buf, 999).unwrap() > 0 {}
        assert_eq!(buf, trace());
    }

    #[test]
    fn past_the_limit_drops_the_copy_but_still_counts_the_footprint() {
        let d = decode(&mut VecSource::new(trace()), true, 10_000).unwrap();
        assert!(d.requests.is_none());
        assert_eq!(d.footprint, Some(702));
        let d = decode(&mut VecSource::new(trace()), false, 10_000).unwrap();
        assert!(d.requests.is_none() && d.footprint.is_none());
    }
}
