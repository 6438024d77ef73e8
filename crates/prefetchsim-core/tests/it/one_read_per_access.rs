//! Each block is read at most once per access (docs/guide/engines.md: "no block is read twice"; the
//! schema's `prefetch_issued`: "resident and in-flight blocks are not re-issued"), and an access's
//! insertions come after all its look-ups, so that a resident, ready block of the request is a hit.
//!
//! Both defects were found by a user study (`studies/counters.md`, findings 1 and 2): SARC's overlapping
//! groups in a cache smaller than a group issued a block, evicted it within the access and issued it
//! again (two `prefetch_issued`, overlapping fetches); in the timed engine an orphan's re-caching during
//! the look-ups evicted a ready block of the same request, which was then counted as a miss and read
//! again.

use prefetchsim_core::build::{build_level, build_prefetcher};
use prefetchsim_core::level::{AnyLevel, LevelOptions};
use prefetchsim_core::policy::Placement;
use prefetchsim_core::prefetch::{Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use prefetchsim_core::{ComponentSpec, Fetch, Request};
use proptest::prelude::*;

/// Prefetches two overlapping runs after each request: `u` blocks from the block after it, and `u` blocks
/// from the one after that (as SARC's group fired by a trigger and the group of a sequential miss can).
#[derive(Debug)]
struct Overlapping {
    u: u32,
}

impl Prefetcher for Overlapping {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        for first in [next, next + 1] {
            ctx.prefetch_run(PrefetchRun { first, len: self.u, stream: 0, placement: Placement::Default });
        }
    }
}

fn lru(capacity: usize, pf: Box<dyn Prefetcher>) -> Box<dyn AnyLevel> {
    build_level("policy", &ComponentSpec::named("lru"), capacity, LevelOptions::default(), pf).expect("level").1
}

fn fetches(out: &[Fetch]) -> Vec<(u64, u32)> {
    out.iter().map(|f| (f.first, f.len)).collect()
}

#[test]
fn a_prefetch_run_passes_over_a_block_its_own_access_read_and_evicted() {
    // Two frames. Block 0 misses; run 1 prefetches 1-4, each insertion evicting the oldest (0, 1, 2), so
    // 3 and 4 stay. Run 2 names 2-5: 2 was read by this very access and evicted by it, 3 and 4 are
    // cached, 5 is new and extends the access's fetch. Before, 2, 3 and 4 were issued again (8 issued,
    // overlapping fetches (0,5) and (2,4)).
    for events in [false, true] {
        let mut level = lru(2, Box::new(Overlapping { u: 4 }));
        // The event log sends the access through the general path (`fill_prefetch`), not the lean one.
        level.record_events(events);
        let mut out = Vec::new();
        level.access(&Request::read(0, 1), 1, &mut out);
        assert_eq!(fetches(&out), vec![(0, 6)], "events {events}");
        let c = level.counters();
        assert_eq!((c.prefetch_issued, c.fetches, c.fetched_blocks), (5, 1, 6), "events {events}: {c:?}");
        level.check_invariants().unwrap();
    }
}

fn named_level(policy: &str, pf: serde_json::Value, capacity: usize) -> Box<dyn AnyLevel> {
    let serde_json::Value::Object(mut params) = pf else { unreachable!() };
    let name = params.remove("name").and_then(|v| v.as_str().map(str::to_string)).expect("a name");
    let (_, pf) = build_prefetcher("pf", &ComponentSpec { name, params }).expect("prefetcher");
    build_level("policy", &ComponentSpec::named(policy), capacity, LevelOptions::default(), pf).expect("level").1
}

/// Sequential runs in a few streams mixed with random requests, over a small space.
fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u8..3, 0u64..300, 1u32..9), 1..400).prop_map(|ops| {
        let mut heads = [1000u64, 3000, 5000];
        ops.into_iter()
            .map(|(kind, b, n)| match kind {
                0 | 1 => {
                    let h = &mut heads[kind as usize];
                    let r = Request::read(*h, n);
                    *h += u64::from(n);
                    r
                }
                _ => Request::read(b, n),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// The fetches of one access never overlap, whatever the prefetcher and however small the cache.
    #[test]
    fn the_fetches_of_one_access_never_overlap(reqs in requests(), cap in 2usize..24, which in 0usize..5) {
        use serde_json::json;
        let (policy, pf) = [
            ("sarc", json!({"name": "sarc"})),
            ("lru", json!({"name": "amp"})),
            ("lru", json!({"name": "tap"})),
            ("lru", json!({"name": "pfc-ra"})),
            ("lru", json!({"name": "step"})),
        ][which].clone();
        let mut level = named_level(policy, pf, cap);
        let mut out = Vec::new();
        for r in &reqs {
            out.clear();
            level.access(r, r.len, &mut out);
            let mut spans: Vec<(u64, u64)> = out.iter().map(|f| (f.first, f.first + u64::from(f.len))).collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "{policy}: overlapping fetches {:?} for {r:?}", fetches(&out));
            }
            level.check_invariants().map_err(TestCaseError::fail)?;
        }
        level.finish();
        prop_assert!(level.counters().prefetch_conserved(), "{:?}", level.counters());
    }
}

#[test]
fn a_ready_block_after_a_rejoined_orphan_in_the_same_request_is_a_hit() {
    // Timed pins, driven by hand. Four frames, LRU, no prefetcher.
    let mut level = named_level("lru", serde_json::json!({"name": "none"}), 4);
    level.set_timed(true);
    let mut out = Vec::new();
    let mut access = |level: &mut Box<dyn AnyLevel>, first: u64, len: u32, tags: &[u32]| {
        out.clear();
        level.access(&Request::read(first, len), len, &mut out);
        level.set_fetch_tags(tags);
        let outcomes = level.last_outcomes().to_vec();
        (fetches(&out), outcomes)
    };
    access(&mut level, 501, 1, &[1]); // 501 in flight (read 1)
    access(&mut level, 300, 2, &[2]); // 300-301 in flight (read 2)
                                      // 500 takes the free frame; 502 evicts it (every other block is in flight): 500 is an orphan of read 3.
    let (f, _) = access(&mut level, 500, 3, &[3, 4]);
    assert_eq!(f, vec![(500, 1), (502, 1)]);
    assert!(!level.contains(500));
    level.complete(501, 1, 1); // 501 ready; 300-301 and 502 still in flight, 500's read too
    let before = level.counters().clone();
    // 500 joins its read in flight; 501 is resident and ready: a hit, no new read. Before, caching 500
    // again during the look-ups evicted 501 (the only block not in flight), which then missed.
    let (f, outcomes) = access(&mut level, 500, 2, &[]);
    assert_eq!(outcomes, vec![Outcome::Pending, Outcome::Hit]);
    assert_eq!(f, Vec::<(u64, u32)>::new());
    let c = level.counters();
    assert_eq!(
        (c.hits - before.hits, c.misses - before.misses, c.inflight_demand_joins - before.inflight_demand_joins),
        (1, 1, 1),
        "{c:?}"
    );
    assert_eq!(level.pending_tags(), &[3]);
    level.check_invariants().unwrap();
}
