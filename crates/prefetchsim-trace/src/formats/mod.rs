//! The trace format registry: one file per format. (Being written.)

use std::io::BufRead;

use crate::error::TraceError;
use crate::record::RecordReader;
use crate::spec::TraceSpec;

/// Registered formats: (name, summary). The CLI, the Python API, errors and docs derive from this list.
pub const FORMATS: &[(&str, &str)] = &[];

/// Registered names, comma-separated (for error messages).
#[must_use]
pub fn choices() -> String {
    FORMATS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The canonical name of format `name` (case-insensitive, aliases accepted).
pub fn canonical(path: &str, name: &str) -> Result<&'static str, TraceError> {
    let lower = name.to_ascii_lowercase();
    FORMATS.iter().find(|(n, _)| *n == lower).map(|(n, _)| *n).ok_or_else(|| TraceError::UnknownFormat {
        file: path.into(),
        name: name.into(),
        choices: choices(),
    })
}

/// A reader of `format` over the decompressed `input` of `path`.
pub fn open(
    format: &str,
    path: &str,
    _input: Box<dyn BufRead + Send>,
    _spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    Err(TraceError::UnknownFormat { file: path.into(), name: format.into(), choices: choices() })
}
