//! A prefetcher that declares `hits_are_noops` is not called for requests of plain hits; the results
//! must be those of calling it for every request. Each such prefetcher runs bare and wrapped in a
//! forwarder that hides the capability (so its level calls it always), on the same requests.

use prefetchsim_core::build::{build_level, build_prefetcher};
use prefetchsim_core::level::{AnyLevel, LevelOptions};
use prefetchsim_core::policy::Entry;
use prefetchsim_core::prefetch::{CacheView, Capabilities, LevelGeometry, PrefetchCtx, Prefetcher};
use prefetchsim_core::{ComponentSpec, Request};
use proptest::prelude::*;

/// Forwards every call, and asks to be called for every request.
struct CallAlways(Box<dyn Prefetcher>);

impl Prefetcher for CallAlways {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.0.on_access(ctx);
    }
    fn on_second_chance(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.0.on_second_chance(entry, cache);
    }
    fn on_evicted(&mut self, entry: &Entry) {
        self.0.on_evicted(entry);
    }
    fn on_evicted_in(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.0.on_evicted_in(entry, cache);
    }
    fn attach(&mut self, geometry: LevelGeometry) -> Capabilities {
        Capabilities { hits_are_noops: false, ..self.0.attach(geometry) }
    }
}

fn prefetcher(spec: &serde_json::Value) -> Box<dyn Prefetcher> {
    let serde_json::Value::Object(mut params) = spec.clone() else { unreachable!() };
    let name = params.remove("name").and_then(|v| v.as_str().map(str::to_string)).expect("a name");
    build_prefetcher("pf", &ComponentSpec { name, params }).expect("prefetcher").1
}

fn level(policy: &str, pf: Box<dyn Prefetcher>, capacity: usize) -> Box<dyn AnyLevel> {
    build_level("policy", &ComponentSpec::named(policy), capacity, LevelOptions::default(), pf).expect("level").1
}

/// Requests of 1 to 4 blocks, mostly re-reads of a small region (many plain hits) and sequential runs.
fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u8..4, 0u64..200, 1u32..5), 1..800).prop_map(|ops| {
        let mut head = 10_000u64;
        ops.into_iter()
            .map(|(kind, r, len)| match kind {
                0 => {
                    head += u64::from(len);
                    Request::read(head, len)
                }
                1 => Request::read(r, 1),
                _ => Request::read(r / 4, len),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn skipping_plain_hits_changes_nothing(reqs in requests(), capacity in 2usize..100) {
        use serde_json::json;
        let specs = [
            json!({"name": "obl"}),
            json!({"name": "obl", "variant": "on_miss"}),
            json!({"name": "ra", "mode": "pm"}),
            json!({"name": "ra", "mode": "pm", "seq_gate": "cached"}),
        ];
        for policy in ["lru", "arc", "clock"] {
            for spec in &specs {
                let mut skipping = level(policy, prefetcher(spec), capacity);
                let mut calling = level(policy, Box::new(CallAlways(prefetcher(spec))), capacity);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for (i, r) in reqs.iter().enumerate() {
                    a.clear();
                    b.clear();
                    skipping.access(r, r.len, &mut a);
                    calling.access(r, r.len, &mut b);
                    prop_assert_eq!(&a, &b, "{} {} request {}: fetches", policy, spec, i);
                }
                skipping.finish();
                calling.finish();
                prop_assert_eq!(skipping.counters(), calling.counters(), "{} {}: counters", policy, spec);
                prop_assert_eq!(skipping.resident_blocks(), calling.resident_blocks(), "{} {}", policy, spec);
            }
        }
    }
}
