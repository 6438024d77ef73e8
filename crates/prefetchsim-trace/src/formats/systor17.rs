//! SYSTOR'17 LUN traces: CSV `Timestamp,Response,IOType,LUN,Offset,Size` with that header line. Format
//! defined by Lee et al. ("Understanding storage traffic characteristics on enterprise virtual desktop
//! infrastructure", SYSTOR'17), published as SNIA IOTTA trace set 4964.
//!
//! Mapping: `time_ns` from Timestamp (seconds, decimal), `op` from IOType (`R`/`W`, any case), `stream` =
//! LUN, `addr` = Offset (bytes), `size` = Size (bytes). Response is not used and not checked beyond being
//! present. The header is skipped when it is the first line. Records are kept in file order even when
//! their timestamps are not (the published samples are slightly out of order).
//!
//! Volumes: each LUN is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, scaled_field, show, split_delim, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 6] = ["Timestamp", "Response", "IOType", "LUN", "Offset", "Size"];

struct Systor17 {
    luns: StreamIds,
}

impl LineParser for Systor17 {
    /// The LUN column: LUN 0 is a real LUN.
    fn stream_ids(&self) -> bool {
        true
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        if n == 1 && line.len() >= 9 && line[..9].eq_ignore_ascii_case(b"timestamp") {
            return Ok(None);
        }
        let mut f = [&b""[..]; 6];
        let count = split_delim(line, b',', &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let time_ns = scaled_field(file, n, "Timestamp", f[0], 9)?;
        let op = match f[2] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => {
                return Err(bad_field(file, n, "IOType", format!("unknown op '{}', expected R or W", show(other))))
            }
        };
        let stream = self.luns.field(file, n, "LUN", f[3])?;
        let addr = u64_field(file, n, "Offset", f[4])?;
        let size = u64_field(file, n, "Size", f[5])?;
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Bytes
    }

    fn volume_key(&self) -> VolumeKey {
        VolumeKey::Stream
    }

    fn volume_field(&self) -> &str {
        "LUN"
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("Offset", "Size")
    }
}

/// A SYSTOR'17 reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("systor17", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Systor17 { luns: StreamIds::default() }))
}
