//! Tencent CBS (cloud block storage) traces: `Timestamp,Offset,Size,IOType,VolumeID` per line. Format
//! defined by Zhang et al. (OSCA, USENIX ATC'20), published in the SNIA IOTTA repository.
//!
//! Mapping: `time_ns` from Timestamp (seconds), `addr` = Offset (sectors), `size` = Size (sectors) ×
//! `sector_size`, `op` from IOType (0 read, 1 write), `stream` = VolumeID: ids below 2^31 are used as
//! they are, larger ones are numbered 2^31, 2^31+1, … in order of first appearance (so streams never
//! collide and stay within `u32`).
//!
//! Volumes: each VolumeID is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{
    bad_field, check_keys, field_count_error, mul_field, scaled_field, show, split_delim, u64_field, StreamIds,
};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 5] = ["Timestamp", "Offset", "Size", "IOType", "VolumeID"];

struct Tencent {
    volumes: StreamIds,
    sector_size: u64,
}

impl LineParser for Tencent {
    /// VolumeID: volume 0 is a real volume.
    fn stream_ids(&self) -> bool {
        true
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 5];
        let count = split_delim(line, b',', &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let time_ns = scaled_field(file, n, "Timestamp", f[0], 9)?;
        let addr = u64_field(file, n, "Offset", f[1])?;
        let sectors = u64_field(file, n, "Size", f[2])?;
        let size = mul_field(file, n, "Size", sectors, self.sector_size)?;
        let op = match f[3] {
            b"0" => Op::Read,
            b"1" => Op::Write,
            other => {
                return Err(bad_field(
                    file,
                    n,
                    "IOType",
                    format!("unknown op '{}', expected 0 (read) or 1 (write)", show(other)),
                ))
            }
        };
        let stream = self.volumes.field(file, n, "VolumeID", f[4])?;
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Sectors
    }

    fn volume_key(&self) -> VolumeKey {
        VolumeKey::Stream
    }

    fn volume_field(&self) -> &str {
        "VolumeID"
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("Offset", "Size")
    }
}

/// A Tencent CBS reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("tencent", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Tencent { volumes: StreamIds::default(), sector_size: spec.sector_size }))
}
