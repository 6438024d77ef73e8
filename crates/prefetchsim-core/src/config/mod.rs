//! Configuration of a hierarchy: levels (size, policy, prefetcher, options), the engine and, for timed
//! runs, the link between levels, the device and its I/O scheduler.
//!
//! Deserialised from TOML, JSON or Python dicts through serde. Unknown keys and impossible values are
//! errors that name the key (`level[1].policy.up_ratio: …`). Component parameters are typed structs with
//! defaults, looked up by name when the hierarchy is built ([`crate::build::registry`]). Sizes are
//! [`size`], the `[engine]` table [`engine`] (`shared/docs/models/event-engine.md` §4); `[link]` is
//! [`LinkParams`](crate::link::LinkParams) (`network.md`), `[device]` a preset of [`crate::device`] with
//! overrides (`disk.md`), `[scheduler]` [`SchedParams`](crate::device::SchedParams) (`iosched.md`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod engine;
pub mod size;

pub use engine::{EngineConfig, EngineKind, PrefetchIo, Replay, StreamKey, Think, TimedSettings};
pub use size::SizeSpec;

use crate::component::{plain_message, ComponentSpec, ConfigError};
use crate::level::LevelOptions;

fn default_policy() -> ComponentSpec {
    ComponentSpec::named("lru")
}
fn default_prefetcher() -> ComponentSpec {
    ComponentSpec::named("none")
}

/// One cache level.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LevelConfig {
    /// Display name (default `L1`, `L2`, …).
    #[serde(default)]
    pub name: Option<String>,
    /// Capacity.
    pub size: SizeSpec,
    /// Replacement policy (default `lru`).
    #[serde(default = "default_policy")]
    pub policy: ComponentSpec,
    /// Prefetcher (default `none`).
    #[serde(default = "default_prefetcher")]
    pub prefetcher: ComponentSpec,
    /// Level options.
    #[serde(default)]
    pub options: LevelOptions,
    /// PFC coordinator in front of this level (a level below another; `shared/docs/algorithms/pfc.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<crate::pfc::PfcParams>,
    /// One independent cache per client (`Request::client`), each with this level's size, policy,
    /// prefetcher, options and PFC, made on the client's first request ([`crate::level::fanout`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_client: bool,
    /// Instances of this level (servers), each a full cache of `size` (default 1); `route` picks one.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub instances: u32,
    /// How a request picks one of `instances` (unset: `client`, client mod K). An `Option` so that a
    /// route given beside `per_client` is refused even when it is the default.
    #[serde(default, skip_serializing_if = "is_default_route")]
    pub route: Option<crate::level::fanout::Route>,
    /// Stripe unit in blocks for `route = "stripe"` (unset: 64). An `Option` so that a unit given where
    /// nothing stripes is refused even when it is the default.
    #[serde(default, skip_serializing_if = "is_default_stripe")]
    pub stripe_blocks: Option<u64>,
}

fn one() -> u32 {
    1
}
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one(n: &u32) -> bool {
    *n == 1
}
/// The default route, given or not, is left out of the serialised form: sweeps hash that form, and
/// spelling out a default must not make a distinct run.
#[allow(clippy::ref_option)]
fn is_default_route(r: &Option<crate::level::fanout::Route>) -> bool {
    r.is_none_or(|r| r == crate::level::fanout::Route::default())
}
/// The stripe unit when `stripe_blocks` is not given.
pub const DEFAULT_STRIPE_BLOCKS: u64 = 64;
/// As [`is_default_route`], for the stripe unit.
#[allow(clippy::ref_option)]
fn is_default_stripe(n: &Option<u64>) -> bool {
    n.is_none_or(|n| n == DEFAULT_STRIPE_BLOCKS)
}

impl LevelConfig {
    /// A level of `size` with `policy` and no prefetcher.
    #[must_use]
    pub fn new(size: SizeSpec, policy: &str) -> Self {
        Self {
            name: None,
            size,
            policy: ComponentSpec::named(policy),
            prefetcher: default_prefetcher(),
            options: LevelOptions::default(),
            pfc: None,
            per_client: false,
            instances: 1,
            route: None,
            stripe_blocks: None,
        }
    }

    /// How a request picks one of the level's instances (the default when `route` is not given).
    #[must_use]
    pub fn route(&self) -> crate::level::fanout::Route {
        self.route.unwrap_or_default()
    }

    /// The stripe unit in blocks (the default when `stripe_blocks` is not given).
    #[must_use]
    pub fn stripe_blocks(&self) -> u64 {
        self.stripe_blocks.unwrap_or(DEFAULT_STRIPE_BLOCKS)
    }
}

/// A hierarchy: levels top (closest to the application) first, the engine, and for timed runs the link
/// between consecutive levels, the device under the last level and its I/O scheduler.
#[derive(Clone, Debug, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HierarchyConfig {
    /// The levels; `[[level]]` in TOML.
    pub level: Vec<LevelConfig>,
    /// Engine settings.
    #[serde(default)]
    pub engine: EngineConfig,
    /// Timed: the link between each pair of consecutive levels (default: PFC's 6 ms + 0.03 ms/page per
    /// message, no contention).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::link::LinkParams>,
    /// Timed: the device under the last level, a preset name or `{ name = "...", overrides }` (default
    /// `cheetah9lp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<ComponentSpec>,
    /// Timed: the device's I/O scheduler (default DEADLINE with Linux 2.6.12 parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<crate::device::SchedParams>,
}

impl HierarchyConfig {
    /// Parse from a JSON value (what the Python layer passes), naming the offending key on error.
    pub fn from_json(v: Value) -> Result<Self, ConfigError> {
        let cfg: Self = serde_path_to_error::deserialize(v).map_err(|e| {
            let p = e.path().to_string();
            ConfigError::new(if p == "." { "config".into() } else { p }, plain_message(&e.inner().to_string()))
        })?;
        if cfg.level.is_empty() {
            return Err(ConfigError::new("level", "a hierarchy needs at least one level"));
        }
        cfg.validate_timing()?;
        Ok(cfg)
    }

    /// Check the engine keys and, for a timed engine, the link, device and scheduler parameters; the
    /// time-only tables are errors for the instant engine.
    pub fn validate_timing(&self) -> Result<Option<TimedSettings>, ConfigError> {
        let timed = self.engine.timed()?;
        if timed.is_none() {
            for (k, on) in [
                ("link", self.link.is_some()),
                ("device", self.device.is_some()),
                ("scheduler", self.scheduler.is_some()),
            ] {
                if on {
                    return Err(ConfigError::new(k, "used by the timed engine only; set engine.kind = 'timed'"));
                }
            }
            return Ok(None);
        }
        if let Some(l) = &self.link {
            l.validate("link")?;
        }
        if let Some(d) = &self.device {
            crate::device::resolve("device", d)?;
        }
        if let Some(s) = &self.scheduler {
            s.validate("scheduler")?;
        }
        Ok(timed)
    }

    /// The device spec of a timed run (default `cheetah9lp`).
    #[must_use]
    pub fn device_spec(&self) -> ComponentSpec {
        self.device.clone().unwrap_or_else(|| ComponentSpec::named("cheetah9lp"))
    }

    /// Parse from TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let v: Value = toml::from_str(text).map_err(|e| ConfigError::new("toml", e.to_string()))?;
        Self::from_json(v)
    }

    /// Resolve every level size that does not need the trace footprint, as a run with `block_size` would:
    /// a sweep checks its grid with this before anything runs (0 blocks, less than one block or `"2x"` on
    /// the first level failed only once the runs had started). A share of the footprint, and a multiple
    /// of a level sized by one, is left to the run.
    pub fn check_sizes(&self, block_size: u64) -> Result<(), ConfigError> {
        // None: the first level; Some(None): the level above is sized by the footprint.
        let mut above: Option<Option<u64>> = None;
        for (i, l) in self.level.iter().enumerate() {
            let known = match (l.size, above) {
                (s, _) if s.needs_footprint() => None,
                (SizeSpec::OfAbove(_), Some(None)) => None,
                (s, a) => Some(
                    s.resolve(block_size, None, a.flatten())
                        .map_err(|m| ConfigError::new(format!("level[{i}].size"), m))?,
                ),
            };
            above = Some(known);
        }
        Ok(())
    }

    /// Whether any level size is a share of the footprint (the caller must then measure it).
    #[must_use]
    pub fn needs_footprint(&self) -> bool {
        self.level.iter().any(|l| l.size.needs_footprint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_shares_and_negative_numbers_read_plainly_in_errors() {
        let e = SizeSpec::Footprint(1e-7).resolve(4096, Some(1000), None).unwrap_err();
        assert_eq!(e, "0.00001% of the footprint is less than one block (4096 B)");
        // A size in blocks is not repeated ("2^40 blocks is 2^40 blocks").
        let e = SizeSpec::Blocks(1 << 40).resolve(4096, None, None).unwrap_err();
        assert_eq!(e, "1099511627776 blocks: more than the 2^32 - 1 blocks a level can hold");
        let e = SizeSpec::Bytes(1 << 60).resolve(4096, None, None).unwrap_err();
        assert_eq!(
            e,
            "1152921504606846976 B is 281474976710656 blocks: more than the 2^32 - 1 blocks a level can hold"
        );
        assert_eq!(
            plain_message("invalid value: integer `-5`, expected u64"),
            "-5 is negative; expected a whole number, 0 or more"
        );
        assert_eq!(plain_message("unknown field `x`"), "unknown field `x`");
        assert_eq!(
            plain_message("invalid type: boolean `true`, expected struct PfcParams"),
            "boolean `true` where a table of parameters is expected ({} for the defaults)"
        );
        let e =
            HierarchyConfig::from_json(serde_json::json!({"level": [{"size": 4}], "engine": {"warmup_requests": -5}}))
                .unwrap_err()
                .to_string();
        assert_eq!(e, "engine.warmup_requests: -5 is negative; expected a whole number, 0 or more");
        // An integer beyond u64 reaches serde as a float; it used to read "is not a whole number".
        let big = serde_json::from_str::<serde_json::Value>(
            r#"{"level": [{"size": 4}], "engine": {"seed": 99999999999999999999999}}"#,
        )
        .unwrap();
        let e = HierarchyConfig::from_json(big).unwrap_err().to_string();
        assert!(e.starts_with("engine.seed: 1e+23 is too large; expected a whole number, at most 2^64 - 1"), "{e}");
        assert_eq!(
            plain_message("invalid type: floating point `2.5`, expected u32"),
            "2.5 is not a whole number; expected a whole number, 0 or more"
        );
    }

    /// A warm-up that the limit ends inside, or that covers the whole trace, measures nothing: errors
    /// naming the key (they used to report the warm-up's counters as measured ones).
    #[test]
    fn a_warm_up_that_leaves_nothing_to_measure_is_an_error() {
        let cfg = |engine: serde_json::Value| {
            HierarchyConfig::from_json(serde_json::json!({"level": [{"size": 4}], "engine": engine}))
        };
        let e = cfg(serde_json::json!({"warmup_requests": 100, "limit": 100})).unwrap_err();
        assert_eq!(e.path, "engine.limit", "{e}");
        let ok = cfg(serde_json::json!({"warmup_requests": 100, "limit": 101})).unwrap();
        let e = ok.engine.check_measured(100, false).unwrap_err();
        assert_eq!(e.path, "engine.warmup_requests", "{e}");
        assert!(e.message.contains("(100 requests)"), "{e}");
        assert!(ok.engine.check_measured(101, false).is_ok());
        assert!(ok.engine.check_measured(50, true).is_ok(), "a run stopped early is reported as such");
        assert!(cfg(serde_json::json!({})).unwrap().engine.check_measured(0, false).is_ok());
        // A limit of 0 reported hit and miss ratios of 0 as measured.
        let e = cfg(serde_json::json!({"limit": 0})).unwrap_err();
        assert_eq!(e.path, "engine.limit", "{e}");
        assert!(e.message.starts_with("0 requests measure nothing"), "{e}");
        assert!(cfg(serde_json::json!({"limit": 1})).is_ok());
    }

    /// A value of the wrong type says what the key takes and what it got, not serde's "did not match any
    /// variant of untagged enum".
    #[test]
    fn a_value_of_the_wrong_type_says_what_the_key_takes() {
        for (toml, key, needle) in [
            ("[[level]]\nsize = 10\npolicy = 3\n", "level[0].policy", "expected a name"),
            ("[[level]]\nsize = 10\nprefetcher = ['obl', 'obl']\n", "level[0].prefetcher", r#"got ["obl","obl"]"#),
            ("[[level]]\nsize = true\n", "level[0].size", "expected blocks (1000)"),
        ] {
            let e = HierarchyConfig::from_toml(toml).unwrap_err().to_string();
            assert!(e.starts_with(key) && e.contains(needle) && !e.contains("untagged"), "{toml}: {e}");
        }
        // Parameters are read when the level is built.
        for (toml, key, needle) in [
            (
                "[[level]]\nsize = 10\nprefetcher = { name = 'ra', seq_gate = 2 }\n",
                "level[0].prefetcher.seq_gate",
                "got 2",
            ),
            (
                "[[level]]\nsize = 10\npolicy = { name = 'splitlru', up_ratio = [1] }\n",
                "level[0].policy.up_ratio",
                "[1]",
            ),
        ] {
            let cfg = HierarchyConfig::from_toml(toml).unwrap();
            let e = crate::engine::Hierarchy::build(&cfg, 4096, None).err().expect(toml).to_string();
            assert!(e.starts_with(key) && e.contains(needle) && !e.contains("untagged"), "{toml}: {e}");
        }
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = HierarchyConfig::from_toml("[[level]]\nsize = 10\npolcy = 'lru'\n").unwrap_err();
        assert!(e.path.contains("level[0]"), "{e}");
        assert!(e.message.contains("polcy"), "{e}");
        let e = HierarchyConfig::from_toml("[[level]]\nsize = '12 parsecs'\n").unwrap_err();
        assert!(e.to_string().contains("level[0].size"), "{e}");
        let e = HierarchyConfig::from_toml("[[level]]\nsize = 1\n[engine]\nkind = 'warp'\n").unwrap_err();
        assert!(e.to_string().contains("engine.kind"), "{e}");
    }

    #[test]
    fn components_read_as_names_or_tables() {
        let c = HierarchyConfig::from_toml(
            "[[level]]\nsize = '5%'\npolicy = { name = 'splitlru', up_ratio = 0.66 }\nprefetcher = 'obl'\n",
        )
        .unwrap();
        assert_eq!(c.level[0].policy.name, "splitlru");
        assert_eq!(c.level[0].policy.params["up_ratio"], serde_json::json!(0.66));
        assert_eq!(c.level[0].prefetcher, ComponentSpec::named("obl"));
    }
}
