//! Levels of several caches (`per_client = true`, `instances = K`): clients are isolated from each other's
//! L1, disjoint clients behave like separate runs, both engines count the same with zero latencies, DEMOTE
//! keeps every client's L1 disjoint from the server, and bad keys are errors naming them.

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::{EngineKind, HierarchyConfig, LevelConfig, Replay, SizeSpec};
use prefetchsim_core::engine::instant::serve;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::exclusive::Exclusive;
use prefetchsim_core::level::fanout::Route;
use prefetchsim_core::link::LinkParams;
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::request::{Fetch, Request};
use prefetchsim_core::run::run_timed;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn device(ms: f64) -> ComponentSpec {
    serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": ms, "write_latency_ms": ms})).unwrap()
}

fn timed(cfg: &HierarchyConfig, alpha_ms: f64, device_ms: f64) -> HierarchyConfig {
    let mut t = cfg.clone();
    t.engine.kind = EngineKind::Timed;
    t.engine.replay = Some(Replay::Open);
    t.link = Some(LinkParams { alpha_ms, beta_ms_per_page: alpha_ms / 10.0, ..LinkParams::default() });
    t.device = Some(device(device_ms));
    t
}

fn run(cfg: &HierarchyConfig, reqs: &[Request]) -> RunResult {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    match cfg.engine.kind {
        EngineKind::Instant => run_instant(&mut VecSource::new(reqs.to_vec()), &mut h, &cfg.engine, &mut Silent),
        EngineKind::Timed => run_timed(&mut VecSource::new(reqs.to_vec()), &mut h, cfg, &mut Silent),
    }
    .unwrap()
}

fn level(size: u64, prefetcher: &str) -> LevelConfig {
    let mut l = LevelConfig::new(SizeSpec::Blocks(size), "lru");
    l.prefetcher = serde_json::from_value(serde_json::json!(prefetcher)).unwrap();
    l
}

fn cfg(levels: Vec<LevelConfig>) -> HierarchyConfig {
    HierarchyConfig { level: levels, ..HierarchyConfig::default() }
}

fn req(t: u64, client: u32, first: u64, len: u32) -> Request {
    Request { time_ns: t * MS, first, len, client, stream: client, ..Request::default() }
}

#[test]
fn a_client_never_hits_in_another_clients_l1() {
    let mut l1 = level(8, "none");
    l1.per_client = true;
    let c = cfg(vec![l1, level(64, "none")]);
    // Client 0 reads 1..4 twice; client 1 then reads the same blocks twice: its first pass misses at its
    // own L1 (hits at the shared L2), its second hits.
    let mut reqs = Vec::new();
    for (i, cl) in [0, 0, 1, 1].into_iter().enumerate() {
        reqs.push(req(10 * i as u64, cl, 1, 4));
    }
    for r in [run(&c, &reqs), run(&timed(&c, 1.0, 5.0), &reqs)] {
        let l1 = &r.levels[0];
        assert_eq!(l1.instances.len(), 2);
        for (k, inst) in l1.instances.iter().enumerate() {
            assert_eq!((inst.instance, inst.client), (k as u32, Some(k as u32)));
            assert_eq!((inst.counters.hits, inst.counters.misses), (4, 4), "client {k}");
        }
        assert_eq!((l1.counters.hits, l1.counters.misses), (8, 8), "the level's counters are the sum");
        assert_eq!(l1.capacity_blocks, 8, "the capacity is one instance's");
        assert_eq!((r.levels[1].counters.hits, r.levels[1].counters.misses), (4, 4));
    }
}

#[test]
fn the_timed_engine_routes_arrivals_to_the_client_that_fetched() {
    // Both clients miss the same block at the same instant: two fetches in flight, each completing at
    // its own client's L1 (a completion routed to the wrong instance would leave a block pinned).
    let mut l1 = level(4, "none");
    l1.per_client = true;
    let c = timed(&cfg(vec![l1, level(16, "none")]), 1.0, 5.0);
    let reqs = vec![req(0, 0, 7, 1), req(0, 1, 7, 1), req(1, 1, 7, 1), req(30, 0, 7, 1), req(30, 1, 7, 1)];
    let mut h = Hierarchy::build(&c, 4096, None).unwrap();
    let r = run_timed(&mut VecSource::new(reqs), &mut h, &c, &mut Silent).unwrap();
    assert_eq!(h.levels[0].pinned_count(), 0);
    let inst = &r.levels[0].instances;
    // Client 1's second request joins its own read in flight; both clients hit at t = 30 ms.
    assert_eq!(inst[0].counters.hits, 1);
    assert_eq!((inst[1].counters.hits, inst[1].counters.inflight_demand_joins), (1, 1));
    assert_eq!(r.timing.unwrap().requests_incomplete, 0);
}

#[test]
fn k_servers_route_by_client_or_by_stripe() {
    let mut l1 = level(2, "none");
    l1.per_client = true;
    let mut l2 = level(16, "none");
    l2.instances = 2;
    // Clients 0, 1, 2, 3 read block 5 then 100: by client, servers 0 and 1 each serve two clients.
    let reqs: Vec<Request> =
        (0..4).flat_map(|c| [req(c * 10, c as u32, 5, 1), req(c * 10 + 1, c as u32, 100, 1)]).collect();
    let r = run(&cfg(vec![l1.clone(), l2.clone()]), &reqs);
    let s = &r.levels[1].instances;
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|i| i.client.is_none()));
    assert_eq!(s.iter().map(|i| (i.counters.misses, i.counters.hits)).collect::<Vec<_>>(), vec![(2, 2), (2, 2)]);
    // By stripe of 64 blocks: block 5 is stripe 0 (server 0), block 100 stripe 1 (server 1).
    l2.route = Some(Route::Stripe);
    let r = run(&cfg(vec![l1, l2]), &reqs);
    let s = &r.levels[1].instances;
    assert_eq!(s.iter().map(|i| (i.counters.misses, i.counters.hits)).collect::<Vec<_>>(), vec![(1, 3), (1, 3)]);
}

#[test]
fn bad_fan_out_keys_are_errors_naming_the_key() {
    let build = |toml: &str| match HierarchyConfig::from_toml(toml) {
        Err(e) => e.path,
        Ok(c) => Hierarchy::build(&c, 4096, None).err().map(|e| e.path).unwrap_or_default(),
    };
    assert_eq!(build("[[level]]\nsize = 4\ninstances = 0\n"), "level[0].instances");
    assert_eq!(build("[[level]]\nsize = 4\n[[level]]\nsize = 4\ninstances = 0\n"), "level[1].instances");
    assert_eq!(build("[[level]]\nsize = 1\ninstances = 100000000\n"), "level[0].instances");
    assert_eq!(build("[[level]]\nsize = 4\ninstances = -1\n"), "level[0].instances");
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\ninstances = 2\n"), "level[0].instances");
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\nroute = 'stripe'\n"), "level[0].route");
    // Keys that cannot apply, even when they spell out the default, were accepted and ignored.
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\nroute = 'client'\n"), "level[0].route");
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\nstripe_blocks = 8\n"), "level[0].stripe_blocks");
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\nstripe_blocks = 64\n"), "level[0].stripe_blocks");
    assert_eq!(
        build("[[level]]\nsize = 4\ninstances = 2\nroute = 'client'\nstripe_blocks = 8\n"),
        "level[0].stripe_blocks"
    );
    assert_eq!(build("[[level]]\nsize = 4\ninstances = 2\nstripe_blocks = 8\n"), "level[0].stripe_blocks");
    assert_eq!(build("[[level]]\nsize = 4\ninstances = 2\nroute = 'stripe'\nstripe_blocks = 8\n"), "");
    assert_eq!(build("[[level]]\nsize = 4\ninstances = 2\nroute = 'client'\n"), "");
    // The same checks where configs are checked without being built (sweeps canonicalise them).
    let c = HierarchyConfig::from_toml("[[level]]\nsize = 4\nper_client = true\nroute = 'client'\n").unwrap();
    assert_eq!(prefetchsim_core::build::check_level("level[0]", &c.level[0]).unwrap_err().path, "level[0].route");
    assert_eq!(
        build("[[level]]\nsize = 4\ninstances = 2\nroute = 'stripe'\nstripe_blocks = 0\n"),
        "level[0].stripe_blocks"
    );
    assert!(build("[[level]]\nsize = 4\ninstances = 2\nroute = 'hash'\n").starts_with("level[0]"));
    assert!(build("[[level]]\nsize = 4\nper_clients = true\n").starts_with("level[0]"));
    assert_eq!(build("[[level]]\nsize = 4\nper_client = true\n[[level]]\nsize = 8\ninstances = 3\n"), "");
}

#[test]
fn a_config_without_fan_out_keys_serialises_as_before() {
    let c = HierarchyConfig::from_toml("[[level]]\nsize = 4\n").unwrap();
    let s = serde_json::to_string(&c.level[0]).unwrap();
    for key in ["per_client", "instances", "route", "stripe_blocks"] {
        assert!(!s.contains(key), "{s}");
    }
    // A default spelled out serialises as left out: sweeps hash this form.
    let c = HierarchyConfig::from_toml("[[level]]\nsize = 4\ninstances = 2\nroute = 'client'\n").unwrap();
    assert!(!serde_json::to_string(&c.level[0]).unwrap().contains("route"));
    let c = HierarchyConfig::from_toml("[[level]]\nsize = 4\ninstances = 2\nroute = 'stripe'\nstripe_blocks = 64\n")
        .unwrap();
    let s = serde_json::to_string(&c.level[0]).unwrap();
    assert!(s.contains("\"route\":\"stripe\"") && !s.contains("stripe_blocks"), "{s}");
}

// Properties.

/// `n` clients over disjoint block ranges (client c's blocks are client 0's plus c x 10 000).
fn disjoint_clients(n: u32) -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u32..n, 0u64..120, 1u32..6), 1..250).prop_map(|v| {
        v.into_iter().enumerate().map(|(i, (c, b, n))| req(i as u64, c, b + u64::from(c) * 10_000, n)).collect()
    })
}

fn prefetcher() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("none"), Just("obl"), Just("pfc-ra"), Just("linux")]
}

/// Requests of three clients over one small space (clients share blocks), with time gaps.
fn shared_clients() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u32..3, 0u64..150, 1u32..6, 0u64..3), 1..250).prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .map(|(c, b, n, gap)| {
                t += gap;
                req(t, c, b, n)
            })
            .collect()
    })
}

/// A per-client L1 over one to two more levels, each of K = 1..3 servers routed by client or stripe,
/// with DU, DEMOTE or PFC at the second level.
fn multi_hierarchy() -> impl Strategy<Value = HierarchyConfig> {
    (
        1u64..24,
        prefetcher(),
        prop::collection::vec((1u64..48, prefetcher(), 1u32..4, any::<bool>(), 1u64..40), 1..3),
        0usize..4,
    )
        .prop_map(|(l1, pf1, lower, coord)| {
            let mut top = level(l1, pf1);
            top.per_client = true;
            let mut levels = vec![top];
            for (size, pf, k, stripe, unit) in lower {
                let mut l = level(size, pf);
                l.instances = k;
                if stripe {
                    l.route = Some(Route::Stripe);
                    l.stripe_blocks = Some(unit);
                }
                levels.push(l);
            }
            match coord {
                1 => levels[1].options.exclusive = Exclusive::Du,
                2 => levels[1].options.exclusive = Exclusive::Demote,
                3 => levels[1].pfc = Some(serde_json::from_value(serde_json::json!({"per_client": true})).unwrap()),
                _ => {}
            }
            cfg(levels)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn disjoint_clients_with_their_own_l1_behave_like_separate_runs(
        reqs in disjoint_clients(2), c in 1u64..24, pf in prefetcher(), time in any::<bool>()
    ) {
        let mut l1 = level(c, pf);
        l1.per_client = true;
        let shared = cfg(vec![l1, level(2 * c, "pfc-ra")]);
        let alone = cfg(vec![level(c, pf)]);
        let (shared, alone) =
            if time { (timed(&shared, 0.0, 0.0), timed(&alone, 0.0, 0.0)) } else { (shared, alone) };
        let r = run(&shared, &reqs);
        for client in 0..2u32 {
            let mine: Vec<Request> = reqs.iter().filter(|q| q.client == client).copied().collect();
            let inst = r.levels[0].instances.iter().find(|i| i.client == Some(client));
            if mine.is_empty() {
                prop_assert!(inst.is_none());
                continue;
            }
            let single = run(&alone, &mine);
            prop_assert_eq!(&inst.unwrap().counters, &single.levels[0].counters, "client {}", client);
        }
    }

    #[test]
    fn zero_latency_timed_runs_count_what_instant_runs_count(reqs in shared_clients(), c in multi_hierarchy()) {
        let i = run(&c, &reqs);
        let t = run(&timed(&c, 0.0, 0.0), &reqs);
        for (x, y) in i.levels.iter().zip(&t.levels) {
            prop_assert_eq!(&x.counters, &y.counters, "level {}", x.level);
            prop_assert_eq!(&x.instances, &y.instances, "level {}", x.level);
        }
    }

    #[test]
    fn timed_runs_with_latencies_complete_and_leave_nothing_pinned(reqs in shared_clients(), c in multi_hierarchy()) {
        let t = timed(&c, 0.5, 4.0);
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        let r = run_timed(&mut VecSource::new(reqs.clone()), &mut h, &t, &mut Silent).unwrap();
        prop_assert_eq!(r.timing.unwrap().requests_incomplete, 0);
        for l in &h.levels {
            prop_assert_eq!(l.pinned_count(), 0);
            prop_assert_eq!(l.check_invariants(), Ok(()));
        }
    }

    /// Clients over disjoint blocks: with shared blocks, client B may hold a block client A demoted
    /// (multilevel.md: multi-client DEMOTE is not modelled beyond this).
    #[test]
    fn demote_never_holds_a_block_in_a_clients_l1_and_its_server(
        reqs in disjoint_clients(3), l1 in 1u64..8, l2 in 1u64..16, k in 1u32..3, ra in any::<bool>()
    ) {
        let mut top = level(l1, if ra { "pfc-ra" } else { "none" });
        top.per_client = true;
        let mut server = level(l2, "none");
        server.instances = k;
        server.options.exclusive = Exclusive::Demote;
        // Strict exclusivity: the reference's default (`lru_end`) keeps blocks sent up at the server's
        // eviction end, in both caches until the server evicts them.
        server.options.demote_read_pos = Some(prefetchsim_core::level::DemoteReadPos::None);
        let c = cfg(vec![top, server]);
        let disjoint = |h: &Hierarchy| -> Result<(), String> {
            for (client, l1) in h.levels[0].instances() {
                let servers = h.levels[1].instances();
                let srv = if k == 1 { h.levels[1].as_ref() } else { servers[(client % k) as usize].1 };
                for b in l1.resident_blocks() {
                    if srv.contains(b) {
                        return Err(format!("block {b} is in client {client}'s L1 and in its server"));
                    }
                }
            }
            Ok(())
        };
        let mut h = Hierarchy::build(&c, 4096, None).unwrap();
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        for r in &reqs {
            serve(&mut h, &mut scratch, r);
            prop_assert_eq!(disjoint(&h), Ok(()));
        }
        let t = timed(&c, 1.0, 3.0);
        let mut h = Hierarchy::build(&t, 4096, None).unwrap();
        run_timed(&mut VecSource::new(reqs.clone()), &mut h, &t, &mut Silent).unwrap();
        prop_assert_eq!(disjoint(&h), Ok(()));
        prop_assert_eq!(h.levels[1].pinned_count(), 0);
    }
}

/// A client that will send nothing more (the live server's closed connection) has its per-client cache
/// freed, and every report stays what it is when the cache is kept: its own record, the level's sums.
#[test]
fn a_retired_clients_cache_is_freed_and_every_report_stays_the_same() {
    let mut l1 = level(16, "ra");
    l1.per_client = true;
    let c = cfg(vec![l1, level(64, "none")]);
    // Clients 0..3 interleaved; client 1 ends early, the others go on.
    let mut reqs: Vec<Request> =
        (0..300u64).map(|i| req(i, (i % 3) as u32, (i % 3) * 1000 + (i * 7) % 40, 2)).collect();
    reqs.retain(|r| r.client != 1 || r.time_ns < 150 * MS);
    let run_with = |retire: bool| {
        let mut h = Hierarchy::build(&c, 4096, None).unwrap();
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        let mut retired = false;
        for r in &reqs {
            if retire && !retired && r.time_ns >= 150 * MS {
                let before = h.levels[0].len();
                assert!(h.levels[0].retire_client(1), "client 1's cache is retired");
                assert!(h.levels[0].len() < before, "its blocks are gone from the level");
                assert!(!h.levels[0].retire_client(1), "a second time: nothing to retire");
                assert!(!h.levels[1].retire_client(0), "a level of one cache has no client's cache");
                retired = true;
            }
            serve(&mut h, &mut scratch, r);
        }
        assert_eq!(retired, retire);
        let clients: Vec<u32> = h.levels[0].instances().iter().map(|(k, _)| *k).collect();
        for l in &mut h.levels {
            l.finish();
        }
        let reports: Vec<_> = h.reports().iter().map(|r| (r.record(), r.instance_records())).collect();
        (format!("{reports:?}"), clients)
    };
    let (kept, kept_clients) = run_with(false);
    let (freed, freed_clients) = run_with(true);
    assert_eq!(kept_clients, [0, 1, 2]);
    assert_eq!(freed_clients, [0, 2]);
    assert!(kept.contains("prefetch_used"), "{kept}");
    assert_eq!(freed, kept);
}

/// DEMOTE over striped servers (`route = "stripe"`): a request goes whole to the server of its first
/// block, a demoted block to the server of its own stripe. A block of a request that crosses a stripe
/// boundary can so be demoted to a server its reads never reach (the documented limitation,
/// clients-servers.md). One client, L1 of 2, two servers, stripe 4: [3, 4] goes to server 0 (stripe of
/// 3); L1 evicts 4 while reading 9 and demotes it to server 1 (stripe of 4); [3, 4] again goes to server
/// 0, and 4 ends up in L1 and in server 1, with `demote_read_pos = "none"` as with the default.
#[test]
fn demote_over_stripes_can_leave_a_block_of_a_request_across_a_stripe_in_l1_and_another_server() {
    for read_pos in [None, Some(prefetchsim_core::level::DemoteReadPos::None)] {
        let mut server = level(8, "none");
        server.instances = 2;
        server.route = Some(Route::Stripe);
        server.stripe_blocks = Some(4);
        server.options.exclusive = Exclusive::Demote;
        server.options.demote_read_pos = read_pos;
        let mut h = Hierarchy::build(&cfg(vec![level(2, "none"), server]), 4096, None).unwrap();
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        for (first, len) in [(3, 2), (8, 1), (9, 1), (3, 2)] {
            serve(&mut h, &mut scratch, &req(0, 0, first, len));
        }
        assert_eq!(h.levels[0].resident_blocks(), vec![3, 4], "{read_pos:?}");
        let servers = h.levels[1].instances();
        assert!(servers[1].1.contains(4), "{read_pos:?}: server 1 holds {:?}", servers[1].1.resident_blocks());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// With one-block requests a block's reads and its demotions reach the same striped server, so strict
    /// DEMOTE keeps L1 disjoint from every server.
    #[test]
    fn strict_demote_over_stripes_with_one_block_requests_is_exclusive(
        blocks in prop::collection::vec(0u64..64, 1..200), l1 in 1u64..8, l2 in 1u64..16, k in 2u32..4, unit in 1u64..8
    ) {
        let mut server = level(l2, "none");
        server.instances = k;
        server.route = Some(Route::Stripe);
        server.stripe_blocks = Some(unit);
        server.options.exclusive = Exclusive::Demote;
        server.options.demote_read_pos = Some(prefetchsim_core::level::DemoteReadPos::None);
        let mut h = Hierarchy::build(&cfg(vec![level(l1, "none"), server]), 4096, None).unwrap();
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        for &b in &blocks {
            serve(&mut h, &mut scratch, &req(0, 0, b, 1));
            for b in h.levels[0].resident_blocks() {
                let holders: Vec<u32> =
                    h.levels[1].instances().iter().filter(|(_, s)| s.contains(b)).map(|&(i, _)| i).collect();
                prop_assert!(holders.is_empty(), "block {} in L1 and in servers {:?}", b, holders);
            }
        }
    }
}
