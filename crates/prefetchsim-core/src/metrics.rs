//! Counters, derived metrics and the result record (its schema lives here, defined once).
//!
//! Definitions follow `shared/docs/models/metrics.md`. Hit ratios count demand accesses only; the
//! blocks of a request that the level above sent as its own prefetch are counted apart
//! (`upper_prefetch_*`), so that both "L2 hit ratio (demand)" and "(all)" can be reported.

use serde::{Deserialize, Serialize};

macro_rules! counters {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        /// Raw per-level counters.
        #[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct LevelCounters {
            $($(#[$meta])* pub $name: u64,)*
        }

        impl LevelCounters {
            /// Counter names, in schema order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// (name, value) pairs in schema order.
            #[must_use]
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name)),*]
            }

            /// Add `other` field by field (aggregating clients or levels).
            pub fn add(&mut self, other: &Self) {
                $(self.$name += other.$name;)*
            }
        }
    };
}

counters! {
    /// Requests that reached the level.
    requests,
    /// Demand block references (all blocks of an application request at L1; the demand blocks of a
    /// request from the level above elsewhere).
    demand_accesses,
    /// Demand references that found the block resident and ready.
    hits,
    /// Hits that were the first demand reference of a prefetched block.
    prefetch_hits,
    /// Demand references that did not hit (includes late prefetches).
    misses,
    /// Demand references that found the block still in flight because of a prefetch (timed runs).
    late_prefetch,
    /// Blocks of requests from above that the level above sent as its own prefetch.
    upper_prefetch_accesses,
    /// Those that hit.
    upper_prefetch_hits,
    /// Blocks this level's prefetcher brought in (resident and in-flight blocks are not re-issued).
    prefetch_issued,
    /// Prefetched blocks that received a first reference.
    prefetch_used,
    /// Of `prefetch_issued`, the blocks asked for by the second prefetcher of a `stack` (e.g. the
    /// sequential prefetcher under Mithril); the first prefetcher's are the rest.
    second_issued,
    /// Of `prefetch_used`, the second prefetcher's blocks.
    second_used,
    /// Prefetched blocks evicted without any reference (after second chances).
    unused_evicted,
    /// Prefetched blocks never referenced and still resident at the end.
    unused_resident_end,
    /// Prefetch blocks decided but not issued (no evictable room).
    prefetch_dropped,
    /// Unused prefetched blocks removed by invalidation or exclusive hand-off.
    prefetch_invalidated,
    /// Blocks evicted.
    evictions,
    /// Contiguous fetches sent to the level below (demand, prefetch or both in one I/O).
    fetches,
    /// Blocks in those fetches.
    fetched_blocks,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

impl LevelCounters {
    /// Demand hit ratio (strict: late prefetches are misses).
    #[must_use]
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.demand_accesses)
    }
    /// Demand miss ratio.
    #[must_use]
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.misses, self.demand_accesses)
    }
    /// Prefetch hits per demand access (the Split paper's "prefetch hit rate").
    #[must_use]
    pub fn prefetch_hit_ratio(&self) -> f64 {
        ratio(self.prefetch_hits, self.demand_accesses)
    }
    /// Hit ratio counting the upper level's prefetch requests as accesses too ("L2 hit ratio (all)").
    #[must_use]
    pub fn hit_ratio_all(&self) -> f64 {
        ratio(self.hits + self.upper_prefetch_hits, self.demand_accesses + self.upper_prefetch_accesses)
    }
    /// Hit ratio without prefetch hits (Butt et al.'s `hr2`).
    #[must_use]
    pub fn hit_ratio_excl_prefetch(&self) -> f64 {
        ratio(self.hits - self.prefetch_hits, self.demand_accesses)
    }
    /// Prefetch accuracy: used / issued.
    #[must_use]
    pub fn precision(&self) -> f64 {
        ratio(self.prefetch_used, self.prefetch_issued)
    }
    /// Prefetch coverage: used / (used + misses not caused by a late prefetch).
    #[must_use]
    pub fn coverage(&self) -> f64 {
        ratio(self.prefetch_used, self.prefetch_used + self.misses - self.late_prefetch)
    }
    /// PFC's unused prefetch: evicted unused + resident unused at the end.
    #[must_use]
    pub fn unused_prefetch(&self) -> u64 {
        self.unused_evicted + self.unused_resident_end
    }

    /// Derived metrics, in schema order.
    #[must_use]
    pub fn derived(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("hit_ratio", self.hit_ratio()),
            ("miss_ratio", self.miss_ratio()),
            ("prefetch_hit_ratio", self.prefetch_hit_ratio()),
            ("hit_ratio_all", self.hit_ratio_all()),
            ("hit_ratio_excl_prefetch", self.hit_ratio_excl_prefetch()),
            ("precision", self.precision()),
            ("coverage", self.coverage()),
        ]
    }

    /// Whether every issued prefetch is accounted for (metrics.md §1 conservation; no warm-up reset).
    #[must_use]
    pub fn prefetch_conserved(&self) -> bool {
        self.prefetch_issued
            == self.prefetch_used + self.unused_evicted + self.unused_resident_end + self.prefetch_invalidated
    }
}

/// A value in a result record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// An integer counter or size.
    Int(u64),
    /// A ratio or mean.
    Float(f64),
    /// A name.
    Text(String),
}

/// The result of one level in one run: identity, size and every metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Position in the hierarchy, 0 = closest to the application.
    pub level: usize,
    /// The level's name (default `L1`, `L2`, …).
    pub name: String,
    /// Policy name.
    pub policy: String,
    /// Prefetcher name.
    pub prefetcher: String,
    /// Capacity in blocks.
    pub capacity_blocks: u64,
    /// Block size in bytes.
    pub block_size: u64,
    /// Raw counters.
    pub counters: LevelCounters,
}

impl LevelReport {
    /// The flat record: identity, counters, derived metrics, in schema order.
    #[must_use]
    pub fn record(&self) -> Vec<(&'static str, Value)> {
        let mut v = vec![
            ("level", Value::Int(self.level as u64)),
            ("name", Value::Text(self.name.clone())),
            ("policy", Value::Text(self.policy.clone())),
            ("prefetcher", Value::Text(self.prefetcher.clone())),
            ("capacity_blocks", Value::Int(self.capacity_blocks)),
            ("capacity_bytes", Value::Int(self.capacity_blocks * self.block_size)),
        ];
        v.extend(self.counters.pairs().into_iter().map(|(k, x)| (k, Value::Int(x))));
        v.push(("unused_prefetch", Value::Int(self.counters.unused_prefetch())));
        v.extend(self.counters.derived().into_iter().map(|(k, x)| (k, Value::Float(x))));
        v
    }
}

/// The result of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Requests read from the trace (after the ops filter), warm-up included.
    pub requests: u64,
    /// Blocks in those requests.
    pub blocks: u64,
    /// Requests of the warm-up prefix, not counted in the levels' metrics.
    pub warmup_requests: u64,
    /// Whether the run stopped early (interrupted or limited).
    pub stopped_early: bool,
    /// One report per level, top first.
    pub levels: Vec<LevelReport>,
}
