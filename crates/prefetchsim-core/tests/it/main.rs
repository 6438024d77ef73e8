//! The core crate's integration tests, one binary (fast to link).

mod device;
mod policies;
mod properties;
mod split_examples;
mod split_properties;
mod timed;
