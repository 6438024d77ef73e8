//! MQ: hand-worked sequences, Qout history, prefetched and pinned blocks.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// MQ

#[test]
fn mq_promotes_by_log2_frequency_demotes_on_expiry_and_remembers_in_qout() {
    let c = 3;
    let mut l = level(c, Mq::new(&env(c), MqParams { life_time: Some(3), ..MqParams::default() }));
    // After each access: Q0, Q1, Q2 as (block, frequency), MRU first; Qout newest first.
    #[allow(clippy::type_complexity)]
    let steps: &[(u64, &[(u64, u32)], &[(u64, u32)], &[(u64, u32)], &[(u64, u32)])] = &[
        (1, &[(1, 1)], &[], &[], &[]),
        // Frequency 2 and 3 live in Q1 (⌊log2 f⌋ = 1), 4 in Q2.
        (1, &[], &[(1, 2)], &[], &[]),
        (1, &[], &[(1, 3)], &[], &[]),
        (1, &[], &[], &[(1, 4)], &[]),
        (2, &[(2, 1)], &[], &[(1, 4)], &[]),
        (2, &[], &[(2, 2)], &[(1, 4)], &[]),
        (3, &[(3, 1)], &[(2, 2)], &[(1, 4)], &[]),
        // now = 8: 3 is evicted from Q0 into Qout; 1 (expire 4 + 3 = 7 < 8) drops from Q2 to Q1.
        (4, &[(4, 1)], &[(1, 4), (2, 2)], &[], &[(3, 1)]),
        (5, &[(5, 1)], &[(1, 4), (2, 2)], &[], &[(4, 1), (3, 1)]),
        // 3 returns with its remembered frequency + 1 = 2, into Q1; 2 (expire 9 < 10) drops to Q0.
        (3, &[(2, 2)], &[(3, 2), (1, 4)], &[], &[(5, 1), (4, 1)]),
        (6, &[(6, 1)], &[(3, 2), (1, 4)], &[], &[(2, 2), (5, 1), (4, 1)]),
        // 2 returns with frequency 3 into Q1; 1 (demoted at 8, expire 11 < 12) drops to Q0.
        (2, &[(1, 4)], &[(2, 3), (3, 2)], &[], &[(6, 1), (5, 1), (4, 1)]),
    ];
    for (i, &(b, q0, q1, q2, qout)) in steps.iter().enumerate() {
        read(&mut l, b);
        let (m, t) = (l.policy(), l.table());
        let got = (m.queue_blocks(0, t), m.queue_blocks(1, t), m.queue_blocks(2, t), m.history_blocks());
        assert_eq!(got, (q0.to_vec(), q1.to_vec(), q2.to_vec(), qout.to_vec()), "step {i}: access {b}");
    }
    assert_eq!(l.policy().now(), 12);
}

#[test]
fn mq_queue_number_is_floor_log2_capped_at_m_minus_1() {
    let m = Mq::new(&env(4), MqParams::default());
    let got: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 127, 128, 1 << 20].iter().map(|&f| m.queue_num(f)).collect();
    assert_eq!(got, [0, 0, 1, 1, 2, 2, 3, 6, 7, 7]);
}

#[test]
fn mq_prefetch_enters_q0_with_frequency_0_and_keeps_its_history_until_demanded() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams::default()));
    for b in [5, 5, 5, 5, 1] {
        d.demand(b);
    }
    // 5 had frequency 4 (Q2) when 1 pushed it out.
    assert_eq!(d.policy.history_blocks(), [(5, 4)]);
    let now = d.policy.now();
    d.prefetch(5);
    assert_eq!(d.policy.now(), now, "a prefetch is not an access");
    assert_eq!(d.policy.queue_blocks(0, &d.table), [(5, 0)]);
    assert_eq!(d.policy.history_blocks(), [(1, 1), (5, 4)], "history stays until demanded");
    // Its first demand access takes the remembered frequency + 1 = 5: Q2.
    assert!(d.demand(5));
    assert_eq!(d.policy.queue_blocks(2, &d.table), [(5, 5)]);
    assert_eq!(d.policy.history_blocks(), [(1, 1)]);
}

#[test]
fn mq_unused_prefetched_victims_leave_no_history() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams::default()));
    d.prefetch(7);
    d.demand(8);
    assert!(d.policy.history_blocks().is_empty());
    d.demand(9);
    assert_eq!(d.policy.history_blocks(), [(8, 1)]);
}

#[test]
fn mq_history_keeps_kout_entries() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams { history: Some(2), ..MqParams::default() }));
    for b in 1..=5 {
        d.demand(b);
    }
    assert_eq!(d.policy.history_blocks(), [(4, 1), (3, 1)]);
}

#[test]
fn mq_victim_passes_over_pinned_blocks_into_higher_queues() {
    let mut d = Drive::new(2, Mq::new(&env(2), MqParams::default()));
    for b in [1, 1, 2] {
        d.demand(b);
    }
    d.pin(2, true);
    d.demand(3);
    // Q0 holds only the pinned 2, so Q1's 1 goes.
    assert_eq!(d.resident(), [2, 3]);
    d.pin(3, true);
    assert_eq!(d.admit(4, Origin::Demand), None);
    d.check();
}

#[test]
fn mq_evicts_before_it_looks_the_missed_block_up_in_qout() {
    // The MQ paper (Zhou, Philbin & Li, USENIX ATC'01, §4 and its Figure) on a miss evicts first, pushing
    // the victim's (id, f) into Qout and dropping Qout's oldest entry when full, and only then looks the
    // missed block up in Qout; replacement.md §3 says the same. One frame and a Qout of one: 1 is pushed
    // out by 2; the miss on 1 evicts 2, whose entry pushes 1's out, so 1 comes back with frequency 1 (Q0).
    // Before, the look-up came first (as libCacheSim's MQ does) and 1 came back with 2, into Q1
    // (`studies/policies.md`, finding 4).
    let c = 1;
    let mut l = level(c, Mq::new(&env(c), MqParams { history: Some(1), ..MqParams::default() }));
    for b in [1, 2, 1] {
        read(&mut l, b);
    }
    let (m, t) = (l.policy(), l.table());
    assert_eq!((m.queue_blocks(0, t), m.queue_blocks(1, t)), (vec![(1, 1)], vec![]));
    assert_eq!(m.history_blocks(), [(2, 1)]);
}
