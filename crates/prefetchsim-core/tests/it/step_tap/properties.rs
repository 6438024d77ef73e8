//! Properties: STEP (every preset) and TaP over LRU keep the level's invariants and prefetch accounting.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Properties: STEP (every preset) and TaP over LRU keep the level's invariants and prefetch accounting.
// ---------------------------------------------------------------------------------------------------

/// Four sequential cursors, each request continuing one or jumping to a random place.
fn workload() -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0usize..4, any::<bool>(), 0u64..600, 1u32..9), 1..300).prop_map(|v| {
        let mut cursors = [0u64, 1000, 2000, 3000];
        v.into_iter()
            .map(|(k, jump, b, n)| {
                if jump {
                    cursors[k] = b * 7;
                }
                let r = Request::read(cursors[k], n);
                cursors[k] += u64::from(n);
                r
            })
            .collect()
    })
}

fn step_spec() -> impl Strategy<Value = Value> {
    (0usize..4, 1u32..64, 1usize..12, any::<bool>(), 0usize..3, any::<bool>(), 1usize..5).prop_map(
        |(preset, ub, max_pcs, window, raised, clock, history)| {
            let preset = ["pm-ta", "pm-con", "pm-bb", "pm-sa"][preset];
            let window = if window { "prefetched" } else { "exact" };
            let raised = [0.0, 0.5, 1.0][raised];
            let mut v = json!({
                "preset": preset,
                "upper_bound": ub,
                "max_pcs": max_pcs,
                "match_window": window,
                "raised_cap": raised,
                "history": history,
                "high_min_len": 8,
            });
            if clock {
                // A clock of 1 ms per request and a 3 ms horizon: the delayed queue is used.
                v["delayed"] = json!(true);
                v["clock"] = json!("requests");
                v["request_ms"] = json!(1.0);
                v["delay_horizon_ms"] = json!(3.0);
            }
            v
        },
    )
}

fn check_run<T: Prefetcher>(
    mut l: Level<Lru>,
    shared: &Arc<Mutex<T>>,
    reqs: &[Request],
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        l.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(l.len() <= l.capacity());
        l.check_invariants().map_err(TestCaseError::fail)?;
        check(&lock(shared)).map_err(TestCaseError::fail)?;
    }
    l.finish();
    let c = l.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    Ok(())
}

proptest! {
    #[test]
    fn step_presets_keep_the_level_invariants(params in step_spec(), reqs in workload(), cap in 1usize..64, consume in any::<bool>()) {
        let (p, s) = Shared::new(step(params));
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let l = Level::new(cap, Lru::new(&env), p, LevelOptions { consume_on_hit: consume, ..LevelOptions::default() });
        check_run(l, &s, &reqs, Step::check)?;
    }

    #[test]
    fn tap_keeps_the_level_invariants(
        table in 1usize..8, p_min in 1u32..6, cp in 0.01f64..1.0, epoch in 1u64..50, slack in 0u32..3,
        reqs in workload(), cap in 1usize..64, consume in any::<bool>(),
    ) {
        let params = json!({"table_init": table, "table_max": 4 * table, "p_min": p_min, "cp_init": cp, "epoch": epoch, "match_slack": slack});
        let (p, t) = Shared::new(tap(params));
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let l = Level::new(cap, Lru::new(&env), p, LevelOptions { consume_on_hit: consume, ..LevelOptions::default() });
        check_run(l, &t, &reqs, |t: &Tap| {
            if t.table().len() > t.table_limit() { Err(format!("table {} over {}", t.table().len(), t.table_limit())) } else { Ok(()) }
        })?;
    }
}

#[test]
fn step_preset_names_read_back() {
    let p: StepParams = serde_json::from_value(json!({"preset": "step"})).unwrap();
    assert_eq!(p.preset, StepPreset::PmTa);
    let p: StepParams = serde_json::from_value(json!({"preset": "pm_sa"})).unwrap();
    assert_eq!(p.preset, StepPreset::PmSa);
    let _ = TapParams::default();
}
