//! The registry builds CLOCK, ARC, MQ and 2Q with their parameters.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Registry

#[test]
fn registry_builds_clock_arc_mq_and_2q_with_parameters() {
    let cases = [
        ("clock", r#"{"bits": 2, "insert_ref": true}"#),
        ("second_chance", "{}"),
        ("arc", "{}"),
        ("mq", r#"{"queues": 4, "life_time": 100, "history": 10}"#),
        ("2q", r#"{"kin": 0.3, "kout": 0.6, "ghost_prefetched_unused": true}"#),
    ];
    for (name, params) in cases {
        let mut spec = ComponentSpec::named(name);
        spec.params = serde_json::from_str(params).unwrap();
        let (_, mut l) = build_level("level[0].policy", &spec, 8, LevelOptions::default(), Box::new(NoPrefetch))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut out = Vec::new();
        for b in [1, 2, 3, 1, 9, 10, 11, 12, 13, 1, 2] {
            l.access(&Request::read(b, 1), 1, &mut out);
            l.check_invariants().unwrap();
        }
    }
    for (name, params) in [("clock", r#"{"bits": 0}"#), ("mq", r#"{"queues": 0}"#), ("2q", r#"{"kin": 2}"#)] {
        let mut spec = ComponentSpec::named(name);
        spec.params = serde_json::from_str(params).unwrap();
        let err = build_level("p", &spec, 8, LevelOptions::default(), Box::new(NoPrefetch)).err();
        assert!(err.is_some(), "{name} accepted {params}");
    }
}
