//! The result schema: every field of a run's totals and of a level's record, with its type and meaning,
//! in record order. Tools that store results (the Python package's results database, plots) read their
//! columns from here instead of running a simulation to learn them. A test holds it equal to what
//! [`LevelReport::record`](super::LevelReport::record) produces.

use serde::Serialize;

use super::LevelCounters;

/// The type of a field's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// A non-negative integer (counter, size).
    Int,
    /// A ratio or a mean.
    Float,
    /// A name.
    Text,
    /// true or false.
    Bool,
    /// A list of texts.
    TextList,
}

/// One field of a result record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Field {
    /// Its key in the record.
    pub name: &'static str,
    /// The type of its values.
    pub kind: FieldKind,
    /// What it counts or measures.
    pub meaning: String,
}

fn field(name: &'static str, kind: FieldKind, meaning: &str) -> Field {
    Field { name, kind, meaning: meaning.trim().to_string() }
}

/// The fields of a run's totals (the top of a result, beside its `levels`): what was replayed and what
/// the trace's source skipped or noticed.
#[must_use]
pub fn run_fields() -> Vec<Field> {
    use FieldKind::{Bool, Int, TextList};
    vec![
        field("requests", Int, "Requests read from the trace (after the ops filter), warm-up included."),
        field("blocks", Int, "Blocks in those requests."),
        field("warmup_requests", Int, "Requests of the warm-up prefix, not counted in the levels' metrics."),
        field("stopped_early", Bool, "Whether the run stopped early (interrupted or limited)."),
        field("skipped_records", Int, "Bad trace records skipped (a trace read with skip_bad)."),
        field("skipped_messages", TextList, "The messages of the first few skipped records."),
        field("time_backwards", Int, "Records whose time is earlier than the record's before them (kept)."),
        field(
            "notes",
            TextList,
            "What the levels' components want known that is not an error (a model's assumption the trace broke), each prefixed with its level.",
        ),
    ]
}

/// The fields of a level's record, in record order: identity, size, every counter, derived metrics.
#[must_use]
pub fn level_fields() -> Vec<Field> {
    use FieldKind::{Float, Int, Text};
    let mut v = vec![
        field("level", Int, "Position in the hierarchy, 0 = closest to the application."),
        field("name", Text, "The level's name (default L1, L2, ...)."),
        field("policy", Text, "Replacement policy (registered name)."),
        field("prefetcher", Text, "Prefetcher (registered name)."),
        field("capacity_blocks", Int, "Capacity in blocks."),
        field("capacity_bytes", Int, "Capacity in bytes (blocks times the block size)."),
    ];
    v.extend(LevelCounters::NAMES.iter().zip(LevelCounters::MEANINGS).map(|(n, m)| field(n, Int, m)));
    v.push(field("unused_prefetch", Int, "PFC's unused prefetch: unused_evicted + unused_resident_end."));
    v.extend([
        field("hit_ratio", Float, "Demand hit ratio: hits / demand_accesses (late prefetches are misses)."),
        field("miss_ratio", Float, "Demand miss ratio: misses / demand_accesses."),
        field("prefetch_hit_ratio", Float, "Prefetch hits per demand access (the Split paper's prefetch hit rate)."),
        field(
            "hit_ratio_all",
            Float,
            "Hit ratio counting the upper level's prefetch requests as accesses too (L2 hit ratio (all)).",
        ),
        field("hit_ratio_excl_prefetch", Float, "Hit ratio without prefetch hits (Butt et al.'s hr2)."),
        field(
            "precision",
            Float,
            "Prefetch accuracy: prefetch_used / prefetch_issued; 0 when nothing was issued (plots leave it out).",
        ),
        field("coverage", Float, "Prefetch coverage: used / (used + misses not caused by a late prefetch)."),
    ]);
    v
}

/// The fields of a timed run's run-level record ([`TimingReport::record`](super::TimingReport::record), a
/// result's `timing`, what `r.summary` gains in Python), in record order; measured after the warm-up.
#[must_use]
pub fn timing_fields() -> Vec<Field> {
    use FieldKind::{Float, Int, Text};
    // The response-time summary of reads or writes: its count, then mean, median, p95, p99 and max.
    // The percentiles are read from the run's histogram (buckets 0.4% wide): the middle of the bucket
    // holding the rank, kept within [smallest, largest]; exact to about 0.2%. All 0 when none completed.
    let rt = |count: &'static str, stats: [&'static str; 5], what: &str| -> Vec<Field> {
        let mut v = vec![field(count, Int, &format!("{what} requests completed (measured)."))];
        let says = ["mean", "median", "95th percentile of the", "99th percentile of the", "largest"];
        let how = [
            "",
            " (histogram bucket, within 0.2%)",
            " (histogram bucket, within 0.2%)",
            " (histogram bucket, within 0.2%)",
            "",
        ];
        v.extend(stats.into_iter().zip(says).zip(how).map(|((name, stat), how)| {
            let w = what.to_lowercase();
            field(name, Float, &format!("The {stat} {w} response time{how}, ms (issue to last block); 0 without {w}s."))
        }));
        v
    };
    let mut v = vec![
        field("engine", Text, "The engine: timed."),
        field("replay", Text, "open (at the trace's times) or closed (each stream waits for its request)."),
    ];
    v.extend(rt("rt_requests", ["rt_mean_ms", "rt_p50_ms", "rt_p95_ms", "rt_p99_ms", "rt_max_ms"], "Read"));
    let write = ["write_rt_mean_ms", "write_rt_p50_ms", "write_rt_p95_ms", "write_rt_p99_ms", "write_rt_max_ms"];
    v.extend(rt("write_requests", write, "Write"));
    v.extend([
        field(
            "makespan_ms",
            Float,
            "Last application completion minus the start of measurement: the issue of the first request after \
             the warm-up (its trace arrival in open loop; time 0 without a warm-up), ms.",
        ),
        field(
            "sim_time_ms",
            Float,
            "Simulated time from the start of measurement (as for makespan_ms) to the last event, ms; the \
             device_* and sched_* counters count over the same window.",
        ),
        field("stall_ms", Float, "Sum of read response times (STEP's time out of the box), ms."),
        field("device", Text, "The device model's name."),
        field(
            "device_requests",
            Int,
            "Requests dispatched to the device after merging, at or after the window's start.",
        ),
        field("device_requests_demand", Int, "Of those, requests carrying demand blocks only."),
        field("device_requests_prefetch", Int, "Of those, requests carrying prefetched blocks only."),
        field("device_requests_mixed", Int, "Of those, requests carrying both."),
        field("device_sectors", Int, "512-byte sectors the device transferred."),
        field("device_sectors_demand", Int, "Of those, in demand-only requests."),
        field("device_sectors_prefetch", Int, "Of those, in prefetch-only requests."),
        field("device_sectors_mixed", Int, "Of those, in mixed requests."),
        field("device_blocks_read", Int, "device_sectors in cache blocks."),
        field("device_service_mean_ms", Float, "Mean service time of those requests (in full), ms."),
        field(
            "device_busy_ms",
            Float,
            "Time the device spent serving requests inside the window (each service clipped to it), summed \
             over its channels, ms.",
        ),
        field("device_utilization", Float, "device_busy_ms / (sim_time_ms x the device's parallel channels)."),
        field(
            "sched_bios",
            Int,
            "Block I/Os the scheduler received before merging: pieces of a fetch of at most max_sectors.",
        ),
        field(
            "sched_merges",
            Int,
            "Back and front merges of those into a queued request, plus the fusions of two queued requests \
             they bring about.",
        ),
        field("sched_expired", Int, "Requests dispatched because their deadline expired."),
        field("sched_wait_mean_ms", Float, "Mean time a request waited in the scheduler's queue, ms."),
        field("sched_queue_mean", Float, "Time-average length of the scheduler's queue over the window."),
        field(
            "sched_queue_max",
            Int,
            "Longest the scheduler's queue was for some time (taken after each instant's dispatch).",
        ),
        field("net_messages", Int, "Messages over the links between levels."),
        field("net_pages", Int, "Pages those messages carried."),
        field("admission_wait_mean_ms", Float, "Open loop with max_outstanding: mean wait for admission, ms."),
        field("admission_wait_max_ms", Float, "Open loop with max_outstanding: longest wait for admission, ms."),
        field("requests_incomplete", Int, "Requests issued but not completed when the run stopped (0 when draining)."),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{LevelReport, Value};

    #[test]
    fn the_level_schema_is_what_a_level_record_holds() {
        let report = LevelReport {
            level: 0,
            name: "L1".into(),
            policy: "lru".into(),
            prefetcher: "none".into(),
            capacity_blocks: 1,
            block_size: 4096,
            counters: LevelCounters::default(),
            instances: Vec::new(),
        };
        let fields = level_fields();
        assert_fields_describe(&fields, &report.record());
        let demand = fields.iter().find(|f| f.name == "demand_accesses").unwrap();
        assert!(demand.meaning.contains("at L1; the demand blocks of a request"), "{}", demand.meaning);
    }

    #[test]
    fn the_timing_schema_is_what_a_timed_record_holds() {
        assert_fields_describe(&timing_fields(), &crate::metrics::TimingReport::default().record());
    }

    /// `fields` name `record`'s keys in order, with their value types and a meaning each.
    fn assert_fields_describe(fields: &[Field], record: &[(&str, Value)]) {
        let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
        let keys: Vec<&str> = record.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, keys);
        for (f, (_, v)) in fields.iter().zip(record) {
            let kind = match v {
                Value::Int(_) => FieldKind::Int,
                Value::Float(_) => FieldKind::Float,
                Value::Text(_) => FieldKind::Text,
            };
            assert_eq!(f.kind, kind, "{}", f.name);
            assert!(!f.meaning.is_empty() && !f.meaning.starts_with(' '), "{}", f.name);
        }
    }
}
