//! `prefetchsim serve`: a live NBD block server whose cache is a prefetchsim level holding real data.
//!
//! A client (qemu, nbdkit's tools, fio's `nbd` engine, the Linux `nbd` driver) reads and writes an export
//! backed by a file; every request is an access of the hierarchy built from the simulator's config
//! (`core_level`), the blocks the levels hold are kept in memory (`cache`), misses and prefetches read the
//! file (`backing`), and the served trace can be recorded for replay in the simulator (`record`). The
//! protocol (`protocol`, `handshake`, `connection`) is written from the NBD protocol document.

pub mod backing;
pub mod cache;
pub mod connection;
pub mod core_level;
pub mod handshake;
pub mod protocol;
pub mod record;
pub mod server;

pub use server::{run, Listen, ServeOptions, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
