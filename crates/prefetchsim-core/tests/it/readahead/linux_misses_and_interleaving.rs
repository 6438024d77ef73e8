//! Linux read-ahead under random access, thrashing and the device end, and with interleaved streams.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Random access, thrashing, device end.
// ---------------------------------------------------------------------------------------------------

#[test]
fn random_access_turns_2616_off_keeps_ondemand_and_resets_pfc_paper() {
    // One file (one state, `key = "device"`): with detected keys a far jump is a stream of its own.
    let mut reqs = seq(21, 1);
    reqs.extend([Request::read(500, 1), Request::read(501, 1), Request::read(502, 1)]);
    // 2.6.16: the jump turns read-ahead off and reads only the page; the next sequential read starts
    // an initial window, the one after it an ahead window.
    let (mut l, log) = probed(1024, json!({"mode": "2.6.16", "key": "device"}));
    let steps = replay(&mut l, &log, &reqs);
    assert_eq!(w2616(steps[20].1), (12, 16, 28, 32));
    assert_eq!(w2616(steps[21].1).1, 0, "read-ahead off");
    assert_eq!(steps[21].0, vec![fetch(500, 1, 1)]);
    assert_eq!((w2616(steps[22].1).0, w2616(steps[22].1).1), (501, 4));
    assert_eq!(steps[22].0, vec![fetch(501, 4, 1)]);
    assert_eq!(w2616(steps[23].1), (501, 4, 505, 8));

    // ondemand: a lone random read keeps the window; the stream then continues at its marker.
    let mut reqs = seq(21, 1);
    reqs.push(Request::read(500, 1));
    reqs.extend((21..=28).map(|b| Request::read(b, 1)));
    let (mut l, log) = probed(1024, json!({"mode": "ondemand", "key": "device"}));
    let steps = replay(&mut l, &log, &reqs);
    assert_eq!(wond(steps[20].1), (28, 32, 32));
    assert_eq!(wond(steps[21].1), (28, 32, 32), "kept");
    assert_eq!(steps[21].0, vec![fetch(500, 1, 1)]);
    assert_eq!(wond(steps.last().unwrap().1), (60, 32, 32), "the marker on 28 still ramps the window");

    // pfc-paper: a read outside the window prefetches the minimum 3 blocks after it.
    let mut reqs = seq(21, 1);
    reqs.push(Request::read(500, 1));
    let (mut l, log) = probed(1024, json!({"key": "device"}));
    let steps = replay(&mut l, &log, &reqs);
    assert_eq!(wpaper(steps[21].1), (Some((501, 503)), None));
    assert_eq!(steps[21].0, vec![fetch(500, 4, 1)]);
}

#[test]
fn linux_2616_shrinks_the_window_after_a_readahead_miss() {
    // A 48-block cache cannot hold a 32-page current window and a 32-page ahead window: pages read
    // ahead are evicted before use (thrashing), the reader misses inside its window, and each miss
    // makes the next ahead window 2 pages smaller (never below 4).
    let (mut l, log) = probed(48, json!({"mode": "2.6.16"}));
    let steps = replay(&mut l, &log, &seq(400, 1));
    let mut shrinks = 0;
    for w in steps.windows(2) {
        let (StreamState::V2616(a), StreamState::V2616(b)) = (w[0].1, w[1].1) else { unreachable!() };
        if a.miss && b.ahead_start != a.ahead_start && b.ahead_start != 0 {
            // A new ahead window made while MISS was set: two pages less than the current window.
            assert_eq!(b.ahead_size, b.size.saturating_sub(2).max(4), "after {a:?}: {b:?}");
            assert!(!b.miss || b.ahead_size < 32);
            shrinks += 1;
        }
    }
    assert!(shrinks > 0, "the cache thrashes");
    let mut trace: Vec<String> = Vec::new();
    for (i, st) in steps.iter().enumerate() {
        let (w, StreamState::V2616(s)) = (w2616(st.1), st.1) else { unreachable!() };
        let line = format!("({}, {}, {}, {}){}", w.0, w.1, w.2, w.3, if s.miss { " MISS" } else { "" });
        if trace.last().is_none_or(|l| !l.ends_with(&line)) {
            trace.push(format!("read {i}: {line}"));
        }
    }
    println!("2.6.16 on a 48-block cache, (start, size, ahead_start, ahead_size):\n{}", trace.join("\n"));
    let full = steps.iter().position(|s| w2616(s.1).3 == 32).expect("the window reaches 32 pages");
    assert!(steps[full..].iter().any(|s| (1..32).contains(&w2616(s.1).3)), "and shrinks after");
}

#[test]
fn linux_ondemand_restarts_the_window_after_a_thrashing_miss() {
    // On-demand read-ahead has no MISS flag: a page read ahead and evicted before use is a sequential
    // miss (`i - prev_index <= 1`), which starts an initial window again (linux-readahead.md §B).
    let (mut l, log) = probed(48, json!({"mode": "ondemand"}));
    let steps = replay(&mut l, &log, &seq(400, 1));
    let full = steps.iter().position(|s| wond(s.1).1 == 32).expect("the window reaches 32 pages");
    let restart = steps[full..].iter().position(|s| wond(s.1).1 == 4).expect("a thrashing miss restarts it") + full;
    assert_eq!(wond(steps[restart].1), (restart as u64, 4, 3), "initial window at the missed page");
    assert!(steps[restart].0.iter().any(|f| f.first == restart as u64 && f.demand_len == 1));
}

#[test]
fn linux_2616_stops_after_256_cached_pages_and_restarts_on_a_miss() {
    // Read 0..299 once (all cached in a large cache), then again: the re-read finds every window cached;
    // after 256 pages INCACHE stops read-ahead, and a miss switches it back on.
    let (mut l, log) = probed(4096, json!({"mode": "2.6.16"}));
    let mut reqs = seq(300, 1);
    reqs.push(Request::read(10_000, 1)); // jump: off
    reqs.extend(seq(300, 1));
    let steps = replay(&mut l, &log, &reqs);
    let incache = |s: StreamState| matches!(s, StreamState::V2616(State2616 { incache: true, .. }));
    let first = steps.iter().position(|s| incache(s.1)).expect("INCACHE is reached");
    assert!(first > 301, "only on the re-read");
    assert!(steps[first..].iter().all(|s| incache(s.1)));
    let restart = [Request::read(20_000, 1)];
    let after = replay(&mut l, &log, &restart);
    assert!(!incache(after[0].1), "a page miss clears INCACHE");
}

#[test]
fn linux_reads_stop_at_the_device_end() {
    for mode in ["pfc-paper", "2.6.16", "ondemand"] {
        let (mut l, log) = probed(1024, json!({"mode": mode, "max_block": 20}));
        let steps = replay(&mut l, &log, &seq(21, 1));
        let last = steps.iter().flat_map(|s| &s.0).map(|f| f.first + u64::from(f.len) - 1).max().unwrap();
        assert_eq!(last, 20, "{mode}");
        assert_eq!(l.counters().misses, 1, "{mode}");
    }
}

// ---------------------------------------------------------------------------------------------------
// Interleaved streams: keyed by stream id, detected, or one state for the device.
// ---------------------------------------------------------------------------------------------------

fn interleaved(n: u64, ids: bool) -> Vec<Request> {
    (0..n)
        .flat_map(|i| {
            let a = Request { stream: if ids { 1 } else { 0 }, ..Request::read(1000 + i, 1) };
            let b = Request { stream: if ids { 2 } else { 0 }, ..Request::read(5000 + i, 1) };
            [a, b]
        })
        .collect()
}

#[test]
fn interleaved_streams_keyed_by_stream_id_or_detected_keep_their_own_windows() {
    for mode in ["pfc-paper", "2.6.16", "ondemand"] {
        // The lone stream A.
        let (mut l, log) = probed(4096, json!({"mode": mode}));
        let lone: Vec<_> = replay(&mut l, &log, &(0..60).map(|i| Request::read(1000 + i, 1)).collect::<Vec<_>>());
        let lone_misses = l.counters().misses;
        for (key, ids) in [("stream", true), ("stream", false), ("detect", true), ("detect", false)] {
            let (mut l, log) = probed(4096, json!({"mode": mode, "key": key}));
            let steps = replay(&mut l, &log, &interleaved(60, ids));
            for (i, (s, alone)) in steps.iter().step_by(2).zip(&lone).enumerate() {
                assert_eq!(s.1, alone.1, "{mode}, key {key}, ids {ids}: stream A's state after its read {i}");
            }
            assert_eq!(l.counters().misses, 2 * lone_misses, "{mode}, key {key}, ids {ids}");
        }
    }
}

#[test]
fn one_device_state_loses_interleaved_streams_except_ondemand() {
    let reqs = interleaved(200, false);
    let share = |mode: &str| {
        let (mut l, log) = probed(4096, json!({"mode": mode, "key": "device"}));
        replay(&mut l, &log, &reqs);
        (l.counters().prefetch_issued, l.counters().prefetch_hit_ratio())
    };
    // 2.6.16: every read looks random to the one state: read-ahead stays off.
    assert_eq!(share("2.6.16").0, 0);
    // pfc-paper: every read is outside the window: 3-block groups only, which still cover the next read.
    let (issued, hit) = share("pfc-paper");
    assert!(issued > 0 && hit > 0.9, "{issued} {hit}");
    // ondemand recovers the streams from the page cache (context read-ahead, then marker hits).
    let (_, hit) = share("ondemand");
    assert!(hit > 0.9, "{hit}");
}
