//! SARC (policy and prefetcher) and AMP: hand-worked sequences whose expected values are derived from
//! `shared/docs/algorithms/sarc.md` and `amp.md` (the derivation is written beside each step), the
//! acceptance checks (prefetch-hit share on a sequential stream, waste on random traffic against RA(4)),
//! configuration rules, and property tests over random and mixed workloads.

use std::sync::{Arc, Mutex};

use prefetchsim_core::build::build_level;
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::{AnyLevel, CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::sarc::{BottomMode, InitDesired, Sarc, SarcParams, SEQ};
use prefetchsim_core::policy::{Entry, FirstHit, Placement, PolicyEnv};
use prefetchsim_core::prefetch::amp::{Amp, AmpParams, PageMeta};
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::prefetch::sarc::{Group, SarcPrefetchParams, SarcPrefetcher};
use prefetchsim_core::prefetch::{CacheView, Outcome, PrefetchCtx, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

mod acceptance;
mod amp;
mod configuration;
mod properties;
mod sarc_cache;
mod sarc_prefetch;

// ---------------------------------------------------------------------------------------------------------
// Harness

/// A prefetcher the test can still read after the level took it.
struct Shared<P>(Arc<Mutex<P>>);

impl<P: Prefetcher> Prefetcher for Shared<P> {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.0.lock().unwrap().on_access(ctx);
    }
    fn on_second_chance(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.0.lock().unwrap().on_second_chance(entry, cache);
    }
    fn on_evicted(&mut self, entry: &Entry) {
        self.0.lock().unwrap().on_evicted(entry);
    }
    fn on_evicted_in(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.0.lock().unwrap().on_evicted_in(entry, cache);
    }
    fn on_late(&mut self, block: u64) {
        self.0.lock().unwrap().on_late(block);
    }
    fn after_access(&mut self, cache: CacheView<'_>) {
        self.0.lock().unwrap().after_access(cache);
    }
    fn attach(
        &mut self,
        geometry: prefetchsim_core::prefetch::LevelGeometry,
    ) -> prefetchsim_core::prefetch::Capabilities {
        self.0.lock().unwrap().attach(geometry)
    }
}

/// Test prefetcher: a request of stream 1 that misses is a sequential miss (its demand blocks go to
/// SEQ); nothing is prefetched. Drives SARC's lists by hand.
struct MarkSeq;

impl Prefetcher for MarkSeq {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if ctx.req.stream == 1 && ctx.any_miss() {
            ctx.plan.demand_placement = Placement::List(SEQ);
        }
    }
}

/// RA(P) in its Prefetch-Always form (sequential.md): after every request, prefetch `[e+1, e+P]`.
struct RaAlways(u32);

impl Prefetcher for RaAlways {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        ctx.prefetch(next, self.0);
    }
}

fn sarc_params(delta_l: u64) -> SarcParams {
    SarcParams { delta_l: Some(delta_l), ..SarcParams::default() }
}

/// A SARC level (policy `params`, prefetcher `pf`) and a handle on its prefetcher.
fn sarc_level(cap: usize, params: SarcParams, pf: SarcPrefetchParams) -> (Level<Sarc>, Arc<Mutex<SarcPrefetcher>>) {
    let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
    let shared = Arc::new(Mutex::new(SarcPrefetcher::new(pf)));
    let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(Shared(shared.clone())), LevelOptions::default());
    l.record_evictions(true);
    (l, shared)
}

/// A SARC policy level driven by [`MarkSeq`].
fn marked_level(cap: usize, params: SarcParams) -> Level<Sarc> {
    let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
    let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(MarkSeq), LevelOptions::default());
    l.record_evictions(true);
    l
}

/// An LRU level with AMP (and AMP's first-hit rule, as `build_level` would give it).
fn amp_level(cap: usize, params: AmpParams) -> (Level<Lru>, Arc<Mutex<Amp>>) {
    let mut amp = Amp::new(params);
    let first_hit = amp
        .attach(prefetchsim_core::prefetch::LevelGeometry { capacity: cap, block_bytes: 4096 })
        .first_hit
        .unwrap_or_default();
    let env = PolicyEnv { capacity: cap, first_hit };
    let opts = LevelOptions { first_hit, ..LevelOptions::default() };
    let shared = Arc::new(Mutex::new(amp));
    let mut l = Level::new(cap, Lru::new(&env), Box::new(Shared(shared.clone())), opts);
    l.record_evictions(true);
    (l, shared)
}

/// Serve `[first, first+len-1]` of `stream`; returns the fetches. Checks the invariants.
fn read_s(l: &mut dyn AnyLevel, first: u64, len: u32, stream: u32) -> Vec<Fetch> {
    let mut out = Vec::new();
    let req = Request { stream, ..Request::read(first, len) };
    l.access(&req, len, &mut out);
    l.check_invariants().unwrap();
    out
}

fn read(l: &mut dyn AnyLevel, first: u64, len: u32) -> Vec<Fetch> {
    read_s(l, first, len, 0)
}

fn fetch(first: u64, len: u32, demand_len: u32) -> Fetch {
    Fetch { first, len, demand_len, stream: 0, client: 0 }
}

fn seq(l: &Level<Sarc>) -> Vec<u64> {
    l.policy().seq_blocks(l.table())
}

fn random(l: &Level<Sarc>) -> Vec<u64> {
    l.policy().random_blocks(l.table())
}

fn desc(a: u64, b: u64) -> Vec<u64> {
    (a..=b).rev().collect()
}
