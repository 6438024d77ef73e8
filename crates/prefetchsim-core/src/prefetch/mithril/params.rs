//! Mithril's parameters: the presets (`paper`: Yang et al., "Mithril: Mining Sporadic Associations for
//! Cache Prefetching", SoCC 2017; `libcachesim`: its reference implementation's defaults), the
//! derived configuration and its checks (every bad value names its field).

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// Parameter sets of Mithril.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MithrilPreset {
    /// The paper's design: its association rule (all pairs checked, every strong pair and the closest
    /// weak one, equal counts: `confidence = 0`), metadata bounded by and charged to the cache,
    /// `lookahead = 50` (the paper's best on w94), `min_support = 2` (libCacheSim's; the paper gives
    /// none), `max_support = 8`, `pf_list_size = 2`, `max_metadata = 0.1`, recording at misses, one
    /// second chance.
    #[default]
    Paper,
    /// libCacheSim's `Mithril` defaults and conventions: `lookahead = 20`, `min_support = 2`,
    /// `max_support = 8`, `confidence = 1`, `pf_list_size = 2`, recording at misses,
    /// `max_metadata = 0.1` not charged (and exceeded by the fixed tables at small caches), mining
    /// threshold 5120 timestamps, `cycle_time = 2` (one second chance), and `compat_libcachesim`.
    Libcachesim,
}

/// When Mithril records a timestamp (§4.3 (a)-(d)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordOn {
    /// Demand misses (the design default).
    Miss,
    /// Evictions.
    Evict,
    /// Demand misses and evictions.
    MissEvict,
    /// Every demand access.
    EachReq,
}

/// What one logical timestamp stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// Each demand block access.
    Block,
    /// Each request.
    Request,
}

/// Mithril's parameters as written in a config: a preset and overrides.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MithrilParams {
    /// `paper` (default) or `libcachesim`.
    pub preset: MithrilPreset,
    /// Largest timestamp gap of an associated pair (paper 50, libCacheSim 20).
    pub lookahead: Option<u32>,
    /// Timestamps that move a block from the recording to the mining table (2).
    pub min_support: Option<u32>,
    /// More timestamps than this drop a block as too frequent (8; at most 255).
    pub max_support: Option<u32>,
    /// Allowed count difference and misaligned pairs (paper 0, libCacheSim 1).
    pub confidence: Option<u32>,
    /// Associated blocks kept per source, FIFO (2).
    pub pf_list_size: Option<u32>,
    /// `miss` (default), `evict`, `miss_evict` or `each_req`.
    pub record: Option<RecordOn>,
    /// Metadata limit as a share of the cache bytes (0.1).
    pub max_metadata: Option<f64>,
    /// Re-insertions at MRU of an unused prefetched block (1: libCacheSim's `cycle_time = 2`).
    pub second_chances: Option<u8>,
    /// Mining table rows = `mining_threshold / min_support` (5120).
    pub mining_threshold: Option<u32>,
    /// Recording table bytes as a share of the cache bytes (0.02, libCacheSim's; \[ours\] for the paper).
    pub recording_table: Option<f64>,
    /// Rows per prefetching-table shard (2000).
    pub shard_rows: Option<u32>,
    /// Bounded metadata only: most of the limit the recording and mining tables may take before both are
    /// shrunk in proportion (0.5) \[ours\].
    pub table_share: Option<f64>,
    /// `block` (default) or `request` \[ours\].
    pub clock: Option<Clock>,
    /// Take the metadata out of the level's capacity (paper true, libCacheSim false).
    pub charge_metadata: Option<bool>,
    /// libCacheSim's conventions (libcachesim preset): its association rule (first count-compatible
    /// candidate accepted, last pair unchecked), 15-bit wrapping timestamps, its table layout and
    /// metadata growth (fixed tables and a first shard allocated even past the limit).
    pub compat_libcachesim: Option<bool>,
    /// Do not record block `x` when blocks `x-1 ..= x-K` are all cached (0, the default: record it). The
    /// authors' harness ran Mithril-AMP with `sequential_type = 2, sequential_K = 1`: a sequential access
    /// is AMP's business, not an association to mine.
    pub skip_sequential: Option<u32>,
}

/// Mithril's resolved parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct MithrilConfig {
    /// See [`MithrilParams::lookahead`].
    pub lookahead: u32,
    /// See [`MithrilParams::min_support`].
    pub min_support: u32,
    /// See [`MithrilParams::max_support`].
    pub max_support: u32,
    /// See [`MithrilParams::confidence`].
    pub confidence: u32,
    /// See [`MithrilParams::pf_list_size`].
    pub pf_list_size: u32,
    /// See [`MithrilParams::record`].
    pub record: RecordOn,
    /// See [`MithrilParams::max_metadata`].
    pub max_metadata: f64,
    /// See [`MithrilParams::second_chances`].
    pub second_chances: u8,
    /// See [`MithrilParams::mining_threshold`].
    pub mining_threshold: u32,
    /// See [`MithrilParams::recording_table`].
    pub recording_table: f64,
    /// See [`MithrilParams::shard_rows`].
    pub shard_rows: u32,
    /// See [`MithrilParams::table_share`].
    pub table_share: f64,
    /// See [`MithrilParams::clock`].
    pub clock: Clock,
    /// See [`MithrilParams::charge_metadata`].
    pub charge_metadata: bool,
    /// See [`MithrilParams::compat_libcachesim`].
    pub compat_libcachesim: bool,
    /// See [`MithrilParams::skip_sequential`].
    pub skip_sequential: u32,
}

impl MithrilConfig {
    /// The values of `preset`.
    #[must_use]
    pub fn preset(preset: MithrilPreset) -> Self {
        let paper = preset == MithrilPreset::Paper;
        Self {
            lookahead: if paper { 50 } else { 20 },
            min_support: 2,
            max_support: 8,
            confidence: if paper { 0 } else { 1 },
            pf_list_size: 2,
            record: RecordOn::Miss,
            max_metadata: 0.1,
            second_chances: 1,
            mining_threshold: 5120,
            recording_table: 0.02,
            shard_rows: 2000,
            table_share: 0.5,
            clock: Clock::Block,
            charge_metadata: paper,
            compat_libcachesim: !paper,
            skip_sequential: 0,
        }
    }
}

impl MithrilParams {
    /// The preset with the overrides applied and checked; errors name `path.key`.
    pub fn resolve(&self, path: &str) -> Result<MithrilConfig, ConfigError> {
        let mut c = MithrilConfig::preset(self.preset);
        macro_rules! take {
            ($($f:ident),*) => { $(if let Some(v) = self.$f { c.$f = v; })* };
        }
        take!(
            lookahead,
            min_support,
            max_support,
            confidence,
            pf_list_size,
            record,
            max_metadata,
            second_chances,
            mining_threshold,
            recording_table,
            shard_rows,
            table_share,
            clock,
            charge_metadata,
            compat_libcachesim,
            skip_sequential
        );
        let err = |key: &str, msg: String| Err(ConfigError::new(format!("{path}.{key}"), msg));
        if c.lookahead == 0 {
            return err("lookahead", "must be at least 1".into());
        }
        if c.min_support == 0 || c.min_support > c.max_support {
            return err(
                "min_support",
                format!("must be in 1..=max_support ({}), got {}", c.max_support, c.min_support),
            );
        }
        if c.max_support > 255 {
            return err("max_support", format!("must be at most 255, got {}", c.max_support));
        }
        if !(1..=255).contains(&c.pf_list_size) {
            return err("pf_list_size", format!("must be in 1..=255, got {}", c.pf_list_size));
        }
        if !(c.max_metadata > 0.0 && c.max_metadata <= 1.0) {
            return err("max_metadata", format!("must be in (0, 1], got {}", c.max_metadata));
        }
        if !(c.recording_table > 0.0 && c.recording_table <= 1.0) {
            return err("recording_table", format!("must be in (0, 1], got {}", c.recording_table));
        }
        if !(c.table_share > 0.0 && c.table_share < 1.0) {
            return err("table_share", format!("must be in (0, 1), got {}", c.table_share));
        }
        if c.shard_rows == 0 {
            return err("shard_rows", "must be at least 1".into());
        }
        if c.mining_threshold < c.min_support {
            return err("mining_threshold", format!("must be at least min_support ({})", c.min_support));
        }
        Ok(c)
    }
}
