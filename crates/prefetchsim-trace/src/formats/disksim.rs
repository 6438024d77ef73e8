//! DiskSim ASCII traces: `time device block sectors flags` per line, whitespace-separated. Format defined by
//! the DiskSim disk simulator (Ganger, Worthington, Patt; CMU PDL), "ascii" input format.
//!
//! Mapping: `time_ns` from time (milliseconds, decimal), `stream` = device, `addr` = block (sectors),
//! `size` = sectors × `sector_size`, `op` read when bit 0 of flags is set, else write.
//!
//! Volumes: each device is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{check_keys, field_count_error, mul_field, scaled_field, split_ws, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 5] = ["time", "device", "block", "sectors", "flags"];

struct DiskSim {
    devices: StreamIds,
    sector_size: u64,
}

impl LineParser for DiskSim {
    /// The device column: device 0 is a real device.
    fn stream_ids(&self) -> bool {
        true
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 5];
        let count = split_ws(line, &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let time_ns = scaled_field(file, n, "time", f[0], 6)?;
        let stream = self.devices.field(file, n, "device", f[1])?;
        let addr = u64_field(file, n, "block", f[2])?;
        let sectors = u64_field(file, n, "sectors", f[3])?;
        let size = mul_field(file, n, "sectors", sectors, self.sector_size)?;
        let flags = u64_field(file, n, "flags", f[4])?;
        let op = if flags & 1 == 1 { Op::Read } else { Op::Write };
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Sectors
    }

    fn volume_key(&self) -> VolumeKey {
        VolumeKey::Stream
    }

    fn volume_field(&self) -> &str {
        "device"
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("block", "sectors")
    }
}

/// A DiskSim ASCII reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("disksim", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, DiskSim { devices: StreamIds::default(), sector_size: spec.sector_size }))
}
