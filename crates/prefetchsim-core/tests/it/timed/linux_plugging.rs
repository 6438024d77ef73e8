//! Linux plugging (`scheduler.plugging = "linux"`, iosched.md §3): an async bio into an empty queue plugs
//! it for `unplug_delay_ms`; a sync bio, `unplug_thresh` requests or a task that starts waiting on a
//! queued read unplug it at once, and the queue is run then.

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
    assert_eq!(t.reads.max_ms, 0.8);
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
