//! The event log of a run as CSV (`--events FILE`; `docs/events.md`): one line per event, written as the
//! run goes. The file appears only when the run and the write both succeed: the lines go to a temporary
//! file beside it, renamed over it by [`EventCsv::finish`]; on any failure (or a sink dropped unfinished)
//! the temporary file is removed. A name ending in `.zst` or `.gz` is compressed.

use std::io::Write;
use std::path::{Path, PathBuf};

use prefetchsim_core::eventlog::{Event, EventSink};

use crate::error::TraceError;
use crate::writer::Output;

/// The CSV header of an event log.
pub const EVENT_CSV_HEADER: &str = "time,level,instance,kind,block,len,origin";

/// A streaming CSV event sink.
pub struct EventCsv {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<Output>,
    err: Option<String>,
    line: String,
}

impl EventCsv {
    /// Start writing the log of `path` (into a temporary file beside it).
    pub fn create(path: &str) -> Result<Self, TraceError> {
        let target = PathBuf::from(path);
        let name =
            target.file_name().ok_or_else(|| TraceError::option("events", format!("{path}: not a file name")))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = target.with_file_name(tmp_name);
        let tmp_str = tmp.to_string_lossy().into_owned();
        // Compression follows the final name's extension.
        let mut out = Output::create_as(&tmp_str, path)?;
        let mut err = None;
        if let Err(e) = writeln!(out, "{EVENT_CSV_HEADER}") {
            err = Some(format!("{path}: {e}"));
        }
        Ok(Self { path: target, tmp, out: Some(out), err, line: String::with_capacity(96) })
    }

    /// The file the log goes to.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl EventSink for EventCsv {
    fn record(&mut self, e: &Event) {
        if self.err.is_some() {
            return;
        }
        let Some(out) = &mut self.out else { return };
        use std::fmt::Write as _;
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{},{},{},{},{},{},{}",
            e.time,
            e.level,
            e.instance,
            e.ev.kind.name(),
            e.ev.block,
            e.ev.len,
            e.ev.origin.name()
        );
        if let Err(err) = out.write_all(self.line.as_bytes()) {
            self.err = Some(format!("{}: {err}", self.path.display()));
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        let out = self.out.take();
        let result = match (self.err.take(), out) {
            (Some(e), _) => Err(e),
            (None, None) => Err(format!("{}: the event log was already finished", self.path.display())),
            (None, Some(out)) => out
                .finish()
                .and_then(|()| std::fs::rename(&self.tmp, &self.path))
                .map_err(|e| format!("{}: {e}", self.path.display())),
        };
        if result.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        result
    }
}

impl Drop for EventCsv {
    fn drop(&mut self) {
        // Unfinished (the run failed or stopped): no half-written log is left behind.
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prefetchsim_core::eventlog::{EventKind, LevelEvent, Origin};

    fn ev(block: u64) -> Event {
        Event {
            time: 3,
            level: 1,
            instance: 2,
            ev: LevelEvent::block(EventKind::PrefetchIssued, Origin::Native, block),
        }
    }

    #[test]
    fn the_log_appears_only_when_finished() {
        let dir = std::env::temp_dir().join(format!("psim-ev-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ev.csv");
        let p = path.to_str().unwrap();
        let mut s = Box::new(EventCsv::create(p).unwrap());
        s.record(&ev(7));
        assert!(!path.exists(), "nothing under the final name while writing");
        s.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{EVENT_CSV_HEADER}\n3,1,2,prefetch_issued,7,1,native\n"));
        // Dropped unfinished (a failed run): no file, no temporary left.
        std::fs::remove_file(&path).unwrap();
        let mut s = EventCsv::create(p).unwrap();
        s.record(&ev(8));
        drop(s);
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "temporary file removed");
        // A directory that does not exist: an error naming the file.
        let bad = dir.join("no/such/dir/ev.csv");
        let e = EventCsv::create(bad.to_str().unwrap()).err().unwrap();
        assert!(e.to_string().contains("ev.csv"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
