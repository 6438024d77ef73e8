//! The trace readers: every shared real trace (detected and named explicitly; record counts, read shares
//! and address spans from the traces README; first records), and hand-made malformed inputs whose errors
//! must name the exact file, line or record, and field.

use std::io::Write;

use prefetchsim_core::Op;
use prefetchsim_trace::detect::detect;
use prefetchsim_trace::{compress, formats, AddrUnit, Location, RawRecord, RecordReader, TraceError, TraceSpec};

use crate::common::{self, Scratch};

// ---------------------------------------------------------------------------------------------------------
// Helpers

fn open_with(path: &str, spec: &TraceSpec) -> Result<Box<dyn RecordReader>, TraceError> {
    let format = spec.resolved_format()?;
    formats::open(format, path, compress::open(path)?, spec)
}

fn open(path: &str, format: &str) -> Box<dyn RecordReader> {
    open_with(path, &TraceSpec::with_format(path, format)).unwrap_or_else(|e| panic!("open {path} as {format}: {e}"))
}

/// What a full pass over a trace saw.
#[derive(Debug, Default)]
struct Summary {
    count: u64,
    reads: u64,
    first: Vec<RawRecord>,
    min_addr: u64,
    max_addr: u64,
    size_sum: u64,
    streams: std::collections::BTreeSet<u32>,
    clients: std::collections::BTreeSet<u32>,
}

fn summarize(mut r: Box<dyn RecordReader>, path: &str) -> Summary {
    let mut s = Summary { min_addr: u64::MAX, ..Summary::default() };
    let mut last_pos = 0;
    loop {
        let rec = match r.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => break,
            Err(e) => panic!("{path}: record {}: {e}", s.count),
        };
        // Positions (line or record index, for error messages) strictly increase; the first records are
        // compared without them.
        assert!(s.count == 0 || rec.pos > last_pos, "{path}: position {} after {last_pos}", rec.pos);
        last_pos = rec.pos;
        s.count += 1;
        s.reads += u64::from(rec.op == Op::Read);
        if s.first.len() < 3 {
            s.first.push(RawRecord { pos: 0, ..rec });
        }
        s.min_addr = s.min_addr.min(rec.addr);
        s.max_addr = s.max_addr.max(rec.addr);
        s.size_sum += rec.size;
        s.streams.insert(rec.stream);
        s.clients.insert(rec.client);
    }
    s
}

/// Check that `rel` is detected as `format`, that opening it by detection gives the same first requests as
/// naming the format, and return a full pass with the explicit format.
fn shared(rel: &str, format: &str) -> Option<(String, Summary)> {
    let path = common::trace(rel)?;
    assert_eq!(detect(&path).unwrap_or_else(|e| panic!("{e}")), format, "{rel}");
    let by_detection: Vec<_> = TraceSpec::new(&path).open_file().unwrap().take(1000).map(Result::unwrap).collect();
    let by_name: Vec<_> =
        TraceSpec::with_format(&path, format).open_file().unwrap().take(1000).map(Result::unwrap).collect();
    assert_eq!(by_detection, by_name, "{rel}");
    assert!(!by_name.is_empty());
    let s = summarize(open(&path, format), &path);
    Some((path, s))
}

fn rec(time_ns: u64, op: Op, addr: u64, size: u64, stream: u32, client: u32) -> RawRecord {
    RawRecord { time_ns, op, addr, size, stream, client, pos: 0 }
}

/// All records of `path` read as `spec` says, or the first error (from opening or reading).
/// Every record of `path`, with its position zeroed (positions are checked by `summarize`), so that
/// tests compare content.
fn read_all_spec(path: &str, spec: &TraceSpec) -> Result<Vec<RawRecord>, TraceError> {
    let mut r = open_with(path, spec)?;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(RawRecord { pos: 0, ..rec });
    }
    Ok(out)
}

fn read_all(path: &str, format: &str) -> Result<Vec<RawRecord>, TraceError> {
    read_all_spec(path, &TraceSpec::with_format(path, format))
}

/// The error reading `path` as `format` must be a malformed `field` at `location` of `path`, and its
/// message must contain `what`.
#[track_caller]
fn assert_malformed(path: &str, format: &str, location: Location, field: &str, what: &str) {
    assert_malformed_err(read_all(path, format), path, location, field, what);
}

#[track_caller]
fn assert_malformed_err(
    got: Result<Vec<RawRecord>, TraceError>,
    path: &str,
    location: Location,
    field: &str,
    what: &str,
) {
    match got {
        Err(TraceError::Malformed { file, location: l, field: f, message }) => {
            // Text locations are compared by line; their byte offsets are pinned by their own test.
            let l = match (l, location) {
                (Location::Line { line, .. }, Location::Line { offset, .. }) => Location::Line { line, offset },
                _ => l,
            };
            assert_eq!((file.as_str(), l, f.as_str()), (path, location, field), "message: {message}");
            assert!(message.contains(what), "'{message}' does not say '{what}'");
        }
        other => panic!("expected a malformed '{field}' at {location}, got {other:?}"),
    }
}

fn line(n: u64) -> Location {
    Location::line(n)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

// ---------------------------------------------------------------------------------------------------------
// The shared real traces

#[test]
fn arc_traces_have_the_readme_counts_block_totals_and_spans() {
    // (file, requests, total 512-byte blocks, min start, max start, first record (start, blocks))
    let cases = [
        ("arc/OLTP.lis.zst", 914_145, 914_145, 1, 186_880, (1, 1)),
        ("arc/P2.lis.zst", 666_176, 12_729_495, 0, 7_733_351, (3_050_771, 25)),
        ("arc/P3.lis.zst", 238_578, 3_912_296, 16, 10_498_754, (230_027, 8)),
        ("arc/P6.lis.zst", 519_711, 12_672_123, 456, 10_260_792, (110_765, 64)),
        ("arc/P12.lis.zst", 547_147, 13_208_930, 0, 10_272_272, (1_936_993, 8)),
    ];
    for (rel, count, blocks, min, max, (a0, n0)) in cases {
        let Some((_, s)) = shared(rel, "arc") else { return };
        assert_eq!(s.count, count, "{rel}");
        assert_eq!(s.size_sum, blocks * 512, "{rel}");
        assert_eq!((s.min_addr, s.max_addr), (min, max), "{rel}");
        assert_eq!(s.reads, count, "{rel}: ARC traces are reads only");
        assert_eq!(s.first[0], rec(0, Op::Read, a0, n0 * 512, 0, 0), "{rel}");
    }
}

#[test]
fn w106_is_5292456_little_endian_block_ids() {
    // The traces README (after caffeine) calls these big-endian. Read that way every id is a multiple of
    // 256 (its low byte is always 0) and no request continues the previous one; read little-endian the
    // ids are blocks of a 4.6 GB disk (max 1,197,769) and 39% of requests continue the previous block.
    // Replacement-only studies cannot tell the two apart; prefetching can, so detection says u32le.
    let Some((_, s)) = shared("cloudphysics-w106/w106.trace.xz", "u32le") else { return };
    assert_eq!(s.count, 5_292_456);
    assert_eq!(s.first[0], rec(0, Op::Read, 904_906, 0, 0, 0));
    assert_eq!((s.min_addr, s.max_addr), (0, 1_197_769));
    let Some(path) = common::trace("cloudphysics-w106/w106.trace.xz") else { return };
    let be = summarize(open(&path, "u32be"), &path);
    assert_eq!(be.count, 5_292_456);
    assert_eq!((be.first[0].addr, be.max_addr), (0xcace_0d00, 4_294_905_344));
}

#[test]
fn cloudphysics_vscsi_has_113872_records_and_a_read_share_of_0_413() {
    let Some((_, s)) = shared("cloudphysics-vscsi/cloudPhysicsIO.vscsi.gz", "vscsi") else { return };
    assert_eq!(s.count, 113_872);
    assert_eq!(s.reads, 46_974);
    assert!((s.reads as f64 / s.count as f64 - 0.413).abs() < 5e-4);
    assert_eq!(s.first[0], rec(5_633_898_368_802_000, Op::Write, 42_932_745, 512, 0, 0));
    assert_eq!((s.min_addr, s.max_addr), (15_943, 65_595_455));
}

#[test]
fn cloudphysics_oracle_general_has_113872_objects() {
    let Some((_, s)) = shared("cloudphysics-vscsi/cloudPhysicsIO.oracleGeneral.bin.gz", "oracle_general") else {
        return;
    };
    assert_eq!(s.count, 113_872);
    assert_eq!(s.first[0], rec(5_633_898_000_000_000, Op::Read, 42_932_745, 512, 0, 0));
    assert_eq!((s.min_addr, s.max_addr), (15_943, 65_595_455));
}

#[test]
fn lirs_traces_skip_checkpoint_markers_and_have_the_readme_counts() {
    let cases = [
        ("lirs/sprite.trace.gz", 133_996, 0, 7_074, 0),
        ("lirs/2_pools.trace.gz", 100_000, 1, 9_999, 2819),
        ("lirs/multi1.trace.gz", 15_858, 0, 2_605, 0),
        ("lirs/multi2.trace.gz", 26_311, 0, 5_683, 0),
        ("lirs/multi3.trace.gz", 30_241, 0, 7_453, 0),
        ("lirs/cs.trace.gz", 6_781, 0, 1_408, 0),
        ("lirs/cpp.trace.gz", 9_047, 0, 1_222, 0),
        ("lirs/gli.trace.gz", 6_015, 0, 2_528, 0),
        ("lirs/ps.trace.gz", 10_448, 0, 3_082, 0),
    ];
    for (rel, count, min, max, first) in cases {
        let Some((_, s)) = shared(rel, "lirs") else { return };
        assert_eq!(s.count, count, "{rel}");
        assert_eq!((s.min_addr, s.max_addr), (min, max), "{rel}");
        assert_eq!(s.first[0], rec(0, Op::Read, first, 0, 0, 0), "{rel}");
    }
}

#[test]
fn msr_sample_has_1000_records_with_filetime_in_ns() {
    let Some((_, s)) = shared("msr-sample/msr-cambridge1-sample.csv", "msr") else { return };
    assert_eq!((s.count, s.reads), (1000, 508));
    assert_eq!(s.first[0], rec(12_816_638_529_551_466_300, Op::Write, 9_056_014_336, 2048, 0, 0));
    assert_eq!((s.min_addr, s.max_addr), (17_625_088, 13_575_025_152));
}

#[test]
fn systor17_samples_keep_file_order_and_skip_the_header() {
    let cases = [
        ("systor17-sample/systor17-traces-sample.csv.gz", 826, (1_456_095_145_133_076_000, 899_056_122_368, 131_072)),
        (
            "systor17-sample/systor17-additional-sample.csv.gz",
            700,
            (1_455_591_804_310_701_000, 203_468_398_592, 32_768),
        ),
    ];
    for (rel, reads, (t, addr, size)) in cases {
        let Some((_, s)) = shared(rel, "systor17") else { return };
        assert_eq!((s.count, s.reads), (999, reads), "{rel}");
        assert_eq!(s.first[0], rec(t, Op::Read, addr, size, 0, 0), "{rel}");
        // The samples are slightly out of time order; the reader must not sort them.
        assert!(s.first.windows(2).any(|w| w[0].time_ns > w[1].time_ns), "{rel}: file order kept");
    }
}

#[test]
fn tencent_sample_has_50000_records_over_2038_volumes() {
    let Some((_, s)) = shared("tencent-cbs-sample/cloud_storage-sample.bz2", "tencent") else { return };
    assert_eq!((s.count, s.reads), (50_000, 24_521));
    assert_eq!(s.first[0], rec(1_538_323_200_000_000_000, Op::Write, 4_247_200, 128 * 512, 1058, 0));
    assert_eq!(s.streams.len(), 2038);
    assert_eq!((s.min_addr, s.max_addr), (0, 3_259_860_848));
}

#[test]
fn mqsim_traces_have_the_readme_counts_and_read_shares() {
    let cases = [
        ("mqsim-ascii/wsrch-small.trace.gz", 24_783, 24_779, 6, rec(11_413_000, Op::Read, 657_728, 16 * 512, 0, 0)),
        ("mqsim-ascii/tpcc-small.trace.gz", 6_999, 4_381, 16, rec(938_513_000, Op::Write, 264_719_034, 16 * 512, 4, 0)),
    ];
    for (rel, count, reads, devices, first) in cases {
        let Some((_, s)) = shared(rel, "mqsim") else { return };
        assert_eq!((s.count, s.reads), (count, reads), "{rel}");
        assert_eq!(s.streams.len(), devices, "{rel}");
        assert_eq!(s.first[0], first, "{rel}");
    }
}

#[test]
fn multi_real_lays_files_out_contiguously_from_the_companion_list() {
    let Some((_, s)) = shared("multi-real/multi-real.csv.gz", "multi_real") else { return };
    assert_eq!((s.count, s.reads), (32_162, 32_162));
    assert_eq!((s.streams.len(), s.clients.len()), (9_113, 518));
    assert_eq!(s.size_sum, 225_137_964);
    // File 0 (832 bytes) takes block 0; file 1 starts at the next block boundary.
    assert_eq!(s.first[0], rec(0, Op::Read, 0, 832, 0, 0));
    assert_eq!(s.first[1], rec(27_603_000, Op::Read, 4096, 832, 1, 0));
    assert_eq!(s.first[2], rec(29_047_000, Op::Read, 4096 + 64, 784, 1, 0));
}

#[test]
fn multi_real_without_a_companion_list_sizes_files_in_a_first_pass() {
    let Some(path) = common::trace("multi-real/multi-real.csv.gz") else { return };
    let dir = Scratch::new("first-pass");
    let lone = dir.file("trace.csv.gz", &std::fs::read(&path).unwrap());
    let from_list = read_all(&path, "multi_real").unwrap();
    let from_scan = read_all(&lone, "multi_real").unwrap();
    assert_eq!(from_list, from_scan, "the list holds each file's largest end offset, as the scan finds");
    // Option `files` names the list explicitly.
    let companion = path.replace("multi-real.csv.gz", "multi-real.files.csv.gz");
    let mut spec = TraceSpec::with_format(&lone, "multi_real");
    spec.params.insert("files".into(), companion.into());
    assert_eq!(read_all_spec(&lone, &spec).unwrap(), from_list);
}

#[test]
fn multi_real_butt_hash_layout_spaces_files_one_mebibyte_apart() {
    let Some(path) = common::trace("multi-real/multi-real.csv.gz") else { return };
    let mut spec = TraceSpec::with_format(&path, "multi_real");
    spec.params.insert("layout".into(), "butt_hash".into());
    let recs = read_all_spec(&path, &spec).unwrap();
    assert_eq!(recs.len(), 32_162);
    assert_eq!(recs[0].addr, 0);
    assert_eq!(recs[1].addr, 2048 * 512);
    assert_eq!(recs[2].addr, 2048 * 512 + 64);
    assert!(recs.iter().all(|r| r.addr < prefetchsim_trace::formats::BUTT_HASH_SECTORS * 512 + 4096));
}

#[test]
fn twitter_cluster52_has_one_million_requests() {
    let Some((_, s)) = shared("twitter-cluster52/twitter_cluster52.csv.gz", "twitter") else { return };
    assert_eq!(s.count, 1_000_000);
    assert_eq!(s.first[0], rec(0, Op::Read, 13_053_225_291_711_363_978, 737, 0, 0));
    assert_eq!(s.first[1], rec(0, Op::Read, 61_177_148_907_475_485, 248, 0, 0));
}

#[test]
fn the_companion_file_list_is_not_detected_as_a_trace() {
    let Some(path) = common::trace("multi-real/multi-real.files.csv.gz") else { return };
    let e = detect(&path).unwrap_err();
    assert!(
        matches!(&e, TraceError::Undetected { file, why, .. } if *file == path && why.contains("companion")),
        "{e}"
    );
}

#[test]
fn every_shared_trace_file_is_covered_by_these_tests() {
    let Some(dir) = common::traces_dir() else { return };
    let covered = [
        "arc/OLTP.lis.zst",
        "arc/P2.lis.zst",
        "arc/P3.lis.zst",
        "arc/P6.lis.zst",
        "arc/P12.lis.zst",
        "cloudphysics-w106/w106.trace.xz",
        "cloudphysics-vscsi/cloudPhysicsIO.vscsi.gz",
        "cloudphysics-vscsi/cloudPhysicsIO.oracleGeneral.bin.gz",
        "lirs/sprite.trace.gz",
        "lirs/2_pools.trace.gz",
        "lirs/multi1.trace.gz",
        "lirs/multi2.trace.gz",
        "lirs/multi3.trace.gz",
        "lirs/cs.trace.gz",
        "lirs/cpp.trace.gz",
        "lirs/gli.trace.gz",
        "lirs/ps.trace.gz",
        "msr-sample/msr-cambridge1-sample.csv",
        "systor17-sample/systor17-traces-sample.csv.gz",
        "systor17-sample/systor17-additional-sample.csv.gz",
        "tencent-cbs-sample/cloud_storage-sample.bz2",
        "mqsim-ascii/wsrch-small.trace.gz",
        "mqsim-ascii/tpcc-small.trace.gz",
        "multi-real/multi-real.csv.gz",
        "multi-real/multi-real.files.csv.gz",
        "twitter-cluster52/twitter_cluster52.csv.gz",
    ];
    let mut found = Vec::new();
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).unwrap() {
                let f = f.unwrap().path();
                found.push(f.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    for f in &found {
        assert!(covered.contains(&f.as_str()), "trace {f} is not tested");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Detection of hand-made files by content

#[test]
fn unnamed_text_traces_are_detected_by_their_fields() {
    let dir = Scratch::new("detect-text");
    let cases: [(&str, &[u8]); 10] = [
        ("spc", b"0,20941264,8192,W,0.551706\n1,20939840,8192,r,0.554041\n"),
        ("msr", b"128166372003061629,wdev,2,Read,3154059264,4096,1240\n128166372003061630,wdev,2,Write,0,512,9\n"),
        ("tencent", b"1538323200,4247200,128,1,1058\n1538323199,13896880,128,0,1063\n"),
        ("systor17", b"Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.1,R,0,4096,512\n"),
        ("multi_real", b"time_s,process,file_id,offset,size,op\n0.0,0,0,0,10,R\n"),
        ("arc", b"1 1 0 0\n2 8 0 1\n"),
        ("disksim", b"0.000000 0 3712 8 1\n12.500 1 99 16 0\n"),
        ("mqsim", b"11413000 0 657728 16 1\n11565000 1 31244784 64 0\n"),
        ("lirs", b"5\n*\n6\n7\n"),
        ("twitter", b"# time, object, size, next_access_vtime\n0, 5, 7, 3\n"),
    ];
    for (i, (format, data)) in cases.into_iter().enumerate() {
        // Names that say nothing: the content decides.
        let p = dir.file(&format!("unnamed-{i}.dat"), data);
        assert_eq!(detect(&p).unwrap_or_else(|e| panic!("{format}: {e}")), format);
        // Compressed, the content is the same.
        let gz = dir.file(&format!("unnamed-{i}.dat.gz"), &gzip(data));
        assert_eq!(detect(&gz).unwrap(), format);
    }
}

#[test]
fn unnamed_binary_traces_are_detected_by_record_structure() {
    let dir = Scratch::new("detect-binary");
    let p = dir.file("unnamed-v1", &[vscsi_v1(1, 0x28, 100, 7), vscsi_v1(2, 0x2a, 108, 9)].concat());
    assert_eq!(detect(&p).unwrap(), "vscsi");
    let p = dir.file("unnamed-v2", &[vscsi_v2(0x28, 100, 7, 5), vscsi_v2(0x2a, 108, 9, 5)].concat());
    assert_eq!(detect(&p).unwrap(), "vscsi");
    let p = dir.file("unnamed-og", &[oracle(1, 10, 512, 2), oracle(1, 11, 512, -1), oracle(2, 10, 512, -1)].concat());
    assert_eq!(detect(&p).unwrap(), "oracle_general");
    // A bare u32 array has no structure to recognise.
    let p = dir.file("unnamed-u32", &[0x00u8, 0x01, 0xff, 0x02, 0x00, 0x00, 0x12, 0x34].repeat(4));
    let e = detect(&p).unwrap_err();
    assert!(
        matches!(&e, TraceError::Undetected { file, choices, .. } if *file == p && choices.contains("u32be")),
        "{e}"
    );
}

#[test]
fn detection_says_why_when_unsure() {
    let dir = Scratch::new("detect-unsure");
    let p = dir.file("notes.txt", b"hello world, this is not a trace\n");
    let e = detect(&p).unwrap_err();
    assert!(matches!(&e, TraceError::Undetected { why, .. } if why.contains("matches no format")), "{e}");
    let p = dir.file("empty.dat", b"");
    assert!(matches!(detect(&p), Err(TraceError::Undetected { .. })));
    // A name that promises a format the content does not hold.
    let p = dir.file("x.vscsi", b"1,2,3\n");
    let e = detect(&p).unwrap_err();
    assert!(matches!(&e, TraceError::Undetected { why, .. } if why.contains("name suggests vscsi")), "{e}");
    // An empty file with a telling name is that format (and has no records).
    let p = dir.file("empty.lis", b"");
    assert_eq!(detect(&p).unwrap(), "arc");
    assert!(TraceSpec::new(&p).open_file().unwrap().next().is_none());
    let e = detect(&dir.0.join("absent.lis").to_string_lossy()).unwrap_err();
    assert!(matches!(e, TraceError::Io { .. }), "{e}");
}

// ---------------------------------------------------------------------------------------------------------
// Malformed text records

#[test]
fn spc_errors_name_line_and_field() {
    let dir = Scratch::new("spc");
    let p = dir.file("a.spc", b"0,1,512,r,0.5\n0,2,512\n");
    assert_malformed(&p, "spc", line(2), "Opcode", "missing");
    let p = dir.file("b.spc", b"0,x1,512,r,0\n");
    assert_malformed(&p, "spc", line(1), "LBA", "'x1' is not an unsigned integer");
    let p = dir.file("c.spc", b"0,1,512,r,0\n0,1,-512,r,0\n");
    assert_malformed(&p, "spc", line(2), "Size", "negative value '-512'");
    let p = dir.file("d.spc", b"0,1,512,q,0\n");
    assert_malformed(&p, "spc", line(1), "Opcode", "unknown op 'q'");
    let p = dir.file("e.spc", b"0,1,512,r,-1.5\n");
    assert_malformed(&p, "spc", line(1), "Timestamp", "negative");
    // Optional SPC fields after the fifth are allowed.
    let p = dir.file("ok.spc", b"3,16,4096,W,1.25,extra\n");
    assert_eq!(read_all(&p, "spc").unwrap(), [rec(1_250_000_000, Op::Write, 16, 4096, 3, 0)]);
}

#[test]
fn msr_errors_name_line_and_field() {
    let dir = Scratch::new("msr");
    let good = "128166372003061629,wdev,2,Read,3154059264,4096,1240\n";
    let p = dir.file("a.csv", format!("{good}128166372003061629,wdev,2,Read,3154059264,4096\n").as_bytes());
    assert_malformed(&p, "msr", line(2), "ResponseTime", "missing");
    let p = dir.file("b.csv", b"128166372003061629,wdev,2,Erase,3154059264,4096,1\n");
    assert_malformed(&p, "msr", line(1), "Type", "unknown op 'Erase'");
    let p = dir.file("c.csv", b"128166372003061629,wdev,2,Write,3154059264,-4096,1\n");
    assert_malformed(&p, "msr", line(1), "Size", "negative");
    let p = dir.file("d.csv", b"128166372003061629,wdev,two,Write,0,4096,1\n");
    assert_malformed(&p, "msr", line(1), "DiskNumber", "'two'");
    let p = dir.file("e.csv", b"999999999999999999,wdev,2,Write,0,4096,1\n");
    assert_malformed(&p, "msr", line(1), "Timestamp", "overflows");
    let p = dir.file("ok.csv", format!("{good}5,prxy,0,write,0,512,1\n").as_bytes());
    let recs = read_all(&p, "msr").unwrap();
    assert_eq!(recs[1], rec(500, Op::Write, 0, 512, 0, 1), "second host name is client 1");
}

#[test]
fn disksim_flags_bit_zero_means_read_and_errors_name_the_field() {
    let dir = Scratch::new("disksim");
    let p = dir.file("ok.disksim", b"0.5 3 100 8 1\n1 3 100 8 0\n2.25 3 100 8 3\n");
    let recs = read_all(&p, "disksim").unwrap();
    assert_eq!(recs[0], rec(500_000, Op::Read, 100, 4096, 3, 0));
    assert_eq!((recs[1].op, recs[2].op, recs[2].time_ns), (Op::Write, Op::Read, 2_250_000));
    let p = dir.file("a.disksim", b"0.5 3 100 8\n");
    assert_malformed(&p, "disksim", line(1), "flags", "missing");
    let p = dir.file("b.disksim", b"0.5 3 100 -8 1\n");
    assert_malformed(&p, "disksim", line(1), "sectors", "negative");
    let p = dir.file("c.disksim", b"soon 3 100 8 1\n");
    assert_malformed(&p, "disksim", line(1), "time", "'soon' is not a non-negative number");
}

#[test]
fn mqsim_type_one_is_read_and_other_types_are_errors() {
    let dir = Scratch::new("mqsim");
    let p = dir.file("a.trace", b"10 0 5 16 1\n20 0 5 16 2\n");
    assert_malformed(&p, "mqsim", line(2), "type", "unknown op '2'");
    let p = dir.file("b.trace", b"10 0 5 16 1 9\n");
    assert_malformed(&p, "mqsim", line(1), "line", "6 fields, expected 5");
    let p = dir.file("c.trace", b"10 0 5 -16 1\n");
    assert_malformed(&p, "mqsim", line(1), "sectors", "negative");
    let p = dir.file("d.trace", b"1.5 0 5 16 1\n");
    assert_malformed(&p, "mqsim", line(1), "time", "'1.5' is not an unsigned integer");
}

#[test]
fn arc_errors_name_line_and_field() {
    let dir = Scratch::new("arc");
    let p = dir.file("a.lis", b"1 1 0 0\n2 1 0\n");
    assert_malformed(&p, "arc", line(2), "req_no", "missing");
    let p = dir.file("b.lis", b"1 1 0 0\n2 x 0 1\n");
    assert_malformed(&p, "arc", line(2), "n_blocks", "'x'");
    let p = dir.file("c.lis", b"-2 1 0 1\n");
    assert_malformed(&p, "arc", line(1), "start_block", "negative");
    let p = dir.file("ok.lis", b"7 2 0 0\n");
    let mut spec = TraceSpec::with_format(&p, "arc");
    spec.sector_size = 4096;
    assert_eq!(read_all_spec(&p, &spec).unwrap(), [rec(0, Op::Read, 7, 8192, 0, 0)], "size uses the sector size");
}

#[test]
fn lirs_markers_are_skipped_and_bad_ids_are_errors() {
    let dir = Scratch::new("lirs");
    let p = dir.file("ok.trace", b"1\n*\n 2 \n*\n3\n\n\n");
    let ids: Vec<u64> = read_all(&p, "lirs").unwrap().iter().map(|r| r.addr).collect();
    assert_eq!(ids, [1, 2, 3], "markers and trailing blank lines carry no request");
    let p = dir.file("a.trace", b"1\n*\n2\nabc\n");
    assert_malformed(&p, "lirs", line(4), "block", "'abc'");
    let p = dir.file("b.trace", b"1 2\n");
    assert_malformed(&p, "lirs", line(1), "line", "2 fields, expected 1");
    let p = dir.file("c.trace", b"1\n\n2\n");
    assert_malformed(&p, "lirs", line(2), "line", "blank line inside the trace");
    let p = dir.file("d.trace", b"18446744073709551616\n");
    assert_malformed(&p, "lirs", line(1), "block", "too large");
    assert_eq!(open(&p, "lirs").addr_unit(), AddrUnit::Ids);
}

#[test]
fn tencent_errors_name_line_and_field_and_huge_volume_ids_are_renumbered() {
    let dir = Scratch::new("tencent");
    let p = dir.file("a", b"1538323200,4247200,128,1,1058\n1538323200,4247200,128,2,1058\n");
    assert_malformed(&p, "tencent", line(2), "IOType", "unknown op '2'");
    let p = dir.file("b", b"1538323200,4247200,-128,1,1058\n");
    assert_malformed(&p, "tencent", line(1), "Size", "negative");
    let p = dir.file("c", b"1538323200,4247200,128,1\n");
    assert_malformed(&p, "tencent", line(1), "VolumeID", "missing");
    let p = dir.file("ok", b"1,0,1,0,7\n2,0,1,0,1099511627776\n3,0,1,0,18446744073709551615\n4,0,1,0,1099511627776\n");
    let streams: Vec<u32> = read_all(&p, "tencent").unwrap().iter().map(|r| r.stream).collect();
    assert_eq!(streams, [7, 1 << 31, (1 << 31) + 1, 1 << 31]);
}

#[test]
fn systor17_errors_name_line_and_field() {
    let dir = Scratch::new("systor17");
    let header = "Timestamp,Response,IOType,LUN,Offset,Size\n";
    let p = dir.file("a.csv", format!("{header}1.5,0.1,X,0,4096,512\n").as_bytes());
    assert_malformed(&p, "systor17", line(2), "IOType", "unknown op 'X'");
    let p = dir.file("b.csv", format!("{header}1.5,0.1,W,0,4096,-512\n").as_bytes());
    assert_malformed(&p, "systor17", line(2), "Size", "negative");
    let p = dir.file("c.csv", format!("{header}1.5,0.1,W,0,4096\n").as_bytes());
    assert_malformed(&p, "systor17", line(2), "Size", "missing");
    // The header is only a header on line 1.
    let p = dir.file("d.csv", format!("{header}{header}").as_bytes());
    assert_malformed(&p, "systor17", line(2), "Timestamp", "'Timestamp'");
    let p = dir.file("ok.csv", b"1.5,,w,3,4096,512\n");
    assert_eq!(read_all(&p, "systor17").unwrap(), [rec(1_500_000_000, Op::Write, 4096, 512, 3, 0)]);
}

#[test]
fn multi_real_errors_name_line_and_field_and_check_the_layout() {
    let dir = Scratch::new("multi-real");
    let header = "time_s,process,file_id,offset,size,op\r\n";
    dir.file("t.files.csv", b"file_id,size_bytes_seen\n0,100\n1,5000\n");
    let p = dir.file("t.csv", format!("{header}0.5,2,1,4096,904,R\r\n1.0,3,0,0,100,R\r\n").as_bytes());
    assert_eq!(
        read_all(&p, "multi_real").unwrap(),
        [rec(500_000_000, Op::Read, 4096 + 4096, 904, 1, 2), rec(1_000_000_000, Op::Read, 0, 100, 0, 3)]
    );
    let p = dir.file("t.csv", format!("{header}0.5,2,1,4096,905,R\n").as_bytes());
    assert_malformed(&p, "multi_real", line(2), "offset", "passes the end of file 1");
    let p = dir.file("t.csv", format!("{header}0.5,2,9,0,1,R\n").as_bytes());
    assert_malformed(&p, "multi_real", line(2), "file_id", "file 9 is not in the file list");
    let p = dir.file("t.csv", format!("{header}0.5,2,1,0,1,X\n").as_bytes());
    assert_malformed(&p, "multi_real", line(2), "op", "unknown op 'X'");
    let p = dir.file("t.csv", format!("{header}0.5,2,1,0,-1,R\n").as_bytes());
    assert_malformed(&p, "multi_real", line(2), "size", "negative");
    let p = dir.file("t.csv", format!("{header}0.5,2,1,0,1\n").as_bytes());
    assert_malformed(&p, "multi_real", line(2), "op", "missing");
    // A bad companion list is reported against the list.
    let list = dir.file("t.files.csv", b"file_id,size_bytes_seen\n0,100\n0,7\n");
    let p = dir.file("t.csv", format!("{header}0.5,2,0,0,1,R\n").as_bytes());
    assert_malformed_err(read_all(&p, "multi_real"), &list, line(3), "file_id", "listed twice");
}

#[test]
fn multi_real_options_are_validated() {
    let dir = Scratch::new("multi-real-options");
    let p = dir.file("x.csv", b"time_s,process,file_id,offset,size,op\n0,0,0,0,1,R\n");
    let mut spec = TraceSpec::with_format(&p, "multi_real");
    spec.params.insert("layout".into(), "striped".into());
    let e = read_all_spec(&p, &spec).unwrap_err();
    assert!(matches!(&e, TraceError::Option { key, .. } if key == "trace.params.layout"), "{e}");
    spec.params.insert("layout".into(), "butt-hash".into());
    spec.block_size = 1000;
    let e = read_all_spec(&p, &spec).unwrap_err();
    assert!(matches!(&e, TraceError::Option { key, .. } if key == "trace.block_size"), "{e}");
    let mut spec = TraceSpec::with_format(&p, "multi_real");
    spec.params.insert("layuot".into(), "butt_hash".into());
    let e = read_all_spec(&p, &spec).unwrap_err();
    assert!(
        matches!(&e, TraceError::Option { key, message } if key == "trace.params.layuot" && message.contains("layout")),
        "{e}"
    );
}

#[test]
fn csv_columns_follow_the_libcachesim_spec() {
    let dir = Scratch::new("csv");
    let p = dir.file("a.csv", b"id,ts,sz,kind\nabc, 1500, 10, GET\nxyz,2000,20,set\nabc,2500,10,get\n");
    let mut spec = TraceSpec::with_format(&p, "csv");
    spec.params
        .insert("spec".into(), "obj-id-col=1,time-col=2,obj-size-col=3,op-col=4,delimiter=,,has-header=true".into());
    spec.params.insert("obj_id_is_num".into(), false.into());
    spec.params.insert("time-unit".into(), "ms".into());
    let recs = read_all_spec(&p, &spec).unwrap();
    assert_eq!(recs.len(), 3);
    assert_eq!((recs[0].time_ns, recs[0].size, recs[0].op), (1_500_000_000, 10, Op::Read));
    assert_eq!(recs[1].op, Op::Write);
    assert_eq!(recs[0].addr, recs[2].addr, "the same id string hashes to the same id");
    assert_ne!(recs[0].addr, recs[1].addr);

    let p = dir.file("t.tsv", b"7\t1\n8\t-3\n");
    let mut spec = TraceSpec::with_format(&p, "csv");
    spec.params.insert("spec".into(), "obj-id-col=1,obj-size-col=2,delimiter=\\t".into());
    assert_malformed_err(read_all_spec(&p, &spec), &p, line(2), "obj_size (column 2)", "negative");

    let p = dir.file("b.csv", b"1,2\nx,2\n");
    let mut spec = TraceSpec::with_format(&p, "csv");
    spec.params.insert("obj-id-col".into(), 1.into());
    spec.params.insert("op-col".into(), 2.into());
    assert_malformed_err(read_all_spec(&p, &spec), &p, line(1), "op (column 2)", "unknown op '2'");
    spec.params.remove("op-col");
    spec.params.insert("obj-size-col".into(), 3.into());
    assert_malformed_err(read_all_spec(&p, &spec), &p, line(1), "obj_size (column 3)", "missing");
    spec.params.remove("obj-size-col");
    assert_malformed_err(read_all_spec(&p, &spec), &p, line(2), "obj_id (column 1)", "'x'");

    let spec = TraceSpec::with_format(&p, "csv");
    let e = read_all_spec(&p, &spec).unwrap_err();
    assert!(matches!(&e, TraceError::Option { key, .. } if key == "trace.params.obj-id-col"), "{e}");
}

#[test]
fn twitter_preset_skips_the_hash_header_and_trims_fields() {
    let dir = Scratch::new("twitter");
    let p =
        dir.file("tw.csv", b"# time, object, size, next_access_vtime\n0, 18446744073709551615, 737, 13\n5, 2, x, 4\n");
    let e = read_all(&p, "twitter");
    assert_malformed_err(e, &p, line(3), "obj_size (column 3)", "'x'");
    let p = dir.file("tw2.csv", b"# time, object, size, next_access_vtime\n3, 18446744073709551615, 737, 13\n");
    assert_eq!(read_all(&p, "twitter").unwrap(), [rec(3_000_000_000, Op::Read, u64::MAX, 737, 0, 0)]);
}

#[test]
fn crlf_endings_and_a_missing_final_newline_are_accepted() {
    let dir = Scratch::new("crlf");
    let p = dir.file("a.lis", b"1 1 0 0\r\n2 1 0 1\r\n3 1 0 2");
    assert_eq!(read_all(&p, "arc").unwrap().len(), 3);
}

// ---------------------------------------------------------------------------------------------------------
// Malformed binary records

fn vscsi_v1(sn: u32, cmd: u16, lbn: u64, ts_us: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(32);
    r.extend_from_slice(&sn.to_le_bytes());
    r.extend_from_slice(&4096u32.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0100u16.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    r
}

fn vscsi_v2(cmd: u16, lbn: u64, ts_us: u64, rt: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(40);
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0200u16.to_le_bytes());
    r.extend_from_slice(&9u32.to_le_bytes());
    r.extend_from_slice(&8192u32.to_le_bytes());
    r.extend_from_slice(&2u32.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts_us.to_le_bytes());
    r.extend_from_slice(&rt.to_le_bytes());
    r
}

fn oracle(t: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
    [&t.to_le_bytes()[..], &id.to_le_bytes(), &size.to_le_bytes(), &next.to_le_bytes()].concat()
}

#[test]
fn vscsi_reads_both_versions() {
    let dir = Scratch::new("vscsi-versions");
    let p = dir.file("v1.vscsi", &[vscsi_v1(1, 0x28, 100, 7), vscsi_v1(2, 0x8a, 108, 9)].concat());
    assert_eq!(
        read_all(&p, "vscsi").unwrap(),
        [rec(7000, Op::Read, 100, 4096, 0, 0), rec(9000, Op::Write, 108, 4096, 0, 0)]
    );
    let p = dir.file("v2.vscsi", &[vscsi_v2(0xa8, 100, 7, 3), vscsi_v2(0x2a, 116, 9, 3)].concat());
    assert_eq!(
        read_all(&p, "vscsi").unwrap(),
        [rec(7000, Op::Read, 100, 8192, 0, 0), rec(9000, Op::Write, 116, 8192, 0, 0)]
    );
}

#[test]
fn vscsi_errors_name_record_offset_and_field() {
    let dir = Scratch::new("vscsi-errors");
    let mut data = [vscsi_v1(1, 0x28, 100, 7), vscsi_v1(2, 0x28, 101, 8)].concat();
    data.extend_from_slice(&[0u8; 10]);
    let p = dir.file("trunc.vscsi", &data);
    match read_all(&p, "vscsi") {
        Err(TraceError::Truncated { file, location, got, want }) => {
            assert_eq!((file, location, got, want), (p.clone(), Location::Record { index: 2, offset: 64 }, 10, 32));
        }
        other => panic!("{other:?}"),
    }
    let p =
        dir.file("cmd.vscsi", &[vscsi_v1(1, 0x28, 100, 7), vscsi_v1(2, 0x28, 1, 1), vscsi_v1(3, 0x12, 1, 1)].concat());
    assert_malformed(&p, "vscsi", Location::Record { index: 2, offset: 64 }, "cmd", "SCSI command 0x12");
    let mut spec = TraceSpec::with_format(&p, "vscsi");
    spec.params.insert("other-cmds".into(), "skip".into());
    assert_eq!(read_all_spec(&p, &spec).unwrap().len(), 2, "option other-cmds = skip drops the INQUIRY");
    let mut bad = vscsi_v1(3, 0x28, 1, 1);
    bad[15] = 2;
    let p = dir.file("ver.vscsi", &[vscsi_v1(1, 0x28, 100, 7), vscsi_v1(2, 0x28, 1, 1), bad].concat());
    assert_malformed(&p, "vscsi", Location::Record { index: 2, offset: 64 }, "ver", "version 2 in a v1 trace");
    let p = dir.file("junk.vscsi", &[7u8; 100]);
    assert_malformed(&p, "vscsi", Location::Record { index: 0, offset: 0 }, "ver", "not a vscsi trace");
    let p = dir.file("time.vscsi", &vscsi_v1(1, 0x28, 100, u64::MAX));
    assert_malformed(&p, "vscsi", Location::Record { index: 0, offset: 0 }, "ts", "overflows");
}

#[test]
fn fixed_size_binary_formats_reject_a_truncated_last_record() {
    let dir = Scratch::new("binary-trunc");
    let p = dir.file("w.trace", &[0, 0, 0, 1, 0, 0, 1, 0, 9, 9, 9]);
    let ids: Vec<u64> = match read_all(&p, "u32be") {
        Err(TraceError::Truncated { file, location, got, want }) => {
            assert_eq!((file, location, got, want), (p.clone(), Location::Record { index: 2, offset: 8 }, 3, 4));
            Vec::new()
        }
        other => panic!("{other:?}"),
    };
    assert!(ids.is_empty());
    let p = dir.file("w2.trace", &[0, 0, 0, 1, 0, 0, 1, 0]);
    let be: Vec<u64> = read_all(&p, "u32be").unwrap().iter().map(|r| r.addr).collect();
    let le: Vec<u64> = read_all(&p, "u32le").unwrap().iter().map(|r| r.addr).collect();
    assert_eq!((be, le), (vec![1, 256], vec![1 << 24, 1 << 16]));
    let mut og = [oracle(1, 10, 512, -1), oracle(2, 11, 4096, -1)].concat();
    og.truncate(40);
    let p = dir.file("t.oracleGeneral.bin", &og);
    match read_all(&p, "oracle_general") {
        Err(TraceError::Truncated { location, got, want, .. }) => {
            assert_eq!((location, got, want), (Location::Record { index: 1, offset: 24 }, 16, 24));
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Compression, empty files, unknown formats

#[test]
fn every_compression_opens_by_magic_bytes_and_multi_member_gzip_reads_all_members() {
    let dir = Scratch::new("compress");
    let data = b"1 1 0 0\n2 1 0 1\n";
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(data).unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(data).unwrap();
    let cases = [
        ("gz", gzip(data)),
        ("zst", zstd::encode_all(&data[..], 1).unwrap()),
        ("xz", xz.finish().unwrap()),
        ("bz2", bz.finish().unwrap()),
        ("plain", data.to_vec()),
    ];
    for (kind, bytes) in cases {
        // The name says nothing about the compression: magic bytes decide.
        let p = dir.file(&format!("trace-{kind}.bin"), &bytes);
        assert_eq!(read_all(&p, "arc").unwrap().len(), 2, "{kind}");
    }
    let two = [gzip(b"1 1 0 0\n"), gzip(b"2 1 0 1\n")].concat();
    let p = dir.file("two-members.gz", &two);
    assert_eq!(read_all(&p, "arc").unwrap().len(), 2);
}

#[test]
fn corrupt_compressed_streams_are_io_errors_naming_the_file() {
    let dir = Scratch::new("corrupt");
    let body: Vec<u8> = (0..20_000u32).flat_map(|i| format!("{i} 1 0 {i}\n").into_bytes()).collect();
    let good_gz = gzip(&body);
    let mut cut_gz = good_gz.clone();
    cut_gz.truncate(good_gz.len() / 2);
    // A damaged checksum is only found at the end, after every record parsed.
    let mut bad_crc = good_gz.clone();
    let crc_at = bad_crc.len() - 8;
    bad_crc[crc_at] ^= 0xff;
    let mut bad_header = good_gz;
    bad_header[2] = 99; // compression method 99 does not exist
    let mut cut_zst = zstd::encode_all(&body[..], 3).unwrap();
    cut_zst.truncate(cut_zst.len() / 2);
    let mut bad_xz = b"\xfd7zXZ\0".to_vec();
    bad_xz.extend_from_slice(&[0x55; 200]);
    let mut bad_bz = b"BZh9".to_vec();
    bad_bz.extend_from_slice(&[0x55; 200]);
    let cases = [
        ("cut.lis.gz", cut_gz),
        ("crc.lis.gz", bad_crc),
        ("header.lis.gz", bad_header),
        ("cut.lis.zst", cut_zst),
        ("bad.lis.xz", bad_xz),
        ("bad.lis.bz2", bad_bz),
    ];
    for (name, bytes) in cases {
        let p = dir.file(name, &bytes);
        match read_all(&p, "arc") {
            Err(TraceError::Io { file, source }) => {
                assert_eq!(file, p);
                assert!(source.to_string().contains("corrupt or truncated"), "{name}: {source}");
            }
            other => panic!("{name}: expected an I/O error, got {:?}", other.map(|r| r.len())),
        }
        // Detection reads only the head, but a head that does not decompress is the same error.
        if name.starts_with("bad") || name.starts_with("header") {
            assert!(matches!(detect(&p), Err(TraceError::Io { .. })), "{name}");
        }
    }
}

#[test]
fn empty_files_hold_zero_records_in_every_format() {
    let dir = Scratch::new("empty");
    let plain = dir.file("empty", b"");
    let gz = dir.file("empty.gz", &gzip(b""));
    for (format, _) in formats::FORMATS {
        for p in [&plain, &gz] {
            let mut spec = TraceSpec::with_format(p.as_str(), format);
            match *format {
                "csv" => {
                    spec.params.insert("obj-id-col".into(), 1.into());
                }
                "multi_real" => {
                    spec.params.insert("layout".into(), "butt_hash".into());
                }
                _ => {}
            }
            assert_eq!(read_all_spec(p, &spec).unwrap_or_else(|e| panic!("{format}: {e}")), [], "{format}");
        }
    }
}

#[test]
fn unknown_format_names_are_errors_listing_the_choices() {
    let dir = Scratch::new("unknown");
    let p = dir.file("a.lis", b"1 1 0 0\n");
    let e = read_all(&p, "lru").unwrap_err();
    match &e {
        TraceError::UnknownFormat { file, name, choices } => {
            assert_eq!((file.as_str(), name.as_str()), (p.as_str(), "lru"));
            assert!(choices.contains("oracle_general") && choices.contains("multi_real"), "{choices}");
        }
        other => panic!("{other:?}"),
    }
    let e = formats::open("nope", &p, compress::open(&p).unwrap(), &TraceSpec::new(&p)).err().unwrap();
    assert!(matches!(e, TraceError::UnknownFormat { .. }), "{e}");
    // Aliases are accepted.
    assert_eq!(read_all(&p, "ARC-lis").unwrap().len(), 1);
    // Options a format does not know are errors, not silently ignored.
    let mut spec = TraceSpec::with_format(&p, "arc");
    spec.params.insert("block-size".into(), 8.into());
    let e = read_all_spec(&p, &spec).unwrap_err();
    assert!(matches!(&e, TraceError::Option { key, .. } if key == "trace.params.block-size"), "{e}");
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = Scratch::new("missing");
    let p = dir.0.join("nope.lis").to_string_lossy().into_owned();
    let e = read_all(&p, "arc").unwrap_err();
    assert!(matches!(&e, TraceError::Io { file, .. } if *file == p), "{e}");
}

// ---------------------------------------------------------------------------------------------------------
// No input makes a reader or the detector panic

/// Every format with the options it needs to open.
fn every_format_spec(path: &str) -> Vec<TraceSpec> {
    formats::FORMATS
        .iter()
        .map(|(format, _)| {
            let mut spec = TraceSpec::with_format(path, format);
            match *format {
                "csv" => {
                    spec.params
                        .insert("spec".into(), "obj-id-col=2,time-col=1,obj-size-col=3,op-col=4,stream-col=5".into());
                }
                "multi_real" => {
                    spec.params.insert("layout".into(), "butt_hash".into());
                }
                _ => {}
            }
            spec
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_a_reader_or_the_detector(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        texty in proptest::collection::vec(proptest::sample::select(b"0123456789,. \t\n-rwRW*#e".to_vec()), 0..400),
    ) {
        static CASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = Scratch::new(&format!("fuzz-{case}"));
        for (i, data) in [bytes, texty].iter().enumerate() {
            let p = dir.file(&format!("in{i}"), data);
            for spec in every_format_spec(&p) {
                let _ = read_all_spec(&p, &spec);
            }
            let _ = detect(&p);
        }
    }
}
