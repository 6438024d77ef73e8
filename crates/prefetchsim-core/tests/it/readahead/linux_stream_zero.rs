//! Stream id 0 under Linux read-ahead's `key` (`studies/policies.md`, finding 2): the default `stream`
//! reads 0 as "no stream id" and detects those requests' streams, so the same workload behaves
//! differently on stream 0 and stream 1; `key = "id"` keys every id, 0 included, for traces whose
//! stream 0 is a real id (SPC ASU 0, DiskSim/MQSim device 0, …).

use super::*;

/// One-block reads, mostly sequential runs broken by jumps (a fixed pseudo-random walk).
fn workload() -> Vec<u64> {
    let (mut x, mut cur, mut out) = (12345u64, 0u64, Vec::new());
    for _ in 0..300 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        cur = if (x >> 33) % 10 < 8 { cur + 1 } else { (x >> 40) % 300 };
        out.push(cur);
    }
    out
}

/// (hits, prefetches issued) of the workload on `stream` with Linux `mode` and `key`.
fn run(mode: &str, key: &str, stream: u32) -> (u64, u64) {
    let mut l = lru_level(100, pf("linux", json!({"mode": mode, "key": key})));
    for &b in &workload() {
        serve(&mut l, Request { stream, ..Request::read(b, 1) });
    }
    let c = l.counters();
    (c.hits, c.prefetch_issued)
}

#[test]
fn key_id_gives_stream_0_and_stream_1_the_same_results() {
    for mode in ["pfc-paper", "2.6.16", "ondemand"] {
        let zero = run(mode, "id", 0);
        assert_eq!(zero, run(mode, "id", 1), "{mode}");
        assert_eq!(zero, run(mode, "device", 0), "{mode}: one stream id is one state, as key = device");
    }
}

#[test]
fn the_default_key_reads_stream_0_as_no_id() {
    // Documented behaviour (guide, Linux read-ahead `key`): stream 0 is detected, other ids keyed.
    for mode in ["pfc-paper", "2.6.16", "ondemand"] {
        assert_eq!(run(mode, "stream", 0), run(mode, "detect", 0), "{mode}");
        assert_eq!(run(mode, "stream", 7), run(mode, "device", 7), "{mode}");
    }
}
