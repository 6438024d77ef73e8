//! The construction layer, at the top of the crate: turns a configuration ([`crate::config`]) into the
//! things the engines run. Nothing below imports it.
//!
//! - [`registry`]: the one list of policies and prefetchers, each an entry of its own file's
//!   `NamedPolicy` / `NamedPrefetcher`;
//! - [`components`]: a level's policy and prefetcher from their specs (the one place a name becomes a
//!   constructor), and the checks `check_config` runs;
//! - [`pairing`]: policy and prefetcher that cannot work together;
//! - [`memory`]: levels whose metadata would not fit in memory;
//! - [`hierarchy`]: `Hierarchy::build`, the levels of a config;
//! - [`bottom`]: a timed run's links, device and I/O scheduler.

pub mod bottom;
pub mod components;
pub mod hierarchy;
pub mod memory;
pub mod pairing;
pub mod registry;

pub use bottom::build_bottom;
pub use components::{
    build_level, build_level_for, build_prefetcher, build_prefetcher_for, check_components, check_level,
};
pub use pairing::check_pairing;
