//! Malformed binary records: errors name the record, offset and field.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------------------------------------
// Malformed binary records

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

/// SCSI WRITE(6) (0x0A) is a write, as READ(6) (0x08) is a read: it was "neither a read nor a write".
/// Records that `other-cmds = "skip"` drops are counted and named in the report (they vanished without a
/// word), without using up `skip_bad`.
#[test]
fn vscsi_write6_is_a_write_and_skipped_commands_are_counted() {
    let dir = Scratch::new("vscsi-write6");
    let p = dir.file("six.vscsi", &[vscsi_v1(1, 0x08, 100, 7), vscsi_v1(2, 0x0a, 108, 9)].concat());
    let recs = read_all(&p, "vscsi").unwrap();
    assert_eq!(recs.iter().map(|r| r.op).collect::<Vec<_>>(), [Op::Read, Op::Write]);
    let cmds = [0x28, 0x12, 0x0a, 0x00, 0x00, 0x2a];
    let data: Vec<u8> = cmds.iter().enumerate().flat_map(|(i, &c)| vscsi_v1(i as u32, c, 100 + i as u64, 7)).collect();
    let p = dir.file("mixed.vscsi", &data);
    let mut spec = TraceSpec::with_format(&p, "vscsi");
    spec.params.insert("other-cmds".into(), "skip".into());
    let mut src = spec.open_file().unwrap();
    let reqs: Vec<_> = src.by_ref().map(Result::unwrap).collect();
    assert_eq!(reqs.len(), 3);
    let rep = src.source_report();
    assert_eq!(rep.skipped, 3, "{rep:?}");
    assert_eq!(rep.skipped_messages.len(), 3, "{rep:?}");
    assert!(
        rep.skipped_messages[0].contains("record 1 (byte 32)") && rep.skipped_messages[0].contains("0x12"),
        "{rep:?}"
    );
    assert!(rep.skipped_messages[2].contains("record 4 (byte 128)"), "{rep:?}");
}

#[test]
fn a_bad_vscsi_version_in_record_1_is_that_records_skippable_error() {
    // The version was decided from records 0 and 1 together: a bad record 1 rejected the whole file,
    // blamed record 0 ("byte 15 is 1 (1 in v1 records)", the valid value) and could not be skipped.
    let dir = Scratch::new("vscsi-ver1");
    let mut bad = vscsi_v1(2, 0x28, 1, 1);
    bad[15] = 7;
    let data = [vscsi_v1(1, 0x28, 0, 1), bad, vscsi_v1(3, 0x28, 2, 2), vscsi_v1(4, 0x28, 3, 3)].concat();
    let p = dir.file("b.vscsi", &data);
    assert_malformed(&p, "vscsi", Location::Record { index: 1, offset: 32 }, "ver", "version 7 in a v1 trace");
    for format in [Some("vscsi"), None] {
        let mut spec = TraceSpec::new(&p);
        spec.format = format.map(str::to_string);
        spec.skip_bad = 1;
        let n = spec.open_file().unwrap().map(Result::unwrap).count();
        assert_eq!(n, 3, "{format:?}: skip_bad = 1 skips record 1");
    }
    // Record 0 carrying neither version names both bytes, neither of them valid.
    let mut junk = vscsi_v1(1, 0x28, 0, 1);
    junk[15] = 7;
    let p = dir.file("junk0.vscsi", &[junk, vscsi_v1(2, 0x28, 1, 1)].concat());
    assert_malformed(&p, "vscsi", Location::Record { index: 0, offset: 0 }, "ver", "byte 15 of record 0 is 7");
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
