//! UMass / SPC block traces: `ASU,LBA,Size,Opcode,Timestamp` per line. Format defined by the Storage
//! Performance Council's trace specification (SPC, 2002) and used by the UMass Trace Repository
//! (Financial1/2, WebSearch1-3).
//!
//! Mapping: `addr` = LBA in sectors, `size` = Size in bytes, `op` from Opcode (`r`/`R` read, `w`/`W`
//! write), `time_ns` from Timestamp (seconds, decimal), `stream` = ASU (application storage unit).
//! The SPC specification allows optional fields after the fifth; they are accepted and ignored.
//!
//! Volumes: each ASU is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, scaled_field, show, split_delim, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 5] = ["ASU", "LBA", "Size", "Opcode", "Timestamp"];

struct Spc {
    asu: StreamIds,
}

impl LineParser for Spc {
    /// The ASU column: ASU 0 is a real application storage unit.
    fn stream_ids(&self) -> bool {
        true
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 5];
        let count = split_delim(line, b',', &mut f);
        if count < FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let stream = self.asu.field(file, n, "ASU", f[0])?;
        let addr = u64_field(file, n, "LBA", f[1])?;
        let size = u64_field(file, n, "Size", f[2])?;
        let op = match f[3] {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => {
                return Err(bad_field(file, n, "Opcode", format!("unknown op '{}', expected r or w", show(other))))
            }
        };
        let time_ns = scaled_field(file, n, "Timestamp", f[4], 9)?;
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Sectors
    }

    fn volume_key(&self) -> VolumeKey {
        VolumeKey::Stream
    }

    fn volume_field(&self) -> &str {
        "ASU"
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("LBA", "Size")
    }
}

/// An SPC reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("spc", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Spc { asu: StreamIds::default() }))
}
