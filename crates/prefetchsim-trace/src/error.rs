//! Trace errors: every one names the file and, for bad data, the record or line and the field.

use std::fmt;

/// Where in a trace file something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A text trace: 1-based line number and the byte offset of the line's start in the decompressed stream.
    Line {
        /// Line number.
        line: u64,
        /// Byte offset of the line.
        offset: u64,
    },
    /// A binary trace: 0-based record index and byte offset of the record.
    Record {
        /// Record index.
        index: u64,
        /// Byte offset of the record in the decompressed stream.
        offset: u64,
    },
}

impl Location {
    /// Line `line` of a text trace whose offset is not known yet: [`TraceError::at_line_offset`] fills it
    /// in where the line is read.
    #[must_use]
    pub fn line(line: u64) -> Self {
        Location::Line { line, offset: 0 }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { line, offset } => write!(f, "line {line} (byte {offset})"),
            Location::Record { index, offset } => write!(f, "record {index} (byte {offset})"),
        }
    }
}

/// An error while opening, detecting or reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file cannot be opened or read (also: a corrupt compression frame).
    #[error("{file}: {source}")]
    Io {
        /// File path as given.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A record cannot be parsed.
    #[error("{file}: {location}: field '{field}': {message}")]
    Malformed {
        /// File path.
        file: String,
        /// Line or record.
        location: Location,
        /// Field name (as the format names it).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A binary file ends inside a record.
    #[error("{file}: {location}: truncated record: {got} of {want} bytes")]
    Truncated {
        /// File path.
        file: String,
        /// The incomplete record.
        location: Location,
        /// Bytes present.
        got: usize,
        /// Record size.
        want: usize,
    },
    /// More bad records than `skip_bad` allows; `last` is the first one past the limit.
    #[error("{last} (bad record {n} of this trace, more than skip_bad = {limit} allows)", n = limit + 1)]
    SkipLimit {
        /// The `skip_bad` limit.
        limit: u64,
        /// The bad record past the limit.
        last: Box<TraceError>,
    },
    /// The format name is not registered.
    #[error("{file}: unknown trace format '{name}'; choose one of {choices}")]
    UnknownFormat {
        /// File path.
        file: String,
        /// The name given.
        name: String,
        /// The registered names.
        choices: String,
    },
    /// Detection could not decide.
    #[error("{file}: cannot tell the trace format ({why}); name it explicitly (one of {choices})")]
    Undetected {
        /// File path.
        file: String,
        /// Why not.
        why: String,
        /// The registered names.
        choices: String,
    },
    /// A bad record in a trace whose format was detected, not given, where the name or the records before
    /// it leave no doubt about the format: the reader's own error, plainly (telling the user to name the
    /// format, as [`TraceError::Undetected`] does, misled: the format was right, the record is bad).
    #[error("{error} ({format}, detected from {how})")]
    InDetected {
        /// The detected format.
        format: &'static str,
        /// What identified it ("the file name", "its first records").
        how: String,
        /// The reader's error.
        error: Box<TraceError>,
    },
    /// A bad trace option (block size, CSV column spec, generator parameter …).
    #[error("{key}: {message}")]
    Option {
        /// The option's key path (`trace.block_size`, `trace.csv.obj-id-col`).
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl TraceError {
    /// An I/O error on `file`.
    pub fn io(file: &str, source: std::io::Error) -> Self {
        TraceError::Io { file: file.to_string(), source }
    }

    /// A malformed field.
    pub fn malformed(file: &str, location: Location, field: &str, message: impl Into<String>) -> Self {
        TraceError::Malformed { file: file.to_string(), location, field: field.to_string(), message: message.into() }
    }

    /// This error with the byte offset of text line `line` filled in, when it is about that line.
    #[must_use]
    pub fn at_line_offset(mut self, line: u64, offset: u64) -> Self {
        if let TraceError::Malformed { location: Location::Line { line: l, offset: o }, .. } = &mut self {
            if *l == line {
                *o = offset;
            }
        }
        self
    }

    /// Whether reading can go on after this error with the next record: true for a malformed record (the
    /// reader has moved past it), false for I/O errors and corrupt compression (the stream is broken), a
    /// truncated binary tail (nothing follows it to re-synchronise on) and every error of opening.
    #[must_use]
    pub fn is_skippable(&self) -> bool {
        matches!(self, TraceError::Malformed { .. })
    }

    /// A bad option.
    pub fn option(key: impl Into<String>, message: impl Into<String>) -> Self {
        TraceError::Option { key: key.into(), message: message.into() }
    }
}
