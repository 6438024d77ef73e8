//! Entry points of the fuzz targets (`fuzz/`, run by `scripts/fuzz.sh`) and of the corpus replay test:
//! each takes arbitrary bytes and must return without panicking and without unbounded work, whatever the
//! bytes hold. They live in the library, not in the fuzz crate, so that plain `cargo test` replays the
//! committed seeds and every crash found so far on the stable toolchain, without libFuzzer.
//!
//! Nothing here touches the file system: trace bytes are read from memory (through the same
//! decompression, readers, conversion and skipping as a file), detection runs on a head in memory.

use std::io::{BufRead, Cursor, Read};

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, RequestSource, Silent, VecSource};
use prefetchsim_core::{Op, Request};
use serde_json::Value;

use crate::compress::{self, Compression};
use crate::detect;
use crate::formats::{self, FORMATS};
use crate::spec::{Mode, OpsFilter, TraceSource, TraceSpec};
use crate::stats::{RandomRule, StatsCollector};

/// Requests one input may yield before the harness stops reading (decompression can multiply the input
/// a thousandfold; the fuzzer wants many short runs).
const MAX_REQUESTS: u64 = 50_000;
/// Blocks one input may touch before the harness stops (a request may span millions of blocks).
const MAX_BLOCKS: u64 = 1 << 22;
/// The largest level the config harness builds: larger sizes are legitimate but only measure allocation.
const MAX_LEVEL_BLOCKS: u64 = 1 << 12;

/// Check what every request must satisfy, then count its blocks.
fn check_request(r: &Request, blocks: &mut u64) {
    assert!(r.len >= 1, "a request of no block: {r:?}");
    assert!(r.first.checked_add(u64::from(r.len)).is_some(), "a request past the address space: {r:?}");
    *blocks += u64::from(r.len);
}

/// Drain `src` within the harness budgets, feeding statistics; errors must display.
fn drain(src: &mut dyn RequestSource, block_size: u64) {
    let mut stats = StatsCollector::new(block_size, RandomRule::default());
    let (mut n, mut blocks) = (0u64, 0u64);
    let mut buf = Vec::with_capacity(256);
    while n < MAX_REQUESTS && blocks < MAX_BLOCKS {
        buf.clear();
        match src.fill(&mut buf, 256) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                break;
            }
        }
        for r in &buf {
            check_request(r, &mut blocks);
            stats.push(r);
        }
    }
    let _ = stats.finish();
}

/// A trace spec for format `format` with the options the flag byte selects.
fn spec_for(format: &str, flags: u8) -> TraceSpec {
    let mut spec = TraceSpec::with_format("fuzz-input", format);
    spec.block_size = [4096, 512, 1, 1 << 20][usize::from(flags & 3)];
    spec.mode = if flags & 4 == 0 { Mode::Blocks } else { Mode::Objects };
    spec.ops = [OpsFilter::All, OpsFilter::All, OpsFilter::Reads, OpsFilter::Writes][usize::from((flags >> 3) & 3)];
    spec.skip_bad = if flags & 0x20 == 0 { 0 } else { 3 };
    let alt = flags & 0x40 != 0;
    match format {
        "csv" if alt => {
            spec.params.insert("spec".into(), "obj-id-col=1,op-col=2,stream-col=3,delimiter=space".into());
            spec.params.insert("obj-id-is-num".into(), false.into());
        }
        "csv" => {
            spec.params.insert("spec".into(), "obj-id-col=2,time-col=1,obj-size-col=3,op-col=4,stream-col=5".into());
        }
        "multi_real" => {
            spec.params.insert("layout".into(), "butt_hash".into());
        }
        "vscsi" if alt => {
            spec.params.insert("other-cmds".into(), "skip".into());
        }
        _ => {}
    }
    spec
}

/// `data` in memory as a decompressed stream: decoded by its magic bytes when `decompress`.
fn input(data: &[u8], decompress: bool) -> Option<Box<dyn BufRead + Send>> {
    let raw: Box<dyn BufRead + Send> = Box::new(Cursor::new(data.to_vec()));
    if decompress {
        compress::decode(raw, Compression::from_magic(data)).ok()
    } else {
        Some(raw)
    }
}

/// Fuzz target `read_trace`: byte 0 picks the format (index into [`FORMATS`]), byte 1 the options (block
/// size, mode, ops filter, `skip_bad`, the alternative CSV/vscsi options, decompression), the rest is the
/// file. Every request must be well formed, a skipping source must never skip more than allowed, and
/// every error must display.
pub fn read_trace(data: &[u8]) {
    let [sel, flags, rest @ ..] = data else { return };
    let format = FORMATS[usize::from(*sel) % FORMATS.len()].0;
    let spec = spec_for(format, *flags);
    let Some(input) = input(rest, flags & 0x80 != 0) else { return };
    let reader = match formats::open(format, &spec.path, input, &spec) {
        Ok(r) => r,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let mut src = TraceSource::new(reader, &spec);
    drain(&mut src, spec.block_size);
    let report = src.source_report();
    assert!(report.skipped <= spec.skip_bad, "skipped {} of at most {}", report.skipped, spec.skip_bad);
    assert!(report.skipped_messages.len() as u64 <= report.skipped);
}

/// File names for [`detect`]: the name is half of detection.
const NAMES: &[&str] = &[
    "trace.dat",
    "OLTP.lis",
    "io.vscsi",
    "io.oracleGeneral.bin",
    "w106.trace",
    "fin.spc",
    "t.disksim",
    "multi-real.csv",
    "multi-real.files.csv",
    "systor17.csv",
    "cloud_storage.csv",
    "msr-cambridge.csv",
    "twitter.csv",
    "mqsim.trace",
];

/// Fuzz target `detect`: byte 0 picks the file name (low 4 bits), whether the head is the whole file
/// (bit 4) and whether it is decompressed first (bit 5); the rest is the content.
pub fn detect(data: &[u8]) {
    let [sel, rest @ ..] = data else { return };
    let name = NAMES[usize::from(sel & 0x0f) % NAMES.len()];
    let whole = sel & 0x10 == 0;
    let head = if sel & 0x20 == 0 {
        rest.to_vec()
    } else {
        let Some(r) = input(rest, true) else { return };
        let mut head = Vec::new();
        if r.take(detect::HEAD_BYTES as u64 + 1).read_to_end(&mut head).is_err() {
            return;
        }
        head
    };
    match detect::detect_head(name, &head, whole) {
        Ok(format) => assert!(FORMATS.iter().any(|(n, _)| *n == format)),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Requests that exercise a hierarchy: a mix of sequential runs, re-references and scattered blocks
/// (fixed, so a crash replays).
fn workload() -> Vec<Request> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..600u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (first, len) = match i % 4 {
                0 | 1 => (1000 + i, 1 + (x % 4) as u32),
                2 => (x % 256, 1),
                _ => (x % 100_000, 1 + (x % 16) as u32),
            };
            let op = if x % 5 == 0 { Op::Write } else { Op::Read };
            Request { time_ns: i * 1000, first, len, op, stream: (x % 3) as u32, client: 0 }
        })
        .collect()
}

/// Build the hierarchy of `cfg` (levels up to [`MAX_LEVEL_BLOCKS`], sizes against a footprint of 64
/// blocks) and run [`workload`] through it; the counters must add up.
fn build_and_run(cfg: &HierarchyConfig) {
    let footprint = Some(64);
    let mut above = None;
    for l in &cfg.level {
        match l.size.resolve(4096, footprint, above) {
            Ok(c) if c <= MAX_LEVEL_BLOCKS => above = Some(c),
            _ => return,
        }
    }
    let mut h = match Hierarchy::build(cfg, 4096, footprint) {
        Ok(h) => h,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let Ok(r) = run_instant(&mut VecSource::new(workload()), &mut h, &cfg.engine, &mut Silent) else { return };
    for l in &r.levels {
        let c = &l.counters;
        assert_eq!(c.hits + c.misses, c.demand_accesses, "{}: hits + misses", l.name);
        assert!(c.prefetch_hits <= c.hits && c.prefetch_used <= c.prefetch_issued, "{}: {c:?}", l.name);
    }
}

/// Fuzz target `config`: a hierarchy config as TOML (or as JSON when it starts with `{`, the form the
/// Python layer passes), then the hierarchy built and run on a small workload.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = if text.starts_with('{') {
        serde_json::from_str::<Value>(text).ok().map(HierarchyConfig::from_json)
    } else {
        Some(HierarchyConfig::from_toml(text))
    };
    match parsed {
        Some(Ok(cfg)) => build_and_run(&cfg),
        Some(Err(e)) => assert!(!e.to_string().is_empty()),
        None => {}
    }
}

/// A few lines of several text formats, for reading a spec's format with its options.
const SAMPLE: &[u8] = b"0,1,512,r,0.5\n1 8 0 1\n7\n0.5 3 100 8 1\n128166372003061629,wdev,2,Read,0,4096,1\n";

/// Fuzz target `trace_spec`: a `[trace]` table as JSON (what Python passes); a generator is opened and
/// a bounded prefix of its requests read, a file format is opened over a small sample in memory.
pub fn trace_spec(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else { return };
    let spec = match TraceSpec::from_json(v) {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    if spec.is_synthetic() {
        match spec.open() {
            Ok(mut src) => drain(src.as_mut(), spec.block_size),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        return;
    }
    let Some(format) = spec.format.as_deref() else { return };
    // The contiguous multi_real layout would read a file list from disk: not here.
    if matches!(formats::canonical("x", format), Ok("multi_real")) {
        return;
    }
    match formats::open(format, &spec.path, Box::new(Cursor::new(SAMPLE)), &spec) {
        Ok(reader) => drain(&mut TraceSource::new(reader, &spec), spec.block_size),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_point_takes_empty_and_tiny_inputs() {
        for f in [read_trace, detect, config, trace_spec] {
            for data in [&b""[..], b"\0", b"\xff\xff", b"{}", b"[[level]]\nsize = 1\n"] {
                f(data);
            }
        }
    }
}
