//! Where the shared real traces are.
//!
//! Tests that need them find them through one setting, `PREFETCHSIM_TRACES` (default: `../shared/traces`
//! beside the repository). On a machine without them such tests skip with a printed reason, unless
//! `PREFETCHSIM_REQUIRE_TRACES=1` (set by `.ci/run`), in which case a missing trace is a failure.

use std::path::PathBuf;

/// The traces directory, or `None` (after printing why) when it is absent and not required.
///
/// # Panics
/// When the traces are absent and `PREFETCHSIM_REQUIRE_TRACES=1`.
#[allow(dead_code)]
pub fn traces_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PREFETCHSIM_TRACES")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"), PathBuf::from);
    if dir.is_dir() {
        return Some(dir);
    }
    let required = std::env::var("PREFETCHSIM_REQUIRE_TRACES").is_ok_and(|v| v == "1");
    assert!(!required, "PREFETCHSIM_REQUIRE_TRACES=1 but the traces directory {} is missing", dir.display());
    eprintln!("skipping: shared traces not found at {} (set PREFETCHSIM_TRACES)", dir.display());
    None
}

/// A file inside the traces directory, or `None` when the directory is absent (see [`traces_dir`]).
///
/// # Panics
/// When the directory exists but the file does not: a renamed trace must not pass silently.
#[allow(dead_code)]
pub fn trace(rel: &str) -> Option<String> {
    let p = traces_dir()?.join(rel);
    assert!(p.is_file(), "trace {} is missing from the traces directory", p.display());
    Some(p.to_string_lossy().into_owned())
}

/// A file of the shared reference numbers (`docs/reference/` beside the traces directory), or `None` when
/// the traces directory is absent (see [`traces_dir`]).
///
/// # Panics
/// When the traces are there but the reference file is not.
#[allow(dead_code)]
pub fn reference(rel: &str) -> Option<String> {
    let p = traces_dir()?.join("../docs/reference").join(rel);
    assert!(p.is_file(), "reference file {} is missing", p.display());
    Some(p.to_string_lossy().into_owned())
}

/// A scratch directory for one test, removed afterwards.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory named after the test (and this process).
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("prefetchsim-it-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Write `bytes` to `name` inside it; returns the path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
