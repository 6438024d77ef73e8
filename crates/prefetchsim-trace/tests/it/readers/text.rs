//! Malformed text records: errors name the line and field.

#[allow(unused_imports)]
use super::*;

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
    // Without the header the first line is a record: it was dropped, unreported (a `has-header` preset).
    let p = dir.file("tw3.csv", b"1, 5, 100, 3\n2, 6, 200, -1\n3, 5, 100, -1\n");
    let got = read_all(&p, "twitter").unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], rec(1_000_000_000, Op::Read, 5, 100, 0, 0));
}

#[test]
fn crlf_endings_and_a_missing_final_newline_are_accepted() {
    let dir = Scratch::new("crlf");
    let p = dir.file("a.lis", b"1 1 0 0\r\n2 1 0 1\r\n3 1 0 2");
    assert_eq!(read_all(&p, "arc").unwrap().len(), 3);
}

#[test]
fn prefetchsim_csv_without_its_block_size_line_is_an_error() {
    // Read as blocks of the reading spec's size with no word: a file written with other blocks whose
    // comment line was lost was read at the wrong addresses.
    let dir = Scratch::new("pcsv-no-size");
    let p = dir.file("t.csv", b"time_ns,op,first,len,stream,client\n0,read,5,1,0,0\n");
    assert_malformed(&p, "prefetchsim_csv", line(2), "block_size", "no '# prefetchsim trace: block_size=N' line");
    let p = dir
        .file("ok.csv", b"# prefetchsim trace: block_size=512\ntime_ns,op,first,len,stream,client\n0,read,5,2,0,0\n");
    // `first` counts blocks of the comment's size (it was bytes, 2560: a block number with a volume in its
    // high bits overflowed 64 bits in bytes).
    assert_eq!(read_all(&p, "prefetchsim_csv").unwrap(), [rec(0, Op::Read, 5, 1024, 0, 0)]);
    let req: Vec<_> = TraceSpec::with_format(&p, "prefetchsim_csv").open_file().unwrap().map(Result::unwrap).collect();
    assert_eq!((req[0].first, req[0].len), (0, 1), "2 blocks of 512 bytes at block 5: 1 block of 4 KiB");
}
