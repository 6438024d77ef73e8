//! The two request sources of the decoded-trace cache: [`Cached`] replays a cached file, [`Recording`]
//! decodes the trace and writes the file as it goes; [`open`] picks one.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_core::{Request, TraceFacts};

use super::chunk::{self, CHUNK_HEAD, CHUNK_REQUESTS};
use super::file::{self, Opened, Writer};
use super::{CacheSettings, Identity};
use crate::error::TraceError;
use crate::spec::TraceSpec;

/// Open the trace file of `spec` through the cache: its cached decoding when there is a valid one, else
/// the trace itself, recording its decoding for the next run. Files below the size threshold, and any
/// trouble with the cache folder (read-only, full), give the trace itself: the cache is never needed.
pub fn open(spec: &TraceSpec, settings: &CacheSettings) -> Result<Box<dyn RequestSource + Send>, TraceError> {
    let format = spec.resolved_format()?;
    let size = std::fs::metadata(&spec.path).map_err(|e| TraceError::io(&spec.path, e))?.len();
    if size < settings.min_trace_bytes {
        return Ok(Box::new(spec.open_file()?));
    }
    let id = Identity::of(spec, format)?;
    let path = settings.dir.join(id.file_name());
    match file::open_checked(&path, &id) {
        Ok(Some(opened)) => {
            // Recently used files are the last pruned.
            let _ = opened.file.set_modified(std::time::SystemTime::now());
            return Ok(Box::new(Cached::new(opened, spec.clone(), path)));
        }
        Ok(None) => {}
        // A file that cannot even be opened (the cache folder is a file, no permission) is not damaged:
        // nothing is removed, and the message said "damaged ... removed".
        Err(e) if !matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof) => {
            eprintln!(
                "prefetchsim: the decoded-trace cache in {} cannot be used ({e}); the trace itself is read",
                settings.dir.display()
            );
        }
        Err(e) => damaged(&path, &e.to_string()),
    }
    let src = spec.open_file()?;
    let writer = Writer::create(&settings.dir, &id).ok();
    Ok(Box::new(Recording {
        inner: Box::new(src),
        writer,
        bytes: Vec::new(),
        requests: 0,
        dest: path,
        settings: settings.clone(),
    }))
}

/// A cached file that failed a check: say so and remove it (the next run rebuilds it).
#[cold]
fn damaged(path: &Path, why: &str) {
    eprintln!(
        "prefetchsim: decoded-trace cache file {} is damaged ({why}): removed; the trace itself is read",
        path.display()
    );
    let _ = std::fs::remove_file(path);
}

/// Replays a cached decoding chunk by chunk, each checked (CRC-32) before its requests are handed out.
/// A chunk that fails its check removes the file and the rest of the run reads the trace itself, from
/// the request after the last one handed out, so the run's requests are those of the trace either way.
pub struct Cached {
    input: BufReader<File>,
    /// Bytes of chunks read so far, and where they end.
    read: u64,
    chunks_len: u64,
    payload: Vec<u8>,
    decoded: Vec<Request>,
    next: usize,
    delivered: u64,
    requests: u64,
    report: SourceReport,
    facts: TraceFacts,
    spec: TraceSpec,
    path: PathBuf,
    fallback: Option<Box<dyn RequestSource + Send>>,
}

impl Cached {
    fn new(o: Opened, spec: TraceSpec, path: PathBuf) -> Self {
        let mut f = o.file;
        // `open_checked` left the file at its first chunk.
        let chunks_start = f.stream_position().unwrap_or(o.chunks_end);
        Self {
            input: BufReader::with_capacity(1 << 20, f),
            read: 0,
            chunks_len: o.chunks_end.saturating_sub(chunks_start),
            payload: Vec::new(),
            decoded: Vec::with_capacity(CHUNK_REQUESTS),
            next: 0,
            delivered: 0,
            requests: o.requests,
            report: o.report,
            facts: o.facts,
            spec,
            path,
            fallback: None,
        }
    }

    /// Read and check the next chunk and decode it: straight into `buf` when its requests fit in
    /// `room` (then `Some(n)`), else into `decoded` (`Some(0)`); `None` at the end of the chunks.
    fn next_chunk(&mut self, buf: &mut Vec<Request>, room: usize) -> Result<Option<usize>, String> {
        if self.read == self.chunks_len {
            return if self.delivered == self.requests {
                Ok(None)
            } else {
                Err(format!("{} requests in its chunks, {} in its trailer", self.delivered, self.requests))
            };
        }
        let mut head = [0u8; CHUNK_HEAD];
        self.input.read_exact(&mut head).map_err(|e| e.to_string())?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as u64;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if self.read + CHUNK_HEAD as u64 + len > self.chunks_len {
            return Err("a chunk runs past the trailer".into());
        }
        self.payload.resize(len as usize, 0);
        self.input.read_exact(&mut self.payload).map_err(|e| e.to_string())?;
        if crc32fast::hash(&self.payload) != crc {
            return Err("chunk checksum mismatch".into());
        }
        self.read += CHUNK_HEAD as u64 + len;
        let n = self.payload.get(..4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        if n <= room {
            let keep = buf.len();
            return match chunk::decode(&self.payload, buf) {
                Ok(n) => {
                    self.delivered += n as u64;
                    Ok(Some(n))
                }
                Err(e) => {
                    buf.truncate(keep);
                    Err(e)
                }
            };
        }
        self.decoded.clear();
        self.next = 0;
        chunk::decode(&self.payload, &mut self.decoded)?;
        Ok(Some(0))
    }

    /// Leave the damaged file for the trace itself, skipping the requests already handed out.
    #[cold]
    fn fall_back(&mut self, why: &str) -> Result<(), SourceError> {
        damaged(&self.path, why);
        let mut src = self.spec.open_file()?;
        let mut skip = self.delivered;
        let mut scratch = Vec::with_capacity(8192);
        while skip > 0 {
            scratch.clear();
            let n = src.fill(&mut scratch, usize::try_from(skip.min(8192)).unwrap_or(8192))?;
            if n == 0 {
                return Err(format!(
                    "{}: ends before the {} requests its cached decoding held",
                    self.spec.path, self.delivered
                )
                .into());
            }
            skip -= n as u64;
        }
        self.fallback = Some(Box::new(src));
        Ok(())
    }
}

impl RequestSource for Cached {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let start = buf.len();
        while buf.len() - start < max {
            if let Some(src) = &mut self.fallback {
                let got = buf.len() - start;
                let n = src.fill(buf, max - got)?;
                if n == 0 {
                    break;
                }
                continue;
            }
            if self.next == self.decoded.len() {
                let room = max - (buf.len() - start);
                match self.next_chunk(buf, room) {
                    Ok(Some(0)) => {}
                    Ok(Some(_)) => continue,
                    Ok(None) => break,
                    Err(why) => {
                        self.fall_back(&why)?;
                        continue;
                    }
                }
            }
            let take = (self.decoded.len() - self.next).min(max - (buf.len() - start));
            buf.extend_from_slice(&self.decoded[self.next..self.next + take]);
            self.next += take;
            self.delivered += take as u64;
        }
        Ok(buf.len() - start)
    }

    fn report(&self) -> SourceReport {
        match &self.fallback {
            Some(src) => src.report(),
            None => self.report.clone(),
        }
    }

    /// What the trace declared when it was decoded (its format's, as the trace itself would declare).
    fn facts(&self) -> TraceFacts {
        self.facts
    }
}

/// Decodes the trace and writes what it hands out to a cache file, committed when the trace has been
/// read to its end without error. A failed write drops the file and the run goes on.
pub struct Recording {
    inner: Box<dyn RequestSource + Send>,
    writer: Option<Writer>,
    bytes: Vec<u8>,
    requests: u64,
    dest: PathBuf,
    settings: CacheSettings,
}

impl Recording {
    fn record(&mut self, reqs: &[Request]) {
        let Some(w) = &mut self.writer else { return };
        self.bytes.clear();
        for part in reqs.chunks(CHUNK_REQUESTS) {
            chunk::encode(part, &mut self.bytes);
        }
        if w.write(&self.bytes).is_err() {
            self.writer = None;
        }
        self.requests += reqs.len() as u64;
    }

    fn commit(&mut self) {
        if let Some(w) = self.writer.take() {
            if w.commit(self.requests, &self.inner.report(), self.inner.facts(), &self.dest).is_ok() {
                file::prune(&self.settings.dir, self.settings.max_bytes, &self.dest);
            }
        }
    }
}

impl RequestSource for Recording {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let start = buf.len();
        let n = match self.inner.fill(buf, max) {
            Ok(n) => n,
            Err(e) => {
                // Nothing is cached of a trace that does not read to its end.
                self.writer = None;
                return Err(e);
            }
        };
        if n == 0 {
            self.commit();
        } else {
            self.record(&buf[start..start + n]);
        }
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.inner.report()
    }

    fn facts(&self) -> TraceFacts {
        self.inner.facts()
    }
}
