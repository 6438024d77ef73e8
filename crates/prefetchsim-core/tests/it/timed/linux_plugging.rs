//! Linux plugging (`scheduler.plugging = "linux"`, iosched.md §3): an async bio into an empty queue plugs
//! it for `unplug_delay_ms`; a sync bio, `unplug_thresh` requests or a task that starts waiting on a
//! queued read unplug it at once, and the queue is run then; an unplug timer whose plug is gone is no
//! event of the run.

use super::*;

/// One level of 1000 blocks with OBL over a fixed 0.5 ms device, noop with Linux plugging (3 ms delay).
fn cfg() -> HierarchyConfig {
    HierarchyConfig::from_toml(
        "[[level]]\nsize = 1000\nprefetcher = 'obl'\n[engine]\nkind = 'timed'\nreplay = 'open'\n\
         [device]\nname = 'fixed'\nread_latency_ms = 0.5\n[scheduler]\npolicy = 'noop'\nplugging = 'linux'\n",
    )
    .unwrap()
}

/// Reads of one block each: (time in µs, block).
fn reads(v: &[(u64, u64)]) -> Vec<Request> {
    v.iter().map(|&(us, b)| Request { time_ns: us * 1000, first: b, len: 1, ..Request::default() }).collect()
}

/// The device's reads as they end, (first block, blocks, time in µs), and when each request completed.
#[derive(Default)]
struct Reads {
    done: Vec<(u64, u32, u64)>,
    completed: BTreeMap<u64, u64>,
}

impl TimedObserver for Reads {
    fn read_done(&mut self, first: u64, len: u32, t: u64) {
        self.done.push((first, len, t / 1000));
    }
    fn completed(&mut self, index: u64, t: u64) {
        self.completed.insert(index, t / 1000);
    }
}

fn run(reqs: &[Request]) -> (RunResult, Reads) {
    let c = cfg();
    let mut h = Hierarchy::build(&c, 4096, None).unwrap();
    let mut obs = Reads::default();
    let r = run_timed_observed(&mut VecSource::new(reqs.to_vec()), &mut h, &c, &mut Silent, &mut obs).unwrap();
    (r, obs)
}

#[test]
fn a_demand_read_waiting_on_a_plugged_prefetch_unplugs_the_queue_at_once() {
    // 0: miss 10 (+ prefetch 11), read over [0, 0.5]; 0.2: miss 13 (+ 14), read over [0.5, 1]. 2.5: the
    // hit on prefetched 11 prefetches 12, an async bio into an empty queue: plugged until 5.5, the device
    // idle. 3.0: the application asks for 12 (a late prefetch): it waits on the queued read, which
    // unplugs the queue, and 12 is read over [3, 3.5], a response time of 0.5 ms. Before, the queue was
    // marked unplugged but not run: 12 waited for the timer, read over [5.5, 6] (3 ms).
    let (r, obs) = run(&reads(&[(0, 10), (200, 13), (2500, 11), (3000, 12)]));
    assert_eq!(obs.done, vec![(10, 2, 500), (13, 2, 1000), (12, 1, 3500)]);
    assert_eq!(obs.completed[&3], 3500);
    let t = r.timing.unwrap();
    assert_eq!((t.reads.max_ms, t.end_ns), (0.8, 3500 * 1000));
}

#[test]
fn a_demand_read_waiting_on_a_dispatched_read_also_unplugs_the_queue() {
    // 2.4: miss 100, read over [2.4, 2.9]; 2.5: prefetch 12 plugged (timer at 5.5); 2.6: a demand read of
    // 100 joins the read at the device: the queue is unplugged (Linux runs the unplug function of a page's
    // queue whatever its I/O is at) and 12 goes when the device frees, at 2.9. Without the join, at 5.5.
    let (_, obs) = run(&reads(&[(0, 10), (2400, 100), (2500, 11), (2600, 100)]));
    assert_eq!(obs.done, vec![(10, 2, 500), (100, 2, 2900), (12, 1, 3400)]);
    let (_, obs) = run(&reads(&[(0, 10), (2400, 100), (2500, 11)]));
    assert_eq!(obs.done, vec![(10, 2, 500), (100, 2, 2900), (12, 1, 6000)]);
}

#[test]
fn an_unplug_timer_whose_plug_is_gone_does_not_end_the_run() {
    // 0: miss 10 (+ 11), read over [0, 0.5]; 1.0: the hit on 11 prefetches 12 into an empty queue: plugged,
    // timer at 4.0; 1.1: miss 50 (+ 51), a sync bio, unplugs: 12 is read over [1.1, 1.6], 50 over
    // [1.6, 2.1]. The run ends at 2.1: busy 1.5 ms of 2.1, a queue of 1 over [1.0, 1.1] and [1.1, 1.6].
    // Before, the stale timer at 4.0 ended it: sim_time 4 ms, utilisation 0.375, queue mean 0.15.
    let (r, obs) = run(&reads(&[(0, 10), (1000, 11), (1100, 50)]));
    assert_eq!(obs.done, vec![(10, 2, 500), (12, 1, 1600), (50, 2, 2100)]);
    let t = r.timing.unwrap();
    assert_eq!((t.start_ns, t.end_ns, t.makespan_ns, t.device.busy_ns), (0, 2_100_000, 2_100_000, 1_500_000));
    assert!((t.device.queue_mean - 0.6 / 2.1).abs() < 1e-12, "{}", t.device.queue_mean);
}

#[test]
fn a_later_plug_waits_its_own_full_delay() {
    // As above with 20 (+ 21) read at 0.2: the plug of 2.5 (timer at 5.5) is gone at 3.0 (miss 50); the hit
    // on 21 at 4.0 prefetches 22 into an empty queue, a new plug: 22 waits until 7.0, not until the old
    // timer's 5.5, and the run ends at 7.5.
    let (r, obs) = run(&reads(&[(0, 10), (200, 20), (2500, 11), (3000, 50), (4000, 21)]));
    assert_eq!(obs.done, vec![(10, 2, 500), (20, 2, 1000), (12, 1, 3500), (50, 2, 4000), (22, 1, 7500)]);
    assert_eq!(r.timing.unwrap().end_ns, 7_500_000);
}

#[test]
fn a_demand_read_waiting_on_another_caches_plugged_prefetch_unplugs_the_queue() {
    // Two per-client caches over the one device. Client 0: 0: miss 10 (+ 11), read over [0, 0.5]; 2.5:
    // the hit on 11 prefetches 12 into the empty queue, plugged until 5.5. Client 1, 3.0: misses 12 and
    // waits for client 0's read of it, still queued behind the plug; its own prefetch of 13 is an async
    // bio, which does not unplug. The wait unplugs the queue: 12 and 13 (merged) are read over [3, 3.5].
    // Before, they waited for the timer (read over [5.5, 6]).
    let c = HierarchyConfig::from_toml(
        "[[level]]\nsize = 1000\nprefetcher = 'obl'\nper_client = true\n[engine]\nkind = 'timed'\nreplay = 'open'\n\
         [device]\nname = 'fixed'\nread_latency_ms = 0.5\n[scheduler]\npolicy = 'noop'\nplugging = 'linux'\n",
    )
    .unwrap();
    let mut reqs = reads(&[(0, 10), (2500, 11), (3000, 12)]);
    reqs[2].client = 1;
    reqs[2].stream = 1;
    let mut h = Hierarchy::build(&c, 4096, None).unwrap();
    let mut obs = Reads::default();
    run_timed_observed(&mut VecSource::new(reqs), &mut h, &c, &mut Silent, &mut obs).unwrap();
    assert_eq!(obs.done, vec![(10, 2, 500), (12, 1, 3500), (13, 1, 3500)]);
    assert_eq!(obs.completed[&2], 3500);
}
