//! The trace crate's integration tests, one binary (fast to link).

mod common;
mod history;
mod readers;
mod stats;
mod timed;
