//! # prefetchsim-trace
//!
//! Trace readers (streaming, never the whole file in memory), transparent decompression, format
//! detection, conversion of records to block requests, trace statistics, writers and synthetic
//! workloads for prefetchsim. It never simulates.
//!
//! ```no_run
//! use prefetchsim_trace::TraceSpec;
//! let mut spec = TraceSpec::new("traces/arc/OLTP.lis.zst");
//! let src = spec.open_file().unwrap();
//! for req in src.take(3) {
//!     println!("{:?}", req.unwrap());
//! }
//! ```

/// The footprint's block set lives in the core (its batch runner counts the footprint while decoding).
pub use prefetchsim_core::engine::blockset;
pub mod cache;
pub mod clients;
pub mod compress;
pub mod convert;
pub mod detect;
pub mod error;
pub mod event_csv;
pub mod formats;
pub mod harness;
pub mod next_access;
pub mod record;
pub mod spec;
pub mod stats;
pub mod synth;
pub mod volumes;
pub mod writer;

pub use error::{Location, TraceError};
pub use record::{AddrUnit, RawRecord, RecordReader, VolumeKey};
pub use spec::{Converter, Mode, OpsFilter, TraceSource, TraceSpec};
pub use volumes::Volumes;
