//! Wiring: a [`HierarchyConfig`] becomes levels with their policies and prefetchers.

use crate::config::{ConfigError, HierarchyConfig};
use crate::level::AnyLevel;
use crate::metrics::LevelReport;
use crate::{policy, prefetch};

/// Levels top (closest to the application) first, each with its identity for reports.
pub struct Hierarchy {
    /// The levels.
    pub levels: Vec<Box<dyn AnyLevel>>,
    names: Vec<(String, String, String)>,
    block_size: u64,
}

impl Hierarchy {
    /// Build the levels of `cfg`. `footprint` (unique blocks of the trace) is needed when a size is a
    /// share of it.
    pub fn build(cfg: &HierarchyConfig, block_size: u64, footprint: Option<u64>) -> Result<Self, ConfigError> {
        if block_size == 0 {
            return Err(ConfigError::new("trace.block_size", "the block size must be at least 1 byte"));
        }
        let mut levels = Vec::with_capacity(cfg.level.len());
        let mut names = Vec::with_capacity(cfg.level.len());
        let mut above: Option<u64> = None;
        for (i, l) in cfg.level.iter().enumerate() {
            let path = format!("level[{i}]");
            let cap = l
                .size
                .resolve(block_size, footprint, above)
                .map_err(|m| ConfigError::new(format!("{path}.size"), m))?;
            above = Some(cap);
            let (pf_name, pf) = prefetch::build(&format!("{path}.prefetcher"), &l.prefetcher)?;
            let (pol_name, mut level) =
                policy::build_level(&format!("{path}.policy"), &l.policy, cap as usize, l.options.clone(), pf)?;
            crate::config::check_pairing(&path, pol_name, pf_name)?;
            level.set_block_bytes(block_size);
            let name = l.name.clone().unwrap_or_else(|| format!("L{}", i + 1));
            names.push((name, pol_name.to_string(), pf_name.to_string()));
            levels.push(level);
        }
        Ok(Self { levels, names, block_size })
    }

    /// The block size in bytes.
    #[must_use]
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Reports of every level (call after the run's end-of-run accounting).
    #[must_use]
    pub fn reports(&self) -> Vec<LevelReport> {
        self.levels
            .iter()
            .zip(&self.names)
            .enumerate()
            .map(|(i, (l, (name, pol, pf)))| LevelReport {
                level: i,
                name: name.clone(),
                policy: pol.clone(),
                prefetcher: pf.clone(),
                capacity_blocks: l.capacity() as u64,
                block_size: self.block_size,
                counters: l.counters().clone(),
            })
            .collect()
    }
}
