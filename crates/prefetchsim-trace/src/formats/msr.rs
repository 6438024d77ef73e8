//! MSR Cambridge block traces: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` per line.
//! Format defined by Narayanan, Donnelly and Rowstron ("Write off-loading", FAST'08), published as SNIA
//! IOTTA trace 388.
//!
//! Mapping: `time_ns` = Timestamp × 100 (Windows FILETIME counts 100 ns ticks since 1601; kept absolute,
//! it fits `u64` until the year 2185), `client` = index of Hostname in order of first appearance,
//! `stream` = DiskNumber, `op` from Type (`Read`/`Write`, any case), `addr` = Offset in bytes,
//! `size` = Size in bytes. ResponseTime is not used and not checked beyond being present.
//!
//! Volumes: each DiskNumber of each Hostname is a volume, its own address space unless `volumes = "shared"`
//! ([`crate::volumes`]).

use std::io::BufRead;

use hashbrown::HashMap;
use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{bad_field, check_keys, field_count_error, mul_field, show, split_delim, u64_field, StreamIds};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
use crate::spec::TraceSpec;

const FIELDS: [&str; 7] = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"];

struct Msr {
    disks: StreamIds,
    /// Host name → client, in order of first appearance.
    hosts: HashMap<Vec<u8>, u32, foldhash::fast::FixedState>,
    /// The previous line's host and client: traces have one or a few hosts, so most lines skip hashing.
    last: Option<(Vec<u8>, u32)>,
}

impl Msr {
    #[inline]
    fn host(&mut self, file: &str, n: u64, name: &[u8]) -> Result<u32, TraceError> {
        if let Some((h, c)) = &self.last {
            if h == name {
                return Ok(*c);
            }
        }
        if name.is_empty() {
            return Err(bad_field(file, n, "Hostname", "empty"));
        }
        let next =
            u32::try_from(self.hosts.len()).map_err(|_| bad_field(file, n, "Hostname", "more than 2^32 hosts"))?;
        let client = *self.hosts.entry(name.to_vec()).or_insert(next);
        self.last = Some((name.to_vec(), client));
        Ok(client)
    }
}

impl LineParser for Msr {
    /// DiskNumber: disk 0 of a host is a real disk.
    fn stream_ids(&self) -> bool {
        true
    }

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
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Bytes
    }

    fn volume_key(&self) -> VolumeKey {
        VolumeKey::ClientStream
    }

    fn volume_field(&self) -> &str {
        "Hostname,DiskNumber"
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("Offset", "Size")
    }
}

/// An MSR Cambridge reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("msr", &spec.params, &[])?;
    let parser = Msr { disks: StreamIds::default(), hosts: HashMap::default(), last: None };
    Ok(TextReader::boxed(input, path, parser))
}
