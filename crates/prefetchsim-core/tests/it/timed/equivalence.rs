//! With zero latencies the timed engine counts exactly what the instant engine counts.

use super::*;
use prefetchsim_core::level::{DemoteInsertPos, DemoteReadPos, DuPosition, Exclusive, LevelOptions};

// ---------------------------------------------------------------------------------------------------
// Equivalence with the instant engine

/// The instant engine and the timed engine with zero latencies count the same on `reqs` under `cfg`.
fn same_counts_at_zero_latency(cfg: &HierarchyConfig, reqs: &[Request]) -> Result<(), TestCaseError> {
    assert_same_counts(&run_i(cfg, reqs), &run_t(&zero_latency(cfg), reqs))
}

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
        same_counts_at_zero_latency(&cfg, &reqs)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy()
    ) {
        same_counts_at_zero_latency(&cfg, &reqs)?;
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
    if cfg.level.len() > 1 {
        with_exclusive_at(cfg, 1, ex)
    } else {
        cfg
    }
}

/// `cfg` with the exclusive caching of `ex` at its level `i` (its other options kept).
fn with_exclusive_at(cfg: HierarchyConfig, i: usize, ex: &LevelOptions) -> HierarchyConfig {
    let mut cfg = cfg;
    let l = &mut cfg.level[i];
    l.options.exclusive = ex.exclusive;
    l.options.du_position = ex.du_position;
    l.options.du_on_prefetch = ex.du_on_prefetch;
    l.options.demote_read_pos = ex.demote_read_pos;
    l.options.demote_insert_pos = ex.demote_insert_pos;
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
        same_counts_at_zero_latency(&cfg, &reqs)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote_under_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy(), ex in exclusive_variant()
    ) {
        let cfg = with_exclusive(cfg, &ex);
        same_counts_at_zero_latency(&cfg, &reqs)?;
    }
}

/// Three levels with the exclusive caching of `third` at the third and, when given, of `second` at the
/// second.
fn with_exclusive_below(cfg: HierarchyConfig, second: Option<&LevelOptions>, third: &LevelOptions) -> HierarchyConfig {
    let cfg = with_exclusive_at(cfg, 2, third);
    match second {
        Some(ex) => with_exclusive_at(cfg, 1, ex),
        None => cfg,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(200), ..ProptestConfig::default() })]

    /// DEMOTE or DU at the third of three levels, alone or under DEMOTE or DU at the second, with a
    /// warm-up: the second level serves several fetches of one request, and the blocks it evicts go down
    /// between the third level's accesses in the same order in both engines.
    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote_at_the_third_level(
        reqs in random_reqs(), seq in sequential_reqs(), which in any::<bool>(), cfg in hierarchy_of(3..4),
        w in 0u64..300, second in prop::option::of(exclusive_variant()), third in exclusive_variant()
    ) {
        let mut cfg = with_exclusive_below(cfg, second.as_ref(), &third);
        cfg.engine.warmup_requests = w;
        let reqs = if which { reqs } else { seq };
        same_counts_at_zero_latency(&cfg, &reqs)?;
    }

    #[test]
    fn zero_latency_counts_equal_the_instant_engine_with_demote_at_the_third_level_under_sequential_prefetchers(
        reqs in sequential_reqs(), cfg in sequential_hierarchy_of(3..4),
        second in prop::option::of(exclusive_variant()), third in exclusive_variant()
    ) {
        let cfg = with_exclusive_below(cfg, second.as_ref(), &third);
        same_counts_at_zero_latency(&cfg, &reqs)?;
    }
}

#[test]
fn a_block_a_second_fetch_evicts_while_the_first_is_unread_below_goes_down_after_that_read() {
    // L1 and L2 of two blocks over a DEMOTE L3 of one, all LRU. After 195 and 0, the request 192-196
    // hits 195 at L1, which sends L2 two fetches: 192-194, then 196. L2's access for 192-194 evicts 195
    // and 0 (demoted at once) and its own 192 (held until its read arrives); its access for 196 evicts
    // 193. 193's data reaches L2 only when L3 has served 192-194, so 193 goes down after that: L3 misses
    // 192-194 and 196 (six misses in all, no hit). Served level by level, the instant engine demoted 193
    // before L3's access for 192-194, which hit it (one hit, five misses), and the timed engine at zero
    // latency disagreed.
    let cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 2\n[[level]]\nsize = 2\n[[level]]\nsize = 1\noptions = { exclusive = 'demote' }\n",
    )
    .unwrap();
    let reqs = vec![Request::read(195, 1), Request::read(0, 1), Request::read(192, 5)];
    let i = run_i(&cfg, &reqs);
    let t = run_t(&zero_latency(&cfg), &reqs);
    let l3 = &i.levels[2].counters;
    assert_eq!((l3.hits, l3.misses, l3.demoted_in), (0, 6, 4), "{l3:?}");
    assert_same_counts(&i, &t).unwrap();
}
