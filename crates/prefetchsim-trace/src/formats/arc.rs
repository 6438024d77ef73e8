//! ARC `.lis` traces: `start_block n_blocks ignore req_no` per line, whitespace-separated, 512-byte
//! blocks, reads only. Format of the traces published with ARC (Megiddo and Modha, FAST'03); the traces
//! must be cited as that paper.
//!
//! Mapping: `addr` = start_block (sectors), `size` = n_blocks × `sector_size`, op read, time 0, no
//! stream. The last two fields are not used and are not checked beyond being present.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::{LineParser, TextReader};
use super::parse::{check_keys, field_count_error, mul_field, split_ws, u64_field};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 4] = ["start_block", "n_blocks", "ignore", "req_no"];

struct Arc {
    sector_size: u64,
}

impl LineParser for Arc {
    /// ARC `.lis` has no stream column (start_block n_blocks ignore req_no).
    fn stream_ids(&self) -> bool {
        false
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let mut f = [&b""[..]; 4];
        let count = split_ws(line, &mut f);
        if count != FIELDS.len() {
            return Err(field_count_error(file, n, count, &FIELDS));
        }
        let addr = u64_field(file, n, "start_block", f[0])?;
        let blocks = u64_field(file, n, "n_blocks", f[1])?;
        let size = mul_field(file, n, "n_blocks", blocks, self.sector_size)?;
        Ok(Some(RawRecord { time_ns: 0, op: Op::Read, addr, size, stream: 0, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Sectors
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("start_block", "n_blocks")
    }
}

/// An ARC `.lis` reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("arc", &spec.params, &[])?;
    Ok(TextReader::boxed(input, path, Arc { sector_size: spec.sector_size }))
}
