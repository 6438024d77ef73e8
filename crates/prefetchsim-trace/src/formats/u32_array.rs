//! Bare arrays of 32-bit block ids, no header, no time, op or size: `u32be` (big-endian) and `u32le`
//! (little-endian). The LIRS2 authors' CloudPhysics `w106.trace` is little-endian, although caffeine's
//! simulator (Ben Manes) reads it big-endian: read that way every id has a zero low byte and no request
//! continues the previous block, while little-endian ids span a 4.6 GB disk with 39% sequential
//! continuations. Byte order is invisible to replacement-only studies and decisive for prefetching.
//!
//! Mapping: `addr` = the id ([`AddrUnit::Ids`]), op read, time 0, size 0. A file whose length is not a
//! multiple of 4 ends in a truncated record, which is an error.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::BinInput;
use super::parse::check_keys;
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

struct U32Array<const BIG_ENDIAN: bool> {
    input: BinInput,
}

impl<const BIG_ENDIAN: bool> RecordReader for U32Array<BIG_ENDIAN> {
    /// A bare array of block ids: no stream field.
    fn stream_ids(&self) -> bool {
        false
    }

    #[inline]
    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError> {
        let Some((pos, r)) = self.input.next::<4>()? else { return Ok(None) };
        let id = if BIG_ENDIAN { u32::from_be_bytes(*r) } else { u32::from_le_bytes(*r) };
        Ok(Some(RawRecord { time_ns: 0, op: Op::Read, addr: u64::from(id), size: 0, stream: 0, client: 0, pos }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Ids
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("id", "id")
    }

    fn byte_sizes(&self) -> bool {
        false
    }

    fn locate(&self, pos: u64) -> crate::error::Location {
        BinInput::location(pos, 4)
    }
}

/// A big-endian u32 array reader over `input`.
pub(crate) fn open_be(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("u32be", &spec.params, &[])?;
    Ok(Box::new(U32Array::<true> { input: BinInput::new(input, path) }))
}

/// A little-endian u32 array reader over `input`.
pub(crate) fn open_le(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("u32le", &spec.params, &[])?;
    Ok(Box::new(U32Array::<false> { input: BinInput::new(input, path) }))
}
