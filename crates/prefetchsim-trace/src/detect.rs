//! Format detection from the file name and the decompressed head of the content (never the whole file).
//!
//! 1. The name, lower-cased, without directory and compression suffix: `*.vscsi` → vscsi,
//!    `*oraclegeneral*` → oracle_general, `*.lis` → arc, `*.spc` → spc, `*.disksim` → disksim,
//!    `*multi-real*`/`*multi_real*` → multi_real (its `*.files.csv` companion list is not a trace),
//!    `*systor*` → systor17, `*cloud_storage*`/`*tencent*` → tencent, `*msr*`/`*cambridge*` → msr,
//!    `*twitter*` → twitter, `*mqsim*` → mqsim, `w<digits>.trace` → u32le (the LIRS2 CloudPhysics
//!    files: little-endian, see `formats/u32_array.rs`). A name match is accepted only if the head of the content parses in that format.
//!    Before the name: a head starting like the CSV `trace convert` writes is that (`prefetchsim_csv`).
//! 2. Otherwise the head ([`HEAD_BYTES`] decompressed bytes):
//!    - binary (NUL bytes or control characters): vscsi when the version bytes of the first records say
//!      so and the records parse; oracle_general when every 24-byte record of the head is plausible
//!      (times never decrease, next_access_vtime is -1 or a later record); bare u32 arrays cannot be
//!      told from other binary data, so an unnamed one is undetected.
//!    - text: a known header line (`Timestamp,Response,IOType,LUN,Offset,Size` → systor17,
//!      `time_s,process,file_id,…` → multi_real, `# time, object, size …` → twitter, `# prefetchsim
//!      trace:` or `time_ns,op,first,len,stream,client` → prefetchsim_csv, what `trace convert` writes);
//!      else every
//!      format whose reader parses all whole lines of the head is a candidate; one candidate wins, and
//!      several are an [`TraceError::Undetected`] naming them. DiskSim and MQSim have the same columns:
//!      lines with integer times and types 0 and 1 read as both (DiskSim in ms, MQSim in ns), and nothing
//!      in either format tells them apart, so such a trace needs a telling name or the format given
//!      (integer times once meant MQSim: a DiskSim trace of whole milliseconds ran 10^6 times too fast).
//! 3. Anything else is [`TraceError::Undetected`], saying why and listing the formats.

use std::io::{Cursor, Read};
use std::path::Path;

use serde_json::Value;

/// A trace's format parameters.
type Params = serde_json::Map<String, Value>;

use crate::compress;
use crate::error::TraceError;
use crate::formats::{self, oracle_general, vscsi};
use crate::spec::TraceSpec;

/// How much decompressed content detection looks at.
pub const HEAD_BYTES: usize = 64 * 1024;

/// Text formats tried on content, in order.
const TEXT_CANDIDATES: &[&str] =
    &["msr", "spc", "systor17", "tencent", "multi_real", "arc", "disksim", "mqsim", "lirs"];

fn undetected(path: &str, why: impl Into<String>) -> TraceError {
    TraceError::Undetected { file: path.into(), why: why.into(), choices: formats::choices() }
}

/// The lower-cased file name without directory and compression suffix.
fn stem(path: &str) -> String {
    let name = Path::new(path).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    let mut name = name.to_ascii_lowercase();
    while let Some(s) = compress::SUFFIXES.iter().find(|s| name.ends_with(*s)) {
        name.truncate(name.len() - s.len());
    }
    name
}

/// What the name says: a format, a reason it is not a trace, or nothing.
fn by_name(stem: &str) -> Result<Option<&'static str>, String> {
    let has = |s: &str| stem.contains(s);
    if (has("multi-real") || has("multi_real")) && has(".files.") {
        return Err("a multi-real companion file list (file_id,size_bytes_seen), not a trace".into());
    }
    let w_trace = stem
        .strip_prefix('w')
        .and_then(|s| s.strip_suffix(".trace"))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    Ok(if stem.ends_with(".vscsi") {
        Some("vscsi")
    } else if has("oraclegeneral") || has("oracle_general") {
        Some("oracle_general")
    } else if stem.ends_with(".lis") {
        Some("arc")
    } else if stem.ends_with(".spc") {
        Some("spc")
    } else if stem.ends_with(".disksim") {
        Some("disksim")
    } else if has("multi-real") || has("multi_real") {
        Some("multi_real")
    } else if has("systor") {
        Some("systor17")
    } else if has("cloud_storage") || has("tencent") {
        Some("tencent")
    } else if has("msr") || has("cambridge") {
        Some("msr")
    } else if has("twitter") {
        Some("twitter")
    } else if has("mqsim") {
        Some("mqsim")
    } else if w_trace {
        Some("u32le")
    } else {
        None
    })
}

/// Up to [`HEAD_BYTES`] decompressed bytes of `path`, and whether that is the whole content.
fn head(path: &str) -> Result<(Vec<u8>, bool), TraceError> {
    let mut input = compress::open(path)?.take(HEAD_BYTES as u64 + 1);
    let mut buf = Vec::with_capacity(HEAD_BYTES + 1);
    input.read_to_end(&mut buf).map_err(|e| TraceError::io(path, e))?;
    let whole = buf.len() <= HEAD_BYTES;
    buf.truncate(HEAD_BYTES);
    Ok((buf, whole))
}

/// Whether `head` looks like binary data rather than text.
fn is_binary(head: &[u8]) -> bool {
    head.iter().any(|&b| b == 0 || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f)
}

/// The part of `head` a reader of `format` can parse without meeting a cut record: whole lines of text,
/// whole records of binary formats.
fn whole_part<'a>(format: &str, head: &'a [u8], whole: bool) -> &'a [u8] {
    if whole {
        return head;
    }
    let record = match format {
        "vscsi" => vscsi::version(head).map_or(32, vscsi::Version::size),
        "oracle_general" => oracle_general::SIZE,
        "u32be" | "u32le" => 4,
        _ => return memchr::memrchr(b'\n', head).map_or(&[][..], |i| &head[..=i]),
    };
    &head[..head.len() - head.len() % record]
}

/// Parse `data` (the head) as `format`: the good records and the bad ones skipped, or the first error
/// past `skip_bad` skippable bad records (what the trace's own `skip_bad` lets the read skip).
fn parse_head(format: &'static str, path: &str, data: &[u8], skip_bad: u64) -> Result<(u64, u64), TraceError> {
    match read_head_counting(format, path, data, skip_bad, &Params::new()) {
        (n, skipped, None) => Ok((n, skipped)),
        (_, _, Some(e)) => Err(e),
    }
}

/// Parse `data` as `format`, counting the good records before the error: records that read well identify
/// the format, so an error after them is about a record, not about the format. A skippable error past
/// `skip_bad` > 0 is the [`TraceError::SkipLimit`] the read gives.
fn read_head(
    format: &'static str,
    path: &str,
    data: &[u8],
    skip_bad: u64,
    params: &Params,
) -> (u64, Option<TraceError>) {
    let (n, _, e) = read_head_counting(format, path, data, skip_bad, params);
    (n, e)
}

/// [`read_head`] that also says how many bad records it skipped.
fn read_head_counting(
    format: &'static str,
    path: &str,
    data: &[u8],
    skip_bad: u64,
    params: &Params,
) -> (u64, u64, Option<TraceError>) {
    let mut reader = match open_head(format, path, data, params) {
        Ok(r) => r,
        Err(e) => return (0, 0, Some(e)),
    };
    let (mut n, mut skipped) = (0, 0);
    loop {
        match reader.next_record() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, skipped, None),
            Err(e) if e.is_skippable() && skipped < skip_bad => skipped += 1,
            Err(e) if e.is_skippable() && skip_bad > 0 => {
                return (n, skipped, Some(TraceError::SkipLimit { limit: skip_bad, last: Box::new(e) }))
            }
            Err(e) => return (n, skipped, Some(e)),
        }
    }
}

/// The error of a detected `format` whose head reads `good` records before `e`: `e` itself, saying how
/// the format was found, when records read well and `e` is about a record; else `None` (the content may
/// not be that format at all).
fn record_error(format: &'static str, how: &str, good: u64, e: TraceError) -> Result<TraceError, TraceError> {
    let about_a_record =
        matches!(e, TraceError::Malformed { .. } | TraceError::Truncated { .. } | TraceError::SkipLimit { .. });
    if good > 0 && about_a_record {
        Ok(TraceError::InDetected { format, how: how.to_string(), error: Box::new(e) })
    } else {
        Err(e)
    }
}

/// Why no text format fits: when exactly one format reads records before failing, its first error (which
/// names the line and field) is the problem, not the format, and is the error; when several do, the one
/// that reads the most is named as the closest.
fn closest_text_format(path: &str, data: &[u8], skip_bad: u64) -> TraceError {
    let mut best: Option<(u64, &'static str, TraceError)> = None;
    let (mut tied, mut others) = (false, false);
    for f in TEXT_CANDIDATES.iter().copied() {
        let (n, Some(err)) = read_head(f, path, data, skip_bad, &Params::new()) else { continue };
        if n == 0 {
            continue;
        }
        match &best {
            Some((m, _, _)) if n < *m => others = true,
            Some((m, _, _)) if n == *m => tied = true,
            prev => {
                others |= prev.is_some();
                best = Some((n, f, err));
                tied = false;
            }
        }
    }
    match best {
        Some((n, f, e)) if !tied && !others => match record_error(f, &first_records(n), n, e) {
            Ok(plain) => plain,
            Err(e) => {
                undetected(path, format!("the text matches no format's fields; {f} reads {n} record(s), then: {e}"))
            }
        },
        Some((n, f, e)) if !tied => undetected(
            path,
            format!(
                "the text matches no format's fields; the closest is {f}, which reads {n} record(s) and then fails: \
                 {e} (give --format {f} to read it as {f}, with --skip-bad N to skip bad records)"
            ),
        ),
        _ => undetected(path, "the text matches no format's fields"),
    }
}

/// "its first record" or "its first `n` records".
fn first_records(n: u64) -> String {
    if n == 1 {
        "its first record".into()
    } else {
        format!("its first {n} records")
    }
}

/// A reader of `format` over the head `data`.
fn open_head(
    format: &'static str,
    path: &str,
    data: &[u8],
    params: &Params,
) -> Result<Box<dyn crate::record::RecordReader>, TraceError> {
    let mut spec = TraceSpec::with_format(path, format);
    if format == "multi_real" {
        // The contiguous layout would read the companion list or the whole trace.
        spec.params.insert("layout".into(), Value::from("butt_hash"));
    }
    if let (Some(v), "vscsi") = (params.get("other-cmds"), format) {
        // The trace's own choice: with `other-cmds = "skip"` a non-I/O command must not fail detection.
        spec.params.insert("other-cmds".into(), v.clone());
    }
    formats::open(format, path, Box::new(Cursor::new(data.to_vec())), &spec)
}

/// Whether every 24-byte record of `data` is a plausible oracleGeneral record.
fn plausible_oracle(data: &[u8]) -> bool {
    let mut last_t = 0;
    let mut n = 0u64;
    for (i, rec) in data.chunks_exact(oracle_general::SIZE).enumerate() {
        let Some(rec) = rec.first_chunk::<{ oracle_general::SIZE }>() else { return false };
        let (t, _, size, next) = oracle_general::fields(rec);
        if t < last_t || size == 0 || !(next == -1 || next > i as i64) {
            return false;
        }
        last_t = t;
        n += 1;
    }
    n >= 2
}

/// The format of binary content.
fn detect_binary(
    path: &str,
    head: &[u8],
    whole: bool,
    skip_bad: u64,
    params: &Params,
) -> Result<&'static str, TraceError> {
    if vscsi::sniff(head).is_some() {
        match read_head("vscsi", path, whole_part("vscsi", head, whole), skip_bad, params) {
            (_, None) => return Ok("vscsi"),
            (n, Some(e)) => {
                if let Ok(plain) = record_error("vscsi", "the version bytes of its first records", n, e) {
                    return Err(plain);
                }
            }
        }
    }
    if plausible_oracle(whole_part("oracle_general", head, whole)) {
        return Ok("oracle_general");
    }
    Err(undetected(
        path,
        "binary content that is neither vscsi nor oracleGeneral; a bare u32 array (u32be, u32le) cannot be recognised \
         by content",
    ))
}

/// The format of text content. With `skip_bad` = N a format fits when its reader reads the head with at
/// most N bad records, as the read would (a bad record in the head ended a run that skip_bad allowed);
/// of the formats that fit, those that skip the fewest records win, so N = 0 changes nothing.
fn detect_text(path: &str, head: &[u8], whole: bool, skip_bad: u64) -> Result<&'static str, TraceError> {
    let first = String::from_utf8_lossy(first_line(head)).to_ascii_lowercase();
    let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.starts_with("timestamp,response,iotype,lun,offset,size") {
        return Ok("systor17");
    }
    if compact.starts_with("time_s,process,file_id,offset,size") {
        return Ok("multi_real");
    }
    if compact.starts_with("file_id,size_bytes_seen") {
        return Err(undetected(path, "a multi-real companion file list (file_id,size_bytes_seen), not a trace"));
    }
    if compact.starts_with("#time,object,size") || compact.starts_with("#time,obj_id,obj_size") {
        return Ok("twitter");
    }
    let data = whole_part("", head, whole);
    let fits: Vec<(&'static str, u64)> = TEXT_CANDIDATES
        .iter()
        .copied()
        .filter_map(|f| match parse_head(f, path, data, skip_bad) {
            Ok((n, skipped)) if n > 0 => Some((f, skipped)),
            _ => None,
        })
        .collect();
    let fewest = fits.iter().map(|&(_, skipped)| skipped).min();
    let fits: Vec<&'static str> =
        fits.iter().filter(|&&(_, skipped)| Some(skipped) == fewest).map(|&(f, _)| f).collect();
    match fits.as_slice() {
        [one] => Ok(one),
        [] => Err(closest_text_format(path, data, skip_bad)),
        many => Err(undetected(path, format!("the text parses as each of {}", many.join(", ")))),
    }
}

/// The registered format that `path` most likely holds.
pub fn detect(path: &str) -> Result<&'static str, TraceError> {
    detect_skipping(path, 0)
}

/// [`detect`] for a trace read with `skip_bad` = N: a format the name suggests is accepted when the head
/// parses in it with at most N bad records (the read would skip them; detection refused such a trace, so
/// `--skip-bad` worked with a format named and not without).
pub fn detect_skipping(path: &str, skip_bad: u64) -> Result<&'static str, TraceError> {
    detect_with(path, skip_bad, &Params::new())
}

/// [`detect_skipping`] with the trace's format parameters: the ones that decide whether a record is
/// bad (vscsi's `other-cmds`) apply to the head as to the read.
pub fn detect_with(path: &str, skip_bad: u64, params: &Params) -> Result<&'static str, TraceError> {
    let stem = stem(path);
    let named = by_name(&stem).map_err(|why| undetected(path, why))?;
    let (head, whole) = head(path)?;
    detect_named(path, named, &head, whole, skip_bad, params)
}

/// The format of a trace named `path` whose decompressed content starts with `head` (`whole` when
/// that is all of it), without opening any file: [`detect`] after reading the head (also fuzzed).
pub fn detect_head(path: &str, head: &[u8], whole: bool) -> Result<&'static str, TraceError> {
    let named = by_name(&stem(path)).map_err(|why| undetected(path, why))?;
    detect_named(path, named, &head[..head.len().min(HEAD_BYTES)], whole && head.len() <= HEAD_BYTES, 0, &Params::new())
}

/// The first line of text `head`, without a UTF-8 byte-order mark: the readers skip one, so the header
/// tests must too (a BOM hid the `prefetchsim_csv` and Twitter headers from detection).
fn first_line(head: &[u8]) -> &[u8] {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    head.split(|&b| b == b'\n').next().unwrap_or_default()
}

/// Whether `head` starts like the CSV `trace convert` writes: its first line says so whatever the file is
/// named (a conversion of `msr-x.csv` to `msr.csv` is not MSR).
fn is_prefetchsim_csv(head: &[u8]) -> bool {
    let compact: String = String::from_utf8_lossy(first_line(head)).chars().filter(|c| !c.is_whitespace()).collect();
    compact.starts_with("#prefetchsimtrace:") || compact.starts_with("time_ns,op,first,len,stream,client")
}

fn detect_named(
    path: &str,
    named: Option<&'static str>,
    head: &[u8],
    whole: bool,
    skip_bad: u64,
    params: &Params,
) -> Result<&'static str, TraceError> {
    if is_prefetchsim_csv(head) {
        return Ok("prefetchsim_csv");
    }
    if let Some(format) = named {
        if head.is_empty() {
            return Ok(format);
        }
        return match read_head(format, path, whole_part(format, head, whole), skip_bad, params) {
            (_, None) => Ok(format),
            (n, Some(e)) => Err(record_error(format, "the file name", n, e).unwrap_or_else(|e| {
                undetected(path, format!("the name suggests {format}, but the content does not parse as it: {e}"))
            })),
        };
    }
    if head.is_empty() {
        return Err(undetected(path, "the file is empty and its name names no format"));
    }
    if is_binary(head) {
        detect_binary(path, head, whole, skip_bad, params)
    } else {
        detect_text(path, head, whole, skip_bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_directory_case_and_compression_suffixes() {
        assert_eq!(stem("a/b/OLTP.lis.zst"), "oltp.lis");
        assert_eq!(stem("x.csv.gz"), "x.csv");
        assert_eq!(by_name("cloudphysicsio.oraclegeneral.bin"), Ok(Some("oracle_general")));
        assert_eq!(by_name("w106.trace"), Ok(Some("u32le")));
        assert_eq!(by_name("sprite.trace"), Ok(None));
        assert!(by_name("multi-real.files.csv").is_err());
    }

    #[test]
    fn a_bad_line_in_a_text_trace_is_named_when_one_format_reads_the_lines_before_it() {
        // Detection wrapped the bad line in "cannot tell the trace format … name it explicitly", though
        // only MSR reads the first line: the line is bad, not the format.
        let head = b"128166372003061629,hm,0,Read,383078400,4096,100\n128166372003061630,hm,0,Read,xx,4096,100\n";
        let e = detect_head("t.csv", head, true).unwrap_err();
        assert!(matches!(e, TraceError::InDetected { format: "msr", .. }), "{e}");
        let e = e.to_string();
        assert!(e.starts_with("t.csv: line 2 (byte 48): field 'Offset': 'xx'"), "{e}");
        assert!(e.ends_with("(msr, detected from its first record)") && !e.contains("cannot tell"), "{e}");
        let e = detect_head("t.csv", b"hello world\n", true).unwrap_err().to_string();
        assert!(e.contains("matches no format's fields") && !e.contains("closest"), "{e}");
    }

    #[test]
    fn the_csv_trace_convert_writes_is_recognised_whatever_its_name() {
        let head = b"# prefetchsim trace: block_size=4096\ntime_ns,op,first,len,stream,client\n0,read,5,1,0,0\n";
        for name in ["t.csv", "msr.csv", "systor.csv.gz", "x.lis"] {
            assert_eq!(detect_head(name, head, true).unwrap(), "prefetchsim_csv", "{name}");
        }
    }

    #[test]
    fn binary_means_nul_or_control_bytes() {
        assert!(is_binary(b"1 2\0"));
        assert!(!is_binary(b"1,2,3\r\n4\t5\n"));
    }
}
