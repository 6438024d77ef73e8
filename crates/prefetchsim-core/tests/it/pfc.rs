//! PFC (`shared/docs/algorithms/pfc.md`; Zhang et al., ICDCS 2008): the paper's Figure 3 split, the
//! test vector of pfc.md in both versions, each branch of Algorithm 2 in both versions, the ablations,
//! per-client contexts, configuration errors, and the engines: with zero latencies the timed engine
//! counts what the instant engine counts, and with real latencies every request completes and nothing
//! stays pinned.

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::{EngineKind, HierarchyConfig, PrefetchIo, Replay};
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::{CacheLevel, LevelOptions};
use prefetchsim_core::link::LinkParams;
use prefetchsim_core::pfc::{Decision, PfcLevel, PfcMode, PfcParams, PfcState, PfcVersion};
use prefetchsim_core::prefetch::Outcome;
use prefetchsim_core::request::{Fetch, Request};
use prefetchsim_core::run::run_timed;
use proptest::prelude::*;

fn l2(cap: usize, pf: &str, params: PfcParams) -> PfcLevel {
    let (_, p) = prefetchsim_core::build::build_prefetcher("pf", &ComponentSpec::named(pf)).unwrap();
    let (_, inner) =
        prefetchsim_core::build::build_level("policy", &ComponentSpec::named("lru"), cap, LevelOptions::default(), p)
            .unwrap();
    PfcLevel::new(inner, params)
}

fn version(v: PfcVersion) -> PfcParams {
    PfcParams { version: v, queue_blocks: Some(10), ..PfcParams::default() }
}

fn access(l: &mut PfcLevel, first: u64, len: u32) -> Vec<Fetch> {
    let mut out = Vec::new();
    l.access(&Request::read(first, len), len, &mut out);
    out
}

fn spans(out: &[Fetch]) -> Vec<(u64, u64)> {
    out.iter().map(|f| (f.first, f.first + u64::from(f.len) - 1)).collect()
}

#[test]
fn figure_3_bypasses_a_prefix_and_forwards_the_rest_with_readmore_blocks() {
    // L1 asks for 1-5; PFC bypasses 1-3 and reads more 6-8: the native path sees 4-8. Block 2 is in L2
    // (a silent hit), block 4 too (an ordinary hit on the native path).
    let mut l = l2(100, "none", PfcParams::default());
    let mut out = Vec::new();
    for b in [2, 4] {
        // Through the native path (no bypass, no readmore).
        let d = Decision { start_pfc: b, end_pfc: b, bypass_length: 0, readmore_length: 0, rm_size: 1, whole: false };
        l.serve_with(&Request::read(b, 1), 1, &d, &mut out);
    }
    let before = l.counters().clone();
    out.clear();
    let d = Decision { start_pfc: 4, end_pfc: 8, bypass_length: 3, readmore_length: 3, rm_size: 5, whole: false };
    l.serve_with(&Request::read(1, 5), 5, &d, &mut out);
    assert_eq!(spans(&out), vec![(1, 1), (3, 3), (5, 8)]);
    assert_eq!(out[2].demand_len, 1, "only block 5 of the native request is demand");
    use Outcome::{Hit, Miss};
    assert_eq!(l.last_outcomes(), &[Miss, Hit, Miss, Hit, Miss]);
    assert_eq!(l.resident_blocks(), vec![2, 4, 5, 6, 7, 8], "bypassed misses are not cached");
    let c = l.counters();
    assert_eq!(c.silent_hits - before.silent_hits, 1);
    assert_eq!(c.bypass_reads - before.bypass_reads, 2);
    assert_eq!(c.readmore_blocks - before.readmore_blocks, 3);
    assert_eq!(c.hits - before.hits, 1, "the silent hit is not a native hit");
    assert_eq!(c.demand_accesses - before.demand_accesses, 2);
}

#[test]
fn cache_bypassed_caches_bypassed_reads_at_the_eviction_end_in_both_engines() {
    // Figure 3's request with cache_bypassed: the bypassed misses 1 and 3 are cached, first to go.
    let params = PfcParams { cache_bypassed: true, ..PfcParams::default() };
    let mut l = l2(8, "none", params.clone());
    let mut out = Vec::new();
    let d = Decision { start_pfc: 4, end_pfc: 8, bypass_length: 3, readmore_length: 3, rm_size: 5, whole: false };
    l.serve_with(&Request::read(1, 5), 5, &d, &mut out);
    assert_eq!(spans(&out), vec![(1, 3), (4, 8)]);
    assert_eq!(l.resident_blocks(), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(l.counters().bypass_reads, 3, "still read around the level");
    // Full: the next block goes in by evicting a bypassed block (LRU end), not a native one.
    out.clear();
    let d = Decision { start_pfc: 20, end_pfc: 20, bypass_length: 0, readmore_length: 0, rm_size: 1, whole: false };
    l.serve_with(&Request::read(20, 1), 1, &d, &mut out);
    let r = l.resident_blocks();
    assert!(r.contains(&20) && (4..=8).all(|b| r.contains(&b)), "{r:?}");
    assert_eq!((1..=3).filter(|b| r.contains(b)).count(), 2, "{r:?}");
    // Timed: cached when the read arrives, never pinned.
    let cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 4\n[[level]]\nsize = 128\npfc = { version = 'B', cache_bypassed = true }\n",
    )
    .unwrap();
    let reqs: Vec<Request> =
        (0..20u64).map(|i| Request { time_ns: i * 1_000_000, ..Request::read(i * 4, 4) }).collect();
    for cached in [false, true] {
        let mut c = cfg.clone();
        c.level[1].pfc.as_mut().unwrap().cache_bypassed = cached;
        let t = timed(&c, 0.5, 2.0);
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let r = run_timed(&mut VecSource::new(reqs.clone()), &mut h, &t, &mut Silent).unwrap();
        assert!(r.levels[1].counters.bypass_reads > 0);
        assert_eq!(h.levels[1].pinned_count(), 0);
        let held = h.levels[1].len() as u64;
        let native = r.levels[1].counters.misses;
        if cached {
            assert_eq!(held, native + r.levels[1].counters.bypass_reads, "every block read is cached");
        } else {
            assert_eq!(held, native, "bypassed blocks are not cached");
        }
    }
}

#[test]
fn pfc_md_test_vector_version_a() {
    let mut l = l2(100, "none", version(PfcVersion::A));
    // [0,3]: bypass 1, readmore 0.
    assert_eq!(spans(&access(&mut l, 0, 4)), vec![(0, 0), (1, 3)]);
    let d = l.last_decision().unwrap();
    assert_eq!((d.bypass_length, d.readmore_length, d.start_pfc, d.end_pfc), (1, 0, 1, 3));
    assert_eq!(l.state(0).bq.blocks_lru_first(), vec![0]);
    assert_eq!(l.state(0).rq.blocks_lru_first(), vec![4, 5, 6, 7]);
    // [4,7] touches the readmore window: bypass 2, readmore 4.
    assert_eq!(spans(&access(&mut l, 4, 4)), vec![(4, 5), (6, 11)]);
    let d = l.last_decision().unwrap();
    assert_eq!((d.bypass_length, d.readmore_length), (2, 4));
    assert_eq!(l.state(0).bq.blocks_lru_first(), vec![0, 4, 5]);
    assert!((12..=15).all(|b| l.state(0).rq.peek(b)));
    // [8,11] hits L2: bypass 3 (silent hits 8-10), readmore kept at 4.
    let before = l.counters().silent_hits;
    let out = access(&mut l, 8, 4);
    let d = l.last_decision().unwrap();
    assert_eq!((d.bypass_length, d.readmore_length, d.start_pfc, d.end_pfc), (3, 4, 11, 15));
    assert_eq!(spans(&out), vec![(12, 15)], "8-11 are in L2; 12-15 are read more");
    assert_eq!(l.counters().silent_hits - before, 3);
    assert_eq!(l.state(0).bq.blocks_lru_first(), vec![0, 4, 5, 8, 9, 10]);
    assert!((16..=19).all(|b| l.state(0).rq.peek(b)));
    assert_eq!(l.resident_blocks(), (1..=3).chain(6..=15).collect::<Vec<_>>());
}

#[test]
fn pfc_md_test_vector_version_b_bypasses_constant_size_requests_whole() {
    let mut l = l2(100, "none", version(PfcVersion::B));
    for (i, first) in [0u64, 4, 8].into_iter().enumerate() {
        let out = access(&mut l, first, 4);
        assert_eq!(spans(&out), vec![(first, first + 3)], "request {i} read directly");
        let d = l.last_decision().unwrap();
        assert!(d.whole);
        assert_eq!((d.bypass_length, d.readmore_length, d.start_pfc, d.end_pfc), (4, 0, first + 4, first + 3));
        assert!((first + 4..=first + 7).all(|b| l.state(0).rq.peek(b)));
    }
    assert!(l.resident_blocks().is_empty(), "nothing reached the native path");
    assert_eq!(l.counters().requests, 0);
}

// Algorithm 2 branch by branch, on the state alone. `cached` is the set of blocks in L2.

fn state(v: PfcVersion) -> PfcState {
    PfcState::new(version(v), 100)
}

fn decide(st: &mut PfcState, s: u64, e: u64, cached: &[u64], full: bool) -> Decision {
    let c = cached.to_vec();
    let d = st.decide(s, e, &move |b| c.contains(&b), full);
    st.record(s, &d);
    d
}

#[test]
fn both_versions_bypass_everything_when_the_next_blocks_are_in_l2() {
    for v in [PfcVersion::A, PfcVersion::B] {
        let mut st = state(v);
        st.readmore_length = 7;
        // Small average first for B (n <= avg/2 must not trigger): the average is 4 before [10,11].
        for r in 0..3 {
            decide(&mut st, 100 * r, 100 * r + 7, &[], false);
        }
        st.readmore_length = 7;
        let d = decide(&mut st, 10, 11, &[12, 13], false);
        assert!(d.whole, "{v:?}");
        assert_eq!((d.bypass_length, d.readmore_length), (2, 0), "{v:?}");
        // One block short of the range: not a whole bypass.
        let d = decide(&mut st, 20, 21, &[22], false);
        assert!(!d.whole, "{v:?}");
    }
}

#[test]
fn version_a_first_check_zeroes_readmore_only_when_large_and_full() {
    let mut st = state(PfcVersion::A);
    decide(&mut st, 0, 1, &[], false); // avg 2
    st.readmore_length = 5;
    // Larger than the average, L2 full, a block cached (the loop keeps readmore): zeroed, no return.
    let d = decide(&mut st, 10, 12, &[10], true);
    assert!(!d.whole);
    assert_eq!(d.readmore_length, 0);
    // Same request, L2 not full: readmore kept.
    st.readmore_length = 5;
    let d = decide(&mut st, 20, 22, &[20], false);
    assert_eq!(d.readmore_length, 5);
    // The literal pseudocode lets the loop set it again (miss + readmore-queue hit) ...
    st.readmore_length = 5;
    st.rq.insert(31);
    let d = decide(&mut st, 30, 33, &[], true);
    assert_eq!(d.readmore_length, d.rm_size);
    // ... `a_sticky_zero` does not.
    let mut st = PfcState::new(PfcParams { a_sticky_zero: true, ..version(PfcVersion::A) }, 100);
    decide(&mut st, 0, 1, &[], false);
    st.rq.insert(31);
    let d = decide(&mut st, 30, 33, &[], true);
    assert_eq!(d.readmore_length, 0);
}

#[test]
fn version_b_bypasses_requests_over_half_the_average() {
    let mut st = state(PfcVersion::B);
    for r in 0..4 {
        decide(&mut st, 100 * r, 100 * r + 7, &[], false); // avg 8 (the first requests are bypassed)
    }
    // 3 blocks: the average with it is 35/5 = 7, so 3 <= avg/2 and the loop runs (no BQ hit: +1 from 8).
    let d = decide(&mut st, 1000, 1002, &[], false);
    assert!(!d.whole);
    assert_eq!(d.bypass_length, 3, "8 + 1, clamped to the request's 3 blocks");
    // 5 blocks > avg/2 = 40/6/2: bypassed whole.
    let d = decide(&mut st, 2000, 2004, &[], false);
    assert!(d.whole);
    assert_eq!((d.bypass_length, d.readmore_length, d.start_pfc), (5, 0, 2005));
}

#[test]
fn loop_branches_in_both_versions() {
    for v in [PfcVersion::A, PfcVersion::B] {
        // Requests of 1 block after a long one keep B's first check quiet (1 <= avg/2).
        let prime = |st: &mut PfcState| {
            decide(st, 10_000, 10_009, &[], false);
        };
        // No block in BQ: +1. Miss without readmore-queue hit: readmore 0.
        let mut st = state(v);
        prime(&mut st);
        st.bypass_length = 0;
        st.readmore_length = 3;
        let d = decide(&mut st, 50, 50, &[], false);
        assert_eq!((d.bypass_length, d.readmore_length), (1, 0), "{v:?}");
        // BQ hit and L2 miss: -1 (no +1).
        st.bypass_length = 1;
        st.bq.insert(60);
        let d = decide(&mut st, 60, 60, &[], false);
        assert_eq!(d.bypass_length, 0, "{v:?}");
        // BQ hit with L2 hit: unchanged; readmore kept.
        st.bypass_length = 1;
        st.readmore_length = 3;
        st.bq.insert(70);
        let d = decide(&mut st, 70, 70, &[70], false);
        assert_eq!((d.bypass_length, d.readmore_length), (1, 3), "{v:?}");
        // L2 miss with a readmore-queue hit: readmore rm_size (the average, rounded).
        st.rq.insert(80);
        let d = decide(&mut st, 80, 80, &[], false);
        assert_eq!(d.readmore_length, d.rm_size, "{v:?}");
        assert!(d.rm_size >= 1);
        // bypass_length never goes below 0.
        st.bypass_length = 0;
        st.bq.insert(90);
        let d = decide(&mut st, 90, 90, &[], false);
        assert_eq!(d.bypass_length, 0, "{v:?}");
    }
}

#[test]
fn average_excludes_outliers_in_version_a_only() {
    let mut a = state(PfcVersion::A);
    let mut b = state(PfcVersion::B);
    for st in [&mut a, &mut b] {
        decide(st, 0, 3, &[], false);
        decide(st, 10, 109, &[], false); // 100 blocks > 2 x 4
    }
    assert_eq!(a.avg(), 4.0);
    assert_eq!(b.avg(), 52.0);
}

#[test]
fn ablations_mask_one_action() {
    let run = |mode| {
        let mut l = l2(100, "none", PfcParams { mode, ..version(PfcVersion::A) });
        let mut ds = Vec::new();
        for first in (0..40).step_by(4) {
            access(&mut l, first, 4);
            ds.push(l.last_decision().unwrap());
        }
        ds
    };
    let full = run(PfcMode::Full);
    assert!(full.iter().any(|d| d.end_pfc > d.start_pfc + 3), "the sequential run reads more");
    for (i, d) in run(PfcMode::BypassOnly).iter().enumerate() {
        assert_eq!(d.end_pfc, 4 * i as u64 + 3, "bypass-only never reads more");
    }
    for (i, d) in run(PfcMode::ReadmoreOnly).iter().enumerate() {
        assert_eq!(d.start_pfc, 4 * i as u64, "readmore-only never bypasses");
    }
}

#[test]
fn per_client_contexts_are_separate() {
    let params = PfcParams { per_client: true, ..version(PfcVersion::A) };
    let mut l = l2(100, "none", params);
    let mut out = Vec::new();
    for i in 0..3u64 {
        l.access(&Request { client: 1, ..Request::read(100 * i, 4) }, 4, &mut out);
    }
    l.access(&Request { client: 2, ..Request::read(5000, 4) }, 4, &mut out);
    assert_eq!(l.state(1).bypass_length, 3);
    assert_eq!(l.state(2).bypass_length, 1);
    assert_eq!(l.state(0).bypass_length, 0, "the global context is untouched");
}

#[test]
fn config_errors_name_the_key() {
    let base = "[[level]]\nsize = 10\n[[level]]\nsize = 20\n";
    let e = HierarchyConfig::from_toml(&format!("{base}pfc = {{ version = 'C' }}\n")).unwrap_err();
    assert!(e.path.starts_with("level[1].pfc"), "{e}");
    let e = HierarchyConfig::from_toml(&format!("{base}pfc = {{ queue_size = 3 }}\n")).unwrap_err();
    assert!(e.path.starts_with("level[1].pfc"), "{e}");
    let cfg = HierarchyConfig::from_toml(&format!("{base}pfc = {{ queue_share = -1 }}\n")).unwrap();
    let e = Hierarchy::build(&cfg, 4096, None).err().unwrap();
    assert_eq!(e.path, "level[1].pfc.queue_share");
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 10\npfc = {}\n[[level]]\nsize = 20\n").unwrap();
    assert_eq!(Hierarchy::build(&cfg, 4096, None).err().unwrap().path, "level[0].pfc");
    for v in ["'000'", "'A'", "'published'"] {
        let cfg = HierarchyConfig::from_toml(&format!("{base}pfc = {{ version = {v} }}\n")).unwrap();
        assert_eq!(cfg.level[1].pfc.as_ref().unwrap().version, PfcVersion::A);
    }
    let cfg =
        HierarchyConfig::from_toml(&format!("{base}pfc = {{ version = '001', mode = 'bypass-only' }}\n")).unwrap();
    let p = cfg.level[1].pfc.as_ref().unwrap();
    assert_eq!((p.version, p.mode), (PfcVersion::B, PfcMode::BypassOnly));
}

// Engines.

fn hierarchy(l1: u64, l2: u64, pf: &str, v: &str) -> HierarchyConfig {
    HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = {l1}\nprefetcher = '{pf}'\n[[level]]\nsize = {l2}\nprefetcher = '{pf}'\npfc = {{ version = '{v}' }}\n"
    ))
    .unwrap()
}

fn timed(cfg: &HierarchyConfig, alpha: f64, disk: f64) -> HierarchyConfig {
    let mut t = cfg.clone();
    t.engine.kind = EngineKind::Timed;
    t.engine.replay = Some(Replay::Open);
    t.link = Some(LinkParams { alpha_ms: alpha, beta_ms_per_page: alpha / 10.0, ..LinkParams::default() });
    t.device = Some(
        serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": disk, "write_latency_ms": disk}))
            .unwrap(),
    );
    t
}

fn workload() -> impl Strategy<Value = Vec<Request>> {
    // Sequential runs and random jumps.
    prop::collection::vec((0u64..400, 1u32..9, 1usize..6), 1..60).prop_map(|v| {
        let mut out = Vec::new();
        for (start, len, runs) in v {
            for k in 0..runs {
                out.push(Request::read(start + (k as u64) * u64::from(len), len));
            }
        }
        out.into_iter().enumerate().map(|(i, r)| Request { time_ns: i as u64 * 1_000_000, ..r }).collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// With `cache_bypassed` too: the bypassed blocks are cached once the access's reads have all arrived,
    /// as the instant engine caches them after the access (cached when their own read arrived, they could
    /// come before the forwarded read of the same instant, with every block in flight, and were dropped).
    #[test]
    fn timed_with_zero_latency_counts_what_instant_counts(
        reqs in workload(), l1 in 2u64..32, l2 in 2u64..64, pf in 0usize..3, b in any::<bool>(),
        apart in any::<bool>(), cache_bypassed in any::<bool>()
    ) {
        let pf = ["none", "pfc-ra", "linux"][pf];
        let mut cfg = hierarchy(l1, l2, pf, if b { "B" } else { "A" });
        cfg.level[1].pfc.as_mut().unwrap().cache_bypassed = cache_bypassed;
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let i = run_instant(&mut VecSource::new(reqs.clone()), &mut h, &cfg.engine, &mut Silent).unwrap();
        let mut t = timed(&cfg, 0.0, 0.0);
        t.engine.prefetch_io = Some(if apart { PrefetchIo::Apart } else { PrefetchIo::Joined });
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let r = run_timed(&mut VecSource::new(reqs.clone()), &mut h, &t, &mut Silent).unwrap();
        for k in 0..2 {
            let (mut a, mut b) = (i.levels[k].counters.clone(), r.levels[k].counters.clone());
            if apart && k == 1 {
                // Reading the prefetch apart splits fetches; every decision and count is the same.
                prop_assert!(b.fetches >= a.fetches);
                prop_assert_eq!(a.fetched_blocks, b.fetched_blocks);
                (a.fetches, b.fetches) = (0, 0);
            }
            prop_assert_eq!(&a, &b, "level {}", k);
        }
    }

    #[test]
    fn timed_runs_complete_and_leave_nothing_pinned(
        reqs in workload(), l1 in 2u64..32, l2 in 2u64..64, pf in 0usize..3, b in any::<bool>(),
        apart in any::<bool>()
    ) {
        let pf = ["none", "pfc-ra", "linux"][pf];
        let mut t = timed(&hierarchy(l1, l2, pf, if b { "B" } else { "A" }), 0.5, 4.0);
        t.engine.prefetch_io = Some(if apart { PrefetchIo::Apart } else { PrefetchIo::Joined });
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let r = run_timed(&mut VecSource::new(reqs.clone()), &mut h, &t, &mut Silent).unwrap();
        let tm = r.timing.unwrap();
        prop_assert_eq!(tm.requests_incomplete, 0);
        prop_assert_eq!(tm.reads.requests, reqs.len() as u64);
        for l in &h.levels {
            prop_assert_eq!(l.pinned_count(), 0);
            prop_assert_eq!(l.check_invariants(), Ok(()));
        }
        prop_assert!(r.levels[1].counters.prefetch_conserved());
    }
}
