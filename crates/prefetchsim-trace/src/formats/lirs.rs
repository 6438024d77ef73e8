//! LIRS block traces: one block id per line. Format of the traces distributed with LIRS (Jiang and Zhang,
//! SIGMETRICS'02) and reused by caffeine's simulator.
//!
//! A line holding only `*` is a checkpoint marker in some LIRS traces (cs, 2_pools); it carries no request
//! and is skipped, counted nowhere. Mapping: `addr` = the id ([`AddrUnit::Ids`]), op read, time 0,
//! size 0.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{check_keys, field_count_error, split_ws, u64_field};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 1] = ["block"];

struct Lirs;

impl LineParser for Lirs {
    /// LIRS text is one block id per line: no stream column.
    fn stream_ids(&self) -> bool {
        false
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 1];
        let count = split_ws(line, &mut f);
        if count != 1 {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        if f[0] == b"*" {
            return Ok(None);
        }
        let addr = u64_field(file, n, "block", f[0])?;
        Ok(Some(RawRecord { time_ns: 0, op: Op::Read, addr, size: 0, stream: 0, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Ids
    }

    fn byte_sizes(&self) -> bool {
        false
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("block", "block")
    }
}

/// A LIRS reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("lirs", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Lirs))
}
