//! Requests at the top of the 64-bit block space: every registered prefetcher (and Linux read-ahead in
//! each mode) ends, and nothing is prefetched past the last block a trace may name (`u64::MAX - 1`; the
//! readers refuse `u64::MAX`). Linux's stream detector once looped forever on a request within 35 blocks
//! of the top: the end of the last 32-block granule wrapped to 0.

use prefetchsim_core::build::registry::PREFETCHERS;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::request::Request;

/// One-block and three-block reads ending at most one block below the top, then a sequential run there.
fn top_requests() -> Vec<Request> {
    let mut v: Vec<Request> = (2..80u64).map(|k| Request::read(u64::MAX - k, 1)).collect();
    v.extend((4..40u64).rev().map(|k| Request::read(u64::MAX - k, 3)));
    v.extend((0..20u64).map(|i| Request::read(u64::MAX - 60 + i, 1)));
    v
}

fn run(prefetcher: serde_json::Value, policy: &str) -> Result<u64, String> {
    let doc = serde_json::json!({"level": [{"size": 16, "policy": policy, "prefetcher": prefetcher}]});
    let cfg = HierarchyConfig::from_json(doc).map_err(|e| e.to_string())?;
    let mut h = Hierarchy::build(&cfg, 4096, None).map_err(|e| e.to_string())?;
    let reqs = top_requests();
    let r =
        run_instant(&mut VecSource::new(reqs.clone()), &mut h, &cfg.engine, &mut Silent).map_err(|e| e.to_string())?;
    assert_eq!(r.requests, reqs.len() as u64);
    let resident = h.levels[0].resident_blocks();
    assert!(resident.iter().all(|&b| b < u64::MAX), "{prefetcher}: a block past the last one: {resident:?}");
    Ok(r.levels[0].counters.prefetch_issued)
}

#[test]
fn every_prefetcher_ends_at_the_top_of_the_block_space() {
    let mut ran = 0;
    for e in PREFETCHERS {
        let policy = if e.name == "sarc" { "sarc" } else { "lru" };
        // A prefetcher that needs parameters to be built (the stack of two) is skipped, and counted.
        if run(serde_json::json!(e.name), policy).is_ok() {
            ran += 1;
        }
    }
    assert!(ran + 2 >= PREFETCHERS.len(), "only {ran} of {} prefetchers ran with their defaults", PREFETCHERS.len());
    for mode in ["pfc-paper", "2.6.16", "ondemand"] {
        for key in ["stream", "detect", "device", "id"] {
            let issued = run(serde_json::json!({"name": "linux", "mode": mode, "key": key}), "lru").unwrap();
            assert!(issued > 0, "linux {mode} {key}: the sequential run prefetches");
        }
    }
    run(serde_json::json!("obl+linux"), "lru").unwrap();
}
