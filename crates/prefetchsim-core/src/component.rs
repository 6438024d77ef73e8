//! The bottom of configuration: the error every component reports (with the key path of the offending
//! value), a component named in a config (`"lru"` or `{ name = "splitlru", up_ratio = 0.5 }`), the parsing
//! of its parameters into a typed struct, and the lookup of a name in a registry.
//!
//! Every component (policy, prefetcher, device, link, scheduler) imports this file and nothing above it;
//! the configuration schema ([`crate::config`]) and the construction layer sit on top.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A configuration error: where (a key path such as `level[0].size`) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    /// Key path of the offending value.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self { path: path.into(), message: message.into() }
    }
}

/// A component named in a config: `"lru"` or `{ name = "splitlru", up_ratio = 0.5 }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComponentSpec {
    /// Registered name (case-insensitive).
    pub name: String,
    /// Parameters, validated by the component's typed parameter struct.
    pub params: Map<String, Value>,
}

impl ComponentSpec {
    /// A component by name with default parameters.
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: name.into(), params: Map::new() }
    }
}

impl<'de> Deserialize<'de> for ComponentSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Name(String),
            Table(Map<String, Value>),
            Other(Value),
        }
        match Raw::deserialize(d)? {
            Raw::Other(v) => Err(serde::de::Error::custom(format!(
                "expected a name (\"lru\") or a table with a string key `name` and the parameters, got {v}"
            ))),
            Raw::Name(name) => Ok(Self::named(name)),
            Raw::Table(mut t) => match t.remove("name") {
                Some(Value::String(name)) => Ok(Self { name, params: t }),
                _ => Err(serde::de::Error::custom("a component table needs a string key `name`")),
            },
        }
    }
}

/// Parse a component's parameters into its typed struct; unknown keys and bad values name the key.
pub fn parse_params<T: DeserializeOwned>(path: &str, spec: &ComponentSpec) -> Result<T, ConfigError> {
    let v = Value::Object(spec.params.clone());
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." || inner.is_empty() { path.to_string() } else { format!("{path}.{inner}") };
        ConfigError::new(at, format!("{} (parameters of '{}')", plain_message(&e.inner().to_string()), spec.name))
    })
}

/// serde's wording for the common number mistakes, said plainly: "invalid value: integer `-5`, expected
/// u64" becomes "-5 is negative; expected a whole number, 0 or more". Other messages pass unchanged.
#[must_use]
pub fn plain_message(msg: &str) -> String {
    let expected_whole = |rest: &str| {
        ["u8", "u16", "u32", "u64", "usize"]
            .iter()
            .any(|t| rest == format!("expected {t}") || rest.starts_with(&format!("expected {t} ")))
    };
    if let Some(rest) = msg.strip_prefix("invalid value: integer `") {
        if let Some((n, tail)) = rest.split_once("`, ") {
            if n.starts_with('-') && expected_whole(tail) {
                return format!("{n} is negative; expected a whole number, 0 or more");
            }
        }
    }
    if let Some(rest) = msg.strip_prefix("invalid type: floating point `") {
        if let Some((x, tail)) = rest.split_once("`, ") {
            if expected_whole(tail) {
                // An integer beyond u64 arrives as a float (JSON from Python): it is whole, only too large.
                return match x.parse::<f64>() {
                    Ok(v) if v.fract() == 0.0 && v <= -1.0 => {
                        format!("{x} is negative; expected a whole number, 0 or more")
                    }
                    Ok(v) if v >= 18_446_744_073_709_551_616.0 => {
                        format!("{x} is too large; expected a whole number, at most 2^64 - 1 ({})", u64::MAX)
                    }
                    _ => format!("{x} is not a whole number; expected a whole number, 0 or more"),
                };
            }
        }
    }
    // "invalid type: boolean `true`, expected struct PfcParams": the Rust type's name means nothing to a
    // user; the key path before the message says which table.
    if let Some(rest) = msg.strip_prefix("invalid type: ") {
        if let Some((got, ty)) = rest.split_once(", expected struct ") {
            if ty.chars().all(|c| c.is_ascii_alphanumeric()) {
                return format!("{got} where a table of parameters is expected ({{}} for the defaults)");
            }
        }
    }
    msg.to_string()
}

/// Look up `name` (case-insensitive, with aliases) in a registry; the error lists the valid choices.
pub fn resolve_name<'a>(
    path: &str,
    what: &str,
    name: &str,
    registry: &'a [(&'a str, &'a str)],
    aliases: &[(&str, &'a str)],
) -> Result<&'a str, ConfigError> {
    let lower = name.trim().to_ascii_lowercase();
    if let Some((n, _)) = registry.iter().find(|(n, _)| *n == lower) {
        return Ok(n);
    }
    if let Some((_, n)) = aliases.iter().find(|(a, _)| *a == lower) {
        return Ok(n);
    }
    Err(unknown_name(path, what, name, registry.iter().map(|(n, _)| *n)))
}

/// The entry of `entries` named `name` (case-insensitive, spaces trimmed), by its name first and then by
/// its aliases (`names` gives both); the error at `path` lists the names.
pub fn find_named<'a, E>(
    path: &str,
    what: &str,
    name: &str,
    entries: &'a [E],
    names: impl Fn(&E) -> (&'static str, &'static [&'static str]),
) -> Result<&'a E, ConfigError> {
    let n = name.trim().to_ascii_lowercase();
    entries
        .iter()
        .find(|e| names(e).0 == n)
        .or_else(|| entries.iter().find(|e| names(e).1.contains(&n.as_str())))
        .ok_or_else(|| unknown_name(path, what, name, entries.iter().map(|e| names(e).0)))
}

/// The error for a `what` (policy, prefetcher, device) named `name` that is not one of `names`.
pub fn unknown_name<'a>(path: &str, what: &str, name: &str, names: impl Iterator<Item = &'a str>) -> ConfigError {
    let names: Vec<&str> = names.collect();
    ConfigError::new(path, format!("unknown {what} '{name}'; choose one of {}", names.join(", ")))
}
