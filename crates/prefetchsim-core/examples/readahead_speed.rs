//! Speed of the sequential prefetchers (RA and its presets, Linux read-ahead) against plain LRU on a
//! synthetic mix of 5M requests: half from 32 interleaved sequential streams (1-8 blocks, stream ids
//! 1-32), half uniformly random one-block reads (stream 0). Run with
//! `cargo run --release -p prefetchsim-core --example readahead_speed [requests]`.
//!
//! Each prefetcher runs for real, and as a replay of the plans it made (a prefetcher that only
//! copies recorded runs into the plan). The replay does the level's part of prefetching (inserting,
//! evicting, counting) without any decision, so `total - replay` is the prefetcher's own cost. Times are
//! the thread's CPU time where Linux reports it (`/proc/thread-self/schedstat`), else wall time, and the
//! minimum of three runs.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::level::{CacheLevel, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::Entry;
use prefetchsim_core::policy::{FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::{Capabilities, LevelGeometry, PrefetchCtx, PrefetchRun, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};
use serde_json::{json, Value};

/// splitmix64.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn workload(n: usize) -> Vec<Request> {
    let mut rng = 7u64;
    let mut cursors: Vec<u64> = (0..32u64).map(|s| (s + 1) << 32).collect();
    (0..n)
        .map(|_| {
            let r = next(&mut rng);
            if r & 1 == 0 {
                let s = ((r >> 1) % 32) as usize;
                let len = 1 + ((r >> 8) % 8) as u32;
                let first = cursors[s];
                cursors[s] += u64::from(len);
                Request { stream: s as u32 + 1, ..Request::read(first, len) }
            } else {
                Request::read((r >> 1) % 100_000_000, 1)
            }
        })
        .collect()
}

/// CPU time of this thread in seconds, or wall time since `t0`.
fn now(t0: Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()))
        .map_or_else(|| t0.elapsed().as_secs_f64(), |ns| ns as f64 * 1e-9)
}

/// Plans as recorded: per request, the runs and the demand stream.
#[derive(Default)]
struct Tape {
    runs: Vec<PrefetchRun>,
    per_request: Vec<(u32, u32, Option<u32>)>,
}

/// Records the plans of the prefetcher it wraps.
struct Recorder {
    inner: Box<dyn Prefetcher>,
    tape: Arc<Mutex<Tape>>,
}

impl Prefetcher for Recorder {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.inner.on_access(ctx);
        let mut t = self.tape.lock().unwrap();
        let from = t.runs.len() as u32;
        t.runs.extend_from_slice(&ctx.plan.runs);
        let n = ctx.plan.runs.len() as u32;
        t.per_request.push((from, n, ctx.plan.demand_stream));
    }
    fn attach(&mut self, geometry: LevelGeometry) -> Capabilities {
        self.inner.attach(geometry)
    }
    fn on_evicted(&mut self, e: &Entry) {
        self.inner.on_evicted(e);
    }
}

/// Replays recorded plans.
struct Replayer {
    tape: Tape,
    next: usize,
}

impl Prefetcher for Replayer {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let (from, n, stream) = self.tape.per_request[self.next];
        self.next += 1;
        ctx.plan.runs.extend_from_slice(&self.tape.runs[from as usize..(from + n) as usize]);
        ctx.plan.demand_stream = stream;
    }
}

fn timed(reqs: &[Request], pf: Box<dyn Prefetcher>, capacity: usize) -> (f64, f64) {
    let env = PolicyEnv { capacity, first_hit: FirstHit::Promote };
    let mut level = Level::new(capacity, Lru::new(&env), pf, LevelOptions::default());
    let mut out: Vec<Fetch> = Vec::with_capacity(64);
    let t0 = Instant::now();
    let start = now(t0);
    for r in reqs {
        out.clear();
        level.access(r, r.len, &mut out);
    }
    let secs = now(t0) - start;
    level.finish();
    (secs, level.counters().hit_ratio())
}

fn build(name: &str, params: &Value) -> Box<dyn Prefetcher> {
    let Value::Object(params) = params.clone() else { unreachable!() };
    prefetchsim_core::build::build_prefetcher("pf", &ComponentSpec { name: name.into(), params })
        .expect("valid prefetcher")
        .1
}

/// Repetitions of every timing; the minimum is kept (the machine may be shared).
const REPS: usize = 3;

/// (real time, replay time, hit ratio), each time the minimum of [`REPS`] runs.
fn run(reqs: &[Request], name: &str, params: &Value, capacity: usize) -> (f64, f64, f64) {
    let tape = Arc::new(Mutex::new(Tape::default()));
    let rec = Recorder { inner: build(name, params), tape: tape.clone() };
    let (_, hr) = timed(reqs, Box::new(rec), capacity);
    let tape = std::mem::take(&mut *tape.lock().unwrap());
    let (mut real, mut replay) = (f64::MAX, f64::MAX);
    for _ in 0..REPS {
        real = real.min(timed(reqs, build(name, params), capacity).0);
        let tape = Tape { runs: tape.runs.clone(), per_request: tape.per_request.clone() };
        let (secs, hr2) = timed(reqs, Box::new(Replayer { tape, next: 0 }), capacity);
        assert!((hr - hr2).abs() < 1e-12, "the replay serves the same hits");
        replay = replay.min(secs);
    }
    (real, replay, hr)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5_000_000);
    let capacity = 1 << 16;
    let reqs = workload(n);
    let cases: Vec<(&str, Value)> = vec![
        ("none", json!({})),
        ("ra", json!({"mode": "pm"})),
        ("pfc-ra", json!({})),
        ("ra", json!({"mode": "trigger"})),
        ("ra", json!({"mode": "last"})),
        ("ra", json!({"mode": "pa", "seq_gate": "cached"})),
        ("split-t1", json!({})),
        ("split-t2", json!({})),
        ("linux", json!({"mode": "pfc-paper"})),
        ("linux", json!({"mode": "2.6.16"})),
        ("linux", json!({"mode": "ondemand"})),
        ("linux", json!({"mode": "pfc-paper", "key": "detect"})),
        ("linux", json!({"mode": "2.6.16", "key": "detect"})),
        ("linux", json!({"mode": "ondemand", "key": "detect"})),
    ];
    // `readahead_speed N FILTER`: time only the cases whose label contains FILTER, without replay
    // (for profiling).
    if let Some(filter) = std::env::args().nth(2) {
        for (name, params) in &cases {
            let label = format!("{name} {params}");
            if label.contains(&filter) {
                let (secs, hr) = timed(&reqs, build(name, params), capacity);
                println!("{label}: {secs:.3} s, hit ratio {hr:.4}");
            }
        }
        return;
    }
    // Plain LRU before and after; the baseline is the fastest run.
    let lru = || (0..REPS).map(|_| timed(&reqs, build("none", &json!({})), capacity).0).fold(f64::MAX, f64::min);
    let base = lru();
    let mut rows = Vec::new();
    for (name, params) in &cases[1..] {
        rows.push((name, params, run(&reqs, name, params, capacity)));
    }
    let base = base.min(lru());
    println!("{n} requests, LRU of {capacity} blocks; plain LRU {base:.3} s ({:.1} M req/s)", n as f64 / base / 1e6);
    println!(
        "{:<44} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6}",
        "prefetcher", "time s", "x LRU", "replay", "x LRU", "own/LRU", "hits"
    );
    for (name, params, (secs, replay, hr)) in rows {
        let label = format!("{name} {params}");
        println!(
            "{label:<44} {secs:>7.3} {:>7.2} {replay:>7.3} {:>8.2} {:>8.2} {hr:>6.3}",
            secs / base,
            replay / base,
            (secs - replay) / base
        );
    }
}
