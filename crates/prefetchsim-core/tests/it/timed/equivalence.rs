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
