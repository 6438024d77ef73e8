//! CloudPhysics vscsi block traces: fixed-size little-endian binary records in two versions. Format
//! defined by CloudPhysics (the SHARDS traces, Waldspurger et al., FAST'15); the layouts, the version
//! test and which SCSI commands count as reads or writes follow the facts of libCacheSim's vscsi reader.
//!
//! Layouts (byte offsets):
//! - v1, 32 bytes: `sn` u32 @0, `len` u32 @4 (bytes), `nSG` u32 @8, `cmd` u16 @12, `ver` u16 @14,
//!   `lbn` u64 @16 (sectors), `ts` u64 @24 (µs).
//! - v2, 40 bytes: `cmd` u16 @0, `ver` u16 @2, `sn` u32 @4, `len` u32 @8, `nSG` u32 @12, `lbn` u64 @16,
//!   `ts` u64 @24, `rt` u64 @32 (response time).
//!
//! The high byte of `ver` is the version (1 or 2); the file's version is the one record 0 carries (record 1
//! decides only when record 0 carries both, v2 first) and every record must carry it. Reads are SCSI commands 0x08, 0x28, 0x2D, 0x88,
//! 0xA8; writes 0x0A, 0x2A, 0x3F, 0x8A, 0x8E, 0x9A, 0x9C, 0xAA, 0xAE (WRITE(6), 0x0A, was missing though
//! READ(6) was read: the SCSI block commands pair them). Any other command is an error unless
//! the option `other-cmds = "skip"` asks to drop such records; dropped records are counted with the
//! skipped ones (they vanished without a word).
//!
//! Mapping: `addr` = lbn (sectors), `size` = len, `time_ns` = ts × 1000, `op` from cmd, no stream.

use std::io::BufRead;

use prefetchsim_core::Op;

use super::input::BinInput;
use super::parse::{check_keys, param_str};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

/// SCSI command codes that read.
const READS: [u16; 5] = [0x08, 0x28, 0x2D, 0x88, 0xA8];
/// SCSI command codes that write.
const WRITES: [u16; 9] = [0x0A, 0x2A, 0x3F, 0x8A, 0x8E, 0x9A, 0x9C, 0xAA, 0xAE];

/// The operation of SCSI command `cmd`, if it is a read or a write.
#[inline]
pub(crate) fn op_of(cmd: u16) -> Option<Op> {
    if READS.contains(&cmd) {
        Some(Op::Read)
    } else if WRITES.contains(&cmd) {
        Some(Op::Write)
    } else {
        None
    }
}

/// The two record versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

impl Version {
    pub(crate) const fn size(self) -> usize {
        match self {
            Version::V1 => 32,
            Version::V2 => 40,
        }
    }

    /// Offset of the byte holding the version number.
    const fn ver_byte(self) -> usize {
        match self {
            Version::V1 => 15,
            Version::V2 => 3,
        }
    }

    const fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }
}

/// Whether record `i` of `head` is whole and carries version `v`.
fn carries(head: &[u8], i: usize, v: Version) -> bool {
    head.len() >= (i + 1) * v.size() && head[i * v.size() + v.ver_byte()] == v.number()
}

/// The version of a vscsi stream starting with `head`, as record 0 declares it; `None` when record 0 is not
/// whole or carries neither version byte. Only when record 0 carries both (the byte of the other version
/// is part of another field) does record 1 decide, v2 first: a bad version in record 1 is then that
/// record's own error, which `skip_bad` can skip, not a rejection of the file blamed on record 0.
pub(crate) fn version(head: &[u8]) -> Option<Version> {
    match [Version::V2, Version::V1].map(|v| carries(head, 0, v)) {
        [true, true] => Some(if !carries(head, 1, Version::V2) && carries(head, 1, Version::V1) {
            Version::V1
        } else {
            Version::V2
        }),
        [true, false] => Some(Version::V2),
        [false, true] => Some(Version::V1),
        [false, false] => None,
    }
}

/// The version of `head` for detection by content, which must be surer than a named file: every whole
/// record among the first two carries it.
pub(crate) fn sniff(head: &[u8]) -> Option<Version> {
    version(head).filter(|&v| head.chunks_exact(v.size()).take(2).all(|r| r[v.ver_byte()] == v.number()))
}

struct Vscsi {
    input: BinInput,
    file: String,
    version: Version,
    skip_other: bool,
    /// Records dropped by `other-cmds = "skip"` since the last [`RecordReader::take_dropped`], and the
    /// first messages.
    dropped: (u64, Vec<String>),
}

// Constant offsets into a fixed-size record: the bounds checks vanish at compile time.
#[inline(always)]
fn u16_at<const N: usize>(r: &[u8; N], at: usize) -> u16 {
    u16::from_le_bytes([r[at], r[at + 1]])
}
#[inline(always)]
fn u32_at<const N: usize>(r: &[u8; N], at: usize) -> u32 {
    u32::from_le_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]])
}
#[inline(always)]
fn u64_at<const N: usize>(r: &[u8; N], at: usize) -> u64 {
    let b = [r[at], r[at + 1], r[at + 2], r[at + 3], r[at + 4], r[at + 5], r[at + 6], r[at + 7]];
    u64::from_le_bytes(b)
}

/// The fields of a record the reader uses: (version byte, cmd, len, lbn, ts).
type Fields = (u8, u16, u32, u64, u64);

#[inline(always)]
fn fields_v1(r: &[u8; 32]) -> Fields {
    (r[15], u16_at(r, 12), u32_at(r, 4), u64_at(r, 16), u64_at(r, 24))
}

#[inline(always)]
fn fields_v2(r: &[u8; 40]) -> Fields {
    (r[3], u16_at(r, 0), u32_at(r, 8), u64_at(r, 16), u64_at(r, 24))
}

#[cold]
fn bad(file: &str, v: Version, index: u64, field: &str, msg: String) -> TraceError {
    TraceError::malformed(file, BinInput::location(index, v.size()), field, msg)
}

impl RecordReader for Vscsi {
    /// vscsi records have no stream field (sn, len, nSG, cmd, ver, lbn, ts).
    fn stream_ids(&self) -> bool {
        false
    }

    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError> {
        let v = self.version;
        loop {
            // Plain integers out of the buffer, the record built once at the end: copying an
            // `Option<RawRecord>` through the stack cost half the decode time.
            let (index, (ver, cmd, len, lbn, ts)) = match v {
                Version::V1 => match self.input.next::<32>()? {
                    Some((i, r)) => (i, fields_v1(r)),
                    None => return Ok(None),
                },
                Version::V2 => match self.input.next::<40>()? {
                    Some((i, r)) => (i, fields_v2(r)),
                    None => return Ok(None),
                },
            };
            if ver != v.number() {
                return Err(bad(&self.file, v, index, "ver", format!("version {ver} in a v{} trace", v.number())));
            }
            let op = match op_of(cmd) {
                Some(op) => op,
                None if self.skip_other => {
                    self.dropped.0 += 1;
                    if self.dropped.1.len() < crate::spec::SKIPPED_MESSAGES {
                        let why = format!(
                            "SCSI command {cmd:#04x} is neither a read nor a write: dropped (other-cmds = \"skip\")"
                        );
                        self.dropped.1.push(bad(&self.file, v, index, "cmd", why).to_string());
                    }
                    continue;
                }
                None => {
                    return Err(bad(
                        &self.file,
                        v,
                        index,
                        "cmd",
                        format!(
                            "SCSI command {cmd:#04x} is neither a read nor a write (option other-cmds = \"skip\" drops \
                             such records)"
                        ),
                    ))
                }
            };
            let Some(time_ns) = ts.checked_mul(1000) else {
                return Err(bad(&self.file, v, index, "ts", format!("{ts} µs overflows 64 bits in ns")));
            };
            return Ok(Some(RawRecord {
                time_ns,
                op,
                addr: lbn,
                size: u64::from(len),
                stream: 0,
                client: 0,
                pos: index,
            }));
        }
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Sectors
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("lbn", "len")
    }

    fn locate(&self, pos: u64) -> crate::error::Location {
        BinInput::location(pos, self.version.size())
    }

    fn take_dropped(&mut self) -> (u64, Vec<String>) {
        std::mem::take(&mut self.dropped)
    }
}

/// A vscsi reader over `input`; the version is read from the first records.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("vscsi", &spec.params, &["other-cmds"])?;
    let skip_other = match param_str(&spec.params, "other-cmds")?.as_deref() {
        None | Some("error") => false,
        Some("skip") => true,
        Some(other) => {
            return Err(TraceError::option(
                "trace.params.other-cmds",
                format!("'{other}': expected \"error\" or \"skip\""),
            ))
        }
    };
    let mut input = BinInput::new(input, path);
    let head = input.peek(2 * Version::V2.size())?;
    let version = if head.is_empty() {
        Version::V1 // an empty trace: any version reads zero records
    } else if head.len() < Version::V1.size() {
        return Err(TraceError::Truncated {
            file: path.to_string(),
            location: BinInput::location(0, Version::V1.size()),
            got: head.len(),
            want: Version::V1.size(),
        });
    } else {
        version(head).ok_or_else(|| {
            TraceError::malformed(
                path,
                BinInput::location(0, Version::V1.size()),
                "ver",
                format!(
                    "not a vscsi trace: byte 15 of record 0 is {} (1 in a v1 record) and byte 3 is {} (2 in a v2 \
                     record)",
                    head[15], head[3]
                ),
            )
        })?
    };
    Ok(Box::new(Vscsi { input, file: path.to_string(), version, skip_other, dropped: (0, Vec::new()) }))
}
