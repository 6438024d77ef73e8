//! The decoded-trace cache (issue 16, "decode once"): the first run over a trace file writes the
//! requests it decoded, compact and by column ([`chunk`]), to a file in a user cache directory; later runs
//! over the same trace read that file instead of decompressing and parsing the trace again. Decoding xz
//! or a text format costs as much as a simple simulation; reading the cached copy costs a few percent.
//!
//! - **Where**: `$PREFETCHSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/prefetchsim`, else
//!   `~/.cache/prefetchsim` (traces often sit in read-only directories, so never beside the trace), in
//!   its `decoded/` folder.
//! - **Key**: the trace's identity ([`key::Identity`]): its canonical path, size, modification time, inode and
//!   status-change time (which no `touch` can set back), the same of every file besides the trace that
//!   the decoding reads (multi_real's file-size list) or that there is none, every option of the spec
//!   that changes what is decoded, the cache format's version and the package's version. A changed
//!   trace, side file or option is another key, never a stale hit.
//! - **Trust**: a file is used only if its header names the same identity and its footer and trailer
//!   check out; every chunk carries a CRC-32 checked before its requests are handed out. A file that
//!   fails a check is deleted and the run goes on from the trace itself, at the same request
//!   ([`source::Cached`]), so a damaged cache never changes a result.
//! - **Writing**: only a run that reads the trace to its end writes, to a temporary file renamed into
//!   place when complete (a failed or interrupted write leaves nothing). Then the least recently used
//!   files are removed until the folder is under its size cap (`$PREFETCHSIM_CACHE_MAX_MB`, default
//!   4096), but never the file just written: a decoding larger than the cap stays on its own.
//! - **Opt-out**: the spec's `cache = false` (`--no-cache`, `open_trace(..., cache=False)`) or
//!   `PREFETCHSIM_CACHE=0`. Files smaller than `$PREFETCHSIM_CACHE_MIN_KB` (default 1024 KiB) are not
//!   cached: they decode in milliseconds.

pub mod chunk;
pub mod file;
pub mod key;
pub mod source;

use std::path::PathBuf;

use crate::error::TraceError;

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
    /// `false` or `no`) or no folder can be named (no `HOME`). A value the cache cannot read (a switch
    /// that is not one of those words nor `1`, `on`, `true`, `yes`; a size that is not a whole number) is
    /// an error naming the variable: a typo must not silently keep the default.
    pub fn from_env() -> Result<Option<Self>, TraceError> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// [`Self::from_env`] over any source of variables (tests give a map).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TraceError> {
        let var = |k: &str| get(k).filter(|v| !v.is_empty());
        if let Some(v) = var("PREFETCHSIM_CACHE") {
            match v.trim().to_ascii_lowercase().as_str() {
                "0" | "off" | "false" | "no" => return Ok(None),
                "1" | "on" | "true" | "yes" => {}
                _ => {
                    return Err(TraceError::Option {
                        key: "PREFETCHSIM_CACHE".into(),
                        message: format!("'{v}' is neither on (1, on, true, yes) nor off (0, off, false, no)"),
                    })
                }
            }
        }
        let num = |k: &str, default: u64| match var(k) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| TraceError::Option { key: k.into(), message: format!("'{v}' is not a whole number") }),
        };
        let max_mb = num("PREFETCHSIM_CACHE_MAX_MB", DEFAULT_MAX_MB)?;
        let min_kb = num("PREFETCHSIM_CACHE_MIN_KB", DEFAULT_MIN_KB)?;
        let root = var("PREFETCHSIM_CACHE_DIR").map(PathBuf::from).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(|x| PathBuf::from(x).join("prefetchsim"))
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache").join("prefetchsim")))
        });
        Ok(root.map(|root| Self {
            dir: root.join("decoded"),
            max_bytes: max_mb.saturating_mul(1 << 20),
            min_trace_bytes: min_kb.saturating_mul(1 << 10),
        }))
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

#[cfg(test)]
mod tests {
    use super::CacheSettings;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<CacheSettings>, String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        CacheSettings::from_vars(|k| map.get(k).cloned()).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_switch_the_folder_and_the_sizes() {
        let s = settings(&[("HOME", "h"), ("PREFETCHSIM_CACHE_MAX_MB", " 2 "), ("PREFETCHSIM_CACHE_MIN_KB", "0")])
            .unwrap()
            .unwrap();
        assert_eq!(s.dir, std::path::Path::new("h/.cache/prefetchsim/decoded"));
        assert_eq!((s.max_bytes, s.min_trace_bytes), (2 << 20, 0));
        assert!(settings(&[("HOME", "h"), ("PREFETCHSIM_CACHE", "Off")]).unwrap().is_none());
        assert!(settings(&[("HOME", "h"), ("PREFETCHSIM_CACHE", "yes")]).unwrap().is_some());
        assert!(settings(&[("PREFETCHSIM_CACHE", "1")]).unwrap().is_none(), "no folder without HOME");
    }

    /// A typo in a variable is an error naming it, not the default kept silently.
    #[test]
    fn a_value_it_cannot_read_is_an_error_naming_the_variable() {
        for (k, v) in
            [("PREFETCHSIM_CACHE", "maybe"), ("PREFETCHSIM_CACHE_MAX_MB", "4G"), ("PREFETCHSIM_CACHE_MIN_KB", "-1")]
        {
            let e = settings(&[("HOME", "h"), (k, v)]).unwrap_err();
            assert!(e.starts_with(k) && e.contains(v), "{k}={v}: {e}");
        }
    }
}
