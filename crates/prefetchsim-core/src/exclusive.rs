//! Exclusive caching between a level and the level above it: DU and DEMOTE
//! (`shared/docs/algorithms/multilevel.md`).
//!
//! - **DU**: Z. Chen, Y. Zhang, Y. Zhou, H. Scott, B. Schiefer, "Empirical Evaluation of Multi-level
//!   Buffer Cache Collaboration for Storage Systems", SIGMETRICS 2005, as described and used as a
//!   baseline in Z. Zhang, K. Lee, X. Ma, Y. Zhou, "PFC: Transparent Optimization of Existing
//!   Prefetching Strategies for Multi-level Storage Systems", ICDCS 2008, §4.3: every block the level
//!   sends up gets the highest eviction priority (the eviction end of its list), because the level above
//!   now holds it. Blocks the level prefetched on its own keep their place until they are asked for.
//! - **DEMOTE**: T. M. Wong, J. Wilkes, "My Cache or Yours? Making Storage More Exclusive", USENIX ATC
//!   2002: the level above sends every block it evicts down (`DEMOTE`), this level caches it at MRU, and
//!   drops the blocks it sends up (a hit leaves the cache; a missed block is passed up without being
//!   cached). Blocks this level's own prefetcher brings in stay until asked for, so with a prefetcher
//!   at this level a block can briefly be in both caches; without one the two levels are disjoint.
//!
//! The option belongs to the lower level (`level[i].options.exclusive`, i >= 1); the engines pass the
//! evictions of level `i - 1` down when level `i` is `demote`. Every block is treated as clean (the
//! engines model no dirty data), so every eviction is demoted.

use serde::{Deserialize, Serialize};

/// How a level keeps itself exclusive of the level above.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exclusive {
    /// Inclusive (default): the level caches what it sends up like any other block.
    #[default]
    None,
    /// DU: blocks sent up move to the eviction end.
    Du,
    /// DEMOTE: blocks sent up leave the level; the level above's evictions come down.
    Demote,
}
