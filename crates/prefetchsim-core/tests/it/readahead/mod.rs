//! RA(P) and Linux read-ahead: the worked examples of `shared/docs/algorithms/sequential.md` (the Split
//! paper's techniques), the window sequences of `linux-readahead.md` for each Linux mode, interleaved
//! streams keyed by stream id or detected, random access, the sequential-stream acceptance checks, and
//! the level invariants under random and mixed workloads.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::Hierarchy;
use prefetchsim_core::level::{AnyLevel, CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::split_lru::{SplitLru, SplitLruParams};
use prefetchsim_core::policy::stream_lru::{StreamLru, StreamLruParams};
use prefetchsim_core::policy::{Entry, FirstHit, Policy, PolicyEnv};
use prefetchsim_core::prefetch::linux::{self, Linux, OndemandState, PaperState, State2616, StreamState};
use prefetchsim_core::prefetch::{PrefetchCtx, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::split_examples::{paper_options, Technic, Technique};

mod acceptance;
mod configuration;
mod linux_misses_and_interleaving;
mod linux_stream_zero;
mod linux_windows;
mod properties;
mod split_paper;
mod stream_detector;

/// A prefetcher from the registry, as a config would name it.
fn pf(name: &str, params: Value) -> Box<dyn Prefetcher> {
    let Value::Object(params) = params else { panic!("params must be a table") };
    prefetchsim_core::build::build_prefetcher("test", &ComponentSpec { name: name.into(), params })
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

fn env(capacity: usize) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: FirstHit::Promote }
}

fn lru_level(capacity: usize, pf: Box<dyn Prefetcher>) -> Level<Lru> {
    Level::new(capacity, Lru::new(&env(capacity)), pf, LevelOptions::default())
}

fn serve(level: &mut dyn AnyLevel, req: Request) -> Vec<Fetch> {
    let mut out = Vec::new();
    level.access(&req, req.len, &mut out);
    level.check_invariants().unwrap_or_else(|e| panic!("after {req:?}: {e}"));
    out
}

fn fetch(first: u64, len: u32, demand_len: u32) -> Fetch {
    Fetch { first, len, demand_len, stream: 0, client: 0 }
}

// ---------------------------------------------------------------------------------------------------
// Linux read-ahead: a probe logging the stream state after each request, for the window sequences
// (linux-readahead.md, "Worked check" of each mode) and the random-access and interleaving checks.
// ---------------------------------------------------------------------------------------------------

type Log = Arc<Mutex<Vec<(StreamState, Vec<u64>)>>>;

/// Records the state of the stream each request used, and the marker pages, after every request.
struct Probe {
    inner: Linux,
    log: Log,
}

impl Prefetcher for Probe {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.inner.on_access(ctx);
        let st = self.inner.last_state().expect("a state after a request");
        self.log.lock().unwrap().push((st, self.inner.marks()));
    }
    fn attach(
        &mut self,
        geometry: prefetchsim_core::prefetch::LevelGeometry,
    ) -> prefetchsim_core::prefetch::Capabilities {
        self.inner.attach(geometry)
    }
    fn on_evicted(&mut self, e: &Entry) {
        self.inner.on_evicted(e);
    }
}

fn linux_pf(params: Value) -> Linux {
    let Value::Object(params) = params else { panic!() };
    linux::build("test", &ComponentSpec { name: "linux".into(), params }).unwrap_or_else(|e| panic!("{e}"))
}

fn probed(capacity: usize, params: Value) -> (Level<Lru>, Log) {
    let log = Log::default();
    let level = lru_level(capacity, Box::new(Probe { inner: linux_pf(params), log: log.clone() }));
    (level, log)
}

/// Serve `reqs`; return the fetches and the logged state of each request.
fn replay(level: &mut Level<Lru>, log: &Log, reqs: &[Request]) -> Vec<(Vec<Fetch>, StreamState, Vec<u64>)> {
    let from = log.lock().unwrap().len();
    let fetches: Vec<Vec<Fetch>> = reqs.iter().map(|r| serve(level, *r)).collect();
    let log = log.lock().unwrap();
    fetches.into_iter().zip(&log[from..]).map(|(f, (s, m))| (f, *s, m.clone())).collect()
}

fn seq(n: u64, len: u32) -> Vec<Request> {
    (0..n).map(|i| Request::read(i * u64::from(len), len)).collect()
}

fn w2616(s: StreamState) -> (u64, u64, u64, u64) {
    let StreamState::V2616(State2616 { start, size, ahead_start, ahead_size, .. }) = s else { panic!("{s:?}") };
    (start, size, ahead_start, ahead_size)
}

fn wond(s: StreamState) -> (u64, u64, u64) {
    let StreamState::Ondemand(OndemandState { start, size, async_size, .. }) = s else { panic!("{s:?}") };
    (start, size, async_size)
}

/// A block range, both ends included.
type Range = Option<(u64, u64)>;

fn wpaper(s: StreamState) -> (Range, Range) {
    let StreamState::PfcPaper(PaperState { group, prev_group }) = s else { panic!("{s:?}") };
    (group, prev_group)
}

/// Check a state per request against `changes`: (request index, state from then on).
fn assert_steps<T: PartialEq + std::fmt::Debug + Copy>(got: &[T], changes: &[(usize, T)], what: &str) {
    for (i, g) in got.iter().enumerate() {
        let want = changes.iter().rev().find(|(at, _)| *at <= i).map(|(_, w)| *w).unwrap();
        assert_eq!(*g, want, "{what}: state after request {i}");
    }
}
