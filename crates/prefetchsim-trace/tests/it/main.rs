//! The trace crate's integration tests, one binary (fast to link).

mod cache;
mod common;
mod history;
mod optimal;
mod readers;
mod robust;
mod stats;
mod stream_ids;
mod timed;
mod volumes;
