//! RA(P) against the Split paper's worked example (Tables 1-4) and the sequential techniques' rules.

use super::*;

// ---------------------------------------------------------------------------------------------------
// The Split paper's worked example (sequential.md, "Worked example"; Split §2, Tables 1-4).
// ---------------------------------------------------------------------------------------------------

const WORKLOAD: [u64; 7] = [1001, 64, 1002, 72345, 65, 323, 66];

/// The paper's notation: stream number, then `a`, `b`, ... for the following blocks.
fn name(block: u64) -> String {
    for (start, s) in [(1001, "1"), (64, "2"), (72345, "3"), (323, "4")] {
        if (start..start + 26).contains(&block) {
            let pos = block - start;
            return if pos == 0 { s.to_string() } else { format!("{s}{}", char::from(b'a' + pos as u8 - 1)) };
        }
    }
    format!("#{block}")
}

/// Arrivals at a cache large enough that nothing is evicted: requests (`*` = hit) and prefetched
/// blocks in parentheses, with the prefetch-hit count.
fn arrivals<P: Policy>(policy: P, pf: Box<dyn Prefetcher>) -> (String, u64) {
    let mut l = Level::new(64, policy, pf, paper_options());
    let mut seq = Vec::new();
    for &b in &WORKLOAD {
        let hits = l.counters().hits;
        let out = serve(&mut l, Request::read(b, 1));
        seq.push(format!("{}{}", name(b), if l.counters().hits > hits { "*" } else { "" }));
        for f in &out {
            seq.extend(
                (f.first + u64::from(f.demand_len)..f.first + u64::from(f.len)).map(|x| format!("({})", name(x))),
            );
        }
    }
    l.finish();
    assert!(l.counters().prefetch_conserved());
    (seq.join(" "), l.counters().prefetch_hits)
}

#[test]
fn ra_arrival_orders_match_the_split_paper_with_an_infinite_cache() {
    let cases = [
        ("split-t1", json!({}), "1 (1a) (1b) 2 (2a) (2b) 1a* (1c) 3 (3a) (3b) 2a* (2c) 4 (4a) (4b) 2b* (2d)", 3),
        ("split-t2", json!({}), "1 (1a) (1b) 2 (2a) (2b) 1a* 3 (3a) (3b) 2a* 4 (4a) (4b) 2b* (2c) (2d)", 3),
        ("ra", json!({"mode": "pm", "p": 1, "streams": "detect"}), "1 (1a) 2 (2a) 1a* 3 (3a) 2a* 4 (4a) 2b (2c)", 2),
        // Trigger mode, P = 2, g = P-1: the mark is on the first prefetched block of each group.
        (
            "ra",
            json!({"mode": "trigger", "p": 2, "streams": "detect"}),
            "1 (1a) (1b) 2 (2a) (2b) 1a* (1c) (1d) 3 (3a) (3b) 2a* (2c) (2d) 4 (4a) (4b) 2b*",
            3,
        ),
        // g = 0 marks the last block of each group: on this workload it is T2.
        (
            "ra",
            json!({"mode": "trigger", "p": 2, "g": 0, "streams": "detect"}),
            "1 (1a) (1b) 2 (2a) (2b) 1a* 3 (3a) (3b) 2a* 4 (4a) (4b) 2b* (2c) (2d)",
            3,
        ),
    ];
    for (n, params, want, hits) in cases {
        let runs = [
            ("lru", arrivals(Lru::new(&env(64)), pf(n, params.clone()))),
            ("streamlru", arrivals(StreamLru::new(&env(64), StreamLruParams::default()), pf(n, params.clone()))),
            ("splitlru", arrivals(SplitLru::new(&env(64), SplitLruParams::default()), pf(n, params.clone()))),
        ];
        for (policy, got) in runs {
            assert_eq!(got, (want.to_string(), hits), "{n} {params} with {policy}");
        }
    }
}

/// Serve the workload with the reference technique of `split_examples` and with our prefetcher in
/// lockstep on a 4-block cache; the queues, hits and evictions must agree after every request.
fn lockstep<P: Policy>(
    make: impl Fn() -> P,
    technique: Technique,
    ours: Box<dyn Prefetcher>,
    show: impl Fn(&Level<P>) -> String,
) -> u64 {
    let mut a = Level::new(4, make(), Technic::new(technique), paper_options());
    let mut b = Level::new(4, make(), ours, paper_options());
    a.record_evictions(true);
    b.record_evictions(true);
    for &x in &WORKLOAD {
        let (fa, fb) = (serve(&mut a, Request::read(x, 1)), serve(&mut b, Request::read(x, 1)));
        let at = name(x);
        assert_eq!(fb, fa, "fetches at {at}");
        assert_eq!(show(&b), show(&a), "queue after {at}");
        assert_eq!(b.counters(), a.counters(), "counters after {at}");
        let ev = |l: &mut Level<P>| l.take_evicted().into_iter().map(name).collect::<BTreeSet<_>>();
        assert_eq!(ev(&mut b), ev(&mut a), "evicted at {at}");
    }
    b.counters().hits
}

#[test]
fn split_presets_reproduce_tables_1_to_4_step_by_step() {
    let names = |v: Vec<u64>| v.into_iter().map(name).collect::<Vec<_>>().join(" ");
    let lru = |l: &Level<Lru>| names(l.policy().queue(l.table()));
    let stream = |l: &Level<StreamLru>| names(l.policy().queue(l.table()));
    let split = |l: &Level<SplitLru>| {
        let (up, down) = l.policy().up_down(l.table());
        format!("{} | {}", names(up), names(down))
    };
    let mk_lru = || Lru::new(&env(4));
    let mk_stream = || StreamLru::new(&env(4), StreamLruParams::default());
    let mk_split = || SplitLru::new(&env(4), SplitLruParams::default());
    let t1 = || pf("split-t1", json!({}));
    let t2 = || pf("split-t2", json!({}));
    let pm1 = || pf("ra", json!({"mode": "pm", "p": 1, "streams": "detect"}));
    // Hit counts of Tables 1-4 and §2: LRU 3/2, StreamLRU 2/3, Split 3/3 with T1/T2.
    assert_eq!(lockstep(mk_lru, Technique::T1, t1(), lru), 3);
    assert_eq!(lockstep(mk_lru, Technique::T2, t2(), lru), 2);
    assert_eq!(lockstep(mk_stream, Technique::T1, t1(), stream), 2);
    assert_eq!(lockstep(mk_stream, Technique::T2, t2(), stream), 3);
    assert_eq!(lockstep(mk_split, Technique::T1, t1(), split), 3);
    assert_eq!(lockstep(mk_split, Technique::T2, t2(), split), 3);
    lockstep(mk_lru, Technique::Pm1, pm1(), lru);
    lockstep(mk_stream, Technique::Pm1, pm1(), stream);
    lockstep(mk_split, Technique::Pm1, pm1(), split);
}

#[test]
fn pm_prefetches_only_on_a_miss_and_pa_after_every_request() {
    // PM, P = 4, multi-block requests: a miss reads the demand and [e+1, e+4] as one I/O; a full hit
    // prefetches nothing, even mid-stream (sequential.md, edge cases).
    let mut l = lru_level(64, pf("ra", json!({})));
    assert_eq!(serve(&mut l, Request::read(10, 3)), vec![fetch(10, 7, 3)]);
    assert_eq!(serve(&mut l, Request::read(13, 3)), vec![]);
    assert_eq!(serve(&mut l, Request::read(16, 2)), vec![fetch(17, 5, 1)]);
    // PA: a hit still prefetches, as a separate I/O of the missing blocks only.
    let mut l = lru_level(64, pf("pfc-ra", json!({})));
    assert_eq!(serve(&mut l, Request::read(10, 3)), vec![fetch(10, 7, 3)]);
    assert_eq!(serve(&mut l, Request::read(13, 2)), vec![fetch(17, 2, 0)]);
}

#[test]
fn trigger_marks_start_the_next_group_and_die_with_their_block() {
    use prefetchsim_core::prefetch::readahead::{RaParams, Readahead};
    // P = 4, g = 2: the group [1, 4] marks block 2.
    let ra = Readahead::new(RaParams {
        mode: prefetchsim_core::prefetch::readahead::RaMode::Trigger,
        g: Some(2),
        ..RaParams::default()
    })
    .unwrap();
    /// The trigger marks (block, end of its group) after each request.
    type Marks = Arc<Mutex<Vec<Vec<(u64, u64)>>>>;
    let log: Marks = Arc::default();
    struct Spy(Readahead, Marks);
    impl Prefetcher for Spy {
        fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
            self.0.on_access(ctx);
            self.1.lock().unwrap().push(self.0.marks());
        }
        fn attach(
            &mut self,
            geometry: prefetchsim_core::prefetch::LevelGeometry,
        ) -> prefetchsim_core::prefetch::Capabilities {
            self.0.attach(geometry)
        }
        fn on_evicted(&mut self, e: &Entry) {
            self.0.on_evicted(e);
        }
    }
    let mut l = lru_level(6, Box::new(Spy(ra, log.clone())));
    assert_eq!(serve(&mut l, Request::read(0, 1)), vec![fetch(0, 5, 1)]);
    assert_eq!(log.lock().unwrap().last().unwrap(), &vec![(2, 4)]);
    assert_eq!(serve(&mut l, Request::read(1, 1)), vec![]);
    assert_eq!(serve(&mut l, Request::read(2, 1)), vec![fetch(5, 4, 0)], "the mark on 2 starts [5, 8]");
    assert_eq!(log.lock().unwrap().last().unwrap(), &vec![(6, 8)]);
    // Far-away misses push the group out of the 6-block cache; the mark on 6 goes with its block.
    for b in [100, 200] {
        serve(&mut l, Request::read(b, 1));
    }
    assert!(!l.contains(6));
    assert!(!log.lock().unwrap().last().unwrap().contains(&(6, 8)));
    // The stream stalls until its next miss, which restarts it synchronously.
    assert_eq!(serve(&mut l, Request::read(6, 1)), vec![fetch(6, 5, 1)]);
}

#[test]
fn a_prefetch_run_longer_than_the_cache_keeps_the_lists_sound() {
    // Each inserted block of the run evicts the previous one, whose slot the next block then reuses.
    for cap in 1..4 {
        let mut l = lru_level(cap, pf("ra", json!({"mode": "pa", "p": 6})));
        serve(&mut l, Request::read(0, 3));
        serve(&mut l, Request::read(20, 1));
        assert_eq!(l.len(), cap);
    }
}

#[test]
fn seq_gate_and_device_end_limit_what_ra_reads() {
    // seq_gate = cached: a request prefetches only when block s-1 is cached.
    let mut l = lru_level(64, pf("ra", json!({"mode": "pa", "seq_gate": true})));
    assert_eq!(serve(&mut l, Request::read(50, 1)), vec![fetch(50, 1, 1)]);
    assert_eq!(serve(&mut l, Request::read(51, 1)), vec![fetch(51, 5, 1)]);
    // held: s-1 was requested or prefetched recently, even when it is no longer cached.
    let mut l =
        Level::new(64, Lru::new(&env(64)), pf("ra", json!({"mode": "pm", "seq_gate": "held"})), paper_options());
    assert_eq!(serve(&mut l, Request::read(50, 1)), vec![fetch(50, 1, 1)]);
    assert_eq!(serve(&mut l, Request::read(51, 1)), vec![fetch(51, 5, 1)]);
    assert!(!l.contains(51), "consumed");
    assert_eq!(serve(&mut l, Request::read(56, 1)), vec![fetch(56, 5, 1)], "55 was prefetched");
    // max_block clips at the device end (inclusive).
    let mut l = lru_level(64, pf("pfc-ra", json!({"max_block": 12})));
    assert_eq!(serve(&mut l, Request::read(10, 1)), vec![fetch(10, 3, 1)]);
    assert_eq!(serve(&mut l, Request::read(12, 1)), vec![]);
}
