//! The measured window of a timed run (the guide's engines page, "What timed runs measure"): it starts at
//! the first measured request's issue (its trace arrival in open loop), ends at the last event, and the
//! device counters count over it: busy time is the part of each service interval inside the window,
//! requests and sectors are those dispatched at or after its start.

use super::invariants::{timed, timing};
use super::*;

/// One level of 6 blocks over a fixed 2 ms device (`parallel` channels) and the noop scheduler; `engine`
/// is the `[engine]` table.
fn cfg(engine: &str, prefetcher: &str, parallel: u32) -> HierarchyConfig {
    HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = 6\nprefetcher = {prefetcher}\n[engine]\nkind = 'timed'\n{engine}\n\
         [device]\nname = 'fixed'\nread_latency_ms = 2.0\nparallel = {parallel}\n[scheduler]\npolicy = 'noop'\n"
    ))
    .unwrap()
}

/// Reads of one block each: (time in µs, block).
fn reads(v: &[(u64, u64)]) -> Vec<Request> {
    v.iter().map(|&(us, b)| Request { time_ns: us * 1000, first: b, len: 1, ..Request::default() }).collect()
}

fn util(t: &prefetchsim_core::metrics::TimingReport) -> f64 {
    t.device.busy_ns as f64 / ((t.end_ns - t.start_ns) as f64 * f64::from(t.device.channels))
}

#[test]
fn a_read_dispatched_at_the_window_start_counts_in_full() {
    // Closed loop, iodepth 2, warm-up 2: blocks 1 and 5 are asked at 0; the device reads 1 over [0, 2]
    // and 5 over [2, 4], dispatched at 2 just before block 9 is issued at 2, when the window opens; 9 is
    // read over [4, 6]. The device is busy the whole window [2, 6], with two requests in it. Before, the
    // read dispatched at the window's first nanosecond (earlier in event order) was left out: busy 2 ms,
    // one request, utilisation 0.5.
    let c = cfg("replay = 'closed'\nper_stream = false\niodepth = 2\nthink = 'none'\nwarmup_requests = 2", "'none'", 1);
    let t = run_t(&c, &reads(&[(0, 1), (0, 5), (0, 9)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns), (2 * MS, 6 * MS, 4 * MS));
    assert_eq!((t.device.requests(), t.device.busy_ns, t.device.service_ns), (2, 4 * MS, 4 * MS), "{:?}", t.device);
    assert_eq!(util(&t), 1.0);
}

#[test]
fn a_read_straddling_the_window_start_counts_its_time_inside() {
    // Open loop, warm-up 1: block 1 is read over [0, 2]; block 5 arrives at 1 (the window opens), waits
    // in the scheduler and is read over [2, 4]. Busy inside [1, 4]: 1 + 2 = 3 ms, utilisation 1; one
    // request dispatched in the window, which waited 1 ms in the queue (queue of 1 over [1, 2]).
    let c = cfg("replay = 'open'\nwarmup_requests = 1", "'none'", 1);
    let t = run_t(&c, &reads(&[(0, 1), (1000, 5)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns), (MS, 4 * MS, 3 * MS));
    assert_eq!((t.device.requests(), t.device.busy_ns, t.device.service_ns), (1, 3 * MS, 2 * MS), "{:?}", t.device);
    assert_eq!(util(&t), 1.0);
    assert_eq!((t.device.queue_wait_ns, t.device.queue_max), (MS, 1));
    assert!((t.device.queue_mean - 1.0 / 3.0).abs() < 1e-12, "{}", t.device.queue_mean);
}

#[test]
fn with_admission_the_window_starts_at_the_first_measured_arrival() {
    // Open loop, max_outstanding 1, warm-up 2: block 1 is read over [0, 2]; block 5 arrives at 0.5, is
    // admitted at 2 and read over [2, 4]; block 9 arrives at 0.6 (the window opens), is admitted at 4 and
    // read over [4, 6]: response time 5.4 ms, admission wait 3.4 ms, the device busy the whole window
    // [0.6, 6]. Before, the window opened at 2, when the last warm-up request was admitted: a makespan of
    // 4 ms shorter than the 5.4 ms response time it holds, utilisation 0.5.
    let c = cfg("replay = 'open'\nmax_outstanding = 1\nwarmup_requests = 2", "'none'", 1);
    let t = run_t(&c, &reads(&[(0, 1), (500, 5), (600, 9)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns), (600_000, 6 * MS, 5_400_000));
    assert_eq!((t.reads.requests, t.reads.max_ms, t.admission_wait.max_ms), (1, 5.4, 3.4));
    assert_eq!((t.device.requests(), t.device.busy_ns), (2, 5_400_000), "{:?}", t.device);
    assert_eq!(util(&t), 1.0);
    // Warm-up 3 of arrivals 0.1 ms apart: the third arrival is admitted at 4 and read over [4, 6], and the
    // first measured one, arrived at 0.3 while two before it waited, is read over [6, 8]; the reads
    // dispatched at 2, 4 and 6 are in the window.
    let c = cfg("replay = 'open'\nmax_outstanding = 1\nwarmup_requests = 3", "'none'", 1);
    let t = run_t(&c, &reads(&[(0, 1), (100, 5), (200, 9), (300, 13)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns, t.device.busy_ns), (300_000, 8 * MS, 7_700_000, 7_700_000));
    assert_eq!((t.reads.max_ms, t.device.requests()), (7.7, 3));
}

#[test]
fn without_draining_a_read_past_the_stop_counts_only_its_time_before() {
    // Open loop, drain = false, OBL on miss: both requests are done at 2 ms, when the run stops; the
    // prefetch read dispatched then runs over [2, 4], past the window [0, 2]. It was dispatched in the
    // window (a request), but none of its time is: busy 2 ms, utilisation 1 (before: busy 4, 2.0).
    let c = cfg("replay = 'open'\ndrain = false", "{ name = 'obl', variant = 'on_miss' }", 1);
    let t = run_t(&c, &reads(&[(0, 1), (0, 2)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns), (0, 2 * MS, 2 * MS));
    assert_eq!((t.device.requests(), t.device.busy_ns, t.device.service_ns), (2, 2 * MS, 4 * MS), "{:?}", t.device);
    assert_eq!(util(&t), 1.0);
}

#[test]
fn parallel_channels_count_each_service_inside_the_window() {
    // Two channels, open loop, warm-up 2: blocks 1 and 5 are read at once over [0, 2]; blocks 9 and 13
    // arrive at 1 (the window opens) and are read at once over [2, 4]. Inside [1, 4]: 1 + 1 + 2 + 2 = 6 ms
    // of 2 channels x 3 ms, utilisation 1.
    let c = cfg("replay = 'open'\nwarmup_requests = 2", "'none'", 2);
    let t = run_t(&c, &reads(&[(0, 1), (0, 5), (1000, 9), (1000, 13)])).timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.device.channels), (MS, 4 * MS, 2));
    assert_eq!((t.device.requests(), t.device.busy_ns, t.device.service_ns), (2, 6 * MS, 4 * MS), "{:?}", t.device);
    assert_eq!(util(&t), 1.0);
}

/// Records every device request: (dispatch, service start, done).
#[derive(Default)]
struct Served(Vec<(u64, u64, u64)>);

impl TimedObserver for Served {
    fn device_io(&mut self, dispatched: u64, start: u64, done: u64) {
        self.0.push((dispatched, start, done));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(150), ..ProptestConfig::default() })]

    #[test]
    fn device_counters_count_over_the_window(
        reqs in random_reqs(), h in hierarchy(), t in timing(), share in 0.0f64..1.0, drain in any::<bool>(),
        channels in prop::option::of(2u32..5)
    ) {
        // Busy time is the sum of the service intervals' overlaps with [start_ns, end_ns], so at most the
        // window's length x the channels; requests, sectors' service times and queue waits are those of
        // the requests dispatched at or after start_ns.
        let mut cfg = timed(&h, &t);
        cfg.engine.warmup_requests = (reqs.len() as f64 * share) as u64;
        cfg.engine.drain = Some(drain);
        if let Some(p) = channels {
            cfg.device = Some(
                serde_json::from_value(serde_json::json!({"name": "fixed", "read_latency_ms": 1.5, "write_latency_ms": 1.5, "parallel": p}))
                    .unwrap(),
            );
        }
        let mut hh = Hierarchy::build(&cfg, 4096, None).unwrap();
        let mut w = Served::default();
        let r = run_timed_observed(&mut VecSource::new(reqs.clone()), &mut hh, &cfg, &mut Silent, &mut w).unwrap();
        let tm = r.timing.unwrap();
        let (a, e) = (tm.start_ns, tm.end_ns);
        prop_assert!(a <= e);
        if t.replay == Replay::Open {
            // The window opens at the first measured request's arrival, even when it waits for admission.
            let wu = cfg.engine.warmup_requests as usize;
            let arrival = reqs[..=wu]
                .iter()
                .map(|q| ((q.time_ns - reqs[0].time_ns) as f64 * t.time_scale).round() as u64)
                .max()
                .unwrap();
            prop_assert_eq!(a, arrival);
        }
        let busy: u64 = w.0.iter().map(|&(_, s, d)| d.min(e).saturating_sub(s.max(a))).sum();
        prop_assert_eq!(tm.device.busy_ns, busy);
        prop_assert!(u128::from(busy) <= u128::from(e - a) * u128::from(tm.device.channels));
        let counted: Vec<_> = w.0.iter().filter(|x| x.0 >= a).collect();
        prop_assert!(w.0.iter().all(|x| x.0 <= e));
        prop_assert_eq!(tm.device.requests(), counted.len() as u64);
        prop_assert_eq!(tm.device.service_ns, counted.iter().map(|x| x.2 - x.1).sum::<u64>());
        if drain {
            prop_assert!(w.0.iter().all(|x| x.2 <= e));
        }
        if cfg.engine.warmup_requests == 0 && drain {
            prop_assert_eq!(tm.device.busy_ns, tm.device.service_ns);
        }
    }
}
