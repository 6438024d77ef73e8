//! `device_utilization` is `device_busy_ms / (sim_time_ms x the device's parallel channels)` (the guide's
//! engines page), whatever `scheduler.device_qdepth` lets the scheduler keep outstanding: a one-channel
//! device kept busy the whole run is at 1, not at 1/qdepth.

use super::*;

/// `device_utilization` of four one-block reads at 0 on a fixed 1 ms device of `parallel` channels, with
/// `device_qdepth` when given (default: `parallel`).
fn utilization(parallel: u32, qdepth: Option<u32>) -> f64 {
    let qdepth = qdepth.map(|q| format!("device_qdepth = {q}\n")).unwrap_or_default();
    let c = HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = 100\n[engine]\nkind = 'timed'\nreplay = 'open'\n\
         [device]\nname = 'fixed'\nread_latency_ms = 1.0\nparallel = {parallel}\n[scheduler]\npolicy = 'noop'\n{qdepth}"
    ))
    .unwrap();
    let reqs: Vec<Request> =
        [0, 10, 20, 30].iter().map(|&b| Request { time_ns: 0, first: b, len: 1, ..Request::default() }).collect();
    let t = run_t(&c, &reqs).timing.unwrap();
    match t.record().into_iter().find(|(k, _)| *k == "device_utilization") {
        Some((_, prefetchsim_core::metrics::Value::Float(u))) => u,
        other => panic!("device_utilization: {other:?}"),
    }
}

#[test]
fn utilization_divides_by_the_parallel_channels_not_the_qdepth() {
    // One channel: the four reads run back to back over [0, 4], busy 4 ms of 4 ms, whatever the qdepth
    // (before: 0.5 with qdepth 2, 0.125 with 8). Four channels, qdepth 1: the reads still run one at a
    // time over [0, 4], 4 ms of 4 channels x 4 ms = 0.25 (before: 1). Four channels, qdepth 8: all at once
    // over [0, 1], 1 (before: 0.5).
    for (parallel, qdepth, want) in
        [(1, None, 1.0), (1, Some(2), 1.0), (1, Some(8), 1.0), (4, None, 1.0), (4, Some(1), 0.25), (4, Some(8), 1.0)]
    {
        assert_eq!(utilization(parallel, qdepth), want, "parallel {parallel}, device_qdepth {qdepth:?}");
    }
}
