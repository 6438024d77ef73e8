//! The closed loop's read-ahead before time 0 (one loop per stream): a source that can be read twice
//! ([`RequestSource::rescan`]) lets the replay stop at the last stream's first record, with the same
//! run as reading the whole read-ahead.

use std::cell::Cell;
use std::rc::Rc;

use prefetchsim_core::engine::{RequestSource, SourceError};

use super::invariants::{timed, timing};
use super::*;

/// `reqs` readable once only (no [`RequestSource::rescan`]), counting the requests handed out.
struct Once {
    inner: VecSource,
    handed_out: Rc<Cell<u64>>,
}

impl Once {
    fn new(reqs: &[Request]) -> Self {
        Self { inner: VecSource::new(reqs.to_vec()), handed_out: Rc::default() }
    }
}

impl RequestSource for Once {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = self.inner.fill(buf, max)?;
        self.handed_out.set(self.handed_out.get() + n as u64);
        Ok(n)
    }
}

/// [`Once`] that can be read again from the start.
struct Twice(Once);

impl RequestSource for Twice {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        self.0.fill(buf, max)
    }

    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        self.0.inner.rescan()
    }
}

/// Records the source had handed out when the first request was issued.
struct ReadAtFirstIssue {
    handed_out: Rc<Cell<u64>>,
    at_first_issue: Option<u64>,
}

impl TimedObserver for ReadAtFirstIssue {
    fn issued(&mut self, _index: u64, _t: u64) {
        self.at_first_issue.get_or_insert(self.handed_out.get());
    }
}

fn closed_per_stream() -> HierarchyConfig {
    let mut c = zero_latency(&HierarchyConfig {
        level: vec![level(64, "lru", serde_json::json!("none"))],
        ..HierarchyConfig::default()
    });
    c.device = Some(fixed_device(1.0));
    c.engine.replay = Some(Replay::Closed);
    c.engine.per_stream = Some(true);
    c
}

/// `n` one-block reads; record `i` belongs to stream `stream_of(i)`.
fn trace(n: u64, stream_of: impl Fn(u64) -> u32) -> Vec<Request> {
    (0..n)
        .map(|i| Request { time_ns: i * MS, first: i % 500, len: 1, op: Op::Read, stream: stream_of(i), client: 0 })
        .collect()
}

/// Requests read before the first issue, from a source read once and from one read twice.
fn read_before_start(reqs: &[Request]) -> (u64, u64) {
    let cfg = closed_per_stream();
    let mut out = [0; 2];
    for (twice, read) in [false, true].into_iter().zip(&mut out) {
        let once = Once::new(reqs);
        let mut obs = ReadAtFirstIssue { handed_out: once.handed_out.clone(), at_first_issue: None };
        let mut src: Box<dyn RequestSource> = if twice { Box::new(Twice(once)) } else { Box::new(once) };
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let r = run_timed_observed(src.as_mut(), &mut h, &cfg, &mut Silent, &mut obs).unwrap();
        assert_eq!(r.requests, reqs.len() as u64);
        *read = obs.at_first_issue.unwrap();
    }
    (out[0], out[1])
}

#[test]
fn a_trace_of_one_stream_is_not_read_ahead_when_it_can_be_read_twice() {
    // Read once, the replay cannot know no other stream follows: it reads the whole trace first.
    // Read twice, one batch (8,192 requests) suffices.
    let (once, twice) = read_before_start(&trace(40_000, |_| 0));
    assert_eq!(once, 40_000);
    assert_eq!(twice, 8_192);
}

#[test]
fn the_read_ahead_stops_in_the_batch_of_the_last_streams_first_record() {
    // Stream 1 starts at record 20,000, within the third batch of 8,192.
    let (once, twice) = read_before_start(&trace(40_000, |i| u32::from(i >= 20_000 && i % 2 == 0)));
    assert_eq!(once, 40_000);
    assert_eq!(twice, 3 * 8_192);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(100), ..ProptestConfig::default() })]

    /// Reading ahead only to the last stream's first record replays as reading the whole read-ahead:
    /// the same result and every request issued and completed at the same times.
    #[test]
    fn a_source_read_twice_replays_as_one_read_once(reqs in random_reqs(), cfg in hierarchy(), t in timing()) {
        let mut t = t;
        t.replay = Replay::Closed;
        let mut cfg = timed(&cfg, &t);
        cfg.engine.per_stream = Some(true);
        let mut runs = Vec::new();
        for twice in [false, true] {
            let once = Once::new(&reqs);
            let mut src: Box<dyn RequestSource> = if twice { Box::new(Twice(once)) } else { Box::new(once) };
            let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
            let mut w = Watch::default();
            let r = run_timed_observed(src.as_mut(), &mut h, &cfg, &mut Silent, &mut w).unwrap();
            runs.push((r, w.issued, w.completed));
        }
        prop_assert_eq!(&runs[0], &runs[1]);
    }
}
