//! Synthetic workloads, seeded and deterministic: the Split paper's generator (Split §4), Zipf ids,
//! pure sequential streams, and presets shaped like the PFC paper's OLTP, Web and Multi traces (PFC §4.2).
//!
//! Every generator is a lazy iterator of [`Request`]s: it keeps O(generators + files) state, never the
//! trace, and the same parameters and seed give the same requests on every machine (the samplers are our
//! own, in [`sample`], on top of `Pcg64Mcg`). [`open`] builds one by name from a JSON parameter map, the
//! way a `[trace]` section with `format = "synthetic"` names it:
//!
//! ```
//! use prefetchsim_trace::TraceSpec;
//! let mut spec = TraceSpec::with_format("split-mix2", "synthetic");
//! spec.params.insert("requests".into(), 1000.into());
//! let mut src = spec.open().unwrap();
//! let mut buf = Vec::new();
//! assert_eq!(src.fill(&mut buf, 5000).unwrap(), 1000);
//! ```
//!
//! Parameters are typed structs (`#[serde(deny_unknown_fields, default)]`); every default names its
//! provenance, the paper it comes from or `\[ours\]`, and [`defaults`] lists them for a generator. Sizes of
//! address spaces (`*_bytes`) are in bytes, as a number or with a unit (`"512MiB"`), so a workload keeps
//! its physical shape at any block size; request and run lengths are in blocks and requests. Every
//! generator takes `requests` and `seed`.
//!
//! | generator | models | random share (stats, window 32) |
//! |---|---|---|
//! | `split`, `split-mix1..3` | Split §4: 100 concurrent generators, no block twice | by structure 19% / 50% / 54% (measured with window 2048) |
//! | `zipf` | independent references to Zipf-popular objects | ≈ 100% (ids are scattered) |
//! | `sequential` | pure sequential streams | one per stream |
//! | `oltp-like` | PFC's SPC OLTP trace | 11% |
//! | `web-like` | PFC's SPC WebSearch trace | 74% |
//! | `multi-like` | PFC's Purdue Multi trace (3 applications, 12,514 files) | 25% |
//! | `associations` | Mithril's sporadic associations: scattered groups requested together | ≈ 100% |
//! | `source-trees` | STEP's concurrent diff + tar over Linux-like source trees | one per directory and file pair |

pub mod associations;
pub mod multi;
pub mod sample;
pub mod sequential;
pub mod spc;
pub mod split;
pub mod trees;
pub mod zipf;

use prefetchsim_core::engine::{RequestSource, SourceError};
use prefetchsim_core::{Request, TraceFacts};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::TraceError;

pub use associations::{Associations, AssociationsParams};
pub use multi::{MultiLike, MultiLikeParams};
pub use sequential::{Sequential, SequentialParams};
pub use spc::{SpcLike, SpcLikeParams};
pub use split::{SplitGen, SplitParams};
pub use trees::{SourceTrees, SourceTreesParams};
pub use zipf::{ZipfGen, ZipfParams};

/// Registered generators: (name, summary). The CLI, Python, error messages and docs derive from this.
pub const GENERATORS: &[(&str, &str)] = &[
    ("split", "Split paper §4: concurrent single-sequential, multiple-sequential and random generators"),
    ("split-mix1", "Split paper Fig. 1 mix: 90 multiple-sequential + 10 random generators"),
    ("split-mix2", "Split paper Fig. 2 mix: 50 single-sequential + 50 random generators"),
    ("split-mix3", "Split paper Fig. 3 mix: 10 single-sequential + 40 multiple-sequential + 50 random"),
    ("zipf", "one-block requests of Zipf-popular ids (independent reference model)"),
    ("sequential", "one or several purely sequential streams"),
    ("oltp-like", "shaped like PFC's SPC OLTP trace: ~11% random, sequential runs, hot 512 MiB footprint"),
    ("web-like", "shaped like PFC's SPC WebSearch trace: ~74% random small reads over 8 GiB with hot extents"),
    ("multi-like", "shaped like PFC's Purdue Multi trace: ~25% random, 3 applications scanning files"),
    (
        "associations",
        "Mithril's case: sporadic groups of scattered blocks requested together, with hot and one-off noise",
    ),
    ("source-trees", "STEP's concurrent diff + tar: diff alternates files of two source trees, tar reads a third"),
];

/// Registered names, comma-separated (for error messages).
#[must_use]
pub fn choices() -> String {
    GENERATORS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

fn canonical(name: &str) -> Result<&'static str, TraceError> {
    let lower = name.to_ascii_lowercase();
    GENERATORS.iter().find(|(n, _)| *n == lower).map(|(n, _)| *n).ok_or_else(|| {
        TraceError::option("trace.path", format!("unknown generator '{name}'; choose one of {}", choices()))
    })
}

/// Open generator `name` with `params`, producing requests in blocks of `block_size` bytes.
pub fn open(
    name: &str,
    params: &Map<String, Value>,
    block_size: u64,
) -> Result<Box<dyn RequestSource + Send>, TraceError> {
    if block_size == 0 {
        return Err(TraceError::option("trace.block_size", "must be at least 1 byte"));
    }
    let name = canonical(name)?;
    Ok(match name {
        "split" | "split-mix1" | "split-mix2" | "split-mix3" => {
            let (defaults, fixed) = split_preset(name);
            Box::new(SplitGen::new(&parse(name, &defaults, params, fixed)?, block_size)?)
        }
        "zipf" => Box::new(ZipfGen::new(&parse(name, &ZipfParams::default(), params, &[])?)?),
        "sequential" => Box::new(Sequential::new(&parse(name, &SequentialParams::default(), params, &[])?)?),
        "oltp-like" => Box::new(SpcLike::new(&parse(name, &SpcLikeParams::oltp(), params, &[])?, block_size)?),
        "web-like" => Box::new(SpcLike::new(&parse(name, &SpcLikeParams::web(), params, &[])?, block_size)?),
        "multi-like" => Box::new(MultiLike::new(&parse(name, &MultiLikeParams::default(), params, &[])?, block_size)?),
        "associations" => Box::new(Associations::new(&parse(name, &AssociationsParams::default(), params, &[])?)?),
        "source-trees" => {
            Box::new(SourceTrees::new(&parse(name, &SourceTreesParams::default(), params, &[])?, block_size)?)
        }
        _ => unreachable!("every registered generator is handled"),
    })
}

/// The parameters of generator `name` with their default values (what `trace info` and docs print).
pub fn defaults(name: &str) -> Result<Map<String, Value>, TraceError> {
    let name = canonical(name)?;
    let v = match name {
        "split" | "split-mix1" | "split-mix2" | "split-mix3" => to_map(&split_preset(name).0),
        "zipf" => to_map(&ZipfParams::default()),
        "sequential" => to_map(&SequentialParams::default()),
        "oltp-like" => to_map(&SpcLikeParams::oltp()),
        "web-like" => to_map(&SpcLikeParams::web()),
        "multi-like" => to_map(&MultiLikeParams::default()),
        "associations" => to_map(&AssociationsParams::default()),
        "source-trees" => to_map(&SourceTreesParams::default()),
        _ => unreachable!("every registered generator is handled"),
    };
    Ok(v)
}

/// The Split preset's defaults and the keys it fixes (a mix's generator counts are its identity).
fn split_preset(name: &str) -> (SplitParams, &'static [&'static str]) {
    const COUNTS: &[&str] = &["single", "multi", "random"];
    match name {
        "split-mix1" => (SplitParams::mix(1), COUNTS),
        "split-mix2" => (SplitParams::mix(2), COUNTS),
        "split-mix3" => (SplitParams::mix(3), COUNTS),
        _ => (SplitParams::default(), &[]),
    }
}

fn to_map<P: Serialize>(p: &P) -> Map<String, Value> {
    match serde_json::to_value(p) {
        Ok(Value::Object(m)) => m,
        _ => unreachable!("parameter structs serialise to JSON objects"),
    }
}

/// Parse `params` over `defaults`: every key must be a parameter of the generator and not one of
/// `fixed`; errors name the key as `trace.params.<key>`.
pub fn parse<P: Serialize + DeserializeOwned>(
    generator: &str,
    defaults: &P,
    params: &Map<String, Value>,
    fixed: &[&str],
) -> Result<P, TraceError> {
    let mut merged = to_map(defaults);
    for (k, v) in params {
        let key = format!("trace.params.{k}");
        if fixed.contains(&k.as_str()) {
            return Err(TraceError::option(key, format!("generator '{generator}' fixes this parameter")));
        }
        if !merged.contains_key(k) {
            let known = merged.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
            return Err(TraceError::option(
                key,
                format!("unknown parameter of generator '{generator}'; choose one of {known}"),
            ));
        }
        merged.insert(k.clone(), v.clone());
    }
    serde_path_to_error::deserialize(Value::Object(merged)).map_err(|e| {
        TraceError::option(
            format!("trace.params.{}", e.path()),
            prefetchsim_core::component::plain_message(&e.inner().to_string()),
        )
    })
}

/// An error for parameter `key` of a generator.
pub(crate) fn bad(key: &str, message: impl Into<String>) -> TraceError {
    TraceError::option(format!("trace.params.{key}"), message)
}

/// The most streams, files or concurrent groups a generator keeps: each has state allocated when the
/// generator starts, and 2^32 of them would make the allocation fail, which aborts the process (a Python
/// session with it) instead of returning an error. 2^22 is far beyond any workload the papers model.
pub(crate) const MAX_UNITS: u64 = 1 << 22;

/// Check that a count of stateful units (streams, files …) is at least 1 and at most [`MAX_UNITS`].
pub(crate) fn check_units(key: &str, v: u64) -> Result<(), TraceError> {
    if v == 0 {
        Err(bad(key, "must be at least 1"))
    } else if v > MAX_UNITS {
        Err(bad(key, format!("{v} is more than the {MAX_UNITS} a generator keeps state for")))
    } else {
        Ok(())
    }
}

/// Check that a request length in blocks is within what a trace record may span
/// ([`crate::convert::MAX_REQUEST_BLOCKS`]): `len = 2^31` made each request admit two billion blocks, and a run
/// of 300 requests did not finish in 20 s.
pub(crate) fn check_request_blocks(key: &str, v: u32) -> Result<(), TraceError> {
    let max = crate::convert::MAX_REQUEST_BLOCKS;
    if u64::from(v) > max {
        Err(bad(key, format!("{v} blocks is more than one request may span ({max} blocks)")))
    } else {
        Ok(())
    }
}

/// Check that a share lies in `[0, 1]`.
pub(crate) fn check_share(key: &str, v: f64) -> Result<(), TraceError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(bad(key, format!("must be between 0 and 1, got {v}")))
    }
}

/// Check that a mean inter-arrival time is finite and not negative (0 means "no time").
pub(crate) fn check_interarrival(key: &str, v: f64) -> Result<(), TraceError> {
    if v.is_finite() && (0.0..=1e6).contains(&v) {
        Ok(())
    } else {
        Err(bad(key, format!("must be between 0 and 1e6 seconds, got {v}")))
    }
}

/// Serde helper for byte-size parameters: a number of bytes (`536870912`) or a string with a unit
/// (`"512MiB"`, `"8GB"`; K/M/G/T are powers of 1024, as everywhere in prefetchsim and libCacheSim).
pub(crate) mod bytes {
    use prefetchsim_core::SizeSpec;
    use serde::{Deserialize, Deserializer};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
            Other(serde_json::Value),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Other(v) => {
                return Err(serde::de::Error::custom(format!(
                    "expected a number of bytes or a size with a unit (512MiB, 8GB), got {v}"
                )))
            }
            Raw::Int(n) => return Ok(n),
            Raw::Text(t) => t,
        };
        match SizeSpec::parse(&text) {
            Ok(SizeSpec::Bytes(n) | SizeSpec::Blocks(n)) => Ok(n),
            _ => Err(serde::de::Error::custom(format!(
                "cannot read '{text}' as bytes; write a number of bytes or a size with a unit (512MiB, 8GB)"
            ))),
        }
    }
}

/// Blocks of `block_size` bytes in `bytes` (at least 1).
pub(crate) fn blocks_in(bytes: u64, block_size: u64) -> u64 {
    (bytes / block_size).max(1)
}

/// Fill a batch from an infinite-or-finite request iterator (every generator is one).
#[inline]
fn fill_from<I: Iterator<Item = Request>>(it: &mut I, buf: &mut Vec<Request>, max: usize) -> usize {
    let before = buf.len();
    buf.extend(it.take(max));
    buf.len() - before
}

/// Each generator as a [`RequestSource`], declaring whether its `stream` field carries ids, 0 included
/// ([`TraceFacts`]).
macro_rules! request_source {
    ($($t:ty => $stream_ids:expr),* $(,)?) => {$(
        impl RequestSource for $t {
            fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
                Ok(fill_from(self, buf, max))
            }

            fn facts(&self) -> TraceFacts {
                TraceFacts::with_stream_ids($stream_ids)
            }
        }
    )*};
}

request_source!(
    // `stream` is the generator's index from 0: generator 0 is a real (single-sequential) stream.
    SplitGen => true,
    // Independent references: every request has stream 0, "no stream".
    ZipfGen => false,
    // `stream` is the stream's index from 0: stream 0 is a real sequential stream.
    Sequential => true,
    // `stream` is the volume (the footprint cut into `volumes` parts, like SPC's ASUs): volume 0 is real.
    SpcLike => true,
    // `stream` is the file id from 0: file 0 is a real file.
    MultiLike => true,
    // Every request has stream 0 (associations, noise and sequential runs alike): "no stream".
    Associations => false,
    // `stream` 0 is `diff` and 1 is `tar`: both real programs.
    SourceTrees => true,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut s: Box<dyn RequestSource + Send>) -> Vec<Request> {
        let mut v = Vec::new();
        while s.fill(&mut v, 1000).unwrap() > 0 {}
        v
    }

    fn params(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn every_registered_generator_opens_with_its_defaults_and_a_small_request_count() {
        for (name, _) in GENERATORS {
            let p = params(serde_json::json!({ "requests": 500 }));
            let reqs = drain(open(name, &p, 4096).unwrap());
            assert_eq!(reqs.len(), 500, "{name}");
            assert!(reqs.iter().all(|r| r.len >= 1), "{name}");
            assert!(defaults(name).unwrap().contains_key("seed"), "{name}");
        }
    }

    #[test]
    fn unknown_generators_and_parameters_are_errors_naming_the_key() {
        let e = open("zipff", &Map::new(), 4096).err().unwrap().to_string();
        assert!(e.starts_with("trace.path: unknown generator 'zipff'; choose one of split,"), "{e}");
        let e = open("zipf", &params(serde_json::json!({ "alfa": 1 })), 4096).err().unwrap().to_string();
        assert!(e.starts_with("trace.params.alfa: unknown parameter of generator 'zipf'"), "{e}");
        let e = open("zipf", &params(serde_json::json!({ "alpha": "x" })), 4096).err().unwrap().to_string();
        assert!(e.starts_with("trace.params.alpha: invalid type"), "{e}");
        let e = open("zipf", &params(serde_json::json!({ "objects": 0 })), 4096).err().unwrap().to_string();
        assert!(e.starts_with("trace.params.objects:"), "{e}");
        let e = open("split-mix1", &params(serde_json::json!({ "random": 3 })), 4096).err().unwrap().to_string();
        assert_eq!(e, "trace.params.random: generator 'split-mix1' fixes this parameter");
    }

    #[test]
    fn byte_sizes_may_be_written_with_a_unit() {
        let p = params(serde_json::json!({ "footprint_bytes": "64MiB", "extent_bytes": 1048576 }));
        let parsed: SpcLikeParams = parse("oltp-like", &SpcLikeParams::oltp(), &p, &[]).unwrap();
        assert_eq!((parsed.footprint_bytes, parsed.extent_bytes), (64 << 20, 1 << 20));
        let p = params(serde_json::json!({ "disk_bytes": "5%" }));
        let e = parse("split", &SplitParams::default(), &p, &[]).unwrap_err().to_string();
        assert!(e.starts_with("trace.params.disk_bytes: cannot read '5%' as bytes"), "{e}");
    }

    #[test]
    fn generator_names_are_case_insensitive() {
        assert!(open("Split-Mix1", &params(serde_json::json!({ "requests": 10 })), 512).is_ok());
    }
}
