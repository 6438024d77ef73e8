//! Cache sizes as configs write them: blocks, bytes with a unit, a share of the trace footprint or a
//! multiple of the level above; resolved to blocks once the block size and footprint are known.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// 2^64 as a float: whole numbers from here on do not fit `u64`.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// The error of a number of blocks beyond `u64`.
fn too_large(num: &str) -> String {
    format!("{num} blocks is too large (more than the 2^32 - 1 blocks a level can hold)")
}

/// A cache size as written by the user.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum SizeSpec {
    /// A number of blocks (`1000`, `"1000"`).
    Blocks(u64),
    /// Bytes (`"64MiB"`, `"4GB"`; KB/MB/GB are powers of 1024, as in libCacheSim).
    Bytes(u64),
    /// A share of the trace footprint in unique blocks (`0.05`, `"5%"`).
    Footprint(f64),
    /// A multiple of the level above (`"2x"`, `"0.1x"`): PFC's L2:L1 ratios.
    OfAbove(f64),
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Blocks(b) => write!(f, "{b} blocks"),
            SizeSpec::Bytes(b) => write!(f, "{b} B"),
            SizeSpec::Footprint(x) => {
                // Twelve decimals at most: 1e-7 of the footprint reads 0.00001%, not 0.000009999999999999999%.
                let pct = x * 100.0;
                let short = (pct * 1e12).round() / 1e12;
                if short == 0.0 && pct != 0.0 {
                    write!(f, "{pct:e}% of the footprint")
                } else {
                    write!(f, "{short}% of the footprint")
                }
            }
            SizeSpec::OfAbove(x) => write!(f, "{x}x the level above"),
        }
    }
}

impl SizeSpec {
    /// Parse a size string: blocks (`"1000"`), bytes with a unit (`"64MiB"`, `"512KB"`, `"1G"`),
    /// a fraction of the footprint (`"0.05"`, `"5%"`) or a multiple of the level above (`"2x"`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let bad = || {
            format!("cannot read size '{s}'; write blocks (1000), bytes (64MiB, 4GB), a share of the footprint (0.05 or 5%) or a multiple of the level above (2x)")
        };
        if t.is_empty() {
            return Err(bad());
        }
        if let Some(p) = t.strip_suffix('%') {
            let x: f64 = p.trim().parse().map_err(|_| bad())?;
            return Self::footprint(x / 100.0);
        }
        if let Some(m) = t.strip_suffix(['x', 'X']) {
            let x: f64 = m.trim().parse().map_err(|_| bad())?;
            if !(x.is_finite() && x > 0.0) {
                return Err(format!("size '{s}': the multiple must be positive"));
            }
            return Ok(SizeSpec::OfAbove(x));
        }
        let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
        let (num, unit) = (t[..split].trim(), t[split..].trim());
        if unit.is_empty() {
            if let Ok(n) = num.parse::<u64>() {
                return Ok(SizeSpec::Blocks(n));
            }
            if num.bytes().all(|b| b.is_ascii_digit()) {
                return Err(too_large(num));
            }
            let x: f64 = num.parse().map_err(|_| bad())?;
            return Self::number(x);
        }
        let mult: u64 = match unit.to_ascii_lowercase().as_str() {
            "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            "p" | "pb" | "pib" => 1 << 50,
            _ => return Err(bad()),
        };
        let x: f64 = num.parse().map_err(|_| bad())?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!("size '{s}' must not be negative"));
        }
        let bytes = (x * mult as f64).round();
        if bytes >= TWO_POW_64 {
            // The cast saturated to 2^64 - 1 bytes; "cannot read size" for a well-written size misled.
            return Err(format!("size '{s}' is too large (more than 2^64 - 1 bytes)"));
        }
        Ok(SizeSpec::Bytes(bytes as u64))
    }

    /// A bare number: blocks when whole, else a share of the footprint. A whole number beyond `u64` (a
    /// TOML or JSON integer above 2^64 - 1 arrives as a float) is too large, not a share "got 1.8e19".
    /// A negative number, or a fraction above 1, is not read as a share: the user wrote blocks
    /// (`size = -10` and `size = 10.5` were "a share of the footprint must be in (0, 1]").
    fn number(x: f64) -> Result<Self, String> {
        if x >= TWO_POW_64 && x.fract() == 0.0 {
            return Err(too_large(&format!("{x:.0}")));
        }
        if x < 0.0 {
            return Err(format!(
                "{x} is negative; a size is blocks (1000), bytes (64MiB), a share of the footprint (0.05 or 5%) or a \
                 multiple of the level above (2x)"
            ));
        }
        if x.is_finite() && x > 1.0 && x.fract() != 0.0 {
            return Err(format!(
                "{x} blocks is not a whole number (a number above 1 is blocks; a share of the footprint is at most 1: \
                 0.05 or 5%)"
            ));
        }
        Self::footprint(x)
    }

    fn footprint(x: f64) -> Result<Self, String> {
        if x.is_finite() && x > 0.0 && x <= 1.0 {
            Ok(SizeSpec::Footprint(x))
        } else {
            Err(format!("a share of the footprint must be in (0, 1] (0% < share <= 100%), got {x}"))
        }
    }

    /// Whether resolving needs the trace footprint.
    #[must_use]
    pub fn needs_footprint(&self) -> bool {
        matches!(self, SizeSpec::Footprint(_))
    }

    /// Capacity in blocks. `footprint` is the number of unique blocks of the trace (needed for shares),
    /// `above` the capacity of the level above (needed for multiples). Shares are truncated as in
    /// libCacheSim (`floor(share × footprint)`).
    pub fn resolve(&self, block_size: u64, footprint: Option<u64>, above: Option<u64>) -> Result<u64, String> {
        let n = match *self {
            SizeSpec::Blocks(b) => b,
            SizeSpec::Bytes(b) => b / block_size.max(1),
            SizeSpec::Footprint(x) => {
                share_blocks(x, footprint.ok_or("a share of the footprint needs the trace footprint")?)
            }
            SizeSpec::OfAbove(x) => {
                let a = above.ok_or("a multiple of the level above is not possible for the first level")?;
                (x * a as f64).floor() as u64
            }
        };
        if n == 0 {
            return Err(format!("{self} is less than one block ({block_size} B)"));
        }
        if n > u64::from(u32::MAX) {
            let many = if matches!(self, SizeSpec::Blocks(_)) { String::new() } else { format!(" is {n} blocks") };
            return Err(format!("{self}{many}: more than the 2^32 - 1 blocks a level can hold"));
        }
        Ok(n)
    }
}

/// A share of a footprint of `footprint` blocks in whole blocks, truncated as libCacheSim does (1% of
/// 23,361 blocks is 233); 0 when the share is less than one block. The one rule for every caller that
/// sizes by a footprint it measured itself (sweep workers, miss-ratio curves).
#[must_use]
pub fn share_blocks(share: f64, footprint: u64) -> u64 {
    (share * footprint as f64).floor() as u64
}

impl<'de> Deserialize<'de> for SizeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Float(f64),
            Text(String),
            Other(serde_json::Value),
        }
        let r = match Raw::deserialize(d)? {
            Raw::Other(v) => Err(format!(
                "expected blocks (1000), bytes (\"64MiB\"), a share of the footprint (0.05, \"5%\") or a multiple \
                 of the level above (\"2x\"), got {v}"
            )),
            Raw::Int(n) => Ok(SizeSpec::Blocks(n)),
            Raw::Float(x) => SizeSpec::number(x),
            Raw::Text(s) => SizeSpec::parse(&s),
        };
        r.map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_or_fractional_number_of_blocks_is_not_called_a_share() {
        let err = |x: f64| SizeSpec::number(x).unwrap_err();
        assert!(err(-10.0).starts_with("-10 is negative; a size is blocks (1000)"), "{}", err(-10.0));
        assert!(err(10.5).starts_with("10.5 blocks is not a whole number"), "{}", err(10.5));
        assert!(err(2.0).contains("a share of the footprint must be in (0, 1]"));
        assert_eq!(SizeSpec::number(0.5), Ok(SizeSpec::Footprint(0.5)));
        assert_eq!(SizeSpec::parse("2PiB"), Ok(SizeSpec::Bytes(2 << 50)));
        assert!(SizeSpec::parse("99999999999999PiB").unwrap_err().ends_with("is too large (more than 2^64 - 1 bytes)"));
    }

    #[test]
    fn sizes_parse_in_every_documented_form() {
        assert_eq!(SizeSpec::parse("1000"), Ok(SizeSpec::Blocks(1000)));
        assert_eq!(SizeSpec::parse("64MiB"), Ok(SizeSpec::Bytes(64 << 20)));
        assert_eq!(SizeSpec::parse("1GB"), Ok(SizeSpec::Bytes(1 << 30)));
        assert_eq!(SizeSpec::parse("5%"), Ok(SizeSpec::Footprint(0.05)));
        assert_eq!(SizeSpec::parse("0.1"), Ok(SizeSpec::Footprint(0.1)));
        assert_eq!(SizeSpec::parse("2x"), Ok(SizeSpec::OfAbove(2.0)));
        assert!(SizeSpec::parse("1.5").is_err());
        assert!(SizeSpec::parse("-3MiB").is_err());
        assert!(SizeSpec::parse("12 parsecs").is_err());
        assert!(SizeSpec::parse("0%").is_err());
    }

    #[test]
    fn sizes_resolve_like_libcachesim() {
        // 0.001 of 48,974 unique objects is 48 objects in libCacheSim (truncation).
        assert_eq!(SizeSpec::Footprint(0.001).resolve(4096, Some(48_974), None), Ok(48));
        assert_eq!(SizeSpec::Bytes(1_102_684).resolve(4096, None, None), Ok(269));
        assert_eq!(SizeSpec::OfAbove(2.0).resolve(4096, None, Some(10)), Ok(20));
        assert!(SizeSpec::Bytes(100).resolve(4096, None, None).unwrap_err().contains("less than one block"));
        assert!(SizeSpec::Footprint(0.5).resolve(4096, None, None).is_err());
        assert!(SizeSpec::OfAbove(2.0).resolve(4096, None, None).is_err());
    }
}
