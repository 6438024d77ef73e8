//! Malformed input: the broken-file corpus (made here, never copied from real traces) with the exact
//! message of each case, strict reading versus `skip_bad`, and the fuzz seeds and regressions replayed
//! through the fuzz entry points with random bytes besides.

use std::io::Write;
use std::path::{Path, PathBuf};

use prefetchsim_core::engine::RequestSource;
use prefetchsim_trace::{harness, Location, TraceError, TraceSpec};

use crate::common::Scratch;

fn oracle(t: u32, id: u64, size: u32) -> Vec<u8> {
    [&t.to_le_bytes()[..], &id.to_le_bytes(), &size.to_le_bytes(), &(-1i64).to_le_bytes()].concat()
}

fn vscsi_v1(cmd: u16, lbn: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(32);
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&4096u32.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0100u16.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&7u64.to_le_bytes());
    r
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Every request of `path` read through the whole pipeline (decompression, reader, conversion, skipping)
/// with `skip_bad`: the request count and the report, or the error.
fn read(path: &str, format: &str, skip_bad: u64) -> Result<(u64, prefetchsim_core::engine::SourceReport), TraceError> {
    let mut spec = TraceSpec::with_format(path, format);
    spec.skip_bad = skip_bad;
    let mut src = spec.open_file()?;
    let mut n = 0;
    for r in src.by_ref() {
        r?;
        n += 1;
    }
    Ok((n, src.report()))
}

/// One broken file: how it is made, and what strict reading says.
struct Case {
    name: &'static str,
    format: &'static str,
    bytes: Vec<u8>,
    /// The whole message of the strict error, with `{}` for the file path; `None` when it reads cleanly.
    message: Option<&'static str>,
    /// Good requests around the bad record(s), and bad records, for the skip test.
    good: u64,
    bad: u64,
    /// Whether the damage can be skipped at all.
    skippable: bool,
}

fn corpus() -> Vec<Case> {
    let mut cut_og = [oracle(1, 10, 512), oracle(2, 11, 512), oracle(3, 12, 512), oracle(4, 13, 512)].concat();
    cut_og.truncate(3 * 24 + 10);
    let body: Vec<u8> = (0..5000u32).flat_map(|i| format!("{i} 1 0 {i}\n").into_bytes()).collect();
    let mut cut_zst = zstd::encode_all(&body[..], 3).unwrap();
    cut_zst.truncate(cut_zst.len() / 2);
    let mut bad_gz_header = gzip(b"1 1 0 0\n");
    bad_gz_header[2] = 99; // compression method 99 does not exist
    vec![
        Case {
            name: "truncated.oracleGeneral.bin",
            format: "oracle_general",
            bytes: cut_og,
            message: Some("{}: record 3 (byte 72): truncated record: 10 of 24 bytes"),
            good: 3,
            bad: 1,
            skippable: false,
        },
        Case {
            name: "field-count.spc",
            format: "spc",
            bytes: b"0,1,512,r,0.5\n0,2,512\n0,3,512,w,0.7\n".to_vec(),
            message: Some("{}: line 2 (byte 14): field 'Opcode': missing: the line has 3 of the 5 fields ASU,LBA,Size,Opcode,Timestamp"),
            good: 2,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "not-a-number.lis",
            format: "arc",
            bytes: b"1 1 0 0\n2 x 0 1\n3 1 0 2\n4 1 y1 3\n5 ab 0 4\n".to_vec(),
            message: Some("{}: line 2 (byte 8): field 'n_blocks': 'x' is not an unsigned integer"),
            good: 3,
            bad: 2,
            skippable: true,
        },
        Case {
            name: "negative-size.csv",
            format: "msr",
            bytes: b"128166372003061629,wdev,2,Read,0,4096,1\n128166372003061630,wdev,2,Write,8192,-4096,1\n".to_vec(),
            message: Some("{}: line 2 (byte 40): field 'Size': negative value '-4096', expected an unsigned integer"),
            good: 1,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "backwards.csv",
            format: "systor17",
            bytes: b"Timestamp,Response,IOType,LUN,Offset,Size\n2.5,0.1,R,0,4096,512\n1.5,0.1,R,0,8192,512\n3,0.1,W,0,0,512\n2,,R,1,0,512\n".to_vec(),
            message: None,
            good: 4,
            bad: 0,
            skippable: true,
        },
        Case {
            name: "cut-frame.lis.zst",
            format: "arc",
            bytes: cut_zst,
            message: Some("{}: corrupt or truncated zstd stream: "),
            good: 0,
            bad: 1,
            skippable: false,
        },
        Case {
            name: "bad-header.lis.gz",
            format: "arc",
            bytes: bad_gz_header,
            message: Some("{}: corrupt or truncated gzip stream: "),
            good: 0,
            bad: 1,
            skippable: false,
        },
        Case { name: "empty.lis", format: "arc", bytes: Vec::new(), message: None, good: 0, bad: 0, skippable: true },
        Case {
            name: "bad-command.vscsi",
            format: "vscsi",
            bytes: [vscsi_v1(0x28, 1), vscsi_v1(0x28, 9), vscsi_v1(0x12, 5), vscsi_v1(0x2a, 3)].concat(),
            message: Some("{}: record 2 (byte 64): field 'cmd': SCSI command 0x12 is neither a read nor a write (option other-cmds = \"skip\" drops such records)"),
            good: 3,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "blank-inside.trace",
            format: "lirs",
            bytes: b"1\n2\n\n \n3\n".to_vec(),
            message: Some("{}: line 3 (byte 4): field 'line': blank line inside the trace (only trailing blank lines are skipped)"),
            good: 3,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "huge-request.csv",
            format: "msr",
            bytes: b"1,h,0,Read,0,4096,1\n2,h,0,Read,0,18446744073709551615,1\n3,h,0,Read,4096,4096,1\n".to_vec(),
            message: Some("{}: line 2 (byte 20): field 'Size': size of 4503599627370496 blocks is more than one request may span (16777216 blocks: a corrupt size?)"),
            good: 2,
            bad: 1,
            skippable: true,
        },
        // Conversion errors name the address field: they all said 'size'.
        Case {
            name: "lba-overflow.spc",
            format: "spc",
            bytes: b"0,1000,4096,r,0.0\n0,18446744073709551615,4096,r,0.0\n0,2,512,r,0.1\n".to_vec(),
            message: Some("{}: line 2 (byte 18): field 'LBA': address 18446744073709551615 × 512 bytes overflows 64 bits"),
            good: 2,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "id-at-end.oracleGeneral.bin",
            format: "oracle_general",
            bytes: [oracle(1, 10, 512), oracle(2, u64::MAX, 512), oracle(3, 11, 512)].concat(),
            message: Some("{}: record 1 (byte 24): field 'obj_id': block 18446744073709551615 is at the end of the 64-bit address space"),
            good: 2,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "lbn-overflow.vscsi",
            format: "vscsi",
            bytes: [vscsi_v1(0x28, 1), vscsi_v1(0x28, u64::MAX), vscsi_v1(0x28, 2)].concat(),
            message: Some("{}: record 1 (byte 32): field 'lbn': address 18446744073709551615 × 512 bytes overflows 64 bits"),
            good: 2,
            bad: 1,
            skippable: true,
        },
        Case {
            name: "ns-overflow.spc",
            format: "spc",
            bytes: b"0,1000,4096,r,0.0\n0,1000,4096,r,100000000000\n0,2,512,r,0.1\n".to_vec(),
            message: Some("{}: line 2 (byte 18): field 'Timestamp': '100000000000' overflows 64 bits when converted to nanoseconds (× 10^9)"),
            good: 2,
            bad: 1,
            skippable: true,
        },
    ]
}

#[test]
fn broken_files_fail_strictly_with_the_exact_message() {
    let dir = Scratch::new("strict");
    for case in corpus() {
        let p = dir.file(case.name, &case.bytes);
        match (read(&p, case.format, 0), case.message) {
            (Ok((n, rep)), None) => {
                assert_eq!((n, rep.skipped), (case.good, 0), "{}", case.name);
            }
            (Err(e), Some(want)) => {
                let want = want.replace("{}", &p);
                assert!(e.to_string().starts_with(&want), "{}:\n got  {e}\n want {want}", case.name);
            }
            (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
        }
    }
}

#[test]
fn skip_bad_skips_and_counts_at_most_n_bad_records_then_fails() {
    let dir = Scratch::new("skip");
    for case in corpus().into_iter().filter(|c| c.bad > 0) {
        let p = dir.file(case.name, &case.bytes);
        if !case.skippable {
            // An I/O error, a corrupt frame or a truncated tail ends the stream whatever the limit.
            let e = read(&p, case.format, 100).unwrap_err();
            assert!(!matches!(e, TraceError::SkipLimit { .. }), "{}: {e}", case.name);
            continue;
        }
        let (n, rep) = read(&p, case.format, case.bad).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!((n, rep.skipped), (case.good, case.bad), "{}", case.name);
        assert_eq!(rep.skipped_messages.len() as u64, case.bad, "{}", case.name);
        assert!(rep.skipped_messages[0].contains(&p), "{}: {:?}", case.name, rep.skipped_messages);
        // One fewer than the bad records: the last one is an error that names the limit.
        let e = read(&p, case.format, case.bad - 1).unwrap_err();
        if case.bad > 1 {
            assert!(matches!(&e, TraceError::SkipLimit { limit, .. } if *limit == case.bad - 1), "{}: {e}", case.name);
            assert!(e.to_string().contains(&format!("more than skip_bad = {} allows", case.bad - 1)), "{e}");
        } else {
            assert!(matches!(e, TraceError::Malformed { .. }), "{}: skip_bad = 0 is strict: {e}", case.name);
        }
    }
}

#[test]
fn skip_bad_applies_to_the_records_read_to_detect_the_format() {
    // A bad record among those read to tell the format from the content ended the read whatever
    // skip_bad allowed; with the format named (by --format or the file name) it was skipped.
    let dir = Scratch::new("detect-skip");
    for (name, text, format) in [
        ("arc_trace.txt", "16 8 0 0\n24 8 0 1\n32 x 0 2\n40 8 0 3\n48 8 0 4\n", "arc"),
        ("ids.trace", "0\n1\n2\nabc\n4\n", "lirs"),
    ] {
        let p = dir.file(name, text.as_bytes());
        let (n, rep) = read(&p, "auto", 3).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((n, rep.skipped), (4, 1), "{name}");
        assert_eq!(read(&p, format, 3).unwrap().0, n, "{name}: as with the format named");
        assert_eq!(prefetchsim_trace::detect::detect_skipping(&p, 1).unwrap(), format);
        // Strict reading still fails on the record, and names it.
        let e = read(&p, "auto", 0).unwrap_err().to_string();
        assert!(e.contains("is not an unsigned integer") && e.contains(&p), "{name}: {e}");
        // One bad record too many is the limit's error, not a failure to tell the format.
        let twice =
            dir.file(&format!("2{name}"), format!("{text}{}", &text[text.find('\n').unwrap() + 1..]).as_bytes());
        let e = read(&twice, "auto", 1).unwrap_err().to_string();
        assert!(e.contains("more than skip_bad = 1 allows"), "{name}: {e}");
    }
}

#[test]
fn time_going_backwards_is_counted_not_an_error() {
    // SYSTOR'17 samples are out of time order: records stay in file order and are counted.
    let dir = Scratch::new("backwards");
    let case = corpus().into_iter().find(|c| c.name == "backwards.csv").unwrap();
    let p = dir.file(case.name, &case.bytes);
    let (n, rep) = read(&p, case.format, 0).unwrap();
    assert_eq!((n, rep.time_backwards, rep.skipped), (4, 2, 0));
}

#[test]
fn text_errors_give_the_byte_offset_of_the_line_even_after_a_buffer_refill() {
    let dir = Scratch::new("offsets");
    // Long enough lines that the bad one lies beyond the reader's first 256 KiB window.
    let good = format!("{} 1 0 0\n", "1".repeat(15));
    let n = 300_000 / good.len();
    let mut data = good.repeat(n).into_bytes();
    let offset = data.len() as u64;
    data.extend_from_slice(b"7 -1 0 0\n");
    let p = dir.file("far.lis", &data);
    let e = read(&p, "arc", 0).unwrap_err();
    match e {
        TraceError::Malformed { location, field, .. } => {
            assert_eq!(location, Location::Line { line: n as u64 + 1, offset });
            assert_eq!(field, "n_blocks");
        }
        other => panic!("{other}"),
    }
    // Compressed, offsets are in the decompressed stream.
    let gz = dir.file("far.lis.gz", &gzip(&data));
    let e = read(&gz, "arc", 0).unwrap_err();
    assert!(e.to_string().contains(&format!("line {} (byte {offset})", n + 1)), "{e}");
}

#[test]
fn an_overlong_line_is_one_skippable_bad_record() {
    let dir = Scratch::new("overlong");
    let mut data = b"1\n".to_vec();
    data.extend(std::iter::repeat_n(b'9', (1 << 20) + 5));
    data.extend_from_slice(b"\n2\n3\n");
    let p = dir.file("long.trace", &data);
    let e = read(&p, "lirs", 0).unwrap_err();
    assert!(e.to_string().contains("line 2 (byte 2): field 'line': longer than"), "{e}");
    let (n, rep) = read(&p, "lirs", 1).unwrap();
    assert_eq!((n, rep.skipped), (3, 1));
}

#[test]
fn skip_bad_also_covers_the_first_pass_of_a_multi_real_layout() {
    let dir = Scratch::new("multi-real");
    let p = dir.file("x.csv", b"time_s,process,file_id,offset,size,op\n0,0,0,0,10,R\n0,0,zz,0,1,R\n1,0,1,0,5,R\n");
    let e = read(&p, "multi_real", 0).unwrap_err();
    assert!(e.to_string().contains("line 3 (byte 51): field 'file_id'"), "{e}");
    let (n, rep) = read(&p, "multi_real", 1).unwrap();
    assert_eq!((n, rep.skipped), (2, 1));
}

// ---------------------------------------------------------------------------------------------------------
// The fuzz corpus, replayed

/// Every file under `fuzz/{seeds,regressions}/TARGET`.
fn fuzz_inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for kind in ["seeds", "regressions"] {
        let Ok(dir) = std::fs::read_dir(root.join(kind).join(target)) else { continue };
        out.extend(dir.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
    }
    out.sort();
    out
}

/// A fuzz target: its name and its entry point.
type FuzzTarget = (&'static str, fn(&[u8]));

#[test]
fn fuzz_seeds_and_regressions_replay_without_panicking() {
    let targets: [FuzzTarget; 4] = [
        ("read_trace", harness::read_trace),
        ("detect", harness::detect),
        ("config", harness::config),
        ("trace_spec", harness::trace_spec),
    ];
    for (name, f) in targets {
        let inputs = fuzz_inputs(name);
        assert!(inputs.len() >= 5, "{name}: the seed corpus is missing ({} inputs)", inputs.len());
        for p in inputs {
            let data = std::fs::read(&p).unwrap();
            if let Err(e) = std::panic::catch_unwind(|| f(&data)) {
                panic!("{name}: {} panics: {e:?}", p.display());
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    #[test]
    fn random_bytes_never_panic_the_fuzz_entry_points(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        toml in proptest::collection::vec(
            proptest::sample::select(b"[]level=size\n'{}%x0123456789.policyprefetcher,lrusarcobl ".to_vec()), 0..200),
    ) {
        harness::read_trace(&bytes);
        harness::detect(&bytes);
        harness::config(&bytes);
        harness::trace_spec(&bytes);
        harness::config(&toml);
        harness::config(&[b"[[level]]\nsize = 16\n".as_slice(), &toml].concat());
    }
}

#[test]
fn id_bytes_where_it_would_do_nothing_is_an_error() {
    let dir = Scratch::new("id_bytes_no_ids");
    let lirs = dir.file("t.lirs", b"1\n2\n3\n");
    let msr = dir.file("t.csv", b"128166372003061629,hm,0,Read,4096,4096,100\n");
    let err = |v: serde_json::Value| match TraceSpec::from_json(v).unwrap().open() {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    };
    // Ids: accepted.
    assert_eq!(err(serde_json::json!({"path": lirs, "format": "lirs", "id_bytes": 4096})), "");
    // A byte-addressed format, a generator, objects mode: refused, naming the key.
    let e = err(serde_json::json!({"path": msr, "format": "msr", "id_bytes": 4096}));
    assert!(e.starts_with("trace.id_bytes") && e.contains("msr format addresses bytes"), "{e}");
    let e = err(serde_json::json!({"path": "zipf", "format": "synthetic", "id_bytes": 4096}));
    assert!(e.starts_with("trace.id_bytes") && e.contains("generator"), "{e}");
    let e = err(serde_json::json!({"path": lirs, "format": "lirs", "mode": "objects", "id_bytes": 4096}));
    assert!(e.starts_with("trace.id_bytes") && e.contains("objects mode"), "{e}");
    // On a merge it reaches the members with ids; a member without ids ignores it, but not its own.
    let lirs_member = serde_json::json!({"path": lirs, "format": "lirs"});
    let msr_member = serde_json::json!({"path": msr, "format": "msr"});
    assert_eq!(err(serde_json::json!({"merge": [lirs_member, msr_member], "id_bytes": 4096})), "");
    let own = serde_json::json!({"path": msr, "format": "msr", "id_bytes": 4096});
    let e = err(serde_json::json!({"merge": [lirs_member, own]}));
    assert!(e.starts_with("trace.merge[1].id_bytes"), "{e}");
}
