//! Scheduler tests: merging, plugging, the three dispatch policies and their counters.

use super::*;

const MS: u64 = 1_000_000;

fn sched(policy: SchedPolicy) -> IoScheduler {
    IoScheduler::new(SchedParams { policy, ..SchedParams::default() }, 1, "sched").unwrap()
}

fn rd(lbn: u64, sectors: u32) -> Bio {
    Bio { lbn, sectors, write: false, sync: true, tag: lbn }
}

fn wr(lbn: u64, sectors: u32) -> Bio {
    Bio { lbn, sectors, write: true, sync: false, tag: lbn }
}

/// Dispatch and complete everything, returning the (lbn, sectors, write) order.
fn drain(s: &mut IoScheduler, now: u64) -> Vec<(u64, u32, bool)> {
    let mut out = vec![];
    while let Some(d) = s.dispatch(now) {
        out.push((d.io.lbn, d.io.sectors, d.io.write));
        s.complete(d.id).unwrap();
    }
    out
}

#[test]
fn two_adjacent_64k_prefetches_back_merge_into_one_128k_request() {
    let mut s = sched(SchedPolicy::Deadline);
    assert_eq!(s.submit(rd(1000, 128), 0).unwrap().created, 1);
    let r = s.submit(rd(1128, 128), 0).unwrap();
    assert_eq!(r.back_merges, 1);
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(1000, 256)]);
    // A third one does not fit under max_sectors = 256: a new request.
    assert_eq!(s.submit(rd(1256, 8), 0).unwrap().created, 1);
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(1000, 256), (1256, 8)]);
    let d = s.dispatch(0).unwrap();
    assert_eq!((d.io.lbn, d.io.sectors), (1000, 256));
    assert_eq!(s.tags(d.id), &[1000, 1128]);
    assert_eq!(s.stats().back_merges, 1);
}

#[test]
fn front_merge_rekeys_and_fuses_with_the_previous_request() {
    let mut s = sched(SchedPolicy::Deadline);
    s.submit(rd(116, 8), 0).unwrap();
    // [108, 116) front-merges into [116, 124): the request is re-keyed at 108.
    let r = s.submit(rd(108, 8), MS).unwrap();
    assert_eq!((r.back_merges, r.front_merges, r.created), (0, 1, 0));
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(108, 16)]);
    // [92, 100) is queued apart; [100, 108) back-merges into it (back merges are tried first) and
    // the result fuses with [108, 124).
    s.submit(rd(92, 8), 2 * MS).unwrap();
    let r = s.submit(rd(100, 8), 3 * MS).unwrap();
    assert_eq!((r.back_merges, r.fused), (1, 1));
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(92, 32)]);
    assert_eq!(s.stats().fused, 1);
    // A front merge that closes a gap fuses too: [200, 208) + [216, 224), then [208, 216) with
    // back merges impossible (the request before is full).
    let mut s = IoScheduler::new(SchedParams { max_sectors: 16, ..SchedParams::default() }, 1, "s").unwrap();
    s.submit(rd(192, 16), 0).unwrap();
    s.submit(rd(216, 8), 0).unwrap();
    let r = s.submit(rd(208, 8), 0).unwrap();
    assert_eq!((r.back_merges, r.front_merges, r.fused), (0, 1, 0));
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(192, 16), (208, 16)]);
    // Without front merges a new request is made.
    let mut s = IoScheduler::new(SchedParams { front_merges: false, ..SchedParams::default() }, 1, "s").unwrap();
    s.submit(rd(116, 8), 0).unwrap();
    assert_eq!(s.submit(rd(108, 8), 0).unwrap().created, 1);
}

#[test]
fn fused_request_keeps_the_earlier_expiry_and_fifo_place() {
    let mut s = sched(SchedPolicy::Noop);
    s.submit(rd(200, 8), 0).unwrap(); // oldest
    s.submit(rd(50, 8), MS).unwrap();
    s.submit(rd(208, 8), 2 * MS).unwrap(); // back-merges into 200
    s.submit(rd(42, 8), 3 * MS).unwrap(); // front-merges into 50
                                          // NOOP serves arrival order: 200 first (it arrived first), then 42.
    assert_eq!(drain(&mut s, 4 * MS), vec![(200, 16, false), (42, 16, false)]);
}

#[test]
fn merges_never_cross_directions_or_the_size_limit_and_large_bios_split() {
    let mut s = sched(SchedPolicy::Deadline);
    s.submit(rd(0, 8), 0).unwrap();
    assert_eq!(s.submit(wr(8, 8), 0).unwrap().created, 1);
    let r = s.submit(rd(1000, 600), 0).unwrap();
    assert_eq!(r.created, 3);
    assert_eq!(s.sorted(false).collect::<Vec<_>>(), vec![(0, 8), (1000, 256), (1256, 256), (1512, 88)]);
    assert_eq!(s.submit(rd(1004, 8), 0), Err(SchedError::Overlap));
    assert_eq!(s.submit(rd(0, 0), 0), Err(SchedError::Empty));
}

#[test]
fn deadline_sweeps_upward_in_batches_and_wraps_one_way() {
    let mut s = sched(SchedPolicy::Deadline);
    for lbn in [500, 100, 900, 300] {
        s.submit(rd(lbn, 8), 0).unwrap();
    }
    // First pick: no "next", reads, not expired -> lowest start; then upward.
    let d = s.dispatch(0).unwrap();
    assert_eq!(d.io.lbn, 100);
    s.complete(d.id).unwrap();
    s.submit(rd(50, 8), 0).unwrap(); // behind the head: waits for the wrap
    assert_eq!(drain(&mut s, 0), vec![(300, 8, false), (500, 8, false), (900, 8, false), (50, 8, false)]);
}

#[test]
fn deadline_serves_an_expired_read_out_of_lbn_order() {
    let mut s = sched(SchedPolicy::Deadline);
    s.submit(rd(5000, 8), 0).unwrap(); // expires at 500 ms
    s.submit(rd(100, 8), 0).unwrap();
    let d = s.dispatch(0).unwrap();
    assert_eq!(d.io.lbn, 100);
    s.complete(d.id).unwrap();
    for i in 0..3 {
        s.submit(rd(200 + i * 100, 8), 600 * MS).unwrap();
    }
    // At 600 ms the "next" request (200) does not continue the last one (108), so the batch ends;
    // the new batch starts with the expired FIFO head 5000.
    let d = s.dispatch(600 * MS).unwrap();
    assert_eq!(d.io.lbn, 5000);
    assert_eq!(s.stats().expired, 1);
    s.complete(d.id).unwrap();
    // After it, "next" is empty above 5000: wrap to the lowest.
    assert_eq!(drain(&mut s, 600 * MS), vec![(200, 8, false), (300, 8, false), (400, 8, false)]);
}

#[test]
fn deadline_batches_reads_then_lets_starved_writes_in() {
    // fifo_batch 16 with contiguous requests: a batch of 16, then direction choice.
    let mut s = IoScheduler::new(SchedParams { batch_ends_on_gap: false, ..SchedParams::default() }, 1, "s").unwrap();
    s.submit(wr(1_000_000, 8), 0).unwrap();
    for i in 0..40u64 {
        s.submit(rd(i * 1000, 8), 0).unwrap();
    }
    let order = drain(&mut s, 0);
    // Linux 2.6.12 semantics: the first direction choice (starved 0 -> 1) starts a batch of 16
    // reads; after it every dispatch is a direction choice (`batching` is only reset by a new
    // sweep or an expiry), so read 17 (starved 1 -> 2) precedes the write (starved 2 >= 2).
    let w = order.iter().position(|o| o.2).unwrap();
    assert_eq!(w, 17, "{order:?}");
    assert_eq!(order.len(), 41);
}

#[test]
fn deadline_in_2612_mode_ends_a_batch_on_a_gap() {
    let mut s = sched(SchedPolicy::Deadline);
    s.submit(wr(1_000_000, 8), 0).unwrap();
    for i in 0..5u64 {
        s.submit(rd(i * 1000, 8), 0).unwrap();
    }
    // Every read leaves a gap, so every dispatch is a new batch and a direction choice: R, R, W.
    let order = drain(&mut s, 0);
    assert_eq!(order.iter().position(|o| o.2), Some(2), "{order:?}");
}

#[test]
fn clook_sweeps_up_across_directions_and_jumps_back() {
    let mut s = sched(SchedPolicy::Clook);
    s.submit(rd(700, 8), 0).unwrap();
    let d = s.dispatch(0).unwrap(); // head now at 708
    s.complete(d.id).unwrap();
    for b in [rd(100, 8), wr(800, 8), rd(750, 8), wr(300, 8), rd(990, 8)] {
        s.submit(b, 0).unwrap();
    }
    assert_eq!(
        drain(&mut s, 0),
        vec![(750, 8, false), (800, 8, true), (990, 8, false), (100, 8, false), (300, 8, true)]
    );
}

#[test]
fn queue_depth_and_request_table_limit_dispatch_and_submission() {
    let mut s = IoScheduler::new(SchedParams { nr_requests: 2, ..SchedParams::default() }, 1, "s").unwrap();
    s.submit(rd(0, 8), 0).unwrap();
    s.submit(rd(100, 8), 0).unwrap();
    assert_eq!(s.submit(rd(200, 8), 0), Err(SchedError::Full));
    assert!(!s.has_room(false));
    // A merge needs no new request.
    assert_eq!(s.submit(rd(8, 8), 0).unwrap().back_merges, 1);
    let d = s.dispatch(0).unwrap();
    assert!(s.dispatch(0).is_none(), "qdepth 1");
    // Dispatched but not completed still counts against nr_requests.
    assert_eq!(s.submit(rd(200, 8), 0), Err(SchedError::Full));
    s.complete(d.id).unwrap();
    assert_eq!(s.complete(d.id), Err(SchedError::NotDispatched(d.id)));
    assert!(s.submit(rd(200, 8), 0).is_ok());
    assert_eq!(s.stats().full, 2);
}

#[test]
fn linux_plugging_holds_async_work_until_threshold_timer_or_sync() {
    let p = SchedParams { plugging: Plugging::Linux, ..SchedParams::default() };
    let mut s = IoScheduler::new(p.clone(), 1, "s").unwrap();
    let pf = |lbn| Bio { lbn, sectors: 8, write: false, sync: false, tag: 0 };
    s.submit(pf(0), 0).unwrap();
    assert!(s.is_plugged());
    assert_eq!(s.next_wakeup(), Some(3 * MS));
    assert!(s.dispatch(MS).is_none());
    assert!(s.dispatch(3 * MS).is_some());
    assert_eq!(s.stats().unplug_timer, 1);
    // Threshold: 4 queued requests unplug at once.
    let mut s = IoScheduler::new(p.clone(), 1, "s").unwrap();
    for i in 0..4 {
        s.submit(pf(i * 100), 0).unwrap();
    }
    assert!(!s.is_plugged());
    assert_eq!(s.stats().unplug_thresh, 1);
    // A sync (demand) bio unplugs immediately.
    let mut s = IoScheduler::new(p, 1, "s").unwrap();
    s.submit(pf(0), 0).unwrap();
    s.submit(rd(500, 8), 0).unwrap();
    assert!(!s.is_plugged() && s.next_wakeup().is_none());
    assert!(s.dispatch(0).is_some());
    // Instant plugging never holds anything.
    let mut s = sched(SchedPolicy::Deadline);
    s.submit(pf(0), 0).unwrap();
    assert!(s.dispatch(0).is_some());
}

#[test]
fn dispatch_classes_and_waits_are_counted() {
    let mut s = sched(SchedPolicy::Noop);
    s.submit(rd(0, 8), 0).unwrap();
    s.submit(Bio { lbn: 8, sectors: 8, write: false, sync: false, tag: 9 }, 0).unwrap();
    s.submit(Bio { lbn: 100, sectors: 8, write: false, sync: false, tag: 9 }, 0).unwrap();
    let d = s.dispatch(2 * MS).unwrap();
    assert!(d.sync && d.has_async);
    s.complete(d.id).unwrap();
    let d = s.dispatch(5 * MS).unwrap();
    assert!(!d.sync);
    let st = s.stats();
    assert_eq!((st.dispatched_mixed, st.dispatched_async, st.sectors), (1, 1, 24));
    assert_eq!(st.queue_wait_ns, 7 * MS);
}

#[test]
fn bad_parameters_name_the_key() {
    let e = IoScheduler::new(SchedParams { fifo_batch: 0, ..SchedParams::default() }, 1, "sched").unwrap_err();
    assert_eq!(e.path, "sched.fifo_batch");
    let e = serde_json::from_value::<SchedParams>(serde_json::json!({"policy": "cfq"})).unwrap_err();
    assert!(e.to_string().contains("cfq"));
}

#[test]
fn a_key_of_another_policy_or_plugging_is_an_error_naming_it() {
    let p = |j: serde_json::Value| serde_json::from_value::<SchedParams>(j).unwrap().validate("scheduler");
    let e = p(serde_json::json!({"policy": "noop", "read_expire_ms": 100.0})).unwrap_err();
    assert_eq!(e.path, "scheduler.read_expire_ms");
    assert!(e.message.contains("only with policy = 'deadline'") && e.message.contains("'noop'"), "{e}");
    let e = p(serde_json::json!({"policy": "clook", "fifo_batch": 4})).unwrap_err();
    assert_eq!(e.path, "scheduler.fifo_batch");
    let e = p(serde_json::json!({"unplug_delay_ms": 1.0})).unwrap_err();
    assert_eq!(e.path, "scheduler.unplug_delay_ms");
    assert!(e.message.contains("only with plugging = 'linux'"), "{e}");
    // Where they apply, and at their defaults anywhere, they are fine.
    assert!(p(serde_json::json!({"policy": "deadline", "read_expire_ms": 100.0, "fifo_batch": 4})).is_ok());
    assert!(p(serde_json::json!({"plugging": "linux", "unplug_thresh": 2})).is_ok());
    assert!(p(serde_json::json!({"policy": "noop", "read_expire_ms": 500.0})).is_ok());
}
