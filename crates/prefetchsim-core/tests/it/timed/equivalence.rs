//! With zero latencies the timed engine counts exactly what the instant engine counts.

use super::*;
use prefetchsim_core::level::{DemoteInsertPos, DemoteReadPos, DuPosition, Exclusive, LevelOptions};

// ---------------------------------------------------------------------------------------------------
// Equivalence with the instant engine

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_on_random_workloads(reqs in random_reqs(), cfg in hierarchy()) {
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
        let timing = t.timing.as_ref().unwrap();
        prop_assert_eq!(timing.reads.max_ms, 0.0);
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_on_sequential_workloads(reqs in sequential_reqs(), cfg in hierarchy()) {
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy()
    ) {
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }

    #[test]
    fn zero_latency_with_warmup_counts_equal_the_instant_engine(reqs in random_reqs(), cfg in hierarchy(), w in 0u64..300) {
        let mut cfg = cfg;
        cfg.engine.warmup_requests = w;
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
        prop_assert_eq!(i.warmup_requests, t.warmup_requests);
    }
}

/// The exclusive-caching variants of the second level: DEMOTE with each `demote_read_pos` and
/// `demote_insert_pos`, DU with each `du_position` and `du_on_prefetch`.
fn exclusive_variant() -> impl Strategy<Value = LevelOptions> {
    let demote = (
        prop::option::of(prop_oneof![Just(DemoteReadPos::LruEnd), Just(DemoteReadPos::None)]),
        prop::option::of(prop_oneof![Just(DemoteInsertPos::Mru), Just(DemoteInsertPos::LruEnd)]),
    )
        .prop_map(|(demote_read_pos, demote_insert_pos)| LevelOptions {
            exclusive: Exclusive::Demote,
            demote_read_pos,
            demote_insert_pos,
            ..LevelOptions::default()
        });
    let du = (
        prop::option::of(prop_oneof![Just(DuPosition::LruEnd), Just(DuPosition::EvictNow)]),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(du_position, du_on_prefetch)| LevelOptions {
            exclusive: Exclusive::Du,
            du_position,
            du_on_prefetch,
            ..LevelOptions::default()
        });
    prop_oneof![3 => demote, 1 => du]
}

/// `cfg` with the exclusive caching of `ex` at its second level, when it has one (its other options
/// kept).
fn with_exclusive(cfg: HierarchyConfig, ex: &LevelOptions) -> HierarchyConfig {
    let mut cfg = cfg;
    if let Some(l) = cfg.level.get_mut(1) {
        l.options.exclusive = ex.exclusive;
        l.options.du_position = ex.du_position;
        l.options.du_on_prefetch = ex.du_on_prefetch;
        l.options.demote_read_pos = ex.demote_read_pos;
        l.options.demote_insert_pos = ex.demote_insert_pos;
    }
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    /// DEMOTE (each `demote_read_pos` and `demote_insert_pos`) or DU (each `du_position` and
    /// `du_on_prefetch`) at the second level, with a warm-up: a block an access evicts while reading it
    /// goes down when its read arrives (timed) or after the level below served the access's reads
    /// (instant); with zero latencies both engines count the same.
    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote(
        reqs in random_reqs(), seq in sequential_reqs(), which in any::<bool>(), cfg in hierarchy(), w in 0u64..300,
        ex in exclusive_variant()
    ) {
        let mut cfg = with_exclusive(cfg, &ex);
        cfg.engine.warmup_requests = w;
        let reqs = if which { reqs } else { seq };
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote_under_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy(), ex in exclusive_variant()
    ) {
        let cfg = with_exclusive(cfg, &ex);
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }
}
