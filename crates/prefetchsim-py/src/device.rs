//! Device entry points: presets, capacity, service-time benchmarks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::device::{self, bench};
use pyo3::prelude::*;
use serde_json::json;

use crate::detached::run_detached;
use crate::errors::{config_err, parse_json, uint_arg, ConfigError, PrefetchsimError};

/// Mean response time (ms) of isolated random reads of `sectors` on device `model` (a preset name):
/// the "mean disk response time" of the Split paper's response-time proxy.
#[pyfunction]
#[pyo3(signature = (model, sectors=None, count=None, seed=None))]
pub(crate) fn device_random_read_ms(
    model: &str,
    sectors: Option<&Bound<'_, PyAny>>,
    count: Option<&Bound<'_, PyAny>>,
    seed: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    // A request of up to 2^20 sectors (512 MiB) and 10^7 reads: more is no longer a response-time probe.
    let sectors = uint_arg(sectors, "sectors", 1, 1 << 20)? as u32;
    let count = uint_arg(count, "count", 10_000, 10_000_000)? as u32;
    let seed = uint_arg(seed, "seed", 1, u64::MAX)?;
    let mut dev = device::build("device", &ComponentSpec::named(model), seed).map_err(|e| config_err(&e))?;
    let pattern = bench::Pattern::RandomIsolated { sectors, align: sectors.max(1), gap_ms: 100.0, count };
    let st = bench::run(dev.as_mut(), &pattern, seed).map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(st.mean_response_ms)
}

/// A device given as a preset name or `{"name": ..., overrides}` in JSON text.
fn device_spec(device_json: &str) -> PyResult<ComponentSpec> {
    let v = parse_json("device", device_json)?;
    serde_json::from_value(v).map_err(|e| ConfigError::new_err(format!("device: {e}")))
}

/// Service-time statistics of a device on the standard patterns (`prefetchsim device bench`).
/// `device_json` is a preset name or `{"name": ..., overrides}` as JSON; returns a JSON list of rows
/// (`BenchStats`), one per pattern.
#[pyfunction]
#[pyo3(signature = (device_json, seed=1))]
pub(crate) fn device_bench(py: Python<'_>, device_json: &str, seed: u64) -> PyResult<String> {
    let spec = device_spec(device_json)?;
    let mut dev = device::build("device", &spec, seed).map_err(|e| config_err(&e))?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let rows = run_detached(py, None, &done, &stop, || {
        let mut rows = Vec::new();
        for p in bench::standard_patterns(dev.as_ref()) {
            if stop.load(Ordering::Relaxed) {
                return Err("interrupted".to_string());
            }
            rows.push(bench::run(dev.as_mut(), &p, seed).map_err(|e| format!("{}: {e}", p.label()))?);
        }
        Ok(rows)
    })?
    .map_err(PrefetchsimError::new_err)?;
    serde_json::to_string(&rows).map_err(|e| PrefetchsimError::new_err(e.to_string()))
}

/// Capacity in 512-byte sectors of a device: a preset name or `{"name": ..., overrides}` as JSON.
#[pyfunction]
pub(crate) fn device_capacity_sectors(device_json: &str) -> PyResult<u64> {
    let spec = device_spec(device_json)?;
    let dev = device::build("device", &spec, 1).map_err(|e| config_err(&e))?;
    Ok(dev.capacity())
}

/// The registered device presets as JSON `[[name, summary], …]`.
#[pyfunction]
pub(crate) fn devices() -> String {
    json!(device::DEVICES).to_string()
}
