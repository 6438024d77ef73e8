//! The size families (`mrc::family`, `mrc::lru_family`, `mrc::fifo_family`, `mrc::clock_family`): plain
//! LRU, FIFO or CLOCK configs of a batch that differ only in size are computed from one pass, and every
//! field of their results equals a separate engine run: random traces of multi-block requests (where the
//! engine's per-request look-up differs from Mattson's per-block LRU), warm-ups, sizes down to the longest
//! request for LRU and down to one block for FIFO and CLOCK (one property test over the three policies), and a
//! batch mixing other configs.

use std::sync::atomic::{AtomicBool, AtomicU64};

use proptest::prelude::*;

use prefetchsim_core::batch::{run_task, Task, TaskTrace};
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{Hierarchy, RequestSource, Silent, SourceError, VecSource};
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::mrc::family;
use prefetchsim_core::request::{Op, Request};

struct Trace(Vec<Request>);

impl TaskTrace for Trace {
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError> {
        Ok(Box::new(VecSource::new(self.0.clone())))
    }

    fn block_size(&self) -> u64 {
        4096
    }
}

fn plain(policy: &str, size: u64, warmup: u64) -> HierarchyConfig {
    HierarchyConfig::from_json(serde_json::json!({
        "level": [{"size": size, "policy": policy}],
        "engine": {"warmup_requests": warmup},
    }))
    .unwrap()
}

fn lru(size: u64, warmup: u64) -> HierarchyConfig {
    plain("lru", size, warmup)
}

fn fifo(size: u64, warmup: u64) -> HierarchyConfig {
    plain("fifo", size, warmup)
}

fn clock(size: u64, warmup: u64) -> HierarchyConfig {
    plain("clock", size, warmup)
}

fn alone(trace: &Trace, cfg: &HierarchyConfig) -> RunResult {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    let mut src = trace.open().unwrap();
    prefetchsim_core::run::run(src.as_mut(), &mut h, cfg, &mut Silent).unwrap()
}

/// Requests of `len` in 1..=max_len over `universe` blocks: sequential runs, overlapping requests and
/// re-references of whole requests, so that hits and misses mix inside requests.
fn trace_of(seed: u64, n: usize, universe: u64, max_len: u32) -> Vec<Request> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut recent: Vec<(u64, u32)> = Vec::new();
    let mut cursor = 0u64;
    (0..n)
        .map(|_| {
            let r = next();
            let len = 1 + (r >> 40) as u32 % max_len;
            let first = match r % 4 {
                0 if !recent.is_empty() => recent[(r >> 8) as usize % recent.len()].0 + (r >> 16) % 3,
                1 => {
                    cursor = (cursor + u64::from(len)) % universe;
                    cursor
                }
                _ => (r >> 20) % universe,
            };
            recent.push((first, len));
            if recent.len() > 64 {
                recent.remove(0);
            }
            let mut req = Request::read(first, len);
            if r % 7 == 0 {
                req.op = Op::Write;
            }
            req
        })
        .collect()
}

/// `reqs` with two requests of three moved 2^40 blocks up, above the passes' flat block indexes.
fn sparse(mut reqs: Vec<Request>) -> Vec<Request> {
    for (i, r) in reqs.iter_mut().enumerate() {
        if i % 3 != 0 {
            r.first += 1 << 40;
        }
    }
    reqs
}

/// Every config of the batch equals its run alone, and the family computed exactly the configs it can.
fn check(trace: &Trace, configs: &[HierarchyConfig]) -> Result<(), TestCaseError> {
    let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
    let got = run_task(trace, &Task::new(configs, 1, &stop, &done)).unwrap();
    let longest = trace.0.iter().map(|r| u64::from(r.len)).max().unwrap_or(0);
    let pre = family::precompute(configs, 4096, None, &mut VecSource::new(trace.0.clone())).unwrap();
    for (i, cfg) in configs.iter().enumerate() {
        let warmup = cfg.engine.warmup_requests;
        if warmup > 0 && warmup >= trace.0.len() as u64 {
            // A warm-up of the whole trace measures nothing: an error, by the pass as by the engine.
            let e = got[i].as_ref().err().map(ToString::to_string);
            prop_assert!(e.as_deref().is_some_and(|e| e.contains("engine.warmup_requests")), "config {}: {:?}", i, e);
            continue;
        }
        let want = alone(trace, cfg);
        let (r, _) = got[i].as_ref().unwrap();
        prop_assert_eq!(r, &want, "config {}", i);
        if let Some(p) = &pre[i] {
            prop_assert_eq!(&p.counters, &want.levels[0].counters, "config {} (pass)", i);
        }
        // The pass computes every plain LRU config of a family of two or more that is at least as large as
        // the longest request, and every plain FIFO or CLOCK config of a family of two or more.
        let size = cfg.level[0].size.resolve(4096, None, None).unwrap();
        let kind = family::kind(cfg);
        let family_of = configs
            .iter()
            .filter(|c| family::kind(c) == kind && c.engine.warmup_requests == cfg.engine.warmup_requests)
            .count();
        let large_enough = matches!(kind, Some(family::Kind::Fifo | family::Kind::Clock)) || size >= longest;
        let expect = kind.is_some() && family_of >= 2 && large_enough;
        prop_assert_eq!(pre[i].is_some(), expect, "config {} computed by the pass", i);
    }
    Ok(())
}

proptest! {
    // About 48 cases per policy.
    #![proptest_config(ProptestConfig::with_cases(144))]

    #[test]
    fn every_size_equals_its_engine_run(
        seed in any::<u64>(),
        n in 1usize..1500,
        universe in 20u64..600,
        max_len in 1u32..24,
        mut sizes in proptest::collection::vec(1u64..400, 2..12),
        warmup in prop_oneof![Just(0u64), 0u64..800],
        policy in prop_oneof![Just("lru"), Just("fifo"), Just("clock")],
    ) {
        let trace = Trace(trace_of(seed, n, universe, max_len));
        if policy == "lru" {
            // The LRU pass computes sizes of at least the longest request: make sure one is there.
            sizes.push(u64::from(max_len));
        }
        let configs: Vec<_> = sizes.iter().map(|&s| plain(policy, s, warmup)).collect();
        check(&trace, &configs)?;
    }
}

#[test]
fn a_mixed_batch_keeps_its_other_configs_and_families_by_warmup() {
    let trace = Trace(trace_of(7, 6000, 3000, 16));
    let mut configs: Vec<_> = [64u64, 300, 300, 1000, 2500].iter().map(|&s| lru(s, 0)).collect();
    configs.push(lru(500, 100));
    configs.push(lru(900, 100));
    configs.push(lru(700, 5)); // a family of one: run by the engine
    configs.push(lru(8, 0)); // smaller than the longest request: run by the engine
    configs.extend([3u64, 300, 1000, 2500].iter().map(|&s| fifo(s, 0))); // FIFO: every size computed
    configs.push(fifo(700, 5)); // a family of one: run by the engine
    configs.extend([1u64, 5, 300, 2500].iter().map(|&s| clock(s, 0))); // CLOCK: every size computed
    configs.push(clock(300, 7)); // a family of one: run by the engine
    for doc in [
        serde_json::json!({"level": [{"size": 500, "policy": "arc"}]}),
        serde_json::json!({"level": [{"size": 500, "policy": {"name": "clock", "bits": 2}}]}),
        serde_json::json!({"level": [{"size": 600, "policy": {"name": "clock", "bits": 2}}]}),
        serde_json::json!({"level": [{"size": 500, "prefetcher": "obl"}]}),
        serde_json::json!({"level": [{"size": 500, "options": {"consume_on_hit": true}}]}),
        serde_json::json!({"level": [{"size": 500}], "engine": {"limit": 1000}}),
        serde_json::json!({"level": [{"size": 200}, {"size": 800}]}),
    ] {
        configs.push(HierarchyConfig::from_json(doc).unwrap());
    }
    check(&trace, &configs).unwrap();
}

#[test]
fn a_size_as_a_share_of_the_footprint_is_computed_too() {
    let trace = Trace(trace_of(11, 4000, 2000, 8));
    let docs = ["5%", "10%", "40%"].map(|s| serde_json::json!({"level": [{"size": s}]}));
    let configs: Vec<_> = docs.into_iter().map(|d| HierarchyConfig::from_json(d).unwrap()).collect();
    let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
    let got = run_task(&trace, &Task::new(&configs, 2, &stop, &done)).unwrap();
    let footprint = trace.0.iter().flat_map(Request::blocks).collect::<std::collections::HashSet<_>>().len() as u64;
    let pre = family::precompute(&configs, 4096, Some(footprint), &mut VecSource::new(trace.0.clone())).unwrap();
    for (i, cfg) in configs.iter().enumerate() {
        let mut h = Hierarchy::build(cfg, 4096, Some(footprint)).unwrap();
        let want = prefetchsim_core::run::run(&mut VecSource::new(trace.0.clone()), &mut h, cfg, &mut Silent).unwrap();
        assert_eq!(got[i].as_ref().unwrap().0, want, "config {i}");
        assert!(pre[i].is_some(), "config {i} computed by the pass");
    }
}

#[test]
fn more_clock_sizes_than_one_pass_holds_are_computed_in_several_passes() {
    // A CLOCK pass keeps 32 sizes; 45 sizes take two passes, every record still equal to its run.
    let trace = Trace(trace_of(23, 3000, 1500, 6));
    let configs: Vec<_> = (1..=45u64).map(|i| clock(i * 23, 0)).collect();
    check(&trace, &configs).unwrap();
}

#[test]
fn seventy_fifo_sizes_fill_one_pass_of_64_and_a_second() {
    // A FIFO pass keeps 64 sizes (the last in a mask's top bit); 70 sizes take two passes, every record
    // still equal to its run.
    let trace = Trace(trace_of(29, 3000, 1500, 6));
    let configs: Vec<_> = (1..=70u64).map(|i| fifo(i * 17, 0)).collect();
    check(&trace, &configs).unwrap();
}

/// Block numbers above the FIFO and CLOCK passes' flat block index go to its hash map: every size still
/// equals its engine run.
#[test]
fn sparse_block_numbers_give_the_engine_results_for_fifo_and_clock() {
    let trace = Trace(sparse(trace_of(37, 6000, 3000, 8)));
    for policy in ["fifo", "clock"] {
        let configs: Vec<_> = [1u64, 8, 100, 700, 2500].iter().map(|&s| plain(policy, s, 0)).collect();
        check(&trace, &configs).unwrap();
    }
}

/// Block numbers above the LRU pass's flat index (object ids, sparse volumes) go to its hash map, and a
/// trace longer than the pass's first time axis makes it renumber every record: every size still equals
/// its engine run.
#[test]
fn sparse_block_numbers_and_a_renumbered_time_axis_give_the_engine_results() {
    let reqs = sparse(trace_of(31, 24_000, 5000, 8));
    let blocks: u64 = reqs.iter().map(|r| u64::from(r.len)).sum();
    assert!(blocks > 1 << 16, "{blocks} block references: the pass's first time axis is 2^16 long");
    let trace = Trace(reqs);
    let configs: Vec<_> = [8u64, 100, 700, 2500, 6000].iter().map(|&s| lru(s, 0)).collect();
    check(&trace, &configs).unwrap();
}
