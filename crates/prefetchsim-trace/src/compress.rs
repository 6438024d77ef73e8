//! Transparent decompression: `.gz`, `.zst`, `.xz`, `.bz2`, recognised by magic bytes, not by name.
//! (Being written.)

use std::io::BufRead;

use crate::error::TraceError;

/// Open `path` and return a buffered reader over its decompressed bytes.
pub fn open(path: &str) -> Result<Box<dyn BufRead + Send>, TraceError> {
    let f = std::fs::File::open(path).map_err(|e| TraceError::io(path, e))?;
    Ok(Box::new(std::io::BufReader::new(f)))
}
