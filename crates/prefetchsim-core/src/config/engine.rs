//! The `[engine]` table: which engine runs the hierarchy and, for the timed engine, how the trace is
//! replayed (`shared/docs/models/event-engine.md` §4), with the checks that keys fit the engine and mode.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// Which engine runs the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// No time; prefetches land at once (hit-ratio studies).
    #[default]
    Instant,
    /// Discrete events in integer nanoseconds: links, scheduler, device, in-flight reads.
    Timed,
}

/// How the timed engine issues the trace's requests (event-engine.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    /// At the trace's timestamps (scaled by `time_scale`), whatever is outstanding.
    Open,
    /// Each stream (or the whole trace) keeps `iodepth` requests outstanding; the next is issued a think
    /// time after a completion (default; PFC replays the Purdue traces this way).
    #[default]
    Closed,
}

/// How the timed engine reads a level's own prefetch that comes with a demand miss, at the last level
/// (the reads that go to the device; `engine.prefetch_io`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefetchIo {
    /// The prefetched blocks that directly follow a missed run join its read: one I/O, which the request
    /// waits for whole (Linux's synchronous read-ahead window; default, the engine's behaviour so far).
    /// Prefetch runs not contiguous with a demand read are issued at once, as reads of their own.
    #[default]
    Joined,
    /// A prefetch is an I/O of its own: an access that reads some of the requested blocks issues its
    /// prefetch reads (the level's native prefetch and PFC's readmore, i.e. every block past the request)
    /// only when those reads are done, and the request does not wait for them ("asynchronously after the
    /// fetch request is fulfilled", STEP §4.2.1). A request finding such a block in flight waits for it.
    Apart,
}

/// What identifies a closed-loop stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKey {
    /// The request's (client, stream) pair (default).
    #[default]
    ClientStream,
    /// The client alone: a process of a file-level trace (`multi_real`), a host of MSR.
    Client,
    /// The stream alone (file, ASU, volume).
    Stream,
}

/// Think time of closed-loop replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Think {
    /// The trace's gap between the stream's consecutive requests, `max(0, ts[i+1] - ts[i])`, scaled by
    /// `time_scale` (default; 0 for traces without timestamps).
    Gap,
    /// `think_ms` after every completion.
    Constant,
    /// None: the next request goes out at the completion.
    None,
}

/// Engine settings. The keys after `limit` belong to the timed engine and are errors with
/// `kind = "instant"`; open-only and closed-only keys are errors in the other mode.
#[derive(Clone, Debug, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// The engine.
    pub kind: EngineKind,
    /// Requests at the start that warm the caches but are not counted.
    pub warmup_requests: u64,
    /// Stop after this many requests (after the ops filter), if set.
    pub limit: Option<u64>,
    /// Timed: `open` or `closed` (default `closed`: the models README's default, PFC's synchronous replay
    /// of the Purdue traces; event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// Timed: factor on trace time differences (open-loop arrival gaps, `think = "gap"`); default 1
    /// (event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
    /// Timed, open loop: at most this many requests outstanding; later arrivals wait in FIFO order
    /// (the wait is reported and is part of their response time). Default: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_outstanding: Option<u64>,
    /// Timed, closed loop: requests each loop keeps outstanding (default 1, synchronous replay; fio's
    /// iodepth, DiskSim's `closedios`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// Timed, closed loop: one loop per stream (client, stream) of the trace (default true: each process
    /// of the Butt et al. replay), or one loop over the whole trace in trace order (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_stream: Option<bool>,
    /// Timed, closed loop with `per_stream`: what a stream is (default `client_stream`; `client` makes
    /// each process of a file-level trace one synchronous stream, as PFC replays the Purdue traces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_key: Option<StreamKey>,
    /// Timed, closed loop: think time rule (default `gap`, the trace's own spacing as event-engine.md §4
    /// suggests for timestamp-only traces; `constant` when `think_ms` is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
    /// Timed, closed loop: the constant think time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<f64>,
    /// Timed: after the last request, run until every read in flight has arrived (default true,
    /// event-engine.md §4); false stops when the last application request completes, leaving prefetches
    /// in flight (counted as `prefetch_inflight_end`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<bool>,
    /// Timed: writes block their closed-loop stream until they complete (default false: only reads block,
    /// as in the Butt et al. simulator; event-engine.md §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_writes: Option<bool>,
    /// Timed: run seed; the device's RNG is derived from it (default 1 \[ours\]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Timed: how the last level reads the prefetch that comes with a demand miss: `joined` (default,
    /// one I/O the request waits for) or `apart` (its own I/O, issued when the demand read is done and
    /// not waited for); see [`PrefetchIo`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefetch_io: Option<PrefetchIo>,
}

/// The timed engine's settings with every default applied ([`EngineConfig::timed`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TimedSettings {
    /// Open or closed loop.
    pub replay: Replay,
    /// Factor on trace time differences.
    pub time_scale: f64,
    /// Open loop: admission limit.
    pub max_outstanding: Option<u64>,
    /// Closed loop: requests outstanding per loop.
    pub iodepth: u32,
    /// Closed loop: one loop per stream.
    pub per_stream: bool,
    /// Closed loop: what a stream is.
    pub stream_key: StreamKey,
    /// Closed loop: think rule.
    pub think: Think,
    /// Closed loop: constant think time, ms.
    pub think_ms: f64,
    /// Run until nothing is in flight.
    pub drain: bool,
    /// Writes block closed-loop streams.
    pub sync_writes: bool,
    /// Run seed.
    pub seed: u64,
    /// How the last level reads its prefetch beside a demand miss.
    pub prefetch_io: PrefetchIo,
}

impl EngineConfig {
    /// A limit of 0, or within the warm-up, measures nothing: an error before the run (a limit of 0 gave
    /// a result of zeros, hit and miss ratio 0).
    fn check_warmup_and_limit(&self) -> Result<(), ConfigError> {
        match self.limit {
            Some(0) => Err(ConfigError::new(
                "engine.limit",
                "0 requests measure nothing: give at least 1, or leave the limit out to read the whole trace",
            )),
            Some(limit) if self.warmup_requests > 0 && limit <= self.warmup_requests => Err(ConfigError::new(
                "engine.limit",
                format!(
                    "{limit} is within the warm-up (warmup_requests = {}): nothing would be measured",
                    self.warmup_requests
                ),
            )),
            _ => Ok(()),
        }
    }

    /// After a run of `requests` requests that read the whole trace: a warm-up of all of them measured
    /// nothing, and the counters would have been the warm-up's (or zero) under a measured name. An error
    /// that names the key, so that a sweep over traces of different lengths does not report such a run.
    pub fn check_measured(&self, requests: u64, stopped_early: bool) -> Result<(), ConfigError> {
        if self.warmup_requests == 0 || stopped_early || requests > self.warmup_requests {
            return Ok(());
        }
        Err(ConfigError::new(
            "engine.warmup_requests",
            format!(
                "{} covers the whole trace ({requests} requests): nothing was measured; give fewer than {requests}",
                self.warmup_requests
            ),
        ))
    }

    /// Check that the keys fit the engine kind and replay mode, and return the timed settings (with
    /// defaults) for a timed engine, `None` for the instant engine.
    pub fn timed(&self) -> Result<Option<TimedSettings>, ConfigError> {
        self.check_warmup_and_limit()?;
        let set: [(&str, bool); 12] = [
            ("replay", self.replay.is_some()),
            ("time_scale", self.time_scale.is_some()),
            ("max_outstanding", self.max_outstanding.is_some()),
            ("iodepth", self.iodepth.is_some()),
            ("per_stream", self.per_stream.is_some()),
            ("stream_key", self.stream_key.is_some()),
            ("think", self.think.is_some()),
            ("think_ms", self.think_ms.is_some()),
            ("drain", self.drain.is_some()),
            ("sync_writes", self.sync_writes.is_some()),
            ("seed", self.seed.is_some()),
            ("prefetch_io", self.prefetch_io.is_some()),
        ];
        if self.kind == EngineKind::Instant {
            if let Some((k, _)) = set.iter().find(|(_, on)| *on) {
                return Err(ConfigError::new(
                    format!("engine.{k}"),
                    "a setting of the timed engine; set engine.kind = 'timed' to use it",
                ));
            }
            return Ok(None);
        }
        let replay = self.replay.unwrap_or_default();
        let (wrong_mode, other): (&[&str], &str) = match replay {
            Replay::Open => (&["iodepth", "per_stream", "stream_key", "think", "think_ms"], "closed"),
            Replay::Closed => (&["max_outstanding"], "open"),
        };
        if let Some((k, _)) = set.iter().find(|(k, on)| *on && wrong_mode.contains(k)) {
            let this = if other == "closed" { "open" } else { "closed" };
            return Err(ConfigError::new(
                format!("engine.{k}"),
                format!(
                    "only with engine.replay = '{other}' (this run replays '{this}': remove the key or change replay)"
                ),
            ));
        }
        let time_scale = self.time_scale.unwrap_or(1.0);
        if !(time_scale.is_finite() && time_scale >= 0.0) {
            return Err(ConfigError::new(
                "engine.time_scale",
                format!("must be a finite number >= 0, got {time_scale}"),
            ));
        }
        if self.max_outstanding == Some(0) {
            return Err(ConfigError::new("engine.max_outstanding", "must be at least 1"));
        }
        if self.per_stream == Some(false) && self.stream_key.is_some() {
            return Err(ConfigError::new("engine.stream_key", "only with per_stream = true"));
        }
        let iodepth = self.iodepth.unwrap_or(1);
        if iodepth == 0 {
            return Err(ConfigError::new("engine.iodepth", "must be at least 1"));
        }
        let think = match (self.think, self.think_ms) {
            (Some(Think::Constant), None) => {
                return Err(ConfigError::new("engine.think_ms", "needed with think = 'constant'"));
            }
            (Some(t), Some(_)) if t != Think::Constant => {
                return Err(ConfigError::new("engine.think_ms", "only with think = 'constant'"));
            }
            (Some(t), _) => t,
            (None, Some(_)) => Think::Constant,
            (None, None) => Think::Gap,
        };
        let think_ms = self.think_ms.unwrap_or(0.0);
        if !(think_ms.is_finite() && think_ms >= 0.0) {
            return Err(ConfigError::new("engine.think_ms", format!("must be a finite number >= 0, got {think_ms}")));
        }
        Ok(Some(TimedSettings {
            replay,
            time_scale,
            max_outstanding: self.max_outstanding,
            iodepth,
            per_stream: self.per_stream.unwrap_or(true),
            stream_key: self.stream_key.unwrap_or_default(),
            think,
            think_ms,
            drain: self.drain.unwrap_or(true),
            sync_writes: self.sync_writes.unwrap_or(false),
            seed: self.seed.unwrap_or(1),
            prefetch_io: self.prefetch_io.unwrap_or_default(),
        }))
    }
}
