//! PyO3 glue only: the `prefetchsim._core` extension module.
//!
//! Arguments cross the boundary as JSON text (configs, trace specs) and results come back as JSON text,
//! so the schema is defined once, in Rust, and the Python layer stays thin. Every error is a typed Python
//! exception; nothing panics across the boundary. Simulations run without the GIL; the caller's progress
//! callback and Ctrl-C are served from the waiting thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use prefetchsim_core::component::{ComponentSpec, ConfigError as CoreConfigError};
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{Hierarchy, RequestSource, SourceError, SourceReport};
use prefetchsim_core::metrics::{LevelReport, RunResult, Value as RecValue};
use prefetchsim_core::{device, optimal, policy, prefetch};
use prefetchsim_trace::event_csv::EventCsv;
use prefetchsim_trace::next_access::stated_next_uses;
use prefetchsim_trace::stats::{self, RandomRule, TraceStats};
use prefetchsim_trace::writer::{self, OracleShape};
use prefetchsim_trace::{formats, synth, TraceError as CoreTraceError, TraceSpec};
mod decoded;
mod mrc;
mod plugin;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{json, Value};

create_exception!(_core, PrefetchsimError, PyException, "Base class of every prefetchsim error.");
create_exception!(
    _core,
    ConfigError,
    PrefetchsimError,
    "A configuration names an unknown key, value or component, or an impossible size."
);
create_exception!(
    _core,
    PluginError,
    PrefetchsimError,
    "A plugin's callback (a Python prefetcher or policy named `module:Class`) raised or returned a bad value \
     during a run; the message names the config key, the plugin and the Python traceback."
);
create_exception!(
    _core,
    TraceError,
    PrefetchsimError,
    "A trace cannot be opened, detected or parsed (the message names file, line/record and field)."
);

fn config_err(e: &CoreConfigError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

fn trace_err(e: &CoreTraceError) -> PyErr {
    match e {
        CoreTraceError::Option { .. } => ConfigError::new_err(e.to_string()),
        _ => TraceError::new_err(e.to_string()),
    }
}

fn source_err(e: &SourceError) -> PyErr {
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

/// A non-negative integer argument of at most `max`: out of range is a `ValueError` naming the argument
/// (PyO3 alone raises `OverflowError` for negative or huge values); not an integer is a `TypeError`.
fn uint_arg(v: Option<&Bound<'_, PyAny>>, name: &str, default: u64, max: u64) -> PyResult<u64> {
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

fn parse_json(what: &str, text: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| ConfigError::new_err(format!("{what}: not valid JSON: {e}")))
}

fn parse_spec(trace_json: &str) -> PyResult<TraceSpec> {
    TraceSpec::from_json(parse_json("trace", trace_json)?).map_err(|e| trace_err(&e))
}

/// A source that counts what passes and ends with an error as soon as `stop` is set (Ctrl-C), so that
/// passes over a trace stop promptly.
struct Interruptible<'a> {
    src: Box<dyn RequestSource + Send>,
    stop: &'a AtomicBool,
    done: &'a AtomicU64,
}

impl RequestSource for Interruptible<'_> {
    fn fill(&mut self, buf: &mut Vec<prefetchsim_core::Request>, max: usize) -> Result<usize, SourceError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        let n = self.src.fill(buf, max)?;
        self.done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.src.report()
    }
}

/// Count the unique blocks of a trace (one streaming pass), stopping early when asked. The requests read
/// are added to `done`, so that progress moves during this pass too (it comes before any replay when a
/// size is a share of the footprint, and takes a whole pass over the trace).
fn count_footprint(spec: &TraceSpec, stop: &AtomicBool, done: &AtomicU64) -> Result<u64, SourceError> {
    let mut src = Interruptible { src: spec.open()?, stop, done };
    stats::footprint(&mut src, &|| stop.load(Ordering::Relaxed))
}

/// Run `f` without the GIL on another thread while this thread serves progress callbacks and Ctrl-C.
fn run_detached<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    done: &AtomicU64,
    stop: &AtomicBool,
    f: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let progress = progress.map(|p| p.clone().unbind());
    let mut py_err: Option<PyErr> = None;
    let out = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn(move || {
                // The receiver outlives the thread inside this scope; a failed send cannot happen.
                let _ = tx.send(f());
            });
            loop {
                // Wake at once when the work ends; otherwise serve Ctrl-C and progress ten times a second.
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(v) => return Ok(v),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(()),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                }
                Python::attach(|py| {
                    if py_err.is_some() {
                        return;
                    }
                    if let Err(e) = py.check_signals() {
                        py_err = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    if let Some(cb) = &progress {
                        if let Err(e) = cb.call1(py, (done.load(Ordering::Relaxed),)) {
                            py_err = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
        })
    });
    if let Some(e) = py_err {
        return Err(e);
    }
    out.map_err(|_| PrefetchsimError::new_err("internal error: the simulation thread panicked (please report)"))
}

/// Simulate every config of `configs_json` (a JSON list of hierarchy configs) on the trace of
/// `trace_json`; returns a JSON list of results, in config order. `progress(n)` is called about ten
/// times a second with the number of requests read so far (over all configs, and first the decoding
/// pass of several configs, or the footprint pass when a size is a share of the footprint). `events`: write the per-block event log of the run
/// (one config only) to this CSV file (`docs/events.md`).
#[pyfunction]
#[pyo3(signature = (trace_json, configs_json, progress=None, threads=None, events=None))]
fn simulate(
    py: Python<'_>,
    trace_json: &str,
    configs_json: &str,
    progress: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    events: Option<&str>,
) -> PyResult<String> {
    let threads = uint_arg(threads, "threads", 0, 4096)? as usize;
    if let Some(p) = progress.filter(|p| !p.is_none() && !p.is_callable()) {
        return Err(PyTypeError::new_err(format!("progress must be callable, not {}", p.get_type())));
    }
    let progress = progress.filter(|p| !p.is_none());
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
    let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
    let needs_fp = configs.iter().any(HierarchyConfig::needs_footprint);
    // Decode once when several configs read the whole trace (a config's `limit` would stop its own stream
    // early, and its report with it, so such calls keep streaming).
    let decode_once = configs.len() > 1 && configs.iter().all(|c| c.engine.limit.is_none());
    let results: Vec<Result<(RunResult, SourceReport), PyErr>> = run_detached(py, progress, &done, &stop, || {
        if decode_once {
            let pass = spec.open().map_err(|e| -> SourceError { Box::new(e) }).and_then(|src| {
                let mut src = Interruptible { src, stop: &stop, done: &done };
                decoded::decode(&mut src, needs_fp, decoded::MAX_DECODED_REQUESTS)
            });
            let d = match pass {
                Ok(d) => d,
                Err(e) => return vec![Err(WorkerError::Source(e))],
            };
            let replay = d.requests.as_deref().map(|reqs| (reqs, &d.report));
            return run_all(&spec, &configs, d.footprint, threads, &done, &stop, events, replay);
        }
        let footprint = if needs_fp {
            match count_footprint(&spec, &stop, &done) {
                Ok(n) => Some(n),
                Err(e) => return vec![Err(WorkerError::Source(e))],
            }
        } else {
            None
        };
        run_all(&spec, &configs, footprint, threads, &done, &stop, events, None)
    })?
    .into_iter()
    .map(|r| r.map_err(|e| e.into_py()))
    .collect();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        let (r, rep) = r?;
        out.push(result_json(&r, &rep));
    }
    Ok(Value::Array(out).to_string())
}

fn record_json(rec: Vec<(&'static str, RecValue)>) -> Value {
    Value::Object(rec.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// What the trace source skipped or noticed, as the keys results and `trace info` carry.
fn report_json(rep: &SourceReport, into: &mut serde_json::Map<String, Value>) {
    into.insert("skipped_records".into(), json!(rep.skipped));
    into.insert("skipped_messages".into(), json!(rep.skipped_messages));
    into.insert("time_backwards".into(), json!(rep.time_backwards));
}

/// A run result as JSON: run totals, what the source skipped, and one flat record per level, in the schema
/// order of `LevelReport::record`; for timed runs also `timing` (the flat run-level record of
/// `TimingReport::record`), `clients` (one record per client) and `rt_histogram` (read response
/// times, `[lowest_ns, highest_ns, count]` per non-empty bucket). Time-free runs have none of the three.
/// Levels of several caches (per client, K servers) add `instances`: one record per cache.
fn result_json(r: &RunResult, rep: &SourceReport) -> Value {
    let levels: Vec<Value> = r.levels.iter().map(|l| record_json(l.record())).collect();
    let mut out = json!({
        "requests": r.requests,
        "blocks": r.blocks,
        "warmup_requests": r.warmup_requests,
        "stopped_early": r.stopped_early,
    });
    if let Value::Object(o) = &mut out {
        report_json(rep, o);
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

/// Build each level with a placeholder size of one block: checks names and parameters, not sizes.
fn validate_components(c: &HierarchyConfig) -> Result<(), CoreConfigError> {
    for (i, l) in c.level.iter().enumerate() {
        let path = format!("level[{i}]");
        let (_, pf) = prefetch::build(&format!("{path}.prefetcher"), &l.prefetcher)?;
        policy::build_level(&format!("{path}.policy"), &l.policy, 1, l.options.clone(), pf)?;
    }
    Ok(())
}

enum WorkerError {
    Source(SourceError),
    Config(CoreConfigError),
}

impl WorkerError {
    fn into_py(self) -> PyErr {
        match self {
            WorkerError::Source(e) => source_err(&e),
            WorkerError::Config(e) => config_err(&e),
        }
    }
}

/// The decoded trace replayed to every config, and what its decoding pass reported.
type Replay<'a> = Option<(&'a [prefetchsim_core::Request], &'a SourceReport)>;

/// Run the configs on up to `threads` threads, each replaying `replay` or else opening its own stream of
/// the trace.
#[allow(clippy::too_many_arguments)]
fn run_all(
    spec: &TraceSpec,
    configs: &[HierarchyConfig],
    footprint: Option<u64>,
    threads: usize,
    done: &AtomicU64,
    stop: &AtomicBool,
    events: Option<&str>,
    replay: Replay<'_>,
) -> Vec<Result<(RunResult, SourceReport), WorkerError>> {
    let next = AtomicU64::new(0);
    let mut slots: Vec<Option<Result<(RunResult, SourceReport), WorkerError>>> =
        (0..configs.len()).map(|_| None).collect();
    let slots_mx = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|s| {
        for _ in 0..threads.min(configs.len()).max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                if i >= configs.len() {
                    break;
                }
                let r = prefetchsim_core::plugin::thread_scope(|| {
                    run_one(spec, &configs[i], footprint, done, stop, events, replay)
                });
                slots_mx.lock().expect("result lock")[i] = Some(r);
            });
        }
    });
    slots
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(WorkerError::Config(CoreConfigError::new("run", "not run")))))
        .collect()
}

fn run_one(
    spec: &TraceSpec,
    cfg: &HierarchyConfig,
    footprint: Option<u64>,
    done: &AtomicU64,
    stop: &AtomicBool,
    events: Option<&str>,
    replay: Replay<'_>,
) -> Result<(RunResult, SourceReport), WorkerError> {
    let mut h = Hierarchy::build(cfg, spec.block_size, footprint).map_err(WorkerError::Config)?;
    prepare_opt(spec, cfg, &mut h, footprint, stop).map_err(WorkerError::Source)?;
    if let Some(path) = events {
        let sink = EventCsv::create(path).map_err(|e| WorkerError::Source(format!("event log: {e}").into()))?;
        h.set_event_sink(Box::new(sink));
    }
    let mut src: Box<dyn RequestSource + Send + '_> = match replay {
        Some((reqs, rep)) => Box::new(decoded::SliceSource::new(reqs, rep)),
        None => spec.open().map_err(|e| WorkerError::Source(Box::new(e)))?,
    };
    let mut last = 0u64;
    let mut tick = |n: u64| {
        done.fetch_add(n - last, Ordering::Relaxed);
        last = n;
        !stop.load(Ordering::Relaxed)
    };
    let r = prefetchsim_core::run::run(src.as_mut(), &mut h, cfg, &mut tick).map_err(WorkerError::Source)?;
    if let Some(sink) = h.take_event_sink() {
        if stop.load(Ordering::Relaxed) {
            // Interrupted: the log is dropped unfinished (no file).
            drop(sink);
        } else {
            sink.finish().map_err(|e| WorkerError::Source(format!("event log {e}").into()))?;
        }
    }
    done.fetch_add(r.requests - last, Ordering::Relaxed);
    Ok((r, src.report()))
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
        Ok(Box::new(Interruptible { src: spec.open()?, stop, done: &uncounted }))
    };
    optimal::prepare(cfg, h, footprint, &mut open, first)
}

/// Cao et al.'s single-disk model on the trace's block-split stream (its first `limit` requests): the
/// schedules of Aggressive, Conservative and of demand fetching under Belady's MIN, for a cache of `cache`
/// blocks and a fetch time of `fetch_time` request services. Returns JSON `{"aggressive": schedule,
/// "conservative": …, "min_demand": …}` where a schedule is `{requests, elapsed, stall, fetches}`.
#[pyfunction]
#[pyo3(signature = (trace_json, cache, fetch_time, limit=None))]
fn integrated(
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
    let limit = uint_arg(limit, "limit", u64::MAX, u64::MAX)?;
    let model = DiskModel { cache, fetch_time };
    model.validate().map_err(|m| ConfigError::new_err(format!("integrated: {m}")))?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let out = run_detached(py, None, &done, &stop, || -> Result<Value, SourceError> {
        let mut src = Interruptible { src: spec.open()?, stop: &stop, done: &done };
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
fn single_disk(py: Python<'_>, trace_json: &str, config_json: &str, fetch_time: &Bound<'_, PyAny>) -> PyResult<String> {
    use prefetchsim_core::optimal::integrated::DiskModel;
    let spec = parse_spec(trace_json)?;
    let cfg = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    validate_components(&cfg).map_err(|e| config_err(&e))?;
    let fetch_time = uint_arg(Some(fetch_time), "fetch_time", 0, 1 << 32)?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let out = run_detached(py, None, &done, &stop, || -> Result<Value, SourceError> {
        let footprint = if cfg.needs_footprint() { Some(count_footprint(&spec, &stop, &done)?) } else { None };
        let mut h = Hierarchy::build(&cfg, spec.block_size, footprint)?;
        prepare_opt(&spec, &cfg, &mut h, footprint, &stop)?;
        let model = DiskModel { cache: h.levels.first().map_or(0, |l| l.capacity()), fetch_time };
        let mut src = Interruptible { src: spec.open()?, stop: &stop, done: &done };
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

/// Count the unique blocks of a trace.
#[pyfunction]
fn footprint(py: Python<'_>, trace_json: &str) -> PyResult<u64> {
    let spec = parse_spec(trace_json)?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    run_detached(py, None, &done, &stop, || count_footprint(&spec, &stop, &done))?.map_err(|e| source_err(&e))
}

/// Statistics of a trace (`trace info`) as JSON; `window` and `gap` tune the random-request rule.
#[pyfunction]
#[pyo3(signature = (trace_json, window=None, gap=None))]
fn trace_info(
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
    let (st, rep) = run_detached(py, None, &done, &stop, || -> Result<(TraceStats, SourceReport), SourceError> {
        let mut src = Interruptible { src: spec.open()?, stop: &stop, done: &done };
        let st = TraceStats::compute(&mut src, spec.block_size, rule)?;
        Ok((st, src.report()))
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
        out.extend(std::mem::take(m));
        report_json(&rep, &mut out);
        *m = out;
    }
    Ok(v.to_string())
}

/// Write a trace as oracleGeneral or CSV (`trace convert`); returns a JSON summary. The output appears
/// only when the whole trace is written (a temporary file renamed at the end).
#[pyfunction]
#[pyo3(signature = (trace_json, output, to="oracle_general", per_block=false, rebase_time=false))]
fn convert(
    py: Python<'_>,
    trace_json: &str,
    output: &str,
    to: &str,
    per_block: bool,
    rebase_time: bool,
) -> PyResult<String> {
    let spec = parse_spec(trace_json)?;
    let shape = if per_block { OracleShape::PerBlock } else { OracleShape::Objects };
    let options = writer::WriteOptions { shape, rebase_time };
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (summary, rep) = run_detached(py, None, &done, &stop, || -> Result<_, SourceError> {
        let mut src = Interruptible { src: spec.open()?, stop: &stop, done: &done };
        let summary = writer::write(&mut src, output, to, spec.block_size, options)?;
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
fn head(trace_json: &str, n: &Bound<'_, PyAny>) -> PyResult<Vec<RequestRow>> {
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

/// The registries: policies, prefetchers, trace formats and generators, as JSON
/// `{"policies": [[name, summary], …], …}`.
#[pyfunction]
fn registry() -> String {
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
fn check_config(config_json: &str) -> PyResult<()> {
    let c = HierarchyConfig::from_json(parse_json("config", config_json)?).map_err(|e| config_err(&e))?;
    validate_components(&c).map_err(|e| config_err(&e))
}

/// A hierarchy config (JSON) as the core reads it, as JSON: checked like `check_config`, every
/// hierarchy-level default filled in, sizes parsed (`"5%"` and `0.05` agree) and component names
/// resolved to their registered names (aliases and case folded). Sweeps hash this form, so spelling
/// differences do not make distinct runs.
#[pyfunction]
fn canonical_config(config_json: &str) -> PyResult<String> {
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

/// Mean response time (ms) of isolated random reads of `sectors` on device `model` (a preset name):
/// the "mean disk response time" of the Split paper's response-time proxy.
#[pyfunction]
#[pyo3(signature = (model, sectors=None, count=None, seed=None))]
fn device_random_read_ms(
    model: &str,
    sectors: Option<&Bound<'_, PyAny>>,
    count: Option<&Bound<'_, PyAny>>,
    seed: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    // A request of up to 2^20 sectors (512 MiB) and 10^7 reads: more is no longer a response-time probe.
    let sectors = uint_arg(sectors, "sectors", 1, 1 << 20)? as u32;
    let count = uint_arg(count, "count", 10_000, 10_000_000)? as u32;
    let seed = uint_arg(seed, "seed", 1, u64::MAX)?;
    use prefetchsim_core::component::ComponentSpec;
    use prefetchsim_core::device::{self, bench};
    let mut dev = device::build("device", &ComponentSpec::named(model), seed).map_err(|e| config_err(&e))?;
    let pattern = bench::Pattern::RandomIsolated { sectors, align: sectors.max(1), gap_ms: 100.0, count };
    let st = bench::run(dev.as_mut(), &pattern, seed).map_err(|e| ConfigError::new_err(e.to_string()))?;
    Ok(st.mean_response_ms)
}

/// Service-time statistics of a device on the standard patterns (`prefetchsim device bench`).
/// `device_json` is a preset name or `{"name": ..., overrides}` as JSON; returns a JSON list of rows
/// (`BenchStats`), one per pattern.
#[pyfunction]
#[pyo3(signature = (device_json, seed=1))]
fn device_bench(py: Python<'_>, device_json: &str, seed: u64) -> PyResult<String> {
    let v = parse_json("device", device_json)?;
    let spec: ComponentSpec = serde_json::from_value(v).map_err(|e| ConfigError::new_err(format!("device: {e}")))?;
    let mut dev = device::build("device", &spec, seed).map_err(|e| config_err(&e))?;
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let rows = run_detached(py, None, &done, &stop, || {
        let mut rows = Vec::new();
        for p in device::bench::standard_patterns(dev.as_ref()) {
            if stop.load(Ordering::Relaxed) {
                return Err("interrupted".to_string());
            }
            rows.push(device::bench::run(dev.as_mut(), &p, seed).map_err(|e| format!("{}: {e}", p.label()))?);
        }
        Ok(rows)
    })?
    .map_err(PrefetchsimError::new_err)?;
    serde_json::to_string(&rows).map_err(|e| PrefetchsimError::new_err(e.to_string()))
}

/// Capacity in 512-byte sectors of a device: a preset name or `{"name": ..., overrides}` as JSON.
#[pyfunction]
fn device_capacity_sectors(device_json: &str) -> PyResult<u64> {
    let v = parse_json("device", device_json)?;
    let spec: ComponentSpec = serde_json::from_value(v).map_err(|e| ConfigError::new_err(format!("device: {e}")))?;
    let dev = device::build("device", &spec, 1).map_err(|e| config_err(&e))?;
    Ok(dev.capacity())
}

/// The registered device presets as JSON `[[name, summary], …]`.
#[pyfunction]
fn devices() -> String {
    json!(device::DEVICES).to_string()
}

/// The `prefetchsim._core` module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PrefetchsimError", py.get_type::<PrefetchsimError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("PluginError", py.get_type::<PluginError>())?;
    plugin::register();
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    mrc::register(m)?;
    m.add_function(wrap_pyfunction!(footprint, m)?)?;
    m.add_function(wrap_pyfunction!(head, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(device_random_read_ms, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add_function(wrap_pyfunction!(device_bench, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(device_capacity_sectors, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_config, m)?)?;
    m.add_function(wrap_pyfunction!(integrated, m)?)?;
    m.add_function(wrap_pyfunction!(single_disk, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
