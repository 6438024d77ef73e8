//! Raw records, as a trace format states them, before conversion to block requests.

use prefetchsim_core::Op;

use crate::error::{Location, TraceError};

/// What a record's `addr` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrUnit {
    /// Byte offsets (MSR, SYSTOR'17, file offsets).
    Bytes,
    /// Sectors of `sector_size` bytes (SPC, vscsi, DiskSim, MQSim, Tencent, ARC `.lis`).
    Sectors,
    /// Ids that are already cache blocks / objects (LIRS, oracleGeneral, generic CSV object ids, the
    /// w106 block array): one id = one block, whatever the block size.
    Ids,
}

/// One record of a trace in the format's own units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RawRecord {
    /// Time in nanoseconds on the trace's own clock (0 when the format has no time).
    pub time_ns: u64,
    /// Read or write (`Read` when the format has no op).
    pub op: Op,
    /// Start address in the reader's [`AddrUnit`].
    pub addr: u64,
    /// Size in bytes (0 when the format has none: the request is one unit).
    pub size: u64,
    /// Stream: file id, ASU, LUN, volume, device (0 when none).
    pub stream: u32,
    /// Client / process (0 when none).
    pub client: u32,
}

/// A decoder of one trace format over a decompressed byte stream.
pub trait RecordReader: Send {
    /// The next record, `Ok(None)` at the end. Malformed data is an error naming file, line/record and
    /// field; it is never skipped silently.
    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError>;

    /// What `addr` counts in this format.
    fn addr_unit(&self) -> AddrUnit;

    /// Where the record last returned came from (for errors found after decoding, e.g. a size that does
    /// not fit one request).
    fn location(&self) -> Location;
}
