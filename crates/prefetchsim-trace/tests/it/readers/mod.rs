//! The trace readers: every shared real trace (detected and named explicitly; record counts, read shares
//! and address spans from the traces README; first records), and hand-made malformed inputs whose errors
//! must name the exact file, line or record, and field.

use std::io::Write;

use prefetchsim_core::Op;
use prefetchsim_trace::detect::detect;
use prefetchsim_trace::{compress, formats, AddrUnit, Location, RawRecord, RecordReader, TraceError, TraceSpec};

use crate::common::{self, Scratch};

mod binary;
mod detect;
mod files;
mod shared;
mod text;

// ---------------------------------------------------------------------------------------------------------
// Helpers

pub(super) fn open_with(path: &str, spec: &TraceSpec) -> Result<Box<dyn RecordReader>, TraceError> {
    let format = spec.resolved_format()?;
    formats::open(format, path, compress::open(path)?, spec)
}

pub(super) fn open(path: &str, format: &str) -> Box<dyn RecordReader> {
    open_with(path, &TraceSpec::with_format(path, format)).unwrap_or_else(|e| panic!("open {path} as {format}: {e}"))
}

/// What a full pass over a trace saw.
#[derive(Debug, Default)]
pub(super) struct Summary {
    count: u64,
    reads: u64,
    first: Vec<RawRecord>,
    min_addr: u64,
    max_addr: u64,
    size_sum: u64,
    streams: std::collections::BTreeSet<u32>,
    clients: std::collections::BTreeSet<u32>,
}

pub(super) fn summarize(mut r: Box<dyn RecordReader>, path: &str) -> Summary {
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
pub(super) fn shared(rel: &str, format: &str) -> Option<(String, Summary)> {
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

pub(super) fn rec(time_ns: u64, op: Op, addr: u64, size: u64, stream: u32, client: u32) -> RawRecord {
    RawRecord { time_ns, op, addr, size, stream, client, pos: 0 }
}

/// All records of `path` read as `spec` says, or the first error (from opening or reading).
/// Every record of `path`, with its position zeroed (positions are checked by `summarize`), so that
/// tests compare content.
pub(super) fn read_all_spec(path: &str, spec: &TraceSpec) -> Result<Vec<RawRecord>, TraceError> {
    let mut r = open_with(path, spec)?;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(RawRecord { pos: 0, ..rec });
    }
    Ok(out)
}

pub(super) fn read_all(path: &str, format: &str) -> Result<Vec<RawRecord>, TraceError> {
    read_all_spec(path, &TraceSpec::with_format(path, format))
}

/// The error reading `path` as `format` must be a malformed `field` at `location` of `path`, and its
/// message must contain `what`.
#[track_caller]
pub(super) fn assert_malformed(path: &str, format: &str, location: Location, field: &str, what: &str) {
    assert_malformed_err(read_all(path, format), path, location, field, what);
}

#[track_caller]
pub(super) fn assert_malformed_err(
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

pub(super) fn line(n: u64) -> Location {
    Location::line(n)
}

pub(super) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

// Binary record builders (binary.rs and detect.rs)

pub(super) fn vscsi_v1(sn: u32, cmd: u16, lbn: u64, ts_us: u64) -> Vec<u8> {
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

pub(super) fn vscsi_v2(cmd: u16, lbn: u64, ts_us: u64, rt: u64) -> Vec<u8> {
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

pub(super) fn oracle(t: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
    [&t.to_le_bytes()[..], &id.to_le_bytes(), &size.to_le_bytes(), &next.to_le_bytes()].concat()
}
