//! Registry entry points: what components exist, and checking and canonicalising configs.
//!
//! Every list and check here comes from the core's one registry list (`prefetchsim_core::build`):
//! names, parameters and the pairing rules.

use prefetchsim_core::build;
use prefetchsim_core::component::ConfigError as CoreConfigError;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::metrics::schema;
use prefetchsim_trace::{formats, synth, writer};
use pyo3::prelude::*;
use serde_json::json;

use crate::errors::{config_err, parse_json, PrefetchsimError};

/// Names, parameters and pairing rules of every level's components, not sizes (the core's
/// `build::check_components`).
pub(crate) fn validate_components(c: &HierarchyConfig) -> Result<(), CoreConfigError> {
    build::check_components(c).map(drop)
}

/// The registries: policies, prefetchers, trace formats and generators, as JSON
/// `{"policies": [[name, summary], …], …}`.
#[pyfunction]
pub(crate) fn registry() -> String {
    json!({
        "policies": build::registry::POLICIES.iter().map(|e| (e.name, e.summary)).collect::<Vec<_>>(),
        "prefetchers": build::registry::PREFETCHERS.iter().map(|e| (e.name, e.summary)).collect::<Vec<_>>(),
        "formats": formats::FORMATS,
        "generators": synth::GENERATORS,
        "outputs": writer::OUTPUT_FORMATS,
    })
    .to_string()
}

/// Check a hierarchy config (JSON) without running it; raises `ConfigError` naming the key.
#[pyfunction]
pub(crate) fn check_config(config_json: &str) -> PyResult<()> {
    let c = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    validate_components(&c).map_err(|e| config_err(&e))
}

/// Check the level sizes of a hierarchy config (JSON) that resolve without the trace footprint, with
/// blocks of `block_size` bytes; raises `ConfigError` naming the level.
#[pyfunction]
pub(crate) fn check_sizes(config_json: &str, block_size: u64) -> PyResult<()> {
    let c = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    c.check_sizes(block_size).map_err(|e| config_err(&e))
}

/// A hierarchy config (JSON) as the core reads it, as JSON: checked like `check_config`, every
/// hierarchy-level default filled in, sizes parsed (`"5%"` and `0.05` agree) and component names
/// resolved to their registered names (aliases and case folded). Sweeps hash this form, so spelling
/// differences do not make distinct runs.
#[pyfunction]
pub(crate) fn canonical_config(config_json: &str) -> PyResult<String> {
    let mut c = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    for (i, l) in c.level.iter_mut().enumerate() {
        let (policy_name, pf_name) = build::check_level(&format!("level[{i}]"), l).map_err(|e| config_err(&e))?;
        // A `first+second` shorthand resolves to "stack" and would lose its parts: keep it as written.
        if !l.prefetcher.name.contains('+') {
            l.prefetcher.name = pf_name.to_string();
        }
        l.policy.name = policy_name.to_string();
        l.options.canonicalize_exclusive();
        // `pf_insert = "mru"` is the default spelled out: no built-in policy tells the two apart (a Python
        // plugin policy receives them as two codes, so its runs keep both), and the same run was computed
        // and stored twice under two ids.
        let built_in = build::registry::POLICIES.iter().any(|e| e.name == policy_name);
        if built_in && l.options.pf_insert == prefetchsim_core::policy::Placement::Mru {
            l.options.pf_insert = prefetchsim_core::policy::Placement::Default;
        }
        // The default name spelled out is the default: `name = "L1"` made every run of a grid new.
        if l.name.as_deref() == Some(format!("L{}", i + 1).as_str()) {
            l.name = None;
        }
    }
    serde_json::to_string(&c).map_err(|e| PrefetchsimError::new_err(format!("config: {e}")))
}

/// A share of a footprint of `footprint` blocks in whole blocks, as the core sizes a level
/// (`config::size::share_blocks`; 0 when less than one block).
#[pyfunction]
pub(crate) fn share_blocks(share: f64, footprint: u64) -> u64 {
    prefetchsim_core::config::size::share_blocks(share, footprint)
}

/// The result schema as JSON: `{"run": [field, …], "level": [field, …]}`, each field `{"name", "kind",
/// "meaning"}` in record order (`metrics::schema`); `kind` is int, float, text, bool or textlist.
#[pyfunction]
pub(crate) fn result_schema() -> String {
    json!({"run": schema::run_fields(), "level": schema::level_fields(), "timing": schema::timing_fields()}).to_string()
}
