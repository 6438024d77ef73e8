//! The one-block access of a level with a prefetcher (`level/prefetch_one.rs`) against the general
//! access: a level that records events takes the general path for every request, so two levels fed the
//! same one-block requests, one recording, must answer alike (fetches, outcomes, counters, contents).

use prefetchsim_core::build::{build_level, build_prefetcher};
use prefetchsim_core::level::{AnyLevel, LevelOptions};
use prefetchsim_core::{ComponentSpec, Request};
use proptest::prelude::*;

/// (policy, prefetcher spec) pairs of every prefetcher family with a per-request decision.
fn configs() -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("lru", json!({"name": "obl"})),
        ("lru", json!({"name": "pfc-ra"})),
        ("lru", json!({"name": "ra", "mode": "pm"})),
        ("lru", json!({"name": "ra", "mode": "trigger"})),
        ("lru", json!({"name": "linux", "mode": "pfc-paper"})),
        ("lru", json!({"name": "linux", "mode": "2.6.16"})),
        ("lru", json!({"name": "linux", "mode": "ondemand"})),
        ("sarc", json!({"name": "sarc"})),
        ("lru", json!({"name": "amp"})),
        ("lru", json!({"name": "mithril", "preset": "paper"})),
        ("lru", json!({"name": "mithril", "preset": "libcachesim"})),
        ("lru", json!({"name": "pg"})),
        ("lru", json!({"name": "step"})),
    ]
}

fn level(policy: &str, pf: &serde_json::Value, capacity: usize) -> Box<dyn AnyLevel> {
    let serde_json::Value::Object(mut params) = pf.clone() else { unreachable!() };
    let name = params.remove("name").and_then(|v| v.as_str().map(str::to_string)).expect("a name");
    let (_, pf) = build_prefetcher("pf", &ComponentSpec { name, params }).expect("prefetcher");
    build_level("policy", &ComponentSpec::named(policy), capacity, LevelOptions::default(), pf).expect("level").1
}

/// One-block requests: sequential runs in a few streams mixed with random blocks and re-reads.
fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u8..4, 0u64..4, 0u64..400), 1..1500).prop_map(|ops| {
        let mut heads = [1000u64, 5000, 9000, 13000];
        ops.into_iter()
            .map(|(kind, s, r)| match kind {
                0 | 1 => {
                    let h = &mut heads[s as usize];
                    *h += 1;
                    Request { stream: s as u32, ..Request::read(*h, 1) }
                }
                2 => Request::read(r, 1),
                _ => Request::read(heads[s as usize].saturating_sub(r % 8), 1),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_one_block_path_answers_as_the_general_access(reqs in requests(), capacity in 4usize..200) {
        for (policy, pf) in configs() {
            let mut fast = level(policy, &pf, capacity);
            let mut general = level(policy, &pf, capacity);
            general.record_events(true);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (i, r) in reqs.iter().enumerate() {
                a.clear();
                b.clear();
                fast.access(r, 1, &mut a);
                general.access(r, 1, &mut b);
                prop_assert_eq!(&a, &b, "{} request {}: fetches", pf, i);
                prop_assert_eq!(fast.last_outcomes(), general.last_outcomes(), "{} request {}", pf, i);
                general.drain_events(&mut |_, _| {});
            }
            fast.finish();
            general.finish();
            prop_assert_eq!(fast.counters(), general.counters(), "{}: counters", pf);
            prop_assert_eq!(fast.resident_blocks(), general.resident_blocks(), "{}: contents", pf);
            fast.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}
