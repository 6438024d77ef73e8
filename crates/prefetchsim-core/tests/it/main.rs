//! The core crate's integration tests, one binary (fast to link).

mod batch;
mod clients;
mod device;
mod exclusive;
mod history;
mod in_place_admission;
mod level_roles;
mod lru_family;
mod module_graph;
mod mrc;
mod one_read_per_access;
mod optimal;
mod pfc;
mod pfc_accounting;
mod policies;
mod prefetch_io;
mod prefetch_one_block;
mod properties;
mod readahead;
mod registry;
mod sarc_amp;
mod skipped_hits;
mod split_examples;
mod split_properties;
mod step_tap;
mod timed;
