//! The construction layer, at the top of the crate: turns a configuration ([`crate::config`]) into the
//! things the engines run. Nothing below imports it.
//!
//! - [`bottom`]: a timed run's links, device and I/O scheduler.

pub mod bottom;

pub use bottom::build_bottom;
