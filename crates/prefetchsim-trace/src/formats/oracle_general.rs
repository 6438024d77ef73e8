//! libCacheSim's oracleGeneral binary traces: 24-byte little-endian records
//! `<u32 clock_time, u64 obj_id, u32 obj_size, i64 next_access_vtime>`. Format defined by libCacheSim
//! (Juncheng Yang, CMU), which converts many public traces to it.
//!
//! Mapping: `time_ns` = clock_time (seconds) × 10^9, `addr` = obj_id ([`AddrUnit::Ids`]: one object is one
//! block), `size` = obj_size, op read, no stream. next_access_vtime (the index of the object's next
//! request, -1 for none) is not used by the simulator.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::BinInput;
use super::parse::check_keys;
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

/// Record size in bytes.
pub(crate) const SIZE: usize = 24;

/// One decoded record: (clock_time, obj_id, obj_size, next_access_vtime).
#[inline]
pub(crate) fn fields(r: &[u8; SIZE]) -> (u32, u64, u32, i64) {
    let [t0, t1, t2, t3, i0, i1, i2, i3, i4, i5, i6, i7, s0, s1, s2, s3, n0, n1, n2, n3, n4, n5, n6, n7] = *r;
    (
        u32::from_le_bytes([t0, t1, t2, t3]),
        u64::from_le_bytes([i0, i1, i2, i3, i4, i5, i6, i7]),
        u32::from_le_bytes([s0, s1, s2, s3]),
        i64::from_le_bytes([n0, n1, n2, n3, n4, n5, n6, n7]),
    )
}

struct OracleGeneral {
    input: BinInput,
}

impl RecordReader for OracleGeneral {
    /// oracleGeneral records have no stream field (time, obj_id, obj_size, next_access_vtime).
    fn stream_ids(&self) -> bool {
        false
    }

    #[inline]
    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError> {
        let Some((pos, r)) = self.input.next::<SIZE>()? else { return Ok(None) };
        let (t, id, size, _) = fields(r);
        // u32 seconds × 10^9 < 2^62: no overflow.
        let time_ns = u64::from(t) * 1_000_000_000;
        Ok(Some(RawRecord { time_ns, op: Op::Read, addr: id, size: u64::from(size), stream: 0, client: 0, pos }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Ids
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("obj_id", "obj_size")
    }

    fn locate(&self, pos: u64) -> crate::error::Location {
        BinInput::location(pos, SIZE)
    }
}

/// An oracleGeneral reader over `input`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("oracle_general", &spec.params, &[])?;
    Ok(Box::new(OracleGeneral { input: BinInput::new(input, path) }))
}
