//! MSR Cambridge block traces: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` per line.
//! Format defined by Narayanan, Donnelly and Rowstron ("Write off-loading", FAST'08), published as SNIA
//! IOTTA trace 388.
//!
//! Mapping: `time_ns` = Timestamp × 100 (Windows FILETIME counts 100 ns ticks since 1601; kept absolute,
//! it fits `u64` until the year 2185), `client` = index of Hostname in order of first appearance,
//! `stream` = DiskNumber, `op` from Type (`Read`/`Write`, any case), `addr` = Offset in bytes,
//! `size` = Size in bytes. ResponseTime is not used and not checked beyond being present.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, mul_field, show, split_delim, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 7] = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"];

struct Msr {
    disks: StreamIds,
    /// Host names in order of first appearance; traces have one or a few, so a scan beats hashing.
    hosts: Vec<Vec<u8>>,
    last_host: u32,
}

impl Msr {
    fn host(&mut self, file: &str, n: u64, name: &[u8]) -> Result<u32, TraceError> {
        if self.hosts.get(self.last_host as usize).is_some_and(|h| h == name) {
            return Ok(self.last_host);
        }
        let i = match self.hosts.iter().position(|h| h == name) {
            Some(i) => i,
            None => {
                if name.is_empty() {
                    return Err(bad_field(file, n, "Hostname", "empty"));
                }
                self.hosts.push(name.to_vec());
                self.hosts.len() - 1
            }
        };
        self.last_host = u32::try_from(i).map_err(|_| bad_field(file, n, "Hostname", "more than 2^32 hosts"))?;
        Ok(self.last_host)
    }
}

impl LineParser for Msr {
    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 7];
        let count = split_delim(line, b',', &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let ticks = u64_field(file, n, "Timestamp", f[0])?;
        let time_ns = mul_field(file, n, "Timestamp", ticks, 100)?;
        let client = self.host(file, n, f[1])?;
        let stream = self.disks.field(file, n, "DiskNumber", f[2])?;
        let op = if f[3].eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if f[3].eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(bad_field(file, n, "Type", format!("unknown op '{}', expected Read or Write", show(f[3]))));
        };
        let addr = u64_field(file, n, "Offset", f[4])?;
        let size = u64_field(file, n, "Size", f[5])?;
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Bytes
    }
}

/// An MSR Cambridge reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("msr", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Msr { disks: StreamIds::default(), hosts: Vec::new(), last_host: 0 }))
}
