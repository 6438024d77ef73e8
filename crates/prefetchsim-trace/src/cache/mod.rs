//! The decoded-trace cache (issue 16, "decode once"): the first run over a trace file writes the
//! requests it decoded, compact and by column ([`chunk`]), to a file in a user cache directory; later runs
//! over the same trace read that file instead of decompressing and parsing the trace again. Decoding xz
//! or a text format costs as much as a simple simulation; reading the cached copy costs a few percent.
//!
//! - **Where**: `$PREFETCHSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/prefetchsim`, else
//!   `~/.cache/prefetchsim` (traces often sit in read-only directories, so never beside the trace), in
//!   its `decoded/` folder.
//! - **Key**: the trace's identity ([`key::Identity`]): its canonical path, size and modification time,
//!   every option of the spec that changes what is decoded, the cache format's version and the
//!   package's version. A changed trace or option is another key, never a stale hit.
//! - **Trust**: a file is used only if its header names the same identity and its footer and trailer
//!   check out; every chunk carries a CRC-32 checked before its requests are handed out. A file that
//!   fails a check is deleted and the run goes on from the trace itself, at the same request
//!   ([`source::Cached`]), so a damaged cache never changes a result.
//! - **Writing**: only a run that reads the trace to its end writes, to a temporary file renamed into
//!   place when complete (a failed or interrupted write leaves nothing). Then the oldest files are
//!   removed until the folder is under its size cap (`$PREFETCHSIM_CACHE_MAX_MB`, default 4096).
//! - **Opt-out**: the spec's `cache = false` (`--no-cache`, `open_trace(..., cache=False)`) or
//!   `PREFETCHSIM_CACHE=0`. Files smaller than `$PREFETCHSIM_CACHE_MIN_KB` (default 1024 KiB) are not
//!   cached: they decode in milliseconds.

pub mod chunk;
pub mod file;
pub mod key;
pub mod source;

use std::path::PathBuf;

pub use key::Identity;
pub use source::{open, Cached, Recording};

/// Where and what the cache keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// The folder of cached files (created on first write).
    pub dir: PathBuf,
    /// The folder's size cap in bytes.
    pub max_bytes: u64,
    /// Trace files smaller than this are not cached.
    pub min_trace_bytes: u64,
}

/// Default size cap: 4 GiB.
const DEFAULT_MAX_MB: u64 = 4096;
/// Default smallest trace file cached: 1 MiB.
const DEFAULT_MIN_KB: u64 = 1024;

impl CacheSettings {
    /// The settings from the environment, `None` when the cache is off (`PREFETCHSIM_CACHE=0`, `off`,
    /// `false` or `no`) or no folder can be named (no `HOME`).
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if let Some(v) = var("PREFETCHSIM_CACHE") {
            if matches!(v.to_ascii_lowercase().as_str(), "0" | "off" | "false" | "no") {
                return None;
            }
        }
        let root = var("PREFETCHSIM_CACHE_DIR").map(PathBuf::from).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(|x| PathBuf::from(x).join("prefetchsim"))
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache").join("prefetchsim")))
        })?;
        let num = |k: &str, default: u64| var(k).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(default);
        Some(Self {
            dir: root.join("decoded"),
            max_bytes: num("PREFETCHSIM_CACHE_MAX_MB", DEFAULT_MAX_MB).saturating_mul(1 << 20),
            min_trace_bytes: num("PREFETCHSIM_CACHE_MIN_KB", DEFAULT_MIN_KB).saturating_mul(1 << 10),
        })
    }

    /// The cached files and their total size.
    #[must_use]
    pub fn usage(&self) -> (usize, u64) {
        let files = file::cached_files(&self.dir);
        (files.len(), files.iter().map(|f| f.1).sum())
    }

    /// Remove every cached file, and the temporary ones (a run writing one meanwhile goes on without
    /// caching its trace); returns how many cached files were removed.
    pub fn clear(&self) -> std::io::Result<usize> {
        let mut n = 0;
        for (path, _, _) in file::cached_files(&self.dir) {
            std::fs::remove_file(path)?;
            n += 1;
        }
        for (path, _) in file::temporary_files(&self.dir) {
            let _ = std::fs::remove_file(path);
        }
        Ok(n)
    }
}
