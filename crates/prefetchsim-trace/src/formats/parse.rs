//! Field splitting and number parsing shared by the text formats, the per-format option checks, and the
//! map that keeps stream ids within `u32`. Everything works on byte slices of the current line.

use hashbrown::HashMap;
use serde_json::{Map, Value};

use crate::error::{Location, TraceError};

/// Why a field is not the number it should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumError {
    Empty,
    Negative,
    NotNumber,
    TooLarge,
    /// Fits 64 bits, but not once scaled by `10^scale` to nanoseconds ("too large (more than 64 bits)"
    /// was wrong of a value like 1e11 seconds).
    TooLargeInNs(u32),
}

/// A field for an error message: lossy UTF-8, cut to a readable length.
pub(crate) fn show(f: &[u8]) -> String {
    const MAX: usize = 40;
    let s = String::from_utf8_lossy(&f[..f.len().min(MAX)]).into_owned();
    if f.len() > MAX {
        format!("{s}…")
    } else {
        s
    }
}

impl NumError {
    /// The message for field content `f`; `what` names the expected kind ("an unsigned integer").
    pub(crate) fn message(self, f: &[u8], what: &str) -> String {
        match self {
            NumError::Empty => format!("empty, expected {what}"),
            NumError::Negative => format!("negative value '{}', expected {what}", show(f)),
            NumError::NotNumber => format!("'{}' is not {what}", show(f)),
            NumError::TooLarge => format!("'{}' is too large (more than 64 bits)", show(f)),
            NumError::TooLargeInNs(scale) => {
                format!("'{}' overflows 64 bits when converted to nanoseconds (× 10^{scale})", show(f))
            }
        }
    }
}

/// Classify a field that failed the fast path.
#[cold]
fn classify(f: &[u8]) -> NumError {
    match f.first() {
        None => NumError::Empty,
        Some(b'-') if f.len() > 1 && f[1..].iter().all(|b| b.is_ascii_digit() || *b == b'.') => NumError::Negative,
        _ if f.iter().all(u8::is_ascii_digit) => NumError::TooLarge,
        _ => NumError::NotNumber,
    }
}

/// A decimal unsigned integer (digits only).
#[inline]
pub(crate) fn parse_u64(f: &[u8]) -> Result<u64, NumError> {
    if f.is_empty() || f.len() > 20 {
        return Err(classify(f));
    }
    // 19 digits cannot overflow u64; only a 20th needs checking (20-digit ids are common: hashed keys).
    let (head, tail) = f.split_at(f.len().min(19));
    let mut v: u64 = 0;
    for &b in head {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(classify(f));
        }
        v = v * 10 + u64::from(d);
    }
    if let [b] = tail {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(classify(f));
        }
        v = v.checked_mul(10).and_then(|v| v.checked_add(u64::from(d))).ok_or(NumError::TooLarge)?;
    }
    Ok(v)
}

const POW10: [u64; 10] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// A non-negative decimal number (`12`, `12.5`, `.5`, `1e-3`) times `10^scale`, as an integer: exact for
/// plain decimals (digits beyond `scale` are truncated), through `f64` for the exponent form.
/// `scale` ≤ 9 (seconds → nanoseconds).
pub(crate) fn parse_scaled(f: &[u8], scale: u32) -> Result<u64, NumError> {
    let mul = POW10[scale.min(9) as usize];
    let (int, frac) = match memchr::memchr(b'.', f) {
        Some(i) => (&f[..i], Some(&f[i + 1..])),
        None => (f, None),
    };
    let Some(frac) = frac else {
        return match parse_u64(int) {
            Ok(v) => v.checked_mul(mul).ok_or(NumError::TooLargeInNs(scale)),
            Err(NumError::NotNumber) => parse_scaled_float(f, scale),
            Err(e) => Err(e),
        };
    };
    if int.is_empty() && frac.is_empty() {
        return Err(NumError::NotNumber);
    }
    let whole = if int.is_empty() {
        0
    } else {
        match parse_u64(int) {
            Ok(v) => v,
            Err(NumError::NotNumber) => return parse_scaled_float(f, scale),
            Err(e) => return Err(e),
        }
    };
    let mut part = 0u64;
    for (i, &b) in frac.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return parse_scaled_float(f, scale);
        }
        if (i as u32) < scale {
            part += u64::from(d) * POW10[(scale - 1 - i as u32) as usize];
        }
    }
    whole.checked_mul(mul).and_then(|v| v.checked_add(part)).ok_or(NumError::TooLargeInNs(scale))
}

#[cold]
fn parse_scaled_float(f: &[u8], scale: u32) -> Result<u64, NumError> {
    let s = std::str::from_utf8(f).map_err(|_| NumError::NotNumber)?;
    let v: f64 = s.parse().map_err(|_| if s.starts_with('-') { NumError::Negative } else { NumError::NotNumber })?;
    if !v.is_finite() {
        return Err(NumError::NotNumber);
    }
    if v < 0.0 {
        return Err(NumError::Negative);
    }
    if v >= u64::MAX as f64 {
        return Err(NumError::TooLarge);
    }
    let scaled = (v * POW10[scale.min(9) as usize] as f64).round();
    if scaled >= u64::MAX as f64 {
        return Err(NumError::TooLargeInNs(scale));
    }
    Ok(scaled as u64)
}

/// Strip spaces and tabs around a field, and one pair of surrounding double quotes.
#[inline]
pub(crate) fn trim(mut f: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = f {
        f = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = f {
        f = rest;
    }
    if f.len() >= 2 && f[0] == b'"' && f[f.len() - 1] == b'"' {
        f = &f[1..f.len() - 1];
    }
    f
}

/// Split `line` at `delim` into `out` (trimmed); returns the number of fields, which may exceed `N`
/// (the extra ones are counted, not stored).
#[inline]
pub(crate) fn split_delim<'a, const N: usize>(line: &'a [u8], delim: u8, out: &mut [&'a [u8]; N]) -> usize {
    let mut n = 0;
    let mut start = 0;
    for i in memchr::memchr_iter(delim, line) {
        if n < N {
            out[n] = trim(&line[start..i]);
        }
        n += 1;
        start = i + 1;
    }
    if n < N {
        out[n] = trim(&line[start..]);
    }
    n + 1
}

/// Split `line` at runs of spaces and tabs into `out`; returns the number of fields (may exceed `N`).
#[inline]
pub(crate) fn split_ws<'a, const N: usize>(line: &'a [u8], out: &mut [&'a [u8]; N]) -> usize {
    let mut n = 0;
    let mut i = 0;
    let len = line.len();
    while i < len {
        while i < len && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == len {
            break;
        }
        let start = i;
        while i < len && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        if n < N {
            out[n] = &line[start..i];
        }
        n += 1;
    }
    n
}

/// The error for a line with `got` fields when the format has the fields `names`: the first missing
/// field when there are too few, the whole line when there are too many.
#[cold]
pub(crate) fn field_count_error(file: &str, line: u64, got: usize, names: &[&str]) -> TraceError {
    let want = names.len();
    let list = names.join(",");
    if got < want {
        TraceError::malformed(
            file,
            Location::line(line),
            names[got],
            format!("missing: the line has {got} of the {want} fields {list}"),
        )
    } else {
        TraceError::malformed(file, Location::line(line), "line", format!("{got} fields, expected {want} ({list})"))
    }
}

/// A malformed-field error on text line `line`.
#[cold]
pub(crate) fn bad_field(file: &str, line: u64, field: &str, message: impl Into<String>) -> TraceError {
    TraceError::malformed(file, Location::line(line), field, message)
}

/// Parse a `u64` field or fail naming it.
#[inline]
pub(crate) fn u64_field(file: &str, line: u64, field: &str, f: &[u8]) -> Result<u64, TraceError> {
    parse_u64(f).map_err(|e| bad_field(file, line, field, e.message(f, "an unsigned integer")))
}

/// Parse a decimal field scaled by `10^scale` or fail naming it.
#[inline]
pub(crate) fn scaled_field(file: &str, line: u64, field: &str, f: &[u8], scale: u32) -> Result<u64, TraceError> {
    parse_scaled(f, scale).map_err(|e| bad_field(file, line, field, e.message(f, "a non-negative number")))
}

/// `a * b` or an overflow error naming `field`.
#[inline]
pub(crate) fn mul_field(file: &str, line: u64, field: &str, a: u64, b: u64) -> Result<u64, TraceError> {
    a.checked_mul(b).ok_or_else(|| bad_field(file, line, field, format!("{a} × {b} overflows 64 bits")))
}

/// Stream ids kept within `u32` and collision-free: ids below 2^31 pass unchanged; larger ones (64-bit
/// volume ids, hashed names) get the ids 2^31, 2^31+1, … in order of first appearance. Deterministic for a
/// given file.
#[derive(Default)]
pub(crate) struct StreamIds {
    big: HashMap<u64, u32, foldhash::fast::FixedState>,
}

impl StreamIds {
    const DIRECT: u64 = 1 << 31;

    /// The stream id for `id`, or `None` when 2^31 distinct large ids have been seen.
    #[inline]
    pub(crate) fn get(&mut self, id: u64) -> Option<u32> {
        if id < Self::DIRECT {
            return Some(id as u32);
        }
        let next = u32::try_from(self.big.len()).ok().filter(|&n| u64::from(n) < Self::DIRECT)?;
        Some(*self.big.entry(id).or_insert(next | (1 << 31)))
    }

    /// Parse a stream field and map it, or fail naming the field.
    #[inline]
    pub(crate) fn field(&mut self, file: &str, line: u64, field: &str, f: &[u8]) -> Result<u32, TraceError> {
        let id = u64_field(file, line, field, f)?;
        self.get(id).ok_or_else(|| bad_field(file, line, field, "more than 2^31 distinct ids of 2^31 or more"))
    }
}

/// Option keys, normalised: `obj_id_col` and `obj-id-col` are the same key.
pub(crate) fn norm_key(k: &str) -> String {
    k.trim().to_ascii_lowercase().replace('_', "-")
}

/// Reject `params` keys that format `format` does not know.
pub(crate) fn check_keys(format: &str, params: &Map<String, Value>, known: &[&str]) -> Result<(), TraceError> {
    for k in params.keys() {
        if !known.contains(&norm_key(k).as_str()) {
            let accepted = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(TraceError::option(
                format!("trace.params.{k}"),
                format!("unknown option for format '{format}' (it accepts: {accepted})"),
            ));
        }
    }
    Ok(())
}

/// The value of option `key` (normalised match), if given.
pub(crate) fn param<'a>(params: &'a Map<String, Value>, key: &str) -> Option<(&'a str, &'a Value)> {
    params.iter().find(|(k, _)| norm_key(k) == key).map(|(k, v)| (k.as_str(), v))
}

/// A string option (JSON strings; numbers and booleans are taken as written).
pub(crate) fn param_str(params: &Map<String, Value>, key: &str) -> Result<Option<String>, TraceError> {
    match param(params, key) {
        None => Ok(None),
        Some((_, Value::String(s))) => Ok(Some(s.clone())),
        Some((_, v @ (Value::Number(_) | Value::Bool(_)))) => Ok(Some(v.to_string())),
        Some((k, _)) => Err(TraceError::option(format!("trace.params.{k}"), "expected a string")),
    }
}

/// `true`/`false` in the spellings a command line uses.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_exactly_and_name_what_is_wrong() {
        assert_eq!(parse_u64(b"0"), Ok(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(NumError::TooLarge));
        assert_eq!(parse_u64(b"123456789012345678901"), Err(NumError::TooLarge));
        assert_eq!(parse_u64(b"-5"), Err(NumError::Negative));
        assert_eq!(parse_u64(b"1x"), Err(NumError::NotNumber));
        assert_eq!(parse_u64(b""), Err(NumError::Empty));
    }

    #[test]
    fn decimals_scale_to_integers_without_rounding_error() {
        assert_eq!(parse_scaled(b"1455591804.310701000", 9), Ok(1_455_591_804_310_701_000));
        assert_eq!(parse_scaled(b"0.027603", 9), Ok(27_603_000));
        assert_eq!(parse_scaled(b"12", 6), Ok(12_000_000));
        assert_eq!(parse_scaled(b".5", 3), Ok(500));
        assert_eq!(parse_scaled(b"7.", 3), Ok(7000));
        assert_eq!(parse_scaled(b"1.23456", 3), Ok(1234));
        assert_eq!(parse_scaled(b"1e-3", 9), Ok(1_000_000));
        assert_eq!(parse_scaled(b"-0.5", 9), Err(NumError::Negative));
        assert_eq!(parse_scaled(b".", 9), Err(NumError::NotNumber));
        assert_eq!(parse_scaled(b"1.2.3", 9), Err(NumError::NotNumber));
        assert_eq!(parse_scaled(b"nan", 9), Err(NumError::NotNumber));
        assert_eq!(parse_scaled(b"99999999999999999999.0", 9), Err(NumError::TooLarge));
    }

    #[test]
    fn a_time_that_fits_64_bits_but_not_in_nanoseconds_says_so() {
        // 1e11 s fits 64 bits; 1e20 ns does not: "more than 64 bits" was wrong of it.
        assert_eq!(parse_scaled(b"100000000000", 9), Err(NumError::TooLargeInNs(9)));
        assert_eq!(parse_scaled(b"100000000000.5", 9), Err(NumError::TooLargeInNs(9)));
        assert_eq!(parse_scaled(b"1e11", 9), Err(NumError::TooLargeInNs(9)));
        assert_eq!(parse_scaled(b"1e30", 9), Err(NumError::TooLarge));
        let m = NumError::TooLargeInNs(9).message(b"100000000000", "a non-negative number");
        assert_eq!(m, "'100000000000' overflows 64 bits when converted to nanoseconds (× 10^9)");
    }

    #[test]
    fn splitting_trims_and_counts_every_field() {
        let mut out = [&b""[..]; 3];
        assert_eq!(split_delim(b" a, b ,\"c\",d", b',', &mut out), 4);
        assert_eq!(out, [&b"a"[..], b"b", b"c"]);
        assert_eq!(split_ws(b"  1 \t2 3  ", &mut out), 3);
        assert_eq!(out, [&b"1"[..], b"2", b"3"]);
        assert_eq!(split_ws(b"   ", &mut out), 0);
    }

    #[test]
    fn large_stream_ids_map_above_the_direct_range() {
        let mut s = StreamIds::default();
        assert_eq!(s.get(7), Some(7));
        assert_eq!(s.get(1 << 40), Some(1 << 31));
        assert_eq!(s.get(u64::MAX), Some((1 << 31) + 1));
        assert_eq!(s.get(1 << 40), Some(1 << 31));
    }
}
