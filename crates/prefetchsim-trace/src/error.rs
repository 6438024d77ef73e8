//! Trace errors: every one names the file and, for bad data, the record or line and the field.

use std::fmt;

/// Where in a trace file something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A text trace: 1-based line number.
    Line(u64),
    /// A binary trace: 0-based record index and byte offset of the record.
    Record {
        /// Record index.
        index: u64,
        /// Byte offset of the record in the decompressed stream.
        offset: u64,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
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

    /// A bad option.
    pub fn option(key: impl Into<String>, message: impl Into<String>) -> Self {
        TraceError::Option { key: key.into(), message: message.into() }
    }
}
