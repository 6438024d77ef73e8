//! Simulation entry points: `simulate` (one or many configs over one trace, through the core's batch
//! runner), and the single-disk model of Cao et al. (`integrated`, `single_disk`), with the result's JSON
//! form.

use std::sync::atomic::{AtomicBool, AtomicU64};

use prefetchsim_core::batch::Interruptible;
use prefetchsim_core::batch::{run_task, Task, TaskError, TaskTrace};
use prefetchsim_core::component::ConfigError as CoreConfigError;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{Hierarchy, RequestSource, SourceError, SourceReport};
use prefetchsim_core::metrics::{LevelReport, RunResult, Value as RecValue};
use prefetchsim_core::optimal;
use prefetchsim_trace::event_csv::EventCsv;
use prefetchsim_trace::next_access::stated_next_uses;
use prefetchsim_trace::{stats, TraceSpec};
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::detached::{progress_arg, run_detached};
use crate::errors::{
    config_err, limit_arg, parse_json, parse_spec, source_err, task_err, uint_arg, ConfigError, TraceError,
};
use crate::registry::validate_components;

/// Simulate every config of `configs_json` (a JSON list of hierarchy configs) on the trace of
/// `trace_json`; returns a JSON list of results, in config order. `progress(n)` is called about ten
/// times a second with the number of requests read so far (over all configs, and first the decoding
/// pass of several configs, or the footprint pass when a size is a share of the footprint). `events`:
/// write the per-block event log of the run (one config only) to this CSV file (`docs/events.md`).
#[pyfunction]
#[pyo3(signature = (trace_json, configs_json, progress=None, threads=None, events=None))]
pub(crate) fn simulate(
    py: Python<'_>,
    trace_json: &str,
    configs_json: &str,
    progress: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    events: Option<&str>,
) -> PyResult<String> {
    let threads = uint_arg(threads, "threads", 0, 4096)? as usize;
    let progress = progress_arg(progress)?;
    let spec = parse_spec(trace_json)?;
    let raw = parse_json("configs", configs_json)?;
    let Value::Array(items) = raw else {
        return Err(ConfigError::new_err("configs: expected a list of hierarchy configs"));
    };
    let n = items.len();
    if events.is_some() && n != 1 {
        return Err(ConfigError::new_err(format!("events: an event log records one run, not {n}")));
    }
    let label = |i: usize, e: &CoreConfigError| {
        ConfigError::new_err(if n == 1 { e.to_string() } else { format!("config {i}: {e}") })
    };
    let mut configs = Vec::with_capacity(n);
    for (i, v) in items.into_iter().enumerate() {
        let c = HierarchyConfig::from_json(v).map_err(|e| label(i, &e))?;
        // Unknown names and parameters fail here, before any pass over the trace.
        validate_components(&c).map_err(|e| label(i, &e))?;
        configs.push(c);
    }
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let trace = SpecTrace { spec: &spec, stop: &stop, events };
    let task = Task::new(&configs, threads, &stop, &done);
    let results = run_detached(py, progress, &done, &stop, || run_task(&trace, &task))?.map_err(|e| match e {
        TaskError::Empty(rep) => TraceError::new_err(no_requests(&spec, &rep)),
        e => task_err(&e),
    })?;
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.into_iter().enumerate() {
        // Which config failed, among several (two configs with one plugin at different parameters both
        // said "level[0].prefetcher").
        let (r, rep) = r.map_err(|e| {
            let err = task_err(&e);
            if n == 1 {
                return err;
            }
            PyErr::from_type(err.get_type(py), format!("config {i}: {}", err.value(py)))
        })?;
        if r.requests == 0 && !r.stopped_early {
            return Err(TraceError::new_err(no_requests(&spec, &rep)));
        }
        out.push(result_json(&r, &rep));
    }
    Ok(Value::Array(out).to_string())
}

/// Why a trace gave no request to simulate, naming it: a run of nothing reported a hit ratio and a miss
/// ratio of 0 as if measured.
fn no_requests(spec: &TraceSpec, rep: &SourceReport) -> String {
    let why = if rep.skipped > 0 {
        format!("all {} records were bad and skipped by skip_bad", rep.skipped)
    } else if spec.ops != prefetchsim_trace::OpsFilter::All {
        // The name a config writes (`reads`, `writes`).
        let ops = serde_json::to_value(spec.ops).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        format!("the file is empty, or no record is kept by ops = {ops}")
    } else {
        "the trace is empty".to_string()
    };
    format!("{}: no requests to simulate ({why})", spec.path)
}

/// The trace of a `simulate` call as the core's batch runner sees it: opened from its spec, with
/// Belady's MIN levels prepared from it and the event log (one config only) attached.
struct SpecTrace<'a> {
    spec: &'a TraceSpec,
    stop: &'a AtomicBool,
    events: Option<&'a str>,
}

impl TaskTrace for SpecTrace<'_> {
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError> {
        Ok(self.spec.open()?)
    }

    fn block_size(&self) -> u64 {
        self.spec.block_size
    }

    fn prepare(
        &self,
        _index: usize,
        cfg: &HierarchyConfig,
        h: &mut Hierarchy,
        footprint: Option<u64>,
    ) -> Result<(), SourceError> {
        prepare_opt(self.spec, cfg, h, footprint, self.stop)?;
        if let Some(path) = self.events {
            let sink = EventCsv::create(path).map_err(|e| format!("event log: {e}"))?;
            h.set_event_sink(Box::new(sink));
        }
        Ok(())
    }

    fn finish(&self, _index: usize, h: &mut Hierarchy, interrupted: bool) -> Result<(), SourceError> {
        if let Some(sink) = h.take_event_sink() {
            if interrupted {
                // Interrupted: the log is dropped unfinished (no file).
                drop(sink);
            } else {
                sink.finish().map_err(|e| format!("event log {e}"))?;
            }
        }
        Ok(())
    }
}

pub(crate) fn record_json(rec: Vec<(&'static str, RecValue)>) -> Value {
    Value::Object(rec.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// What the trace source skipped or noticed, as the keys results and `trace info` carry.
pub(crate) fn report_json(rep: &SourceReport, into: &mut serde_json::Map<String, Value>) {
    into.insert("skipped_records".into(), json!(rep.skipped));
    into.insert("skipped_messages".into(), json!(rep.skipped_messages));
    into.insert("time_backwards".into(), json!(rep.time_backwards));
}

/// A run result as JSON: run totals, what the source skipped, and one flat record per level, in the schema
/// order of `LevelReport::record`; for timed runs also `timing` (the flat run-level record of
/// `TimingReport::record`), `clients` (one record per client) and `rt_histogram` (read response
/// times, `[lowest_ns, highest_ns, count]` per non-empty bucket). Time-free runs have none of the three.
/// Levels of several caches (per client, K servers) add `instances`: one record per cache.
pub(crate) fn result_json(r: &RunResult, rep: &SourceReport) -> Value {
    let levels: Vec<Value> = r.levels.iter().map(|l| record_json(l.record())).collect();
    let mut out = json!({
        "requests": r.requests,
        "blocks": r.blocks,
        "warmup_requests": r.warmup_requests,
        "stopped_early": r.stopped_early,
    });
    if let Value::Object(o) = &mut out {
        report_json(rep, o);
        o.insert("notes".into(), json!(r.notes));
        o.insert("levels".into(), Value::Array(levels));
        let instances: Vec<Value> = r.levels.iter().flat_map(LevelReport::instance_records).map(record_json).collect();
        if !instances.is_empty() {
            o.insert("instances".into(), Value::Array(instances));
        }
        if let Some(t) = &r.timing {
            o.insert("timing".into(), record_json(t.record()));
            o.insert("clients".into(), Value::Array(t.client_records().into_iter().map(record_json).collect()));
            let buckets: Vec<Value> = t.rt_histogram.buckets().map(|(lo, hi, n)| json!([lo, hi, n])).collect();
            o.insert("rt_histogram".into(), Value::Array(buckets));
        }
    }
    out
}

/// Count the unique blocks of a trace (one streaming pass), stopping early when asked. The requests read
/// are added to `done`, so that progress moves during this pass too.
pub(crate) fn count_footprint(spec: &TraceSpec, stop: &AtomicBool, done: &AtomicU64) -> Result<u64, SourceError> {
    let mut src = Interruptible::new(spec.open()?, stop, done);
    stats::footprint(&mut src, &|| stop.load(std::sync::atomic::Ordering::Relaxed))
}

/// Belady's MIN (`opt`) levels learn their future before the run: the first level's from the trace's
/// own next-access field when it has one, else from a pre-pass; a lower level's from a recording run
/// (`optimal::prepare`). Nothing happens without an `opt` level.
fn prepare_opt(
    spec: &TraceSpec,
    cfg: &HierarchyConfig,
    h: &mut Hierarchy,
    footprint: Option<u64>,
    stop: &AtomicBool,
) -> Result<(), SourceError> {
    let levels = optimal::opt_levels_in(cfg);
    if levels.is_empty() {
        return Ok(());
    }
    let first = if levels[0] == 0 { stated_next_uses(spec, cfg.engine.limit)? } else { None };
    // The passes stop on Ctrl-C like the run; their requests are not counted as progress.
    let uncounted = AtomicU64::new(0);
    let mut open = || -> Result<Box<dyn RequestSource + '_>, SourceError> {
        Ok(Box::new(Interruptible::new(spec.open()?, stop, &uncounted)))
    };
    optimal::prepare(cfg, h, footprint, &mut open, first)
}

/// Cao et al.'s single-disk model on the trace's block-split stream (its first `limit` requests): the
/// schedules of Aggressive, Conservative and of demand fetching under Belady's MIN, for a cache of `cache`
/// blocks and a fetch time of `fetch_time` request services. Returns JSON `{"aggressive": schedule,
/// "conservative": …, "min_demand": …}` where a schedule is `{requests, elapsed, stall, fetches}`.
#[pyfunction]
#[pyo3(signature = (trace_json, cache, fetch_time, limit=None))]
pub(crate) fn integrated(
    py: Python<'_>,
    trace_json: &str,
    cache: &Bound<'_, PyAny>,
    fetch_time: &Bound<'_, PyAny>,
    limit: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    use prefetchsim_core::optimal::integrated::{aggressive, conservative, demand, min_replacements, DiskModel};
    let spec = parse_spec(trace_json)?;
    let cache = uint_arg(Some(cache), "cache", 0, 1 << 32)? as usize;
    let fetch_time = uint_arg(Some(fetch_time), "fetch_time", 0, 1 << 32)?;
    let limit = limit_arg(limit)?.unwrap_or(u64::MAX);
    let model = DiskModel { cache, fetch_time };
    model.validate().map_err(|m| ConfigError::new_err(format!("integrated: {m}")))?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let out = run_detached(py, None, &done, &stop, || -> Result<Value, SourceError> {
        let mut src = Interruptible::new(spec.open()?, &stop, &done);
        let mut blocks: Vec<u64> = Vec::new();
        let mut buf = Vec::with_capacity(8192);
        let mut left = limit;
        while left > 0 {
            buf.clear();
            if src.fill(&mut buf, left.min(8192) as usize)? == 0 {
                break;
            }
            left -= buf.len() as u64;
            blocks.extend(buf.iter().flat_map(prefetchsim_core::Request::blocks));
        }
        let a = aggressive(&blocks, model)?;
        let c = conservative(&blocks, model)?;
        let m = demand(blocks.len(), min_replacements(&blocks, cache).len() as u64, model);
        Ok(json!({ "aggressive": a, "conservative": c, "min_demand": m }))
    })?
    .map_err(|e| source_err(&e))?;
    Ok(out.to_string())
}

/// Time the one-level hierarchy of `config_json` on the trace in Cao et al.'s single-disk model (fetch
/// time `fetch_time` request services; `optimal::single_disk`). Returns JSON `{"schedule": {requests,
/// elapsed, stall, fetches}, "level": the level's record}`.
#[pyfunction]
pub(crate) fn single_disk(
    py: Python<'_>,
    trace_json: &str,
    config_json: &str,
    fetch_time: &Bound<'_, PyAny>,
) -> PyResult<String> {
    use prefetchsim_core::optimal::integrated::DiskModel;
    let spec = parse_spec(trace_json)?;
    let cfg = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    validate_components(&cfg).map_err(|e| config_err(&e))?;
    let fetch_time = uint_arg(Some(fetch_time), "fetch_time", 0, 1 << 32)?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let out = run_detached(py, None, &done, &stop, || -> Result<Value, SourceError> {
        let footprint = if cfg.needs_footprint() { Some(count_footprint(&spec, &stop, &done)?) } else { None };
        // Opened first: the hierarchy is built for what the trace declares (its stream ids).
        let mut src = Interruptible::new(spec.open()?, &stop, &done);
        let mut h = Hierarchy::build_for(&cfg, spec.block_size, footprint, src.facts())?;
        prepare_opt(&spec, &cfg, &mut h, footprint, &stop)?;
        let model = DiskModel { cache: h.levels.first().map_or(0, |l| l.capacity()), fetch_time };
        // Not through run::run: a plugin's fault is taken here (crate::plugin).
        let _stale = prefetchsim_core::plugin::take_fault();
        let s = optimal::single_disk::single_disk(&mut src, &mut h, model, cfg.engine.limit)?;
        if let Some(fault) = prefetchsim_core::plugin::take_fault() {
            return Err(Box::new(fault));
        }
        let level = h.reports().first().map(|l| record_json(l.record())).unwrap_or(Value::Null);
        Ok(json!({ "schedule": s, "level": level }))
    })?
    .map_err(|e| source_err(&e))?;
    Ok(out.to_string())
}
