//! Invariants of levels and hierarchies under random workloads (design.md §8): capacity is never
//! exceeded, hits + misses = demand accesses, every prefetched block is accounted for, runs are
//! deterministic, and a chain of levels sees exactly the misses and prefetches of the level above.

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::{HierarchyConfig, LevelConfig, SizeSpec};
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::{AnyLevel, CacheLevel, Level, LevelOptions};
use prefetchsim_core::policy::{fifo::Fifo, lru::Lru, FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::obl::{Obl, OblParams, OblVariant};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

fn requests() -> impl Strategy<Value = Vec<Request>> {
    // Mostly short runs over a small address space, so that hits, prefetch hits and evictions all happen.
    prop::collection::vec((0u64..200, 1u32..6), 1..400)
        .prop_map(|v| v.into_iter().map(|(b, n)| Request::read(b, n)).collect())
}

fn variant() -> impl Strategy<Value = OblVariant> {
    prop_oneof![
        Just(OblVariant::Always),
        Just(OblVariant::OnMiss),
        Just(OblVariant::Tagged),
        Just(OblVariant::Libcachesim)
    ]
}

fn check_level(level: &mut dyn AnyLevel, reqs: &[Request]) -> Result<(), TestCaseError> {
    let mut out: Vec<Fetch> = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        level.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(level.len() <= level.capacity(), "{} resident > capacity {}", level.len(), level.capacity());
        level.check_invariants().map_err(TestCaseError::fail)?;
        for f in &out {
            prop_assert!(f.demand_len <= f.len);
        }
    }
    level.finish();
    let c = level.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_hits <= c.hits);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    Ok(())
}

/// Requests over small block numbers that now and then jump far (past the block table's direct array), so
/// that the index switches to hashing in the middle of a run.
fn requests_with_far_blocks() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u64..200, 1u32..4, any::<bool>(), 0u64..4), 1..300).prop_map(|v| {
        v.into_iter()
            .map(|(b, n, far, which)| {
                let base = if far { [1 << 30, 1 << 40, u64::MAX - 1000, 5 << 20][which as usize] } else { 0 };
                Request::read(base + b, n)
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn far_block_numbers_switch_the_index_without_losing_blocks(reqs in requests_with_far_blocks(), cap in 1usize..48) {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let pf = Box::new(Obl::new(OblParams { variant: OblVariant::Always, k: 1 }));
        let mut level = Level::new(cap, Lru::new(&env), pf, LevelOptions::default());
        check_level(&mut level, &reqs)?;
        // The same requests on a table that hashes from the start give the same counters.
        let far: Vec<Request> = std::iter::once(Request::read(u64::MAX - 1, 1)).chain(reqs.iter().copied()).collect();
        let mut hashed = Level::new(cap, Lru::new(&env), Box::new(Obl::new(OblParams { variant: OblVariant::Always, k: 1 })), LevelOptions::default());
        let mut out = Vec::new();
        hashed.access(&far[0], 1, &mut out);
        let mut plain = Level::new(cap, Lru::new(&env), Box::new(Obl::new(OblParams { variant: OblVariant::Always, k: 1 })), LevelOptions::default());
        plain.access(&far[0], 1, &mut out);
        for r in &reqs {
            hashed.access(r, r.len, &mut out);
            plain.access(r, r.len, &mut out);
        }
        prop_assert_eq!(hashed.counters(), plain.counters());
        prop_assert_eq!(hashed.resident_blocks(), plain.resident_blocks());
    }

    #[test]
    fn lru_level_keeps_capacity_counts_and_prefetch_accounting(
        reqs in requests(), cap in 1usize..64, v in variant(), stay in any::<bool>(), chances in 0u8..3
    ) {
        let first_hit = if stay { FirstHit::Stay } else { FirstHit::Promote };
        let env = PolicyEnv { capacity: cap, first_hit };
        let opts = LevelOptions { first_hit, pf_second_chance: chances, ..LevelOptions::default() };
        let pf = Box::new(Obl::new(OblParams { variant: v, k: 2 }));
        let mut level = Level::new(cap, Lru::new(&env), pf, opts);
        check_level(&mut level, &reqs)?;
    }

    #[test]
    fn fifo_level_keeps_capacity_counts_and_prefetch_accounting(
        reqs in requests(), cap in 1usize..64, v in variant(), consume in any::<bool>()
    ) {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let opts = LevelOptions { consume_on_hit: consume, ..LevelOptions::default() };
        let pf = Box::new(Obl::new(OblParams { variant: v, k: 1 }));
        let mut level = Level::new(cap, Fifo::new(&env), pf, opts);
        check_level(&mut level, &reqs)?;
    }

    #[test]
    fn identical_inputs_give_identical_results(reqs in requests(), cap in 1u64..64) {
        let cfg = two_levels(cap, "lru", "fifo");
        let run = |reqs: &Vec<Request>| {
            let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
            run_instant(&mut VecSource::new(reqs.clone()), &mut h, &cfg.engine, &mut Silent).unwrap()
        };
        prop_assert_eq!(run(&reqs), run(&reqs));
    }

    #[test]
    fn a_lower_level_sees_exactly_the_fetches_of_the_level_above(reqs in requests(), cap in 1u64..32) {
        let cfg = two_levels(cap, "lru", "lru");
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let r = run_instant(&mut VecSource::new(reqs.clone()), &mut h, &cfg.engine, &mut Silent).unwrap();
        let (l1, l2) = (&r.levels[0].counters, &r.levels[1].counters);
        prop_assert_eq!(l1.fetched_blocks, l2.demand_accesses + l2.upper_prefetch_accesses);
        prop_assert_eq!(l1.fetches, l2.requests);
        // L1's demand misses are L2's demand accesses; its prefetches arrive as prefetch-class blocks.
        prop_assert_eq!(l1.misses, l2.demand_accesses);
        prop_assert_eq!(l1.prefetch_issued, l2.upper_prefetch_accesses);
        for l in &h.levels {
            l.check_invariants().map_err(TestCaseError::fail)?;
        }
    }
}

fn two_levels(cap: u64, p1: &str, p2: &str) -> HierarchyConfig {
    let mut l1 = LevelConfig::new(SizeSpec::Blocks(cap), p1);
    l1.prefetcher = ComponentSpec::named("obl");
    let mut l2 = LevelConfig::new(SizeSpec::OfAbove(2.0), p2);
    l2.prefetcher = ComponentSpec::named("obl");
    HierarchyConfig { level: vec![l1, l2], ..HierarchyConfig::default() }
}

#[test]
fn lru_evicts_the_least_recently_used_block() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 3\n").unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    h.levels[0].record_evictions(true);
    let mut out = Vec::new();
    for b in [1, 2, 3, 1, 4, 5] {
        out.clear();
        h.levels[0].access(&Request::read(b, 1), 1, &mut out);
    }
    assert_eq!(h.levels[0].take_evicted(), vec![2, 3]);
    assert_eq!(h.levels[0].resident_blocks(), vec![1, 4, 5]);
}

#[test]
fn a_demand_miss_and_its_synchronous_prefetch_form_one_fetch() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 16\nprefetcher = { name = 'obl', variant = 'always' }\n")
        .unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut out = Vec::new();
    h.levels[0].access(&Request::read(10, 3), 3, &mut out);
    assert_eq!(out, vec![Fetch { first: 10, len: 4, demand_len: 3, stream: 0, client: 0 }]);
    out.clear();
    // All hits: only the prefetch of block 14 goes down, as a prefetch-only fetch.
    h.levels[0].access(&Request::read(11, 3), 3, &mut out);
    assert_eq!(out, vec![Fetch { first: 14, len: 1, demand_len: 0, stream: 0, client: 0 }]);
    let c = h.levels[0].counters();
    assert_eq!((c.hits, c.prefetch_hits, c.misses, c.prefetch_issued), (3, 1, 3, 2));
}

#[test]
fn warmup_requests_are_not_counted() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[engine]\nwarmup_requests = 2\n").unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let reqs = [1, 2, 1, 2, 3].map(|b| Request::read(b, 1)).to_vec();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    let c = &r.levels[0].counters;
    assert_eq!((r.requests, r.warmup_requests, c.demand_accesses, c.hits, c.misses), (5, 2, 3, 2, 1));
}

#[test]
fn a_limit_stops_the_run_early() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[engine]\nlimit = 3\n").unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let reqs = (0..10).map(|b| Request::read(b, 1)).collect();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    assert_eq!(r.requests, 3);
    assert!(r.stopped_early);
}

#[test]
fn unknown_policy_and_prefetcher_names_list_the_choices() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 4\npolicy = 'lur'\n").unwrap();
    let e = Hierarchy::build(&cfg, 4096, None).err().unwrap();
    assert_eq!(e.path, "level[0].policy");
    assert!(e.message.contains("unknown policy 'lur'") && e.message.contains("lru, fifo"), "{e}");
    let cfg =
        HierarchyConfig::from_toml("[[level]]\nsize = 4\nprefetcher = { name = 'obl', varaint = 'x' }\n").unwrap();
    let e = Hierarchy::build(&cfg, 4096, None).err().unwrap();
    assert!(e.to_string().contains("level[0].prefetcher") && e.to_string().contains("varaint"), "{e}");
}

#[test]
fn an_impossible_size_is_an_error_naming_the_level() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = '1KiB'\n").unwrap();
    let e = Hierarchy::build(&cfg, 4096, None).err().unwrap();
    assert_eq!(e.path, "level[0].size");
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = '5%'\n").unwrap();
    assert!(Hierarchy::build(&cfg, 4096, None).is_err(), "a footprint share without a footprint");
    assert!(HierarchyConfig::from_toml("level = []").is_err());
}

#[test]
fn mithril_stacks_over_amp_with_prefetch_hits_and_full_accounting() {
    let cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 64\nprefetcher = { name = 'stack', first = { name = 'mithril', preset = 'libcachesim' }, second = 'amp' }\n",
    )
    .unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    // Two interleaved sequential scans repeated, with a sporadic association (900 -> 5000) in between.
    let mut reqs = Vec::new();
    for round in 0..30u64 {
        for i in 0..20u64 {
            reqs.push(Request::read(1000 * (round % 3) + i, 1));
            if i == 10 {
                reqs.push(Request::read(900, 1));
                reqs.push(Request::read(5000, 1));
            }
        }
    }
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    let c = &r.levels[0].counters;
    assert!(c.prefetch_hits > 0 && c.prefetch_conserved(), "{c:?}");
    h.levels[0].check_invariants().unwrap();
}
