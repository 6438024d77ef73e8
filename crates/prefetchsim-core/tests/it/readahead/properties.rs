//! Properties: every prefetcher over LRU keeps the level's invariants and its prefetch accounting.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Properties: every prefetcher over LRU keeps the level's invariants and its prefetch accounting.
// ---------------------------------------------------------------------------------------------------

fn prefetcher_spec() -> impl Strategy<Value = (&'static str, Value)> {
    let ra = (0usize..4, 1u32..6, prop::option::of(0u32..6), 0usize..3, any::<bool>(), prop::option::of(0u64..300))
        .prop_map(|(mode, p, g, gate, detect, max_block)| {
            let mode = ["pm", "pa", "trigger", "last"][mode];
            let gate = ["off", "cached", "held"][gate];
            let streams = if detect { "detect" } else { "request" };
            let mut v = json!({"mode": mode, "p": p, "seq_gate": gate, "streams": streams, "stream_memory": 64});
            if let Some(g) = g.filter(|g| *g < p) {
                v["g"] = json!(g);
            }
            if let Some(m) = max_block {
                v["max_block"] = json!(m);
            }
            ("ra", v)
        });
    let linux = (0usize..3, 0usize..4, 1u32..40, 1usize..4, 1usize..64, prop::option::of(0u64..300), any::<bool>())
        .prop_map(|(mode, key, ra_pages, streams, memory, max_block, every)| {
            let trigger = if every { "every_access" } else { "reach_group" };
            let (mode, key) = (["pfc-paper", "2.6.16", "ondemand"][mode], ["stream", "detect", "device", "id"][key]);
            let mut v = json!({
                "mode": mode,
                "key": key,
                "ra_pages": ra_pages, "max_streams": streams, "stream_memory": memory,
                "pfc_paper_trigger": trigger,
            });
            if let Some(m) = max_block {
                v["max_block"] = json!(m);
            }
            ("linux", v)
        });
    let presets = prop_oneof![Just("pfc-ra"), Just("split-t1"), Just("split-t2")].prop_map(|n| (n, json!({})));
    prop_oneof![ra, linux, presets]
}

/// Random short requests over a small space, or sequential runs interleaved with random reads; stream
/// ids 0-3.
fn workload() -> impl Strategy<Value = Vec<Request>> {
    let random = prop::collection::vec((0u64..200, 1u32..6, 0u32..4), 1..300)
        .prop_map(|v| v.into_iter().map(|(b, n, s)| Request { stream: s, ..Request::read(b, n) }).collect());
    let mixed = (prop::collection::vec((0u64..4, 0u64..400, 1u32..9, any::<bool>()), 1..300), any::<u64>()).prop_map(
        |(v, _)| {
            let mut cursors = [0u64, 1000, 2000, 3000];
            v.into_iter()
                .map(|(s, b, n, sequential)| {
                    let first = if sequential { cursors[s as usize] } else { 5000 + b };
                    if sequential {
                        cursors[s as usize] += u64::from(n);
                    }
                    Request { stream: s as u32, ..Request::read(first, n) }
                })
                .collect()
        },
    );
    prop_oneof![random, mixed]
}

proptest! {
    #[test]
    fn every_prefetcher_keeps_capacity_counts_and_prefetch_accounting(
        (name, params) in prefetcher_spec(), reqs in workload(), cap in 1usize..64,
        consume in any::<bool>(), chances in 0u8..2,
    ) {
        let opts = LevelOptions { consume_on_hit: consume, pf_second_chance: chances, ..LevelOptions::default() };
        let mut level = Level::new(cap, Lru::new(&env(cap)), pf(name, params.clone()), opts);
        let mut out = Vec::new();
        let mut blocks = 0u64;
        for r in &reqs {
            out.clear();
            level.access(r, r.len, &mut out);
            blocks += u64::from(r.len);
            prop_assert!(level.len() <= cap);
            level.check_invariants().map_err(TestCaseError::fail)?;
            for f in &out {
                prop_assert!(f.demand_len <= f.len);
                if let Some(m) = params.get("max_block").and_then(Value::as_u64) {
                    prop_assert!(f.demand_len == f.len || f.first + u64::from(f.len) - 1 <= m.max(r.last()),
                        "{name} {params}: fetch {f:?} past the device end");
                }
            }
        }
        level.finish();
        let c = level.counters();
        prop_assert_eq!(c.demand_accesses, blocks);
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
        prop_assert!(c.prefetch_hits <= c.hits);
        prop_assert!(c.prefetch_conserved(), "{} {}: prefetch accounting broken: {:?}", name, params, c);
    }
}
