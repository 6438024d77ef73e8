//! Acceptance: STEP against Linux read-ahead on interleaved sequential streams, a uniformly random trace, and prefetch-hit attribution between colliding contexts.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Acceptance: interleaved sequential streams at a server, and a uniformly random trace.
// ---------------------------------------------------------------------------------------------------

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
