//! The core crate's integration tests, one binary (fast to link).

mod policies;
mod properties;
mod readahead;
mod split_examples;
mod split_properties;
