//! The trace the server served (`--record FILE`), in prefetchsim's own CSV (`prefetchsim_csv`): one line
//! per read or write the levels saw, in the order they saw them — `time_ns` since the server started,
//! `op`, the byte offset and byte size (the comment line says `block_size=1`, so the reader cuts the
//! bytes into blocks of whatever block size it is opened with, as the server did), stream 0, and the
//! client (connection number, from 0). A second comment line says the stream field carries no ids
//! (`stream_ids=false`: the server's levels were built so, `prefetchsim_core::TraceFacts`). Replayed in the instant engine with the same config and block
//! size, it makes the levels take the same decisions (tests/test_serve.py).
//!
//! The file appears only complete: lines go to a hidden temporary file beside it, renamed when the server
//! stops cleanly; a failed write is reported then and leaves no file. A server killed with -9 leaves its
//! temporary file; the next server recording beside it removes it.

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
        let name = name.to_string_lossy();
        remove_stale_partials(path, &name);
        let tmp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::create(&tmp).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut out = BufWriter::new(file);
        // NBD requests carry no stream: every line's stream 0 means "no stream id", and the file says so, so
        // that its replay builds the levels the server built (stream 0 detected, not one stream).
        let header =
            "# prefetchsim trace: block_size=1\n# prefetchsim stream_ids=false\ntime_ns,op,first,len,stream,client\n";
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

/// Remove the temporary files `.NAME.PID.partial` beside `path` that servers killed with -9 left (the
/// process `PID` no longer exists): nothing else would ever remove them. A live server's is kept.
fn remove_stale_partials(path: &Path, name: &str) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".partial"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        // A process runs while /proc has its folder (checked only where /proc is there at all).
        let proc = Path::new("/proc");
        let gone = pid > 0 && proc.join("self").exists() && !proc.join(pid.to_string()).exists();
        if gone {
            let _ = std::fs::remove_file(e.path());
        }
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

#[cfg(test)]
mod tests {
    use super::Recorder;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("prefetchsim-serve-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A server killed with -9 leaves its hidden partial file; the next start beside it removes the
    /// partials of processes that no longer run (a pid above any pid_max), not those of live ones (pid 1).
    #[test]
    fn stale_partials_of_dead_servers_are_removed_at_start() {
        let d = dir("stale");
        let dead = d.join(".served.csv.2147483000.partial");
        let live = d.join(".served.csv.1.partial");
        let other = d.join(".other.csv.2147483000.partial");
        for p in [&dead, &live, &other] {
            std::fs::write(p, "").unwrap();
        }
        let r = Recorder::create(&d.join("served.csv")).unwrap();
        let (gone, kept, untouched) = (!dead.exists(), live.exists(), other.exists());
        drop(r);
        let _ = std::fs::remove_dir_all(&d);
        assert!(gone && kept && untouched, "dead removed {gone}, live kept {kept}, other name kept {untouched}");
    }

    /// The error names the user's path, not the hidden temporary file.
    #[test]
    fn the_error_names_the_record_path() {
        let e = Recorder::create(std::path::Path::new("/nonexistent-folder/x.csv")).err().unwrap();
        assert!(e.starts_with("/nonexistent-folder/x.csv: ") && !e.contains("partial"), "{e}");
    }
}
