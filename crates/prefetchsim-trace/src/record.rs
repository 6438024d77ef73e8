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
    /// Where the record is in its file: the line number (text) or record index (binary), for errors
    /// found after decoding ([`RecordReader::locate`]). Set by the reader.
    pub pos: u64,
}

/// A decoder of one trace format over a decompressed byte stream.
pub trait RecordReader: Send {
    /// The next record, `Ok(None)` at the end. Malformed data is an error naming file, line/record and
    /// field; it is never skipped silently. After a [`TraceError::Malformed`] the reader has moved past the
    /// bad record and the next call goes on with the one after it (callers may skip, see
    /// [`TraceSource`](crate::TraceSource)); after any other error the stream is over.
    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError>;

    /// What `addr` counts in this format.
    fn addr_unit(&self) -> AddrUnit;

    /// The names of the fields `addr` and `size` come from, as the format names them: the errors of
    /// converting a record blame one of them (an address that overflows in bytes was blamed on `size`).
    fn addr_size_fields(&self) -> (&str, &str);

    /// The location of a record from its [`RawRecord::pos`] (for errors found after decoding, e.g. a size
    /// that does not fit one request).
    fn locate(&self, pos: u64) -> Location;

    /// Append up to `max` records to `out`; returns how many (0 at the end). One virtual call per batch:
    /// this default body is compiled for each reader, so its `next_record` calls are static.
    fn fill_records(&mut self, out: &mut Vec<RawRecord>, max: usize) -> Result<usize, TraceError> {
        let start = out.len();
        while out.len() - start < max {
            match self.next_record()? {
                Some(r) => out.push(r),
                None => break,
            }
        }
        Ok(out.len() - start)
    }
}
