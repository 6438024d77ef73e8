//! Decoding a trace on a thread of its own: its records are parsed into requests (and a decoded-trace
//! cache file read or written) while the requests before them are simulated, so that on a free second
//! core a run takes about the longer of the two rather than their sum. Compressed traces are also
//! decompressed on a thread of their own ([`crate::compress`]); this one takes the parsing.
//!
//! The thread hands over batches in order, then the end or the source's first error; it stops there, or
//! when the reader is dropped. A thread that dies without saying either (a panic) is an error, never a
//! short trace.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_core::{Request, TraceFacts};

/// Requests per batch handed over.
const BATCH: usize = 1 << 15;
/// Batches decoded ahead of the reader at most.
const AHEAD: usize = 2;

/// What the thread hands over: a batch with the source's report after it, the end, or an error.
enum Msg {
    Batch(Vec<Request>, SourceReport),
    End(SourceReport),
    Failed(SourceError),
}

/// A request source read on a thread of its own.
pub struct DecodeThread {
    rx: Receiver<Msg>,
    /// Emptied batches go back to the thread for reuse.
    back: SyncSender<Vec<Request>>,
    cur: Vec<Request>,
    pos: usize,
    report: SourceReport,
    facts: TraceFacts,
    ended: bool,
    thread: Option<JoinHandle<()>>,
}

impl DecodeThread {
    /// Read `src` on a new thread.
    pub fn spawn(mut src: Box<dyn RequestSource + Send>) -> Self {
        let facts = src.facts();
        let (tx, rx) = sync_channel::<Msg>(AHEAD);
        let (back, back_rx) = sync_channel::<Vec<Request>>(AHEAD + 2);
        let thread = std::thread::spawn(move || loop {
            let mut buf = back_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
            buf.clear();
            let msg = match src.fill(&mut buf, BATCH) {
                Ok(0) => Msg::End(src.report()),
                Ok(_) => Msg::Batch(buf, src.report()),
                Err(e) => Msg::Failed(e),
            };
            let last = !matches!(msg, Msg::Batch(..));
            // A send fails when the reader is gone: nothing more to do.
            if tx.send(msg).is_err() || last {
                return;
            }
        });
        Self {
            rx,
            back,
            cur: Vec::new(),
            pos: 0,
            report: SourceReport::default(),
            facts,
            ended: false,
            thread: Some(thread),
        }
    }

    /// The thread stopped without handing over the end or an error: say why.
    #[cold]
    fn died(&mut self) -> SourceError {
        let why = match self.thread.take().map(JoinHandle::join) {
            Some(Err(panic)) => panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into()),
            _ => "no reason given".into(),
        };
        format!("the trace's decoding thread stopped before the end of the trace ({why})").into()
    }
}

impl RequestSource for DecodeThread {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let start = buf.len();
        while buf.len() - start < max {
            if self.pos == self.cur.len() {
                if self.ended {
                    break;
                }
                match self.rx.recv() {
                    Ok(Msg::Batch(batch, report)) => {
                        let old = std::mem::replace(&mut self.cur, batch);
                        let _ = self.back.try_send(old);
                        self.pos = 0;
                        self.report = report;
                    }
                    Ok(Msg::End(report)) => {
                        self.report = report;
                        self.ended = true;
                        break;
                    }
                    Ok(Msg::Failed(e)) => {
                        self.ended = true;
                        return Err(e);
                    }
                    Err(_) => {
                        self.ended = true;
                        return Err(self.died());
                    }
                }
            }
            let take = (self.cur.len() - self.pos).min(max - (buf.len() - start));
            buf.extend_from_slice(&self.cur[self.pos..self.pos + take]);
            self.pos += take;
        }
        Ok(buf.len() - start)
    }

    /// The source's report as of the requests handed over so far (at the end: all of it).
    fn report(&self) -> SourceReport {
        self.report.clone()
    }

    fn facts(&self) -> TraceFacts {
        self.facts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prefetchsim_core::engine::VecSource;
    use prefetchsim_core::request::Op;

    fn reqs(n: u64) -> Vec<Request> {
        (0..n).map(|i| Request { time_ns: i, first: i * 7, len: 1, op: Op::Read, stream: 0, client: 0 }).collect()
    }

    fn drain(src: &mut dyn RequestSource, max: usize) -> Result<Vec<Request>, SourceError> {
        let mut out = Vec::new();
        while src.fill(&mut out, max)? > 0 {}
        Ok(out)
    }

    #[test]
    fn hands_over_every_request_in_order_whatever_the_reader_asks_for() {
        let all = reqs(3 * BATCH as u64 + 5);
        for max in [1, 1000, BATCH, 5 * BATCH] {
            let mut t = DecodeThread::spawn(Box::new(VecSource::new(all.clone())));
            assert_eq!(drain(&mut t, max).unwrap(), all);
            // The end stays the end.
            assert_eq!(t.fill(&mut Vec::new(), 10).unwrap(), 0);
        }
    }

    /// Hands out `good` requests, then fails, or panics.
    struct Breaks {
        good: VecSource,
        left: usize,
        panics: bool,
    }

    impl RequestSource for Breaks {
        fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
            if self.left == 0 {
                assert!(!self.panics, "record 42 broke the reader");
                return Err("record 42: bad field".into());
            }
            let n = self.good.fill(buf, max.min(self.left))?;
            self.left -= n;
            Ok(n)
        }

        fn report(&self) -> SourceReport {
            SourceReport { skipped: 3, ..SourceReport::default() }
        }
    }

    #[test]
    fn an_error_comes_after_the_requests_before_it_and_a_panic_is_an_error_not_an_end() {
        for panics in [false, true] {
            let src = Breaks { good: VecSource::new(reqs(100)), left: 100, panics };
            let mut t = DecodeThread::spawn(Box::new(src));
            let mut out = Vec::new();
            let err = loop {
                match t.fill(&mut out, 30) {
                    Ok(0) => panic!("the trace ended without its error"),
                    Ok(_) => {}
                    Err(e) => break e.to_string(),
                }
            };
            assert_eq!(out, reqs(100));
            let want = if panics { "record 42 broke the reader" } else { "record 42: bad field" };
            assert!(err.contains(want), "{err}");
            assert_eq!(t.report().skipped, 3);
        }
    }

    #[test]
    fn dropping_the_reader_early_stops_the_thread() {
        let mut t = DecodeThread::spawn(Box::new(VecSource::new(reqs(10 * BATCH as u64))));
        assert_eq!(t.fill(&mut Vec::new(), 10).unwrap(), 10);
        let thread = t.thread.take().unwrap();
        drop(t);
        thread.join().unwrap();
    }
}
