//! The CSV that `trace convert --to csv` writes ([`crate::writer::write_csv_to`]), read back exactly:
//!
//! ```text
//! # prefetchsim trace: block_size=4096
//! time_ns,op,first,len,stream,client
//! 5196256,read,95684,2,5,0
//! ```
//!
//! Mapping: `first` and `len` count blocks of the `block_size` on the comment line (the block size the
//! trace was written with), so `addr` = `first` in blocks of that size ([`AddrUnit::Blocks`]) and `size` =
//! `len` × it, in bytes: read back with the same block size, every request is the one written; with
//! another, the same bytes of each volume are cut into the new blocks. A record before any comment line is an error, not blocks of the reading spec's
//! block size: a file whose comment was lost (a spreadsheet, a CSV library that drops `#` lines) written
//! with other blocks would silently be read at the wrong addresses. `time_ns` is nanoseconds,
//! `op` is `read` or `write`, `stream` and `client` are the ids as written.
//!
//! Stream ids: the writer states whether the trace it wrote carries them ([`TraceFacts`]) on a second
//! comment line, `# prefetchsim stream_ids=true` or `=false` (a LIRS trace converted has a stream column of
//! zeros that mean "no stream id"). The reader reads the leading comment lines when it opens the file, so
//! the fact is known before the first record. A file without that line (written before it existed, or by
//! hand or another tool) declares nothing: stream 0 means "no stream id", as it did before the line
//! existed, so results of files written earlier do not change. Readers that predate the line skip it as a
//! comment.
//!
//! [`TraceFacts`]: prefetchsim_core::TraceFacts

use std::io::{BufRead, Read};

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, mul_field, show, split_delim, u64_field};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 6] = ["time_ns", "op", "first", "len", "stream", "client"];

/// The comment line the writer puts first, before `block_size=N`.
pub(crate) const COMMENT_PREFIX: &str = "# prefetchsim trace: ";

/// The comment line that says whether the stream column carries ids, before `true` or `false`. Not under
/// [`COMMENT_PREFIX`]: readers that predate it parse that line's value as a block size.
pub(crate) const STREAM_IDS_PREFIX: &str = "# prefetchsim stream_ids=";

/// Leading lines looked at for [`STREAM_IDS_PREFIX`], and the bytes read of each at most (a file that is
/// not this CSV, binary without line ends, is not read into memory).
const PEEK_LINES: usize = 4;
const PEEK_LINE_BYTES: u64 = 256;

struct PrefetchsimCsv {
    /// Bytes per `first`/`len` unit, once the comment line has said it.
    block_size: Option<u64>,
    /// A record was read: the block size may not change after it (the readers' caller converts a batch
    /// of records with one unit).
    records: bool,
    /// The stream column carries ids (the [`STREAM_IDS_PREFIX`] line, true without one).
    stream_ids: bool,
}

fn u32_field(file: &str, n: u64, field: &str, f: &[u8]) -> Result<u32, TraceError> {
    let v = u64_field(file, n, field, f)?;
    u32::try_from(v).map_err(|_| bad_field(file, n, field, format!("{v} does not fit 32 bits")))
}

impl LineParser for PrefetchsimCsv {
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        if line.starts_with(b"#") {
            let text = String::from_utf8_lossy(line);
            if let Some(rest) = text.strip_prefix(COMMENT_PREFIX) {
                let value = rest.trim().strip_prefix("block_size=").unwrap_or("");
                let size = value.parse::<u64>().ok().filter(|b| *b > 0).ok_or_else(|| {
                    bad_field(
                        file,
                        n,
                        "block_size",
                        format!("'{}' is not a block size in bytes", show(rest.as_bytes())),
                    )
                })?;
                if self.records && self.block_size != Some(size) {
                    return Err(bad_field(
                        file,
                        n,
                        "block_size",
                        format!("{size} after records of {} (one file, one block size)", self.block_size.unwrap_or(0)),
                    ));
                }
                self.block_size = Some(size);
            }
            return Ok(None);
        }
        if line.starts_with(b"time_ns,") {
            return Ok(None);
        }
        let Some(block_size) = self.block_size else {
            return Err(bad_field(
                file,
                n,
                "block_size",
                format!(
                    "no '{COMMENT_PREFIX}block_size=N' line before the first record, so the bytes of a block in \
                     first and len are unknown (trace convert writes that line first; add it)"
                ),
            ));
        };
        let mut f = [&b""[..]; 6];
        let count = split_delim(line, b',', &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let time_ns = u64_field(file, n, "time_ns", f[0])?;
        let op = match f[1] {
            b"read" => Op::Read,
            b"write" => Op::Write,
            other => {
                return Err(bad_field(file, n, "op", format!("unknown op '{}', expected read or write", show(other))))
            }
        };
        let first = u64_field(file, n, "first", f[2])?;
        let len = u64_field(file, n, "len", f[3])?;
        let size = mul_field(file, n, "len", len, block_size)?;
        let stream = u32_field(file, n, "stream", f[4])?;
        let client = u32_field(file, n, "client", f[5])?;
        self.records = true;
        Ok(Some(RawRecord { time_ns, op, addr: first, size, stream, client, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        // Known from the comment line, before any record is converted.
        AddrUnit::Blocks(self.block_size.unwrap_or(1))
    }

    fn byte_sizes(&self) -> bool {
        false
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("first", "len")
    }

    /// As the writer stated (a stream column of ids, unless the line says the trace had none).
    fn stream_ids(&self) -> bool {
        self.stream_ids
    }
}

/// Whether the leading comment lines of `input` say the stream column carries ids (false when none says),
/// and `input` with every byte looked at put back in front.
fn peek_stream_ids(
    path: &str,
    mut input: Box<dyn BufRead + Send>,
) -> Result<(bool, Box<dyn BufRead + Send>), TraceError> {
    let mut head = Vec::new();
    let mut stream_ids = false;
    for n in 1..=PEEK_LINES as u64 {
        let start = head.len();
        let got =
            (&mut input).take(PEEK_LINE_BYTES).read_until(b'\n', &mut head).map_err(|e| TraceError::io(path, e))?;
        let line = &head[start..];
        if got == 0 || !line.starts_with(b"#") || !line.ends_with(b"\n") {
            break;
        }
        let text = String::from_utf8_lossy(line);
        if let Some(v) = text.strip_prefix(STREAM_IDS_PREFIX) {
            stream_ids = match v.trim() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(bad_field(
                        path,
                        n,
                        "stream_ids",
                        format!("'{}': expected true or false", show(other.as_bytes())),
                    ))
                }
            };
        }
    }
    Ok((stream_ids, Box::new(std::io::Cursor::new(head).chain(input))))
}

/// A reader of prefetchsim's own CSV over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("prefetchsim_csv", &spec.params, &[])?;
    let (stream_ids, input) = peek_stream_ids(path, input)?;
    Ok(TextReader::boxed(input, path, PrefetchsimCsv { block_size: None, records: false, stream_ids }))
}
