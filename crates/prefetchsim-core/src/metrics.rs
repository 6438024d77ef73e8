//! Counters, derived metrics and the result record (its schema lives here, defined once).
//!
//! Definitions follow `shared/docs/models/metrics.md`. Hit ratios count demand accesses only; the
//! blocks of a request that the level above sent as its own prefetch are counted apart
//! (`upper_prefetch_*`), so that both "L2 hit ratio (demand)" and "(all)" can be reported.
//!
//! A run's record is one [`LevelReport`] per level and, for timed runs only, one run-level
//! [`TimingReport`] (response times, device, scheduler and network); time-free runs have no timing
//! fields at all (metrics.md §4: absent, not zero).

mod histogram;
pub mod schema;

pub use histogram::Histogram;

use serde::{Deserialize, Serialize};

macro_rules! counters {
    ($($(#[doc = $doc:literal])* $name:ident),* $(,)?) => {
        /// Raw per-level counters.
        #[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct LevelCounters {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl LevelCounters {
            /// Counter names, in schema order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Each counter's documentation (its meaning), in schema order: the doc comment's lines
            /// joined, for the result schema ([`schema`]).
            pub const MEANINGS: &'static [&'static str] = &[$(concat!($($doc),*)),*];

            /// (name, value) pairs in schema order.
            #[must_use]
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name)),*]
            }

            /// Add `other` field by field (aggregating clients or levels).
            pub fn add(&mut self, other: &Self) {
                $(self.$name += other.$name;)*
            }
        }
    };
}

counters! {
    /// Requests that reached the level.
    requests,
    /// Demand block references (all blocks of an application request at L1; the demand blocks of a
    /// request from the level above elsewhere).
    demand_accesses,
    /// Demand references that found the block resident and ready.
    hits,
    /// Hits that were the first demand reference of a prefetched block.
    prefetch_hits,
    /// Demand references that did not hit (includes late prefetches).
    misses,
    /// Demand references that found the block still in flight because of a prefetch (timed runs).
    late_prefetch,
    /// Demand references that found the block still in flight because of a demand read of another
    /// request (timed runs; no new I/O).
    inflight_demand_joins,
    /// Blocks of requests from above that the level above sent as its own prefetch.
    upper_prefetch_accesses,
    /// Those that hit.
    upper_prefetch_hits,
    /// Blocks this level's prefetcher brought in (resident and in-flight blocks are not re-issued).
    prefetch_issued,
    /// Prefetched blocks that received a first reference.
    prefetch_used,
    /// Of `prefetch_issued`, the blocks asked for by the second prefetcher of a `stack` (e.g. the
    /// sequential prefetcher under Mithril); the first prefetcher's are the rest.
    second_issued,
    /// Of `prefetch_used`, the second prefetcher's blocks.
    second_used,
    /// Prefetched blocks evicted without any reference (after second chances).
    unused_evicted,
    /// Prefetched blocks never referenced and still resident (and ready) at the end.
    unused_resident_end,
    /// Prefetched blocks never referenced and still in flight when the run stopped (timed runs; 0 when
    /// draining).
    prefetch_inflight_end,
    /// Prefetch blocks decided but not issued (no evictable room).
    prefetch_dropped,
    /// Unused prefetched blocks removed by invalidation or exclusive hand-off.
    prefetch_invalidated,
    /// Blocks evicted.
    evictions,
    /// Contiguous fetches sent to the level below (demand, prefetch or both in one I/O).
    fetches,
    /// Blocks in those fetches.
    fetched_blocks,
    /// Blocks the level above evicted and sent down (exclusive caching `demote`).
    demoted_in,
    /// PFC: bypassed blocks found here and served without the policy or prefetcher seeing them.
    silent_hits,
    /// PFC (timed runs): bypassed blocks found here in flight: the request waits for their read, with no
    /// new I/O and without the policy or prefetcher seeing them (neither a silent hit nor a bypass read).
    bypass_pending,
    /// PFC: bypassed blocks read from below and not cached here.
    bypass_reads,
    /// PFC: blocks appended to requests by readmore.
    readmore_blocks,
    /// PFC: of `prefetch_issued`, the readmore blocks this level cached (the appended blocks it did not
    /// hold); the native prefetcher's are the rest.
    readmore_issued,
    /// PFC: of `prefetch_used`, readmore blocks.
    readmore_used,
    /// PFC: of `unused_evicted`, readmore blocks.
    readmore_unused_evicted,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

impl LevelCounters {
    /// Demand hit ratio (strict: late prefetches are misses).
    #[must_use]
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits, self.demand_accesses)
    }
    /// Demand miss ratio.
    #[must_use]
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.misses, self.demand_accesses)
    }
    /// Prefetch hits per demand access (the Split paper's "prefetch hit rate").
    #[must_use]
    pub fn prefetch_hit_ratio(&self) -> f64 {
        ratio(self.prefetch_hits, self.demand_accesses)
    }
    /// Hit ratio counting the upper level's prefetch requests as accesses too ("L2 hit ratio (all)").
    #[must_use]
    pub fn hit_ratio_all(&self) -> f64 {
        ratio(self.hits + self.upper_prefetch_hits, self.demand_accesses + self.upper_prefetch_accesses)
    }
    /// Hit ratio without prefetch hits (Butt et al.'s `hr2`).
    #[must_use]
    pub fn hit_ratio_excl_prefetch(&self) -> f64 {
        ratio(self.hits - self.prefetch_hits, self.demand_accesses)
    }
    /// Prefetch accuracy: used / issued.
    #[must_use]
    pub fn precision(&self) -> f64 {
        ratio(self.prefetch_used, self.prefetch_issued)
    }
    /// Prefetch coverage: used / (used + misses not caused by a late prefetch).
    #[must_use]
    pub fn coverage(&self) -> f64 {
        ratio(self.prefetch_used, self.prefetch_used + self.misses - self.late_prefetch)
    }
    /// PFC's unused prefetch: evicted unused + resident unused at the end.
    #[must_use]
    pub fn unused_prefetch(&self) -> u64 {
        self.unused_evicted + self.unused_resident_end
    }

    /// Derived metrics, in schema order.
    #[must_use]
    pub fn derived(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("hit_ratio", self.hit_ratio()),
            ("miss_ratio", self.miss_ratio()),
            ("prefetch_hit_ratio", self.prefetch_hit_ratio()),
            ("hit_ratio_all", self.hit_ratio_all()),
            ("hit_ratio_excl_prefetch", self.hit_ratio_excl_prefetch()),
            ("precision", self.precision()),
            ("coverage", self.coverage()),
        ]
    }

    /// Whether every issued prefetch is accounted for (metrics.md §1 conservation; after a warm-up too,
    /// since the blocks prefetched in it are left out of every prefetch counter).
    #[must_use]
    pub fn prefetch_conserved(&self) -> bool {
        self.prefetch_issued
            == self.prefetch_used
                + self.unused_evicted
                + self.unused_resident_end
                + self.prefetch_inflight_end
                + self.prefetch_invalidated
    }
}

/// A value in a result record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// An integer counter or size.
    Int(u64),
    /// A ratio or mean.
    Float(f64),
    /// A name.
    Text(String),
}

/// The result of one level in one run: identity, size and every metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Position in the hierarchy, 0 = closest to the application.
    pub level: usize,
    /// The level's name (default `L1`, `L2`, …).
    pub name: String,
    /// Policy name.
    pub policy: String,
    /// Prefetcher name.
    pub prefetcher: String,
    /// Capacity in blocks.
    pub capacity_blocks: u64,
    /// Block size in bytes.
    pub block_size: u64,
    /// Raw counters (of a level of several caches: their sum).
    pub counters: LevelCounters,
    /// A level of several caches (one per client, or K servers): each one's counters, in key order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceReport>,
}

/// The counters of one cache of a level of several ([`crate::level::fanout::FanOut`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceReport {
    /// The client id of a per-client level, else the server index.
    pub instance: u32,
    /// The client it serves (per-client levels only).
    pub client: Option<u32>,
    /// Its counters.
    pub counters: LevelCounters,
}

impl LevelReport {
    /// The flat record: identity, counters, derived metrics, in schema order.
    #[must_use]
    pub fn record(&self) -> Vec<(&'static str, Value)> {
        let mut v = vec![
            ("level", Value::Int(self.level as u64)),
            ("name", Value::Text(self.name.clone())),
            ("policy", Value::Text(self.policy.clone())),
            ("prefetcher", Value::Text(self.prefetcher.clone())),
            ("capacity_blocks", Value::Int(self.capacity_blocks)),
            ("capacity_bytes", Value::Int(self.capacity_blocks * self.block_size)),
        ];
        v.extend(self.counters.pairs().into_iter().map(|(k, x)| (k, Value::Int(x))));
        v.push(("unused_prefetch", Value::Int(self.counters.unused_prefetch())));
        v.extend(self.counters.derived().into_iter().map(|(k, x)| (k, Value::Float(x))));
        v
    }

    /// One flat record per instance of a level of several caches: `level`, `name`, `instance`, `client`
    /// (per-client levels), then the counters and derived metrics as in [`LevelReport::record`].
    #[must_use]
    pub fn instance_records(&self) -> Vec<Vec<(&'static str, Value)>> {
        self.instances
            .iter()
            .map(|i| {
                let mut v = vec![
                    ("level", Value::Int(self.level as u64)),
                    ("name", Value::Text(self.name.clone())),
                    ("instance", Value::Int(u64::from(i.instance))),
                ];
                if let Some(c) = i.client {
                    v.push(("client", Value::Int(u64::from(c))));
                }
                v.extend(i.counters.pairs().into_iter().map(|(k, x)| (k, Value::Int(x))));
                v.push(("unused_prefetch", Value::Int(i.counters.unused_prefetch())));
                v.extend(i.counters.derived().into_iter().map(|(k, x)| (k, Value::Float(x))));
                v
            })
            .collect()
    }
}

/// The result of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Requests read from the trace (after the ops filter), warm-up included.
    pub requests: u64,
    /// Blocks in those requests.
    pub blocks: u64,
    /// Requests of the warm-up prefix, not counted in the levels' metrics.
    pub warmup_requests: u64,
    /// Whether the run stopped early (interrupted or limited).
    pub stopped_early: bool,
    /// One report per level, top first.
    pub levels: Vec<LevelReport>,
    /// Run-level timing metrics (timed engine only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingReport>,
    /// What the levels' components want known that is not an error, each prefixed with its level
    /// (`level[0] (L1): ...`): a model's assumption the trace broke.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Response-time statistics of one class of application requests (ms).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RtSummary {
    /// Completed requests measured.
    pub requests: u64,
    /// Mean (exact).
    pub mean_ms: f64,
    /// Median (histogram, within 0.4%).
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Maximum (exact).
    pub max_ms: f64,
}

impl RtSummary {
    /// The summary of a histogram of nanoseconds.
    #[must_use]
    pub fn of(h: &Histogram) -> Self {
        let ms = |ns: u64| ns as f64 / 1e6;
        Self {
            requests: h.count(),
            mean_ms: h.mean() / 1e6,
            p50_ms: ms(h.quantile(0.50)),
            p95_ms: ms(h.quantile(0.95)),
            p99_ms: ms(h.quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }

    fn push(&self, prefix: &'static [&'static str; 6], v: &mut Vec<(&'static str, Value)>) {
        v.push((prefix[0], Value::Int(self.requests)));
        for (k, x) in prefix[1..].iter().zip([self.mean_ms, self.p50_ms, self.p95_ms, self.p99_ms, self.max_ms]) {
            v.push((k, Value::Float(x)));
        }
    }
}

/// Response times of one client (its `client` id in the trace).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientTiming {
    /// Client id.
    pub client: u32,
    /// Read requests.
    pub reads: RtSummary,
    /// Write requests.
    pub writes: RtSummary,
}

/// What the device and its scheduler did in the measured window (iosched.md §7, metrics.md §1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    /// Device preset name.
    pub name: String,
    /// Requests the device serves at once (its parallel channels), the divisor of `device_utilization`;
    /// not the scheduler's `device_qdepth`, which may keep more outstanding.
    pub channels: u32,
    /// Sectors per cache block.
    pub block_sectors: u32,
    /// Requests dispatched (at or after the window's start) carrying only demand (sync) bios.
    pub requests_demand: u64,
    /// Requests dispatched carrying only prefetch (async) bios.
    pub requests_prefetch: u64,
    /// Requests dispatched carrying both.
    pub requests_mixed: u64,
    /// Sectors of demand requests.
    pub sectors_demand: u64,
    /// Sectors of prefetch requests.
    pub sectors_prefetch: u64,
    /// Sectors of mixed requests.
    pub sectors_mixed: u64,
    /// Sum of the service times (dispatch or device-free time to completion) of the requests counted, in
    /// full, ns.
    pub service_ns: u64,
    /// Time the device served requests inside the window, summed over its channels: the part of each
    /// service interval between `start_ns` and `end_ns`, ns.
    #[serde(default)]
    pub busy_ns: u64,
    /// Bios submitted to the scheduler.
    pub bios: u64,
    /// Back merges + front merges + fused requests.
    pub merges: u64,
    /// DEADLINE dispatches of an expired FIFO head.
    pub expired: u64,
    /// Sum over dispatched requests of the time queued in the scheduler, ns.
    pub queue_wait_ns: u64,
    /// Time-weighted mean number of requests queued in the scheduler (not at the device).
    pub queue_mean: f64,
    /// Largest number of requests queued in the scheduler after an instant's dispatches.
    pub queue_max: u64,
}

impl DeviceReport {
    /// Requests dispatched.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests_demand + self.requests_prefetch + self.requests_mixed
    }
    /// Sectors read.
    #[must_use]
    pub fn sectors(&self) -> u64 {
        self.sectors_demand + self.sectors_prefetch + self.sectors_mixed
    }
}

/// Run-level metrics of a timed run (event-engine.md §6, metrics.md §1-2), measured after the warm-up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingReport {
    /// `open` or `closed`.
    pub replay: String,
    /// Simulated time when measurement started: the issue of the first measured request (its arrival in
    /// open loop; 0 without a warm-up), so that no warm-up response time falls inside the window, ns.
    pub start_ns: u64,
    /// Simulated time of the last event, ns.
    pub end_ns: u64,
    /// Last application completion minus `start_ns` (Butt's "execution time" in closed loop), ns.
    pub makespan_ns: u64,
    /// Read requests: response time = completion of the last block - issue.
    pub reads: RtSummary,
    /// Write requests (served by the caches like reads; they block a closed-loop stream only with
    /// `sync_writes`).
    pub writes: RtSummary,
    /// Histogram of read response times, ns.
    pub rt_histogram: Histogram,
    /// Per client, ascending client id.
    pub clients: Vec<ClientTiming>,
    /// Device and scheduler.
    pub device: DeviceReport,
    /// Messages over the links between levels.
    pub net_messages: u64,
    /// Pages carried by them.
    pub net_pages: u64,
    /// Sum of read response times (STEP's "out of box" time, the stall of the streams), ns.
    pub stall_ns: u128,
    /// Open loop with `max_outstanding`: time requests waited for admission.
    pub admission_wait: RtSummary,
    /// Requests issued but not completed when the run stopped (0 when draining).
    pub requests_incomplete: u64,
}

impl TimingReport {
    /// The flat run-level record, in schema order (what `r.summary` gains in Python).
    #[must_use]
    pub fn record(&self) -> Vec<(&'static str, Value)> {
        let ms = |ns: u64| Value::Float(ns as f64 / 1e6);
        let d = &self.device;
        let mut v = vec![("engine", Value::Text("timed".into())), ("replay", Value::Text(self.replay.clone()))];
        self.reads.push(&["rt_requests", "rt_mean_ms", "rt_p50_ms", "rt_p95_ms", "rt_p99_ms", "rt_max_ms"], &mut v);
        self.writes.push(
            &[
                "write_requests",
                "write_rt_mean_ms",
                "write_rt_p50_ms",
                "write_rt_p95_ms",
                "write_rt_p99_ms",
                "write_rt_max_ms",
            ],
            &mut v,
        );
        let span = self.end_ns.saturating_sub(self.start_ns);
        let util = if span == 0 { 0.0 } else { d.busy_ns as f64 / (span as f64 * f64::from(d.channels.max(1))) };
        let mean_svc = if d.requests() == 0 { 0.0 } else { d.service_ns as f64 / d.requests() as f64 / 1e6 };
        let mean_wait = if d.requests() == 0 { 0.0 } else { d.queue_wait_ns as f64 / d.requests() as f64 / 1e6 };
        v.extend([
            ("makespan_ms", ms(self.makespan_ns)),
            ("sim_time_ms", ms(span)),
            ("stall_ms", Value::Float(self.stall_ns as f64 / 1e6)),
            ("device", Value::Text(d.name.clone())),
            ("device_requests", Value::Int(d.requests())),
            ("device_requests_demand", Value::Int(d.requests_demand)),
            ("device_requests_prefetch", Value::Int(d.requests_prefetch)),
            ("device_requests_mixed", Value::Int(d.requests_mixed)),
            ("device_sectors", Value::Int(d.sectors())),
            ("device_sectors_demand", Value::Int(d.sectors_demand)),
            ("device_sectors_prefetch", Value::Int(d.sectors_prefetch)),
            ("device_sectors_mixed", Value::Int(d.sectors_mixed)),
            ("device_blocks_read", Value::Int(d.sectors() / u64::from(d.block_sectors.max(1)))),
            ("device_service_mean_ms", Value::Float(mean_svc)),
            ("device_busy_ms", ms(d.busy_ns)),
            ("device_utilization", Value::Float(util)),
            ("sched_bios", Value::Int(d.bios)),
            ("sched_merges", Value::Int(d.merges)),
            ("sched_expired", Value::Int(d.expired)),
            ("sched_wait_mean_ms", Value::Float(mean_wait)),
            ("sched_queue_mean", Value::Float(d.queue_mean)),
            ("sched_queue_max", Value::Int(d.queue_max)),
            ("net_messages", Value::Int(self.net_messages)),
            ("net_pages", Value::Int(self.net_pages)),
            ("admission_wait_mean_ms", Value::Float(self.admission_wait.mean_ms)),
            ("admission_wait_max_ms", Value::Float(self.admission_wait.max_ms)),
            ("requests_incomplete", Value::Int(self.requests_incomplete)),
        ]);
        v
    }

    /// Per-client records: `client` and the read and write response-time fields.
    #[must_use]
    pub fn client_records(&self) -> Vec<Vec<(&'static str, Value)>> {
        self.clients
            .iter()
            .map(|c| {
                let mut v = vec![("client", Value::Int(u64::from(c.client)))];
                c.reads
                    .push(&["rt_requests", "rt_mean_ms", "rt_p50_ms", "rt_p95_ms", "rt_p99_ms", "rt_max_ms"], &mut v);
                c.writes.push(
                    &[
                        "write_requests",
                        "write_rt_mean_ms",
                        "write_rt_p50_ms",
                        "write_rt_p95_ms",
                        "write_rt_p99_ms",
                        "write_rt_max_ms",
                    ],
                    &mut v,
                );
                v
            })
            .collect()
    }
}
