//! Miss-ratio curves: the one-pass exact curve equals a separate LRU simulation by the engine at every
//! size; SHARDS at rate 1 equals it; fixed-size SHARDS bounds its sample; bad sampling parameters name
//! the field; sampled sources keep exactly the sampled blocks.

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, RequestSource, Silent, VecSource};
use prefetchsim_core::mrc::{self, MrcBuilder, SampleConfig, SampleUnit, SampledSource, ShardsConfig};
use prefetchsim_core::request::Request;
use proptest::prelude::*;

/// Demand hits of one LRU run of `size` blocks over the block references of `reqs` by the engine.
///
/// The curve counts every block of a request as a reference in order (Mattson's LRU). The engine looks all
/// blocks of a request up before it inserts the missed ones, so for a multi-block request the two differ
/// when a block is evicted by earlier misses of its own request; fed one block per request, the engine is
/// Mattson's LRU, and that is what the curve must equal.
fn lru_hits(reqs: &[Request], size: u64) -> (u64, u64) {
    let reqs: Vec<Request> = reqs.iter().flat_map(Request::blocks).map(|b| Request::read(b, 1)).collect();
    let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = {size}\npolicy = 'lru'\n")).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    (r.levels[0].counters.hits, r.levels[0].counters.demand_accesses)
}

/// Requests all of whose blocks hit, by a naive LRU list of `size` blocks (reference for the request curve).
fn naive_request_hits(reqs: &[Request], size: usize) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    let mut hits = 0;
    for r in reqs {
        let mut all = true;
        for b in r.blocks() {
            match stack.iter().position(|&x| x == b) {
                Some(i) => {
                    stack.remove(i);
                }
                None => all = false,
            }
            stack.insert(0, b);
            stack.truncate(size);
        }
        hits += u64::from(all);
    }
    hits
}

fn exact(reqs: &[Request], cfg: ShardsConfig) -> mrc::DistanceHistogram {
    let (h, _) = mrc::histogram(&mut VecSource::new(reqs.to_vec()), cfg, &mut |_| true).unwrap();
    h
}

fn assert_exact(reqs: &[Request]) -> Result<(), TestCaseError> {
    let h = exact(reqs, ShardsConfig::exact());
    let footprint = h.footprint() as u64;
    for size in 1..=footprint + 1 {
        let (hits, accesses) = lru_hits(reqs, size);
        prop_assert_eq!(h.total_blocks as u64, accesses);
        prop_assert_eq!(h.block_hits(size) as u64, hits, "size {}", size);
        prop_assert_eq!(h.request_hits(size) as u64, naive_request_hits(reqs, size as usize), "size {}", size);
    }
    Ok(())
}

/// Sequential runs, re-reads and random blocks, multi-block requests: a small mixed workload.
fn synthetic(n: usize, seed: u64) -> Vec<Request> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    let mut seq = 1000u64;
    for _ in 0..n {
        let r = next();
        out.push(match r % 4 {
            0 => {
                seq += 4;
                Request::read(seq - 4, 4)
            }
            1 => Request::read(next() % 300, 1 + (next() % 3) as u32),
            2 => Request::read(next() % 40, 1),
            _ => Request::read(seq.saturating_sub(next() % 64), 2),
        });
    }
    out
}

#[test]
fn exact_curve_equals_lru_simulation_at_every_size() {
    assert_exact(&synthetic(600, 7)).unwrap();
}

#[test]
fn exact_curve_survives_compaction_of_the_time_axis() {
    // More than 2^16 references over few blocks forces several compactions.
    let reqs: Vec<Request> = (0..90_000u64).map(|i| Request::read((i * 7919) % 500, 1)).collect();
    let h = exact(&reqs, ShardsConfig::exact());
    for size in [1, 100, 499, 500, 501] {
        assert_eq!(h.block_hits(size) as u64, lru_hits(&reqs, size).0, "size {size}");
    }
}

#[test]
fn exact_curve_survives_compaction_while_the_footprint_grows() {
    // 30k blocks (the axis grows past its 2^16 minimum), reuses near and far in time: distances that
    // span many words of the mark set, across several compactions.
    let mut x = 99u64;
    let reqs: Vec<Request> = (0..200_000u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = if x % 3 == 0 { 30_000 } else { 200 };
            Request::read((i / 7 + x % span) % 30_000, 1)
        })
        .collect();
    let h = exact(&reqs, ShardsConfig::exact());
    for size in [1, 64, 65, 300, 5_000, 29_999, 30_000] {
        assert_eq!(h.block_hits(size) as u64, lru_hits(&reqs, size).0, "size {size}");
    }
}

#[test]
fn shards_at_rate_one_equals_the_exact_curve() {
    let reqs = synthetic(3000, 11);
    let e = exact(&reqs, ShardsConfig::exact());
    // Fixed-size with room for every block stays at rate 1 but goes through the hashing path.
    let mut cfg = ShardsConfig::fixed_size(1 << 20);
    cfg.seed = 3;
    let s = exact(&reqs, cfg);
    let fixed = exact(&reqs, ShardsConfig { adjust: false, ..ShardsConfig::fixed_rate(1.0) });
    for size in 1..=e.footprint() as u64 + 1 {
        assert_eq!(s.block_hits(size), e.block_hits(size));
        assert_eq!(s.request_hits(size), e.request_hits(size));
        assert_eq!(fixed.block_hits(size), e.block_hits(size));
    }
    assert_eq!(s.total_blocks, e.total_blocks);
}

#[test]
fn every_method_counts_the_requests_and_references_it_read() {
    // SHARDS reported its weighted estimate of the requests as the trace's (P6 at 1%: 1,628,100 for
    // 519,711); the pass reads every request, so it counts them.
    let reqs = synthetic(3000, 11);
    let blocks: u64 = reqs.iter().map(|r| u64::from(r.len)).sum();
    let e = exact(&reqs, ShardsConfig::exact());
    assert_eq!((e.read_requests, e.read_blocks, e.sampled_blocks), (3000, blocks, blocks));
    assert_eq!(e.total_requests, 3000.0);
    for cfg in [
        ShardsConfig::fixed_rate(0.05),
        ShardsConfig { adjust: false, ..ShardsConfig::fixed_rate(0.05) },
        ShardsConfig::fixed_size(64),
    ] {
        let s = exact(&reqs, cfg.clone());
        assert_eq!((s.read_requests, s.read_blocks), (3000, blocks), "{cfg:?}");
        assert!(s.sampled_blocks > 0 && s.sampled_blocks < blocks, "{cfg:?}: {}", s.sampled_blocks);
    }
}

#[test]
fn fixed_size_shards_keeps_at_most_its_sample_size() {
    let reqs: Vec<Request> = (0..20_000u64).map(|i| Request::read((i * 2_654_435_761) % 50_000, 1)).collect();
    let mut b = MrcBuilder::new(ShardsConfig::fixed_size(256)).unwrap();
    for r in &reqs {
        b.add(r);
        assert!(b.tracked() <= 256, "tracked {}", b.tracked());
    }
    assert!(b.rate() < 0.1, "the rate dropped to keep the sample: {}", b.rate());
    let h = b.finish();
    // The estimate of the references stays near the truth (inverse-probability weights).
    assert!((h.total_blocks / 20_000.0 - 1.0).abs() < 0.5, "{}", h.total_blocks);
}

/// Marsaglia's xorshift64 from `seed` (not 0): cheap reproducible numbers for synthetic traces.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[test]
fn shards_at_ten_percent_is_close_on_a_uniform_trace() {
    // 200k references over 20k blocks uniformly: the curve is 1 - size/20k; 10% sampling keeps ~2000
    // blocks (at 1% the ~200 kept blocks make the sampled footprint, and so the distance scale, off by ~7%).
    let mut next = xorshift(88_172_645_463_325_252);
    let reqs: Vec<Request> = (0..200_000).map(|_| Request::read(next() % 20_000, 1)).collect();
    let e = exact(&reqs, ShardsConfig::exact());
    let s = exact(&reqs, ShardsConfig::fixed_rate(0.1));
    let sizes: Vec<u64> = (1..=20).map(|i| i * 1000).collect();
    let (ce, cs) = (e.curve(&sizes), s.curve(&sizes));
    let mae: f64 =
        ce.points.iter().zip(&cs.points).map(|(a, b)| (a.miss_ratio - b.miss_ratio).abs()).sum::<f64>() / 20.0;
    assert!(mae < 0.03, "mean absolute error {mae}");
}

#[test]
fn on_one_block_requests_the_request_curve_is_the_block_curve_under_shards_too() {
    // Every request one block: a request misses when its block does, so the two curves are one. SHARDS_adj
    // corrected the block curve only (w106, 1%, 1,000 blocks: request miss 0.372, block 0.217).
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let reqs: Vec<Request> = (0..100_000)
        .map(|_| {
            let x = next();
            Request::read(x % 5_000 + if x % 3 == 0 { 0 } else { x % 50 }, 1)
        })
        .collect();
    let sizes: Vec<u64> = (1..=10).map(|i| i * 500).collect();
    for cfg in [ShardsConfig::fixed_rate(0.05), ShardsConfig { adjust: false, ..ShardsConfig::fixed_rate(0.05) }] {
        let c = exact(&reqs, cfg.clone()).curve(&sizes);
        for p in &c.points {
            assert!((p.miss_ratio - p.request_miss_ratio).abs() < 1e-9, "{cfg:?}: {p:?}");
        }
    }
}

#[test]
fn bad_sampling_parameters_name_the_field() {
    let err = |v: serde_json::Value| ShardsConfig::from_json(v).unwrap_err().to_string();
    assert!(err(serde_json::json!({"rate": 0.0})).starts_with("sampling.rate:"));
    assert!(err(serde_json::json!({"rate": 1.5})).starts_with("sampling.rate:"));
    assert!(err(serde_json::json!({"max_samples": 0})).starts_with("sampling.max_samples:"));
    assert!(err(serde_json::json!({"rate": "x"})).starts_with("sampling.rate:"));
    assert!(err(serde_json::json!({"rat": 0.1})).contains("rat"));
    let serr = |v: serde_json::Value| SampleConfig::from_json(v, 4096).unwrap_err().to_string();
    assert!(serr(serde_json::json!({"rate": -1})).starts_with("sample.rate:"));
    assert!(serr(serde_json::json!({"extent_bytes": 1000})).starts_with("sample.extent_bytes:"));
    assert!(serr(serde_json::json!({"unit": "page"})).starts_with("sample.unit:"));
    assert!(MrcBuilder::new(ShardsConfig { rate: f64::NAN, ..ShardsConfig::default() }).is_err());
}

#[test]
fn extent_sampling_keeps_whole_extents_and_cuts_requests_at_their_edges() {
    let cfg = SampleConfig { rate: 0.5, unit: SampleUnit::Extent, extent_bytes: 4 * 4096, seed: 1 };
    let reqs: Vec<Request> = (0..200u64).map(|i| Request::read(i * 3, 7)).collect();
    let mut src = SampledSource::new(VecSource::new(reqs.clone()), &cfg, 4096);
    let mut out = Vec::new();
    while src.fill(&mut out, 16).unwrap() > 0 {}
    let sampled = |b: u64| mrc::hash::mix(b / 4, 1) <= mrc::hash::threshold(0.5);
    let want: Vec<u64> = reqs.iter().flat_map(Request::blocks).filter(|&b| sampled(b)).collect();
    let got: Vec<u64> = out.iter().flat_map(Request::blocks).collect();
    assert_eq!(got, want);
    assert!(out.iter().all(|r| r.len >= 1));
    assert_eq!(src.seen_blocks, 200 * 7);
    // Some extents are in and some out at rate 0.5.
    assert!(!want.is_empty() && want.len() < 1400);
}

fn random_requests() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u64..60, 1u32..5), 1..120)
        .prop_map(|v| v.into_iter().map(|(b, l)| Request::read(b, l)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn exact_curve_equals_lru_on_random_traces(reqs in random_requests()) {
        assert_exact(&reqs)?;
    }
}

/// A fixed-rate pass over a slice (`add_all`: requests tested whole by the filter, one-block batches by
/// one comparison) gives the histogram of adding the requests one by one, where every block is hashed
/// (docs/mrc.md, round 5): batches of one-block requests and of varied lengths, block numbers above 2^32
/// and next to a wrap of their low half, requests longer than the filter's table.
#[test]
fn a_fixed_rate_pass_over_a_slice_equals_adding_requests_one_by_one() {
    let mut x = 11u64;
    let mut next = || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        x
    };
    let mut reqs = Vec::new();
    for batch in 0..6 {
        for _ in 0..20_000 {
            let r = next();
            let first = match r % 5 {
                0 => (r >> 40) % 3000,
                1 => (r >> 44) % 200_000,
                2 => (1u64 << 32) + (r >> 50),
                3 => (1u64 << 32) - 1 - (r >> 58),
                _ => (r >> 20) % 50_000,
            };
            let len = if batch % 2 == 0 {
                if r % 97 == 0 {
                    3
                } else {
                    1
                }
            } else {
                1 + (r >> 59) as u32 * 3
            };
            reqs.push(Request::read(first, len));
        }
    }
    for (rate, seed) in [(0.01, 0), (0.05, 3), (0.3, 7)] {
        let cfg = ShardsConfig { seed, ..ShardsConfig::fixed_rate(rate) };
        let mut whole = MrcBuilder::new(cfg.clone()).unwrap();
        whole.add_all(&reqs);
        let mut one_by_one = MrcBuilder::new(cfg).unwrap();
        reqs.iter().for_each(|r| one_by_one.add(r));
        assert_eq!(whole.sampled_references(), one_by_one.sampled_references(), "rate {rate}");
        let (a, b) = (whole.finish(), one_by_one.finish());
        assert_eq!(a.blocks, b.blocks, "rate {rate}");
        assert_eq!(a.requests, b.requests, "rate {rate}");
        assert_eq!((a.cold_blocks, a.cold_requests), (b.cold_blocks, b.cold_requests), "rate {rate}");
        assert_eq!((a.total_blocks, a.total_requests), (b.total_blocks, b.total_requests), "rate {rate}");
    }
}
