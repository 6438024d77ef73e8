//! A decoded-trace cache file: `header, chunk*, trailer, footer`, all little-endian.
//!
//! - header: `b"PSIMDECO"`, `u32` [`CACHE_FORMAT`], `u32` identity length,
//!   the identity's JSON text;
//! - chunks ([`super::chunk`]), each with its length and CRC-32;
//! - trailer: `u64` requests, `u32` report length, the source report as JSON (skipped records, time
//!   going backwards: a cached run reports what the decoding run saw), `u32` facts length, the trace's
//!   [`TraceFacts`] as JSON (whether its stream field carries ids: a cached run declares what the format
//!   declared, without opening the trace);
//! - footer (fixed size, at the very end): `u64` trailer offset, `u32` CRC-32 of the trailer,
//!   `b"PSIMEND1"`. A file cut short has no valid footer and is never used.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use prefetchsim_core::engine::SourceReport;
use prefetchsim_core::TraceFacts;

use super::key::{Identity, CACHE_FORMAT};

/// File name extension of cached decodings.
pub const EXTENSION: &str = "psdec";
const MAGIC: &[u8; 8] = b"PSIMDECO";
const END_MAGIC: &[u8; 8] = b"PSIMEND1";
/// Footer bytes: trailer offset, trailer CRC, end magic.
const FOOTER: u64 = 8 + 4 + 8;

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// A cached file opened and checked (header, trailer, footer), positioned at its first chunk.
pub struct Opened {
    /// The file.
    pub file: File,
    /// Where the chunks end (the trailer's offset).
    pub chunks_end: u64,
    /// Requests the chunks hold.
    pub requests: u64,
    /// What the decoding run's source reported.
    pub report: SourceReport,
    /// What the decoded trace declared about its fields.
    pub facts: TraceFacts,
}

/// Open the cached file at `path` if it holds `id`: `Ok(None)` when there is no file or it belongs to
/// another identity; an error when it is damaged (the caller removes it).
pub fn open_checked(path: &Path, id: &Identity) -> io::Result<Option<Opened>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let mut head = [0u8; 16];
    file.read_exact(&mut head).map_err(|_| bad("shorter than its header"))?;
    if &head[..8] != MAGIC {
        return Err(bad("not a decoded-trace cache file"));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
    let id_len = u64::from(u32::from_le_bytes(head[12..16].try_into().unwrap_or_default()));
    if version != CACHE_FORMAT {
        return Ok(None);
    }
    if 16 + id_len + FOOTER > size {
        return Err(bad("shorter than its header and footer"));
    }
    let mut text = vec![0u8; id_len as usize];
    file.read_exact(&mut text)?;
    if text != id.text.as_bytes() {
        return Ok(None);
    }
    let chunks_start = 16 + id_len;
    file.seek(SeekFrom::Start(size - FOOTER))?;
    let mut foot = [0u8; FOOTER as usize];
    file.read_exact(&mut foot)?;
    if &foot[12..] != END_MAGIC {
        return Err(bad("no footer (an incomplete file)"));
    }
    let trailer_at = u64::from_le_bytes(foot[..8].try_into().unwrap_or_default());
    let trailer_crc = u32::from_le_bytes(foot[8..12].try_into().unwrap_or_default());
    if trailer_at < chunks_start || trailer_at + 12 > size - FOOTER {
        return Err(bad("trailer offset out of the file"));
    }
    file.seek(SeekFrom::Start(trailer_at))?;
    let mut trailer = vec![0u8; (size - FOOTER - trailer_at) as usize];
    file.read_exact(&mut trailer)?;
    if crc32fast::hash(&trailer) != trailer_crc {
        return Err(bad("trailer checksum mismatch"));
    }
    let requests = u64::from_le_bytes(trailer[..8].try_into().unwrap_or_default());
    let report_len = u32::from_le_bytes(trailer[8..12].try_into().unwrap_or_default()) as usize;
    let facts_at = 12 + report_len;
    let facts_len = trailer
        .get(facts_at..facts_at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()) as usize)
        .ok_or_else(|| bad("trailer length mismatch"))?;
    if facts_at + 4 + facts_len != trailer.len() {
        return Err(bad("trailer length mismatch"));
    }
    let report: SourceReport =
        serde_json::from_slice(&trailer[12..facts_at]).map_err(|e| bad(format!("report: {e}")))?;
    let facts: TraceFacts = serde_json::from_slice(&trailer[facts_at + 4..]).map_err(|e| bad(format!("facts: {e}")))?;
    file.seek(SeekFrom::Start(chunks_start))?;
    Ok(Some(Opened { file, chunks_end: trailer_at, requests, report, facts }))
}

/// A cached file being written, under a temporary name in the cache folder until [`Writer::commit`];
/// dropped uncommitted, it is removed.
pub struct Writer {
    out: Option<BufWriter<File>>,
    tmp: PathBuf,
    written: u64,
}

impl Writer {
    /// Start a file for `id` in `dir` (created if missing).
    pub fn create(dir: &Path, id: &Identity) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".tmp-{}-{seq}-{}", std::process::id(), id.file_name()));
        let file = File::create(&tmp)?;
        let mut w = Self { out: Some(BufWriter::with_capacity(1 << 20, file)), tmp, written: 0 };
        let mut head = Vec::with_capacity(16 + id.text.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&CACHE_FORMAT.to_le_bytes());
        head.extend_from_slice(&(id.text.len() as u32).to_le_bytes());
        head.extend_from_slice(id.text.as_bytes());
        w.write(&head)?;
        Ok(w)
    }

    /// Append encoded bytes.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.as_mut().ok_or_else(|| bad("writer already closed"))?.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Write the trailer (with the source's `report` and `facts`) and footer and move the file to `dest`
    /// (atomically: readers see the old file, none, or the complete new one).
    pub fn commit(mut self, requests: u64, report: &SourceReport, facts: TraceFacts, dest: &Path) -> io::Result<()> {
        let report = serde_json::to_vec(report).map_err(|e| bad(e.to_string()))?;
        let facts = serde_json::to_vec(&facts).map_err(|e| bad(e.to_string()))?;
        let mut trailer = Vec::with_capacity(16 + report.len() + facts.len());
        trailer.extend_from_slice(&requests.to_le_bytes());
        trailer.extend_from_slice(&(report.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&report);
        trailer.extend_from_slice(&(facts.len() as u32).to_le_bytes());
        trailer.extend_from_slice(&facts);
        let at = self.written;
        self.write(&trailer)?;
        let mut foot = Vec::with_capacity(FOOTER as usize);
        foot.extend_from_slice(&at.to_le_bytes());
        foot.extend_from_slice(&crc32fast::hash(&trailer).to_le_bytes());
        foot.extend_from_slice(END_MAGIC);
        self.write(&foot)?;
        let out = self.out.take().ok_or_else(|| bad("writer already closed"))?;
        // No fsync: a file damaged by a crash fails its checksums and is rebuilt.
        drop(out.into_inner().map_err(io::IntoInnerError::into_error)?);
        std::fs::rename(&self.tmp, dest)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The cached files of `dir`: (path, size, modification time), oldest first.
#[must_use]
pub fn cached_files(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<_> = rd
        .filter_map(Result::ok)
        .filter(|e| {
            e.path().extension().is_some_and(|x| x == EXTENSION)
                && !e.file_name().to_string_lossy().starts_with(".tmp-")
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)))
        })
        .collect();
    v.sort_by_key(|f| f.2);
    v
}

/// A temporary file older than this was left by a process that died while writing.
const STALE_TMP: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The temporary files of `dir` (being written, or left by a process that died), with their age.
#[must_use]
pub fn temporary_files(dir: &Path) -> Vec<(PathBuf, std::time::Duration)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
        .map(|e| {
            let age = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).unwrap_or_default();
            (e.path(), age)
        })
        .collect()
}

/// Remove the oldest cached files until `dir` holds at most `max_bytes`, never `keep` (the file just
/// written, even if it alone is over the cap), and temporary files a dead process left (a day old).
pub fn prune(dir: &Path, max_bytes: u64, keep: &Path) {
    for (path, age) in temporary_files(dir) {
        if age > STALE_TMP {
            let _ = std::fs::remove_file(path);
        }
    }
    let files = cached_files(dir);
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    for (path, size, _) in files {
        if total <= max_bytes {
            break;
        }
        if path != keep && std::fs::remove_file(&path).is_ok() {
            total -= size;
        }
    }
}
