//! Generic delimited text traces with a column spec, in the style of libCacheSim's csv reader (its option
//! names, 1-based columns and `-t "…"` spec string), so a libCacheSim command line carries over.
//!
//! Options (in `params`; `_` and `-` are the same in keys):
//! - `obj-id-col` (required), `time-col`, `obj-size-col`, `op-col`, `stream-col`: 1-based column numbers.
//! - `delimiter` (default `,`; also `\t`/`tab`, `space`; a space delimiter splits at runs of blanks).
//! - `has-header` (default false): skip the first line. A first line starting with `#` is always skipped.
//! - `obj-id-is-num` (default true): ids are decimal `u64`; when false, each id string is hashed to `u64`
//!   with 64-bit FNV-1a followed by the murmur3 finaliser (fixed, so runs are reproducible).
//! - `time-unit` (`s` default, `ms`, `us`, `ns`): decimals are exact to the nanosecond.
//! - `addr-unit` (`id` default: one object is one block; `byte`; `sector`).
//! - `spec`: all of the above as one string, `"time-col=1,obj-id-col=2,delimiter=,,has-header=true"`
//!   (after `delimiter=` one character is taken, so `delimiter=,` is followed by the separating `,`).
//!
//! Mapping: `addr` = obj_id, `size` = obj_size (0 without the column), `time_ns`, `op` (`r`, `read`, `get`,
//! `gets` read; `w`, `write`, `set`, `put`, `add`, `replace`, `cas`, `append`, `prepend`, `update` write;
//! any case; read without the column), `stream` from stream-col (numbers as they are, other strings
//! hashed; ids of 2^31 or more are renumbered as in every reader). Spaces around fields and one pair of
//! surrounding double quotes are stripped; quoted fields cannot contain the delimiter. Columns beyond
//! those used are allowed.
//!
//! The `twitter` format is this reader preset for the Twitter cache traces as libCacheSim ships them
//! (`# time, object, size, next_access_vtime`): time-col 1, obj-id-col 2, obj-size-col 3; the `#` header
//! line is skipped, a file without it is read from its first line.

use std::io::BufRead;

use prefetchsim_core::Op;
use serde_json::{Map, Value};

use super::input::{LineParser, TextReader};
use super::parse::{
    bad_field, check_keys, norm_key, param, parse_bool, parse_scaled, parse_u64, show, split_delim, split_ws, StreamIds,
};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::spec::TraceSpec;

const KEYS: &[&str] = &[
    "spec",
    "time-col",
    "obj-id-col",
    "obj-size-col",
    "op-col",
    "stream-col",
    "delimiter",
    "has-header",
    "obj-id-is-num",
    "time-unit",
    "addr-unit",
];

/// The most columns a line may have that the reader looks at.
const MAX_COLS: usize = 32;

/// A parsed column spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    time: Option<usize>,
    obj_id: usize,
    obj_size: Option<usize>,
    op: Option<usize>,
    stream: Option<usize>,
    delimiter: u8,
    has_header: bool,
    obj_id_is_num: bool,
    /// Decimal digits from the time unit to nanoseconds (s → 9).
    time_scale: u32,
    addr_unit: AddrUnit,
}

/// Split libCacheSim's spec string into `(key, value)` pairs.
fn split_spec(s: &str) -> Result<Vec<(String, String)>, TraceError> {
    let err = |m: String| TraceError::option("trace.params.spec", m);
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let Some(eq) = b[i..].iter().position(|&c| c == b'=') else {
            return Err(err(format!("expected key=value at '{}'", &s[i..])));
        };
        let key = s[i..i + eq].trim().to_string();
        i += eq + 1;
        let start = i;
        if norm_key(&key) == "delimiter" && i < b.len() {
            // One character (or a backslash escape); may itself be the separator ','.
            i += if b[i] == b'\\' && i + 1 < b.len() { 2 } else { 1 };
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
        } else {
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
        }
        out.push((key, s[start..i].to_string()));
        i += 1; // the separator
    }
    Ok(out)
}

/// The delimiter byte that option text `v` names.
fn delimiter(v: &str) -> Option<u8> {
    match v {
        "\\t" | "tab" | "\t" => Some(b'\t'),
        "space" | " " => Some(b' '),
        "comma" => Some(b','),
        s if s.len() == 1 && s.as_bytes()[0] != b'\n' && s.as_bytes()[0] != b'\r' => Some(s.as_bytes()[0]),
        _ => None,
    }
}

impl Columns {
    /// Parse the options in `params` over the defaults `preset`.
    pub(crate) fn from_params(
        format: &str,
        preset: &[(&str, &str)],
        params: &Map<String, Value>,
    ) -> Result<Self, TraceError> {
        check_keys(format, params, KEYS)?;
        // (normalised key, value, key path for errors), later entries win.
        let mut settings: Vec<(String, String, String)> =
            preset.iter().map(|(k, v)| (k.to_string(), v.to_string(), format!("trace.params.{k}"))).collect();
        if let Some((k, v)) = param(params, "spec") {
            let Value::String(s) = v else {
                return Err(TraceError::option(format!("trace.params.{k}"), "expected a string"));
            };
            for (key, value) in split_spec(s)? {
                let nk = norm_key(&key);
                if !KEYS.contains(&nk.as_str()) || nk == "spec" {
                    return Err(TraceError::option(
                        format!("trace.params.spec.{key}"),
                        format!("unknown option (accepted: {})", KEYS[1..].join(", ")),
                    ));
                }
                settings.push((nk, value, format!("trace.params.spec.{key}")));
            }
        }
        for (k, v) in params {
            let nk = norm_key(k);
            if nk == "spec" {
                continue;
            }
            let value = match v {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => v.to_string(),
                _ => {
                    return Err(TraceError::option(
                        format!("trace.params.{k}"),
                        format!("expected a string, number or boolean, got {v}"),
                    ))
                }
            };
            settings.push((nk, value, format!("trace.params.{k}")));
        }
        let get =
            |key: &str| settings.iter().rev().find(|(k, _, _)| k == key).map(|(_, v, p)| (v.as_str(), p.as_str()));
        let col = |key: &str| -> Result<Option<usize>, TraceError> {
            let Some((v, p)) = get(key) else { return Ok(None) };
            match v.trim().parse::<usize>() {
                Ok(c) if (1..=MAX_COLS).contains(&c) => Ok(Some(c - 1)),
                _ => Err(TraceError::option(p, format!("'{v}': expected a column number from 1 to {MAX_COLS}"))),
            }
        };
        let flag = |key: &str, default: bool| -> Result<bool, TraceError> {
            match get(key) {
                None => Ok(default),
                Some((v, p)) => {
                    parse_bool(v).ok_or_else(|| TraceError::option(p, format!("'{v}': expected true or false")))
                }
            }
        };
        let obj_id = col("obj-id-col")?.ok_or_else(|| {
            TraceError::option(
                "trace.params.obj-id-col",
                format!("format '{format}' needs the column of the object id"),
            )
        })?;
        let delimiter = match get("delimiter") {
            None => b',',
            Some((v, p)) => delimiter(v)
                .ok_or_else(|| TraceError::option(p, format!("'{v}': expected one character, \\t, tab or space")))?,
        };
        let time_scale = match get("time-unit") {
            None => 9,
            Some((v, p)) => match v.trim() {
                "s" | "sec" => 9,
                "ms" => 6,
                "us" | "µs" => 3,
                "ns" => 0,
                _ => return Err(TraceError::option(p, format!("'{v}': expected s, ms, us or ns"))),
            },
        };
        let addr_unit = match get("addr-unit") {
            None => AddrUnit::Ids,
            Some((v, p)) => match v.trim() {
                "id" | "ids" | "obj" | "object" => AddrUnit::Ids,
                "byte" | "bytes" => AddrUnit::Bytes,
                "sector" | "sectors" => AddrUnit::Sectors,
                _ => return Err(TraceError::option(p, format!("'{v}': expected id, byte or sector"))),
            },
        };
        Ok(Self {
            time: col("time-col")?,
            obj_id,
            obj_size: col("obj-size-col")?,
            op: col("op-col")?,
            stream: col("stream-col")?,
            delimiter,
            has_header: flag("has-header", false)?,
            obj_id_is_num: flag("obj-id-is-num", true)?,
            time_scale,
            addr_unit,
        })
    }

    /// The number of columns a line must have.
    fn needed(&self) -> usize {
        [Some(self.obj_id), self.time, self.obj_size, self.op, self.stream].into_iter().flatten().max().unwrap_or(0) + 1
    }
}

/// A fixed 64-bit hash of an id string: FNV-1a, then the murmur3 finaliser to mix all bits.
pub(crate) fn hash_id(s: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The operation an op token names.
fn op_of(t: &[u8]) -> Option<Op> {
    const READS: [&[u8]; 4] = [b"r", b"read", b"get", b"gets"];
    const WRITES: [&[u8]; 10] =
        [b"w", b"write", b"set", b"put", b"add", b"replace", b"cas", b"append", b"prepend", b"update"];
    if READS.iter().any(|r| t.eq_ignore_ascii_case(r)) {
        Some(Op::Read)
    } else if WRITES.iter().any(|w| t.eq_ignore_ascii_case(w)) {
        Some(Op::Write)
    } else {
        None
    }
}

struct Csv {
    cols: Columns,
    needed: usize,
    streams: StreamIds,
    names: Names,
}

/// Field names for messages: libCacheSim's names with the column.
struct Names {
    time: String,
    obj_id: String,
    obj_size: String,
    op: String,
    stream: String,
}

impl Names {
    fn new(c: &Columns) -> Self {
        let name = |n: &str, col: Option<usize>| format!("{n} (column {})", col.map_or(0, |c| c + 1));
        Self {
            time: name("time", c.time),
            obj_id: name("obj_id", Some(c.obj_id)),
            obj_size: name("obj_size", c.obj_size),
            op: name("op", c.op),
            stream: name("stream", c.stream),
        }
    }
}

impl LineParser for Csv {
    /// With `stream-col`, the column's values are the ids, 0 included; without it every record's stream is 0
    /// (no id; the `twitter` preset has none).
    fn stream_ids(&self) -> bool {
        self.cols.stream.is_some()
    }

    #[inline]
    fn parse(&mut self, file: &str, n: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError> {
        if n == 1 && (self.cols.has_header || line.first() == Some(&b'#')) {
            return Ok(None);
        }
        let c = &self.cols;
        let mut f = [&b""[..]; MAX_COLS];
        let count = if c.delimiter == b' ' { split_ws(line, &mut f) } else { split_delim(line, c.delimiter, &mut f) };
        if count < self.needed {
            let missing = [
                (Some(c.obj_id), &self.names.obj_id),
                (c.time, &self.names.time),
                (c.obj_size, &self.names.obj_size),
                (c.op, &self.names.op),
                (c.stream, &self.names.stream),
            ]
            .into_iter()
            .filter_map(|(col, name)| col.filter(|&x| x >= count).map(|x| (x, name)))
            .min()
            .map_or("line", |(_, name)| name.as_str());
            return Err(bad_field(
                file,
                n,
                missing,
                format!("missing: the line has {count} fields, {} are needed", self.needed),
            ));
        }
        let num =
            |v: &[u8], name: &str, what: &str| parse_u64(v).map_err(|e| bad_field(file, n, name, e.message(v, what)));
        let id_field = f[c.obj_id];
        let addr = if c.obj_id_is_num {
            num(id_field, &self.names.obj_id, "an unsigned integer (set obj-id-is-num = false for string ids)")?
        } else if id_field.is_empty() {
            return Err(bad_field(file, n, &self.names.obj_id, "empty"));
        } else {
            hash_id(id_field)
        };
        let time_ns = match c.time {
            None => 0,
            Some(col) => parse_scaled(f[col], c.time_scale)
                .map_err(|e| bad_field(file, n, &self.names.time, e.message(f[col], "a non-negative number")))?,
        };
        let size = match c.obj_size {
            None => 0,
            Some(col) => num(f[col], &self.names.obj_size, "an unsigned integer")?,
        };
        let op = match c.op {
            None => Op::Read,
            Some(col) => op_of(f[col]).ok_or_else(|| {
                bad_field(
                    file,
                    n,
                    &self.names.op,
                    format!("unknown op '{}', expected read/write (r, w, get, set, …)", show(f[col])),
                )
            })?,
        };
        let stream = match c.stream {
            None => 0,
            Some(col) => {
                let v = f[col];
                let id = if !v.is_empty() && v.iter().all(u8::is_ascii_digit) {
                    num(v, &self.names.stream, "an id")?
                } else {
                    hash_id(v)
                };
                self.streams
                    .get(id)
                    .ok_or_else(|| bad_field(file, n, &self.names.stream, "too many distinct large stream ids"))?
            }
        };
        Ok(Some(RawRecord { time_ns, op, addr, size, stream, client: 0, pos: 0 }))
    }

    fn addr_unit(&self) -> AddrUnit {
        self.cols.addr_unit
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        (&self.names.obj_id, &self.names.obj_size)
    }

    fn byte_sizes(&self) -> bool {
        self.cols.obj_size.is_some()
    }
}

fn reader(path: &str, input: Box<dyn BufRead + Send>, cols: Columns) -> Box<dyn RecordReader> {
    let names = Names::new(&cols);
    let needed = cols.needed();
    TextReader::boxed(input, path, Csv { cols, needed, streams: StreamIds::default(), names })
}

/// A generic CSV reader over `input`, columns from `spec.params`.
pub(crate) fn open(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    let cols = Columns::from_params("csv", &[], &spec.params)?;
    Ok(reader(path, input, cols))
}

/// The Twitter preset (options in `spec.params` override it). No `has-header`: the header libCacheSim's
/// copies carry starts with `#` and is skipped as such, while `has-header` dropped the first record of a
/// file without one, unreported.
pub(crate) const TWITTER: &[(&str, &str)] =
    &[("time-col", "1"), ("obj-id-col", "2"), ("obj-size-col", "3"), ("delimiter", ",")];

/// A Twitter cache-trace reader over `input`.
pub(crate) fn open_twitter(
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    let cols = Columns::from_params("twitter", TWITTER, &spec.params)?;
    Ok(reader(path, input, cols))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(params: Value) -> Result<Columns, TraceError> {
        let Value::Object(m) = params else { panic!("not an object") };
        Columns::from_params("csv", &[], &m)
    }

    #[test]
    fn the_libcachesim_spec_string_takes_a_comma_delimiter() {
        let pairs = split_spec("time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true").unwrap();
        let keys: Vec<_> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(keys, ["time-col=1", "obj-id-col=2", "obj-size-col=3", "delimiter=,", "has-header=true"]);
        let c = cols(serde_json::json!({"spec": "obj-id-col=2,delimiter=\\t,has-header=true"})).unwrap();
        assert_eq!((c.obj_id, c.delimiter, c.has_header), (1, b'\t', true));
        let c = cols(serde_json::json!({"spec": "delimiter=,"})).unwrap_err();
        assert!(matches!(c, TraceError::Option { ref key, .. } if key == "trace.params.obj-id-col"), "{c}");
    }

    #[test]
    fn options_are_checked_and_name_their_key() {
        let e = cols(serde_json::json!({"obj-id-col": 0})).unwrap_err();
        assert!(matches!(e, TraceError::Option { ref key, .. } if key == "trace.params.obj-id-col"), "{e}");
        let e = cols(serde_json::json!({"obj-id-col": 1, "time-unit": "h"})).unwrap_err();
        assert!(matches!(e, TraceError::Option { ref key, .. } if key == "trace.params.time-unit"), "{e}");
        let e = cols(serde_json::json!({"obj-id-col": 1, "colour": "red"})).unwrap_err();
        assert!(matches!(e, TraceError::Option { ref key, .. } if key == "trace.params.colour"), "{e}");
        let e = cols(serde_json::json!({"spec": "obj-id-col=1,bogus=2"})).unwrap_err();
        assert!(matches!(e, TraceError::Option { ref key, .. } if key == "trace.params.spec.bogus"), "{e}");
        let c = cols(serde_json::json!({"obj_id_col": "4", "has_header": true, "addr-unit": "sector"})).unwrap();
        assert_eq!((c.obj_id, c.has_header, c.addr_unit), (3, true, AddrUnit::Sectors));
    }

    #[test]
    fn string_ids_hash_to_fixed_values() {
        assert_eq!(hash_id(b"abc"), hash_id(b"abc"));
        assert_ne!(hash_id(b"abc"), hash_id(b"abd"));
        // Pinned: a change would silently change every result on string-keyed traces.
        assert_eq!(hash_id(b"abc"), 0x33eb_af99_27cb_c5bd);
    }
}
