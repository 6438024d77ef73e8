//! The trace format registry: one file per format, each with its provenance and its mapping to
//! [`RawRecord`](crate::RawRecord) in its header. [`FORMATS`] is the one list the CLI, the Python API, error
//! messages and docs derive from.
//!
//! Rules shared by the readers:
//! - Streaming: records are decoded out of one reusable buffer; nothing is allocated per line or record,
//!   and no trace is held in memory.
//! - Strict: the first bad record is an error naming the file, the line (text, 1-based) and its byte offset
//!   or the record index and its byte offset (binary; offsets count decompressed bytes), and the field by
//!   the format's own name. Nothing is skipped silently: a reader returns the error having moved past the
//!   bad record, and [`TraceSource`](crate::TraceSource) skips and counts up to `skip_bad` of them (the
//!   rule, and what can never be skipped, is documented there).
//! - Text lines end in `\n` or `\r\n`; the last line may lack one. Blank lines are skipped only at the end
//!   of a file; a blank line followed by data is an error. Spaces around fields are ignored. Fields the
//!   simulator does not use (MSR ResponseTime, SYSTOR Response, ARC's last two) are not checked beyond
//!   being present.
//! - Binary files ending inside a record are a [`TraceError::Truncated`] error.
//! - Options come from `TraceSpec::params`; keys a format does not know are errors.
//! - Stream ids that do not fit below 2^31 are renumbered from 2^31 in order of first appearance.

use std::io::BufRead;

use crate::error::TraceError;
use crate::record::RecordReader;
use crate::spec::TraceSpec;

mod arc;
mod csv;
mod disksim;
pub(crate) mod input;
mod lirs;
mod mqsim;
mod msr;
mod multi_real;
pub(crate) mod oracle_general;
pub(crate) mod parse;
pub(crate) mod prefetchsim_csv;
mod spc;
mod systor17;
mod tencent;
mod u32_array;
pub(crate) mod vscsi;

pub use multi_real::BUTT_HASH_SECTORS;

/// Registered formats: (name, summary). The CLI, the Python API, errors and docs derive from this list.
pub const FORMATS: &[(&str, &str)] = &[
    ("spc", "UMass/SPC CSV: ASU,LBA(sectors),Size(bytes),Opcode(r/w),Timestamp(s)"),
    (
        "msr",
        "MSR Cambridge CSV: Timestamp(FILETIME),Hostname,DiskNumber,Type(Read/Write),Offset(B),Size(B),ResponseTime",
    ),
    ("vscsi", "CloudPhysics vscsi binary, v1 (32-byte) and v2 (40-byte) little-endian records"),
    (
        "oracle_general",
        "libCacheSim oracleGeneral binary: 24-byte <u32 time_s,u64 obj_id,u32 obj_size,i64 next_access_vtime>",
    ),
    ("disksim", "DiskSim ASCII: time(ms) device block(sectors) sectors flags(bit 0 = read)"),
    ("mqsim", "MQSim ASCII: time(ns) device start_sector sectors type(1 = read, 0 = write)"),
    ("arc", "ARC .lis: start_block n_blocks ignore req_no (512-byte blocks, reads)"),
    ("lirs", "LIRS text: one block id per line, '*' checkpoint markers skipped"),
    ("u32be", "bare array of big-endian u32 block ids"),
    ("u32le", "bare array of little-endian u32 block ids (the LIRS2 CloudPhysics w106.trace)"),
    ("tencent", "Tencent CBS CSV: Timestamp(s),Offset(sectors),Size(sectors),IOType(0 = read,1 = write),VolumeID"),
    ("systor17", "SYSTOR'17 CSV: Timestamp(s),Response,IOType(R/W),LUN,Offset(B),Size(B)"),
    ("multi_real", "file-level CSV time_s,process,file_id,offset,size,op; files placed by a layout model"),
    ("csv", "delimited text with libCacheSim-style column options (obj-id-col, time-col, obj-size-col …)"),
    ("twitter", "Twitter cache trace CSV 'time, obj_id, size, next_access_vtime' (a csv preset)"),
    ("prefetchsim_csv", "the CSV 'trace convert' writes: time_ns,op,first,len,stream,client (blocks)"),
];

/// Other names accepted for the formats (after lower-casing and `-` → `_`).
const ALIASES: &[(&str, &str)] = &[
    ("oraclegeneral", "oracle_general"),
    ("oracle_general_bin", "oracle_general"),
    ("umass", "spc"),
    ("msr_cambridge", "msr"),
    ("msrc", "msr"),
    ("cambridge", "msr"),
    ("cloudphysics", "vscsi"),
    ("disksim_ascii", "disksim"),
    ("mqsim_ascii", "mqsim"),
    ("lis", "arc"),
    ("arc_lis", "arc"),
    ("txt", "lirs"),
    ("tencent_cbs", "tencent"),
    ("cbs", "tencent"),
    ("cloud_storage", "tencent"),
    ("systor", "systor17"),
    ("systor_17", "systor17"),
    ("multireal", "multi_real"),
    ("file_level", "multi_real"),
];

/// Registered names, comma-separated (for error messages).
#[must_use]
pub fn choices() -> String {
    FORMATS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The canonical name of format `name` (case-insensitive, `-` and `_` alike, aliases accepted).
pub fn canonical(path: &str, name: &str) -> Result<&'static str, TraceError> {
    let norm = name.trim().to_ascii_lowercase().replace('-', "_");
    FORMATS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == norm)
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == norm).map(|(_, n)| *n))
        .ok_or_else(|| TraceError::UnknownFormat { file: path.into(), name: name.into(), choices: choices() })
}

/// Files besides the trace that a read of `path` in `format` with `spec` depends on, by role: `None` when
/// the format would look for one and finds none (it then decodes otherwise). Only `multi_real` has one,
/// its file-size list; the decoded-trace cache keys on these as on the trace itself.
pub fn side_files(
    format: &str,
    path: &str,
    spec: &TraceSpec,
) -> Result<Vec<(&'static str, Option<String>)>, TraceError> {
    Ok(match format {
        "multi_real" => vec![("file_list", multi_real::file_list(path, spec)?)],
        _ => Vec::new(),
    })
}

/// A reader of `format` over the decompressed `input` of `path`.
pub fn open(
    format: &str,
    path: &str,
    input: Box<dyn BufRead + Send>,
    spec: &TraceSpec,
) -> Result<Box<dyn RecordReader>, TraceError> {
    let open = match canonical(path, format)? {
        "spc" => spc::open,
        "msr" => msr::open,
        "vscsi" => vscsi::open,
        "oracle_general" => oracle_general::open,
        "disksim" => disksim::open,
        "mqsim" => mqsim::open,
        "arc" => arc::open,
        "lirs" => lirs::open,
        "u32be" => u32_array::open_be,
        "u32le" => u32_array::open_le,
        "tencent" => tencent::open,
        "systor17" => systor17::open,
        "multi_real" => multi_real::open,
        "csv" => csv::open,
        "twitter" => csv::open_twitter,
        "prefetchsim_csv" => prefetchsim_csv::open,
        other => return Err(TraceError::UnknownFormat { file: path.into(), name: other.into(), choices: choices() }),
    };
    open(path, input, spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_resolve_to_registered_formats() {
        assert_eq!(canonical("f", "oracleGeneral").unwrap(), "oracle_general");
        assert_eq!(canonical("f", "oracle-general").unwrap(), "oracle_general");
        assert_eq!(canonical("f", "ORACLE_GENERAL").unwrap(), "oracle_general");
        assert_eq!(canonical("f", "multi-real").unwrap(), "multi_real");
        for (_, target) in ALIASES {
            assert!(FORMATS.iter().any(|(n, _)| n == target), "alias target {target} is not registered");
        }
        let e = canonical("f", "lru").unwrap_err();
        assert!(e.to_string().contains("unknown trace format 'lru'"), "{e}");
    }

    #[test]
    fn every_registered_format_opens() {
        for (name, _) in FORMATS {
            let mut spec = TraceSpec::with_format("mem", name);
            if *name == "csv" {
                spec.params.insert("obj-id-col".into(), 1.into());
            }
            if *name == "multi_real" {
                spec.params.insert("layout".into(), "butt_hash".into());
            }
            let r = open(name, "mem", Box::new(&b""[..]), &spec);
            assert!(r.is_ok(), "{name}: {:?}", r.err());
        }
    }
}
