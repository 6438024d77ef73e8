//! Trace entry points: footprint, statistics (`trace info`), conversion and the first requests.

use std::sync::atomic::{AtomicBool, AtomicU64};

use prefetchsim_core::batch::Interruptible;
use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_trace::stats::{RandomRule, TraceStats};
use prefetchsim_trace::writer::{self, OracleShape};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::detached::run_detached;
use crate::errors::{parse_spec, source_err, trace_err, uint_arg, PrefetchsimError};
use crate::sim::{count_footprint, report_json};

/// Count the unique blocks of a trace.
#[pyfunction]
pub(crate) fn footprint(py: Python<'_>, trace_json: &str) -> PyResult<u64> {
    let spec = parse_spec(trace_json)?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    run_detached(py, None, &done, &stop, || count_footprint(&spec, &stop, &done))?.map_err(|e| source_err(&e))
}

/// Statistics of a trace (`trace info`) as JSON; `window` and `gap` tune the random-request rule.
#[pyfunction]
#[pyo3(signature = (trace_json, window=None, gap=None))]
pub(crate) fn trace_info(
    py: Python<'_>,
    trace_json: &str,
    window: Option<&Bound<'_, PyAny>>,
    gap: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let mut rule = RandomRule::default();
    rule.window = uint_arg(window, "window", u64::from(rule.window), u64::from(u32::MAX))? as u32;
    rule.gap = uint_arg(gap, "gap", rule.gap, u64::MAX)?;
    let spec = parse_spec(trace_json)?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    type Info = (TraceStats, SourceReport, prefetchsim_core::TraceFacts);
    let (st, rep, facts) = run_detached(py, None, &done, &stop, || -> Result<Info, SourceError> {
        let mut src = Interruptible::new(spec.open()?, &stop, &done);
        let st = TraceStats::compute(&mut src, spec.block_size, rule)?;
        Ok((st, src.report(), src.facts()))
    })?
    .map_err(|e| source_err(&e))?;
    let format = if spec.is_synthetic() {
        "synthetic"
    } else if !spec.merge.is_empty() {
        "merge"
    } else {
        spec.resolved_format().map_err(|e| trace_err(&e))?
    };
    let mut v = serde_json::to_value(&st).map_err(|e| PrefetchsimError::new_err(e.to_string()))?;
    if let Value::Object(m) = &mut v {
        let mut out = serde_json::Map::new();
        out.insert("format".into(), Value::from(format));
        // Whether stream 0 is an id or "no stream" to the components that key by stream.
        out.insert("stream_ids".into(), Value::from(facts.stream_ids));
        out.extend(std::mem::take(m));
        report_json(&rep, &mut out);
        *m = out;
    }
    Ok(v.to_string())
}

/// The file of the trace (or of one of its merge members) that `output` names, if any: the CLI refuses
/// such an output before any work, since writing it would replace the trace being read.
#[pyfunction]
pub(crate) fn file_written_by(trace_json: &str, output: &str) -> PyResult<Option<String>> {
    Ok(parse_spec(trace_json)?.file_written_by(std::path::Path::new(output)))
}

/// Write a trace as oracleGeneral or CSV (`trace convert`); returns a JSON summary. The output appears
/// only when the whole trace is written (a temporary file renamed at the end).
#[pyfunction]
#[pyo3(signature = (trace_json, output, to="oracle_general", per_block=false, rebase_time=false))]
pub(crate) fn convert(
    py: Python<'_>,
    trace_json: &str,
    output: &str,
    to: &str,
    per_block: bool,
    rebase_time: bool,
) -> PyResult<String> {
    let spec = parse_spec(trace_json)?;
    if let Some(input) = spec.file_written_by(std::path::Path::new(output)) {
        let why = format!("is the trace being converted ({input}); give another output file");
        return Err(trace_err(&prefetchsim_trace::TraceError::io(output, std::io::Error::other(why))));
    }
    let shape = if per_block { OracleShape::PerBlock } else { OracleShape::Objects };
    let options = writer::WriteOptions { shape, rebase_time };
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (summary, rep) = run_detached(py, None, &done, &stop, || -> Result<_, SourceError> {
        let mut src = Interruptible::new(spec.open()?, &stop, &done);
        let summary = writer::write_until(&mut src, output, to, spec.block_size, options, &stop)?;
        Ok((summary, src.report()))
    })?
    .map_err(|e| source_err(&e))?;
    with_report(&summary, &rep)
}

/// `value` (a flat record) as JSON text with the source report's keys appended.
fn with_report(value: &impl serde::Serialize, rep: &SourceReport) -> PyResult<String> {
    let mut v = serde_json::to_value(value).map_err(|e| PrefetchsimError::new_err(e.to_string()))?;
    if let Value::Object(m) = &mut v {
        report_json(rep, m);
    }
    Ok(v.to_string())
}

/// A request as a Python tuple: (time_ns, op, first, len, stream, client).
type RequestRow = (u64, &'static str, u64, u32, u32, u32);

/// The first `n` requests of a trace as (time_ns, op, first, len, stream, client) tuples.
#[pyfunction]
pub(crate) fn head(trace_json: &str, n: &Bound<'_, PyAny>) -> PyResult<Vec<RequestRow>> {
    if n.is_none() {
        return Err(PyTypeError::new_err("n must be an integer, not None"));
    }
    let n = uint_arg(Some(n), "n", 0, u64::MAX)?;
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let spec = parse_spec(trace_json)?;
    let mut src = spec.open().map_err(|e| trace_err(&e))?;
    let mut buf = Vec::with_capacity(n.min(1 << 20));
    while buf.len() < n {
        let want = n - buf.len();
        if src.fill(&mut buf, want).map_err(|e| source_err(&e))? == 0 {
            break;
        }
    }
    Ok(buf
        .iter()
        .map(|r| {
            let op = if r.op == prefetchsim_core::Op::Read { "R" } else { "W" };
            (r.time_ns, op, r.first, r.len, r.stream, r.client)
        })
        .collect())
}

/// Read the decoded-trace cache's environment variables as a run reads them, so that `prefetchsim cache`
/// refuses what `sim` refuses (`PREFETCHSIM_CACHE_MAX_MB=4G`): the error names the variable.
#[pyfunction]
pub(crate) fn check_cache_settings() -> PyResult<()> {
    prefetchsim_trace::cache::CacheSettings::from_env().map(drop).map_err(|e| trace_err(&e))
}
