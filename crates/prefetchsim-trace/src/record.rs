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
    /// Blocks of this many bytes, the bits from [`crate::volumes::VOLUME_SHIFT`] up naming a volume (the
    /// project's CSV, written in blocks): a volume's blocks are rescaled to the reading block size in
    /// place, and the volume kept (bytes of a volume past the 256th of 4 KiB blocks overflow 64 bits).
    Blocks(u64),
}

/// Which fields of a record name the volume (LUN, device, ASU, disk of a host) whose address space its
/// address is in ([`crate::volumes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VolumeKey {
    /// One address space for the whole trace (file layouts, id traces, the project's CSV).
    None,
    /// `stream` is the volume (Tencent volume, SYSTOR'17 LUN, SPC ASU, DiskSim/MQSim device).
    Stream,
    /// `client` and `stream` together: MSR's disk numbers count per host.
    ClientStream,
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

    /// Which fields name a record's volume (default: none, one address space).
    fn volume_key(&self) -> VolumeKey {
        VolumeKey::None
    }

    /// The name of the field(s) [`Self::volume_key`] reads, as the format names them: the error of a
    /// trace of too many volumes blames them (it blamed the address field).
    fn volume_field(&self) -> &str {
        "volume"
    }

    /// Whether the format's `stream` field carries ids, 0 included: a stream, ASU, device, LUN, volume,
    /// disk or file column, whose first id is 0 in many traces (SPC ASU 0, DiskSim device 0). `false`: the
    /// format has no such column and every record's `stream` is 0, meaning "no stream id". Declared by
    /// every format (no default), read by [`TraceSource`](crate::TraceSource) as its
    /// [`TraceFacts`](prefetchsim_core::TraceFacts) when the trace is opened.
    fn stream_ids(&self) -> bool;

    /// Whether `size` is the record's own size in bytes (default), not absent (ids without a size: LIRS, u32
    /// arrays, CSV ids without `obj-size-col`) nor rounded to blocks (the project's CSV).
    fn byte_sizes(&self) -> bool {
        true
    }

    /// Records the reader dropped by an option since the last call (vscsi's `other-cmds = "skip"`), and
    /// the messages of the first few: they are counted with the skipped records, not as bad ones.
    fn take_dropped(&mut self) -> (u64, Vec<String>) {
        (0, Vec::new())
    }

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
