//! STEP and TaP: the STEP paper's neighborhood example, PC queue promotion, demotion and purging, the
//! earning function's maximiser, thrashing intensity on a hand-made interleaving, the delayed queue,
//! raised priority at the level, TaP's detection table and prefetch-cache sizing, the acceptance checks
//! (interleaved sequential streams against Linux read-ahead, a uniformly random trace), configuration
//! errors, and the level invariants under random workloads (`shared/docs/algorithms/step.md`, `tap.md`).

use std::sync::{Arc, Mutex, MutexGuard};

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::Hierarchy;
use prefetchsim_core::level::{AnyLevel, CacheLevel, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::{BlockTable, Entry, FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::step::context::Queue;
use prefetchsim_core::prefetch::step::cost::{Costs, Pdf, PdfShape};
use prefetchsim_core::prefetch::step::{Step, StepParams, StepPreset};
use prefetchsim_core::prefetch::tap::{Tap, TapParams};
use prefetchsim_core::prefetch::{
    CacheView, LevelGeometry, Outcome, PrefetchCtx, PrefetchPlan, PrefetchRun, Prefetcher, Raise,
};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;
use serde_json::{json, Value};

mod acceptance;
mod configuration;
mod delayed_and_raised;
mod neighborhood_and_queues;
mod properties;
mod tap_detection;

// ---------------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------------

/// A prefetcher shared between a level and the test, so that its state can be read between requests.
struct Shared<T>(Arc<Mutex<T>>);

impl<T> Shared<T> {
    fn new(inner: T) -> (Box<Self>, Arc<Mutex<T>>) {
        let a = Arc::new(Mutex::new(inner));
        (Box::new(Self(a.clone())), a)
    }
}

impl<T: Prefetcher> Prefetcher for Shared<T> {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.0.lock().unwrap().on_access(ctx);
    }
    fn on_evicted(&mut self, e: &Entry) {
        self.0.lock().unwrap().on_evicted(e);
    }
    fn raise(&self) -> Option<Raise> {
        self.0.lock().unwrap().raise()
    }
    fn attach(&mut self, g: LevelGeometry) -> prefetchsim_core::prefetch::Capabilities {
        self.0.lock().unwrap().attach(g)
    }
    fn metadata_bytes(&self) -> u64 {
        self.0.lock().unwrap().metadata_bytes()
    }
}

fn lru_level(capacity: usize, pf: Box<dyn Prefetcher>) -> Level<Lru> {
    let env = PolicyEnv { capacity, first_hit: FirstHit::Promote };
    Level::new(capacity, Lru::new(&env), pf, LevelOptions::default())
}

fn serve(level: &mut dyn AnyLevel, req: Request) -> Vec<Fetch> {
    let mut out = Vec::new();
    level.access(&req, req.len, &mut out);
    level.check_invariants().unwrap_or_else(|e| panic!("after {req:?}: {e}"));
    out
}

fn step(params: Value) -> Step {
    let p: StepParams = serde_json::from_value(params).unwrap();
    Step::new("step", p).unwrap_or_else(|e| panic!("{e}"))
}

/// A prefetcher from the registry, as a config names it.
fn pf(name: &str, params: Value) -> Box<dyn Prefetcher> {
    let Value::Object(params) = params else { panic!("params must be a table") };
    prefetchsim_core::build::build_prefetcher("test", &ComponentSpec { name: name.into(), params })
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// Call `p` directly with a request whose blocks had `outcomes` (a cache holding none of the blocks
/// beyond); returns the prefetch runs asked for.
fn drive(p: &mut dyn Prefetcher, req: Request, outcomes: &[Outcome]) -> Vec<PrefetchRun> {
    let table = BlockTable::with_capacity(0);
    let mut plan = PrefetchPlan::default();
    let mut ctx = PrefetchCtx {
        req: &req,
        demand_len: req.len,
        outcomes,
        cache: CacheView::new(&table, 1 << 20),
        plan: &mut plan,
    };
    p.on_access(&mut ctx);
    plan.runs
}

fn misses(n: u32) -> Vec<Outcome> {
    vec![Outcome::Miss; n as usize]
}

fn hits(n: u32) -> Vec<Outcome> {
    vec![Outcome::Hit; n as usize]
}

/// First uses of prefetched blocks.
fn pf_hits(n: u32) -> Vec<Outcome> {
    vec![Outcome::PrefetchHit; n as usize]
}

fn lock<T>(a: &Arc<Mutex<T>>) -> MutexGuard<'_, T> {
    a.lock().unwrap()
}

fn tap(params: Value) -> Tap {
    Tap::new("tap", serde_json::from_value(params).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// splitmix64: a small deterministic generator for synthetic traces.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
