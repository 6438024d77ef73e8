//! Transparent decompression: gzip (also multi-member, as `pigz` and `cat a.gz b.gz` write), zstd, xz and
//! bzip2, recognised by their magic bytes rather than the file name, so a mis-named file still opens and a
//! plain file is never mangled.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use crate::error::TraceError;

/// Size of the buffer in front of the readers: large, because decompressors are fastest in big steps.
pub const BUFFER_SIZE: usize = 256 * 1024;
/// Size of the buffer between the file and a decompressor.
const RAW_BUFFER_SIZE: usize = 64 * 1024;

/// A compression recognised by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed (or not a compression we know: read as is).
    None,
    /// gzip (RFC 1952), any number of members.
    Gzip,
    /// Zstandard, any number of frames.
    Zstd,
    /// xz, any number of streams.
    Xz,
    /// bzip2, any number of streams.
    Bzip2,
}

impl Compression {
    /// Bytes needed to recognise every compression.
    pub const MAGIC_LEN: usize = 6;

    /// The compression whose magic starts `head`.
    #[must_use]
    pub fn from_magic(head: &[u8]) -> Self {
        match head {
            [0x1f, 0x8b, ..] => Self::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Self::Zstd,
            // A zstd skippable frame (magic 0x184D2A50..=0x184D2A5F, little-endian) may precede the data.
            [b, 0x2a, 0x4d, 0x18, ..] if b & 0xf0 == 0x50 => Self::Zstd,
            [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Self::Xz,
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Self::Bzip2,
            _ => Self::None,
        }
    }

    /// Its usual name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "plain",
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
            Self::Xz => "xz",
            Self::Bzip2 => "bzip2",
        }
    }
}

/// File-name suffixes of the compressions, for stripping before name-based detection.
pub const SUFFIXES: &[&str] = &[".gz", ".gzip", ".zst", ".zstd", ".xz", ".bz2", ".bzip2"];

/// Tags decompression errors with the compression, so that "corrupt deflate stream" says which file
/// format was damaged; the caller adds the file name.
struct Tagged<R> {
    inner: R,
    kind: Compression,
}

impl<R: Read> Read for Tagged<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted {
                e
            } else {
                io::Error::new(e.kind(), format!("corrupt or truncated {} stream: {e}", self.kind.name()))
            }
        })
    }
}

/// Read up to `buf.len()` bytes (fewer only at the end of the file).
fn read_head(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Open `path` and return a buffered reader over its decompressed bytes.
///
/// Errors while reading (a corrupt or truncated compressed stream) come out of the reader as
/// `io::Error`s; the trace readers report them as [`TraceError::Io`] naming the file. An empty file is an
/// empty stream.
pub fn open(path: &str) -> Result<Box<dyn BufRead + Send>, TraceError> {
    let io_err = |e| TraceError::io(path, e);
    let mut f = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; Compression::MAGIC_LEN];
    let n = read_head(&mut f, &mut magic).map_err(io_err)?;
    f.seek(SeekFrom::Start(0)).map_err(|e| {
        // A pipe (`<(zcat t.gz)`, a FIFO) has no start to come back to, and a trace is read more than once
        // (format detection, the footprint pass, one pass per run without the decoded copy).
        io_err(io::Error::new(e.kind(), format!("{e}: a pipe or stream cannot be read again; save it to a file first")))
    })?;
    let kind = Compression::from_magic(&magic[..n]);
    if kind == Compression::None {
        return Ok(Box::new(BufReader::with_capacity(BUFFER_SIZE, f)));
    }
    let decoded = decode(Box::new(BufReader::with_capacity(RAW_BUFFER_SIZE, f)), kind).map_err(io_err)?;
    Ok(Box::new(BufReader::with_capacity(BUFFER_SIZE, ReadAhead::spawn(decoded))))
}

/// Bytes a decompression thread hands over at a time.
const AHEAD_CHUNK: usize = 1 << 20;
/// Chunks decompressed ahead of the reader at most.
const AHEAD_CHUNKS: usize = 2;

/// Decompression on a thread of its own (a pipeline): a compressed trace is decompressed while the
/// previous bytes are parsed and simulated, so on a free second core a run takes about the longer of
/// the two instead of their sum. The thread ends at the end of the stream (handing over an empty
/// buffer), at its first error (handed to the reader in order) or when the reader is dropped. A thread
/// that stops without either (a panic) is an error, never the end of the trace.
struct ReadAhead {
    rx: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    /// Emptied buffers go back to the thread for reuse.
    back: std::sync::mpsc::SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ReadAhead {
    fn spawn(mut inner: Box<dyn BufRead + Send>) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<io::Result<Vec<u8>>>(AHEAD_CHUNKS);
        let (back, back_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(AHEAD_CHUNKS + 2);
        std::thread::spawn(move || loop {
            let mut buf = back_rx.try_recv().unwrap_or_default();
            buf.resize(AHEAD_CHUNK, 0);
            let mut n = 0;
            while n < buf.len() {
                match inner.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        if n > 0 {
                            buf.truncate(n);
                            let _ = tx.send(Ok(buf));
                        }
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            buf.truncate(n);
            // An empty buffer is the end of the stream.
            if tx.send(Ok(buf)).is_err() || n == 0 {
                return;
            }
        });
        Self { rx, back, cur: Vec::new(), pos: 0, done: false }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(buf)) if buf.is_empty() => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(Ok(buf)) => {
                    let old = std::mem::replace(&mut self.cur, buf);
                    let _ = self.back.try_send(old);
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(io::Error::other("the decompression thread stopped before the end of the stream"));
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The decompressed bytes of `raw`, compressed as `kind` (from [`Compression::from_magic`] of its first
/// bytes). Also for input that is not a file: fuzzing and tests decode bytes held in memory.
pub fn decode(raw: Box<dyn BufRead + Send>, kind: Compression) -> io::Result<Box<dyn BufRead + Send>> {
    let decoded: Box<dyn Read + Send> = match kind {
        Compression::None => return Ok(raw),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(raw)?),
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
    };
    Ok(Box::new(BufReader::with_capacity(BUFFER_SIZE, Tagged { inner: decoded, kind })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_name_the_compression() {
        assert_eq!(Compression::from_magic(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(Compression::from_magic(&[0x28, 0xb5, 0x2f, 0xfd]), Compression::Zstd);
        assert_eq!(Compression::from_magic(&[0x5e, 0x2a, 0x4d, 0x18]), Compression::Zstd);
        assert_eq!(Compression::from_magic(b"\xfd7zXZ\0"), Compression::Xz);
        assert_eq!(Compression::from_magic(b"BZh9"), Compression::Bzip2);
        assert_eq!(Compression::from_magic(b"BZ"), Compression::None);
        assert_eq!(Compression::from_magic(b"1,2,3"), Compression::None);
        assert_eq!(Compression::from_magic(b""), Compression::None);
    }

    /// Hands out `good`, then panics.
    struct Panics(io::Cursor<Vec<u8>>);

    impl Read for Panics {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(out)?;
            assert!(n > 0, "the decoder broke");
            Ok(n)
        }
    }

    impl BufRead for Panics {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            self.0.fill_buf()
        }
        fn consume(&mut self, n: usize) {
            self.0.consume(n);
        }
    }

    #[test]
    fn the_read_ahead_thread_hands_over_every_byte_and_a_panic_is_an_error_not_an_end() {
        let bytes: Vec<u8> = (0..3 * AHEAD_CHUNK + 7).map(|i| (i % 251) as u8).collect();
        let mut all = Vec::new();
        ReadAhead::spawn(Box::new(io::Cursor::new(bytes.clone()))).read_to_end(&mut all).unwrap();
        assert_eq!(all, bytes);
        let mut some = Vec::new();
        let err = ReadAhead::spawn(Box::new(Panics(io::Cursor::new(bytes.clone())))).read_to_end(&mut some);
        assert!(err.unwrap_err().to_string().contains("stopped before the end"));
    }
}
