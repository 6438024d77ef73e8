//! The timed engine (`shared/docs/models/event-engine.md`): with zero latencies it counts exactly what the
//! instant engine counts; its invariants hold under random workloads (time never goes backwards, every
//! request completes once, no block is read twice while in flight, runs are deterministic); late
//! prefetches wait and are counted; closed-loop response times equal the path's latencies; open-loop
//! Poisson arrivals queue as M/D/1 predicts.

use std::collections::{BTreeMap, HashSet};

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::{EngineKind, HierarchyConfig, LevelConfig, PrefetchIo, Replay, SizeSpec, Think};
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, TimedObserver, VecSource};
use prefetchsim_core::link::LinkParams;
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::request::{Op, Request};
use prefetchsim_core::run::{run_timed, run_timed_observed};
use proptest::prelude::*;

mod equivalence;
mod invariants;
mod linux_plugging;
mod read_ahead;
mod utilization;
mod window;
mod worked_cases;

const MS: u64 = 1_000_000;

/// Cases per property: `PROPTEST_CASES` when set (longer soak runs), else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------------
// Helpers

fn fixed_device(ms: f64) -> ComponentSpec {
    serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": ms, "write_latency_ms": ms})).unwrap()
}

fn link(alpha_ms: f64, beta_ms: f64) -> LinkParams {
    LinkParams { alpha_ms, beta_ms_per_page: beta_ms, ..LinkParams::default() }
}

fn level(size: u64, policy: &str, prefetcher: serde_json::Value) -> LevelConfig {
    let mut l = LevelConfig::new(SizeSpec::Blocks(size), policy);
    l.prefetcher = serde_json::from_value(prefetcher).unwrap();
    l
}

/// `cfg` as a timed run with zero latencies everywhere: a 0 ms fixed device, a zero link, open loop.
fn zero_latency(cfg: &HierarchyConfig) -> HierarchyConfig {
    let mut t = cfg.clone();
    t.engine.kind = EngineKind::Timed;
    t.engine.replay = Some(Replay::Open);
    t.link = Some(link(0.0, 0.0));
    t.device = Some(fixed_device(0.0));
    t
}

fn run_i(cfg: &HierarchyConfig, reqs: &[Request]) -> RunResult {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    run_instant(&mut VecSource::new(reqs.to_vec()), &mut h, &cfg.engine, &mut Silent).unwrap()
}

fn run_t(cfg: &HierarchyConfig, reqs: &[Request]) -> RunResult {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    run_timed(&mut VecSource::new(reqs.to_vec()), &mut h, cfg, &mut Silent).unwrap()
}

/// Checks the engine's invariants as the run goes.
#[derive(Default)]
struct Watch {
    last_t: u64,
    backwards: u32,
    issued: BTreeMap<u64, u64>,
    completed: BTreeMap<u64, u32>,
    reading: HashSet<u64>,
    double_reads: Vec<u64>,
    reads: u64,
    /// Blocks the device read, over all reads.
    read_blocks: u64,
}

impl TimedObserver for Watch {
    fn event(&mut self, t: u64) {
        if t < self.last_t {
            self.backwards += 1;
        }
        self.last_t = t;
    }
    fn issued(&mut self, index: u64, t: u64) {
        assert!(self.issued.insert(index, t).is_none(), "request {index} issued twice");
    }
    fn completed(&mut self, index: u64, t: u64) {
        *self.completed.entry(index).or_default() += 1;
        assert!(t >= self.issued[&index], "request {index} completed before its issue");
    }
    fn read_start(&mut self, first: u64, len: u32, _t: u64) {
        self.reads += 1;
        self.read_blocks += u64::from(len);
        for b in first..first + u64::from(len) {
            if !self.reading.insert(b) {
                self.double_reads.push(b);
            }
        }
    }
    fn read_done(&mut self, first: u64, len: u32, _t: u64) {
        for b in first..first + u64::from(len) {
            assert!(self.reading.remove(&b), "block {b} done but not being read");
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Workloads

/// Random requests over a small space (hits, prefetch hits and evictions all happen), some writes,
/// timestamps all equal or increasing by random gaps.
fn random_reqs() -> impl Strategy<Value = Vec<Request>> {
    (prop::collection::vec((0u64..200, 1u32..6, 0u64..4, any::<bool>(), 0u32..3), 1..300), any::<bool>()).prop_map(
        |(v, flat)| {
            let mut t = 0;
            v.into_iter()
                .map(|(b, n, gap, w, c)| {
                    if !flat {
                        t += gap * MS / 2;
                    }
                    Request {
                        time_ns: t,
                        first: b,
                        len: n,
                        op: if w && b % 5 == 0 { Op::Write } else { Op::Read },
                        stream: c,
                        client: c,
                    }
                })
                .collect()
        },
    )
}

/// Interleaved sequential streams with occasional jumps (read-ahead territory).
fn sequential_reqs() -> impl Strategy<Value = Vec<Request>> {
    (1usize..5, prop::collection::vec((0usize..5, 1u32..9, any::<bool>()), 1..300)).prop_map(|(streams, steps)| {
        let mut pos: Vec<u64> = (0..streams).map(|s| s as u64 * 10_000).collect();
        steps
            .into_iter()
            .enumerate()
            .map(|(i, (s, n, jump))| {
                let s = s % streams;
                if jump && i % 7 == 0 {
                    pos[s] += 500;
                }
                let r = Request {
                    time_ns: i as u64 * 100_000,
                    first: pos[s],
                    len: n,
                    stream: s as u32,
                    ..Request::default()
                };
                pos[s] += u64::from(n);
                r
            })
            .collect()
    })
}

fn policy() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("lru"), Just("fifo"), Just("clock"), Just("arc"), Just("mq"), Just("2q"), Just("splitlru")]
}

fn prefetcher() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::json!("none")),
        Just(serde_json::json!({"name": "obl", "variant": "always"})),
        Just(serde_json::json!({"name": "obl", "variant": "on_miss"})),
        Just(serde_json::json!({"name": "obl", "variant": "tagged"})),
        Just(serde_json::json!({"name": "obl", "variant": "libcachesim", "k": 2})),
    ]
}

/// A level of a sequential prefetcher over its usual policy: SARC (its own policy and over LRU, with
/// thresholds that keep counters), RA's trigger form, AMP, Linux's three modes and TaP.
fn sequential_level() -> impl Strategy<Value = (&'static str, serde_json::Value)> {
    prop_oneof![
        (2u64..9, 1u8..5)
            .prop_map(|(u, t)| ("sarc", serde_json::json!({"name": "sarc", "degree": u, "seq_threshold": t}))),
        (2u64..9, 1u8..5)
            .prop_map(|(u, t)| ("lru", serde_json::json!({"name": "sarc", "degree": u, "seq_threshold": t}))),
        (2u64..9).prop_map(|p| ("lru", serde_json::json!({"name": "ra", "mode": "trigger", "p": p}))),
        Just(("arc", serde_json::json!("amp"))),
        prop_oneof![Just("pfc-paper"), Just("2.6.16"), Just("ondemand")]
            .prop_map(|m| ("mq", serde_json::json!({"name": "linux", "mode": m}))),
        Just(("lru", serde_json::json!("tap"))),
    ]
}

/// One to three levels of [`sequential_level`], with random sizes.
fn sequential_hierarchy() -> impl Strategy<Value = HierarchyConfig> {
    sequential_hierarchy_of(1..4)
}

/// [`sequential_hierarchy`] with a number of levels in `levels`.
fn sequential_hierarchy_of(levels: std::ops::Range<usize>) -> impl Strategy<Value = HierarchyConfig> {
    prop::collection::vec((1u64..40, sequential_level()), levels).prop_map(|ls| {
        let level = ls.into_iter().map(|(size, (p, pf))| level(size, p, pf)).collect();
        HierarchyConfig { level, ..HierarchyConfig::default() }
    })
}

/// A sequential prefetcher's level over a server level that coordinates with it: PFC A or B (its
/// blocks cached or not), DU or DEMOTE, with or without its own Linux read-ahead.
fn coordinated_hierarchy() -> impl Strategy<Value = HierarchyConfig> {
    let scheme = prop_oneof![
        Just("pfc = { version = 'A' }"),
        Just("pfc = { version = 'B' }"),
        Just("pfc = { version = 'B', cache_bypassed = true }"),
        Just("options = { exclusive = 'du' }"),
        Just("options = { exclusive = 'demote' }"),
        Just("options = { exclusive = 'du', du_position = 'evict_now' }"),
        Just("options = { exclusive = 'du', du_on_prefetch = true }"),
        Just("options = { exclusive = 'demote', demote_read_pos = 'none' }"),
        Just("options = { exclusive = 'demote', demote_insert_pos = 'lru_end' }"),
    ];
    (1u64..40, sequential_level(), 1u64..60, prop_oneof![Just("lru"), Just("arc")], any::<bool>(), scheme).prop_map(
        |(s1, (p1, pf1), s2, p2, linux, scheme)| {
            let pf2 = if linux { "'linux'" } else { "'none'" };
            let text = format!(
                "[[level]]\nsize = {s1}\npolicy = '{p1}'\n[[level]]\nsize = {s2}\npolicy = '{p2}'\nprefetcher = {pf2}\n{scheme}\n"
            );
            let mut cfg = HierarchyConfig::from_toml(&text).unwrap();
            cfg.level[0].prefetcher = serde_json::from_value(pf1).unwrap();
            cfg
        },
    )
}

/// One to three levels with random policies, prefetchers, sizes and placement options.
fn hierarchy() -> impl Strategy<Value = HierarchyConfig> {
    hierarchy_of(1..4)
}

/// [`hierarchy`] with a number of levels in `levels`.
fn hierarchy_of(levels: std::ops::Range<usize>) -> impl Strategy<Value = HierarchyConfig> {
    prop::collection::vec((1u64..40, policy(), prefetcher(), any::<bool>(), 0u8..2), levels).prop_map(|ls| {
        let level = ls
            .into_iter()
            .map(|(size, p, pf, lru_insert, chances)| {
                let mut l = level(size, p, pf);
                if lru_insert {
                    l.options.pf_insert = prefetchsim_core::policy::Placement::Lru;
                }
                l.options.pf_second_chance = chances;
                l
            })
            .collect();
        HierarchyConfig { level, ..HierarchyConfig::default() }
    })
}

fn assert_same_counts(a: &RunResult, b: &RunResult) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.requests, b.requests);
    for (x, y) in a.levels.iter().zip(&b.levels) {
        prop_assert_eq!(&x.counters, &y.counters, "level {}", x.level);
    }
    Ok(())
}
