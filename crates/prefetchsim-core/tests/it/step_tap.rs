//! STEP and TaP: the STEP paper's neighborhood example, PC queue promotion, demotion and purging, the
//! earning function's maximiser, thrashing intensity on a hand-made interleaving, the delayed queue,
//! raised priority at the level, TaP's detection table and prefetch-cache sizing, the acceptance checks
//! (interleaved sequential streams against Linux read-ahead, a uniformly random trace), configuration
//! errors, and the level invariants under random workloads (`shared/docs/algorithms/step.md`, `tap.md`).

use std::sync::{Arc, Mutex, MutexGuard};

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::Hierarchy;
use prefetchsim_core::level::{AnyLevel, CacheLevel, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::{BlockTable, Entry, FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::step::context::Queue;
use prefetchsim_core::prefetch::step::cost::{Costs, Pdf, PdfShape};
use prefetchsim_core::prefetch::step::{Step, StepParams, StepPreset};
use prefetchsim_core::prefetch::tap::{Tap, TapParams};
use prefetchsim_core::prefetch::{
    CacheView, LevelGeometry, Outcome, PrefetchCtx, PrefetchPlan, PrefetchRun, Prefetcher, Raise,
};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------------

/// A prefetcher shared between a level and the test, so that its state can be read between requests.
struct Shared<T>(Arc<Mutex<T>>);

impl<T> Shared<T> {
    fn new(inner: T) -> (Box<Self>, Arc<Mutex<T>>) {
        let a = Arc::new(Mutex::new(inner));
        (Box::new(Self(a.clone())), a)
    }
}

impl<T: Prefetcher> Prefetcher for Shared<T> {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.0.lock().unwrap().on_access(ctx);
    }
    fn on_evicted(&mut self, e: &Entry) {
        self.0.lock().unwrap().on_evicted(e);
    }
    fn raise(&self) -> Option<Raise> {
        self.0.lock().unwrap().raise()
    }
    fn attach(&mut self, g: LevelGeometry) -> prefetchsim_core::prefetch::Capabilities {
        self.0.lock().unwrap().attach(g)
    }
    fn metadata_bytes(&self) -> u64 {
        self.0.lock().unwrap().metadata_bytes()
    }
}

fn lru_level(capacity: usize, pf: Box<dyn Prefetcher>) -> Level<Lru> {
    let env = PolicyEnv { capacity, first_hit: FirstHit::Promote };
    Level::new(capacity, Lru::new(&env), pf, LevelOptions::default())
}

fn serve(level: &mut dyn AnyLevel, req: Request) -> Vec<Fetch> {
    let mut out = Vec::new();
    level.access(&req, req.len, &mut out);
    level.check_invariants().unwrap_or_else(|e| panic!("after {req:?}: {e}"));
    out
}

fn step(params: Value) -> Step {
    let p: StepParams = serde_json::from_value(params).unwrap();
    Step::new("step", p).unwrap_or_else(|e| panic!("{e}"))
}

/// A prefetcher from the registry, as a config names it.
fn pf(name: &str, params: Value) -> Box<dyn Prefetcher> {
    let Value::Object(params) = params else { panic!("params must be a table") };
    prefetchsim_core::build::build_prefetcher("test", &ComponentSpec { name: name.into(), params })
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// Call `p` directly with a request whose blocks had `outcomes` (a cache holding none of the blocks
/// beyond); returns the prefetch runs asked for.
fn drive(p: &mut dyn Prefetcher, req: Request, outcomes: &[Outcome]) -> Vec<PrefetchRun> {
    let table = BlockTable::with_capacity(0);
    let mut plan = PrefetchPlan::default();
    let mut ctx = PrefetchCtx {
        req: &req,
        demand_len: req.len,
        outcomes,
        cache: CacheView::new(&table, 1 << 20),
        plan: &mut plan,
    };
    p.on_access(&mut ctx);
    plan.runs
}

fn misses(n: u32) -> Vec<Outcome> {
    vec![Outcome::Miss; n as usize]
}

fn hits(n: u32) -> Vec<Outcome> {
    vec![Outcome::Hit; n as usize]
}

/// First uses of prefetched blocks.
fn pf_hits(n: u32) -> Vec<Outcome> {
    vec![Outcome::PrefetchHit; n as usize]
}

fn lock<T>(a: &Arc<Mutex<T>>) -> MutexGuard<'_, T> {
    a.lock().unwrap()
}

// ---------------------------------------------------------------------------------------------------
// The paper's neighborhood example (STEP §4.1.2).
// ---------------------------------------------------------------------------------------------------

#[test]
fn the_papers_neighborhood_example_counts_four_seeks() {
    // "a block access sequence of 20046, 46, 234546, 47, 48, 9848 ... we can group subsequence 46, 47, 48
    // as neighborhood accesses ... the distance traveled is |46 - 20046| + |234546 - 46| + |47 - 234546| +
    // |9848 - 48| blocks, and the number of seeks is 4."
    let mut s = step(json!({}));
    for b in [20046, 46, 234_546, 47, 48, 9848] {
        drive(&mut s, Request::read(b, 1), &misses(1));
    }
    s.check().unwrap();
    let hood = s.context_for(49).expect("46-48 is one PC");
    assert_eq!(hood.x, 3);
    assert_eq!(hood.thrash.seeks, 4);
    assert_eq!(hood.thrash.distance, 20_000 + 234_500 + 234_499 + 9_800);
    assert_eq!(hood.thrash.distance, 498_799);
    assert_eq!(hood.thrash.events, 5, "four seeks and the head-free step 47 -> 48");
    // Its intensity, event by event (α = 0.2), from the Cheetah 9LP seek times of the four seeks.
    let d = s.disk();
    let c = [d.seek_ms(20046, 46), d.seek_ms(46, 234_546), d.seek_ms(234_546, 47), 0.0, d.seek_ms(48, 9848)];
    let mut intensity = 0.0;
    for (i, &sc) in c.iter().enumerate() {
        let i = (i + 1) as f64;
        intensity = intensity * 0.8 * (i - 1.0) / i + sc * (0.2 * (i - 1.0) + 1.0) / i;
    }
    println!("neighborhood 46-48: seek costs {c:.3?} ms, intensity {intensity:.3} ms");
    assert!((hood.thrash.intensity - intensity).abs() < 1e-12);
    // The other neighborhoods: 20046 was left once, 234546 entered and left, 9848 entered.
    let seeks = |next: u64| s.context_for(next).map(|p| (p.thrash.seeks, p.thrash.distance));
    assert_eq!(seeks(20047), Some((1, 20_000)));
    assert_eq!(seeks(234_547), Some((2, 234_500 + 234_499)));
    assert_eq!(seeks(9849), Some((1, 9_800)));
}

// ---------------------------------------------------------------------------------------------------
// PC queues: promotion, demotion, purging (STEP §4.1.1).
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_sequential_stream_is_promoted_new_low_high_and_then_prefetches_hit_ratio_times_ub() {
    // A cache of 16,384 blocks: UB = min(256, 16,384 / 64) = 256.
    let (p, s) = Shared::new(step(json!({})));
    let mut l = lru_level(16_384, p);
    let mut queues = Vec::new();
    let mut runs = Vec::new();
    for i in 0..8u64 {
        let out = serve(&mut l, Request::read(8 * i, 8));
        queues.push(lock(&s).context_for(8 * i + 8).unwrap().queue);
        runs.push(out.iter().map(|f| (f.first + u64::from(f.demand_len), f.len - f.demand_len)).collect::<Vec<_>>());
    }
    use Queue::*;
    // New on the first request, low from the first extension, high once 64 blocks ran with H >= 0.5.
    assert_eq!(queues, vec![New, Low, Low, Low, Low, Low, Low, High]);
    // Low prefetches one estimated request (8 blocks) after each; high prefetches H x UB = 256 blocks.
    assert_eq!(runs[0], vec![(8, 0)]);
    assert_eq!(runs[1], vec![(16, 8)]);
    assert_eq!(runs[2], vec![(24, 8)]);
    assert_eq!(runs[7], vec![(64, 256)]);
    // The paper's rule then keeps 256 blocks ahead: every request that reads 8 of them from the cache
    // prefetches the 8 blocks that the window [e + 1, e + 256] gained, as one request.
    for i in 8..40u64 {
        assert_eq!(
            serve(&mut l, Request::read(8 * i, 8)),
            vec![Fetch { first: 8 * i + 256, len: 8, demand_len: 0, stream: 0, client: 0 }],
            "request {i}"
        );
    }
    assert!((l.counters().prefetch_hit_ratio() - 304.0 / 320.0).abs() < 1e-12);
}

#[test]
fn the_papers_rule_tops_the_window_up_per_request_but_never_by_less_than_the_next_request() {
    // STEP §5 (a decision on each request), §4.3 (PL counted from the request), §4.1.1 (the current
    // prefetch address: nothing twice), §4.2.2 case (a) (no prefetch shorter than the next request).
    let mut paper = lru_level(16_384, pf("step", json!({})));
    let mut ours = lru_level(16_384, pf("step", json!({"issue": "low-water"})));
    for l in [&mut paper, &mut ours] {
        for i in 0..8u64 {
            serve(l, Request::read(8 * i, 8));
        }
    }
    // Request 7 made the PC high: blocks 64-319 are prefetched (H x UB = 256 beyond block 63). A 4-block
    // read leaves 4 blocks of [e + 1, e + 256] missing, fewer than the next request (the longest recent
    // one, 8 blocks): nothing. After a second one 8 are missing: one prefetch of blocks 320-327.
    assert!(serve(&mut paper, Request::read(64, 4)).is_empty());
    assert_eq!(
        serve(&mut paper, Request::read(68, 4)),
        vec![Fetch { first: 320, len: 8, demand_len: 0, stream: 0, client: 0 }]
    );
    // The low-water rule waits until less than one request is ahead: after block 311.
    assert!(serve(&mut ours, Request::read(64, 4)).is_empty());
    assert!(serve(&mut ours, Request::read(68, 4)).is_empty());
    for i in 9..39u64 {
        assert!(serve(&mut ours, Request::read(8 * i, 8)).is_empty(), "request {i}");
    }
    assert_eq!(
        serve(&mut ours, Request::read(8 * 39, 8)),
        vec![Fetch { first: 320, len: 256, demand_len: 0, stream: 0, client: 0 }]
    );
    // The next 8-block read continues from the new prefetch address.
    assert_eq!(
        serve(&mut paper, Request::read(72, 8)),
        vec![Fetch { first: 328, len: 8, demand_len: 0, stream: 0, client: 0 }]
    );
}

#[test]
fn refill_tops_a_stream_up_while_half_of_its_length_is_still_ahead() {
    let mut l = lru_level(16_384, pf("step", json!({"issue": "low-water", "refill": 0.5})));
    for i in 0..8u64 {
        serve(&mut l, Request::read(8 * i, 8));
    }
    // Request 7 made the PC high: blocks 64-319 are prefetched. Nothing more until fewer than 128 are
    // ahead, after block 199 (request 24); then up to 256 beyond the request: 320-455.
    for i in 8..24u64 {
        assert!(serve(&mut l, Request::read(8 * i, 8)).is_empty(), "request {i}");
    }
    assert_eq!(
        serve(&mut l, Request::read(8 * 24, 8)),
        vec![Fetch { first: 320, len: 136, demand_len: 0, stream: 0, client: 0 }]
    );
}

#[test]
fn a_high_pc_whose_hit_ratio_falls_is_demoted_to_low() {
    let mut s = step(json!({}));
    let mut queue = Vec::new();
    for i in 0..11u64 {
        // The first request misses, the next seven find prefetched blocks, then the stream misses again.
        let o = if i == 0 || i >= 8 { misses(8) } else { pf_hits(8) };
        drive(&mut s, Request::read(8 * i, 8), &o);
        queue.push(s.context_for(8 * i + 8).unwrap().queue);
    }
    use Queue::*;
    // H over the last four requests: 1.0 at request 8 (x = 64: high), then 0.75, 0.5, 0.25 < 0.3.
    assert_eq!(queue, vec![New, Low, Low, Low, Low, Low, Low, High, High, High, Low]);
}

#[test]
fn purging_takes_lru_pcs_by_weighted_round_robin() {
    // Bound 12, batches of 7, weights new 4 / low 2 / high 1. High needs 3 blocks of sequence (any H).
    let mut s = step(json!({
        "max_pcs": 12, "purge_batch": 7, "high_min_len": 3, "promote_hr": 0.0, "demote_hr": 0.0
    }));
    let at = |k: u64| 10_000 * k;
    let read = |s: &mut Step, b: u64| drop(drive(s, Request::read(b, 1), &misses(1)));
    for k in 1..=6 {
        read(&mut s, at(k)); // n1..n6: new
    }
    for k in 11..=14 {
        read(&mut s, at(k));
    }
    for k in (11..=14).rev() {
        read(&mut s, at(k) + 1); // l14, l13, l12, l11 become low in that order: l14 is the LRU one
    }
    for k in [21, 22] {
        read(&mut s, at(k));
    }
    for j in 1..=2 {
        for k in [21, 22] {
            read(&mut s, at(k) + j); // h21, h22: low, then high
        }
    }
    assert_eq!((s.queues().len(Queue::New), s.queues().len(Queue::Low), s.queues().len(Queue::High)), (6, 4, 2));
    assert_eq!(s.stats().purged, 0);
    // A 13th PC: one round of 4 new, 2 low and 1 high from their LRU ends.
    read(&mut s, at(30));
    s.check().unwrap();
    assert_eq!(s.stats().purged, 7);
    let alive = |s: &Step, k: u64, next: u64| s.context_for(at(k) + next).is_some();
    let new: Vec<bool> = (1..=6).map(|k| alive(&s, k, 1)).collect();
    assert_eq!(new, vec![false, false, false, false, true, true]);
    let low: Vec<bool> = (11..=14).map(|k| alive(&s, k, 2)).collect();
    assert_eq!(low, vec![true, true, false, false], "l14 and l13 were least recently used");
    assert_eq!((alive(&s, 21, 3), alive(&s, 22, 3)), (false, true));
    assert!(alive(&s, 30, 1));
    assert_eq!(s.contexts().len(), 6);
}

// ---------------------------------------------------------------------------------------------------
// The cost-benefit model (STEP §4.2.2, §4.3).
// ---------------------------------------------------------------------------------------------------

#[test]
fn the_earning_function_is_maximised_where_the_pdf_meets_theta() {
    let exp = Pdf { shape: PdfShape::Exp, k: 1.0, c: 16.0 };
    let lin = Pdf { shape: PdfShape::Linear, k: 1.0, c: 16.0 };
    // Hand-computed: ST = 5.4 ms, BW = 4.4 blocks/ms, RL = 8: θ = 8 / (8 + 23.76) = 0.25189.
    // exp, x = 64: PL* = 80 ln(1/θ) = 80 x 1.37874 = 110.30 -> 110 blocks.
    // linear, x = 64: PL* = 80 (1 - θ) = 59.85 -> 60 blocks.
    // exp, x = 0: PL* = 16 x 1.37874 = 22.06 -> 22 blocks.
    let c = Costs { st: 5.4, bw: 4.4, rl: 8.0 };
    assert_eq!(c.best_length(&exp, 64), 110);
    assert_eq!(c.best_length(&lin, 64), 60);
    assert_eq!(c.best_length(&exp, 0), 22);
    // E(64, 110) = (5.4/8 + 1/4.4) x 80 (1 - e^(-110/80)) - 110/4.4 = 0.90227 x 59.773 - 25 = 28.93 ms.
    assert!((c.earning(&exp, 64, 110.0) - 28.93).abs() < 0.01, "{}", c.earning(&exp, 64, 110.0));
    // Short seeks and long requests: θ = 64 / (64 + 0.5 x 4.4) = 0.9668; exp, x = 0: PL* = 16 x 0.0338 =
    // 0.54 blocks, less than one request: prefetch nothing (case (a) of §4.2.2).
    let short = Costs { st: 0.5, bw: 4.4, rl: 64.0 };
    assert_eq!(short.best_length(&exp, 0), 0);
    // The closed form agrees with a search over whole lengths, for both shapes and many inputs.
    for pdf in [exp, lin] {
        for x in [0u64, 5, 64, 1000] {
            for (st, rl) in [(0.8, 1.0), (5.4, 8.0), (10.6, 3.0), (2.0, 40.0)] {
                let c = Costs { st, bw: 4.4, rl };
                let (mut best, mut arg) = (0.0f64, 0u64);
                for pl in 1..20_000u64 {
                    let e = c.earning(&pdf, x, pl as f64);
                    if e > best {
                        (best, arg) = (e, pl);
                    }
                }
                let want = if (arg as f64) < rl { 0 } else { arg };
                assert_eq!(c.best_length(&pdf, x), want, "{pdf:?} x {x} ST {st} RL {rl}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Thrashing detection on a hand-made interleaving (STEP §4.1.2).
// ---------------------------------------------------------------------------------------------------

#[test]
fn thrashing_intensity_follows_the_interleaving() {
    // Stream A reads 1000, 1001, ... and stream B 1,000,000, 1,000,001, ...: A B A B A A A.
    let mut s = step(json!({}));
    let order = [('A', 1000), ('B', 1_000_000), ('A', 1001), ('B', 1_000_001), ('A', 1002), ('A', 1003), ('A', 1004)];
    let mut a = Vec::new();
    let mut runs = Vec::new();
    for (who, b) in order {
        let r = drive(&mut s, Request::read(b, 1), &misses(1));
        if who == 'A' {
            let pc = s.context_for(b + 1).unwrap();
            a.push((pc.thrash.events, pc.thrash.seeks, pc.thrash.intensity, s.sizing().thrashing(pc)));
            runs.push(r);
        }
    }
    // Every switch between A and B is the same seek: blocks 1000.. are on cylinder 2-3 of the Cheetah
    // 9LP, 1,000,000.. on the same far cylinder; call its time c.
    let c = s.disk().seek_ms(1000, 1_000_000);
    assert_eq!(c, s.disk().seek_ms(1001, 1_000_000));
    assert_eq!(c, s.disk().seek_ms(1002, 1_000_001));
    let thr = s.sizing().thrash_threshold;
    println!("A <-> B seek {c:.3} ms, threshold {thr:.3} ms");
    assert!(c > thr);
    // A's events: B1 (c), A2 (c), B2 (c), A3 (c), A4 (0), A5 (0). In(i) = In(i-1)·0.8·(i-1)/i + Sc(i)·(0.2(i-1)+1)/i:
    // In = c while every event costs c (the weights sum to one); then 0.8·4/5·c = 0.64c, 0.64c·0.8·5/6.
    let want = [(0, 0, 0.0), (2, 2, c), (4, 4, c), (5, 4, 0.64 * c), (6, 4, 0.64 * c * 0.8 * 5.0 / 6.0)];
    for (got, want) in a.iter().zip(want) {
        assert_eq!((got.0, got.1), (want.0, want.1));
        assert!((got.2 - want.2).abs() < 1e-9, "{got:?} vs {want:?}");
    }
    // Thrashing needs a non-new PC above the threshold: A1 is new, A2 and A3 thrash.
    assert_eq!(a.iter().map(|x| x.3).collect::<Vec<_>>()[..3], [false, true, true]);
    // A2 (low, thrashing) prefetches the earning function's maximiser: RL = 1, x = 2, ST = In = c.
    let pl = Costs { st: c, bw: s.sizing().bw, rl: 1.0 }.best_length(&s.sizing().pdf, 2);
    println!("A2 prefetches {pl} blocks; runs of A: {runs:?}");
    assert!(pl > 20);
    assert_eq!(runs[1], vec![PrefetchRun { first: 1002, len: pl as u32, stream: 0, placement: Default::default() }]);
    // A single stream alone never thrashes: every event is head-free.
    let mut alone = step(json!({}));
    for i in 0..50 {
        drive(&mut alone, Request::read(5000 + i, 1), &misses(1));
    }
    assert_eq!(alone.context_for(5050).unwrap().thrash.intensity, 0.0);
}

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
// TaP: the detection table and the prefetch-cache size (tap.md).
// ---------------------------------------------------------------------------------------------------

fn tap(params: Value) -> Tap {
    Tap::new("tap", serde_json::from_value(params).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn tap_detects_streams_from_missed_addresses_in_its_table() {
    let (p, t) = Shared::new(tap(json!({"table_init": 2, "table_max": 8})));
    let mut l = lru_level(1000, p);
    // A miss that continues nothing goes into the table as the block it expects next.
    assert_eq!(serve(&mut l, Request::read(100, 4)).len(), 1);
    assert_eq!(lock(&t).table(), vec![104]);
    serve(&mut l, Request::read(500, 1));
    assert_eq!(lock(&t).table(), vec![501, 104]);
    assert_eq!(l.counters().prefetch_issued, 0, "no prefetch for unconfirmed traffic");
    // 104 continues the first request: a stream. The entry goes, a group of P = max(4, 2 x 4) = 8 blocks
    // is prefetched with its trigger on its first block, and the block after the group enters the table.
    let out = serve(&mut l, Request::read(104, 4));
    assert_eq!(out, vec![Fetch { first: 104, len: 12, demand_len: 4, stream: 0, client: 0 }]);
    assert_eq!(lock(&t).marks(), vec![(108, 115)]);
    assert_eq!(lock(&t).table(), vec![116, 501]);
    assert_eq!(lock(&t).stats().matches, 1);
    // A hit on the trigger starts the next group; the table, full, pushes its oldest entry to the ghost.
    assert_eq!(
        serve(&mut l, Request::read(108, 4)),
        vec![Fetch { first: 116, len: 8, demand_len: 0, stream: 1, client: 0 }]
    );
    assert_eq!(lock(&t).marks(), vec![(116, 123)]);
    assert_eq!(lock(&t).table(), vec![124, 116]);
    assert_eq!(lock(&t).table_ghost(), vec![501]);
    // A miss that a ghost entry would have matched doubles the table (no prefetch: it did not match).
    serve(&mut l, Request::read(501, 1));
    assert_eq!(lock(&t).table_limit(), 4);
    assert_eq!(lock(&t).table(), vec![502, 124, 116]);
    // A stream that skips past its trigger misses at the block after its group, which is in the table.
    let out = serve(&mut l, Request::read(124, 2));
    assert_eq!(out, vec![Fetch { first: 124, len: 6, demand_len: 2, stream: 0, client: 0 }]);
    assert_eq!(lock(&t).stats().matches, 2);
    // A request that hits entirely never touches the table.
    let before = lock(&t).table();
    serve(&mut l, Request::read(109, 2));
    assert_eq!(lock(&t).table(), before);
}

#[test]
fn tap_grows_its_prefetch_cache_on_early_evictions_and_shrinks_it_when_idle() {
    let (p, t) = Shared::new(tap(json!({"epoch": 100})));
    let mut l = lru_level(600, p);
    let cp0 = lock(&t).cp();
    assert_eq!(cp0, 30, "5% of 600 blocks");
    // 48 interleaved streams of 4-block requests: groups of 8 blocks each, 384 blocks ahead at most; the
    // unraised ones are pushed out by the demand traffic before use, and come back as demand misses.
    let mut rng = 7u64;
    let mut pos: Vec<u64> = (0..48).map(|i| i * 1_000_000).collect();
    for _ in 0..20_000 {
        let k = (splitmix(&mut rng) % 48) as usize;
        serve(&mut l, Request::read(pos[k], 4));
        pos[k] += 4;
    }
    let grown = lock(&t).cp();
    println!("TaP Cp: {cp0} -> {grown} after the streams ({:?})", lock(&t).stats());
    assert!(grown > cp0, "{grown}");
    // Random traffic: no early evictions, old unused blocks: Cp shrinks.
    for _ in 0..20_000 {
        serve(&mut l, Request::read(100_000_000 + splitmix(&mut rng) % 10_000_000, 1));
    }
    let shrunk = lock(&t).cp();
    println!("TaP Cp: {grown} -> {shrunk} after random traffic");
    assert!(shrunk < grown, "{shrunk}");
}

// ---------------------------------------------------------------------------------------------------
// Acceptance: interleaved sequential streams at a server, and a uniformly random trace.
// ---------------------------------------------------------------------------------------------------

/// splitmix64: a small deterministic generator for synthetic traces.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `streams` sequential streams interleaved request by request (the stream of each request drawn at
/// random), requests of 1-8 blocks, as a server sees them: no stream ids. Each stream reads 512-4096
/// blocks from a random place on a 2^22-block disk (16 GiB), then starts again elsewhere.
fn interleaved_streams(streams: usize, requests: usize, seed: u64) -> Vec<Request> {
    let mut rng = seed;
    let fresh = |rng: &mut u64| (splitmix(rng) % (1 << 22), 512 + splitmix(rng) % 3585);
    let mut st: Vec<(u64, u64)> = (0..streams).map(|_| fresh(&mut rng)).collect();
    (0..requests)
        .map(|_| {
            let k = (splitmix(&mut rng) % streams as u64) as usize;
            if st[k].1 == 0 {
                st[k] = fresh(&mut rng);
            }
            let n = (1 + splitmix(&mut rng) % 8).min(st[k].1) as u32;
            let r = Request::read(st[k].0, n);
            st[k].0 += u64::from(n);
            st[k].1 -= u64::from(n);
            r
        })
        .collect()
}

fn serve_quiet(level: &mut dyn AnyLevel, req: &Request) {
    let mut out = Vec::new();
    level.access(req, req.len, &mut out);
}

fn run(name: &str, params: &Value, reqs: &[Request], capacity: usize) -> prefetchsim_core::LevelCounters {
    let mut l = lru_level(capacity, pf(name, params.clone()));
    let mut out = Vec::new();
    for r in reqs {
        out.clear();
        l.access(r, r.len, &mut out);
    }
    l.check_invariants().unwrap();
    l.finish();
    assert!(l.counters().prefetch_conserved());
    l.counters().clone()
}

fn contenders() -> Vec<(&'static str, Value)> {
    vec![
        ("step", json!({})),
        ("step", json!({"preset": "pm-con"})),
        ("step", json!({"preset": "pm-bb"})),
        ("step", json!({"preset": "pm-sa"})),
        ("tap", json!({})),
        ("linux", json!({"mode": "2.6.16", "key": "device"})),
        ("linux", json!({"mode": "2.6.16", "key": "detect"})),
    ]
}

#[test]
fn step_beats_linux_readahead_on_interleaved_sequential_streams() {
    for (streams, capacity) in [(8, 2048), (16, 4096), (32, 8192)] {
        let reqs = interleaved_streams(streams, 40_000, 11 + streams as u64);
        let mut phr = std::collections::BTreeMap::new();
        for (name, params) in contenders() {
            let c = run(name, &params, &reqs, capacity);
            println!(
                "{streams} streams, cache {capacity}: {name} {params}: prefetch hit ratio {:.4}, hit ratio {:.4}, \
                 precision {:.4}, issued {}",
                c.prefetch_hit_ratio(),
                c.hit_ratio(),
                c.precision(),
                c.prefetch_issued
            );
            phr.insert(format!("{name} {params}"), c.prefetch_hit_ratio());
        }
        let key = |name: &str, params: Value| format!("{name} {params}");
        let step = phr[&key("step", json!({}))];
        let device = phr[&key("linux", json!({"mode": "2.6.16", "key": "device"}))];
        let detect = phr[&key("linux", json!({"mode": "2.6.16", "key": "detect"}))];
        assert!(step > device + 0.5, "{streams} streams: STEP {step:.4} vs Linux RA (device) {device:.4}");
        // Linux with one read-ahead state per detected stream (what a server cannot do with RA#) is
        // within a percent of STEP: reported, not asserted.
        println!(
            "{streams} streams: STEP {step:.4}, Linux RA# (device) {device:.4}, Linux per detected stream {detect:.4}"
        );
        assert!(step > 0.97, "{streams} streams: STEP {step:.4}");
    }
}

#[test]
fn step_prefetches_next_to_nothing_on_a_uniformly_random_trace() {
    // 100,000 reads of 1-8 blocks uniform over 2^24 blocks (64 GiB), LRU of 4096 blocks.
    let mut rng = 42u64;
    let reqs: Vec<Request> = (0..100_000)
        .map(|_| Request::read(splitmix(&mut rng) % (1 << 24), 1 + (splitmix(&mut rng) % 8) as u32))
        .collect();
    let blocks: u64 = reqs.iter().map(|r| u64::from(r.len)).sum();
    for (name, params) in contenders() {
        let c = run(name, &params, &reqs, 4096);
        println!(
            "random trace ({blocks} blocks): {name} {params}: issued {}, used {}, precision {:.4}",
            c.prefetch_issued,
            c.prefetch_used,
            c.precision()
        );
        if name != "linux" {
            assert!((c.prefetch_issued as f64) < 0.002 * blocks as f64, "{name} {params}: {c:?}");
        }
    }
    // Over a small space chance continuations are frequent: a read that starts right after one of the
    // ~1,000 PCs' last blocks, about 100 in 100,000 reads over 10^6 blocks. The paper's rules make each a
    // stream and its neighborhood a thrashing one (three random seeks, ~4x the threshold), so it gets the
    // cost-benefit length for a 2-block stream (§4.1.2, §4.3): that is faithful, not a bug. What must hold
    // is that only chance continuations extend PCs (a re-read of a PC's last block does not: it used to,
    // and doubled the count) and that each prefetches at most the earning function's maximiser for x = 2
    // at the longest seek. With the linear pdf, the paper's choice for mostly random workloads, that
    // maximiser is about a third as long.
    let small: Vec<Request> = (0..100_000).map(|_| Request::read(splitmix(&mut rng) % 1_000_000, 1)).collect();
    for pdf in ["exp", "linear"] {
        let (b, shared) = Shared::new(step(json!({ "pdf": pdf })));
        let mut l = lru_level(4096, b);
        for r in &small {
            serve_quiet(&mut l, r);
        }
        l.finish();
        let c = l.counters().clone();
        let s = lock(&shared);
        let st = s.stats();
        let chance = small.len() as f64 * s.params().max_pcs as f64 / 1e6;
        let longest = s.disk().seek_ms(0, 999_999);
        let pl = Costs { st: longest, bw: s.sizing().bw, rl: 1.0 }.best_length(&s.sizing().pdf, 2);
        println!(
            "random trace over 10^6 blocks, {pdf} pdf: {} extensions (chance ~{chance:.0}), issued {}, used {}, \
             at most {pl} a continuation",
            st.extended, c.prefetch_issued, c.prefetch_used
        );
        assert!((st.extended as f64) < 1.25 * chance, "{pdf}: {st:?}");
        assert!(c.prefetch_issued <= st.extended * pl, "{pdf}: {c:?} {st:?}");
        assert!(pl > 0 && pl < 64, "{pdf}: {pl}");
    }
}

/// Regression (issue 20, finding 7): H is the prefetch hit ratio of §4, prefetched blocks found, not any
/// cached block. A stream re-reading data that is cached from earlier demand reads has prefetched nothing
/// and must not be promoted to high confidence (the old H counted every cached block: high at request 7).
#[test]
fn cached_blocks_that_were_not_prefetched_are_no_prefetch_hits() {
    let mut cached = step(json!({}));
    let mut prefetched = step(json!({}));
    for i in 0..12u64 {
        let first = i == 0;
        drive(&mut cached, Request::read(8 * i, 8), &if first { misses(8) } else { hits(8) });
        drive(&mut prefetched, Request::read(8 * i, 8), &if first { misses(8) } else { pf_hits(8) });
    }
    let pc = cached.context_for(96).unwrap();
    assert_eq!((pc.queue, pc.history.hit_ratio()), (Queue::Low, 0.0));
    let pc = prefetched.context_for(96).unwrap();
    assert_eq!((pc.queue, pc.history.hit_ratio()), (Queue::High, 1.0));
}

/// Regression (issue 20, finding 7): a late prefetch (a block the stream prefetched, still in flight) is a
/// prefetch hit; a block in flight that the stream had not prefetched is not.
#[test]
fn in_flight_blocks_count_as_prefetch_hits_only_within_the_streams_prefetch() {
    let mut s = step(json!({}));
    drive(&mut s, Request::read(0, 8), &misses(8));
    let runs = drive(&mut s, Request::read(8, 8), &misses(8));
    assert_eq!(runs.iter().map(|r| (r.first, r.len)).collect::<Vec<_>>(), vec![(16, 8)]);
    // Blocks 16-23 were prefetched (in flight), 24-27 were not (in flight for another reason).
    drive(&mut s, Request::read(16, 12), &[Outcome::Pending; 12]);
    let h = s.context_for(28).unwrap().history.hit_ratio();
    assert!((h - 8.0 / 28.0).abs() < 1e-12, "{h}");
}

/// Regression (issue 20, finding 7): a new PC whose key (the block after its request) is held by an
/// established PC leaves it in place. A re-read of a stream's last four blocks used to make a new PC that
/// displaced the high-confidence stream, which then restarted from nothing.
#[test]
fn an_established_context_survives_a_colliding_new_one() {
    let mut s = step(json!({}));
    drive(&mut s, Request::read(0, 8), &misses(8));
    for i in 1..12u64 {
        drive(&mut s, Request::read(8 * i, 8), &pf_hits(8));
    }
    let before = s.context_for(96).unwrap().clone();
    assert_eq!(before.queue, Queue::High);
    // Re-read blocks 92-95: starts neither at the stream's next block nor in its last one.
    drive(&mut s, Request::read(92, 4), &hits(4));
    s.check().unwrap();
    let after = s.context_for(96).unwrap();
    assert_eq!((after.queue, after.x, after.pf_end), (before.queue, before.x, before.pf_end));
    assert_eq!(s.stats().displaced, 0);
    // The stream goes on as a high-confidence one, from its prefetch address (a new PC would prefetch
    // one request after block 103).
    let runs = drive(&mut s, Request::read(96, 8), &pf_hits(8));
    assert_eq!(s.context_for(104).unwrap().queue, Queue::High);
    assert_eq!(runs.first().map(|r| r.first), Some(before.pf_end + 1), "{runs:?}");
}

/// Regression (issue 20, finding 7): a short stream that runs into the position of a high-confidence one
/// (both now expect the same next block) yields to it instead of displacing it.
#[test]
fn an_established_context_survives_a_weaker_one_extending_onto_its_key() {
    let mut s = step(json!({}));
    drive(&mut s, Request::read(1000, 8), &misses(8));
    for i in 1..12u64 {
        drive(&mut s, Request::read(1000 + 8 * i, 8), &pf_hits(8));
    }
    assert_eq!(s.context_for(1096).unwrap().queue, Queue::High);
    // A second stream: 1080-1083 (new), then 1084-1095 extends it to end where the first ends.
    drive(&mut s, Request::read(1080, 4), &hits(4));
    drive(&mut s, Request::read(1084, 12), &hits(12));
    s.check().unwrap();
    let pc = s.context_for(1096).unwrap();
    assert_eq!((pc.queue, pc.x), (Queue::High, 96));
    assert_eq!(s.stats().displaced, 0);
    // The other way round, the stronger mover takes the key (the weak holder is dropped).
    let mut s = step(json!({}));
    drive(&mut s, Request::read(5000, 4), &misses(4)); // a new PC expecting 5004
    drive(&mut s, Request::read(4000, 8), &misses(8));
    for i in 1..12u64 {
        drive(&mut s, Request::read(4000 + 8 * i, 8), &pf_hits(8));
    }
    drive(&mut s, Request::read(4096, 908), &pf_hits(908)); // the stream now ends at 5003
    s.check().unwrap();
    assert_eq!(s.context_for(5004).unwrap().queue, Queue::High);
    assert_eq!(s.stats().displaced, 1);
}

/// A re-read of a PC's last block touches the PC but neither extends nor promotes it.
#[test]
fn a_re_read_of_the_last_block_extends_no_stream() {
    let mut p = step(json!({}));
    drive(&mut p, Request::read(100, 4), &misses(4));
    drive(&mut p, Request::read(103, 1), &hits(1));
    assert_eq!(p.stats().extended, 0);
    assert_eq!(p.context_for(104).unwrap().queue, Queue::New);
    // An unaligned continuation that starts in the last block and goes past it does extend.
    drive(&mut p, Request::read(103, 3), &misses(3));
    assert_eq!(p.stats().extended, 1);
    let pc = p.context_for(106).unwrap();
    assert_eq!((pc.x, pc.queue), (6, Queue::Low));
}

// ---------------------------------------------------------------------------------------------------
// Configuration.
// ---------------------------------------------------------------------------------------------------

#[test]
fn names_presets_and_parameter_errors() {
    let build = |pf: &str| {
        let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = 64\nprefetcher = {pf}\n")).unwrap();
        Hierarchy::build(&cfg, 4096, None).map(|h| h.reports()[0].prefetcher.clone())
    };
    for (spec, canonical) in [
        ("'step'", "step"),
        ("'STEP'", "step"),
        ("{ name = 'step', preset = 'pm-con' }", "step"),
        ("{ name = 'step', preset = 'pm-bb', bb_share = 0.25 }", "step"),
        ("{ name = 'step', preset = 'pm-sa', upper_bound = 128 }", "step"),
        ("{ name = 'step', preset = 'pm-ta', pdf = 'linear', st_source = 'disk_avg', device = 'hdd7200' }", "step"),
        (
            "{ name = 'step', clock = 'requests', delayed = false, raised_cap = 0.0, match_window = 'prefetched' }",
            "step",
        ),
        ("'tap'", "tap"),
        ("{ name = 'tap', table_init = 8, cp_init = 0.1, match_slack = 2 }", "tap"),
        ("'step+obl'", "stack"),
    ] {
        assert_eq!(build(spec).unwrap_or_else(|e| panic!("{spec}: {e}")), canonical, "{spec}");
    }
    for (spec, path, words) in [
        ("{ name = 'step', preset = 'pm-xx' }", "level[0].prefetcher.preset", "pm-xx"),
        ("{ name = 'step', hisotry = 4 }", "level[0].prefetcher", "hisotry"),
        ("{ name = 'step', history = 9 }", "level[0].prefetcher.history", "1..=8"),
        ("{ name = 'step', alpha = 0.0 }", "level[0].prefetcher.alpha", "(0, 1]"),
        ("{ name = 'step', demote_hr = 0.9 }", "level[0].prefetcher.demote_hr", "promote_hr"),
        ("{ name = 'step', device = 'nvme' }", "level[0].prefetcher.device", "not a disk"),
        ("{ name = 'step', device = 'floppy' }", "level[0].prefetcher.device", "floppy"),
        ("{ name = 'step', purge_batch = 0 }", "level[0].prefetcher.purge_batch", "1..=max_pcs"),
        ("{ name = 'step', purge_weights = [0, 0, 0] }", "level[0].prefetcher.purge_weights", "positive"),
        ("{ name = 'step', pdf_c = 0.0 }", "level[0].prefetcher.pdf_c", "positive"),
        ("{ name = 'step', raised_cap = 1.5 }", "level[0].prefetcher.raised_cap", "[0, 1]"),
        ("{ name = 'step', upper_bound = 0 }", "level[0].prefetcher.upper_bound", "at least 1"),
        ("{ name = 'tap', table_max = 2 }", "level[0].prefetcher.table_max", "table_init"),
        ("{ name = 'tap', cp_init = 0.0 }", "level[0].prefetcher.cp_init", "(0, 1]"),
        ("{ name = 'tap', epoch = 0 }", "level[0].prefetcher.epoch", "at least 1"),
        ("{ name = 'tap', tabel_init = 3 }", "level[0].prefetcher", "tabel_init"),
    ] {
        let e = build(spec).err().unwrap_or_else(|| panic!("{spec} should fail"));
        assert!(e.to_string().contains(path) && e.message.contains(words), "{spec}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------------
// Properties: STEP (every preset) and TaP over LRU keep the level's invariants and prefetch accounting.
// ---------------------------------------------------------------------------------------------------

/// Four sequential cursors, each request continuing one or jumping to a random place.
fn workload() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0usize..4, any::<bool>(), 0u64..600, 1u32..9), 1..300).prop_map(|v| {
        let mut cursors = [0u64, 1000, 2000, 3000];
        v.into_iter()
            .map(|(k, jump, b, n)| {
                if jump {
                    cursors[k] = b * 7;
                }
                let r = Request::read(cursors[k], n);
                cursors[k] += u64::from(n);
                r
            })
            .collect()
    })
}

fn step_spec() -> impl Strategy<Value = Value> {
    (0usize..4, 1u32..64, 1usize..12, any::<bool>(), 0usize..3, any::<bool>(), 1usize..5).prop_map(
        |(preset, ub, max_pcs, window, raised, clock, history)| {
            let preset = ["pm-ta", "pm-con", "pm-bb", "pm-sa"][preset];
            let window = if window { "prefetched" } else { "exact" };
            let raised = [0.0, 0.5, 1.0][raised];
            let mut v = json!({
                "preset": preset,
                "upper_bound": ub,
                "max_pcs": max_pcs,
                "match_window": window,
                "raised_cap": raised,
                "history": history,
                "high_min_len": 8,
            });
            if clock {
                // A clock of 1 ms per request and a 3 ms horizon: the delayed queue is used.
                v["delayed"] = json!(true);
                v["clock"] = json!("requests");
                v["request_ms"] = json!(1.0);
                v["delay_horizon_ms"] = json!(3.0);
            }
            v
        },
    )
}

fn check_run<T: Prefetcher>(
    mut l: Level<Lru>,
    shared: &Arc<Mutex<T>>,
    reqs: &[Request],
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        l.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(l.len() <= l.capacity());
        l.check_invariants().map_err(TestCaseError::fail)?;
        check(&lock(shared)).map_err(TestCaseError::fail)?;
    }
    l.finish();
    let c = l.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    Ok(())
}

proptest! {
    #[test]
    fn step_presets_keep_the_level_invariants(params in step_spec(), reqs in workload(), cap in 1usize..64, consume in any::<bool>()) {
        let (p, s) = Shared::new(step(params));
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let l = Level::new(cap, Lru::new(&env), p, LevelOptions { consume_on_hit: consume, ..LevelOptions::default() });
        check_run(l, &s, &reqs, Step::check)?;
    }

    #[test]
    fn tap_keeps_the_level_invariants(
        table in 1usize..8, p_min in 1u32..6, cp in 0.01f64..1.0, epoch in 1u64..50, slack in 0u32..3,
        reqs in workload(), cap in 1usize..64, consume in any::<bool>(),
    ) {
        let params = json!({"table_init": table, "table_max": 4 * table, "p_min": p_min, "cp_init": cp, "epoch": epoch, "match_slack": slack});
        let (p, t) = Shared::new(tap(params));
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let l = Level::new(cap, Lru::new(&env), p, LevelOptions { consume_on_hit: consume, ..LevelOptions::default() });
        check_run(l, &t, &reqs, |t: &Tap| {
            if t.table().len() > t.table_limit() { Err(format!("table {} over {}", t.table().len(), t.table_limit())) } else { Ok(()) }
        })?;
    }
}

#[test]
fn step_preset_names_read_back() {
    let p: StepParams = serde_json::from_value(json!({"preset": "step"})).unwrap();
    assert_eq!(p.preset, StepPreset::PmTa);
    let p: StepParams = serde_json::from_value(json!({"preset": "pm_sa"})).unwrap();
    assert_eq!(p.preset, StepPreset::PmSa);
    let _ = TapParams::default();
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
