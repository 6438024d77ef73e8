//! Exclusive caching (`shared/docs/algorithms/multilevel.md`): DU sends the blocks L2 passes up to its
//! eviction end; DEMOTE caches L1's evictions at L2 and drops what L2 sends up, so that without an L2
//! prefetcher no block is ever in both levels (property, both engines).

use prefetchsim_core::config::{EngineKind, HierarchyConfig, LevelConfig, Replay, SizeSpec};
use prefetchsim_core::engine::instant::serve;
use prefetchsim_core::engine::{Hierarchy, Silent, VecSource};
use prefetchsim_core::level::exclusive::Exclusive;
use prefetchsim_core::link::LinkParams;
use prefetchsim_core::request::{Fetch, Request};
use prefetchsim_core::run::run_timed;
use proptest::prelude::*;

fn two_levels(l1: u64, l2: u64, l1_pf: &str, l2_pf: &str, ex: Exclusive) -> HierarchyConfig {
    let mut a = LevelConfig::new(SizeSpec::Blocks(l1), "lru");
    a.prefetcher = serde_json::from_value(serde_json::json!(l1_pf)).unwrap();
    let mut b = LevelConfig::new(SizeSpec::Blocks(l2), "lru");
    b.prefetcher = serde_json::from_value(serde_json::json!(l2_pf)).unwrap();
    b.options.exclusive = ex;
    let mut cfg = HierarchyConfig::from_toml("[[level]]\nsize = 1\n").unwrap();
    cfg.level = vec![a, b];
    cfg
}

fn feed(h: &mut Hierarchy, reqs: &[Request]) {
    let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); h.levels.len()];
    for r in reqs {
        serve(h, &mut scratch, r);
    }
}

fn reads(blocks: &[u64]) -> Vec<Request> {
    blocks.iter().map(|&b| Request::read(b, 1)).collect()
}

#[test]
fn du_gives_blocks_sent_up_the_highest_eviction_priority() {
    let run = |ex| {
        let mut h = Hierarchy::build(&two_levels(1, 3, "none", "none", ex), 4096, None).unwrap();
        feed(&mut h, &reads(&[1, 2, 3, 4]));
        h.levels[1].resident_blocks()
    };
    // Inclusive LRU evicts the oldest block; DU evicts the block sent up last.
    assert_eq!(run(Exclusive::None), vec![2, 3, 4]);
    assert_eq!(run(Exclusive::Du), vec![1, 2, 4]);
}

#[test]
fn du_evicts_blocks_sent_up_before_blocks_l2_prefetched_on_its_own() {
    // L2 (6 blocks, RA(4)) prefetches 1-4 after block 0 and 51-54 after block 50. The blocks sent up (0
    // and 50) go first under DU; inclusive LRU keeps 50 (recent) and evicts three prefetched blocks.
    let run = |ex| {
        let mut h = Hierarchy::build(&two_levels(1, 6, "none", "pfc-ra", ex), 4096, None).unwrap();
        feed(&mut h, &reads(&[0, 50]));
        h.levels[1].resident_blocks()
    };
    assert_eq!(run(Exclusive::Du), vec![1, 2, 51, 52, 53, 54]);
    assert_eq!(run(Exclusive::None), vec![1, 50, 51, 52, 53, 54]);
}

#[test]
fn demote_caches_l1_evictions_and_drops_blocks_sent_up() {
    let mut h = Hierarchy::build(&two_levels(2, 4, "none", "none", Exclusive::Demote), 4096, None).unwrap();
    feed(&mut h, &reads(&[1, 2, 3]));
    // Misses are not cached at L2; L1's eviction of 1 came down.
    assert_eq!(h.levels[0].resident_blocks(), vec![2, 3]);
    assert_eq!(h.levels[1].resident_blocks(), vec![1]);
    assert_eq!(h.levels[1].counters().demoted_in, 1);
    feed(&mut h, &reads(&[1]));
    // 1 hit at L2 and went up (leaving L2); L1 evicted 2, which came down.
    assert_eq!(h.levels[1].counters().hits, 1);
    assert_eq!(h.levels[0].resident_blocks(), vec![1, 3]);
    assert_eq!(h.levels[1].resident_blocks(), vec![2]);
}

#[test]
fn exclusive_on_the_first_level_is_an_error_naming_the_key() {
    let mut cfg = two_levels(2, 4, "none", "none", Exclusive::None);
    cfg.level[0].options.exclusive = Exclusive::Du;
    let e = Hierarchy::build(&cfg, 4096, None).err().unwrap();
    assert_eq!(e.path, "level[0].options.exclusive");
    let e = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[[level]]\nsize = 8\noptions = { exclusive = 'dup' }\n")
        .unwrap_err();
    assert!(e.path.starts_with("level[1].options"), "{e}");
}

fn workload() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u64..64, 1u32..5), 1..200)
        .prop_map(|v| v.into_iter().map(|(b, l)| Request::read(b, l)).collect())
}

fn disjoint(h: &Hierarchy) -> Result<(), String> {
    let l2 = h.levels[1].resident_blocks();
    for b in h.levels[0].resident_blocks() {
        if l2.binary_search(&b).is_ok() {
            return Err(format!("block {b} is in both levels"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn demote_never_holds_a_block_at_both_levels(
        reqs in workload(), l1 in 1u64..8, l2 in 1u64..16, ra in any::<bool>()
    ) {
        let pf = if ra { "pfc-ra" } else { "none" };
        let cfg = two_levels(l1, l2, pf, "none", Exclusive::Demote);
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        for r in &reqs {
            serve(&mut h, &mut scratch, r);
            prop_assert_eq!(disjoint(&h), Ok(()));
            for l in &h.levels {
                prop_assert_eq!(l.check_invariants(), Ok(()));
            }
        }
        // The timed engine (real latencies, requests overlapping) ends disjoint too.
        let mut t = cfg.clone();
        t.engine.kind = EngineKind::Timed;
        t.engine.replay = Some(Replay::Open);
        t.link = Some(LinkParams { alpha_ms: 1.0, beta_ms_per_page: 0.1, ..LinkParams::default() });
        t.device = Some(serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": 3.0})).unwrap());
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let reqs: Vec<Request> = reqs.iter().enumerate().map(|(i, r)| Request { time_ns: i as u64 * 500_000, ..*r }).collect();
        run_timed(&mut VecSource::new(reqs), &mut h, &t, &mut Silent).unwrap();
        prop_assert_eq!(disjoint(&h), Ok(()));
        prop_assert_eq!(h.levels[1].pinned_count(), 0);
    }
}

#[test]
fn demoted_blocks_land_at_l2_only_after_the_link_transfer() {
    // L1 of one block: reading 2 at 20 ms evicts 1, demoted over the link (6 ms + 2 ms per page: it lands
    // at 28 ms). A read of 1 at 21 ms reaches L2 at 27 ms, before the demotion: an L2 miss. At 40 ms
    // (L2 at 46 ms) it is a hit. Delivering demotions at once would make both hits.
    let run = |t_ms: u64| {
        let mut t = two_levels(1, 4, "none", "none", Exclusive::Demote);
        t.engine.kind = EngineKind::Timed;
        t.engine.replay = Some(Replay::Open);
        t.link = Some(LinkParams { alpha_ms: 6.0, beta_ms_per_page: 2.0, ..LinkParams::default() });
        t.device = Some(serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": 3.0})).unwrap());
        let ms = 1_000_000;
        let reqs = [(0, 1), (20, 2), (t_ms, 1)].map(|(at, b)| Request { time_ns: at * ms, ..Request::read(b, 1) });
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let r = run_timed(&mut VecSource::new(reqs.to_vec()), &mut h, &t, &mut Silent).unwrap();
        r.levels[1].counters.hits
    };
    assert_eq!(run(21), 0);
    assert_eq!(run(40), 1);
}
