//! PFC, the PreFetching Coordinator: Z. Zhang, K. Lee, X. Ma, Y. Zhou, "PFC: Transparent Optimization of
//! Existing Prefetching Strategies for Multi-level Storage Systems", ICDCS 2008, pp. 740-751
//! (`shared/seeds/000_*`, `001_*`; `shared/docs/algorithms/pfc.md`).
//!
//! PFC sits at a lower level (the storage server, L2), in front of that level's own cache and native
//! prefetcher, which it does not change: it rewrites each request from the level above into a *bypass*
//! prefix served around the native path (resident blocks as silent hits, missing ones read from below and
//! not cached) and a forwarded part extended by *readmore* blocks. [`algorithm`] holds Algorithms 1-2 (both
//! printed versions), [`queue`] the bypass and readmore queues, [`level`] the wrapper that applies the
//! decisions to any level.
//!
//! Every constant the paper leaves open is a parameter of [`PfcParams`], with the paper's value or the
//! resolution of `pfc.md` as default.

pub mod algorithm;
pub mod level;
pub mod queue;

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;
pub use algorithm::{Decision, PfcState};
pub use level::PfcLevel;

/// Which printed Algorithm 2 (the two texts differ in its first check and in `avg_req_size`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PfcVersion {
    /// Text `000` (pfc.md's A, most likely the published one): `req_size > avg AND L2 full` only zeroes
    /// readmore; `[end+1, end+req_size]` in L2 bypasses the whole request; requests over twice the
    /// average are left out of the average.
    #[default]
    #[serde(rename = "A", alias = "a", alias = "000", alias = "published")]
    A,
    /// Text `001` (pfc.md's B, earlier): `req_size > avg/2 OR [end+1, end+req_size] in L2` bypasses the
    /// whole request; plain mean.
    #[serde(rename = "B", alias = "b", alias = "001", alias = "early")]
    B,
}

/// Which PFC actions are on (the paper's Fig. 7 ablations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PfcMode {
    /// Bypass and readmore.
    #[default]
    Full,
    /// Bypass only: readmore is never applied.
    BypassOnly,
    /// Readmore only: nothing is bypassed.
    ReadmoreOnly,
}

/// PFC's parameters (`level[i].pfc`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfcParams {
    /// Printed version of Algorithm 2: `A` (= `000`, default) or `B` (= `001`).
    pub version: PfcVersion,
    /// `full` (default), `bypass-only` or `readmore-only`.
    pub mode: PfcMode,
    /// Size of each queue as a share of the level's capacity (default 0.1 \[paper §3.2\]).
    pub queue_share: f64,
    /// Size of each queue in blocks; overrides `queue_share`.
    pub queue_blocks: Option<u64>,
    /// Requests larger than this times the average are left out of the average; 0 = none. Default:
    /// 2 for version A \[paper A, Alg. 1\], 0 for B.
    pub outlier_factor: Option<f64>,
    /// A queue look-up hit or a re-insert moves the block to MRU (default true \[ours\], from "inserted or
    /// re-accessed").
    pub touch_refreshes: bool,
    /// The readmore window includes `end_pfc` itself (`rm_size + 1` blocks, the literal
    /// `[end_pfc, end_rm]`); default false: the `rm_size` blocks after `end_pfc` \[ours\].
    pub window_incl_end: bool,
    /// Version A: a readmore zeroed by the first check stays zero for this request (default false: the
    /// literal pseudocode lets the loop set it again).
    pub a_sticky_zero: bool,
    /// One context (lengths, average, queues) per client instead of one for the level (default false
    /// \[paper §3.2: the suggested extension\]).
    pub per_client: bool,
    /// Bypassed blocks read from below are cached at the level's eviction end, like DU (default false:
    /// the paper does not cache them; pfc.md: an option for studies).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cache_bypassed: bool,
    /// Timed, with `engine.prefetch_io = "apart"`: readmore blocks still join the read of the forwarded
    /// request's missing blocks, which the request waits for (default false: readmore is a prefetch, read
    /// apart like the native prefetch). Without `apart` readmore always joins.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub readmore_joined: bool,
}

impl Default for PfcParams {
    fn default() -> Self {
        Self {
            version: PfcVersion::A,
            mode: PfcMode::Full,
            queue_share: 0.1,
            queue_blocks: None,
            outlier_factor: None,
            touch_refreshes: true,
            window_incl_end: false,
            a_sticky_zero: false,
            per_client: false,
            cache_bypassed: false,
            readmore_joined: false,
        }
    }
}

impl PfcParams {
    /// Check the values; errors name `path.key`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if !(self.queue_share.is_finite() && self.queue_share > 0.0 && self.queue_share <= 100.0) {
            return Err(ConfigError::new(
                format!("{path}.queue_share"),
                format!("must be a positive share of the level's capacity (0.1 = 10%), got {}", self.queue_share),
            ));
        }
        if let Some(f) = self.outlier_factor {
            if !(f.is_finite() && f >= 0.0) {
                return Err(ConfigError::new(
                    format!("{path}.outlier_factor"),
                    format!("must be 0 (no outliers) or a positive factor, got {f}"),
                ));
            }
        }
        Ok(())
    }

    /// The outlier factor in effect (0 = none).
    #[must_use]
    pub fn outlier(&self) -> f64 {
        self.outlier_factor.unwrap_or(match self.version {
            PfcVersion::A => 2.0,
            PfcVersion::B => 0.0,
        })
    }

    /// Blocks per queue for a level of `capacity` blocks (at least 1).
    #[must_use]
    pub fn queue_cap(&self, capacity: usize) -> usize {
        match self.queue_blocks {
            Some(b) => usize::try_from(b).unwrap_or(usize::MAX),
            None => ((self.queue_share * capacity as f64).floor() as usize).max(1),
        }
    }
}
