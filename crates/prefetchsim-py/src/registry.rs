//! Registry entry points: what components exist, and checking and canonicalising configs.
//!
//! Validation lives in one function, [`validate_components`], so that moving it to the core's registry
//! is one edit.

use prefetchsim_core::component::ConfigError as CoreConfigError;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::metrics::schema;
use prefetchsim_core::{policy, prefetch};
use prefetchsim_trace::{formats, synth, writer};
use pyo3::prelude::*;
use serde_json::json;

use crate::errors::{config_err, parse_json, PrefetchsimError};

/// Build each level with a placeholder size of one block: checks names and parameters, not sizes.
pub(crate) fn validate_components(c: &HierarchyConfig) -> Result<(), CoreConfigError> {
    for (i, l) in c.level.iter().enumerate() {
        let path = format!("level[{i}]");
        let (_, pf) = prefetch::build(&format!("{path}.prefetcher"), &l.prefetcher)?;
        policy::build_level(&format!("{path}.policy"), &l.policy, 1, l.options.clone(), pf)?;
    }
    Ok(())
}

/// The registries: policies, prefetchers, trace formats and generators, as JSON
/// `{"policies": [[name, summary], …], …}`.
#[pyfunction]
pub(crate) fn registry() -> String {
    json!({
        "policies": policy::POLICIES,
        "prefetchers": prefetch::PREFETCHERS,
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

/// A hierarchy config (JSON) as the core reads it, as JSON: checked like `check_config`, every
/// hierarchy-level default filled in, sizes parsed (`"5%"` and `0.05` agree) and component names
/// resolved to their registered names (aliases and case folded). Sweeps hash this form, so spelling
/// differences do not make distinct runs.
#[pyfunction]
pub(crate) fn canonical_config(config_json: &str) -> PyResult<String> {
    let mut c = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    for (i, l) in c.level.iter_mut().enumerate() {
        let path = format!("level[{i}]");
        let (pf_name, pf) =
            prefetch::build(&format!("{path}.prefetcher"), &l.prefetcher).map_err(|e| config_err(&e))?;
        let (policy_name, _) = policy::build_level(&format!("{path}.policy"), &l.policy, 1, l.options.clone(), pf)
            .map_err(|e| config_err(&e))?;
        // A `first+second` shorthand resolves to "stack" and would lose its parts: keep it as written.
        if !l.prefetcher.name.contains('+') {
            l.prefetcher.name = pf_name.to_string();
        }
        l.policy.name = policy_name.to_string();
    }
    serde_json::to_string(&c).map_err(|e| PrefetchsimError::new_err(format!("config: {e}")))
}

/// The result schema as JSON: `{"run": [field, …], "level": [field, …]}`, each field `{"name", "kind",
/// "meaning"}` in record order (`metrics::schema`); `kind` is int, float, text, bool or textlist.
#[pyfunction]
pub(crate) fn result_schema() -> String {
    json!({"run": schema::run_fields(), "level": schema::level_fields()}).to_string()
}
