//! Exclusive caching (`shared/docs/algorithms/multilevel.md`): DU sends the blocks L2 passes up to its
//! eviction end; DEMOTE caches L1's evictions at L2 and keeps what L2 sends up at its eviction end (the
//! reference's default), or with `demote_read_pos = "none"` drops it, so that without an L2 prefetcher no
//! block is ever in both levels (property, both engines). The options of each mode and their errors are
//! in [`options`](self) below the DEMOTE tests.

use prefetchsim_core::config::{EngineKind, HierarchyConfig, LevelConfig, Replay, SizeSpec};
use prefetchsim_core::engine::instant::serve;
use prefetchsim_core::engine::{Hierarchy, Silent, TimedObserver, VecSource};
use prefetchsim_core::eventlog::{Event, EventKind, MemorySink};
use prefetchsim_core::level::exclusive::Exclusive;
use prefetchsim_core::level::DemoteReadPos;
use prefetchsim_core::link::LinkParams;
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::request::{Fetch, Request};
use prefetchsim_core::run::{run_timed, run_timed_observed};
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

/// [`two_levels`] with DEMOTE's strict variant (`demote_read_pos = "none"`: a hit leaves L2, a miss is
/// not cached there).
fn strict_demote(l1: u64, l2: u64, l1_pf: &str) -> HierarchyConfig {
    let mut cfg = two_levels(l1, l2, l1_pf, "none", Exclusive::Demote);
    cfg.level[1].options.demote_read_pos = Some(DemoteReadPos::None);
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
fn demote_none_caches_l1_evictions_and_drops_blocks_sent_up() {
    // `demote_read_pos = "none"` (before the reference's options, DEMOTE's only behaviour).
    let mut h = Hierarchy::build(&strict_demote(2, 4, "none"), 4096, None).unwrap();
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
    fn demote_none_never_holds_a_block_at_both_levels(
        reqs in workload(), l1 in 1u64..8, l2 in 1u64..16, ra in any::<bool>()
    ) {
        let pf = if ra { "pfc-ra" } else { "none" };
        // Only with `none`: under the default `lru_end` a block sent up stays at L2 (its eviction end).
        let cfg = strict_demote(l1, l2, pf);
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
        // Strict: under the default `lru_end`, L2 caches 1 when it first misses it and hits it anyway.
        let mut t = strict_demote(1, 4, "none");
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

/// Events of a run recorded in memory, and the sink that records them.
fn memory_log() -> (std::sync::Arc<std::sync::Mutex<Vec<Event>>>, Box<MemorySink>) {
    let sink = MemorySink::default();
    (std::sync::Arc::clone(&sink.events), Box::new(sink))
}

/// Timed run: when each request was issued and completed, and when each device read ended.
#[derive(Default)]
struct Times {
    issued: Vec<u64>,
    completed: Vec<u64>,
    reads_done: Vec<(u64, u32, u64)>,
}

impl TimedObserver for Times {
    fn issued(&mut self, _index: u64, t: u64) {
        self.issued.push(t);
    }
    fn completed(&mut self, index: u64, t: u64) {
        let i = index as usize;
        self.completed.resize(self.completed.len().max(i + 1), 0);
        self.completed[i] = t;
    }
    fn read_done(&mut self, first: u64, len: u32, t: u64) {
        self.reads_done.push((first, len, t));
    }
}

/// Two levels, timed, open loop: L1 of `l1` blocks over a DEMOTE L2 of 8, a 2 ms device without a queue
/// policy, a link of 0.1 ms plus 0.05 ms per page. Strict DEMOTE (`demote_read_pos = "none"`), so that
/// L2 holds only what came down and a hit there can only be a demoted block.
/// A timed run of `reqs` with its event log and [`Times`].
fn run_logged(cfg: &HierarchyConfig, reqs: &[Request]) -> (RunResult, Hierarchy, Vec<Event>, Times) {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    let (events, sink) = memory_log();
    h.set_event_sink(sink);
    let mut times = Times::default();
    let r = run_timed_observed(&mut VecSource::new(reqs.to_vec()), &mut h, cfg, &mut Silent, &mut times).unwrap();
    let events = events.lock().unwrap().clone();
    (r, h, events, times)
}

fn timed_demote(l1: u64) -> HierarchyConfig {
    HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = {l1}\n[[level]]\nsize = 8\noptions = {{ exclusive = 'demote', demote_read_pos = 'none' }}\n\
         [engine]\nkind = 'timed'\nreplay = 'open'\n\
         [device]\nname = 'fixed'\nread_latency_ms = 2.0\n[scheduler]\npolicy = 'noop'\n\
         [link]\nalpha_ms = 0.1\nbeta_ms_per_page = 0.05\n"
    ))
    .unwrap()
}

#[test]
fn a_block_evicted_while_its_read_is_in_flight_goes_down_only_when_that_read_arrives() {
    // L1 of two blocks reads 0-3 at 0 ms: it inserts 0 and 1, evicts them for 2 and 3 within the same
    // access and sends one read of 0-3, which the device (2 ms) ends at 2.1 ms. L1 never had the data of
    // 0 and 1, so they go down only when that read arrives at L1 (2.4 ms). A request for 0 at 0.3 ms
    // misses at L1 and at L2 and waits for the device; before the fix it hit at L2 at 0.4 ms (rt 0.25 ms).
    let ms = 1_000_000u64;
    let cfg = timed_demote(2);
    let reqs = vec![
        Request { time_ns: 0, stream: 0, ..Request::read(0, 4) },
        Request { time_ns: 3 * ms / 10, stream: 1, ..Request::read(0, 1) },
    ];
    let (r, h, events, times) = run_logged(&cfg, &reqs);

    // The second request is not served before the device has read block 0.
    let read_end =
        times.reads_done.iter().filter(|&&(f, n, _)| f == 0 && n > 0).map(|&(_, _, t)| t).min().expect("block 0 read");
    let rt = times.completed[1] - reqs[1].time_ns;
    assert!(rt >= read_end - reqs[1].time_ns, "rt {rt} ns, block 0 read by the device at {read_end} ns");
    // L2 never hits block 0 (nor anything else).
    assert_eq!(r.levels[1].counters.hits, 0);
    assert!(!events.iter().any(|e| e.level == 1 && e.ev.kind == EventKind::Hit), "{events:?}");
    // L1's read of 0-3 arrives at 2.4 ms; only then do 0 and 1 go down (0.2 ms on the link). The second
    // request's block 0 was served without being cached at L1 (both its frames were in flight), so 0 lands
    // too.
    let arrived = l1_read_arrives(&events, 0, 4);
    let landed = landed_at_l2(&events);
    assert_eq!(landed.iter().map(|&(b, _)| b).collect::<Vec<_>>(), vec![0, 1], "{events:?}");
    for &(b, t) in &landed {
        assert!(t > arrived, "block {b} landed at {t} ns, L1's read of it arrived at {arrived} ns");
    }
    assert_eq!(r.levels[1].counters.demoted_in, 2);
    assert_eq!(h.levels[0].resident_blocks(), vec![2, 3]);
    assert_eq!(h.levels[1].resident_blocks(), vec![0, 1]);
}

/// When L1's fetch of `len` blocks from `first` arrives (its `fetch_done`), ns.
fn l1_read_arrives(events: &[Event], first: u64, len: u32) -> u64 {
    events
        .iter()
        .find(|e| e.level == 0 && e.ev.kind == EventKind::FetchDone && e.ev.block == first && e.ev.len == len)
        .unwrap_or_else(|| panic!("L1's read of {first}+{len} arrives: {events:?}"))
        .time
}

/// The blocks that landed at L2 (`demote_in`) and when, in order.
fn landed_at_l2(events: &[Event]) -> Vec<(u64, u64)> {
    events.iter().filter(|e| e.level == 1 && e.ev.kind == EventKind::DemoteIn).map(|e| (e.ev.block, e.time)).collect()
}

#[test]
fn a_block_evicted_in_flight_and_read_again_before_its_read_arrives_is_dropped_when_it_lands() {
    // L1 of one block. 12 (0 ms) goes down when 11 (3 ms) evicts it. At 6 ms, 10-12: 11 hits, 10 and 12
    // miss; caching 12 evicts 10, in flight: fetches [10] (L2 misses, device until 8.1 ms, back at 8.25
    // ms) and [12] (an L2 hit, back at 6.25 ms). At 7 ms 10 is asked again: L1 caches it (12 is ready)
    // and reads it again; L2 has not got it and joins its device read. When L1's first read of 10
    // arrives, 10 goes down and is dropped: L1 holds it again.
    let ms = 1_000_000u64;
    let cfg = timed_demote(1);
    let reqs: Vec<Request> = [(0, 12, 1), (3, 11, 1), (6, 10, 3), (7, 10, 1)]
        .map(|(at, b, n)| Request { time_ns: at * ms, ..Request::read(b, n) })
        .to_vec();
    let (r, h, events, times) = run_logged(&cfg, &reqs);
    let reads_of_10: Vec<u64> = times.reads_done.iter().filter(|&&(f, _, _)| f == 10).map(|&(_, _, t)| t).collect();
    assert_eq!(reads_of_10, vec![8 * ms + ms / 10], "one device read of 10");
    assert!(times.completed[3] >= reads_of_10[0], "the read of 10 at 7 ms ends at {} ns", times.completed[3]);
    // L2's one hit is 12; 10 never reaches it.
    assert_eq!(r.levels[1].counters.hits, 1);
    let landed: Vec<u64> =
        events.iter().filter(|e| e.level == 1 && e.ev.kind == EventKind::DemoteIn).map(|e| e.ev.block).collect();
    assert_eq!(landed, vec![12, 11, 12], "{events:?}");
    assert_eq!(h.levels[0].resident_blocks(), vec![10]);
    assert_eq!(h.levels[1].resident_blocks(), vec![11, 12]);
}

#[test]
fn a_block_l1_prefetched_and_evicted_while_reading_it_goes_down_when_that_read_arrives() {
    // L1 of two blocks with RA(4): a miss on 0 reads 0-4 in one fetch; caching the prefetched 1-4
    // evicts 0, 2 and 1 within the access, in flight. A request for 2 at 0.3 ms misses at L1 and L2 (the
    // blocks have not come down) and waits for the device; 0, 1 and 2 land after L1's read arrives.
    let ms = 1_000_000u64;
    let mut cfg = timed_demote(2);
    cfg.level[0].prefetcher = serde_json::from_value(serde_json::json!("pfc-ra")).unwrap();
    let reqs = vec![Request::read(0, 1), Request { time_ns: 3 * ms / 10, stream: 1, ..Request::read(2, 1) }];
    let (r, _, events, times) = run_logged(&cfg, &reqs);
    let read_end = times.reads_done.iter().find(|&&(f, n, _)| f == 0 && n == 5).expect("one read of 0-4").2;
    assert!(times.completed[1] >= read_end, "the request for 2 ends at {} ns", times.completed[1]);
    assert_eq!(r.levels[1].counters.hits, 0);
    let arrived = l1_read_arrives(&events, 0, 5);
    let landed = landed_at_l2(&events);
    // In eviction order (RA's blocks go in at the eviction end: 2 went before 1).
    assert_eq!(landed.iter().map(|&(b, _)| b).collect::<Vec<_>>(), vec![0, 2, 1], "{events:?}");
    assert!(landed.iter().all(|&(_, t)| t > arrived), "{landed:?}, L1's read arrived at {arrived} ns");
}

#[test]
fn instant_a_block_evicted_by_the_access_that_fetches_it_lands_below_after_the_lower_access() {
    // L1 of two blocks reads 0-3: it inserts 0 and 1 and evicts them for 2 and 3 within the access. L2
    // serves the fetch of 0-3 first (four misses, read from below), then 0 and 1 land. Before, they landed
    // before L2's access, which then hit them: data L1 never had.
    // Strict (`none`): L2 holds only what came down, not also the blocks it sent up.
    let mut h = Hierarchy::build(&strict_demote(2, 8, "none"), 4096, None).unwrap();
    let (events, sink) = memory_log();
    h.set_event_sink(sink);
    let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
    serve(&mut h, &mut scratch, &Request::read(0, 4));
    h.log_all(0);
    assert_eq!(h.levels[1].counters().hits, 0);
    assert_eq!(h.levels[1].counters().misses, 4);
    assert_eq!(h.levels[1].counters().demoted_in, 2);
    assert_eq!(h.levels[1].resident_blocks(), vec![0, 1]);
    assert_eq!(h.levels[0].resident_blocks(), vec![2, 3]);
    let l2: Vec<(EventKind, u64)> =
        events.lock().unwrap().iter().filter(|e| e.level == 1).map(|e| (e.ev.kind, e.ev.block)).collect();
    let at = |kind, block| l2.iter().position(|&e| e == (kind, block)).unwrap_or_else(|| panic!("{l2:?}"));
    for b in [0, 1] {
        assert!(at(EventKind::Miss, b) < at(EventKind::DemoteIn, b), "{l2:?}");
    }
    // A block evicted that was ready still goes down at once: 2 (ready now) is evicted by reading 4,
    // lands before L2's access for 4, and a later read of 2 hits at L2.
    feed(&mut h, &reads(&[4, 2]));
    assert_eq!(h.levels[1].counters().hits, 1);
}

#[test]
fn an_arrival_admitted_at_a_completion_goes_in_after_the_demotions_that_completion_releases() {
    // L1 of two blocks over strict DEMOTE L2, a 1 ms device, a zero link. A (0-3 at 0 ms) evicts 0 and 1
    // while reading them: they go down when the read arrives at L1, at 1 ms, as A completes. B (block 0)
    // arrives at 1 ms, or at 0.5 ms under max_outstanding = 1 and is admitted at 1 ms, when A completes.
    // Either way it is the trace's next request at 1 ms and goes in after that instant's held demotions:
    // 0 lands at L2 and B hits it there. Admitted inside A's completion, B reached L1 first, 0 was dropped
    // on landing (L1 held it again) and B waited for a second device read (done at 2 ms).
    let ms = 1_000_000u64;
    let base =
        "[[level]]\nsize = 2\n[[level]]\nsize = 8\noptions = { exclusive = 'demote', demote_read_pos = 'none' }\n\
         [device]\nname = 'fixed'\nread_latency_ms = 1.0\n[scheduler]\npolicy = 'noop'\n\
         [link]\nalpha_ms = 0.0\nbeta_ms_per_page = 0.0\n[engine]\nkind = 'timed'\nreplay = 'open'\n";
    for (b_at, admission) in [(ms, ""), (ms / 2, "max_outstanding = 1\n")] {
        let cfg = HierarchyConfig::from_toml(&format!("{base}{admission}")).unwrap();
        let reqs = vec![Request::read(0, 4), Request { time_ns: b_at, ..Request::read(0, 1) }];
        let (r, _, events, times) = run_logged(&cfg, &reqs);
        let l2 = &r.levels[1].counters;
        assert_eq!((l2.hits, l2.demoted_in), (1, 3), "B at {b_at} ns {admission}: {l2:?}");
        assert_eq!(times.completed, vec![ms, ms], "B at {b_at} ns {admission}");
        let b_at_l1 = events
            .iter()
            .position(|e| e.level == 0 && e.ev.kind == EventKind::Request && e.ev.len == 1)
            .expect("B at L1");
        let landed =
            |b| events.iter().position(|e| e.level == 1 && e.ev.kind == EventKind::DemoteIn && e.ev.block == b);
        assert!(landed(0).is_some_and(|i| i < b_at_l1), "B at {b_at} ns {admission}: {events:?}");
    }
}
