//! Requests: what a trace feeds to the first level and what a level sends to the one below.

use serde::{Deserialize, Serialize};

/// The operation of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A read.
    #[default]
    Read,
    /// A write.
    Write,
}

/// The last block a request may name: its exclusive end, `first + len`, must fit in 64 bits (the readers
/// refuse a record past it, and every prefetch run is clipped to it).
pub const LAST_BLOCK: u64 = u64::MAX - 1;

/// Bits of a block number inside one volume. A multi-volume trace (prefetchsim-trace's `volumes.rs`) numbers
/// the blocks of its `k`-th volume from `k · 2^VOLUME_SHIFT`, so that the caches keep the volumes apart.
pub const VOLUME_SHIFT: u32 = 44;

/// Where `block` lies on a device: its number inside its volume. The trace gives no layout of its volumes on
/// one disk, so the timed engine lays them over one LBA range, each as the trace numbers it (a disk saw the
/// same addresses before the volumes were told apart); a single-volume trace is unchanged.
#[inline]
#[must_use]
pub const fn device_block(block: u64) -> u64 {
    block & ((1 << VOLUME_SHIFT) - 1)
}

/// The volume `block` lies in: the number above its [`VOLUME_SHIFT`] bits (0 for a single-volume trace).
#[inline]
#[must_use]
pub const fn volume_of(block: u64) -> u64 {
    block >> VOLUME_SHIFT
}

/// Block `first` of volume `volume` as the caches number it (`volume · 2^VOLUME_SHIFT + first`), when the
/// `len` blocks from `first` fit in one volume and `volume` is below [`volume_of`]`(u64::MAX)` (the last
/// volume would end at block `u64::MAX`); `None` otherwise.
#[inline]
#[must_use]
pub const fn in_volume(volume: u64, first: u64, len: u32) -> Option<u64> {
    let last = first.saturating_add(if len == 0 { 0 } else { len as u64 - 1 });
    if volume_of(last) != 0 || volume >= volume_of(u64::MAX) {
        return None;
    }
    Some(first | volume << VOLUME_SHIFT)
}

/// One request: `len` consecutive blocks starting at `first`.
///
/// Object traces (oracleGeneral, LIRS, plain ids) become one-block requests. `stream` is a file id, ASU,
/// LUN or volume when the trace has one (0 otherwise); `client` says which first-level cache issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Request {
    /// Issue time in nanoseconds from the start of the trace (0 when the trace has no time).
    pub time_ns: u64,
    /// First block.
    pub first: u64,
    /// Number of blocks, at least 1.
    pub len: u32,
    /// Read or write.
    pub op: Op,
    /// Stream identity (file, ASU, volume, LUN) or 0.
    pub stream: u32,
    /// Client identity or 0.
    pub client: u32,
}

impl Request {
    /// A read of `len` blocks from `first` at time 0, stream 0, client 0.
    #[must_use]
    pub fn read(first: u64, len: u32) -> Self {
        Self { first, len, ..Self::default() }
    }

    /// The last block of the request (inclusive).
    #[must_use]
    pub fn last(&self) -> u64 {
        self.first + u64::from(self.len.max(1)) - 1
    }

    /// The blocks of the request, in order.
    pub fn blocks(&self) -> std::ops::Range<u64> {
        self.first..self.first + u64::from(self.len)
    }
}

/// A contiguous run of blocks that one level asks the level below (or the device) to fetch.
///
/// The first `demand_len` blocks are demand blocks (the level above needs them now); the rest are
/// prefetched blocks. A level below counts the demand blocks as demand accesses and the rest as
/// accesses of prefetch class (metrics.md: "L2 hit ratio (demand)" vs "(all)").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Fetch {
    /// First block.
    pub first: u64,
    /// Number of blocks.
    pub len: u32,
    /// Number of leading demand blocks.
    pub demand_len: u32,
    /// Stream of the request that caused it.
    pub stream: u32,
    /// Client of the request that caused it.
    pub client: u32,
}

impl Fetch {
    /// The request a level below sees for this fetch (time and op are copied from `cause`).
    #[must_use]
    pub fn as_request(&self, cause: &Request) -> Request {
        Request {
            time_ns: cause.time_ns,
            first: self.first,
            len: self.len,
            op: Op::Read,
            stream: self.stream,
            client: self.client,
        }
    }
}
