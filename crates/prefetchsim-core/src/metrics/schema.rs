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
        field("precision", Float, "Prefetch accuracy: prefetch_used / prefetch_issued."),
        field("coverage", Float, "Prefetch coverage: used / (used + misses not caused by a late prefetch)."),
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
        let record = report.record();
        let fields = level_fields();
        let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
        let keys: Vec<&str> = record.iter().map(|(k, _)| *k).collect();
        assert_eq!(names, keys);
        for (f, (_, v)) in fields.iter().zip(&record) {
            let kind = match v {
                Value::Int(_) => FieldKind::Int,
                Value::Float(_) => FieldKind::Float,
                Value::Text(_) => FieldKind::Text,
            };
            assert_eq!(f.kind, kind, "{}", f.name);
            assert!(!f.meaning.is_empty() && !f.meaning.starts_with(' '), "{}", f.name);
        }
        let demand = fields.iter().find(|f| f.name == "demand_accesses").unwrap();
        assert!(demand.meaning.contains("at L1; the demand blocks of a request"), "{}", demand.meaning);
    }
}
