//! The project's file-level trace `multi-real`: CSV `time_s,process,file_id,offset,size,op` with that header,
//! one line per `read`/`pread64` of four applications running together (made for prefetchsim, recorded
//! with `strace`; see the traces README). Files are placed on one block address space by a layout model.
//!
//! Mapping: `time_ns` from time_s, `client` = process, `stream` = file_id, `addr` = the byte address of
//! `offset` in the file after layout ([`AddrUnit::Bytes`]), `size` = size, `op` from op (`R`/`W`).
//!
//! Layouts (option `layout`):
//! - `contiguous` (default): files laid out back to back in file-id order, each starting on a
//!   `block_size` boundary (a file of size 0 takes one block). File sizes come from the companion list `file_id,size_bytes_seen` beside
//!   the trace (`X.csv.gz` → `X.files.csv.gz`, any compression), or from option `files` (a path), or,
//!   when neither exists, from a first streaming pass over the trace (each file's largest end offset).
//!   A read past its file's laid-out size, or of a file missing from the list, is an error.
//! - `butt_hash`: the map of the Butt/Gniady/Hu simulator (SIGMETRICS'05):
//!   `lbn = ((file_id << 11) + block × (block_size / 512)) mod 17783240` sectors, with
//!   `block = offset / block_size`; files get 1 MiB-spaced regions of a Cheetah 9LP-sized disk (large
//!   files may overlap others). `addr = lbn × 512 + offset mod block_size`. Needs `block_size` to be a
//!   multiple of 512.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use hashbrown::HashMap;
use prefetchsim_core::Op;

use super::input::{LineParser, TextInput, TextReader};
use super::parse::{
    bad_field, check_keys, field_count_error, param_str, scaled_field, show, split_delim, u64_field, StreamIds,
};
use crate::compress;
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const FIELDS: [&str; 6] = ["time_s", "process", "file_id", "offset", "size", "op"];
const LIST_FIELDS: [&str; 2] = ["file_id", "size_bytes_seen"];

/// Sectors of the disk the Butt et al. map wraps around (a Seagate Cheetah 9LP).
pub const BUTT_HASH_SECTORS: u64 = 17_783_240;

type FileMap = HashMap<u64, (u64, u64), foldhash::fast::FixedState>;

/// Where files go on the block address space.
enum Layout {
    /// file id → (first byte, laid-out size in bytes); `source` says where the sizes came from.
    Contiguous { files: FileMap, source: String },
    /// The Butt/Gniady/Hu hash.
    ButtHash { block_size: u64 },
}

impl Layout {
    /// The byte address of `offset..offset+size` in file `id`.
    fn place(&self, file: &str, n: u64, id: u64, offset: u64, size: u64) -> Result<u64, TraceError> {
        match self {
            Layout::Contiguous { files, source } => {
                let Some(&(start, len)) = files.get(&id) else {
                    return Err(bad_field(file, n, "file_id", format!("file {id} is not in the file list ({source})")));
                };
                match offset.checked_add(size) {
                    Some(end) if end <= len => Ok(start + offset),
                    _ => Err(bad_field(
                        file,
                        n,
                        "offset",
                        format!("read of {size} bytes at {offset} passes the end of file {id}, {len} bytes ({source})"),
                    )),
                }
            }
            Layout::ButtHash { block_size } => {
                let m = u128::from(BUTT_HASH_SECTORS);
                let block = offset / block_size;
                let lbn = (u128::from(id) * 2048 + u128::from(block) % m * u128::from(block_size / 512)) % m;
                // lbn < 2^25, so the byte address fits easily.
                Ok(lbn as u64 * 512 + offset % block_size)
            }
        }
    }
}

struct MultiReal {
    layout: Layout,
    files: StreamIds,
    processes: StreamIds,
}

/// The fields of one data line, or `None` for the header.
struct Line<'a> {
    fields: [&'a [u8]; 6],
}

fn split<'a>(file: &str, n: u64, line: &'a [u8]) -> Result<Option<Line<'a>>, TraceError> {
    if n == 1 && line.starts_with(b"time_s") {
        return Ok(None);
    }
    let mut fields = [&b""[..]; 6];
    let count = split_delim(line, b',', &mut fields);
    if count != FIELDS.len() {
        return Err(field_count_error(file, n, count, &FIELDS));
    }
    Ok(Some(Line { fields }))
}

impl LineParser for MultiReal {
    /// file_id: file 0 is a real file.
    fn stream_ids(&self) -> bool {
        true
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        let Some(Line { fields: f }) = split(file, n, line)? else { return Ok(None) };
        let time_ns = scaled_field(file, n, "time_s", f[0], 9)?;
        let client = self.processes.field(file, n, "process", f[1])?;
        let id = u64_field(file, n, "file_id", f[2])?;
        let stream = self.files.get(id).ok_or_else(|| bad_field(file, n, "file_id", "too many large file ids"))?;
        let offset = u64_field(file, n, "offset", f[3])?;
        let size = u64_field(file, n, "size", f[4])?;
        let op = match f[5] {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => return Err(bad_field(file, n, "op", format!("unknown op '{}', expected R or W", show(other)))),
        };
        let addr = self.layout.place(file, n, id, offset, size)?;
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        AddrUnit::Bytes
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        ("offset", "size")
    }
}

/// The companion file list beside `trace`, if one exists.
fn companion(trace: &str) -> Option<String> {
    let mut base = trace;
    for suf in compress::SUFFIXES {
        if let Some(b) = base.strip_suffix(suf) {
            base = b;
            break;
        }
    }
    let base = base.strip_suffix(".csv").unwrap_or(base);
    std::iter::once("")
        .chain(compress::SUFFIXES.iter().copied())
        .map(|suf| format!("{base}.files.csv{suf}"))
        .find(|p| Path::new(p).is_file())
}

/// The file-size list a read of `path` with `spec` takes its layout from (the `files` option, else the
/// companion beside the trace), or `None` (a first pass over the trace sizes the files). The decoded-trace
/// cache keys on it: the list changes the decoding as much as the trace does.
pub(crate) fn file_list(path: &str, spec: &TraceSpec) -> Result<Option<String>, TraceError> {
    Ok(param_str(&spec.params, "files")?.or_else(|| companion(path)))
}

/// File sizes from a list `file_id,size_bytes_seen` (header optional). Strict whatever `skip_bad` says:
/// a wrong list would misplace every file.
fn read_list(path: &str) -> Result<BTreeMap<u64, u64>, TraceError> {
    let mut input = TextInput::new(compress::open(path)?, path);
    let mut sizes = BTreeMap::new();
    while let Some((n, line)) = input.next_data_line()? {
        if n == 1 && line.starts_with(b"file_id") {
            continue;
        }
        let entry = || -> Result<(u64, u64), TraceError> {
            let mut f = [&b""[..]; 2];
            let count = split_delim(line, b',', &mut f);
            if count != 2 {
                return Err(field_count_error(path, n, count, &LIST_FIELDS));
            }
            Ok((u64_field(path, n, "file_id", f[0])?, u64_field(path, n, "size_bytes_seen", f[1])?))
        };
        let (id, size) = entry().map_err(|e| e.at_line_offset(n, input.line_offset()))?;
        if sizes.insert(id, size).is_some() {
            let e = bad_field(path, n, "file_id", format!("file {id} is listed twice"));
            return Err(e.at_line_offset(n, input.line_offset()));
        }
    }
    Ok(sizes)
}

/// File sizes from a first pass over the trace: each file's largest end offset. With `skip_bad`, bad lines
/// are passed over here: the main pass counts and reports them (and fails past the limit).
fn scan_sizes(path: &str, skip_bad: bool) -> Result<BTreeMap<u64, u64>, TraceError> {
    let mut input = TextInput::new(compress::open(path)?, path);
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    loop {
        let (n, line) = match input.next_data_line() {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) if skip_bad && e.is_skippable() => continue,
            Err(e) => return Err(e),
        };
        let extent = || -> Result<Option<(u64, u64)>, TraceError> {
            let Some(Line { fields: f }) = split(path, n, line)? else { return Ok(None) };
            let id = u64_field(path, n, "file_id", f[2])?;
            let offset = u64_field(path, n, "offset", f[3])?;
            let size = u64_field(path, n, "size", f[4])?;
            let end = offset.checked_add(size).ok_or_else(|| {
                bad_field(path, n, "size", format!("offset {offset} + size {size} overflows 64 bits"))
            })?;
            Ok(Some((id, end)))
        };
        match extent() {
            Ok(Some((id, end))) => {
                let e = sizes.entry(id).or_insert(0);
                *e = (*e).max(end);
            }
            Ok(None) => {}
            Err(_) if skip_bad => {}
            Err(e) => return Err(e.at_line_offset(n, input.line_offset())),
        }
    }
    Ok(sizes)
}

/// Lay files out back to back in id order, each on a block boundary. A file of size 0 still takes one
/// block: a 0-byte read is a request of the block its address falls in, which must be its own file's, not
/// the next file's first block.
fn contiguous(sizes: &BTreeMap<u64, u64>, block_size: u64, source: String) -> Result<Layout, TraceError> {
    let mut files = FileMap::with_capacity_and_hasher(sizes.len(), Default::default());
    let mut next = 0u64;
    for (&id, &size) in sizes {
        files.insert(id, (next, size));
        let blocks = size.div_ceil(block_size).max(1);
        next = blocks.checked_mul(block_size).and_then(|b| next.checked_add(b)).ok_or_else(|| {
            TraceError::option("trace.params.layout", format!("files of {source} overflow 64-bit byte addresses"))
        })?;
    }
    Ok(Layout::Contiguous { files, source })
}

/// A multi-real reader over `input`; the contiguous layout may read the companion list or make a first pass
/// over `path`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    check_keys("multi_real", &spec.params, &["layout", "files"])?;
    let files_opt = param_str(&spec.params, "files")?;
    let layout = match param_str(&spec.params, "layout")?.map(|s| s.to_ascii_lowercase().replace('-', "_")).as_deref() {
        None | Some("contiguous") => {
            let (sizes, source) = match file_list(path, spec)? {
                Some(list) => (read_list(&list)?, format!("sizes from {list}")),
                None => (scan_sizes(path, spec.skip_bad > 0)?, "sizes from a first pass over the trace".to_string()),
            };
            contiguous(&sizes, spec.block_size, source)?
        }
        Some("butt_hash") => {
            if files_opt.is_some() {
                return Err(TraceError::option("trace.params.files", "only the contiguous layout uses a file list"));
            }
            if spec.block_size % 512 != 0 {
                return Err(TraceError::option(
                    "trace.block_size",
                    format!("{} bytes: the butt_hash layout needs a multiple of 512", spec.block_size),
                ));
            }
            Layout::ButtHash { block_size: spec.block_size }
        }
        Some(other) => {
            return Err(TraceError::option(
                "trace.params.layout",
                format!("unknown layout '{other}'; choose contiguous or butt_hash"),
            ))
        }
    };
    let parser = MultiReal { layout, files: StreamIds::default(), processes: StreamIds::default() };
    Ok(TextReader::boxed(input, path, parser))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn butt_hash_spaces_files_by_one_mebibyte_and_wraps_at_the_disk_end() {
        let l = Layout::ButtHash { block_size: 4096 };
        assert_eq!(l.place("f", 1, 1, 64, 10).unwrap(), 2048 * 512 + 64);
        assert_eq!(l.place("f", 1, 2, 4096 * 3 + 5, 10).unwrap(), (2 * 2048 + 3 * 8) * 512 + 5);
        let wrap = (8683 * 2048 + 8) % BUTT_HASH_SECTORS;
        assert_eq!(l.place("f", 1, 8683, 4096, 1).unwrap(), wrap * 512);
        assert!(l.place("f", 1, u64::MAX, u64::MAX, 1).is_ok());
    }

    #[test]
    fn contiguous_layout_starts_each_file_on_a_block_boundary() {
        let sizes = BTreeMap::from([(0, 832), (1, 4096), (3, 1)]);
        let l = contiguous(&sizes, 4096, "test".into()).unwrap();
        assert_eq!(l.place("f", 1, 1, 0, 4096).unwrap(), 4096);
        assert_eq!(l.place("f", 1, 3, 0, 1).unwrap(), 8192);
        assert!(l.place("f", 1, 1, 1, 4096).is_err());
        assert!(l.place("f", 1, 2, 0, 1).is_err());
    }

    /// A file of size 0 keeps a block of its own: a 0-byte read of it at offset 0 was the next file's
    /// first block (two files sharing one block in the caches).
    #[test]
    fn a_file_of_size_0_takes_a_block_of_its_own() {
        let sizes = BTreeMap::from([(0, 0), (1, 100)]);
        let l = contiguous(&sizes, 4096, "test".into()).unwrap();
        assert_eq!(l.place("f", 1, 0, 0, 0).unwrap(), 0);
        assert_eq!(l.place("f", 1, 1, 0, 100).unwrap(), 4096);
    }
}
