//! MQSim ASCII traces: `time device start_sector sectors type` per line, whitespace-separated. Format
//! defined by the MQSim SSD simulator (Tavakkol et al., FAST'18; CMU SAFARI): DiskSim's layout with the
//! time in integer nanoseconds and type 1 = read, 0 = write.
//!
//! Mapping: `time_ns` = time, `stream` = device, `addr` = start_sector (sectors), `size` = sectors ×
//! `sector_size`, `op` from type.
//!
//! Volumes: each device is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, mul_field, show, split_ws, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 5] = ["time", "device", "start_sector", "sectors", "type"];

struct MqSim {
    devices: StreamIds,
    sector_size: u64,
}

impl LineParser for MqSim {
    /// The device column: device 0 is a real device (an SPC ASU in the MQSim excerpts).
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
        let time_ns = u64_field(file, n, "time", f[0])?;
        let stream = self.devices.field(file, n, "device", f[1])?;
        let addr = u64_field(file, n, "start_sector", f[2])?;
        let sectors = u64_field(file, n, "sectors", f[3])?;
        let size = mul_field(file, n, "sectors", sectors, self.sector_size)?;
        let op = match f[4] {
            b"1" => Op::Read,
            b"0" => Op::Write,
            other => {
                return Err(bad_field(
                    file,
                    n,
                    "type",
                    format!("unknown op '{}', expected 1 (read) or 0 (write)", show(other)),
                ))
            }
        };
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
        ("start_sector", "sectors")
    }
}

/// An MQSim ASCII reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("mqsim", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, MqSim { devices: StreamIds::default(), sector_size: spec.sector_size }))
}
