//! The trace the server served (`--record FILE`), in prefetchsim's own CSV (`prefetchsim_csv`): one line
//! per read or write the levels saw, in the order they saw them — `time_ns` since the server started,
//! `op`, the byte offset and byte size (the comment line says `block_size=1`, so the reader cuts the
//! bytes into blocks of whatever block size it is opened with, as the server did), stream 0, and the
//! client (connection number, from 0). Replayed in the instant engine with the same config and block
//! size, it makes the levels take the same decisions (tests/test_serve.py).
//!
//! The file appears only complete: lines go to a hidden temporary file beside it, renamed when the server
//! stops cleanly; a failed write is reported then and leaves no file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes the served requests.
pub struct Recorder {
    out: Option<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    error: Option<String>,
}

impl Recorder {
    /// Start recording to `path` (through a temporary file beside it).
    pub fn create(path: &Path) -> Result<Self, String> {
        let name = path.file_name().ok_or_else(|| format!("{}: not a file name", path.display()))?;
        let tmp = path.with_file_name(format!(".{}.{}.partial", name.to_string_lossy(), std::process::id()));
        let file = File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut out = BufWriter::new(file);
        let header = "# prefetchsim trace: block_size=1\ntime_ns,op,first,len,stream,client\n";
        let error = out.write_all(header.as_bytes()).err().map(|e| format!("{}: {e}", path.display()));
        Ok(Self { out: Some(out), tmp, path: path.to_path_buf(), error })
    }

    /// Record one request (`offset`, `size` in bytes). The first write error is kept for [`Self::finish`].
    pub fn record(&mut self, time_ns: u64, write: bool, offset: u64, size: u32, client: u32) {
        if self.error.is_some() {
            return;
        }
        if let Some(out) = &mut self.out {
            let op = if write { "write" } else { "read" };
            if let Err(e) = writeln!(out, "{time_ns},{op},{offset},{size},0,{client}") {
                self.error = Some(format!("{}: {e}", self.path.display()));
            }
        }
    }

    /// Flush and rename into place; on any error, remove the temporary file and say why.
    pub fn finish(mut self) -> Result<(), String> {
        let result = match (self.error.take(), self.out.take()) {
            (Some(e), _) => Err(e),
            (None, None) => Err(format!("{}: already finished", self.path.display())),
            (None, Some(out)) => out
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
                .and_then(|()| std::fs::rename(&self.tmp, &self.path))
                .map_err(|e| format!("{}: {e}", self.path.display())),
        };
        if result.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        result
    }
}

impl Drop for Recorder {
    /// A recorder dropped without [`Recorder::finish`] (the server failed) leaves no file.
    fn drop(&mut self) {
        if self.out.is_some() {
            self.out = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
