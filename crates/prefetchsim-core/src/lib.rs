//! # prefetchsim-core
//!
//! The model of prefetchsim, a trace-driven simulator of caching and prefetching in multi-level storage
//! hierarchies. This crate has no Python, no command line and no file formats: it turns
//! [`request::Request`]s into per-level metrics.
//!
//! - [`policy`]: replacement policies over a shared [`BlockTable`](policy::BlockTable) (LRU, FIFO,
//!   CLOCK, ARC, MQ, 2Q, StreamLRU, SplitLRU, SARC), with prefetch-aware per-block flags.
//! - [`prefetch`]: the [`Prefetcher`](prefetch::Prefetcher) trait and its implementations.
//! - [`level`]: a cache node = policy + prefetcher + counters.
//! - `fanout`: a level of several caches (one per client, or K servers by client or stripe).
//! - [`engine`]: replay of an [`engine::RequestSource`] through an [`engine::Hierarchy`]; [`run`] runs a
//!   config with the engine it names, [`batch`] every config of a task over one trace decoded once.
//! - [`device`]: disks (Cheetah 9LP after DiskSim, a 7200 rpm drive), SSDs and the Linux-like I/O
//!   scheduler; [`link`]: the network cost between levels.
//! - [`component`]: the configuration error, component specs and their parameters (the bottom);
//!   [`config`]: the serde configuration schema with precise errors; [`metrics`]: counters and results.
//! - [`optimal`]: offline bounds: Belady's MIN (policy `opt`), Cao et al.'s integrated prefetching and
//!   caching on one disk, brute-force optima of tiny instances.
//!
//! ```
//! use prefetchsim_core::config::HierarchyConfig;
//! use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
//! use prefetchsim_core::request::Request;
//!
//! let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 2\npolicy = 'lru'\n").unwrap();
//! let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
//! let reqs = [1, 2, 1, 3, 1].map(|b| Request::read(b, 1)).to_vec();
//! let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
//! assert_eq!(r.levels[0].counters.hits, 2);
//! ```

pub mod batch;
pub mod build;
pub mod component;
pub mod config;
pub mod device;
pub mod engine;
pub mod eventlog;
pub mod level;
pub mod link;
pub mod metrics;
pub mod mrc;
pub mod optimal;
pub mod pfc;
pub mod plugin;
pub mod policy;
pub mod prefetch;
pub mod request;
pub mod run;
pub mod trace_facts;

pub use component::{ComponentSpec, ConfigError};
pub use config::{HierarchyConfig, LevelConfig, SizeSpec};
pub use engine::{run_instant, Hierarchy, RequestSource};
pub use level::{AnyLevel, Level, LevelOptions};
pub use metrics::{LevelCounters, LevelReport, RunResult};
pub use request::{Fetch, Op, Request};
pub use trace_facts::TraceFacts;
