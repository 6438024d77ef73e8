//! The timed engine on real traces: with zero latencies everywhere (a 0 ms fixed device, a zero link,
//! open loop) it counts exactly what the instant engine counts, level by level; with PFC's link and the
//! Cheetah 9LP it drains completely and accounts for every prefetch.

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent};
use prefetchsim_core::run::run_timed;
use prefetchsim_trace::{stats, TraceSpec};

use crate::common;

/// A two-level hierarchy (L1 = 5% of the footprint, L2 = 2x) with `prefetcher` at both levels.
fn two_levels(prefetcher: &str, limit: u64, extra: &str) -> HierarchyConfig {
    HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = '5%'\nprefetcher = {prefetcher}\n[[level]]\nsize = '2x'\npolicy = 'arc'\nprefetcher = {prefetcher}\n\
         [engine]\nlimit = {limit}\n{extra}"
    ))
    .unwrap()
}

fn equal_at_zero_latency(rel: &str, format: &str, limit: u64) {
    let Some(path) = common::trace(rel) else { return };
    let spec = TraceSpec::with_format(&path, format);
    let fp = stats::footprint(spec.open().unwrap().as_mut(), &|| false).unwrap();
    for pf in ["'none'", "{ name = 'obl', variant = 'always' }", "{ name = 'obl', variant = 'tagged' }"] {
        let instant_cfg = two_levels(pf, limit, "");
        let timed_cfg = two_levels(
            pf,
            limit,
            "kind = 'timed'\nreplay = 'open'\n[link]\nalpha_ms = 0\nbeta_ms_per_page = 0\n\
             [device]\nname = 'fixed'\nread_latency_ms = 0\nwrite_latency_ms = 0\n",
        );
        let mut h = Hierarchy::build(&instant_cfg, spec.block_size, Some(fp)).unwrap();
        let i = run_instant(spec.open().unwrap().as_mut(), &mut h, &instant_cfg.engine, &mut Silent).unwrap();
        let mut h = Hierarchy::build(&timed_cfg, spec.block_size, Some(fp)).unwrap();
        let t = run_timed(spec.open().unwrap().as_mut(), &mut h, &timed_cfg, &mut Silent).unwrap();
        assert_eq!(i.requests, t.requests, "{rel} {pf}");
        for (a, b) in i.levels.iter().zip(&t.levels) {
            assert_eq!(a.counters, b.counters, "{rel} {pf}: level {}", a.name);
        }
        let timing = t.timing.unwrap();
        assert_eq!((timing.reads.max_ms, timing.requests_incomplete), (0.0, 0), "{rel} {pf}");
    }
}

#[test]
fn zero_latency_timed_counts_equal_instant_counts_on_arc_oltp() {
    equal_at_zero_latency("arc/OLTP.lis.zst", "arc", 300_000);
}

#[test]
fn zero_latency_timed_counts_equal_instant_counts_on_arc_p6() {
    equal_at_zero_latency("arc/P6.lis.zst", "arc", 100_000);
}

#[test]
fn a_timed_pfc_style_run_on_a_real_trace_drains_and_accounts_for_every_prefetch() {
    let Some(path) = common::trace("arc/P12.lis.zst") else { return };
    let spec = TraceSpec::with_format(&path, "arc");
    let fp = stats::footprint(spec.open().unwrap().as_mut(), &|| false).unwrap();
    let cfg = two_levels(
        "{ name = 'obl', variant = 'always' }",
        50_000,
        "kind = 'timed'\nreplay = 'closed'\niodepth = 4\nper_stream = false\nthink = 'none'\n[device]\nname = 'cheetah9lp'\n",
    );
    let mut h = Hierarchy::build(&cfg, spec.block_size, Some(fp)).unwrap();
    let r = run_timed(spec.open().unwrap().as_mut(), &mut h, &cfg, &mut Silent).unwrap();
    let t = r.timing.as_ref().unwrap();
    assert_eq!((r.requests, t.reads.requests, t.requests_incomplete), (50_000, 50_000, 0));
    // Every read needs at least the two link messages of an L1 miss or nothing at all (L1 hit).
    assert!(t.reads.mean_ms > 0.0 && t.reads.max_ms >= 12.0, "{:?}", t.reads);
    assert!(t.device.requests() > 0 && t.device.service_ns > 0);
    for (l, rep) in h.levels.iter().zip(&r.levels) {
        assert_eq!(l.pinned_count(), 0);
        assert_eq!(rep.counters.prefetch_inflight_end, 0);
        assert!(rep.counters.prefetch_conserved(), "{:?}", rep.counters);
        assert_eq!(rep.counters.hits + rep.counters.misses, rep.counters.demand_accesses);
    }
}
