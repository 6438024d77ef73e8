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

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, mul_field, show, split_delim, u64_field};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 6] = ["time_ns", "op", "first", "len", "stream", "client"];

/// The comment line the writer puts first, before `block_size=N`.
pub(crate) const COMMENT_PREFIX: &str = "# prefetchsim trace: ";

struct PrefetchsimCsv {
    /// Bytes per `first`/`len` unit, once the comment line has said it.
    block_size: Option<u64>,
    /// A record was read: the block size may not change after it (the readers' caller converts a batch
    /// of records with one unit).
    records: bool,
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
}

/// A reader of prefetchsim's own CSV over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("prefetchsim_csv", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, PrefetchsimCsv { block_size: None, records: false }))
}
