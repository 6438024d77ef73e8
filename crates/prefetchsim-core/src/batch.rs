//! The batch runner: every config of a task over one trace, on a pool of threads (rayon), with the trace
//! decoded once ([`DecodedTrace`]) and replayed to each config instead of reopened and parsed per
//! config (issue 16, "decode once"). A size given as a share of the footprint is resolved from the same
//! pass, so no config pays a separate footprint pass. Both engines run from it ([`crate::run::run`]);
//! like `run`, it sits above the engines and the construction layer.
//!
//! Which configs replay the decoded copy: those without a request `limit`. A config with a limit streams
//! its own prefix of the trace, because its source report (records skipped, time going backwards) covers
//! only what it read. The configs of the size families ([`crate::mrc::family`]: plain LRU, FIFO or CLOCK
//! differing only in size) are computed together by one pass, which counts as one replay. The trace is
//! decoded when at least two replays need it, or when one does and a size needs the footprint (the pass is
//! then needed anyway); with only limited configs and a share of the footprint, the pass counts the
//! footprint without keeping the requests. So a batch that is one family with sizes in blocks (a size
//! sweep) reads the trace once, streaming, without holding it in memory: decoding it into memory cost
//! more than the family's pass (w106: 16 LRU sizes 5.5x one run with the copy, docs/decode-once.md).
//!
//! What lies outside the core (opening a trace file, Belady's MIN preparation from a trace's next-access
//! field, event logs written as CSV) comes in through [`TaskTrace`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use crate::component::ConfigError;
use crate::config::HierarchyConfig;
use crate::engine::decoded::{DecodedTrace, MAX_DECODED_REQUESTS};
use crate::engine::{Hierarchy, RequestSource, SourceError, SourceReport};
use crate::metrics::RunResult;
use crate::request::Request;
use crate::TraceFacts;

/// The trace of a task and the caller's parts of each config's run.
pub trait TaskTrace: Sync {
    /// Open the trace from its start.
    fn open(&self) -> Result<Box<dyn RequestSource + Send + '_>, SourceError>;

    /// Block size of the trace's requests, bytes.
    fn block_size(&self) -> u64;

    /// Called for config `index` after its hierarchy is built and before its replay (Belady's MIN
    /// levels learning their future, an event sink). Default: nothing.
    fn prepare(
        &self,
        _index: usize,
        _cfg: &HierarchyConfig,
        _h: &mut Hierarchy,
        _footprint: Option<u64>,
    ) -> Result<(), SourceError> {
        Ok(())
    }

    /// Called for config `index` after its replay; `interrupted` when the task was stopped. Default:
    /// nothing.
    fn finish(&self, _index: usize, _h: &mut Hierarchy, _interrupted: bool) -> Result<(), SourceError> {
        Ok(())
    }
}

/// What a task runs and how.
#[derive(Debug, Clone, Copy)]
pub struct Task<'a> {
    /// The configs, run in any order; results come back in this order.
    pub configs: &'a [HierarchyConfig],
    /// Threads to run configs on; 0 = one per core.
    pub threads: usize,
    /// Set by the caller to stop every pass and run promptly (Ctrl-C).
    pub stop: &'a AtomicBool,
    /// Requests read so far, by the decoding pass and by every config's run (progress).
    pub done: &'a AtomicU64,
    /// Most requests kept decoded in memory; a longer trace is streamed per config.
    pub max_decoded: usize,
}

impl<'a> Task<'a> {
    /// A task of `configs` on `threads` threads (0 = one per core) with the default memory limit.
    #[must_use]
    pub fn new(configs: &'a [HierarchyConfig], threads: usize, stop: &'a AtomicBool, done: &'a AtomicU64) -> Self {
        Self { configs, threads, stop, done, max_decoded: MAX_DECODED_REQUESTS }
    }
}

/// Why a config (or the task's shared pass) failed.
#[derive(Debug)]
pub enum TaskError {
    /// The config cannot be built (an impossible size, an unknown component).
    Config(ConfigError),
    /// The trace could not be read, or a caller's hook failed.
    Source(SourceError),
    /// The trace gave no request to simulate (empty, or every record filtered out or skipped), as the
    /// pass that measures the footprint found: a share of a footprint of 0 blocks was reported as "less
    /// than one block", which sent the user to the size instead of the trace. What the source skipped.
    Empty(SourceReport),
}

impl std::fmt::Display for TaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskError::Config(e) => e.fmt(f),
            TaskError::Source(e) => e.fmt(f),
            TaskError::Empty(_) => f.write_str("no requests to simulate"),
        }
    }
}

impl std::error::Error for TaskError {}

/// A config's run result and what its source reported.
pub type ConfigOutcome = Result<(RunResult, SourceReport), TaskError>;

/// A source that counts what passes into `done` and ends with an error as soon as `stop` is set, so
/// that passes over a trace outside the engines' progress ticks (decoding, footprint) stop promptly.
pub struct Interruptible<'a> {
    src: Box<dyn RequestSource + Send + 'a>,
    stop: &'a AtomicBool,
    done: &'a AtomicU64,
}

impl<'a> Interruptible<'a> {
    /// Wrap `src`.
    #[must_use]
    pub fn new(src: Box<dyn RequestSource + Send + 'a>, stop: &'a AtomicBool, done: &'a AtomicU64) -> Self {
        Self { src, stop, done }
    }
}

impl RequestSource for Interruptible<'_> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
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

    fn facts(&self) -> crate::TraceFacts {
        self.src.facts()
    }

    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        self.src.rescan()
    }
}

/// A task's trace opened for one config, which can open it again ([`RequestSource::rescan`]).
struct Reopenable<'a> {
    src: Box<dyn RequestSource + Send + 'a>,
    trace: &'a dyn TaskTrace,
}

impl RequestSource for Reopenable<'_> {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        self.src.fill(buf, max)
    }

    fn report(&self) -> SourceReport {
        self.src.report()
    }

    fn facts(&self) -> crate::TraceFacts {
        self.src.facts()
    }

    fn rescan(&self) -> Result<Option<Box<dyn RequestSource + '_>>, SourceError> {
        Ok(Some(self.trace.open()?))
    }
}

/// Run every config of `task` on `trace`. The outer error is a failure of the shared decoding pass
/// (every config would have met it); the inner ones are per config, in config order.
pub fn run_task(trace: &dyn TaskTrace, task: &Task<'_>) -> Result<Vec<ConfigOutcome>, TaskError> {
    let needs_footprint = task.configs.iter().any(HierarchyConfig::needs_footprint);
    // Sizes in blocks are known before any pass, so the family members among them share one replay; a
    // config sized by a share of the footprint counts as its own.
    let in_family = crate::mrc::family::members(task.configs, trace.block_size(), None);
    let own = task.configs.iter().zip(&in_family).filter(|(c, &f)| c.engine.limit.is_none() && !f).count();
    let replays = own + usize::from(in_family.contains(&true));
    let keep = replays >= 2 || (replays == 1 && needs_footprint);
    let decoded = if keep || needs_footprint {
        let src = trace.open().map_err(TaskError::Source)?;
        let mut src = Interruptible::new(src, task.stop, task.done);
        let max = if keep { task.max_decoded } else { 0 };
        Some(DecodedTrace::decode(&mut src, needs_footprint, max).map_err(TaskError::Source)?)
    } else {
        None
    };
    let decoded = decoded.as_ref();
    let footprint = decoded.and_then(DecodedTrace::footprint);
    if footprint == Some(0) {
        return Err(TaskError::Empty(decoded.map(DecodedTrace::report).cloned().unwrap_or_default()));
    }
    // The size families: one pass for all of them (mrc::family), over the decoded copy when there is one,
    // otherwise over a stream of the trace (whose report is then the one their results carry).
    // A replay of the copy is not counted as progress again; a stream of the trace is the task's pass.
    let uncounted = AtomicU64::new(0);
    let (family, family_report) = if crate::mrc::family::worthwhile(task.configs, trace.block_size(), footprint) {
        let (src, counted): (Box<dyn RequestSource + Send + '_>, _) = match decoded.and_then(DecodedTrace::replay) {
            Some(replay) => (Box::new(replay), &uncounted),
            None => (trace.open().map_err(TaskError::Source)?, task.done),
        };
        let mut src = Interruptible::new(src, task.stop, counted);
        let pre = crate::mrc::family::precompute(task.configs, trace.block_size(), footprint, &mut src)
            .map_err(TaskError::Source)?;
        (pre, Some((src.report(), src.facts())))
    } else {
        (vec![None; task.configs.len()], None)
    };
    let family_report = family_report.as_ref();
    // Each config's job inside the plugin host's thread scope (Python: cheap callbacks).
    let run = |i: usize| {
        crate::plugin::thread_scope(|| {
            let pre = family[i].as_ref().zip(family_report);
            run_config(trace, task, i, footprint, decoded, pre)
        })
    };
    let n = task.configs.len();
    let threads =
        if task.threads == 0 { std::thread::available_parallelism().map_or(1, |t| t.get()) } else { task.threads };
    let threads = threads.min(n);
    if threads <= 1 {
        return Ok((0..n).map(run).collect());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| TaskError::Source(format!("cannot start {threads} threads: {e}").into()))?;
    Ok(pool.install(|| (0..n).into_par_iter().map(run).collect()))
}

/// Build config `i`, replay the decoded trace (or stream its own when it has a limit or the copy was
/// dropped) and count its requests into `done` as it goes.
fn run_config(
    trace: &dyn TaskTrace,
    task: &Task<'_>,
    i: usize,
    footprint: Option<u64>,
    decoded: Option<&DecodedTrace>,
    family: Option<(&crate::mrc::family::Precomputed, &(SourceReport, TraceFacts))>,
) -> ConfigOutcome {
    let cfg = &task.configs[i];
    let open = || -> Result<Box<dyn RequestSource + Send + '_>, TaskError> {
        let replay = decoded.filter(|_| cfg.engine.limit.is_none()).and_then(DecodedTrace::replay);
        match replay {
            Some(s) => Ok(Box::new(s)),
            None => Ok(Box::new(Reopenable { src: trace.open().map_err(TaskError::Source)?, trace })),
        }
    };
    // The hierarchy is built for the trace its requests come from (what the trace declares settles
    // components' defaults): the family's pass, or the source this config replays, opened first.
    let (facts, mut src) = match family {
        Some((_, (_, facts))) => (*facts, None),
        None => {
            let src = open()?;
            (src.facts(), Some(src))
        }
    };
    let mut h = Hierarchy::build_for(cfg, trace.block_size(), footprint, facts).map_err(TaskError::Config)?;
    trace.prepare(i, cfg, &mut h, footprint).map_err(TaskError::Source)?;
    if let Some((pre, (report, _))) = family {
        if let Some(r) = crate::mrc::family::result(&mut h, cfg, pre) {
            let r = r.map_err(TaskError::Source)?;
            cfg.engine.check_measured(r.requests, r.stopped_early).map_err(TaskError::Config)?;
            trace.finish(i, &mut h, false).map_err(TaskError::Source)?;
            task.done.fetch_add(r.requests, Ordering::Relaxed);
            return Ok((r, report.clone()));
        }
    }
    let mut src = match src.take() {
        Some(s) => s,
        None => open()?,
    };
    let mut last = 0u64;
    let mut tick = |n: u64| {
        task.done.fetch_add(n - last, Ordering::Relaxed);
        last = n;
        !task.stop.load(Ordering::Relaxed)
    };
    let r = crate::run::run(src.as_mut(), &mut h, cfg, &mut tick).map_err(TaskError::Source)?;
    cfg.engine.check_measured(r.requests, r.stopped_early).map_err(TaskError::Config)?;
    trace.finish(i, &mut h, task.stop.load(Ordering::Relaxed)).map_err(TaskError::Source)?;
    task.done.fetch_add(r.requests - last, Ordering::Relaxed);
    Ok((r, src.report()))
}
