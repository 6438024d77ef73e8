//! Compression, empty files, unknown formats, missing files.

#[allow(unused_imports)]
use super::*;

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
