//! Engines: run a trace through a hierarchy.
//!
//! `instant` has no notion of time: a miss at one level is at once a request to the next and prefetched
//! blocks arrive immediately (hit-ratio studies, the fastest path). `timed` is a discrete-event
//! simulation in integer nanoseconds with links, an I/O scheduler and a device ([`timed`]);
//! [`crate::run::run`] picks the engine a config names.

pub mod blockset;
pub mod bottom;
pub mod decoded;
pub mod events;
pub mod future;
pub mod hierarchy;
pub mod inflight;
pub mod instant;
pub mod replay;
pub mod timed;

pub use decoded::DecodedTrace;
pub use hierarchy::Hierarchy;
pub use instant::run_instant;
pub use timed::TimedObserver;

use crate::request::Request;
use crate::trace_facts::TraceFacts;

/// An error from a request source (a trace reader or generator), already carrying its context
/// (file, record, field).
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// Where requests come from: trace readers and synthetic generators implement this.
pub trait RequestSource {
    /// Append up to `max` requests to `buf`; return how many were appended (0 at the end).
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError>;

    /// What the source skipped or noticed so far (bad records passed over, time going backwards).
    /// Default: nothing, for sources that cannot meet bad input.
    fn report(&self) -> SourceReport {
        SourceReport::default()
    }

    /// What the trace declares about its fields ([`TraceFacts`]: whether `stream` carries ids, 0
    /// included). Known when the source is opened, before any request. Default: nothing declared
    /// ([`TraceFacts::UNKNOWN`], stream 0 means "no stream id"), for sources that cannot say (requests
    /// built in memory, plugins); a source wrapping another passes the inner one's on.
    fn facts(&self) -> TraceFacts {
        TraceFacts::UNKNOWN
    }

    /// A second reader of the same requests from their start, when the source can give one (a trace it
    /// can open again, requests in memory): the closed loop reads it to learn how far it must read ahead
    /// to meet every stream, instead of keeping every record it reads before time 0
    /// ([`replay::READ_AHEAD`]). Default: `None`, a source that can be read once only.
    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        Ok(None)
    }
}

/// What a source skipped or noticed while reading: results and `trace info` carry it, so that a run
/// over a damaged trace says so.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceReport {
    /// Bad records skipped (a trace read with `skip_bad`).
    pub skipped: u64,
    /// The messages of the first few skipped records.
    pub skipped_messages: Vec<String>,
    /// Requests whose time is earlier than the request's before them (kept, in file order; counted over
    /// the requests an ops filter keeps).
    pub time_backwards: u64,
    /// The requests' own bytes (the sum of their records' sizes), when the trace states sizes in bytes;
    /// `None` for ids without a size, block-rounded sizes and generators (`trace info` then counts blocks).
    #[serde(default)]
    pub request_bytes: Option<u64>,
}

/// A source over requests already in memory (tests, small examples).
#[derive(Debug, Clone)]
pub struct VecSource {
    reqs: Vec<Request>,
    pos: usize,
    facts: TraceFacts,
}

impl VecSource {
    /// A source that yields `reqs` in order, declaring nothing about them ([`TraceFacts::UNKNOWN`]).
    #[must_use]
    pub fn new(reqs: Vec<Request>) -> Self {
        Self { reqs, pos: 0, facts: TraceFacts::UNKNOWN }
    }

    /// The same source declaring `facts` (requests taken from a trace that declared them).
    #[must_use]
    pub fn with_facts(self, facts: TraceFacts) -> Self {
        Self { facts, ..self }
    }
}

impl RequestSource for VecSource {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = max.min(self.reqs.len() - self.pos);
        buf.extend_from_slice(&self.reqs[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    fn facts(&self) -> TraceFacts {
        self.facts
    }

    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        Ok(Some(Box::new(SliceSource { reqs: &self.reqs, pos: 0 })))
    }
}

/// A [`VecSource`]'s requests read again from the start, borrowed ([`RequestSource::rescan`]).
struct SliceSource<'a> {
    reqs: &'a [Request],
    pos: usize,
}

impl RequestSource for SliceSource<'_> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = max.min(self.reqs.len() - self.pos);
        buf.extend_from_slice(&self.reqs[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Progress reported to the caller every so often; returning `false` stops the run cleanly.
pub trait Progress {
    /// `requests` have been processed so far. Return `false` to stop.
    fn tick(&mut self, requests: u64) -> bool;
}

/// No progress reporting.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn tick(&mut self, _requests: u64) -> bool {
        true
    }
}

impl<F: FnMut(u64) -> bool> Progress for F {
    fn tick(&mut self, requests: u64) -> bool {
        self(requests)
    }
}
