//! STEP's delayed prefetch queue and virtual clock, raised priority at the level, and its prefetch as an I/O of its own in the timed engine.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Delayed prefetch queue (STEP §4.4) and the virtual clock.
// ---------------------------------------------------------------------------------------------------

/// With `clock = "engine"` the delayed queue runs on the requests' own times (the timed engine's clock).
#[test]
fn the_engine_clock_reads_the_requests_time() {
    let mut s = step(json!({"delayed": true, "clock": "engine"}));
    let lead = s.disk().mean_seek_ms() + 8.0 / s.sizing().bw;
    let at = |s: &mut Step, ms: f64, b: u64, n: u32| {
        let mut r = Request::read(b, n);
        r.time_ns = (ms * 1e6) as u64;
        drive(s, r, &misses(n))
    };
    at(&mut s, 0.0, 0, 8);
    assert!(at(&mut s, 300.0, 8, 8).is_empty());
    assert_eq!((s.stats().delayed, s.now_ms()), (1, 300.0));
    let fire = 600.0 - 2.0 * lead;
    assert!(at(&mut s, fire - 1.0, 5_000_000, 1).is_empty());
    assert_eq!(at(&mut s, fire + 0.5, 6_000_000, 1).len(), 1);
    assert_eq!(s.stats().fired, 1);
}

#[test]
fn a_prefetch_for_a_far_next_arrival_waits_for_its_timer() {
    let mut s = step(json!({"delayed": true}));
    let lead = s.disk().mean_seek_ms() + 8.0 / s.sizing().bw;
    let at = |s: &mut Step, t: f64, b: u64, n: u32| {
        s.set_now_ms(t);
        drive(s, Request::read(b, n), &misses(n))
    };
    assert!(at(&mut s, 0.0, 0, 8).is_empty());
    // Second request 300 ms later: low, one request (8 blocks) to prefetch; the next one is expected at
    // 600 ms, more than 100 ms away: the run waits until 600 - 2 x (mean seek + 8 / BW).
    assert!(at(&mut s, 300.0, 8, 8).is_empty());
    assert_eq!(s.stats().delayed, 1);
    let fire = 600.0 - 2.0 * lead;
    println!("timer at {fire:.2} ms");
    assert!(at(&mut s, fire - 1.0, 5_000_000, 1).is_empty());
    let r = at(&mut s, fire + 0.5, 6_000_000, 1);
    assert_eq!(r, vec![PrefetchRun { first: 16, len: 8, stream: 0, placement: Default::default() }]);
    assert_eq!(s.stats().fired, 1);
    // A stream that comes back before its timer takes the waiting run at once (minus what it reads).
    let mut s = step(json!({"delayed": true}));
    at(&mut s, 0.0, 100, 4);
    at(&mut s, 1000.0, 104, 4); // waits: next arrival at 2000
    assert_eq!(s.stats().delayed, 1);
    let r = at(&mut s, 1100.0, 108, 2);
    assert_eq!(r[0], PrefetchRun { first: 110, len: 2, stream: 0, placement: Default::default() });
    assert_eq!(s.stats().early, 1);
    // Without the delayed queue the run is issued at once.
    let mut s = step(json!({"delayed": false}));
    at(&mut s, 0.0, 0, 8);
    assert_eq!(at(&mut s, 300.0, 8, 8).len(), 1);
}

#[test]
fn the_disk_clock_adds_seek_and_transfer_of_each_request() {
    // The clock runs for the delayed queue only.
    let mut s = step(json!({"request_ms": 0.5, "delayed": true}));
    let bw = s.disk().blocks_per_ms();
    let mean = s.disk().mean_seek_ms();
    drive(&mut s, Request::read(1000, 4), &misses(4));
    let t1 = 0.5 + mean + 4.0 / bw; // no head position yet: a mean seek
    assert!((s.now_ms() - t1).abs() < 1e-9);
    drive(&mut s, Request::read(900_000, 2), &hits(2));
    assert!((s.now_ms() - t1 - 0.5).abs() < 1e-9, "a hit costs only the request time");
    let seek = s.disk().seek_ms(1003, 900_000);
    drive(&mut s, Request::read(900_000, 2), &misses(2));
    assert!((s.now_ms() - (t1 + 1.0 + seek + 2.0 / bw)).abs() < 1e-9);
    let mut r = step(json!({"clock": "requests", "request_ms": 2.0, "delayed": true}));
    for b in 0..5 {
        drive(&mut r, Request::read(b * 1000, 1), &misses(1));
    }
    assert_eq!(r.now_ms(), 10.0);
}

// ---------------------------------------------------------------------------------------------------
// Raised priority of prefetched blocks until first use (STEP §4.4), at the level.
// ---------------------------------------------------------------------------------------------------

/// Prefetches block 1000 on the first request; raises up to `cap` unused prefetched blocks.
struct OnceRaise {
    done: bool,
    cap: Option<usize>,
}

impl Prefetcher for OnceRaise {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if !std::mem::replace(&mut self.done, true) {
            ctx.prefetch(1000, 1);
        }
    }
    fn raise(&self) -> Option<Raise> {
        self.cap.map(|cap| Raise { cap, passes: u8::MAX })
    }
    fn attach(&mut self, _g: LevelGeometry) -> prefetchsim_core::prefetch::Capabilities {
        prefetchsim_core::prefetch::Capabilities { raises: self.cap.is_some(), ..Default::default() }
    }
}

#[test]
fn a_raised_block_outlives_other_blocks_until_its_first_use() {
    for cap in [None, Some(0), Some(1)] {
        let mut l = lru_level(4, Box::new(OnceRaise { done: false, cap }));
        let mut kept = Vec::new();
        for b in 1..=8 {
            serve(&mut l, Request::read(b, 1));
            kept.push(l.contains(1000));
        }
        if cap == Some(1) {
            // LRU would have evicted it at request 5; raised, the other blocks leave first.
            assert_eq!(kept, vec![true; 8]);
            assert_eq!(l.resident_blocks(), vec![6, 7, 8, 1000]);
            serve(&mut l, Request::read(1000, 1)); // first use: an ordinary hit, to MRU, no longer raised
            assert_eq!(l.counters().prefetch_hits, 1);
            for b in 9..=11 {
                serve(&mut l, Request::read(b, 1));
            }
            assert!(l.contains(1000));
            serve(&mut l, Request::read(12, 1));
            assert!(!l.contains(1000), "after its first use it ages like any block");
        } else if cap.is_none() {
            // Plain LRU: block 1 goes at request 4, block 1000 (prefetched with it) at request 5.
            assert_eq!(kept, vec![true, true, true, true, false, false, false, false]);
        } else {
            // A raise of 0 blocks: every unused prefetched block is over the cap and leaves first.
            assert_eq!(kept, vec![true, true, true, false, false, false, false, false]);
        }
    }
    // With nothing but raised blocks, the level still finds a victim (the oldest raised one).
    struct AllRaised;
    impl Prefetcher for AllRaised {
        fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
            let e = ctx.req.last();
            ctx.prefetch(e + 1, 3);
        }
        fn raise(&self) -> Option<Raise> {
            Some(Raise { cap: usize::MAX, passes: u8::MAX })
        }
        fn attach(&mut self, _g: LevelGeometry) -> prefetchsim_core::prefetch::Capabilities {
            prefetchsim_core::prefetch::Capabilities { raises: true, ..Default::default() }
        }
    }
    let mut l = lru_level(3, Box::new(AllRaised));
    for b in [0, 100, 200] {
        serve(&mut l, Request::read(b, 1));
    }
    assert_eq!(l.len(), 3);
}

// ---------------------------------------------------------------------------------------------------
// STEP's prefetch is an I/O of its own (§4.2.1), in the timed engine.
// ---------------------------------------------------------------------------------------------------

/// Device reads (first, len, start, done) and request completions of a timed run.
#[derive(Default)]
struct TimedReads {
    reads: Vec<(u64, u32, u64, u64)>,
    done: Vec<(u64, u64)>,
}

impl prefetchsim_core::engine::TimedObserver for TimedReads {
    fn read_start(&mut self, first: u64, len: u32, t: u64) {
        self.reads.push((first, len, t, u64::MAX));
    }
    fn read_done(&mut self, first: u64, len: u32, t: u64) {
        let r = self.reads.iter_mut().find(|r| r.0 == first && r.1 == len && r.3 == u64::MAX).expect("started");
        r.3 = t;
    }
    fn completed(&mut self, index: u64, t: u64) {
        self.done.push((index, t));
    }
}

/// Regression (issue 20, finding 7): STEP issues its prefetch "asynchronously after the fetch request is
/// fulfilled" (§4.2.1). With `prefetch_io = "apart"` (what `reproduce step` runs STEP with) the demand
/// read of the request that triggers a prefetch is read alone and the request does not wait for the
/// prefetch; before, demand and prefetch were one I/O the request waited for (still `joined`).
#[test]
fn steps_prefetch_is_read_after_the_demand_read_and_not_waited_for() {
    use prefetchsim_core::engine::{Silent, VecSource};
    use prefetchsim_core::run::run_timed_observed;
    const MS: u64 = 1_000_000;
    let run = |io: &str| {
        // A device of 5 ms per request plus 1 ms per 4 KiB block, FIFO, one request at a time.
        let cfg = HierarchyConfig::from_toml(&format!(
            "[[level]]\nsize = 1024\nprefetcher = {{ name = 'step' }}\n\
             [engine]\nkind = 'timed'\nreplay = 'open'\nprefetch_io = '{io}'\n\
             [device]\nname = 'fixed'\nread_latency_ms = 5.0\nbandwidth_mb_s = 4.096\n\
             [scheduler]\npolicy = 'noop'\nplugging = 'instant'\n"
        ))
        .unwrap();
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let mut w = TimedReads::default();
        // One stream of 8-block requests 100 ms apart: the second extends the new PC (new -> low), which
        // prefetches one estimated request, blocks 16-23; the third finds them cached.
        let reqs: Vec<Request> =
            (0..3u64).map(|i| Request { time_ns: 100 * i * MS, first: 8 * i, len: 8, ..Request::default() }).collect();
        run_timed_observed(&mut VecSource::new(reqs), &mut h, &cfg, &mut Silent, &mut w).unwrap();
        w
    };
    let apart = run("apart");
    let joined = run("joined");
    // Apart: the second request reads 8-15 alone (5 + 8 ms) and completes then; 16-23 follow.
    let rt = |w: &TimedReads, i: u64| w.done.iter().find(|d| d.0 == i).unwrap().1 - 100 * i * MS;
    assert_eq!(rt(&apart, 1), 13 * MS);
    let demand = *apart.reads.iter().find(|r| r.0 == 8).unwrap();
    let pf = *apart.reads.iter().find(|r| r.0 == 16).unwrap();
    assert_eq!((demand.1, pf.1), (8, 8));
    assert!(pf.2 >= demand.3, "the prefetch read starts after the demand read is done: {pf:?} {demand:?}");
    assert_eq!(rt(&apart, 2), 0, "the prefetched request is a hit");
    // Joined (the old behaviour): one read of 8-23, 5 + 16 ms, and the request waits for all of it.
    assert_eq!(rt(&joined, 1), 21 * MS);
    assert!(joined.reads.iter().any(|r| (r.0, r.1) == (8, 16)));
}
