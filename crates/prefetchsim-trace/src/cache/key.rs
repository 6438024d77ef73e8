//! The identity of a decoded trace: what must be equal for a cached decoding to be the decoding a run
//! would make now.

use std::path::Path;

use serde_json::{json, Value};

use crate::error::TraceError;
use crate::formats;
use crate::spec::TraceSpec;

/// Version of the cache file layout and of what is cached. Raise it whenever a trace reader or the
/// record conversion changes what a trace decodes to, so that older files are no longer hits. 3: the
/// trailer holds the trace's facts (whether its stream field carries ids). 4: `multi_real`'s contiguous
/// layout gives a file of size 0 a block of its own.
pub const CACHE_FORMAT: u32 = 4;

/// A trace file's identity as a canonical JSON text, and the file name it is cached under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The canonical JSON text (stored in the cached file's header and compared on open).
    pub text: String,
}

/// The file's device and inode, and its status-change time (ns). Size and mtime alone let an edit that
/// keeps both (the mtime put back by `touch -d`, `cp -p`, `rsync -t`, a tar) reuse the old decoding: a
/// wrong result. The ctime cannot be set back and changes with every write, and a replaced file has
/// another inode. (0 where the platform has neither.)
#[cfg(unix)]
fn inode_and_ctime(meta: &std::fs::Metadata) -> (String, i128) {
    use std::os::unix::fs::MetadataExt;
    (format!("{}:{}", meta.dev(), meta.ino()), i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()))
}

#[cfg(not(unix))]
fn inode_and_ctime(_meta: &std::fs::Metadata) -> (String, i128) {
    (String::new(), 0)
}

/// One file's identity as it is now on disk: canonical path, size, modification time, inode and
/// status-change time.
fn file_identity(path: &str) -> Result<Value, TraceError> {
    let io = |e| TraceError::io(path, e);
    let canonical = std::fs::canonicalize(Path::new(path)).map_err(io)?;
    let meta = std::fs::metadata(&canonical).map_err(io)?;
    let mtime_ns =
        meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let (inode, ctime_ns) = inode_and_ctime(&meta);
    Ok(json!({
        "path": canonical.to_string_lossy(),
        "size": meta.len(),
        "mtime_ns": mtime_ns.to_string(),
        "inode": inode.to_string(),
        "ctime_ns": ctime_ns.to_string(),
    }))
}

impl Identity {
    /// The identity of the trace file `spec` names, as it is now on disk, with the format it resolves
    /// to and the files besides the trace its decoding reads ([`formats::side_files`]: multi_real's file
    /// list, or that there is none, since its absence changes the layout too). Options that change no
    /// request (the cache switch itself) are left out.
    pub fn of(spec: &TraceSpec, format: &str) -> Result<Self, TraceError> {
        let file = file_identity(&spec.path)?;
        let mut side = serde_json::Map::new();
        for (role, path) in formats::side_files(format, &spec.path, spec)? {
            side.insert(role.into(), path.as_deref().map(file_identity).transpose()?.unwrap_or(Value::Null));
        }
        let mut options = serde_json::to_value(spec).map_err(|e| TraceError::option("trace", e.to_string()))?;
        if let Value::Object(o) = &mut options {
            o.remove("path");
            o.remove("cache");
            o.insert("format".into(), Value::String(format.to_string()));
        }
        let v = json!({
            "cache_format": CACHE_FORMAT,
            "version": env!("CARGO_PKG_VERSION"),
            "file": file,
            "side_files": side,
            "options": options,
        });
        Ok(Self { text: v.to_string() })
    }

    /// The cached file's name: a 64-bit FNV-1a hash of the identity (the header holds the whole
    /// identity, so a collision is a miss, not a wrong hit).
    #[must_use]
    pub fn file_name(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in self.text.as_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{h:016x}.{}", super::file::EXTENSION)
    }
}
