//! The extension's exceptions and the conversions of core errors and arguments into them.
//!
//! The exception classes are created with module `prefetchsim` (not `prefetchsim._core`), so that
//! tracebacks and `repr` show `prefetchsim.ConfigError`, the name users import.

use prefetchsim_core::batch::TaskError;
use prefetchsim_core::component::ConfigError as CoreConfigError;
use prefetchsim_core::engine::SourceError;
use prefetchsim_trace::{TraceError as CoreTraceError, TraceSpec};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOverflowError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;

create_exception!(prefetchsim, PrefetchsimError, PyException, "Base class of every prefetchsim error.");
create_exception!(
    prefetchsim,
    ConfigError,
    PrefetchsimError,
    "A configuration names an unknown key, value or component, or an impossible size."
);
create_exception!(
    prefetchsim,
    PluginError,
    PrefetchsimError,
    "A plugin's callback (a Python prefetcher or policy named `module:Class`) raised or returned a bad value \
     during a run; the message names the config key, the plugin and the Python traceback."
);
create_exception!(
    prefetchsim,
    TraceError,
    PrefetchsimError,
    "A trace cannot be opened, detected or parsed (the message names file, line/record and field)."
);

/// Add the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PrefetchsimError", py.get_type::<PrefetchsimError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("PluginError", py.get_type::<PluginError>())?;
    Ok(())
}

pub(crate) fn config_err(e: &CoreConfigError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

pub(crate) fn trace_err(e: &CoreTraceError) -> PyErr {
    match e {
        CoreTraceError::Option { .. } => ConfigError::new_err(e.to_string()),
        _ => TraceError::new_err(e.to_string()),
    }
}

pub(crate) fn source_err(e: &SourceError) -> PyErr {
    if let Some(t) = e.downcast_ref::<CoreTraceError>() {
        return trace_err(t);
    }
    if let Some(c) = e.downcast_ref::<CoreConfigError>() {
        return config_err(c);
    }
    if let Some(f) = e.downcast_ref::<prefetchsim_core::plugin::PluginFault>() {
        return PluginError::new_err(f.to_string());
    }
    PrefetchsimError::new_err(e.to_string())
}

pub(crate) fn task_err(e: &TaskError) -> PyErr {
    match e {
        TaskError::Config(c) => config_err(c),
        TaskError::Source(s) => source_err(s),
        TaskError::Empty(_) => TraceError::new_err("no requests to simulate"),
    }
}

/// A `limit` argument: `None` when absent, else at least 1 (a limit of 0 measured nothing and reported it
/// as an empty result).
pub(crate) fn limit_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    match v {
        Some(l) if !l.is_none() => match uint_arg(Some(l), "limit", 0, u64::MAX)? {
            0 => Err(ConfigError::new_err(
                "limit: 0 requests measure nothing: give at least 1, or leave the limit out to read the whole trace",
            )),
            n => Ok(Some(n)),
        },
        _ => Ok(None),
    }
}

/// A non-negative integer argument of at most `max`: out of range is a `ValueError` naming the argument
/// (PyO3 alone raises `OverflowError` for negative or huge values); not an integer is a `TypeError`.
pub(crate) fn uint_arg(v: Option<&Bound<'_, PyAny>>, name: &str, default: u64, max: u64) -> PyResult<u64> {
    let Some(v) = v else { return Ok(default) };
    if v.is_none() {
        return Ok(default);
    }
    let out_of_range = || PyValueError::new_err(format!("{name} = {v} is out of range (0 to {max})"));
    match v.extract::<u64>() {
        Ok(n) if n <= max => Ok(n),
        Ok(_) => Err(out_of_range()),
        Err(e) if e.is_instance_of::<PyOverflowError>(v.py()) => Err(out_of_range()),
        Err(e) => Err(e),
    }
}

pub(crate) fn parse_json(what: &str, text: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| ConfigError::new_err(format!("{what}: not valid JSON: {e}")))
}

pub(crate) fn parse_spec(trace_json: &str) -> PyResult<TraceSpec> {
    TraceSpec::from_json(parse_json("trace", trace_json)?).map_err(|e| trace_err(&e))
}
