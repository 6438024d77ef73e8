//! Wiring: a [`HierarchyConfig`] becomes levels with their policies and prefetchers, PFC coordinators
//! and fan-outs (several caches per level), after the sizes are resolved and the memory estimate passes.

use super::components;
use super::memory::{check_memory, physical_memory};
use super::pairing::check_pairing;
use crate::component::ConfigError;
use crate::config::{HierarchyConfig, LevelConfig};
use crate::engine::Hierarchy;
use crate::level::exclusive::Exclusive;
use crate::level::fanout::{Factory, FanOut, Route, Routing};
use crate::level::AnyLevel;
use crate::pfc::PfcLevel;
use crate::TraceFacts;

/// Build level `i` of a hierarchy (one cache) for a trace that declares `facts`: policy, prefetcher,
/// options and PFC. Returns the policy and prefetcher names with it.
fn build_one(
    path: &str,
    i: usize,
    l: &LevelConfig,
    cap: u64,
    block_size: u64,
    facts: &TraceFacts,
) -> Result<(&'static str, &'static str, Box<dyn AnyLevel>), ConfigError> {
    let (pf_name, pf) = components::build_prefetcher_for(&format!("{path}.prefetcher"), &l.prefetcher, facts)?;
    let (pol_name, mut level) =
        components::build_level_for(&format!("{path}.policy"), &l.policy, cap as usize, l.options.clone(), pf, facts)?;
    check_pairing(path, pol_name, pf_name, l.options.first_hit)?;
    level.set_block_bytes(block_size);
    let level = match &l.pfc {
        None => level,
        Some(_) if i == 0 => {
            return Err(ConfigError::new(
                format!("{path}.pfc"),
                "PFC coordinates a level with the level above it; the first level has none",
            ))
        }
        Some(p) => {
            p.validate(&format!("{path}.pfc"))?;
            Box::new(PfcLevel::new(level, p.clone())) as Box<dyn AnyLevel>
        }
    };
    if i == 0 && l.options.exclusive != Exclusive::None {
        return Err(ConfigError::new(
            format!("{path}.options.exclusive"),
            "exclusive caching is against the level above; the first level has none",
        ));
    }
    l.options.check_exclusive(path)?;
    Ok((pol_name, pf_name, level))
}

/// Whether level `l` is several caches (`per_client`, `instances`, `route`, `stripe_blocks`), and how
/// requests are routed to them.
fn fan_out_routing(path: &str, l: &LevelConfig) -> Result<Option<Routing>, ConfigError> {
    components::check_fan_out_keys(path, l)?;
    if l.per_client {
        return Ok(Some(Routing::PerClient));
    }
    Ok(match (l.instances, l.route()) {
        (1, _) => None,
        (k, Route::Client) => Some(Routing::Client(k)),
        (k, Route::Stripe) => Some(Routing::Stripe(k, l.stripe_blocks())),
    })
}

impl Hierarchy {
    /// Build the levels of `cfg` for a source that declares nothing about its fields
    /// ([`TraceFacts::UNKNOWN`]: stream 0 means "no stream id"). `footprint` (unique blocks of the trace)
    /// is needed when a size is a share of it. A run over a trace builds with [`Hierarchy::build_for`].
    pub fn build(cfg: &HierarchyConfig, block_size: u64, footprint: Option<u64>) -> Result<Self, ConfigError> {
        Self::build_for(cfg, block_size, footprint, TraceFacts::UNKNOWN)
    }

    /// Build the levels of `cfg` for a trace that declares `facts` (its source's
    /// [`RequestSource::facts`](crate::engine::RequestSource::facts)): the components settle their
    /// trace-dependent defaults from them (`crate::trace_facts`).
    pub fn build_for(
        cfg: &HierarchyConfig,
        block_size: u64,
        footprint: Option<u64>,
        facts: TraceFacts,
    ) -> Result<Self, ConfigError> {
        if block_size == 0 {
            return Err(ConfigError::new("trace.block_size", "the block size must be at least 1 byte"));
        }
        let mut caps = Vec::with_capacity(cfg.level.len());
        let mut above: Option<u64> = None;
        for (i, l) in cfg.level.iter().enumerate() {
            let cap = l
                .size
                .resolve(block_size, footprint, above)
                .map_err(|m| ConfigError::new(format!("level[{i}].size"), m))?;
            above = Some(cap);
            caps.push(cap);
            // The fan-out keys first: the memory check counts the instances.
            fan_out_routing(&format!("level[{i}]"), l)?;
        }
        check_memory(cfg, &caps, physical_memory())?;
        let mut levels = Vec::with_capacity(cfg.level.len());
        let mut names = Vec::with_capacity(cfg.level.len());
        for (i, (l, &cap)) in cfg.level.iter().zip(&caps).enumerate() {
            let path = format!("level[{i}]");
            let (pol_name, pf_name, level) = build_one(&path, i, l, cap, block_size, &facts)?;
            let level = match fan_out_routing(&path, l)? {
                None => level,
                Some(routing) => {
                    drop(level);
                    let (l, path) = (l.clone(), path.clone());
                    // The same config built once above, so building it again cannot fail.
                    let make: Factory = Box::new(move || {
                        build_one(&path, i, &l, cap, block_size, &facts)
                            .map(|b| b.2)
                            .expect("this level was built once")
                    });
                    Box::new(FanOut::new(routing, make)) as Box<dyn AnyLevel>
                }
            };
            let name = l.name.clone().unwrap_or_else(|| format!("L{}", i + 1));
            names.push((name, pol_name.to_string(), pf_name.to_string()));
            levels.push(level);
        }
        Ok(Self::from_levels(levels, names, block_size))
    }
}
