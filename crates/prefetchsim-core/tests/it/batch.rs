//! The batch runner (`batch`): every config of a task, replayed from one decoding pass on a
//! thread pool, gives exactly the result of running that config alone on its own stream of the trace —
//! instant and timed engines, sizes in blocks and as shares of the footprint, a config with a request
//! limit (streamed), and the source's report carried through the replay.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prefetchsim_core::batch::{run_task, Task, TaskError, TaskTrace};
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{Hierarchy, RequestSource, Silent, SourceError, SourceReport};
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::request::{Op, Request};

/// A trace of sequential runs over a few files mixed with random reads and some writes, with times.
fn requests() -> Vec<Request> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut cursor = [0u64, 50_000, 90_000];
    (0..12_000u64)
        .map(|i| {
            let r = next();
            let mut req = if r % 3 == 0 {
                Request::read(r % 120_000, 1 + (r >> 20) as u32 % 8)
            } else {
                let f = (r >> 8) as usize % 3;
                let first = cursor[f];
                cursor[f] = (first + 4) % 120_000;
                Request::read(first, 4)
            };
            if r % 11 == 0 {
                req.op = Op::Write;
            }
            req.time_ns = i * 200_000;
            req
        })
        .collect()
}

/// A source over the requests that reports skipped records, as a damaged trace's reader would.
struct Reporting {
    reqs: Vec<Request>,
    pos: usize,
}

impl RequestSource for Reporting {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let n = max.min(self.reqs.len() - self.pos);
        buf.extend_from_slice(&self.reqs[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        // What was "skipped" grows with what was read, so a prefix reports less than the whole trace.
        SourceReport {
            skipped: self.pos as u64 / 1000,
            skipped_messages: vec!["bad".into()],
            time_backwards: 2,
            ..SourceReport::default()
        }
    }
}

struct Trace(Vec<Request>);

impl TaskTrace for Trace {
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError> {
        Ok(Box::new(Reporting { reqs: self.0.clone(), pos: 0 }))
    }

    fn block_size(&self) -> u64 {
        4096
    }
}

fn configs() -> Vec<HierarchyConfig> {
    let timed = serde_json::json!({"name": "fixed", "read_latency_ms": 0.3, "write_latency_ms": 0.5});
    let docs = [
        serde_json::json!({"level": [{"size": "1%"}]}),
        serde_json::json!({"level": [{"size": "10%", "prefetcher": "linux"}]}),
        serde_json::json!({"level": [{"size": 2000, "policy": "arc", "prefetcher": "mithril"}]}),
        serde_json::json!({"level": [{"size": "5%", "prefetcher": "obl"}, {"size": "20%", "policy": "fifo"}]}),
        serde_json::json!({"level": [{"size": "5%"}], "engine": {"limit": 7000}}),
        serde_json::json!({"level": [{"size": 3000, "prefetcher": "obl"}], "engine": {"kind": "timed"}, "device": timed}),
        serde_json::json!({"level": [{"size": "2%"}, {"size": 6000}], "engine": {"kind": "timed", "warmup_requests": 500}}),
    ];
    docs.into_iter().map(|d| HierarchyConfig::from_json(d).unwrap()).collect()
}

/// One config alone: the footprint counted apart, its own stream of the trace.
fn alone(trace: &Trace, cfg: &HierarchyConfig) -> (RunResult, SourceReport) {
    let footprint = cfg.needs_footprint().then(|| {
        let blocks: HashSet<u64> = trace.0.iter().flat_map(Request::blocks).collect();
        blocks.len() as u64
    });
    let mut h = Hierarchy::build(cfg, 4096, footprint).unwrap();
    let mut src = trace.open().unwrap();
    let r = prefetchsim_core::run::run(src.as_mut(), &mut h, cfg, &mut Silent).unwrap();
    (r, src.report())
}

#[test]
fn every_config_of_a_batch_equals_its_run_alone() {
    let trace = Trace(requests());
    let configs = configs();
    let expected: Vec<_> = configs.iter().map(|c| alone(&trace, c)).collect();
    for threads in [1, 3] {
        let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
        let got = run_task(&trace, &Task::new(&configs, threads, &stop, &done)).unwrap();
        assert_eq!(got.len(), configs.len());
        for (i, (g, e)) in got.into_iter().zip(&expected).enumerate() {
            assert_eq!(&g.unwrap(), e, "config {i} on {threads} threads");
        }
        // Progress: the decoding pass, then every config's requests (the limited one its prefix).
        let n = trace.0.len() as u64;
        assert_eq!(done.load(Ordering::Relaxed), n + 6 * n + 7000);
    }
}

#[test]
fn a_trace_over_the_memory_limit_is_streamed_per_config_with_the_same_results() {
    let trace = Trace(requests());
    let configs = configs();
    let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
    let task = Task { max_decoded: 1000, ..Task::new(&configs, 2, &stop, &done) };
    let got = run_task(&trace, &task).unwrap();
    for (i, (g, c)) in got.into_iter().zip(&configs).enumerate() {
        assert_eq!(g.unwrap(), alone(&trace, c), "config {i}");
    }
}

#[test]
fn a_config_that_cannot_be_built_fails_alone() {
    let trace = Trace(requests());
    let mut configs = configs();
    configs[1] = HierarchyConfig::from_json(serde_json::json!({"level": [{"size": 0}]})).unwrap();
    let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
    let got = run_task(&trace, &Task::new(&configs, 2, &stop, &done)).unwrap();
    assert!(matches!(&got[1], Err(TaskError::Config(_))), "{:?}", got[1].as_ref().err());
    assert_eq!(got[0].as_ref().unwrap(), &alone(&trace, &configs[0]));
}

#[test]
fn a_stop_ends_the_decoding_pass_with_an_error() {
    let trace = Trace(requests());
    let configs = configs();
    let (stop, done) = (AtomicBool::new(true), AtomicU64::new(0));
    let e = run_task(&trace, &Task::new(&configs, 2, &stop, &done)).unwrap_err();
    assert_eq!(e.to_string(), "interrupted");
}

/// A size sweep (plain LRU, FIFO and CLOCK in blocks) is computed by the families' one pass over a stream
/// of the trace, without a decoded copy: every result and source report equals the config's run alone,
/// including an LRU size below the longest request, which the pass leaves to its own stream.
#[test]
fn a_size_sweep_in_blocks_streams_one_pass_with_the_same_results_and_reports() {
    let trace = Trace(requests());
    let mut docs: Vec<serde_json::Value> = Vec::new();
    for policy in ["lru", "fifo", "clock"] {
        for size in [2u64, 300, 1500, 6000] {
            docs.push(serde_json::json!({"level": [{"size": size, "policy": policy}]}));
        }
    }
    let configs: Vec<HierarchyConfig> = docs.into_iter().map(|d| HierarchyConfig::from_json(d).unwrap()).collect();
    for threads in [1, 2] {
        let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
        let got = run_task(&trace, &Task::new(&configs, threads, &stop, &done)).unwrap();
        for (i, (g, c)) in got.into_iter().zip(&configs).enumerate() {
            assert_eq!(g.unwrap(), alone(&trace, c), "config {i} on {threads} threads");
        }
        // Progress: the shared pass, then every config's requests (the LRU size of 2 blocks, below the
        // longest request of 8, counted by its own stream).
        let n = trace.0.len() as u64;
        assert_eq!(done.load(Ordering::Relaxed), n + 12 * n);
    }
}
