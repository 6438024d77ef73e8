//! Synthetic workloads (Split §4 mixes, PFC §4.2-shaped presets), trace statistics and writers: the
//! behaviour they promise, checked end to end through the public API.

use std::collections::{HashMap, HashSet};

use prefetchsim_core::engine::VecSource;
use prefetchsim_core::{Op, Request};
use prefetchsim_trace::stats::{RandomRule, TraceStats};
use prefetchsim_trace::synth::{self, GENERATORS};
use prefetchsim_trace::writer::{self, OracleShape, WriteOptions, CSV_HEADER, ORACLE_RECORD};
use prefetchsim_trace::TraceSpec;
use serde_json::{json, Map, Value};

fn params(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn generate(name: &str, p: Value, block_size: u64) -> Vec<Request> {
    let mut src = synth::open(name, &params(p), block_size).unwrap();
    let mut v = Vec::new();
    while src.fill(&mut v, 4096).unwrap() > 0 {}
    v
}

fn stats_of(name: &str, p: Value) -> TraceStats {
    let mut src = synth::open(name, &params(p), 4096).unwrap();
    TraceStats::compute(&mut *src, 4096, RandomRule::default()).unwrap()
}

/// A scratch directory for one test, removed at the end.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("prefetchsim-it-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
    fn path(&self, file: &str) -> String {
        self.0.join(file).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------------
// Determinism

#[test]
fn every_generator_repeats_itself_for_the_same_seed_and_changes_with_another() {
    for (name, _) in GENERATORS {
        let extra = if *name == "sequential" { json!({ "streams": 3, "interleave": "random" }) } else { json!({}) };
        let with = |seed: u64| {
            let mut p = params(extra.clone());
            p.insert("requests".into(), json!(3000));
            p.insert("seed".into(), json!(seed));
            generate(name, Value::Object(p), 4096)
        };
        let (a, b, c) = (with(5), with(5), with(6));
        assert_eq!(a.len(), 3000, "{name}");
        assert_eq!(a, b, "{name}: same seed, different requests");
        assert_ne!(a, c, "{name}: another seed, same requests");
    }
}

#[test]
fn generation_does_not_depend_on_the_batch_size() {
    let whole = generate("oltp-like", json!({ "requests": 5000 }), 4096);
    let mut src = synth::open("oltp-like", &params(json!({ "requests": 5000 })), 4096).unwrap();
    let mut pieces = Vec::new();
    for max in [1usize, 7, 100, 3, 10_000].iter().cycle() {
        if src.fill(&mut pieces, *max).unwrap() == 0 {
            break;
        }
    }
    assert_eq!(whole, pieces);
}

#[test]
fn a_synthetic_trace_spec_opens_the_generator_and_reports_bad_parameters_by_key() {
    let spec = TraceSpec::from_json(json!({
        "path": "zipf", "format": "synthetic", "params": { "requests": 10, "objects": 50 }
    }))
    .unwrap();
    let mut v = Vec::new();
    assert_eq!(spec.open().unwrap().fill(&mut v, 100).unwrap(), 10);
    assert!(v.iter().all(|r| r.first < 50));
    let bad = TraceSpec::from_json(json!({
        "path": "web-like", "format": "synthetic", "params": { "random": 1.5 }
    }))
    .unwrap();
    let e = bad.open().err().unwrap().to_string();
    assert_eq!(e, "trace.params.random: must be between 0 and 1, got 1.5");
}

// ---------------------------------------------------------------------------------------------------
// The Split paper's mixes

/// (single, multi, random) of each preset.
const MIXES: [(&str, u32, u32, u32); 3] =
    [("split-mix1", 0, 90, 10), ("split-mix2", 50, 0, 50), ("split-mix3", 10, 40, 50)];

#[test]
fn split_mixes_never_request_a_block_twice() {
    for (name, ..) in MIXES {
        let reqs = generate(name, json!({}), 512);
        assert_eq!(reqs.len(), 100_000, "{name}");
        let mut seen = HashSet::new();
        assert!(reqs.iter().all(|r| r.len == 1 && seen.insert(r.first)), "{name}: a block came twice");
    }
}

#[test]
fn split_mixes_have_their_generator_counts_and_regions() {
    let region = 17_783_240 / 100;
    for (name, single, multi, random) in MIXES {
        let reqs = generate(name, json!({}), 512);
        let streams: HashSet<u32> = reqs.iter().map(|r| r.stream).collect();
        assert_eq!(streams.len() as u32, single + multi + random, "{name}");
        assert!(reqs.iter().all(|r| r.first / region == u64::from(r.stream)), "{name}: a block left its region");
        // Generators run at the same rate: each issues about 1/100 of the requests.
        let mut per: HashMap<u32, u32> = HashMap::new();
        reqs.iter().for_each(|r| *per.entry(r.stream).or_default() += 1);
        assert!(per.values().all(|&n| (850..1150).contains(&n)), "{name}: {per:?}");
    }
}

/// Requests of generator `g`, in trace order.
fn of_generator(reqs: &[Request], g: u32) -> Vec<u64> {
    reqs.iter().filter(|r| r.stream == g).map(|r| r.first).collect()
}

/// Number of contiguous runs in a block sequence.
fn runs(blocks: &[u64]) -> usize {
    1 + blocks.windows(2).filter(|w| w[1] != w[0] + 1).count()
}

#[test]
fn split_single_sequential_generators_read_one_contiguous_run_each() {
    let reqs = generate("split-mix3", json!({}), 512);
    for g in 0..10 {
        assert_eq!(runs(&of_generator(&reqs, g)), 1, "generator {g}");
    }
}

#[test]
fn split_multiple_sequential_generators_read_runs_of_mean_length_ten() {
    let reqs = generate("split-mix1", json!({}), 512);
    let (mut total, mut n_runs) = (0usize, 0usize);
    for g in 0..90 {
        let b = of_generator(&reqs, g);
        total += b.len();
        n_runs += runs(&b);
    }
    let mean = total as f64 / n_runs as f64;
    // Runs cut by the end of the trace shorten the mean a little.
    assert!((9.3..10.5).contains(&mean), "mean run length {mean}");
    // Random generators almost never step to the next block.
    for g in 90..100 {
        let b = of_generator(&reqs, g);
        assert!(runs(&b) + 5 >= b.len(), "generator {g} looks sequential");
    }
}

#[test]
fn split_trace_is_time_ordered_with_two_second_mean_inter_arrivals_per_generator() {
    let reqs = generate("split", json!({}), 512);
    assert!(reqs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    let last = reqs.last().unwrap().time_ns as f64 / 1e9;
    // 100 generators at 0.5 requests/s each: 100,000 requests take about 2,000 s.
    assert!((1900.0..2100.0).contains(&last), "{last} s");
}

#[test]
fn split_structure_gives_the_expected_random_share_with_a_wide_window() {
    // Random generators' requests plus every run start: mix 1 = 0.1 + 0.9 / 10, mix 2 = 0.5, mix 3 =
    // 0.5 + 0.4 / 10. The 100 interleaved generators need a window well above 100 requests.
    let wide = RandomRule { window: 2048, gap: 0 };
    for (name, want) in [("split-mix1", 0.19), ("split-mix2", 0.50), ("split-mix3", 0.54)] {
        let mut src = synth::open(name, &Map::new(), 512).unwrap();
        let s = TraceStats::compute(&mut *src, 512, wide).unwrap();
        assert!((s.random_share - want).abs() < 0.01, "{name}: {}", s.random_share);
        assert_eq!(s.footprint_blocks, 100_000, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------------
// Presets shaped like the PFC traces

fn assert_random_share(name: &str, p: Value, want: f64) -> TraceStats {
    let s = stats_of(name, p.clone());
    assert!(
        (s.random_share - want).abs() <= 0.02,
        "{name} {p}: random share {:.4}, want {want} ± 0.02",
        s.random_share
    );
    s
}

#[test]
fn oltp_like_is_eleven_percent_random_over_a_few_hundred_megabytes() {
    let s = assert_random_share("oltp-like", json!({}), 0.11);
    assert_random_share("oltp-like", json!({ "seed": 7, "requests": 200_000 }), 0.11);
    assert!((300 << 20..600 << 20).contains(&s.footprint_bytes), "{}", s.footprint_bytes);
    assert!(s.blocks_accessed > 10 * s.footprint_blocks, "OLTP re-reads its hot data");
    assert!((3.0..6.0).contains(&s.mean_request_blocks), "{}", s.mean_request_blocks);
    assert!(s.duration_ns > 0 && s.writes > 0);
}

#[test]
fn web_like_is_seventy_four_percent_random_with_small_requests_and_some_reuse() {
    let s = assert_random_share("web-like", json!({}), 0.74);
    assert_random_share("web-like", json!({ "seed": 7, "requests": 200_000 }), 0.74);
    assert!(s.footprint_bytes > 2 << 30, "{}", s.footprint_bytes);
    assert!(s.blocks_accessed > s.footprint_blocks * 3 / 2, "some blocks are read again");
    assert!(s.mean_request_blocks <= 4.0 && s.writes == 0);
}

#[test]
fn multi_like_is_a_quarter_random_with_applications_reading_files() {
    let s = assert_random_share("multi-like", json!({}), 0.25);
    assert_random_share("multi-like", json!({ "seed": 7, "requests": 200_000 }), 0.25);
    assert_eq!(s.clients, 3);
    assert!(s.streams > 10_000, "most of the 12,514 files are read: {}", s.streams);
    assert!((500 << 20..900 << 20).contains(&s.footprint_bytes), "{}", s.footprint_bytes);
    // A few hot files are scanned again and again: count the reads of each file's first block.
    let reqs = generate("multi-like", json!({ "requests": 100_000 }), 4096);
    let mut start: HashMap<u32, u64> = HashMap::new();
    reqs.iter().for_each(|r| {
        let s = start.entry(r.stream).or_insert(r.first);
        *s = (*s).min(r.first);
    });
    let mut scans: HashMap<u32, u64> = HashMap::new();
    reqs.iter().filter(|r| r.first == start[&r.stream]).for_each(|r| *scans.entry(r.stream).or_default() += 1);
    let hottest = scans.values().max().copied().unwrap();
    assert!(hottest >= 50, "the hottest file is read from its start only {hottest} times");
}

#[test]
fn a_single_sequential_stream_has_one_random_request_and_no_reuse() {
    let s = stats_of("sequential", json!({ "requests": 10_000, "len": 4 }));
    assert_eq!((s.random_requests, s.footprint_blocks, s.blocks_accessed), (1, 40_000, 40_000));
    let s = stats_of("sequential", json!({ "requests": 10_000, "streams": 4 }));
    assert_eq!((s.random_requests, s.streams), (4, 4));
}

// ---------------------------------------------------------------------------------------------------
// Statistics on a hand-made trace

#[test]
fn stats_of_a_hand_made_trace_match_every_field() {
    let r = |time_ns, first, len, op, stream, client| Request { time_ns, first, len, op, stream, client };
    let reqs = vec![
        r(1_000, 100, 4, Op::Read, 1, 0),  // random (first), blocks 100-103
        r(2_000, 104, 2, Op::Read, 1, 0),  // continues 103: sequential, 104-105
        r(3_000, 50, 1, Op::Write, 2, 1),  // random, block 50
        r(4_000, 100, 2, Op::Read, 1, 0),  // re-read 100-101: random (not after a recent end)
        r(5_000, 51, 1, Op::Write, 2, 1),  // continues 50: sequential
        r(9_000, 106, 3, Op::Read, 3, 2),  // continues 105 (4 requests back): sequential, 106-108
        r(10_500, 110, 1, Op::Read, 3, 2), // 109 skipped: random with gap 0
    ];
    let s = TraceStats::compute(&mut VecSource::new(reqs.clone()), 4096, RandomRule::default()).unwrap();
    let want = TraceStats {
        block_size: 4096,
        requests: 7,
        reads: 5,
        writes: 2,
        read_share: 5.0 / 7.0,
        blocks_accessed: 14,
        bytes_accessed: 14 * 4096,
        footprint_blocks: 12, // 50, 51, 100-108, 110
        footprint_bytes: 12 * 4096,
        mean_request_blocks: 2.0,
        mean_request_bytes: 8192.0,
        bytes_from: prefetchsim_trace::stats::BytesFrom::Blocks,
        min_block: Some(50),
        max_block: Some(110),
        duration_ns: 9_500,
        streams: 3,
        clients: 3,
        random_requests: 4,
        random_share: 4.0 / 7.0,
        random_window: 32,
        random_gap: 0,
    };
    assert_eq!(s, want);
    let gap1 = TraceStats::compute(&mut VecSource::new(reqs.clone()), 4096, RandomRule { window: 32, gap: 1 }).unwrap();
    assert_eq!(gap1.random_requests, 3);
    let short = TraceStats::compute(&mut VecSource::new(reqs), 4096, RandomRule { window: 3, gap: 0 }).unwrap();
    assert_eq!(short.random_requests, 5, "106 continues a request 4 back, outside a 3-request window");
}

#[test]
fn stats_serialise_to_a_flat_record_with_stable_column_names_in_schema_order() {
    let s = TraceStats::compute(&mut VecSource::new(vec![Request::read(3, 1)]), 512, RandomRule::default()).unwrap();
    let v = serde_json::to_value(&s).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "block_size",
            "requests",
            "reads",
            "writes",
            "read_share",
            "blocks_accessed",
            "bytes_accessed",
            "footprint_blocks",
            "footprint_bytes",
            "mean_request_blocks",
            "mean_request_bytes",
            "bytes_from",
            "min_block",
            "max_block",
            "duration_ns",
            "streams",
            "clients",
            "random_requests",
            "random_share",
            "random_window",
            "random_gap",
        ]
    );
    // Flat: numbers, and `bytes_from`'s one word.
    assert!(
        v.as_object().unwrap().iter().all(|(k, x)| x.is_number() || k == "bytes_from" && x == "blocks"),
        "flat: {v}"
    );
}

// ---------------------------------------------------------------------------------------------------
// Writers

/// Parse oracleGeneral records: (ts_s, obj_id, size, next_access_vtime).
fn parse_oracle(bytes: &[u8]) -> Vec<(u32, u64, u32, i64)> {
    assert_eq!(bytes.len() % ORACLE_RECORD, 0);
    bytes
        .chunks_exact(ORACLE_RECORD)
        .map(|c| {
            (
                u32::from_le_bytes(c[0..4].try_into().unwrap()),
                u64::from_le_bytes(c[4..12].try_into().unwrap()),
                u32::from_le_bytes(c[12..16].try_into().unwrap()),
                i64::from_le_bytes(c[16..24].try_into().unwrap()),
            )
        })
        .collect()
}

/// The records we expect for `reqs`, with next_access_vtime by brute force.
fn expected_oracle(reqs: &[Request], block_size: u64, per_block: bool) -> Vec<(u32, u64, u32, i64)> {
    let mut recs: Vec<(u32, u64, u32)> = Vec::new();
    for r in reqs {
        let ts = (r.time_ns / 1_000_000_000) as u32;
        if per_block {
            recs.extend(r.blocks().map(|b| (ts, b, block_size as u32)));
        } else {
            recs.push((ts, r.first, (u64::from(r.len) * block_size) as u32));
        }
    }
    (0..recs.len())
        .map(|i| {
            // libCacheSim's virtual time counts from 1.
            let next = (i + 1..recs.len()).find(|&j| recs[j].1 == recs[i].1).map_or(-1, |j| j as i64 + 1);
            (recs[i].0, recs[i].1, recs[i].2, next)
        })
        .collect()
}

#[test]
fn oracle_general_round_trips_in_both_shapes_plain_and_zstd() {
    let dir = Scratch::new("oracle");
    let reqs = generate("oltp-like", json!({ "requests": 3000, "footprint_bytes": 1 << 20 }), 4096);
    for (per_block, shape) in [(false, OracleShape::Objects), (true, OracleShape::PerBlock)] {
        let want = expected_oracle(&reqs, 4096, per_block);
        assert!(want.iter().any(|r| r.3 >= 0) && want.iter().any(|r| r.3 == -1));
        for file in ["t.oracleGeneral", "t.oracleGeneral.zst"] {
            let path = dir.path(file);
            let sum = writer::write_oracle_general(&mut VecSource::new(reqs.clone()), &path, 4096, shape).unwrap();
            assert_eq!((sum.requests, sum.records), (3000, want.len() as u64));
            let raw = std::fs::read(&path).unwrap();
            let bytes = if file.ends_with(".zst") { zstd::decode_all(&raw[..]).unwrap() } else { raw };
            assert_eq!(parse_oracle(&bytes), want, "{file} {shape:?}");
        }
    }
}

#[test]
fn per_block_records_of_a_request_ascend_and_share_its_timestamp() {
    let reqs = vec![Request { time_ns: 3_500_000_000, first: 10, len: 3, ..Request::default() }, Request::read(11, 1)];
    let mut out = Vec::new();
    writer::write_oracle_general_to(
        &mut VecSource::new(reqs),
        &mut out,
        "mem",
        4096,
        WriteOptions { shape: OracleShape::PerBlock, rebase_time: false },
    )
    .unwrap();
    assert_eq!(parse_oracle(&out), vec![(3, 10, 4096, -1), (3, 11, 4096, 4), (3, 12, 4096, -1), (0, 11, 4096, -1)]);
}

#[test]
fn oracle_general_refuses_sizes_that_do_not_fit_u32() {
    let reqs = vec![Request::read(0, 1 << 20)];
    let e =
        writer::write_oracle_general_to(&mut VecSource::new(reqs), &mut Vec::new(), "out", 8192, Default::default())
            .unwrap_err()
            .to_string();
    assert!(e.contains("does not fit u32"), "{e}");
}

#[test]
fn csv_round_trips_every_field() {
    let dir = Scratch::new("csv");
    let reqs = generate("multi-like", json!({ "requests": 2000, "read_share": 0.5 }), 4096);
    for file in ["t.csv", "t.csv.zst"] {
        let path = dir.path(file);
        writer::write_csv(&mut VecSource::new(reqs.clone()), &path, 4096).unwrap();
        let raw = std::fs::read(&path).unwrap();
        let bytes = if file.ends_with(".zst") { zstd::decode_all(&raw[..]).unwrap() } else { raw };
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("# prefetchsim trace: block_size=4096"));
        assert_eq!(lines.next(), Some("# prefetchsim stream_ids=false"), "requests in memory declare nothing");
        assert_eq!(lines.next(), Some(CSV_HEADER));
        let back: Vec<Request> = lines
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                Request {
                    time_ns: f[0].parse().unwrap(),
                    op: if f[1] == "write" { Op::Write } else { Op::Read },
                    first: f[2].parse().unwrap(),
                    len: f[3].parse().unwrap(),
                    stream: f[4].parse().unwrap(),
                    client: f[5].parse().unwrap(),
                }
            })
            .collect();
        assert_eq!(back, reqs, "{file}");
    }
}

/// All requests of a trace file, its format detected.
fn read_back(path: &str, block_size: u64) -> (String, Vec<Request>) {
    let spec = TraceSpec { block_size, ..TraceSpec::new(path) };
    let format = prefetchsim_trace::detect::detect(path).unwrap().to_string();
    let mut src = spec.open().unwrap();
    let mut out = Vec::new();
    while src.fill(&mut out, 4096).unwrap() > 0 {}
    (format, out)
}

#[test]
fn the_csv_convert_writes_is_detected_and_read_back_as_the_same_requests() {
    let dir = Scratch::new("csv-back");
    let reqs = generate("multi-like", json!({ "requests": 2000, "read_share": 0.5 }), 4096);
    for file in ["t.csv", "t.csv.gz"] {
        let path = dir.path(file);
        writer::write_csv(&mut VecSource::new(reqs.clone()), &path, 4096).unwrap();
        let (format, back) = read_back(&path, 4096);
        assert_eq!(format, "prefetchsim_csv", "{file}");
        assert_eq!(back, reqs, "{file}");
    }
    // Read at half the block size, the same bytes make twice the blocks.
    let (_, halves) = read_back(&dir.path("t.csv"), 2048);
    assert_eq!(halves[0].first, reqs[0].first * 2);
    assert_eq!(halves[0].len, reqs[0].len * 2);
}

#[test]
fn a_failed_write_leaves_no_file_and_no_temporary_file() {
    let dir = Scratch::new("atomic");
    // MSR-like absolute times (FILETIME: 100 ns ticks since 1601) overflow oracleGeneral's u32 seconds.
    let reqs = vec![Request { time_ns: 128_166_385_295_514_663 * 100, ..Request::read(5, 1) }];
    let path = dir.path("t.oracleGeneral.zst");
    let e = writer::write(&mut VecSource::new(reqs.clone()), &path, "oracleGeneral", 4096, WriteOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not fit oracleGeneral's u32 seconds") && e.contains("--rebase-time"), "{e}");
    let left: Vec<_> = std::fs::read_dir(dir.path("")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "{left:?}");
    // With the times rebased to the first request the same trace converts.
    let opts = WriteOptions { rebase_time: true, ..WriteOptions::default() };
    let sum = writer::write(&mut VecSource::new(reqs), &path, "oracleGeneral", 4096, opts).unwrap();
    assert_eq!((sum.records, sum.time_origin_ns), (1, 12_816_638_529_551_466_300));
    let left: Vec<_> = std::fs::read_dir(dir.path("")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("t.oracleGeneral.zst")]);
}

#[test]
fn the_summary_counts_requests_of_more_than_one_block() {
    let reqs = vec![Request::read(1, 1), Request::read(5, 3), Request::read(9, 2)];
    let sum =
        writer::write_oracle_general_to(&mut VecSource::new(reqs), &mut Vec::new(), "m", 4096, Default::default())
            .unwrap();
    assert_eq!((sum.requests, sum.multi_block_requests), (3, 2));
}
