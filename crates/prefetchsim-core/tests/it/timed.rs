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

/// One to three levels with random policies, prefetchers, sizes and placement options.
fn hierarchy() -> impl Strategy<Value = HierarchyConfig> {
    prop::collection::vec((1u64..40, policy(), prefetcher(), any::<bool>(), 0u8..2), 1..4).prop_map(|ls| {
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
    fn zero_latency_with_warmup_counts_equal_the_instant_engine(reqs in random_reqs(), cfg in hierarchy(), w in 0u64..300) {
        let mut cfg = cfg;
        cfg.engine.warmup_requests = w;
        let i = run_i(&cfg, &reqs);
        let t = run_t(&zero_latency(&cfg), &reqs);
        assert_same_counts(&i, &t)?;
        prop_assert_eq!(i.warmup_requests, t.warmup_requests);
    }
}

// ---------------------------------------------------------------------------------------------------
// Invariants under real latencies

#[derive(Clone, Debug)]
struct Timing {
    replay: Replay,
    iodepth: u32,
    per_stream: bool,
    think_ms: Option<f64>,
    device: ComponentSpec,
    alpha_ms: f64,
    sched: &'static str,
    plugging: &'static str,
    max_outstanding: Option<u64>,
    sync_writes: bool,
    time_scale: f64,
    prefetch_io: PrefetchIo,
}

fn timing() -> impl Strategy<Value = Timing> {
    (
        any::<bool>(),
        1u32..4,
        any::<bool>(),
        prop::option::of(0.0f64..3.0),
        prop_oneof![
            (0.1f64..6.0).prop_map(fixed_device),
            Just(ComponentSpec::named("cheetah9lp")),
            Just(ComponentSpec::named("sata_ssd"))
        ],
        0.0f64..3.0,
        prop_oneof![Just("deadline"), Just("noop"), Just("clook")],
        prop_oneof![Just("instant"), Just("linux")],
        prop::option::of(1u64..4),
        any::<bool>(),
        (prop_oneof![Just(1.0), Just(0.1), Just(0.0)], prop_oneof![Just(PrefetchIo::Joined), Just(PrefetchIo::Apart)]),
    )
        .prop_map(
            |(
                open,
                iodepth,
                per_stream,
                think_ms,
                device,
                alpha_ms,
                sched,
                plugging,
                mo,
                sync_writes,
                (time_scale, prefetch_io),
            )| {
                Timing {
                    replay: if open { Replay::Open } else { Replay::Closed },
                    iodepth,
                    per_stream,
                    think_ms,
                    device,
                    alpha_ms,
                    sched,
                    plugging,
                    max_outstanding: mo,
                    sync_writes,
                    time_scale,
                    prefetch_io,
                }
            },
        )
}

fn timed(cfg: &HierarchyConfig, t: &Timing) -> HierarchyConfig {
    let mut c = cfg.clone();
    c.engine.kind = EngineKind::Timed;
    c.engine.replay = Some(t.replay);
    c.engine.time_scale = Some(t.time_scale);
    c.engine.sync_writes = Some(t.sync_writes);
    c.engine.prefetch_io = Some(t.prefetch_io);
    match t.replay {
        Replay::Open => c.engine.max_outstanding = t.max_outstanding,
        Replay::Closed => {
            c.engine.iodepth = Some(t.iodepth);
            c.engine.per_stream = Some(t.per_stream);
            c.engine.think_ms = t.think_ms;
        }
    }
    c.link = Some(link(t.alpha_ms, 0.03));
    c.device = Some(t.device.clone());
    c.scheduler = Some(
        serde_json::from_value(serde_json::json!({"policy": t.sched, "plugging": t.plugging, "nr_requests": 4}))
            .unwrap(),
    );
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(150), ..ProptestConfig::default() })]

    #[test]
    fn time_moves_forward_every_request_completes_once_and_no_block_is_read_twice_in_flight(
        reqs in random_reqs(), cfg in hierarchy(), t in timing()
    ) {
        let cfg = timed(&cfg, &t);
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let mut w = Watch::default();
        let r = run_timed_observed(&mut VecSource::new(reqs.clone()), &mut h, &cfg, &mut Silent, &mut w).unwrap();
        prop_assert_eq!(w.backwards, 0);
        prop_assert_eq!(r.requests, reqs.len() as u64);
        prop_assert_eq!(w.issued.len(), reqs.len());
        prop_assert!(w.completed.values().all(|&c| c == 1), "a request completed twice");
        prop_assert_eq!(w.completed.len(), reqs.len(), "a request never completed");
        prop_assert!(w.double_reads.is_empty(), "blocks read twice while in flight: {:?}", w.double_reads);
        prop_assert!(w.reading.is_empty(), "reads still in flight after the drain");
        let timing = r.timing.as_ref().unwrap();
        prop_assert_eq!(timing.requests_incomplete, 0);
        prop_assert_eq!(timing.reads.requests + timing.writes.requests, reqs.len() as u64);
        prop_assert!(timing.device.requests() <= w.reads, "dispatches {} > bios {}", timing.device.requests(), w.reads);
        for (l, rep) in h.levels.iter().zip(&r.levels) {
            prop_assert_eq!(l.pinned_count(), 0, "pinned blocks after the drain");
            l.check_invariants().map_err(TestCaseError::fail)?;
            let c = &rep.counters;
            prop_assert_eq!(c.prefetch_inflight_end, 0);
            prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
            prop_assert!(c.late_prefetch + c.inflight_demand_joins <= c.misses);
            prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
        }
        // Identical inputs, identical results.
        let mut h2 = Hierarchy::build(&cfg, 4096, None).unwrap();
        let r2 = run_timed(&mut VecSource::new(reqs), &mut h2, &cfg, &mut Silent).unwrap();
        prop_assert_eq!(r, r2);
    }

    #[test]
    fn without_draining_prefetches_may_stay_in_flight_but_are_accounted_for(
        reqs in sequential_reqs(), cfg in hierarchy(), t in timing()
    ) {
        let mut cfg = timed(&cfg, &t);
        cfg.engine.drain = Some(false);
        let r = run_t(&cfg, &reqs);
        let timing = r.timing.as_ref().unwrap();
        prop_assert_eq!(timing.requests_incomplete, 0);
        for rep in &r.levels {
            prop_assert!(rep.counters.prefetch_conserved(), "{:?}", rep.counters);
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Worked cases

fn one_level(size: u64, prefetcher: serde_json::Value, device_ms: f64) -> HierarchyConfig {
    HierarchyConfig {
        level: vec![level(size, "lru", prefetcher)],
        engine: prefetchsim_core::config::EngineConfig { kind: EngineKind::Timed, ..Default::default() },
        device: Some(fixed_device(device_ms)),
        ..HierarchyConfig::default()
    }
}

fn at(t_ms: f64, first: u64, len: u32) -> Request {
    Request { time_ns: (t_ms * 1e6) as u64, first, len, ..Request::default() }
}

#[test]
fn a_demand_for_a_block_whose_prefetch_is_in_flight_waits_for_it_and_is_counted() {
    // OBL(always): the read of block 0 brings block 1 in the same I/O (5 ms). Block 1 is demanded at
    // 1 ms, still in flight: it waits 4 ms, no second read, one late prefetch.
    let mut cfg = one_level(16, serde_json::json!({"name": "obl", "variant": "always"}), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    let reqs = vec![at(0.0, 0, 1), at(1.0, 1, 1), at(20.0, 1, 1)];
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    let r = run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap();
    let c = &r.levels[0].counters;
    assert_eq!((c.late_prefetch, c.prefetch_used, c.misses, c.hits, c.inflight_demand_joins), (1, 1, 2, 1, 0), "{c:?}");
    let t = r.timing.unwrap();
    // Reads: 0 -> 5 ms, 1 (late) -> 4 ms, 1 again (hit) -> 0.
    assert_eq!(t.reads.max_ms, 5.0);
    assert!((t.reads.mean_ms - 3.0).abs() < 1e-9, "{:?}", t.reads);
    // Blocks 0 and 1 in one mixed request; block 2, prefetched by the late access, in a second one.
    assert_eq!(w.double_reads, Vec::<u64>::new());
    assert_eq!(t.device.requests_prefetch, 1, "{:?}", t.device);
    assert_eq!(t.device.requests_mixed, 1, "{:?}", t.device);
}

#[test]
fn a_second_demand_for_a_block_in_flight_joins_the_first_read() {
    let mut cfg = one_level(16, serde_json::json!("none"), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    let reqs = vec![at(0.0, 7, 2), at(2.0, 8, 1)];
    let r = run_t(&cfg, &reqs);
    let c = &r.levels[0].counters;
    assert_eq!((c.misses, c.inflight_demand_joins, c.late_prefetch), (3, 1, 0));
    let t = r.timing.unwrap();
    assert_eq!(t.device.requests(), 1);
    assert_eq!((t.reads.max_ms, t.reads.mean_ms), (5.0, 4.0));
}

#[test]
fn closed_loop_with_one_outstanding_request_sees_exactly_the_device_latency() {
    // One level over a 5 ms fixed device, every request a miss: rt = 5 ms exactly.
    let cfg = one_level(4, serde_json::json!("none"), 5.0);
    let reqs: Vec<Request> = (0..100).map(|i| Request::read(i * 10, 1)).collect();
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!(
        (t.reads.requests, t.reads.mean_ms, t.reads.p50_ms, t.reads.p99_ms, t.reads.max_ms),
        (100, 5.0, 5.0, 5.0, 5.0)
    );
    assert_eq!(t.makespan_ns, 500 * MS);
    assert!((t.device.service_ns as f64 / (100.0 * 5e6) - 1.0).abs() < 1e-12);
    // Two levels with PFC's link: an L1 miss that misses L2 costs 6 + 5 + (6 + 0.03) = 17.03 ms.
    let mut cfg2 = cfg.clone();
    cfg2.level.push(level(8, "lru", serde_json::json!("none")));
    let t = run_t(&cfg2, &reqs).timing.unwrap();
    assert_eq!((t.reads.mean_ms, t.reads.max_ms), (17.03, 17.03));
    assert_eq!(t.net_messages, 200);
    // Repeating the requests: L1 (4 blocks) misses, L2 (8 blocks) misses too (100 distinct blocks), but
    // the last 4 hit L1 (rt = the L1 hit time, 0.5 ms here) and need nothing below.
    let mut cfg3 = cfg2.clone();
    cfg3.link = Some(LinkParams { t_l1_hit_ms: 0.5, ..LinkParams::default() });
    let mut reqs3 = reqs.clone();
    reqs3.extend((96..100).map(|i| Request::read(i * 10, 1)));
    let t = run_t(&cfg3, &reqs3).timing.unwrap();
    assert_eq!(t.reads.requests, 104);
    assert!((t.reads.mean_ms - (100.0 * 17.03 + 4.0 * 0.5) / 104.0).abs() < 1e-9, "{:?}", t.reads);
    // A constant think time adds to the makespan only.
    let mut cfg4 = cfg.clone();
    cfg4.engine.think_ms = Some(2.0);
    let t = run_t(&cfg4, &reqs).timing.unwrap();
    assert_eq!((t.reads.mean_ms, t.makespan_ns), (5.0, 100 * 5 * MS + 99 * 2 * MS));
}

#[test]
fn open_loop_poisson_arrivals_queue_as_m_d_1_predicts() {
    // M/D/1 with D = 5 ms, lambda = 100/s (rho = 0.5): mean wait rho D / (2 (1 - rho)) = 2.5 ms, so the
    // mean response is 7.5 ms. Every request misses a one-block cache and is one device request (the
    // blocks are not adjacent, so the scheduler cannot merge two into one service).
    let mut cfg = one_level(1, serde_json::json!("none"), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    cfg.scheduler = Some(serde_json::from_value(serde_json::json!({"policy": "noop", "nr_requests": 100000})).unwrap());
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut t = 0.0f64;
    let reqs: Vec<Request> = (0..60_000u64)
        .map(|i| {
            t += -(1.0 - uniform()).ln() * 10.0; // ms, mean 10
            Request { time_ns: (t * 1e6) as u64, first: i * 4, len: 1, ..Request::default() }
        })
        .collect();
    let tm = run_t(&cfg, &reqs).timing.unwrap();
    let want = 7.5;
    assert!((tm.reads.mean_ms - want).abs() / want < 0.05, "mean response {} vs M/D/1 {want}", tm.reads.mean_ms);
    assert!(tm.device.queue_mean > 0.0 && tm.device.queue_max > 2, "{:?}", tm.device);
    let util = tm.device.service_ns as f64 / (tm.end_ns - tm.start_ns) as f64;
    assert!((util - 0.5).abs() < 0.03, "utilisation {util}");
}

#[test]
fn open_loop_admission_limit_makes_arrivals_wait_in_order() {
    // Ten simultaneous arrivals, one outstanding at a time over a 5 ms device: request i waits 5 i ms.
    let mut cfg = one_level(1, serde_json::json!("none"), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    cfg.engine.max_outstanding = Some(1);
    let reqs: Vec<Request> = (0..10).map(|i| Request::read(i * 3, 1)).collect();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    let t = run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap().timing.unwrap();
    assert_eq!(w.issued.values().copied().collect::<Vec<_>>(), (0..10).map(|i| i * 5 * MS).collect::<Vec<_>>());
    assert_eq!((t.admission_wait.mean_ms, t.admission_wait.max_ms), (22.5, 45.0));
    assert_eq!((t.reads.mean_ms, t.reads.max_ms), (27.5, 50.0));
}

#[test]
fn writes_block_a_closed_loop_only_when_synchronous_and_are_reported_apart() {
    let mut cfg = one_level(4, serde_json::json!("none"), 5.0);
    let mut reqs: Vec<Request> = (0..10).map(|i| Request::read(100 + i, 1)).collect();
    for r in reqs.iter_mut().step_by(2) {
        r.op = Op::Write;
    }
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!((t.reads.requests, t.writes.requests), (5, 5));
    // Asynchronous writes: each read starts with the write before it, and both queue at the device.
    assert_eq!(t.makespan_ns, 50 * MS);
    cfg.engine.sync_writes = Some(true);
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!((t.reads.mean_ms, t.writes.mean_ms, t.makespan_ns), (5.0, 5.0, 50 * MS));
}

#[test]
fn closed_loop_streams_run_concurrently_and_clients_are_reported_apart() {
    // Two clients, each five sequential misses; per-stream loops overlap on the device (FIFO order
    // decided by the scheduler), one loop in trace order does not.
    let cfg = one_level(2, serde_json::json!("none"), 5.0);
    let reqs: Vec<Request> = (0..10u32)
        .map(|i| Request { first: u64::from(i) * 100, len: 1, client: i % 2, stream: i % 2, ..Request::default() })
        .collect();
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!(t.clients.iter().map(|c| (c.client, c.reads.requests)).collect::<Vec<_>>(), vec![(0, 5), (1, 5)]);
    assert_eq!(t.makespan_ns, 50 * MS);
    assert!(t.reads.mean_ms > 5.0, "the two streams queue at the device: {:?}", t.reads);
    let mut single = cfg.clone();
    single.engine.per_stream = Some(false);
    let t = run_t(&single, &reqs).timing.unwrap();
    assert_eq!((t.reads.mean_ms, t.makespan_ns), (5.0, 50 * MS));
    // Streams keyed by client: two streams of one client are one loop.
    let mixed: Vec<Request> = (0..10u32)
        .map(|i| Request { first: u64::from(i) * 100, len: 1, stream: i % 2, ..Request::default() })
        .collect();
    let t = run_t(&cfg, &mixed).timing.unwrap();
    assert!(t.reads.mean_ms > 5.0, "two loops, one per stream: {:?}", t.reads);
    let mut by_client = cfg.clone();
    by_client.engine.stream_key = Some(prefetchsim_core::config::StreamKey::Client);
    let t = run_t(&by_client, &mixed).timing.unwrap();
    assert_eq!(t.reads.mean_ms, 5.0);
    let mut deep = single.clone();
    deep.engine.iodepth = Some(10);
    let t = run_t(&deep, &reqs).timing.unwrap();
    assert_eq!((t.reads.max_ms, t.makespan_ns), (50.0, 50 * MS));
}

#[test]
fn think_from_the_trace_gap_spaces_a_closed_loop() {
    let mut cfg = one_level(2, serde_json::json!("none"), 5.0);
    cfg.engine.think = Some(Think::Gap);
    let reqs: Vec<Request> = (0..4u64).map(|i| at(i as f64 * 20.0, i * 100, 1)).collect();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    run_timed_observed(&mut VecSource::new(reqs.clone()), &mut h, &cfg, &mut Silent, &mut w).unwrap();
    // Done at 5, then 20 ms of think: issues at 0, 25, 50, 75 ms.
    assert_eq!(w.issued.values().copied().collect::<Vec<_>>(), vec![0, 25 * MS, 50 * MS, 75 * MS]);
    cfg.engine.time_scale = Some(0.5);
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap();
    assert_eq!(w.issued.values().copied().collect::<Vec<_>>(), vec![0, 15 * MS, 30 * MS, 45 * MS]);
}

#[test]
fn warm_up_requests_are_not_measured() {
    let mut cfg = one_level(4, serde_json::json!("none"), 5.0);
    cfg.engine.warmup_requests = 3;
    let reqs: Vec<Request> = (0..10).map(|i| Request::read(i * 10, 1)).collect();
    let r = run_t(&cfg, &reqs);
    let t = r.timing.as_ref().unwrap();
    assert_eq!((r.warmup_requests, t.reads.requests, r.levels[0].counters.demand_accesses), (3, 7, 7));
    // Measurement starts when the last warm-up request is issued (10 ms); it is still served after that.
    assert_eq!((t.start_ns, t.makespan_ns, t.device.requests()), (10 * MS, 40 * MS, 7));
}

#[test]
fn a_real_disk_serves_a_prefetched_sequential_stream_quickly() {
    // One-block sequential reads every millisecond with OBL over Cheetah 9LP: each demand finds its block
    // prefetched (ready or in flight), and the disk reads sequentially from its cache and read-ahead.
    let cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 64\nprefetcher = { name = 'obl', variant = 'always' }\n[engine]\nkind = 'timed'\nreplay = 'open'\n",
    )
    .unwrap();
    let reqs: Vec<Request> = (0..2000u64).map(|i| at(i as f64, 1000 + i, 1)).collect();
    let r = run_t(&cfg, &reqs);
    let t = r.timing.as_ref().unwrap();
    let c = &r.levels[0].counters;
    assert_eq!(c.prefetch_used, 1999, "{c:?}");
    assert!(t.device.requests() > 0 && t.device.service_ns / t.device.requests() < 3 * MS, "{:?}", t.device);
    assert_eq!(t.device.name, "cheetah9lp");
    assert!(t.reads.p99_ms >= t.reads.p50_ms && t.reads.max_ms >= t.reads.p99_ms);
    assert!(t.reads.mean_ms < 2.0, "{:?}", t.reads);
}

#[test]
fn timed_config_keys_are_checked_and_errors_name_the_key() {
    let bad = |toml: &str| HierarchyConfig::from_toml(&format!("[[level]]\nsize = 4\n{toml}")).unwrap_err();
    assert_eq!(bad("[engine]\nreplay = 'open'\n").path, "engine.replay");
    assert_eq!(bad("[device]\nname = 'fixed'\n").path, "device");
    assert_eq!(bad("[engine]\nkind = 'timed'\nreplay = 'open'\niodepth = 2\n").path, "engine.iodepth");
    assert_eq!(bad("[engine]\nkind = 'timed'\nmax_outstanding = 2\n").path, "engine.max_outstanding");
    assert_eq!(bad("[engine]\nkind = 'timed'\nthink = 'constant'\n").path, "engine.think_ms");
    assert_eq!(bad("[engine]\nkind = 'timed'\nthink = 'gap'\nthink_ms = 3\n").path, "engine.think_ms");
    assert_eq!(bad("[engine]\nkind = 'timed'\ntime_scale = -1\n").path, "engine.time_scale");
    assert_eq!(bad("[engine]\nkind = 'timed'\niodepth = 0\n").path, "engine.iodepth");
    assert_eq!(bad("[engine]\nkind = 'timed'\nper_stream = false\nstream_key = 'client'\n").path, "engine.stream_key");
    assert_eq!(bad("[engine]\nkind = 'timed'\nreplay = 'open'\nstream_key = 'client'\n").path, "engine.stream_key");
    assert!(bad("[engine]\nkind = 'timed'\nreplay = 'ajar'\n").to_string().contains("engine.replay"));
    assert!(bad("[engine]\nkind = 'timed'\nthinktime = 1\n").to_string().contains("thinktime"));
    assert_eq!(bad("[engine]\nkind = 'timed'\n[link]\nalpha_ms = -1\n").path, "link.alpha_ms");
    assert!(bad("[engine]\nkind = 'timed'\n[link]\nalfa_ms = 1\n").to_string().contains("alfa_ms"));
    assert_eq!(bad("[engine]\nkind = 'timed'\n[scheduler]\nfifo_batch = 0\n").path, "scheduler.fifo_batch");
    assert!(bad("[engine]\nkind = 'timed'\n[scheduler]\npolicy = 'cfq'\n").to_string().contains("scheduler.policy"));
    assert_eq!(bad("[engine]\nkind = 'timed'\n[device]\nname = 'cheetah9lp'\nrpm = 0\n").path, "device.rpm");
    assert!(bad("[engine]\nkind = 'timed'\n[device]\nname = 'floppy'\n").message.contains("cheetah9lp"));
    let ok = HierarchyConfig::from_toml(
        "[[level]]\nsize = 4\n[engine]\nkind = 'timed'\nreplay = 'closed'\niodepth = 4\nthink_ms = 1.5\nseed = 9\n\
         [device]\nname = 'cheetah9lp'\ncache = { segments = 2 }\n[link]\nalpha_ms = 0.1\n[scheduler]\npolicy = 'clook'\n",
    )
    .unwrap();
    let s = ok.engine.timed().unwrap().unwrap();
    assert_eq!((s.iodepth, s.think, s.think_ms, s.seed), (4, Think::Constant, 1.5, 9));
    // `device = "name"` before the tables works too.
    let ok = HierarchyConfig::from_toml("device = 'nvme'\n[[level]]\nsize = 4\n[engine]\nkind = 'timed'\n").unwrap();
    assert_eq!(ok.device_spec().name, "nvme");
}

#[test]
fn a_block_past_the_end_of_the_device_is_an_error_naming_the_device() {
    let cfg = one_level(4, serde_json::json!("none"), 1.0);
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let e = run_timed(&mut VecSource::new(vec![Request::read(1 << 40, 1)]), &mut h, &cfg, &mut Silent).unwrap_err();
    let ce = e.downcast_ref::<prefetchsim_core::ConfigError>().expect("a config error");
    assert_eq!(ce.path, "device");
    assert!(ce.message.contains("past the end"), "{ce}");
}

#[test]
fn instant_runs_have_no_timing_fields() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 4\n").unwrap();
    let r = run_i(&cfg, &[Request::read(1, 1)]);
    assert!(r.timing.is_none());
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("timing").is_none());
}
