//! Synthetic workloads, seeded and deterministic. (Being written.)

use prefetchsim_core::engine::RequestSource;
use serde_json::{Map, Value};

use crate::error::TraceError;

/// Registered generators: (name, summary).
pub const GENERATORS: &[(&str, &str)] = &[];

/// Open generator `name` with `params`, producing requests in blocks of `block_size` bytes.
pub fn open(
    name: &str,
    _params: &Map<String, Value>,
    _block_size: u64,
) -> Result<Box<dyn RequestSource + Send>, TraceError> {
    Err(TraceError::option("trace.path", format!("unknown generator '{name}'")))
}
