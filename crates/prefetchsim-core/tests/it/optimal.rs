//! Offline bounds (docs/optimal.md): Belady's MIN (`opt`) against brute force and against every registered
//! policy; Cao et al.'s Aggressive and Conservative against the brute-force optimum of the integrated
//! problem and their published bounds; the errors where `opt` cannot run.

use prefetchsim_core::build::registry::POLICIES;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, RequestSource, Silent, SourceError, VecSource};
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::optimal::integrated::{aggressive, conservative, demand, min_replacements, DiskModel};
use prefetchsim_core::optimal::single_disk::single_disk;
use prefetchsim_core::optimal::{brute, prepare, NextUse};
use prefetchsim_core::request::Request;
use prefetchsim_core::run::run_timed;
use proptest::prelude::*;

/// Build `toml`'s hierarchy, prepare its `opt` levels from `reqs` and run `reqs` through it.
fn run(toml: &str, reqs: &[Request]) -> Result<RunResult, SourceError> {
    run_kept(toml, reqs).map(|(r, _)| r)
}

/// [`run`], also returning the hierarchy (what its levels hold at the end).
fn run_kept(toml: &str, reqs: &[Request]) -> Result<(RunResult, Hierarchy), SourceError> {
    let cfg = HierarchyConfig::from_toml(toml)?;
    let mut h = Hierarchy::build(&cfg, 4096, None)?;
    let mut open = || Ok(Box::new(VecSource::new(reqs.to_vec())) as Box<dyn RequestSource>);
    prepare(&cfg, &mut h, None, &mut open, None)?;
    let r = run_instant(&mut VecSource::new(reqs.to_vec()), &mut h, &cfg.engine, &mut Silent)?;
    Ok((r, h))
}

fn one_level(policy: &str, size: usize, prefetcher: &str) -> String {
    format!("[[level]]\nsize = {size}\npolicy = '{policy}'\nprefetcher = '{prefetcher}'\n")
}

fn reads(blocks: &[u64]) -> Vec<Request> {
    blocks.iter().map(|&b| Request::read(b, 1)).collect()
}

/// One-block requests over a small address space: hits, misses and evictions all happen. (With requests
/// of several blocks `opt` is no lower bound: `with_multi_block_requests_opt_is_not_a_lower_bound`.)
fn requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec(0u64..40, 1..200).prop_map(|v| reads(&v))
}

/// Every registered policy but `opt` that builds alone with no prefetcher.
fn other_policies() -> Vec<&'static str> {
    POLICIES
        .iter()
        .map(|e| e.name)
        .filter(|&n| {
            n != "opt"
                && HierarchyConfig::from_toml(&one_level(n, 4, "none"))
                    .is_ok_and(|c| Hierarchy::build(&c, 4096, None).is_ok())
        })
        .collect()
}

#[test]
fn the_comparison_covers_every_registered_policy() {
    let others = other_policies();
    assert_eq!(others.len() + 1, POLICIES.len(), "every policy but opt runs without a prefetcher: {others:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Demand paging on one-block requests: `opt` misses exactly as often as the best of all eviction
    /// sequences, and as Belady's MIN computed directly.
    #[test]
    fn opt_equals_brute_force_on_tiny_traces(blocks in prop::collection::vec(0u64..6, 1..=20), k in 1usize..=4) {
        let r = run(&one_level("opt", k, "none"), &reads(&blocks)).unwrap();
        let best = brute::min_misses(&blocks, k).unwrap();
        prop_assert_eq!(r.levels[0].counters.misses, best);
        prop_assert_eq!(min_replacements(&blocks, k).len() as u64, best);
    }

    /// No registered policy misses less than `opt` on any trace of one-block requests (demand paging), and
    /// `opt` keeps the level's invariants.
    #[test]
    fn opt_is_never_worse_than_any_registered_policy(reqs in requests(), size in 1usize..24) {
        let opt = run(&one_level("opt", size, "none"), &reqs).unwrap().levels[0].counters.misses;
        for p in other_policies() {
            let m = run(&one_level(p, size, "none"), &reqs).unwrap().levels[0].counters.misses;
            prop_assert!(opt <= m, "opt {} misses > {} {}", opt, p, m);
        }
    }

    /// Below another level, `opt` is MIN for the stream the level above sends it: no policy at the second
    /// level misses less there. The level above prefetches nothing: a prefetch sends multi-block requests
    /// down, where `opt` is no lower bound. With `opt` at both levels, each is prepared in turn.
    #[test]
    fn opt_at_a_lower_level_beats_every_policy_there(reqs in requests(), l1 in 1usize..8, l2 in 1usize..24,
                                                      upper in prop::sample::select(vec!["lru", "fifo", "arc", "opt"])) {
        let upper_pf = "none";
        let two = |p2: &str| format!("{}[[level]]\nsize = {l2}\npolicy = '{p2}'\n", one_level(upper, l1, upper_pf));
        let all_misses = |r: &RunResult| {
            let c = &r.levels[1].counters;
            c.misses + c.upper_prefetch_accesses - c.upper_prefetch_hits
        };
        let opt = run(&two("opt"), &reqs).unwrap();
        for p in other_policies() {
            let r = run(&two(p), &reqs).unwrap();
            prop_assert_eq!(&r.levels[0].counters, &opt.levels[0].counters, "the level above is the same");
            let (o, m) = (all_misses(&opt), all_misses(&r));
            prop_assert!(o <= m, "level 2: opt {} misses > {} {}", o, p, m);
        }
    }

    /// Aggressive and Conservative against the brute-force optimum of the single-disk problem: never
    /// better than it, and within Cao et al.'s bounds: Aggressive ≤ min(1 + F/k, 2) × optimum,
    /// Conservative ≤ 2 × optimum; Conservative fetches as few blocks as MIN.
    #[test]
    fn aggressive_and_conservative_meet_their_bounds(blocks in prop::collection::vec(0u64..7, 1..=16),
                                                     k in 1usize..=4, f in 1u64..=6) {
        let m = DiskModel { cache: k, fetch_time: f };
        let best = brute::min_elapsed(&blocks, m).unwrap();
        let a = aggressive(&blocks, m).unwrap();
        let c = conservative(&blocks, m).unwrap();
        let k64 = k as u64;
        prop_assert!(best <= a.elapsed && best <= c.elapsed, "optimum {} > aggressive {:?} or conservative {:?}", best, a, c);
        prop_assert!(a.elapsed * k64 <= (k64 + f).min(2 * k64) * best, "aggressive {:?} vs optimum {}", a, best);
        prop_assert!(c.elapsed <= 2 * best, "conservative {:?} vs optimum {}", c, best);
        let min = brute::min_misses(&blocks, k).unwrap();
        prop_assert_eq!(c.fetches, min);
        prop_assert!(best <= demand(blocks.len(), min, m).elapsed);
    }
}

/// On 5 0 1 5 (k = 2, F = 4), Aggressive evicts 5 to prefetch 1 as soon as 0 arrives (5's next reference,
/// 3, is after 1's, 2: no harm by its rule), then must fetch 5 again: 17 units, where demand fetching under
/// MIN takes 16 and the optimum (Conservative here) 15.
#[test]
fn aggressive_can_be_slower_than_demand_min() {
    let m = DiskModel { cache: 2, fetch_time: 4 };
    assert_eq!(aggressive(&[5, 0, 1, 5], m).unwrap().elapsed, 17);
    assert_eq!(conservative(&[5, 0, 1, 5], m).unwrap().elapsed, 15);
    assert_eq!(brute::min_elapsed(&[5, 0, 1, 5], m).unwrap(), 15);
    assert_eq!(demand(4, 3, m).elapsed, 16);
}

#[test]
fn opt_evicts_the_block_used_furthest_ahead() {
    // Cache 2: 1 2 3 — at 3, block 1 is used again next (position 3), 2 later (4): evict 2.
    let r = run(&one_level("opt", 2, "none"), &reads(&[1, 2, 3, 1, 2])).unwrap();
    assert_eq!(r.levels[0].counters.misses, 4);
    let lru = run(&one_level("lru", 2, "none"), &reads(&[1, 2, 3, 1, 2])).unwrap();
    assert_eq!(lru.levels[0].counters.misses, 5);
}

#[test]
fn a_prefetched_block_is_kept_for_its_next_use() {
    // OBL prefetches block b+1 on each miss. Cache 2: 10 misses (11 prefetched), 50 misses (51 prefetched,
    // evicting one of 10 / 11: 10 is never used again, 11 next), 11 hits. LRU evicts 11 (older) instead.
    let reqs = reads(&[10, 50, 11]);
    let opt = run(&one_level("opt", 2, "obl"), &reqs).unwrap();
    assert_eq!(opt.levels[0].counters.prefetch_hits, 1);
    let lru = run(&one_level("lru", 2, "obl"), &reqs).unwrap();
    assert_eq!(lru.levels[0].counters.prefetch_hits, 0);
}

#[test]
fn opt_must_be_prepared_and_runs_in_the_instant_engine_only() {
    let cfg = HierarchyConfig::from_toml(&one_level("opt", 2, "none")).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let e = run_instant(&mut VecSource::new(reads(&[1, 2])), &mut h, &cfg.engine, &mut Silent).unwrap_err();
    assert!(e.to_string().contains("level[0].policy") && e.to_string().contains("optimal::prepare"), "{e}");

    let timed =
        HierarchyConfig::from_toml(&format!("[engine]\nkind = 'timed'\n{}", one_level("opt", 2, "none"))).unwrap();
    let mut h = Hierarchy::build(&timed, 4096, None).unwrap();
    let e = run_timed(&mut VecSource::new(reads(&[1, 2])), &mut h, &timed, &mut Silent).unwrap_err();
    assert!(e.to_string().contains("instant engine only"), "{e}");
    let mut open = || Ok(Box::new(VecSource::new(reads(&[1]))) as Box<dyn RequestSource>);
    let e = prepare(&timed, &mut h, None, &mut open, None).unwrap_err();
    assert!(e.to_string().contains("instant engine only"), "{e}");

    let fan = HierarchyConfig::from_toml("[[level]]\nsize = 2\npolicy = 'opt'\ninstances = 2\n").unwrap();
    let mut h = Hierarchy::build(&fan, 4096, None).unwrap();
    let e = prepare(&fan, &mut h, None, &mut open, None).unwrap_err();
    assert!(e.to_string().contains("one cache"), "{e}");
    let e = run_instant(&mut VecSource::new(reads(&[1, 2])), &mut h, &fan.engine, &mut Silent).unwrap_err();
    assert!(e.to_string().contains("one cache"), "{e}");
}

#[test]
fn a_run_of_another_stream_than_the_prepared_one_is_refused() {
    let cfg = HierarchyConfig::from_toml(&one_level("opt", 2, "none")).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut open = || Ok(Box::new(VecSource::new(reads(&[1, 2, 3, 1]))) as Box<dyn RequestSource>);
    prepare(&cfg, &mut h, None, &mut open, None).unwrap();
    let e = run_instant(&mut VecSource::new(reads(&[1, 2, 3, 2])), &mut h, &cfg.engine, &mut Silent).unwrap_err();
    assert!(e.to_string().contains("access 3 of this level (block 2)"), "{e}");

    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    prepare(&cfg, &mut h, None, &mut open, None).unwrap();
    let e = run_instant(&mut VecSource::new(reads(&[1, 2, 3])), &mut h, &cfg.engine, &mut Silent).unwrap_err();
    assert!(e.to_string().contains("served 3 accesses") && e.to_string().contains("for 4"), "{e}");
}

#[test]
fn next_uses_given_by_the_trace_replace_the_pre_pass() {
    let blocks = [1, 2, 3, 1, 2, 4, 1, 2, 3];
    let mut next = vec![-1i64; blocks.len()];
    for (t, b) in blocks.iter().enumerate() {
        next[t] = blocks[t + 1..].iter().position(|x| x == b).map_or(-1, |p| (t + 1 + p) as i64);
    }
    let given = NextUse::from_next_access(&blocks, &next).unwrap();
    let cfg = HierarchyConfig::from_toml(&one_level("opt", 3, "none")).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut never = || -> Result<Box<dyn RequestSource>, SourceError> { Err("no pre-pass expected".into()) };
    prepare(&cfg, &mut h, None, &mut never, Some(given)).unwrap();
    let r = run_instant(&mut VecSource::new(reads(&blocks)), &mut h, &cfg.engine, &mut Silent).unwrap();
    assert_eq!(r.levels[0].counters.misses, 5);
}

/// With multi-block requests `opt` is not a lower bound (docs/optimal.md): a level serves a request's
/// resident blocks before it admits the missing ones, so a block can be hit and then evicted within one
/// request, which MIN's future (the flattened stream) does not see. Blocks 2-4, 1-3, 1-2, cache 2: `opt`
/// keeps 2 and 4 after the first request (3's next use is later than 2's), then evicts 4 and 2 for 1 and 3
/// and misses 2 again; LRU keeps 3 and 4, hits 3, and ends with 1 and 2 for the last request.
#[test]
fn with_multi_block_requests_opt_is_not_a_lower_bound() {
    let reqs = vec![Request::read(2, 3), Request::read(1, 3), Request::read(1, 2)];
    let misses = |p: &str| run(&one_level(p, 2, "none"), &reqs).unwrap().levels[0].counters.misses;
    assert_eq!((misses("opt"), misses("lru"), misses("fifo")), (6, 5, 5));
}

/// Among blocks never used again, `opt` evicts the one touched longest ago (docs/optimal.md, "Ties"): on
/// 1, 2, 0 with 2 blocks, block 0 evicts 1, not 2 (the highest slot went first before). With read-ahead
/// (4 blocks) on 5, 15 and 6 blocks, 15's read-ahead 16-19 evicts 5, 6, 7 and 8, not 15 (which it evicted
/// before).
#[test]
fn opt_evicts_the_dead_block_touched_longest_ago() {
    let (_, h) = run_kept(&one_level("opt", 2, "none"), &reads(&[1, 2, 0])).unwrap();
    let mut held = h.levels[0].resident_blocks();
    held.sort_unstable();
    assert_eq!(held, vec![0, 2]);
    let (_, h) = run_kept(&one_level("opt", 6, "ra"), &reads(&[5, 15])).unwrap();
    let mut held = h.levels[0].resident_blocks();
    held.sort_unstable();
    assert_eq!(held, vec![9, 15, 16, 17, 18, 19]);
}

/// With a prefetcher that reacts to misses, MIN's evictions are not always best: keeping a block turns a
/// miss into a hit, and the read-ahead that miss would have started never happens. Found by a property
/// test (opt vs LRU, read-ahead P = 4, cache 4), shrunk to this trace: LRU misses 25 and reads ahead 26-29,
/// which the last request then hits (28, 29); MIN keeps 25 (a hit, no read-ahead), so 28 and 29 miss.
#[test]
fn with_a_prefetcher_reacting_to_misses_min_can_lose() {
    let reqs = vec![
        Request::read(21, 3),
        Request::read(0, 1),
        Request::read(5, 1),
        Request::read(25, 1),
        Request::read(27, 3),
    ];
    let opt = run(&one_level("opt", 4, "ra"), &reqs).unwrap();
    let lru = run(&one_level("lru", 4, "ra"), &reqs).unwrap();
    assert_eq!((opt.levels[0].counters.misses, lru.levels[0].counters.misses), (7, 6));
    assert_eq!((opt.levels[0].counters.fetches, lru.levels[0].counters.fetches), (4, 4));
    assert_eq!((opt.levels[0].counters.prefetch_hits, lru.levels[0].counters.prefetch_hits), (2, 3));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// In the single-disk model, demand fetching stalls exactly F per miss (LRU and MIN alike), MIN's
    /// stall is the fewest of any demand fetching, and Conservative (MIN's fetches, started early) never
    /// stalls more than it; a prefetcher's schedule is a valid one, so never faster than the optimum.
    /// (Aggressive can stall more than MIN's demand fetching: see `aggressive_can_be_slower_than_demand_min`.)
    #[test]
    fn the_single_disk_model_times_demand_fetching_as_cao_et_al(blocks in prop::collection::vec(0u64..7, 1..=14),
                                                                  k in 1usize..=4, f in 1u64..=5) {
        let reqs = reads(&blocks);
        let m = DiskModel { cache: k, fetch_time: f };
        let mut stalls = Vec::new();
        for (p, pf) in [("lru", "none"), ("opt", "none"), ("lru", "obl"), ("opt", "obl"), ("lru", "ra"), ("arc", "split-t2")] {
            let cfg = HierarchyConfig::from_toml(&one_level(p, k, pf)).unwrap();
            let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
            let mut open = || Ok(Box::new(VecSource::new(reqs.clone())) as Box<dyn RequestSource>);
            prepare(&cfg, &mut h, None, &mut open, None).unwrap();
            let s = single_disk(&mut VecSource::new(reqs.clone()), &mut h, m, None).unwrap();
            let misses = h.levels[0].counters().misses;
            if pf == "none" {
                prop_assert_eq!(s.stall, f * misses, "{} demand fetching", p);
            }
            prop_assert!(s.elapsed >= brute::min_elapsed(&blocks, m).unwrap(), "{} + {}: {:?}", p, pf, s);
            stalls.push(s.stall);
        }
        prop_assert!(stalls[1] <= stalls[0]);
        prop_assert!(conservative(&blocks, m).unwrap().stall <= stalls[1]);
    }
}
