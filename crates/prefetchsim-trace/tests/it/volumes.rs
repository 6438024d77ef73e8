//! Volumes (LUNs, devices, ASUs, disks of each host) of one trace are separate address spaces: the same
//! LBA in two volumes is two blocks. They shared one space, so one volume's read hit another's data.

use prefetchsim_core::engine::RequestSource;
use prefetchsim_core::Request;
use prefetchsim_trace::{OpsFilter, TraceSpec};

use crate::common::{self, Scratch};

fn requests(spec: &TraceSpec) -> Vec<Request> {
    spec.open_file().unwrap().map(Result::unwrap).collect()
}

/// Per multi-volume format: two records at the same address of two volumes, then the block after the
/// first one in the first volume (adjacency within a volume is kept).
const CASES: [(&str, &str); 6] = [
    ("tencent", "1538323199,822728,16,0,1243\n1538323199,822728,8,0,1344\n1538323199,822736,8,0,1243\n"),
    (
        "systor17",
        "Timestamp,Response,IOType,LUN,Offset,Size\n1.5,0.1,R,3,421236736,8192\n1.6,0.1,R,5,421236736,4096\n\
         1.7,0.1,R,3,421240832,4096\n",
    ),
    ("mqsim", "1000 0 822728 16 1\n2000 4 822728 8 1\n3000 0 822736 8 1\n"),
    ("disksim", "1.0 0 822728 16 1\n2.0 4 822728 8 1\n3.0 0 822736 8 1\n"),
    ("spc", "0,822728,8192,r,0.1\n1,822728,4096,r,0.2\n0,822736,4096,r,0.3\n"),
    // Disk 0 of two hosts.
    (
        "msr",
        "128166372003061629,hm,0,Read,421236736,8192,1\n128166372003061630,prxy,0,Read,421236736,4096,1\n\
         128166372003061631,hm,0,Read,421240832,4096,1\n",
    ),
];

#[test]
fn the_same_address_in_two_volumes_is_two_blocks() {
    let dir = Scratch::new("volumes");
    for (format, text) in CASES {
        let p = dir.file(&format!("t.{format}"), text.as_bytes());
        let r = requests(&TraceSpec::with_format(&p, format));
        assert_eq!(r.len(), 3, "{format}");
        assert_ne!(r[0].first, r[1].first, "{format}: two volumes, one block");
        assert_eq!(r[2].first, r[0].first + 1, "{format}: the next block of the same volume");
        assert_eq!(r[0].first, 102_841, "{format}: the first volume keeps its block numbers");
    }
}

/// Footprint = unique (volume, block) pairs: 348,239 on the Tencent sample (334,782 blocks if its 2,038
/// volumes shared one space), as the study of the readers computed independently.
#[test]
fn the_tencent_footprint_counts_each_volumes_blocks() {
    let Some(path) = common::trace("tencent-cbs-sample/cloud_storage-sample.bz2") else { return };
    let mut src = TraceSpec::with_format(&path, "tencent").open_file().unwrap();
    let st = prefetchsim_trace::stats::TraceStats::compute(&mut src, 4096, Default::default()).unwrap();
    assert_eq!(st.footprint_blocks, 348_239);
}

/// `time_backwards` counts the requests kept: the SYSTOR sample's writes go back 7 times, its reads 205
/// times, all of it 243 times (it was 243 whatever `ops` kept, so a trace and its `--ops reads` conversion
/// disagreed).
#[test]
fn time_backwards_counts_the_requests_kept() {
    let dir = Scratch::new("backwards");
    let text = "Timestamp,Response,IOType,LUN,Offset,Size\n10,0,W,0,0,512\n5,0,R,0,0,512\n20,0,W,0,0,512\n\
                15,0,R,0,0,512\n30,0,R,0,0,512\n";
    let p = dir.file("t.csv", text.as_bytes());
    for (ops, want) in [(OpsFilter::All, 2), (OpsFilter::Reads, 0), (OpsFilter::Writes, 0)] {
        let mut src = TraceSpec { ops, ..TraceSpec::with_format(&p, "systor17") }.open_file().unwrap();
        while src.next_request().unwrap().is_some() {}
        assert_eq!(src.report().time_backwards, want, "{ops:?}");
    }
    let Some(path) = common::trace("systor17-sample/systor17-traces-sample.csv.gz") else { return };
    for (ops, want) in [(OpsFilter::All, 243), (OpsFilter::Reads, 205), (OpsFilter::Writes, 7)] {
        let mut src = TraceSpec { ops, ..TraceSpec::with_format(&path, "systor17") }.open_file().unwrap();
        let mut buf = Vec::new();
        while src.fill(&mut buf, 100).unwrap() > 0 {}
        assert_eq!(src.report().time_backwards, want, "{ops:?}");
    }
}

/// One volume too many is blamed on the volume field (it named `Offset`, the address field).
#[test]
fn too_many_volumes_is_an_error_naming_the_volume_field() {
    let dir = Scratch::new("volumes-many");
    let max = prefetchsim_trace::volumes::MAX_VOLUMES;
    let text: String = (0..=max).map(|v| format!("1538323199,822728,8,0,{v}\n")).collect();
    let p = dir.file("many.tencent", text.as_bytes());
    let mut src = TraceSpec::with_format(&p, "tencent").open_file().unwrap();
    let e = src.find_map(Result::err).expect("more volumes than a trace may have").to_string();
    assert!(e.contains(&format!("line {}", max + 1)) && e.contains("field 'VolumeID': more than"), "{e}");
}

/// An address beyond a volume's 2^44 in objects mode is an object's start in the trace's own unit (bytes
/// for MSR): the error says so and does not suggest a larger block size, which changes nothing there; in
/// blocks mode the same offset is a block number that a larger block size brings back in range.
#[test]
fn a_volume_overflow_in_objects_mode_names_an_address_not_a_block() {
    let dir = Scratch::new("volumes-objects");
    let p = dir.file("t.msr", format!("128166385295514663,hm,0,Read,{},4096,1\n", 1u64 << 44).as_bytes());
    let first = |spec: TraceSpec| spec.open_file().unwrap().next().expect("one record");
    let spec = TraceSpec::with_format(&p, "msr");
    assert!(first(spec.clone()).is_ok(), "blocks mode: byte 2^44 is block 2^32");
    let e = first(TraceSpec { mode: prefetchsim_trace::Mode::Objects, ..spec }).unwrap_err().to_string();
    assert!(e.contains("field 'Offset': address 17592186044416 (objects mode") && !e.contains("block size"), "{e}");
}
