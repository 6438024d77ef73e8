//! The timed engine's `prefetch_io` (config.rs `PrefetchIo`): `joined` reads a demand miss and the prefetch
//! following it as one I/O the request waits for; `apart` reads the prefetch (native prefetch, PFC's
//! readmore) as an I/O of its own, submitted when the demand read has arrived, not waited for by the
//! request; a request finding such a block in flight waits for it.

use prefetchsim_core::config::{HierarchyConfig, PrefetchIo};
use prefetchsim_core::engine::{Hierarchy, Silent, TimedObserver, VecSource};
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::request::Request;
use prefetchsim_core::run::run_timed_observed;

const MS: u64 = 1_000_000;

/// Records every device read (first, len, start, done) and every completion.
#[derive(Default)]
struct Reads {
    reads: Vec<(u64, u32, u64, u64)>,
    done: Vec<(u64, u64)>,
}

impl TimedObserver for Reads {
    fn read_start(&mut self, first: u64, len: u32, t: u64) {
        self.reads.push((first, len, t, u64::MAX));
    }
    fn read_done(&mut self, first: u64, len: u32, t: u64) {
        let r = self.reads.iter_mut().find(|r| r.0 == first && r.1 == len && r.3 == u64::MAX).expect("a read started");
        r.3 = t;
    }
    fn completed(&mut self, index: u64, t: u64) {
        self.done.push((index, t));
    }
}

impl Reads {
    /// The read carrying `block`.
    fn of(&self, block: u64) -> (u64, u32, u64, u64) {
        *self.reads.iter().find(|r| (r.0..r.0 + u64::from(r.1)).contains(&block)).expect("block read")
    }
    fn completion(&self, index: u64) -> u64 {
        self.done.iter().find(|d| d.0 == index).expect("completed").1
    }
}

/// A device of 5 ms per request plus 1 ms per 4 KiB block, FIFO (noop, no plugging), one request at a
/// time; `levels` TOML tables above it.
fn cfg(levels: &str, io: &str) -> HierarchyConfig {
    HierarchyConfig::from_toml(&format!(
        "{levels}\n[engine]\nkind = 'timed'\nreplay = 'open'\nprefetch_io = '{io}'\n\
         [link]\nalpha_ms = 0.0\nbeta_ms_per_page = 0.0\n\
         [device]\nname = 'fixed'\nread_latency_ms = 5.0\nbandwidth_mb_s = 4.096\n\
         [scheduler]\npolicy = 'noop'\nplugging = 'instant'\n"
    ))
    .unwrap()
}

fn at(t_ms: u64, first: u64, len: u32) -> Request {
    Request { time_ns: t_ms * MS, first, len, ..Request::default() }
}

fn run(cfg: &HierarchyConfig, reqs: &[Request]) -> (RunResult, Reads) {
    let mut h = Hierarchy::build(cfg, 4096, None).unwrap();
    let mut w = Reads::default();
    let r = run_timed_observed(&mut VecSource::new(reqs.to_vec()), &mut h, cfg, &mut Silent, &mut w).unwrap();
    (r, w)
}

const RA: &str = "[[level]]\nsize = 64\nprefetcher = 'pfc-ra'";

#[test]
fn the_default_is_joined() {
    let c = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[engine]\nkind = 'timed'\n").unwrap();
    assert_eq!(c.engine.timed().unwrap().unwrap().prefetch_io, PrefetchIo::Joined);
    let bad = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[engine]\nprefetch_io = 'apart'\n").unwrap_err();
    assert_eq!(bad.path, "engine.prefetch_io", "a timed-engine key");
    let bad = HierarchyConfig::from_toml("[[level]]\nsize = 4\n[engine]\nkind = 'timed'\nprefetch_io = 'split'\n");
    assert!(bad.unwrap_err().to_string().contains("prefetch_io"));
}

#[test]
fn joined_the_demand_waits_for_its_prefetch() {
    // RA(4): the miss on block 0 reads blocks 0-4 in one I/O of 5 + 5 ms; block 2, asked at 2 ms, is in it.
    let (r, w) = run(&cfg(RA, "joined"), &[at(0, 0, 1), at(2, 2, 1)]);
    assert_eq!(w.of(0), (0, 5, 0, 10 * MS));
    assert_eq!(w.completion(0), 10 * MS);
    assert_eq!(w.completion(1), 10 * MS);
    let t = r.timing.unwrap();
    assert_eq!((t.device.requests_mixed, t.reads.max_ms), (1, 10.0), "{:?}", t.device);
}

#[test]
fn apart_the_demand_does_not_wait_and_the_prefetch_follows_its_read() {
    // The miss on block 0 is read alone (5 + 1 ms); blocks 1-4 are read after it (5 + 4 ms).
    let (r, w) = run(&cfg(RA, "apart"), &[at(0, 0, 1)]);
    assert_eq!(w.reads, vec![(0, 1, 0, 6 * MS), (1, 4, 6 * MS, 15 * MS)]);
    assert_eq!(w.completion(0), 6 * MS, "the response time has no prefetch transfer in it");
    let t = r.timing.unwrap();
    assert_eq!((t.device.requests_demand, t.device.requests_prefetch, t.device.requests_mixed), (1, 1, 0));
    assert_eq!(t.reads.max_ms, 6.0);
}

#[test]
fn apart_a_request_for_a_block_whose_prefetch_is_held_or_in_flight_waits_for_it() {
    // Block 2, asked at 2 ms, is pinned while its prefetch read waits for block 0's read: the request
    // waits for the read carrying it (here merged by the FIFO with the prefetch its own access issued).
    let (r, w) = run(&cfg(RA, "apart"), &[at(0, 0, 1), at(2, 2, 1)]);
    let pf = w.of(2);
    assert!(pf.2 >= 6 * MS, "the prefetch read starts after the demand read is done: {pf:?}");
    assert_eq!(w.completion(1), pf.3, "a pending hit waits for the prefetch read");
    assert!(pf.3 > 10 * MS, "later than the joined read would have brought it: {pf:?}");
    let c = &r.levels[0].counters;
    assert_eq!((c.late_prefetch, c.prefetch_used, c.misses), (1, 1, 2), "{c:?}");
}

#[test]
fn apart_an_access_without_a_demand_read_prefetches_at_once() {
    // Block 0's access prefetches 1-4 after its read (done at 15 ms). The access to block 1 at 20 ms hits
    // and prefetches 5 alone, at once (no demand read to wait for).
    let (_, w) = run(&cfg(RA, "apart"), &[at(0, 0, 1), at(20, 1, 1)]);
    assert_eq!(w.of(5).2, 20 * MS);
    assert_eq!(w.completion(1), 20 * MS);
}

#[test]
fn apart_under_two_levels_only_the_last_level_reads_apart() {
    // L1 (RA) asks L2 for 0-4 in one fetch, which L2 answers whole: its own prefetch 5-8 is read after.
    let levels = format!("{RA}\n[[level]]\nsize = 64\nprefetcher = 'pfc-ra'");
    let (_, w) = run(&cfg(&levels, "apart"), &[at(0, 0, 1)]);
    assert_eq!(w.of(0), (0, 5, 0, 10 * MS), "L1's fetch (demand + L1 prefetch) is one read");
    assert_eq!(w.completion(0), 10 * MS);
    let pf = w.of(5);
    assert_eq!((pf.0, pf.1, pf.2), (5, 4, 10 * MS));
    let (_, j) = run(&cfg(&levels, "joined"), &[at(0, 0, 1)]);
    assert_eq!(j.of(0), (0, 9, 0, 14 * MS), "joined: L2's prefetch is in the same read");
    assert_eq!(j.completion(0), 14 * MS);
}

#[test]
fn apart_pfc_readmore_is_read_after_the_answered_blocks() {
    // PFC readmore-only at L2 (no native prefetch). Requests of 4 blocks: the second one, [4,7], misses
    // L2 and touches the readmore window written by the first, so PFC reads 4 more (8-11) with it.
    let levels = "[[level]]\nsize = 2\n[[level]]\nsize = 64\npfc = { mode = 'readmore-only' }";
    let reqs = [at(0, 0, 4), at(100, 4, 4)];
    let (r, w) = run(&cfg(levels, "apart"), &reqs);
    assert_eq!(r.levels[1].counters.readmore_blocks, 4);
    assert_eq!(w.of(4), (4, 4, 100 * MS, 109 * MS), "the answered blocks alone");
    assert_eq!(w.completion(1), 109 * MS);
    assert_eq!(w.of(8), (8, 4, 109 * MS, 118 * MS), "readmore after them");
    // Joined (and `readmore_joined` under apart): one read of 8 blocks that the request waits for.
    for (io, extra) in [("joined", ""), ("apart", ", readmore_joined = true")] {
        let levels = format!("[[level]]\nsize = 2\n[[level]]\nsize = 64\npfc = {{ mode = 'readmore-only'{extra} }}");
        let (_, w) = run(&cfg(&levels, io), &reqs);
        assert_eq!(w.of(4), (4, 8, 100 * MS, 113 * MS), "{io}{extra}");
        assert_eq!(w.completion(1), 113 * MS, "{io}{extra}");
    }
}
