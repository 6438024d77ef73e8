//! The instant engine's lean admission (`level/in_place.rs`: a full level admits a block in its victim's
//! slot) and lean prefetch fill (`Level::fill_prefetch_lean`) against the general path: a level that
//! records events takes the general eviction and fill for every request, so two levels fed the same
//! multi-block requests, one recording, must answer alike (fetches, outcomes, counters, contents), for
//! every policy, with prefetched blocks at either end of the list and with second chances.

use prefetchsim_core::build::{build_level, build_prefetcher};
use prefetchsim_core::level::{AnyLevel, LevelOptions};
use prefetchsim_core::policy::Placement;
use prefetchsim_core::{ComponentSpec, Request};
use proptest::prelude::*;

const POLICIES: &[&str] = &["lru", "fifo", "clock", "arc", "mq", "2q", "splitlru", "streamlru", "sarc"];

fn prefetchers() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!({"name": "obl"}),
        json!({"name": "pfc-ra"}),
        json!({"name": "ra", "mode": "trigger"}),
        json!({"name": "linux", "mode": "ondemand"}),
        json!({"name": "sarc"}),
        json!({"name": "amp"}),
    ]
}

/// The level, or `None` when the policy refuses the prefetcher.
fn level(policy: &str, pf: &serde_json::Value, capacity: usize, opts: &LevelOptions) -> Option<Box<dyn AnyLevel>> {
    let serde_json::Value::Object(mut params) = pf.clone() else { unreachable!() };
    let name = params.remove("name").and_then(|v| v.as_str().map(str::to_string)).expect("a name");
    let (_, pf) = build_prefetcher("pf", &ComponentSpec { name, params }).expect("prefetcher");
    build_level("policy", &ComponentSpec::named(policy), capacity, opts.clone(), pf).ok().map(|(_, l)| l)
}

/// Requests of 1 to 8 blocks: sequential runs in a few streams mixed with random reads and re-reads.
fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u8..4, 0u64..3, 0u64..300, 1u32..9), 1..600).prop_map(|ops| {
        let mut heads = [1000u64, 5000, 9000];
        ops.into_iter()
            .map(|(kind, s, r, len)| match kind {
                0 | 1 => {
                    let h = &mut heads[s as usize];
                    let first = *h;
                    *h += u64::from(len);
                    Request { stream: s as u32, ..Request::read(first, len) }
                }
                2 => Request::read(r, len),
                _ => Request::read(heads[s as usize].saturating_sub(r % 16), len),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn lean_admission_answers_as_the_general_path(
        reqs in requests(),
        capacity in 2usize..120,
        lru_end in any::<bool>(),
        chances in 0u8..2,
    ) {
        let opts = LevelOptions {
            pf_insert: if lru_end { Placement::Lru } else { Placement::Default },
            pf_second_chance: chances,
            ..LevelOptions::default()
        };
        let mut built = 0;
        for policy in POLICIES {
            for pf in prefetchers() {
                let (Some(mut lean), Some(mut general)) =
                    (level(policy, &pf, capacity, &opts), level(policy, &pf, capacity, &opts))
                else {
                    continue;
                };
                built += 1;
                general.record_events(true);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (i, r) in reqs.iter().enumerate() {
                    a.clear();
                    b.clear();
                    lean.access(r, r.len, &mut a);
                    general.access(r, r.len, &mut b);
                    prop_assert_eq!(&a, &b, "{} {} request {}: fetches", policy, pf, i);
                    prop_assert_eq!(lean.last_outcomes(), general.last_outcomes(), "{} {} request {}", policy, pf, i);
                    general.drain_events(&mut |_, _| {});
                }
                lean.finish();
                general.finish();
                prop_assert_eq!(lean.counters(), general.counters(), "{} {}: counters", policy, pf);
                prop_assert_eq!(lean.resident_blocks(), general.resident_blocks(), "{} {}: contents", policy, pf);
                lean.check_invariants().map_err(TestCaseError::fail)?;
            }
        }
        prop_assert!(built >= POLICIES.len() * 4, "only {} policy and prefetcher pairs built", built);
    }
}
