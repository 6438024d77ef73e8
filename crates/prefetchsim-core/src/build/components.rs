//! A level's policy and prefetcher from their config specs, through the registry: the one place where a
//! component name becomes a constructor ([`build_prefetcher`] and [`build_level`]), for a trace that
//! declares [`TraceFacts`] (each registered component settles its trace-dependent defaults from them:
//! `NamedPrefetcher::for_trace`, `NamedPolicy::for_trace`; plugins get the specs as written). A component the
//! registry does not list (a plugin named by its path) is one more branch before the registry lookup in
//! each; a plugin policy goes into its level with [`registry::level_with`].

use super::pairing::check_pairing;
use super::registry;
use crate::component::{ComponentSpec, ConfigError};
use crate::config::{HierarchyConfig, LevelConfig};
use crate::level::fanout::Route;
use crate::level::{AnyLevel, LevelOptions};
use crate::prefetch::stack::build_shorthand;
use crate::prefetch::Prefetcher;
use crate::TraceFacts;

/// The prefetcher named by `spec` (the `a+b` shorthand of `stack`, or a registry entry); errors at
/// `path`. Returns its canonical name with it. For a source that declares nothing
/// ([`TraceFacts::UNKNOWN`]); [`build_prefetcher_for`] for a trace.
pub fn build_prefetcher(path: &str, spec: &ComponentSpec) -> Result<(&'static str, Box<dyn Prefetcher>), ConfigError> {
    build_prefetcher_for(path, spec, &TraceFacts::UNKNOWN)
}

/// [`build_prefetcher`] for a trace that declares `facts` (the prefetchers a `stack` names too).
pub fn build_prefetcher_for(
    path: &str,
    spec: &ComponentSpec,
    facts: &TraceFacts,
) -> Result<(&'static str, Box<dyn Prefetcher>), ConfigError> {
    let make = |path: &str, spec: &ComponentSpec| build_prefetcher_for(path, spec, facts).map(|(_, pf)| pf);
    if let Some(pf) = build_shorthand(path, spec, &make)? {
        return Ok(("stack", pf));
    }
    if crate::plugin::is_plugin_name(&spec.name) {
        return crate::plugin::build_prefetcher(path, spec);
    }
    let entry = registry::prefetcher(path, &spec.name)?;
    Ok((entry.name, entry.build(path, spec, &make, facts)?))
}

/// A level of `capacity` blocks whose policy is named by `spec` (errors at `path`), with options `opts`
/// and `prefetcher`. Returns the policy's canonical name with it. For a source that declares nothing
/// ([`TraceFacts::UNKNOWN`]); [`build_level_for`] for a trace.
pub fn build_level(
    path: &str,
    spec: &ComponentSpec,
    capacity: usize,
    opts: LevelOptions,
    prefetcher: Box<dyn Prefetcher>,
) -> Result<(&'static str, Box<dyn AnyLevel>), ConfigError> {
    build_level_for(path, spec, capacity, opts, prefetcher, &TraceFacts::UNKNOWN)
}

/// [`build_level`] for a trace that declares `facts`.
pub fn build_level_for(
    path: &str,
    spec: &ComponentSpec,
    capacity: usize,
    opts: LevelOptions,
    prefetcher: Box<dyn Prefetcher>,
    facts: &TraceFacts,
) -> Result<(&'static str, Box<dyn AnyLevel>), ConfigError> {
    if crate::plugin::is_plugin_name(&spec.name) {
        return crate::plugin::build_level(path, spec, capacity, opts, prefetcher);
    }
    let entry = registry::policy(path, &spec.name)?;
    Ok((entry.name, entry.build_level(path, spec, capacity, opts, prefetcher, facts)?))
}

/// Build level `l`'s prefetcher and policy (on a placeholder of one block) and check that they pair:
/// names, parameters and pairing rules, not sizes (nor the trace: what it declares settles defaults,
/// never validity). Returns the canonical (policy, prefetcher) names; `path` is the level's key path
/// (`level[1]`).
pub fn check_level(path: &str, l: &LevelConfig) -> Result<(&'static str, &'static str), ConfigError> {
    let (pf_name, pf) = build_prefetcher(&format!("{path}.prefetcher"), &l.prefetcher)?;
    let (pol_name, _) = build_level(&format!("{path}.policy"), &l.policy, 1, l.options.clone(), pf)?;
    check_pairing(path, pol_name, pf_name, l.options.first_hit)?;
    // Here too, not only when the hierarchy is built: canonical forms leave out a default route or
    // stripe unit, so a key that cannot apply is caught before a sweep canonicalises it away.
    check_fan_out_keys(path, l)?;
    l.options.check_exclusive(path)?;
    Ok((pol_name, pf_name))
}

/// [`check_level`] for every level of `cfg`, top first: what `check_config` checks beyond the schema.
pub fn check_components(cfg: &HierarchyConfig) -> Result<Vec<(&'static str, &'static str)>, ConfigError> {
    cfg.level.iter().enumerate().map(|(i, l)| check_level(&format!("level[{i}]"), l)).collect()
}

/// The most instances a level may have: each is a whole cache with its own tables, made when the level
/// is built.
const MAX_INSTANCES: u32 = 1 << 16;

/// Refuse fan-out keys that are out of range or that cannot apply, naming the key: a key that has no
/// effect where it is given (`route` beside `per_client`, `stripe_blocks` without `route = "stripe"`)
/// was accepted and ignored, the run then not being the one the config describes.
pub(crate) fn check_fan_out_keys(path: &str, l: &LevelConfig) -> Result<(), ConfigError> {
    if l.instances == 0 || l.instances > MAX_INSTANCES {
        return Err(ConfigError::new(
            format!("{path}.instances"),
            format!("{} instances: a level has 1 to {MAX_INSTANCES}", l.instances),
        ));
    }
    if l.per_client {
        if l.instances != 1 {
            return Err(ConfigError::new(
                format!("{path}.instances"),
                "per_client = true makes one instance per client; do not also set instances",
            ));
        }
        if l.route.is_some() {
            return Err(ConfigError::new(
                format!("{path}.route"),
                "per_client = true routes by client; route applies to instances = K (remove one of them)",
            ));
        }
        if l.stripe_blocks.is_some() {
            return Err(ConfigError::new(
                format!("{path}.stripe_blocks"),
                "per_client = true routes by client; stripe_blocks applies to instances = K with route = 'stripe'",
            ));
        }
    }
    if l.stripe_blocks.is_some() && l.route() != Route::Stripe {
        return Err(ConfigError::new(
            format!("{path}.stripe_blocks"),
            "the stripe unit applies to route = 'stripe' only (this level routes by client): remove it or set \
             route = 'stripe'",
        ));
    }
    if l.stripe_blocks == Some(0) {
        return Err(ConfigError::new(format!("{path}.stripe_blocks"), "the stripe unit must be at least 1 block"));
    }
    Ok(())
}
