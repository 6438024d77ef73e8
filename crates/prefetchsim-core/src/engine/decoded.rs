//! A trace decoded once into memory, to be replayed to every config of a task (issue 16, "decode once"):
//! reading and parsing a trace (decompression, text or binary records) costs as much as simulating it,
//! so a task of several configs pays it once instead of once per config. The footprint, needed when a
//! size is a share of it, is counted in the same pass.
//!
//! Memory: the requests are kept by column (`Columns`), and a field that has the same value in every
//! request so far (no time, reads only, one stream, one client, single-block requests) costs nothing
//! per request: 8 bytes per request for a bare block trace (CloudPhysics w106), 12 with lengths (ARC),
//! at most 29 with every field varying, against 32 for a `Request`. Above the caller's request limit the
//! copy is dropped (the caller streams the trace per config) while the footprint is still counted to
//! the end.

use super::blockset::BlockSet;
use super::{RequestSource, SourceError, SourceReport};
use crate::request::{Op, Request};
use crate::trace_facts::TraceFacts;

/// Most requests kept decoded in memory by default: 2^25 (33.5 M requests, 0.25 to 1 GiB). Longer traces
/// are streamed per config.
pub const MAX_DECODED_REQUESTS: usize = 1 << 25;

/// Requests read from the source per call.
const CHUNK: usize = 8192;

/// One field of every request: a single value while all requests so far agree, else one per request.
#[derive(Debug, Clone)]
enum Column<T> {
    /// No request yet.
    Empty,
    /// Every request so far has this value.
    Same(T),
    /// One value per request.
    Each(Vec<T>),
}

impl<T: Copy + PartialEq> Column<T> {
    /// Append the value of request number `n` (the column holds `n` values).
    #[inline]
    fn push(&mut self, v: T, n: usize) {
        match self {
            Column::Each(col) => col.push(v),
            Column::Same(same) if *same == v => {}
            Column::Same(same) => {
                let mut col = Vec::with_capacity((n + 1).next_power_of_two());
                col.resize(n, *same);
                col.push(v);
                *self = Column::Each(col);
            }
            Column::Empty => *self = Column::Same(v),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> T {
        match self {
            Column::Each(col) => col[i],
            Column::Same(v) => *v,
            Column::Empty => unreachable!("a column of no request is never read"),
        }
    }

    fn shrink(&mut self) {
        if let Column::Each(col) = self {
            col.shrink_to_fit();
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Column::Each(col) => col.capacity() * std::mem::size_of::<T>(),
            _ => 0,
        }
    }
}

/// Requests stored by field ([`Column`]); the first block always varies.
#[derive(Debug, Clone)]
struct Columns {
    first: Vec<u64>,
    len: Column<u32>,
    time_ns: Column<u64>,
    op: Column<Op>,
    stream: Column<u32>,
    client: Column<u32>,
}

impl Columns {
    fn new() -> Self {
        Self {
            first: Vec::new(),
            len: Column::Empty,
            time_ns: Column::Empty,
            op: Column::Empty,
            stream: Column::Empty,
            client: Column::Empty,
        }
    }

    fn len(&self) -> usize {
        self.first.len()
    }

    fn push(&mut self, r: &Request) {
        let n = self.first.len();
        self.len.push(r.len, n);
        self.time_ns.push(r.time_ns, n);
        self.op.push(r.op, n);
        self.stream.push(r.stream, n);
        self.client.push(r.client, n);
        self.first.push(r.first);
    }

    #[inline]
    fn get(&self, i: usize) -> Request {
        Request {
            time_ns: self.time_ns.get(i),
            first: self.first[i],
            len: self.len.get(i),
            op: self.op.get(i),
            stream: self.stream.get(i),
            client: self.client.get(i),
        }
    }

    fn shrink(&mut self) {
        self.first.shrink_to_fit();
        self.len.shrink();
        self.time_ns.shrink();
        self.op.shrink();
        self.stream.shrink();
        self.client.shrink();
    }

    fn heap_bytes(&self) -> usize {
        self.first.capacity() * 8
            + self.len.heap_bytes()
            + self.time_ns.heap_bytes()
            + self.op.heap_bytes()
            + self.stream.heap_bytes()
            + self.client.heap_bytes()
    }
}

/// The outcome of one decoding pass over a trace.
#[derive(Debug, Clone)]
pub struct DecodedTrace {
    /// The requests in trace order, or `None` when the trace was longer than the limit.
    requests: Option<Columns>,
    /// Unique blocks of the whole trace, when asked for.
    footprint: Option<u64>,
    /// What the source skipped or noticed over the whole trace.
    report: SourceReport,
    /// What the source declared about its fields (a replay declares the same).
    facts: TraceFacts,
}

impl DecodedTrace {
    /// Read `src` to its end, keeping up to `max_requests` requests (past that the copy is dropped, and
    /// the pass stops early unless the footprint is wanted) and counting the unique blocks when
    /// `want_footprint`.
    pub fn decode(src: &mut dyn RequestSource, want_footprint: bool, max_requests: usize) -> Result<Self, SourceError> {
        let mut kept = Some(Columns::new());
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
            if let Some(cols) = kept.as_mut() {
                if cols.len() + buf.len() > max_requests {
                    kept = None;
                    if seen.is_none() {
                        break;
                    }
                } else {
                    buf.iter().for_each(|r| cols.push(r));
                }
            }
        }
        if let Some(cols) = kept.as_mut() {
            cols.shrink();
        }
        Ok(Self { requests: kept, footprint: seen.map(|s| s.len()), report: src.report(), facts: src.facts() })
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

    /// What the source declared about its fields.
    #[must_use]
    pub fn facts(&self) -> TraceFacts {
        self.facts
    }

    /// Whether the requests were kept (the trace fitted in the limit).
    #[must_use]
    pub fn is_kept(&self) -> bool {
        self.requests.is_some()
    }

    /// Bytes the kept requests take (0 when dropped).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.requests.as_ref().map_or(0, Columns::heap_bytes)
    }

    /// A replay of the kept requests from the start, reporting what the decoding pass saw, as the
    /// trace's own source would have; `None` when the copy was dropped.
    #[must_use]
    pub fn replay(&self) -> Option<Replay<'_>> {
        self.requests.as_ref().map(|cols| Replay { cols, pos: 0, report: &self.report, facts: self.facts })
    }
}

/// A replay of decoded requests, shared read-only between the threads of a task.
#[derive(Debug)]
pub struct Replay<'a> {
    cols: &'a Columns,
    pos: usize,
    report: &'a SourceReport,
    facts: TraceFacts,
}

impl RequestSource for Replay<'_> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = max.min(self.cols.len() - self.pos);
        buf.extend((self.pos..self.pos + n).map(|i| self.cols.get(i)));
        self.pos += n;
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.report.clone()
    }

    fn facts(&self) -> TraceFacts {
        self.facts
    }

    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        Ok(Some(Box::new(Replay { pos: 0, ..*self })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VecSource;

    fn trace() -> Vec<Request> {
        (0..20_000u64).map(|i| Request::read(i % 700, 1 + (i % 3) as u32)).collect()
    }

    fn replayed(d: &DecodedTrace) -> Vec<Request> {
        let mut replay = d.replay().unwrap();
        let mut buf = Vec::new();
        while replay.fill(&mut buf, 999).unwrap() > 0 {}
        buf
    }

    #[test]
    fn a_field_costs_memory_only_once_it_varies() {
        // Single-block reads with no time: the first block alone, 8 bytes per request.
        let bare: Vec<Request> = (0..5000u64).map(|i| Request::read(i * 7 % 1000, 1)).collect();
        let d = DecodedTrace::decode(&mut VecSource::new(bare.clone()), false, 1 << 20).unwrap();
        assert_eq!(d.heap_bytes(), 5000 * 8);
        assert_eq!(replayed(&d), bare);
        // Every field starts to vary at a different request: each column fills in its constant before.
        let mut mixed = bare;
        for (i, r) in mixed.iter_mut().enumerate() {
            let i = i as u64;
            r.len = if i >= 10 { 1 + (i % 5) as u32 } else { 1 };
            r.time_ns = if i >= 1000 { i * 3 } else { 0 };
            r.op = if i >= 4999 { Op::Write } else { Op::Read };
            r.stream = if i >= 1 { (i % 3) as u32 } else { 0 };
            r.client = if i % 2 == 1 { 9 } else { 0 };
        }
        let d = DecodedTrace::decode(&mut VecSource::new(mixed.clone()), false, 1 << 20).unwrap();
        assert_eq!(replayed(&d), mixed);
        assert_eq!(d.heap_bytes(), 5000 * 29);
    }

    #[test]
    fn keeps_the_requests_and_counts_the_footprint() {
        let d = DecodedTrace::decode(&mut VecSource::new(trace()), true, 1 << 20).unwrap();
        assert_eq!(d.footprint(), Some(702));
        assert_eq!(replayed(&d), trace());
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
