//! SARC's cache side (the SEQ/RANDOM lists and their adaptation), worked by hand from `sarc.md`.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// SARC: the cache side

#[test]
fn sarc_random_bottom_hit_sets_adapt_and_each_eviction_moves_desired_by_half_of_it() {
    // C = 8, ΔL = 2. Blocks of stream 1 are sequential misses (SEQ), others go to RANDOM.
    let mut l = marked_level(8, sarc_params(2));
    for b in 1..=4 {
        read(&mut l, b, 1); // RANDOM 4 3 2 1, T(b) = b
    }
    for b in 11..=14 {
        read_s(&mut l, b, 1, 1); // SEQ 14 13 12 11, T = 5..8, seqMiss = 4
    }
    assert_eq!((l.policy().seq_miss(), l.len()), (4, 8));
    // Hit on 1 (t = 9): ratio = 2·seqMiss·ΔL/|SEQ| = 2·4·2/4 = 4. 1 is RANDOM's LRU block:
    // T(1) - T(LRU) = 0 <= (ΔL/|RANDOM|)·(T(MRU) - T(LRU)) = 0.5·3. So seqMiss = 0, adapt = min(4-1, 1) = 1.
    read(&mut l, 1, 1);
    let p = l.policy();
    assert_eq!((p.ratio(), p.adapt(), p.seq_miss(), p.desired()), (4.0, 1.0, 0, 0.0));
    assert_eq!(random(&l), vec![1, 4, 3, 2]);
    // 5 (miss): both lists >= ΔL and |SEQ| = 4 > desired 0: LRU(SEQ) = 11 goes; desired += 1/2.
    read(&mut l, 5, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![11], 0.5));
    // 6: |SEQ| = 3 > 0.5: 12 goes; desired 1.0.
    read(&mut l, 6, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![12], 1.0));
    // Hit on 2 (t = 12): seqMiss = 0, so ratio = 0. RANDOM = 6 5 1 4 3 2 with T 11 10 9 4 3 2:
    // T(2) - 2 = 0 <= (2/6)·9: in the bottom. adapt = max(0 - 1, -1) = -1.
    read(&mut l, 2, 1);
    assert_eq!((l.policy().ratio(), l.policy().adapt()), (0.0, -1.0));
    // 7: |SEQ| = 2 > desired 1.0: 13 goes; desired 1.0 - 0.5 = 0.5.
    read(&mut l, 7, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![13], 0.5));
    // 8: |SEQ| = 1 < ΔL: global LRU by timestamp: LRU(SEQ) = 14 (T 8), LRU(RANDOM) = 3 (T 3): 3 goes.
    // desired 0.5 - 0.5 = 0.
    read(&mut l, 8, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![3], 0.0));
    // 9: 14 (T 8) against 4 (T 4): 4 goes; desired stays at its floor 0.
    read(&mut l, 9, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![4], 0.0));
    // 15: 14 (T 8) against 1 (T 9): SEQ's block is older and goes.
    read(&mut l, 15, 1);
    assert_eq!(l.take_evicted(), vec![14]);
    assert_eq!((seq(&l), random(&l)), (vec![], vec![15, 9, 8, 7, 2, 6, 5, 1]));
}

#[test]
fn sarc_seq_bottom_hit_with_a_large_ratio_forces_seq_to_grow() {
    for (large_ratio, want_adapt, want_desired) in [(20.0, 1.0, 0.5), (25.0, 0.0, 0.0)] {
        let mut l = marked_level(8, SarcParams { large_ratio, ..sarc_params(2) });
        for b in 1..=4 {
            read(&mut l, b, 1);
        }
        // 21 sequential misses; from the fifth on, |SEQ| = 4 > desired 0 evicts LRU(SEQ): SEQ ends as
        // 121 120 119 118 (T 25..22) and seqMiss = 21 (no RANDOM bottom hit restarted it).
        for b in 101..=121 {
            read_s(&mut l, b, 1, 1);
        }
        assert_eq!((seq(&l), l.policy().seq_miss()), (vec![121, 120, 119, 118], 21));
        // Hit on 118, SEQ's LRU block: ratio = 2·21·2/4 = 21; in the bottom (T - 22 = 0 <= 0.5·3).
        read_s(&mut l, 118, 1, 1);
        assert_eq!(l.policy().ratio(), 21.0);
        assert_eq!(l.policy().adapt(), want_adapt, "largeRatio {large_ratio}");
        // 5: |SEQ| = 4 > desired: 119 goes, then desired moves by adapt/2.
        read(&mut l, 5, 1);
        assert_eq!(l.take_evicted().last(), Some(&119));
        assert_eq!(l.policy().desired(), want_desired, "largeRatio {large_ratio}");
    }
}

#[test]
fn sarc_exact_bottom_differs_from_the_timestamp_approximation() {
    // RANDOM: 1..9 (T 1..9), then 30 SEQ blocks (T 10..39), then 10 (T 40). |RANDOM| = 10, ΔL = 2.
    // Timestamps: bottom = T - 1 <= (2/10)·39 = 7.8, so 1..8 are all "in the bottom"; exact: only 1, 2.
    for mode in [BottomMode::Timestamp, BottomMode::Exact] {
        let mut l = marked_level(40, SarcParams { bottom_mode: mode, ..sarc_params(2) });
        for b in 1..=9 {
            read(&mut l, b, 1);
        }
        for b in 101..=130 {
            read_s(&mut l, b, 1, 1);
        }
        read(&mut l, 10, 1);
        // Hit on 5 (5th from the LRU end); ratio = 2·30·2/30 = 4.
        read(&mut l, 5, 1);
        let (adapt, seq_miss) = (l.policy().adapt(), l.policy().seq_miss());
        match mode {
            BottomMode::Timestamp => assert_eq!((adapt, seq_miss), (1.0, 0)),
            BottomMode::Exact => assert_eq!((adapt, seq_miss), (0.0, 30)),
        }
        // Hit on 2, second from the LRU end: in the bottom either way.
        read(&mut l, 2, 1);
        let want = if mode == BottomMode::Exact { 1.0 } else { -1.0 };
        assert_eq!(l.policy().adapt(), want, "{mode:?}");
    }
}

#[test]
fn sarc_init_desired_current_seq_size_starts_from_seq_at_the_first_adaptation() {
    let mut l = marked_level(8, SarcParams { init_desired: InitDesired::CurrentSeqSize, ..sarc_params(2) });
    for b in 1..=4 {
        read(&mut l, b, 1);
    }
    for b in 11..=14 {
        read_s(&mut l, b, 1, 1);
    }
    read(&mut l, 1, 1); // adapt = 1 as above; desired first takes |SEQ| = 4
    assert_eq!(l.policy().desired(), 4.0);
    // 5: |SEQ| = 4 is not above 4: RANDOM's LRU block 2 goes; desired 4.5.
    read(&mut l, 5, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![2], 4.5));
}

#[test]
fn sarc_policy_without_prefetching_is_lru() {
    let reqs: Vec<(u64, u32)> = (0..3000u64).map(|i| ((i * 7919) % 211, 1 + (i % 3) as u32)).collect();
    let env = PolicyEnv { capacity: 50, first_hit: FirstHit::Promote };
    let mut a = Level::new(50, Sarc::new(&env, SarcParams::default()), Box::new(NoPrefetch), LevelOptions::default());
    let mut b = Level::new(50, Lru::new(&env), Box::new(NoPrefetch), LevelOptions::default());
    for &(first, len) in &reqs {
        read(&mut a, first, len);
        read(&mut b, first, len);
    }
    assert_eq!(a.counters(), b.counters());
    assert_eq!(random(&a), b.policy().queue(b.table()));
}

#[test]
fn sarc_delta_l_is_real_valued_as_sarc_md_gives_it() {
    // sarc.md: ΔL = max(1, 0.02·C), 1.28 at C = 64; the paper uses ΔL as a factor of the ratio and as a
    // size compared with list lengths, neither of which needs a whole number. Before, ΔL was floored to 1
    // everywhere, so the ratio below was 2.0 and a one-block SEQ list was not "smaller than ΔL"
    // (`studies/policies.md`, finding 5).
    let mut l = marked_level(64, SarcParams::default());
    assert_eq!((l.policy().delta_l(), SarcParams::default().delta_l_value(64)), (1, 0.02 * 64.0));
    read(&mut l, 1, 1); // RANDOM
    read_s(&mut l, 11, 1, 1); // a sequential miss into SEQ: seqMiss = 1, |SEQ| = 1
    read_s(&mut l, 11, 1, 1); // hit: ratio = 2·1·1.28/1
    assert_eq!(l.policy().ratio(), 2.0 * 0.02 * 64.0);
}
