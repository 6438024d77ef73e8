//! Conversion of raw records into block requests ([`Converter`]): the block size, the address unit, the
//! mode and the ops filter of a [`TraceSpec`].

use prefetchsim_core::{Op, Request};

use crate::record::{AddrUnit, RawRecord};
use crate::spec::{Mode, OpsFilter, TraceSpec};
use crate::volumes::VOLUME_SHIFT;

/// The block-inside-its-volume bits of a block number.
const VOLUME_MASK: u64 = (1 << VOLUME_SHIFT) - 1;

/// The most blocks one request may span: 2^24, 64 GiB of 4 KiB blocks. Real requests are at most a few
/// MiB; a larger size is a damaged field, and taking it would make one record cost minutes of simulation
/// and gigabytes of footprint counting.
pub const MAX_REQUEST_BLOCKS: u64 = 1 << 24;

/// The field of a record a conversion error is about: the reader names it
/// ([`RecordReader::addr_size_fields`](crate::RecordReader::addr_size_fields)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blame {
    /// The address (LBA, offset, object id).
    Addr,
    /// The size.
    Size,
}

/// Converts raw records into block requests (block size, mode, ops filter).
#[derive(Clone, Copy, Debug)]
pub struct Converter {
    block_size: u64,
    /// `log2(block_size)` when it is a power of two: a shift instead of two 64-bit divisions per record
    /// (they were most of the conversion's cost).
    block_shift: Option<u32>,
    sector_size: u64,
    mode: Mode,
    ops: OpsFilter,
    unit: AddrUnit,
    id_bytes: Option<u64>,
}

impl Converter {
    /// A converter for records in `unit`.
    #[must_use]
    pub fn new(spec: &TraceSpec, unit: AddrUnit) -> Self {
        Self {
            block_size: spec.block_size,
            block_shift: spec.block_size.is_power_of_two().then(|| spec.block_size.trailing_zeros()),
            sector_size: spec.sector_size,
            mode: spec.mode,
            ops: spec.ops,
            unit,
            id_bytes: spec.id_bytes,
        }
    }

    /// The block of byte `byte`.
    #[inline]
    fn block(&self, byte: u64) -> u64 {
        match self.block_shift {
            Some(shift) => byte >> shift,
            None => byte / self.block_size,
        }
    }

    /// Whether every record becomes the one-block request of its address with no filter (object ids
    /// read one id a block, or objects mode, and all operations): `TraceSource` then converts a batch
    /// in a loop of its own.
    #[must_use]
    pub fn is_identity(&self) -> bool {
        self.ops == OpsFilter::All
            && match (self.mode, self.unit, self.id_bytes) {
                (_, AddrUnit::Blocks(_), _) => false,
                (Mode::Objects, _, _) | (Mode::Blocks, AddrUnit::Ids, None) => true,
                (Mode::Blocks, _, _) => false,
            }
    }

    /// Take records in `unit` from now on (the project's CSV knows its block size only after its
    /// comment line).
    pub fn set_unit(&mut self, unit: AddrUnit) {
        self.unit = unit;
    }

    /// The request for `r`, or `None` when the ops filter drops it. Addresses beyond 64 bits and sizes
    /// too large for one request are an error message and the field it is about.
    #[inline]
    pub fn convert(&self, r: &RawRecord) -> Result<Option<Request>, (Blame, String)> {
        let keep = match self.ops {
            OpsFilter::All => true,
            OpsFilter::Reads => r.op == Op::Read,
            OpsFilter::Writes => r.op == Op::Write,
        };
        if !keep {
            return Ok(None);
        }
        let (first, len) = match (self.mode, self.unit, self.id_bytes) {
            (Mode::Objects, AddrUnit::Blocks(n), _) => {
                // Named by the byte address, as a byte-addressed original names its block-aligned requests.
                let a = r
                    .addr
                    .checked_mul(n)
                    .ok_or_else(|| (Blame::Addr, format!("address {} × {n} bytes overflows 64 bits", r.addr)))?;
                (a, 1)
            }
            (Mode::Objects, _, _) | (Mode::Blocks, AddrUnit::Ids, None) => (r.addr, 1u64),
            (Mode::Blocks, unit, id_bytes) => {
                let unit_bytes = match unit {
                    AddrUnit::Sectors => self.sector_size,
                    AddrUnit::Ids => id_bytes.unwrap_or(1),
                    AddrUnit::Bytes => 1,
                    AddrUnit::Blocks(n) => n,
                };
                // Blocks (the project's CSV) keep a volume in the bits from VOLUME_SHIFT up: the block inside
                // it is rescaled, the volume kept.
                let (volume, addr) = match unit {
                    AddrUnit::Blocks(_) => (r.addr & !VOLUME_MASK, r.addr & VOLUME_MASK),
                    _ => (0, r.addr),
                };
                let start = addr
                    .checked_mul(unit_bytes)
                    .ok_or_else(|| (Blame::Addr, format!("address {addr} × {unit_bytes} bytes overflows 64 bits")))?;
                let size = if unit == AddrUnit::Ids && r.size == 0 { unit_bytes } else { r.size.max(1) };
                let end = start.checked_add(size - 1).ok_or_else(|| {
                    // The larger of the two is the likely damage.
                    let blame = if size > start { Blame::Size } else { Blame::Addr };
                    (blame, format!("byte address {start} + size {size} overflows 64 bits"))
                })?;
                let (first, last) = (self.block(start), self.block(end));
                if volume != 0 && last > VOLUME_MASK {
                    return Err((Blame::Addr, format!("block {last} is beyond its volume's 2^{VOLUME_SHIFT} blocks")));
                }
                (first | volume, last - first + 1)
            }
        };
        if len > MAX_REQUEST_BLOCKS {
            return Err((
                Blame::Size,
                format!(
                    "size of {len} blocks is more than one request may span ({MAX_REQUEST_BLOCKS} blocks: a corrupt \
                     size?)"
                ),
            ));
        }
        let len = len as u32;
        if first.checked_add(u64::from(len)).is_none() {
            return Err((Blame::Addr, format!("block {first} is at the end of the 64-bit address space")));
        }
        Ok(Some(Request { time_ns: r.time_ns, first, len, op: r.op, stream: r.stream, client: r.client }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(mode: Mode, unit: AddrUnit) -> Converter {
        Converter::new(&TraceSpec { mode, ..TraceSpec::new("x") }, unit)
    }

    #[test]
    fn bytes_become_the_blocks_they_touch() {
        let c = conv(Mode::Blocks, AddrUnit::Bytes);
        let r = RawRecord { addr: 4095, size: 2, ..RawRecord::default() };
        let q = c.convert(&r).unwrap().unwrap();
        assert_eq!((q.first, q.len), (0, 2));
        let r = RawRecord { addr: 8192, size: 4096, ..RawRecord::default() };
        let q = c.convert(&r).unwrap().unwrap();
        assert_eq!((q.first, q.len), (2, 1));
    }

    #[test]
    fn sectors_scale_by_the_sector_size_and_objects_keep_the_address() {
        let r = RawRecord { addr: 16, size: 8192, ..RawRecord::default() };
        let q = conv(Mode::Blocks, AddrUnit::Sectors).convert(&r).unwrap().unwrap();
        assert_eq!((q.first, q.len), (2, 2));
        let q = conv(Mode::Objects, AddrUnit::Sectors).convert(&r).unwrap().unwrap();
        assert_eq!((q.first, q.len), (16, 1));
    }

    #[test]
    fn the_ops_filter_drops_writes() {
        let spec = TraceSpec { ops: OpsFilter::Reads, ..TraceSpec::new("x") };
        let c = Converter::new(&spec, AddrUnit::Ids);
        assert!(c.convert(&RawRecord { op: Op::Write, ..RawRecord::default() }).unwrap().is_none());
        assert!(c.convert(&RawRecord::default()).unwrap().is_some());
    }
}
