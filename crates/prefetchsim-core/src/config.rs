//! Configuration of a hierarchy: levels (size, policy, prefetcher, options), the engine and, for timed
//! runs, the link between levels, the device and its I/O scheduler.
//!
//! Deserialised from TOML, JSON or Python dicts through serde. Unknown keys and impossible values are
//! errors that name the key (`level[1].policy.up_ratio: …`). Component parameters are typed structs with
//! defaults, looked up by name in the registries of [`crate::policy`] and [`crate::prefetch`]. The timed
//! engine's settings follow `shared/docs/models/event-engine.md` §4; `[link]` is
//! [`LinkParams`](crate::link::LinkParams) (`network.md`), `[device]` a preset of [`crate::device`] with
//! overrides (`disk.md`), `[scheduler]` [`SchedParams`](crate::device::SchedParams) (`iosched.md`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::component::{plain_message, ComponentSpec, ConfigError};
use crate::level::LevelOptions;

/// Reject a policy and prefetcher of one level that cannot work together; `level` is the level's key path
/// (`level[1]`), the error names its `prefetcher` key.
///
/// The `sarc` policy estimates SEQ's marginal utility from the sequential misses that only the `sarc`
/// prefetcher reports (as `Placement::List(1)` on demand blocks): with another prefetcher its adaptation
/// would squeeze SEQ to nothing whatever the workload. `none` is allowed (SEQ stays empty: LRU over
/// RANDOM). The `sarc` prefetcher itself works over any policy (see `prefetch::sarc`).
pub fn check_pairing(level: &str, policy: &str, prefetcher: &str) -> Result<(), ConfigError> {
    if policy == "sarc" && !matches!(prefetcher, "sarc" | "none") {
        return Err(ConfigError::new(
            format!("{level}.prefetcher"),
            format!(
                "policy 'sarc' needs prefetcher 'sarc' (its SEQ list adapts to the sequential misses only that \
                 prefetcher reports), or 'none'; got '{prefetcher}'"
            ),
        ));
    }
    Ok(())
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
            let x: f64 = num.parse().map_err(|_| bad())?;
            return Self::footprint(x);
        }
        let mult: u64 = match unit.to_ascii_lowercase().as_str() {
            "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(bad()),
        };
        let x: f64 = num.parse().map_err(|_| bad())?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!("size '{s}' must not be negative"));
        }
        Ok(SizeSpec::Bytes((x * mult as f64).round() as u64))
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
                let fp = footprint.ok_or("a share of the footprint needs the trace footprint")?;
                (x * fp as f64).floor() as u64
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
            return Err(format!("{self} is {n} blocks, more than the 2^32 a level can hold"));
        }
        Ok(n)
    }
}

impl<'de> Deserialize<'de> for SizeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Float(f64),
            Text(String),
        }
        let r = match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(SizeSpec::Blocks(n)),
            Raw::Float(x) => SizeSpec::footprint(x),
            Raw::Text(s) => SizeSpec::parse(&s),
        };
        r.map_err(serde::de::Error::custom)
    }
}

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
    /// How a request picks one of `instances` (default `client`: client mod K).
    #[serde(default, skip_serializing_if = "is_default_route")]
    pub route: crate::level::fanout::Route,
    /// Stripe unit in blocks for `route = "stripe"` (default 64).
    #[serde(default = "default_stripe", skip_serializing_if = "is_default_stripe")]
    pub stripe_blocks: u64,
}

fn one() -> u32 {
    1
}
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_one(n: &u32) -> bool {
    *n == 1
}
fn is_default_route(r: &crate::level::fanout::Route) -> bool {
    *r == crate::level::fanout::Route::default()
}
fn default_stripe() -> u64 {
    64
}
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_default_stripe(n: &u64) -> bool {
    *n == default_stripe()
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
            route: crate::level::fanout::Route::default(),
            stripe_blocks: default_stripe(),
        }
    }
}

/// Which engine runs the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// No time; prefetches land at once (hit-ratio studies).
    #[default]
    Instant,
    /// Discrete events in integer nanoseconds: links, scheduler, device, in-flight reads.
    Timed,
}

/// How the timed engine issues the trace's requests (event-engine.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    /// At the trace's timestamps (scaled by `time_scale`), whatever is outstanding.
    Open,
    /// Each stream (or the whole trace) keeps `iodepth` requests outstanding; the next is issued a think
    /// time after a completion (default; PFC replays the Purdue traces this way).
    #[default]
    Closed,
}

/// How the timed engine reads a level's own prefetch that comes with a demand miss, at the last level
/// (the reads that go to the device; `engine.prefetch_io`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefetchIo {
    /// The prefetched blocks that directly follow a missed run join its read: one I/O, which the request
    /// waits for whole (Linux's synchronous read-ahead window; default, the engine's behaviour so far).
    /// Prefetch runs not contiguous with a demand read are issued at once, as reads of their own.
    #[default]
    Joined,
    /// A prefetch is an I/O of its own: an access that reads some of the requested blocks issues its
    /// prefetch reads (the level's native prefetch and PFC's readmore, i.e. every block past the request)
    /// only when those reads are done, and the request does not wait for them ("asynchronously after the
    /// fetch request is fulfilled", STEP §4.2.1). A request finding such a block in flight waits for it.
    Apart,
}

/// What identifies a closed-loop stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKey {
    /// The request's (client, stream) pair (default).
    #[default]
    ClientStream,
    /// The client alone: a process of a file-level trace (`multi_real`), a host of MSR.
    Client,
    /// The stream alone (file, ASU, volume).
    Stream,
}

/// Think time of closed-loop replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Think {
    /// The trace's gap between the stream's consecutive requests, `max(0, ts[i+1] - ts[i])`, scaled by
    /// `time_scale` (default; 0 for traces without timestamps).
    Gap,
    /// `think_ms` after every completion.
    Constant,
    /// None: the next request goes out at the completion.
    None,
}

/// Engine settings. The keys after `limit` belong to the timed engine and are errors with
/// `kind = "instant"`; open-only and closed-only keys are errors in the other mode.
#[derive(Clone, Debug, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// The engine.
    pub kind: EngineKind,
    /// Requests at the start that warm the caches but are not counted.
    pub warmup_requests: u64,
    /// Stop after this many requests (after the ops filter), if set.
    pub limit: Option<u64>,
    /// Timed: `open` or `closed` (default `closed`: the models README's default, PFC's synchronous replay
    /// of the Purdue traces; event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// Timed: factor on trace time differences (open-loop arrival gaps, `think = "gap"`); default 1
    /// (event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
    /// Timed, open loop: at most this many requests outstanding; later arrivals wait in FIFO order
    /// (the wait is reported and is part of their response time). Default: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_outstanding: Option<u64>,
    /// Timed, closed loop: requests each loop keeps outstanding (default 1, synchronous replay; fio's
    /// iodepth, DiskSim's `closedios`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// Timed, closed loop: one loop per stream (client, stream) of the trace (default true: each process
    /// of the Butt et al. replay), or one loop over the whole trace in trace order (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_stream: Option<bool>,
    /// Timed, closed loop with `per_stream`: what a stream is (default `client_stream`; `client` makes
    /// each process of a file-level trace one synchronous stream, as PFC replays the Purdue traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_key: Option<StreamKey>,
    /// Timed, closed loop: think time rule (default `gap`, the trace's own spacing as event-engine.md §4
    /// suggests for timestamp-only traces; `constant` when `think_ms` is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
    /// Timed, closed loop: the constant think time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<f64>,
    /// Timed: after the last request, run until every read in flight has arrived (default true,
    /// event-engine.md §4); false stops when the last application request completes, leaving prefetches
    /// in flight (counted as `prefetch_inflight_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<bool>,
    /// Timed: writes block their closed-loop stream until they complete (default false: only reads block,
    /// as in the Butt et al. simulator; event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_writes: Option<bool>,
    /// Timed: run seed; the device's RNG is derived from it (default 1 \[ours\]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Timed: how the last level reads the prefetch that comes with a demand miss: `joined` (default,
    /// one I/O the request waits for) or `apart` (its own I/O, issued when the demand read is done and
    /// not waited for); see [`PrefetchIo`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefetch_io: Option<PrefetchIo>,
}

/// The timed engine's settings with every default applied ([`EngineConfig::timed`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TimedSettings {
    /// Open or closed loop.
    pub replay: Replay,
    /// Factor on trace time differences.
    pub time_scale: f64,
    /// Open loop: admission limit.
    pub max_outstanding: Option<u64>,
    /// Closed loop: requests outstanding per loop.
    pub iodepth: u32,
    /// Closed loop: one loop per stream.
    pub per_stream: bool,
    /// Closed loop: what a stream is.
    pub stream_key: StreamKey,
    /// Closed loop: think rule.
    pub think: Think,
    /// Closed loop: constant think time, ms.
    pub think_ms: f64,
    /// Run until nothing is in flight.
    pub drain: bool,
    /// Writes block closed-loop streams.
    pub sync_writes: bool,
    /// Run seed.
    pub seed: u64,
    /// How the last level reads its prefetch beside a demand miss.
    pub prefetch_io: PrefetchIo,
}

impl EngineConfig {
    /// Check that the keys fit the engine kind and replay mode, and return the timed settings (with
    /// defaults) for a timed engine, `None` for the instant engine.
    pub fn timed(&self) -> Result<Option<TimedSettings>, ConfigError> {
        let set: [(&str, bool); 12] = [
            ("replay", self.replay.is_some()),
            ("time_scale", self.time_scale.is_some()),
            ("max_outstanding", self.max_outstanding.is_some()),
            ("iodepth", self.iodepth.is_some()),
            ("per_stream", self.per_stream.is_some()),
            ("stream_key", self.stream_key.is_some()),
            ("think", self.think.is_some()),
            ("think_ms", self.think_ms.is_some()),
            ("drain", self.drain.is_some()),
            ("sync_writes", self.sync_writes.is_some()),
            ("seed", self.seed.is_some()),
            ("prefetch_io", self.prefetch_io.is_some()),
        ];
        if self.kind == EngineKind::Instant {
            if let Some((k, _)) = set.iter().find(|(_, on)| *on) {
                return Err(ConfigError::new(
                    format!("engine.{k}"),
                    "a setting of the timed engine; set engine.kind = 'timed' to use it",
                ));
            }
            return Ok(None);
        }
        let replay = self.replay.unwrap_or_default();
        let (wrong_mode, other): (&[&str], &str) = match replay {
            Replay::Open => (&["iodepth", "per_stream", "stream_key", "think", "think_ms"], "closed"),
            Replay::Closed => (&["max_outstanding"], "open"),
        };
        if let Some((k, _)) = set.iter().find(|(k, on)| *on && wrong_mode.contains(k)) {
            let this = if other == "closed" { "open" } else { "closed" };
            return Err(ConfigError::new(
                format!("engine.{k}"),
                format!(
                    "only with engine.replay = '{other}' (this run replays '{this}': remove the key or change replay)"
                ),
            ));
        }
        let time_scale = self.time_scale.unwrap_or(1.0);
        if !(time_scale.is_finite() && time_scale >= 0.0) {
            return Err(ConfigError::new(
                "engine.time_scale",
                format!("must be a finite number >= 0, got {time_scale}"),
            ));
        }
        if self.max_outstanding == Some(0) {
            return Err(ConfigError::new("engine.max_outstanding", "must be at least 1"));
        }
        if self.per_stream == Some(false) && self.stream_key.is_some() {
            return Err(ConfigError::new("engine.stream_key", "only with per_stream = true"));
        }
        let iodepth = self.iodepth.unwrap_or(1);
        if iodepth == 0 {
            return Err(ConfigError::new("engine.iodepth", "must be at least 1"));
        }
        let think = match (self.think, self.think_ms) {
            (Some(Think::Constant), None) => {
                return Err(ConfigError::new("engine.think_ms", "needed with think = 'constant'"));
            }
            (Some(t), Some(_)) if t != Think::Constant => {
                return Err(ConfigError::new("engine.think_ms", "only with think = 'constant'"));
            }
            (Some(t), _) => t,
            (None, Some(_)) => Think::Constant,
            (None, None) => Think::Gap,
        };
        let think_ms = self.think_ms.unwrap_or(0.0);
        if !(think_ms.is_finite() && think_ms >= 0.0) {
            return Err(ConfigError::new("engine.think_ms", format!("must be a finite number >= 0, got {think_ms}")));
        }
        Ok(Some(TimedSettings {
            replay,
            time_scale,
            max_outstanding: self.max_outstanding,
            iodepth,
            per_stream: self.per_stream.unwrap_or(true),
            stream_key: self.stream_key.unwrap_or_default(),
            think,
            think_ms,
            drain: self.drain.unwrap_or(true),
            sync_writes: self.sync_writes.unwrap_or(false),
            seed: self.seed.unwrap_or(1),
            prefetch_io: self.prefetch_io.unwrap_or_default(),
        }))
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
        assert_eq!(
            plain_message("invalid value: integer `-5`, expected u64"),
            "-5 is negative; expected a whole number, 0 or more"
        );
        assert_eq!(plain_message("unknown field `x`"), "unknown field `x`");
        let e =
            HierarchyConfig::from_json(serde_json::json!({"level": [{"size": 4}], "engine": {"warmup_requests": -5}}))
                .unwrap_err()
                .to_string();
        assert_eq!(e, "engine.warmup_requests: -5 is negative; expected a whole number, 0 or more");
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
