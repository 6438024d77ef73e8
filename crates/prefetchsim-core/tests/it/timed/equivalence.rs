//! With zero latencies the timed engine counts exactly what the instant engine counts.

use super::*;

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

/// `cfg` with its second level DEMOTE, when it has one.
fn with_demote(cfg: HierarchyConfig) -> HierarchyConfig {
    let mut cfg = cfg;
    if let Some(l) = cfg.level.get_mut(1) {
        l.options.exclusive = prefetchsim_core::level::exclusive::Exclusive::Demote;
    }
    cfg
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    /// DEMOTE at the second level (with a warm-up): a block an access evicts while reading it goes down
    /// when its read arrives (timed) or after the level below served the access's reads (instant); with
    /// zero latencies both engines count the same.
    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote(
        reqs in random_reqs(), seq in sequential_reqs(), which in any::<bool>(), cfg in hierarchy(), w in 0u64..300
    ) {
        let mut cfg = with_demote(cfg);
        cfg.engine.warmup_requests = w;
        let reqs = if which { reqs } else { seq };
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote_under_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy()
    ) {
        let cfg = with_demote(cfg);
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
    }
}
