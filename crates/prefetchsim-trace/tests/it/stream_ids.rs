//! Whether a trace's stream field carries ids (`TraceFacts`), from the formats and generators that
//! declare it to the components whose defaults depend on it: the same workload on stream 0 and stream 1
//! of a format with stream ids gives the same results under Linux read-ahead's default key and
//! StreamLRU's default; a format without stream ids still detects; merges, the decoded-trace cache and
//! the project's CSV keep the fact.

use std::sync::atomic::{AtomicBool, AtomicU64};

use prefetchsim_core::batch::{run_task, Task, TaskTrace};
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{RequestSource, SourceError};
use prefetchsim_core::TraceFacts;
use prefetchsim_trace::cache::{self, CacheSettings};
use prefetchsim_trace::{writer, TraceSpec};

use crate::common::Scratch;

/// A trace run the way `simulate` runs it: the core's batch runner over a spec.
struct SpecTrace(TraceSpec);

impl TaskTrace for SpecTrace {
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError> {
        Ok(self.0.open()?)
    }

    fn block_size(&self) -> u64 {
        self.0.block_size
    }
}

/// Two sequential scans of one-block reads taken in turns, far apart (`n` blocks each), then the first
/// scan again: one context for both thrashes it, a context per scan lets each window grow.
fn two_scans(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).flat_map(|i| [i, (1 << 20) + i]).collect();
    v.extend(0..n);
    v
}

/// `blocks` (4 KiB) as an SPC trace, every request on ASU `asu`.
fn spc(blocks: &[u64], asu: u32) -> String {
    blocks.iter().enumerate().map(|(i, b)| format!("{asu},{},4096,r,{}.{:06}\n", b * 8, i / 1000, i % 1000)).collect()
}

/// `blocks` as a LIRS trace (no stream field).
fn lirs(blocks: &[u64]) -> String {
    blocks.iter().map(|b| format!("{b}\n")).collect()
}

/// Each config's level counters (name, value) on the trace of `spec`, run as `simulate` runs it. Twice
/// the configs: the batch replays a decoded copy to them (one config alone streams its own source).
fn counters(spec: &TraceSpec, configs: &[&str]) -> Vec<Vec<(&'static str, u64)>> {
    let cfgs: Vec<HierarchyConfig> = configs.iter().map(|t| HierarchyConfig::from_toml(t).unwrap()).collect();
    let (stop, done) = (AtomicBool::new(false), AtomicU64::new(0));
    let out = run_task(&SpecTrace(spec.clone()), &Task::new(&cfgs, 1, &stop, &done)).unwrap();
    out.into_iter().map(|o| o.unwrap().0.levels[0].counters.pairs()).collect()
}

fn counter(c: &[(&'static str, u64)], name: &str) -> u64 {
    c.iter().find(|(n, _)| *n == name).map(|p| p.1).unwrap()
}

const LINUX: &str = "[[level]]\nsize = 256\nprefetcher = { name = 'linux', mode = 'pfc-paper' }\n";
const STREAMLRU: &str = "[[level]]\nsize = 64\npolicy = 'streamlru'\nprefetcher = 'pfc-ra'\n";

#[test]
fn the_same_workload_on_asu_0_and_asu_1_gives_the_same_results_under_the_defaults() {
    let dir = Scratch::new("stream-ids-asu");
    let blocks = two_scans(3000);
    let cfgs = [LINUX, STREAMLRU];
    let on = |asu: u32| {
        let path = dir.file(&format!("asu{asu}.spc"), spc(&blocks, asu).as_bytes());
        counters(&TraceSpec { cache: false, ..TraceSpec::with_format(path, "spc") }, &cfgs)
    };
    let (zero, one) = (on(0), on(1));
    assert_eq!(zero[0], one[0], "Linux read-ahead, default key: ASU 0 keyed like ASU 1");
    assert_eq!(zero[1], one[1], "StreamLRU, default stream_zero_is_random: ASU 0 grouped like ASU 1");
    // And both are `key = "id"`: one context per ASU.
    let id = "[[level]]\nsize = 256\nprefetcher = { name = 'linux', mode = 'pfc-paper', key = 'id' }\n";
    let path = dir.file("asu0-id.spc", spc(&blocks, 0).as_bytes());
    let explicit = counters(&TraceSpec { cache: false, ..TraceSpec::with_format(path, "spc") }, &[id, id]);
    assert_eq!(zero[0], explicit[0]);
}

#[test]
fn a_format_without_stream_ids_still_detects_streams_under_the_default_key() {
    let dir = Scratch::new("stream-ids-lirs");
    let path = dir.file("t.lirs", lirs(&two_scans(3000)).as_bytes());
    let spec = TraceSpec { cache: false, ..TraceSpec::with_format(path, "lirs") };
    assert_eq!(spec.open().unwrap().facts(), TraceFacts::UNKNOWN);
    let with =
        |key: &str| format!("[[level]]\nsize = 256\nprefetcher = {{ name = 'linux', mode = 'pfc-paper'{key} }}\n");
    let c = counters(&spec, &[&with(""), &with(", key = 'detect'"), &with(", key = 'id'")]);
    assert_eq!(c[0], c[1], "the default detects on a trace without stream ids");
    assert_ne!(c[0], c[2], "detection is not one context for the whole trace");
    // A context per scan lets the windows grow: far fewer reads for the same blocks.
    assert!(counter(&c[0], "fetches") * 4 < counter(&c[2], "fetches"), "{:?} {:?}", c[0], c[2]);
}

#[test]
fn formats_and_generators_declare_whether_their_stream_field_carries_ids() {
    let dir = Scratch::new("stream-ids-formats");
    let facts = |spec: TraceSpec| spec.open().unwrap().facts().stream_ids;
    let file = |name: &str, text: &str, format: &str| TraceSpec {
        cache: false,
        ..TraceSpec::with_format(dir.file(name, text.as_bytes()), format)
    };
    assert!(facts(file("t.spc", "0,8,4096,r,0.0\n", "spc")));
    assert!(facts(file("t.mqsim", "0 0 8 8 1\n", "mqsim")));
    assert!(!facts(file("t.lirs", "5\n", "lirs")));
    assert!(!facts(file("t.lis", "1 1 0 0\n", "arc")));
    let mut csv = file("t.csv", "5,0\n", "csv");
    csv.params.insert("obj-id-col".into(), 1.into());
    assert!(!facts(csv.clone()), "a CSV without stream-col");
    csv.params.insert("stream-col".into(), 2.into());
    assert!(facts(csv), "a CSV with stream-col");
    let synth = |name: &str| {
        let mut s = TraceSpec::with_format(name, "synthetic");
        s.params.insert("requests".into(), 10.into());
        facts(s)
    };
    assert!(synth("multi-like") && synth("oltp-like") && synth("split-mix2") && synth("sequential"));
    assert!(synth("source-trees"));
    assert!(!synth("zipf") && !synth("associations"));
    // Filtered and relabelled, a trace declares what it declared.
    let mut spec = file("r.spc", "0,8,4096,r,0.0\n0,16,4096,w,0.1\n", "spc");
    spec.ops = prefetchsim_trace::OpsFilter::Reads;
    spec.client_from = prefetchsim_trace::clients::ClientFrom::Stream;
    assert!(facts(spec));
}

#[test]
fn a_merge_carries_stream_ids_when_every_member_does() {
    let dir = Scratch::new("stream-ids-merge");
    let spc = TraceSpec::with_format(dir.file("t.spc", b"0,8,4096,r,0.0\n"), "spc");
    let lirs = TraceSpec::with_format(dir.file("t.lirs", b"5\n"), "lirs");
    let facts = |members: &[TraceSpec]| TraceSpec::merged("m", members).open().unwrap().facts();
    assert_eq!(facts(&[spc.clone(), spc.clone()]), TraceFacts::STREAM_IDS);
    assert_eq!(facts(&[spc, lirs.clone()]), TraceFacts::UNKNOWN, "a member's stream 0 may mean 'none'");
    assert_eq!(facts(&[lirs.clone(), lirs]), TraceFacts::UNKNOWN);
}

#[test]
fn the_decoded_trace_cache_stores_and_restores_the_fact() {
    let dir = Scratch::new("stream-ids-cache");
    let settings = CacheSettings { dir: dir.0.join("cache"), max_bytes: u64::MAX, min_trace_bytes: 0 };
    for (name, text, format, ids) in
        [("t.spc", spc(&two_scans(50), 0), "spc", true), ("t.lirs", lirs(&two_scans(50)), "lirs", false)]
    {
        let spec = TraceSpec::with_format(dir.file(name, text.as_bytes()), format);
        // The first open decodes and records, the second replays the cached file.
        for pass in ["recording", "cached"] {
            let mut src = cache::open(&spec, &settings).unwrap();
            assert_eq!(src.facts().stream_ids, ids, "{name}, {pass}, before any request");
            let mut buf = Vec::new();
            while src.fill(&mut buf, 1000).unwrap() > 0 {}
            assert_eq!(src.facts().stream_ids, ids, "{name}, {pass}, at the end");
        }
    }
}

#[test]
fn the_projects_csv_says_whether_the_trace_it_was_written_from_had_stream_ids() {
    let dir = Scratch::new("stream-ids-csv");
    for (name, text, format, ids) in
        [("t.spc", spc(&[1, 2, 3], 0), "spc", true), ("t.lirs", lirs(&[1, 2, 3]), "lirs", false)]
    {
        let spec = TraceSpec { cache: false, ..TraceSpec::with_format(dir.file(name, text.as_bytes()), format) };
        let out = dir.file(&format!("{name}.csv"), b"");
        writer::write_csv(spec.open().unwrap().as_mut(), &out, 4096).unwrap();
        let back = TraceSpec { cache: false, ..TraceSpec::with_format(&out, "prefetchsim_csv") };
        assert_eq!(back.open().unwrap().facts().stream_ids, ids, "{name}");
        let mut n = Vec::new();
        let mut src = back.open().unwrap();
        while src.fill(&mut n, 100).unwrap() > 0 {}
        assert_eq!(n.len(), 3, "the comment line is not a record");
    }
    // A file without the line (written before it existed, or by hand) declares nothing: stream 0 is "no
    // stream id", as before the line existed.
    let old = dir
        .file("old.csv", b"# prefetchsim trace: block_size=4096\ntime_ns,op,first,len,stream,client\n0,read,1,1,0,0\n");
    let spec = TraceSpec { cache: false, ..TraceSpec::with_format(&old, "prefetchsim_csv") };
    assert!(!spec.open().unwrap().facts().stream_ids);
    let bad = dir.file(
        "bad.csv",
        b"# prefetchsim trace: block_size=4096\n# prefetchsim stream_ids=maybe\ntime_ns,op,first,len,stream,client\n",
    );
    let e = TraceSpec { cache: false, ..TraceSpec::with_format(&bad, "prefetchsim_csv") }.open().err().unwrap();
    assert!(e.to_string().contains("bad.csv") && e.to_string().contains("stream_ids"), "{e}");
}
