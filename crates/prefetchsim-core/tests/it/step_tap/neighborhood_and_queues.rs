//! STEP's neighborhood example, PC queue promotion, demotion and purging, the earning function's maximiser and thrashing intensity on a hand-made interleaving.

use super::*;

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
