//! Bindings of miss-ratio curves (exact and SHARDS) and of sampled (miniature) simulation, for
//! `prefetchsim.mrc`. Same conventions as the rest of `_core`: JSON in and out, typed errors, no GIL.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prefetchsim_core::config::{HierarchyConfig, SizeSpec};
use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport, VecSource};
use prefetchsim_core::mrc::{self, SampleConfig, SampledSource, ShardsConfig};
use prefetchsim_core::Request;
use prefetchsim_trace::TraceSpec;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::detached::run_detached;
use crate::errors::{config_err, limit_arg, parse_json, parse_spec, source_err, ConfigError};
use crate::registry::validate_components;
use crate::sim::{report_json, result_json};
use prefetchsim_core::batch::{run_task, Interruptible, Task, TaskError, TaskTrace};

/// The first `limit` requests of a source (all when `None`), so that a curve and a simulation can be
/// compared on the same prefix of a trace.
struct Prefix<S> {
    inner: S,
    left: u64,
}

impl<S: RequestSource> RequestSource for Prefix<S> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let want = usize::try_from(self.left).unwrap_or(usize::MAX).min(max);
        if want == 0 {
            return Ok(0);
        }
        let n = self.inner.fill(buf, want)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.inner.report()
    }

    fn facts(&self) -> prefetchsim_core::TraceFacts {
        self.inner.facts()
    }
}

fn check_progress(progress: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    if let Some(p) = progress.filter(|p| !p.is_none() && !p.is_callable()) {
        return Err(PyTypeError::new_err(format!("progress must be callable, not {}", p.get_type())));
    }
    Ok(())
}

fn open<'a>(
    spec: &TraceSpec,
    limit: Option<u64>,
    stop: &'a AtomicBool,
    done: &'a AtomicU64,
) -> Result<Prefix<Interruptible<'a>>, SourceError> {
    Ok(Prefix { inner: Interruptible::new(spec.open()?, stop, done), left: limit.unwrap_or(u64::MAX) })
}

/// The LRU miss-ratio curve of a trace in one pass: exact, or SHARDS as `sampling_json` says
/// (`{"rate": .., "max_samples": .., "adjust": .., "seed": ..}`). Evaluated at `sizes` (blocks), at
/// `shares` of the estimated footprint, or else at `points` sizes evenly spaced up to it. `limit` reads
/// only the first requests. Returns JSON: `points` (size, miss_ratio, request_miss_ratio), `footprint`
/// (estimated), `requests` and `references` read (counted), `estimated_requests` and
/// `estimated_references` (the sample weighed `1/rate`: the curves' denominators), `sampled_references`,
/// `rate` (final), and what the source skipped.
#[pyfunction]
#[pyo3(signature = (trace_json, sampling_json, sizes=None, shares=None, points=100, limit=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn mrc_curve(
    py: Python<'_>,
    trace_json: &str,
    sampling_json: &str,
    sizes: Option<Vec<u64>>,
    shares: Option<Vec<f64>>,
    points: usize,
    limit: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    check_progress(progress)?;
    let limit = limit_arg(limit)?;
    if let Some(bad) = shares.iter().flatten().find(|s| !(**s > 0.0 && s.is_finite())) {
        return Err(ConfigError::new_err(format!("shares: {bad} is not a positive share of the footprint")));
    }
    let spec = parse_spec(trace_json)?;
    let cfg = ShardsConfig::from_json(parse_json("sampling", sampling_json)?).map_err(|e| config_err(&e))?;
    let (done, stop) = (AtomicU64::new(0), AtomicBool::new(false));
    let out = run_detached(py, progress.filter(|p| !p.is_none()), &done, &stop, || {
        let mut src = open(&spec, limit, &stop, &done)?;
        let (hist, rate) = mrc::histogram(&mut src, cfg, &mut |_| !stop.load(Ordering::Relaxed))?;
        Ok::<_, SourceError>((hist, rate, src.report()))
    })?;
    let (hist, rate, rep) = out.map_err(|e| source_err(&e))?;
    let at: Vec<u64> = match (sizes, shares) {
        (Some(s), _) => s,
        // A share is sized as a level's (truncated, at least one block), of the footprint this pass
        // measured (SHARDS: estimated); it was rounded here, one block off `sim`'s size.
        (None, Some(sh)) => {
            let fp = hist.footprint().round() as u64;
            sh.iter()
                .map(|&f| {
                    SizeSpec::Footprint(f)
                        .resolve(spec.block_size, Some(fp), None)
                        .map_err(|m| ConfigError::new_err(format!("sizes: {m} (footprint {fp} blocks)")))
                })
                .collect::<PyResult<_>>()?
        }
        (None, None) => hist.default_sizes(points),
    };
    let curve = hist.curve(&at);
    let mut o = json!({
        "points": curve.points,
        "footprint": curve.footprint,
        "requests": hist.read_requests,
        "references": hist.read_blocks,
        "estimated_requests": curve.requests,
        "estimated_references": curve.references,
        "sampled_references": hist.sampled_blocks,
        "rate": rate,
    });
    if let Value::Object(m) = &mut o {
        report_json(&rep, m);
    }
    Ok(o.to_string())
}

/// Simulate every config of `configs_json` on the sample `sample_json` of the trace
/// (`{"rate": .., "unit": "block" | "extent", "extent_bytes": .., "seed": ..}`): the caller has scaled the
/// cache sizes. The trace is read once; the sample is kept in memory and replayed to each config. `limit`
/// reads only the first requests of the trace. Returns a JSON list of results as
/// `simulate` gives, each with `seen_requests` and `seen_blocks` (of the whole trace, before sampling).
#[pyfunction]
#[pyo3(signature = (trace_json, configs_json, sample_json, limit=None, progress=None))]
fn simulate_sampled(
    py: Python<'_>,
    trace_json: &str,
    configs_json: &str,
    sample_json: &str,
    limit: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    check_progress(progress)?;
    let limit = limit_arg(limit)?;
    let spec = parse_spec(trace_json)?;
    let sample =
        SampleConfig::from_json(parse_json("sample", sample_json)?, spec.block_size).map_err(|e| config_err(&e))?;
    let Value::Array(items) = parse_json("configs", configs_json)? else {
        return Err(ConfigError::new_err("configs: expected a list of hierarchy configs"));
    };
    let mut configs = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        let c = HierarchyConfig::from_json(v).map_err(|e| ConfigError::new_err(format!("config {i}: {e}")))?;
        validate_components(&c).map_err(|e| ConfigError::new_err(format!("config {i}: {e}")))?;
        if c.needs_footprint() {
            return Err(ConfigError::new_err(format!(
                "config {i}: sizes must be in blocks or bytes for a sampled run (a share of the footprint would \
                 be of the sample's)"
            )));
        }
        configs.push(c);
    }
    let (done, stop) = (AtomicU64::new(0), AtomicBool::new(false));
    let results = run_detached(py, progress.filter(|p| !p.is_none()), &done, &stop, || {
        // The sample is read once and kept in memory (about `rate` of the trace's requests), then replayed
        // to every config: one pass over the trace for the whole curve.
        let inner = match open(&spec, limit, &stop, &done) {
            Ok(s) => s,
            Err(e) => return vec![Err(PyErrLater::Source(e))],
        };
        let mut src = SampledSource::new(inner, &sample, spec.block_size);
        let mut reqs = Vec::new();
        loop {
            match src.fill(&mut reqs, 8192) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return vec![Err(PyErrLater::Source(e))],
            }
        }
        let (seen_requests, seen_blocks, report) = (src.seen_requests, src.seen_blocks, src.report());
        let facts = src.facts();
        // Every config replays the sample on the core's batch runner (all cores); progress counts the pass
        // over the trace only, as before.
        let uncounted = AtomicU64::new(0);
        let sampled = SampleTrace { reqs: &reqs, block_size: spec.block_size, facts };
        let outcomes = match run_task(&sampled, &Task::new(&configs, 0, &stop, &uncounted)) {
            Ok(o) => o,
            Err(e) => return vec![Err(PyErrLater::from(e))],
        };
        outcomes
            .into_iter()
            .map(|o| -> Result<Value, PyErrLater> {
                let (r, _) = o.map_err(PyErrLater::from)?;
                let mut v = result_json(&r, &report);
                if let Value::Object(m) = &mut v {
                    m.insert("seen_requests".into(), json!(seen_requests));
                    m.insert("seen_blocks".into(), json!(seen_blocks));
                }
                Ok(v)
            })
            .collect::<Vec<_>>()
    })?;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(match r {
            Ok(v) => v,
            Err(PyErrLater::Config(e)) => return Err(config_err(&e)),
            Err(PyErrLater::Source(e)) => return Err(source_err(&e)),
        });
    }
    Ok(Value::Array(out).to_string())
}

/// A sample kept in memory, as the batch runner's trace.
struct SampleTrace<'a> {
    reqs: &'a [Request],
    block_size: u64,
    /// What the sampled trace declared (a sample keeps the stream fields).
    facts: prefetchsim_core::TraceFacts,
}

impl TaskTrace for SampleTrace<'_> {
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError> {
        Ok(Box::new(VecSource::new(self.reqs.to_vec()).with_facts(self.facts)))
    }

    fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Belady's MIN levels learn their future from the sample (it is in memory; `mini` with `opt` failed
    /// with the core's "call `optimal::prepare` first").
    fn prepare(
        &self,
        _index: usize,
        cfg: &HierarchyConfig,
        h: &mut prefetchsim_core::engine::Hierarchy,
        footprint: Option<u64>,
    ) -> Result<(), SourceError> {
        let mut open = || self.open().map(|s| s as Box<dyn RequestSource + '_>);
        prefetchsim_core::optimal::prepare(cfg, h, footprint, &mut open, None)
    }
}

/// An error made on the worker thread, turned into a Python exception back on the caller's.
enum PyErrLater {
    Config(prefetchsim_core::ConfigError),
    Source(SourceError),
}

impl From<TaskError> for PyErrLater {
    fn from(e: TaskError) -> Self {
        match e {
            TaskError::Config(e) => PyErrLater::Config(e),
            TaskError::Source(e) => PyErrLater::Source(e),
            TaskError::Empty(_) => PyErrLater::Source("the sample holds no requests to simulate".into()),
        }
    }
}

/// Add this file's functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mrc_curve, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_sampled, m)?)?;
    Ok(())
}
