//! Worked cases: late prefetches, closed- and open-loop timing, writes, clients, warm-up, configuration errors.

use super::*;

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
fn a_block_its_own_access_evicted_joins_its_read_when_demanded_again() {
    // L1 holds 4 blocks. Blocks 300-301 are in flight when the 3-block request 400-402 arrives: only two
    // frames are free, so inserting 402 evicts 400, whose read goes out all the same. Block 400 demanded
    // again while that read is in flight joins it: before, it was a new fetch, and a second read of 400
    // crossed the link (3 fetches, 6 blocks at L1).
    let mut cfg = HierarchyConfig {
        level: vec![level(4, "lru", serde_json::json!("none")), level(20, "lru", serde_json::json!("none"))],
        engine: prefetchsim_core::config::EngineConfig { kind: EngineKind::Timed, ..Default::default() },
        device: Some(fixed_device(10.0)),
        link: Some(link(6.0, 0.03)),
        ..HierarchyConfig::default()
    };
    cfg.engine.replay = Some(Replay::Open);
    let reqs = vec![at(0.0, 300, 2), at(0.0, 400, 3), at(1.0, 400, 1)];
    let r = run_t(&cfg, &reqs);
    let c = &r.levels[0].counters;
    assert_eq!((c.misses, c.inflight_demand_joins, c.fetches, c.fetched_blocks), (6, 1, 2, 5), "{c:?}");
    let below = &r.levels[1].counters;
    assert_eq!((below.demand_accesses, below.inflight_demand_joins), (5, 0), "{below:?}");
    // The third request waits for the second one's read: it ends with it, less its 1 ms later start.
    let t = r.timing.unwrap();
    assert_eq!(t.reads.requests, 3);
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
    // The measured window starts at the first measured request's issue (15 ms, when the last warm-up
    // request completes), not at the last warm-up request's (10 ms): closed loop with one loop and no
    // think time, the makespan is the sum of the measured response times, 7 x 5 ms.
    assert_eq!((t.start_ns, t.makespan_ns, t.device.requests()), (15 * MS, 35 * MS, 7));
    assert_eq!(u128::from(t.makespan_ns), t.stall_ns);
    assert_eq!(t.end_ns - t.start_ns, 35 * MS);
    // One more request of warm-up measures one request (5 ms) less.
    cfg.engine.warmup_requests = 4;
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!((t.start_ns, t.makespan_ns, u128::from(t.makespan_ns)), (20 * MS, 30 * MS, t.stall_ns));
}

#[test]
fn an_open_loop_window_starts_at_the_first_measured_arrival() {
    // Arrivals every 10 ms, each a 5 ms miss. With 3 requests of warm-up the window runs from the 4th
    // arrival (30 ms) to the last completion (95 ms); the device and its utilisation count over it.
    let mut cfg = one_level(4, serde_json::json!("none"), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    cfg.engine.warmup_requests = 3;
    let reqs: Vec<Request> = (0..10u64).map(|i| at(i as f64 * 10.0, i * 10, 1)).collect();
    let t = run_t(&cfg, &reqs).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns), (30 * MS, 95 * MS, 65 * MS));
    assert_eq!((t.device.requests(), t.device.service_ns), (7, 35 * MS));
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
fn a_volume_lies_on_the_device_at_its_own_block_numbers() {
    // A multi-volume trace numbers its k-th volume's blocks from k * 2^VOLUME_SHIFT, to keep the volumes
    // apart in the caches; on the disk each volume's blocks lie at their numbers inside it (a timed run of
    // an SPC trace of several ASUs was refused as "past the end of the device"). The same reads in
    // volume 3 take the same device time as in volume 0.
    use prefetchsim_core::request::{device_block, VOLUME_SHIFT};
    let cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 64\n[engine]\nkind = 'timed'\nreplay = 'open'\n[device]\nname = 'cheetah9lp'\n",
    )
    .unwrap();
    let reqs: Vec<Request> = (0..200u64).map(|i| at(i as f64 * 20.0, (i * 7919) % 2_000_000, 2)).collect();
    let moved: Vec<Request> = reqs.iter().map(|r| Request { first: r.first + (3 << VOLUME_SHIFT), ..*r }).collect();
    assert_eq!(device_block(moved[5].first), reqs[5].first);
    let (a, b) = (run_t(&cfg, &reqs), run_t(&cfg, &moved));
    let (ta, tb) = (a.timing.as_ref().unwrap(), b.timing.as_ref().unwrap());
    assert_eq!(ta.device.service_ns, tb.device.service_ns);
    assert_eq!(ta.reads.mean_ms, tb.reads.mean_ms);
    assert_eq!(a.levels[0].counters, b.levels[0].counters);
}

#[test]
fn instant_runs_have_no_timing_fields() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 4\n").unwrap();
    let r = run_i(&cfg, &[Request::read(1, 1)]);
    assert!(r.timing.is_none());
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("timing").is_none());
}

#[test]
fn a_bio_smaller_than_a_block_is_an_error_naming_max_sectors() {
    // 7 sectors under 4 KiB blocks (8 sectors) split every block into two device requests, silently.
    let mut cfg = one_level(16, serde_json::json!("none"), 1.0);
    cfg.scheduler = Some(serde_json::from_value(serde_json::json!({"max_sectors": 7})).unwrap());
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let e = run_timed(&mut VecSource::new(vec![at(0.0, 0, 1)]), &mut h, &cfg, &mut Silent).unwrap_err().to_string();
    assert!(e.contains("scheduler.max_sectors") && e.contains("less than one cache block"), "{e}");
    cfg.scheduler = Some(serde_json::from_value(serde_json::json!({"max_sectors": 8})).unwrap());
    assert_eq!(run_t(&cfg, &[at(0.0, 0, 1)]).requests, 1);
}

#[test]
fn an_upper_prefetch_of_a_block_its_level_evicted_while_reading_it_joins_that_read() {
    // L2 (MQ, 3 blocks) reads block 0 with RA's 8 blocks ahead in one I/O; MQ inserts prefetched blocks
    // at its eviction end, so that access evicts most of 2..9 again while their read is in flight. At
    // 1 ms L1's OBL prefetches block 2, one of those: L2 must wait for the read in flight, not read it
    // again. Before, the upper prefetch missed, L2 sent a second fetch of block 2 and counted its block
    // twice in `fetched_blocks` (found by the sequential-prefetcher property test: a 24-block Linux
    // window into a 14-block MQ level under TaP).
    let mut cfg = HierarchyConfig {
        level: vec![
            level(8, "lru", serde_json::json!({"name": "obl", "variant": "always"})),
            level(3, "mq", serde_json::json!({"name": "ra", "p": 8})),
        ],
        engine: prefetchsim_core::config::EngineConfig { kind: EngineKind::Timed, ..Default::default() },
        device: Some(fixed_device(10.0)),
        link: Some(link(1.0, 0.0)),
        ..HierarchyConfig::default()
    };
    cfg.engine.replay = Some(Replay::Open);
    let reqs = vec![at(0.0, 0, 1), at(1.5, 1, 1)];
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    let r = run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap();
    let (l1, l2) = (&r.levels[0].counters, &r.levels[1].counters);
    assert_eq!(l1.fetches, 2, "{l1:?}");
    assert_eq!((l2.upper_prefetch_accesses, l2.fetches, l2.fetched_blocks), (2, 1, 10), "{l2:?}");
    assert_eq!(l2.fetched_blocks, w.read_blocks);
}

#[test]
fn a_pfc_bypass_of_a_block_the_server_evicted_while_reading_it_waits_for_that_read() {
    // L2 holds one block, so PFC's readmore blocks (33..40, read with 29..32) are evicted by the access
    // that reads them, their read still in flight. The next request bypasses 33..36: it must wait for
    // that read (`bypass_pending`), as for a bypassed block in flight in a frame. Before, it read them a
    // second time: L2's fetched plus bypassed blocks were 71 against the device's 65.
    let mut cfg = HierarchyConfig::from_toml(
        "[[level]]\nsize = 34\nprefetcher = { name = 'sarc', degree = 8, seq_threshold = 1 }\n\
         [[level]]\nsize = 1\npfc = { version = 'A' }\n",
    )
    .unwrap();
    cfg.engine.kind = EngineKind::Timed;
    cfg.engine.replay = Some(Replay::Open);
    cfg.engine.time_scale = Some(0.1);
    cfg.device = Some(fixed_device(0.1));
    cfg.link = Some(link(0.0, 0.03));
    let reqs: Vec<Request> = [(0, 1), (1, 7), (8, 1), (9, 2), (11, 7), (18, 8), (26, 3), (529, 8), (537, 8), (545, 1)]
        .iter()
        .enumerate()
        .map(|(i, &(first, len))| Request { time_ns: i as u64 * 100_000, first, len, ..Request::default() })
        .collect();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let mut w = Watch::default();
    let r = run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap();
    let l2 = &r.levels[1].counters;
    assert!(l2.bypass_pending > 0, "{l2:?}");
    assert_eq!(l2.fetched_blocks + l2.bypass_reads, w.read_blocks, "{l2:?}");
}

/// Two volumes' blocks at the same device sectors (the volumes share the device's LBA range) read at
/// once: the later read waits for the earlier and then reads (it stopped the run with "internal error:
/// scheduler refused a bio: bio overlaps a queued request"; the Tencent sample did so).
#[test]
fn two_volumes_blocks_at_the_same_sectors_read_at_once_are_read_one_after_the_other() {
    let mut cfg = one_level(16, serde_json::json!("none"), 5.0);
    cfg.engine.replay = Some(Replay::Open);
    let volume_1 = 1u64 << prefetchsim_core::request::VOLUME_SHIFT;
    // Block 10 keeps the device busy, so block 3 waits queued when its twin of volume 1 comes.
    let reqs = vec![at(0.0, 10, 1), at(0.0, 3, 1), at(0.0, volume_1 + 3, 1)];
    let r = run_t(&cfg, &reqs);
    assert_eq!(r.levels[0].counters.misses, 3, "three blocks: the volumes are apart in the cache");
    let t = r.timing.unwrap();
    assert_eq!((t.requests_incomplete, t.device.requests()), (0, 3));
    assert!(t.reads.max_ms >= 10.0, "the second volume's read of sector 24 waited for the first: {:?}", t.reads);
}
