//! The event log of a run as CSV (`--events FILE`; `docs/events.md`): one line per event, written as the
//! run goes. The file appears only when the run and the write both succeed: [`Output`] writes under a
//! temporary name beside it, renamed by [`EventCsv::finish`]; on any failure (or a sink dropped
//! unfinished, as when the run fails) the temporary file is removed. A name ending in `.zst` or `.gz` is
//! compressed.

use std::io::Write;

use prefetchsim_core::eventlog::{Event, EventSink};

use crate::error::TraceError;
use crate::writer::Output;

/// The CSV header of an event log.
pub const EVENT_CSV_HEADER: &str = "time,level,instance,kind,block,len,origin";

/// A streaming CSV event sink.
pub struct EventCsv {
    path: String,
    out: Option<Output>,
    err: Option<String>,
    line: String,
}

impl EventCsv {
    /// Start writing the log of `path`.
    pub fn create(path: &str) -> Result<Self, TraceError> {
        let mut out = Output::create(path)?;
        let mut err = None;
        if let Err(e) = writeln!(out, "{EVENT_CSV_HEADER}") {
            err = Some(format!("{path}: {e}"));
        }
        Ok(Self { path: path.to_string(), out: Some(out), err, line: String::with_capacity(96) })
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
            self.err = Some(format!("{}: {err}", self.path));
        }
    }

    fn finish(mut self: Box<Self>) -> Result<(), String> {
        // On an error the output is dropped unfinished, which removes its temporary file.
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        let out = self.out.take().ok_or_else(|| format!("{}: the event log was already finished", self.path))?;
        out.finish().map_err(|e| format!("{}: {e}", self.path))
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
