//! Trace writers for `trace convert`: libCacheSim's oracleGeneral binary format (the 24-byte record of
//! libCacheSim's `oracleGeneralBin` reader and `traceConv` tool) and a plain CSV of our requests.
//!
//! An output whose name ends in `.zst` is zstd-compressed, `.gz` gzip-compressed; anything else is written
//! as is.
//!
//! ```no_run
//! use prefetchsim_trace::writer::{write_oracle_general, OracleShape};
//! let mut src = prefetchsim_trace::synth::open("zipf", &Default::default(), 4096).unwrap();
//! write_oracle_general(&mut *src, "zipf.oracleGeneral.zst", 4096, OracleShape::Objects).unwrap();
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prefetchsim_core::engine::{RequestSource, SourceError};
use prefetchsim_core::policy::table::block_map;
use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use crate::error::TraceError;

/// Size of one oracleGeneral record: `<u32 ts_s, u64 obj_id, u32 size, i64 next_access_vtime>`,
/// little-endian, packed.
pub const ORACLE_RECORD: usize = 24;

/// How requests become oracleGeneral objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OracleShape {
    /// One record per request: `obj_id` = first block, `size` = `len × block_size`.
    #[default]
    Objects,
    /// One record per block, each of `block_size` bytes; the blocks of a request in ascending order share
    /// its timestamp (libCacheSim's "blk4k" convention for block traces).
    PerBlock,
}

/// What a writer wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteSummary {
    /// Requests read from the source.
    pub requests: u64,
    /// Records written (requests, or blocks for [`OracleShape::PerBlock`]).
    pub records: u64,
    /// Requests of more than one block. In [`OracleShape::Objects`] each became one object named by its
    /// first block, so a block-level replay of the output differs from one of the input (callers warn).
    pub multi_block_requests: u64,
    /// With `rebase_time`: the time of the first request, subtracted from every time written (ns).
    pub time_origin_ns: u64,
}

/// How a writer writes: the oracleGeneral shape and whether times count from the first request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// oracleGeneral only: one record per request or per block.
    pub shape: OracleShape,
    /// oracleGeneral only: write `time - time of the first request` (records earlier than the first
    /// request, as in out-of-order SYSTOR'17 samples, get 0). Needed for absolute clocks such as MSR's
    /// Windows FILETIME, whose seconds since 1601 do not fit oracleGeneral's u32.
    pub rebase_time: bool,
}

/// A file being written, compressed or not. It is written under a temporary name in the same directory
/// and renamed to its name by [`Output::finish`]; dropped unfinished (an error on the way), the temporary
/// file is removed, so a failed write never leaves a half-written or empty output behind.
pub struct Output {
    /// `None` only inside [`Output::finish`].
    sink: Option<Sink>,
    tmp: PathBuf,
    dest: PathBuf,
    done: bool,
}

enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

/// The temporary name of an output: hidden, beside it, unique to this process and this call.
fn temp_path(dest: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = dest.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dest.with_file_name(format!(".{name}.{}-{n}.partial", std::process::id()))
}

impl Output {
    /// Create `path` (as a temporary file until [`Output::finish`]), compressing by its extension.
    pub fn create(path: &str) -> Result<Self, TraceError> {
        let io_err = |e| TraceError::io(path, e);
        let dest = PathBuf::from(path);
        if dest.is_dir() {
            return Err(io_err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory, expected a file name")));
        }
        let lower = path.to_ascii_lowercase();
        // The reader knows these too, but a file named so must hold them: writing plain bytes under a
        // `.xz` name (as before) misleads every other tool.
        if let Some(suffix) = [".xz", ".bz2", ".bzip2"].into_iter().find(|x| lower.ends_with(x)) {
            return Err(io_err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{suffix} compression is read but not written; name the output .zst, .gz or uncompressed"),
            )));
        }
        let tmp = temp_path(&dest);
        let file = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io_err)?);
        let sink = if lower.ends_with(".zst") || lower.ends_with(".zstd") {
            match zstd::Encoder::new(file, 3) {
                Ok(e) => Sink::Zstd(e),
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(io_err(e));
                }
            }
        } else if lower.ends_with(".gz") || lower.ends_with(".gzip") {
            Sink::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::default()))
        } else {
            Sink::Plain(file)
        };
        Ok(Self { sink: Some(sink), tmp, dest, done: false })
    }

    /// Flush everything, close the compression frame and rename the file to its name.
    pub fn finish(mut self) -> io::Result<()> {
        let file = match self.sink.take() {
            Some(Sink::Plain(w)) => w,
            Some(Sink::Zstd(e)) => e.finish()?,
            Some(Sink::Gzip(e)) => e.finish()?,
            None => return Err(io::Error::other("output already finished")),
        };
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&self.tmp, &self.dest)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Some(Sink::Plain(w)) => w.write(buf),
            Some(Sink::Zstd(w)) => w.write(buf),
            Some(Sink::Gzip(w)) => w.write(buf),
            None => Err(io::Error::other("output already finished")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Some(Sink::Plain(w)) => w.flush(),
            Some(Sink::Zstd(w)) => w.flush(),
            Some(Sink::Gzip(w)) => w.flush(),
            None => Ok(()),
        }
    }
}

/// Registered output formats: (name, summary); `trace convert` and its errors derive from this.
pub const OUTPUT_FORMATS: &[(&str, &str)] = &[
    ("oracleGeneral", "libCacheSim oracleGeneral: 24-byte records with next_access_vtime (zstd when .zst)"),
    ("csv", "time_ns,op,first,len,stream,client with a header"),
];

/// Write `src` to `path` in output format `format` (a name of [`OUTPUT_FORMATS`], case-insensitive);
/// `options` apply to oracleGeneral only. The file appears only when the whole trace is written.
pub fn write(
    src: &mut dyn RequestSource,
    path: &str,
    format: &str,
    block_size: u64,
    options: WriteOptions,
) -> Result<WriteSummary, SourceError> {
    write_until(src, path, format, block_size, options, &AtomicBool::new(false))
}

/// [`write()`], stopped by `stop` (Ctrl-C): an error, and no file, whenever it is set before the output is
/// complete. The source should stop on it too; oracleGeneral reads the whole trace before it writes, so
/// the output checks it as well (a conversion interrupted while writing replaced the old file).
pub fn write_until(
    src: &mut dyn RequestSource,
    path: &str,
    format: &str,
    block_size: u64,
    options: WriteOptions,
    stop: &AtomicBool,
) -> Result<WriteSummary, SourceError> {
    if block_size == 0 {
        return Err(Box::new(TraceError::option("trace.block_size", "must be at least 1 byte")));
    }
    let oracle = match format.to_ascii_lowercase().as_str() {
        "oraclegeneral" | "oracle_general" => true,
        "csv" => false,
        _ => {
            let names = OUTPUT_FORMATS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
            return Err(Box::new(TraceError::option(
                "convert.format",
                format!(
                    "unknown output format '{format}'; choose one of {names} (oracleGeneral also as oracle_general)"
                ),
            )));
        }
    };
    let mut out = Output::create(path)?;
    let mut stopping = Stopping { out: &mut out, stop };
    let summary = if oracle {
        write_oracle_general_to(src, &mut stopping, path, block_size, options)?
    } else {
        write_csv_to(src, &mut stopping, path, block_size)?
    };
    if stop.load(Ordering::Relaxed) {
        return Err("interrupted".into());
    }
    out.finish().map_err(|e| TraceError::io(path, e))?;
    Ok(summary)
}

/// An output that fails once `stop` is set, so that a long write ends promptly (and its temporary file
/// goes with the dropped [`Output`]).
struct Stopping<'a> {
    out: &'a mut Output,
    stop: &'a AtomicBool,
}

impl Write for Stopping<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("interrupted"));
        }
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Read every request of `src`, in batches.
fn for_each_request(
    src: &mut dyn RequestSource,
    mut f: impl FnMut(&Request) -> Result<(), SourceError>,
) -> Result<u64, SourceError> {
    let mut buf = Vec::with_capacity(4096);
    let mut n = 0u64;
    loop {
        buf.clear();
        if src.fill(&mut buf, 4096)? == 0 {
            return Ok(n);
        }
        for r in &buf {
            f(r)?;
        }
        n += buf.len() as u64;
    }
}

fn invalid(path: &str, message: String) -> SourceError {
    Box::new(TraceError::io(path, io::Error::new(io::ErrorKind::InvalidData, message)))
}

/// Write `src` to `path` as oracleGeneral (see [`write_oracle_general_to`]), times as they are.
pub fn write_oracle_general(
    src: &mut dyn RequestSource,
    path: &str,
    block_size: u64,
    shape: OracleShape,
) -> Result<WriteSummary, SourceError> {
    write_oracle_general_with(src, path, block_size, WriteOptions { shape, rebase_time: false })
}

/// Write `src` to `path` as oracleGeneral with `options`.
pub fn write_oracle_general_with(
    src: &mut dyn RequestSource,
    path: &str,
    block_size: u64,
    options: WriteOptions,
) -> Result<WriteSummary, SourceError> {
    write(src, path, "oracleGeneral", block_size, options)
}

/// Write `src` to `out` as oracleGeneral records; `name` names the output in errors.
///
/// `ts_s` is the request time in whole seconds (from the first request's time with `rebase_time`);
/// `next_access_vtime` is the virtual time of the next record of the same `obj_id` counted from 1, as
/// libCacheSim counts it (0-based index + 1; its own `cloudPhysicsIO.oracleGeneral.bin` does so), or -1
/// when there is none. Knowing the future needs the whole trace: the records are held in memory (16
/// bytes each, plus 8 per record for the answer and a hash map over the distinct objects) and filled by
/// one backward pass before anything is written.
pub fn write_oracle_general_to(
    src: &mut dyn RequestSource,
    out: &mut dyn Write,
    name: &str,
    block_size: u64,
    options: WriteOptions,
) -> Result<WriteSummary, SourceError> {
    /// `(ts_s, size)` and `obj_id` of one record.
    struct Rec {
        ts: u32,
        size: u32,
        id: u64,
    }
    let mut recs: Vec<Rec> = Vec::new();
    let block_size32 = u32::try_from(block_size)
        .map_err(|_| invalid(name, format!("block size {block_size} exceeds u32 object sizes")))?;
    let mut origin: Option<u64> = None;
    let mut multi_block_requests = 0u64;
    let requests = for_each_request(src, |r| {
        let index = recs.len();
        let time_ns =
            if options.rebase_time { r.time_ns.saturating_sub(*origin.get_or_insert(r.time_ns)) } else { r.time_ns };
        let ts = u32::try_from(time_ns / 1_000_000_000).map_err(|_| {
            let hint = if options.rebase_time {
                "even counted from the first request (a span over 136 years: a corrupt time?)"
            } else {
                "an absolute clock does not fit (MSR counts 100 ns ticks since 1601); write times from the first \
                 request with --rebase-time (Python: convert(..., rebase_time=True))"
            };
            invalid(
                name,
                format!(
                    "record {index}: time {time_ns} ns = {} s does not fit oracleGeneral's u32 seconds (at most {} s); \
                     {hint}",
                    time_ns / 1_000_000_000,
                    u32::MAX
                ),
            )
        })?;
        if r.len > 1 {
            multi_block_requests += 1;
        }
        match options.shape {
            OracleShape::Objects => {
                let size = u64::from(r.len.max(1)) * block_size;
                let size = u32::try_from(size)
                    .map_err(|_| invalid(name, format!("record {index}: size {size} B does not fit u32")))?;
                recs.push(Rec { ts, size, id: r.first });
            }
            OracleShape::PerBlock => {
                recs.extend(r.blocks().map(|b| Rec { ts, size: block_size32, id: b }));
                if r.len == 0 {
                    recs.push(Rec { ts, size: block_size32, id: r.first });
                }
            }
        }
        Ok(())
    })?;

    let mut next = vec![-1i64; recs.len()];
    let mut seen = block_map::<i64>(1 << 16);
    for (i, rec) in recs.iter().enumerate().rev() {
        if let Some(later) = seen.insert(rec.id, i as i64) {
            next[i] = later + 1;
        }
    }
    drop(seen);

    let io_err = |e| -> SourceError { Box::new(TraceError::io(name, e)) };
    let mut bytes = [0u8; ORACLE_RECORD];
    for (rec, nx) in recs.iter().zip(&next) {
        bytes[0..4].copy_from_slice(&rec.ts.to_le_bytes());
        bytes[4..12].copy_from_slice(&rec.id.to_le_bytes());
        bytes[12..16].copy_from_slice(&rec.size.to_le_bytes());
        bytes[16..24].copy_from_slice(&nx.to_le_bytes());
        out.write_all(&bytes).map_err(io_err)?;
    }
    out.flush().map_err(io_err)?;
    Ok(WriteSummary { requests, records: recs.len() as u64, multi_block_requests, time_origin_ns: origin.unwrap_or(0) })
}

/// The CSV header [`write_csv_to`] writes.
pub const CSV_HEADER: &str = "time_ns,op,first,len,stream,client";

/// Write `src` to `path` as CSV (see [`write_csv_to`]).
pub fn write_csv(src: &mut dyn RequestSource, path: &str, block_size: u64) -> Result<WriteSummary, SourceError> {
    write(src, path, "csv", block_size, WriteOptions::default())
}

/// Write `src` to `out` as CSV: a comment line naming the block size (`# prefetchsim trace:
/// block_size=4096`), one saying whether the stream column carries ids as the source declares
/// (`# prefetchsim stream_ids=true`, [`prefetchsim_core::TraceFacts`]), the header [`CSV_HEADER`], then
/// one line per request, `op` as `read` or `write`, addresses in blocks. Streaming: nothing is held in
/// memory. Read back as format `prefetchsim_csv` (detected by its first line), it gives the same requests
/// and declares the same facts.
pub fn write_csv_to(
    src: &mut dyn RequestSource,
    out: &mut dyn Write,
    name: &str,
    block_size: u64,
) -> Result<WriteSummary, SourceError> {
    let io_err = |e| -> SourceError { Box::new(TraceError::io(name, e)) };
    writeln!(out, "{}block_size={block_size}", crate::formats::prefetchsim_csv::COMMENT_PREFIX).map_err(io_err)?;
    let stream_ids = src.facts().stream_ids;
    writeln!(out, "{}{stream_ids}", crate::formats::prefetchsim_csv::STREAM_IDS_PREFIX).map_err(io_err)?;
    writeln!(out, "{CSV_HEADER}").map_err(io_err)?;
    let mut multi_block_requests = 0u64;
    let requests = for_each_request(src, |r| {
        if r.len > 1 {
            multi_block_requests += 1;
        }
        let op = match r.op {
            Op::Read => "read",
            Op::Write => "write",
        };
        writeln!(out, "{},{op},{},{},{},{}", r.time_ns, r.first, r.len, r.stream, r.client).map_err(io_err)
    })?;
    out.flush().map_err(io_err)?;
    Ok(WriteSummary { requests, records: requests, multi_block_requests, time_origin_ns: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prefetchsim_core::engine::VecSource;

    /// A source that sets `stop` once it has given every request: Ctrl-C while the writer writes.
    struct StopAtEnd<'a> {
        inner: VecSource,
        stop: &'a AtomicBool,
    }

    impl RequestSource for StopAtEnd<'_> {
        fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
            let n = self.inner.fill(buf, max)?;
            if n == 0 {
                self.stop.store(true, Ordering::Relaxed);
            }
            Ok(n)
        }
    }

    /// Interrupted after the whole trace was read (oracleGeneral writes only then), the conversion ends
    /// in an error and the file that was there stays as it was, with no temporary file left: it was
    /// replaced by the complete output.
    #[test]
    fn an_interrupted_conversion_keeps_the_old_file() {
        let dir = std::env::temp_dir().join(format!("prefetchsim-writer-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for format in ["oracleGeneral", "csv"] {
            let path = dir.join(format!("old.{format}"));
            std::fs::write(&path, b"OLD").unwrap();
            let stop = AtomicBool::new(false);
            let reqs = (0..10_000u64).map(|b| Request::read(b, 1)).collect();
            let mut src = StopAtEnd { inner: VecSource::new(reqs), stop: &stop };
            let path_s = path.display().to_string();
            let e = write_until(&mut src, &path_s, format, 4096, WriteOptions::default(), &stop).unwrap_err();
            assert!(e.to_string().contains("interrupted"), "{format}: {e}");
            assert_eq!(std::fs::read(&path).unwrap(), b"OLD", "{format}");
        }
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn next_access_points_at_the_next_record_of_the_same_object() {
        let reqs = [5, 7, 5, 9, 7, 5].map(|b| Request::read(b, 1)).to_vec();
        let mut out = Vec::new();
        write_oracle_general_to(&mut VecSource::new(reqs), &mut out, "mem", 4096, WriteOptions::default()).unwrap();
        let next: Vec<i64> =
            out.chunks(ORACLE_RECORD).map(|c| i64::from_le_bytes(c[16..24].try_into().unwrap())).collect();
        assert_eq!(next, vec![3, 5, 6, -1, -1, -1], "libCacheSim's virtual time, from 1");
    }

    #[test]
    fn an_unknown_output_format_names_the_choices() {
        let e = write(&mut VecSource::new(vec![]), "x.bin", "lirs", 4096, WriteOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "convert.format: unknown output format 'lirs'; choose one of oracleGeneral, csv (oracleGeneral also as oracle_general)");
    }

    /// A compression the writer cannot make is refused by name, not written as plain bytes under it; the
    /// long spellings of the ones it makes are made.
    #[test]
    fn an_output_named_for_a_compression_holds_it() {
        let dir = std::env::temp_dir().join(format!("prefetchsim-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["t.csv.xz", "t.csv.BZ2", "t.csv.bzip2"] {
            let path = dir.join(name);
            let e =
                write_csv(&mut VecSource::new(vec![Request::read(1, 1)]), path.to_str().unwrap(), 4096).unwrap_err();
            assert!(e.to_string().contains("compression is read but not written"), "{name}: {e}");
            assert!(!path.exists());
        }
        for (name, magic) in [("t.csv.zstd", &[0x28u8, 0xb5, 0x2f, 0xfd][..]), ("t.csv.gzip", &[0x1f, 0x8b][..])] {
            let path = dir.join(name);
            write_csv(&mut VecSource::new(vec![Request::read(1, 1)]), path.to_str().unwrap(), 4096).unwrap();
            assert!(std::fs::read(&path).unwrap().starts_with(magic), "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_has_the_header_and_one_line_per_request() {
        let reqs = vec![Request { time_ns: 7, first: 3, len: 2, op: Op::Write, stream: 4, client: 1 }];
        let mut out = Vec::new();
        write_csv_to(&mut VecSource::new(reqs), &mut out, "mem", 512).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# prefetchsim trace: block_size=512\n# prefetchsim stream_ids=false\ntime_ns,op,first,len,stream,client\n\
             7,write,3,2,4,1\n",
            "a source that declares nothing has no stream ids"
        );
    }
}
