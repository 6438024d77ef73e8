//! The shared real traces: detected and named explicitly, record counts, read shares and spans from the traces README.

#[allow(unused_imports)]
use super::*;

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
fn mqsim_traces_are_not_detected_and_have_the_readme_counts_and_read_shares() {
    let cases = [
        ("mqsim-ascii/wsrch-small.trace.gz", 24_783, 24_779, 6, rec(11_413_000, Op::Read, 657_728, 16 * 512, 0, 0)),
        ("mqsim-ascii/tpcc-small.trace.gz", 6_999, 4_381, 16, rec(938_513_000, Op::Write, 264_719_034, 16 * 512, 4, 0)),
    ];
    for (rel, count, reads, devices, first) in cases {
        // Their names do not say MQSim, and DiskSim reads the same lines (times in ms): detection cannot
        // tell (it took integer times for MQSim, misreading DiskSim traces); the format must be named.
        let Some(path) = common::trace(rel) else { return };
        let e = detect(&path).unwrap_err().to_string();
        assert!(e.contains("cannot tell") && e.contains("disksim, mqsim"), "{e}");
        let s = summarize(open(&path, "mqsim"), &path);
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
