//! PyO3 glue only: the `prefetchsim._core` extension module.
//!
//! Arguments cross the boundary as JSON text (configs, trace specs) and results come back as JSON text,
//! so the schema is defined once, in Rust, and the Python layer stays thin. Every error is a typed Python
//! exception (`errors`); nothing panics across the boundary. Long work runs without the GIL while the
//! calling thread serves the caller's progress callback and Ctrl-C (`detached`). The typed surface is
//! `python/prefetchsim/_core.pyi` (checked by `mypy.stubtest`).

mod detached;
mod device;
mod errors;
mod mrc;
mod plugin;
mod registry;
mod serve;
mod sim;
mod trace;

use pyo3::prelude::*;

/// The `prefetchsim._core` module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    plugin::register();
    m.add_function(wrap_pyfunction!(sim::simulate, m)?)?;
    mrc::register(m)?;
    serve::register(m)?;
    m.add_function(wrap_pyfunction!(trace::footprint, m)?)?;
    m.add_function(wrap_pyfunction!(trace::head, m)?)?;
    m.add_function(wrap_pyfunction!(trace::check_cache_settings, m)?)?;
    m.add_function(wrap_pyfunction!(trace::file_written_by, m)?)?;
    m.add_function(wrap_pyfunction!(registry::registry, m)?)?;
    m.add_function(wrap_pyfunction!(registry::result_schema, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace::convert, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_random_read_ms, m)?)?;
    m.add_function(wrap_pyfunction!(registry::check_config, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_bench, m)?)?;
    m.add_function(wrap_pyfunction!(device::devices, m)?)?;
    m.add_function(wrap_pyfunction!(device::device_capacity_sectors, m)?)?;
    m.add_function(wrap_pyfunction!(registry::canonical_config, m)?)?;
    m.add_function(wrap_pyfunction!(registry::check_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(registry::share_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(sim::integrated, m)?)?;
    m.add_function(wrap_pyfunction!(sim::single_disk, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
