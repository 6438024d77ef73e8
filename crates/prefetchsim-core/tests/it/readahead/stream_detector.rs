//! The stream detector follows its documented rule exactly within its memory: a block belongs to the
//! stream that claimed it last (`sequential.md` ambiguity 6: "a request for `b` continues the stream
//! that holds `b-1`, requested or prefetched"), whatever other streams claim next to it, with the
//! documented two-generation forgetting of old claims.
//!
//! Found by a user study (`studies/policies2.md`, finding 1): the detector kept one owner per aligned
//! 32-block granule, so two interleaved streams less than 32 blocks apart erased each other's claims and
//! Linux read-ahead (`key = "detect"`, and the default key on traces without stream ids) restarted
//! their contexts.

use std::collections::HashMap;

use prefetchsim_core::prefetch::detect::StreamDetector;

use super::*;

/// The rule itself: a map block -> owner per generation; a generation takes `memory / 2` block claims.
struct Exact {
    cur: HashMap<u64, u32>,
    old: HashMap<u64, u32>,
    cur_blocks: usize,
    half: usize,
}

impl Exact {
    fn new(memory: usize) -> Self {
        Self { cur: HashMap::new(), old: HashMap::new(), cur_blocks: 0, half: (memory / 2).max(1) }
    }

    fn claim(&mut self, first: u64, len: u64, stream: u32) {
        for b in first..first + len {
            if self.cur_blocks >= self.half {
                self.old = std::mem::take(&mut self.cur);
                self.cur_blocks = 0;
            }
            self.cur.insert(b, stream);
            self.old.remove(&b);
            self.cur_blocks += 1;
        }
    }

    fn owner(&self, b: u64) -> Option<u32> {
        self.cur.get(&b).or_else(|| self.old.get(&b)).copied()
    }

    fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_detector_agrees_with_an_exact_block_map(
        memory in prop_oneof![2usize..16, 16usize..200, Just(1usize << 20)],
        claims in prop::collection::vec((0u64..160, 1u64..40, 1u32..7), 1..120),
    ) {
        let mut d = StreamDetector::new(memory);
        let mut m = Exact::new(memory);
        for (i, &(first, len, stream)) in claims.iter().enumerate() {
            d.claim(first, len, stream);
            m.claim(first, len, stream);
            for b in 0..210u64 {
                prop_assert_eq!(d.owner(b), m.owner(b), "block {} after claim {} {:?}", b, i, claims[i]);
                let want = b.checked_sub(1).and_then(|p| m.owner(p)).or_else(|| m.owner(b));
                prop_assert_eq!(d.continues_or_owner(b), want, "request at {} after claim {}", b, i);
            }
            prop_assert_eq!(d.len(), m.len());
        }
    }
}

/// The blocks each one-block read of `blocks` prefetches, Linux read-ahead with detected streams.
fn linux_prefetches(mode: &str, blocks: &[u64]) -> Vec<Vec<u64>> {
    let mut l = lru_level(100, pf("linux", json!({"mode": mode, "key": "detect"})));
    blocks
        .iter()
        .map(|&b| {
            serve(&mut l, Request::read(b, 1))
                .iter()
                .flat_map(|f| f.first..f.first + u64::from(f.len))
                .filter(|&x| x != b)
                .collect()
        })
        .collect()
}

#[test]
fn interleaved_streams_in_one_granule_keep_their_linux_contexts() {
    // `studies/policies2.md`, finding 1's reproduction: stream A reads 0, 1, 2, stream B `other` and
    // `other + 1`, interleaved. Read 1 continues A, whose window holds 0, so request 2 makes A's next
    // window; read `other + 1` continues B. With B in A's granule (16, 31) the answers must be those
    // with B far away (32, 48): before the fix, B's claims erased A's and the other way round, so
    // request 2 started a fresh context (2.6.16: read-ahead off, nothing prefetched; pfc-paper: one
    // block) and so did request 3.
    let range = |a: u64, b: u64| (a..=b).collect::<Vec<u64>>();
    for (mode, a2) in [("2.6.16", range(4, 11)), ("ondemand", range(4, 11)), ("pfc-paper", range(4, 9))] {
        let far = linux_prefetches(mode, &[0, 48, 1, 49, 2]);
        assert_eq!(far[0], range(1, 3), "{mode}");
        assert_eq!(far[2], a2, "{mode}");
        for other in [16, 31, 32] {
            let got = linux_prefetches(mode, &[0, other, 1, other + 1, 2]);
            for i in [0, 2, 4] {
                assert_eq!(got[i], far[i], "{mode}, B at {other}: stream A's request {i}");
            }
            for i in [1, 3] {
                let shifted: Vec<u64> = far[i].iter().map(|b| b - 48 + other).collect();
                assert_eq!(got[i], shifted, "{mode}, B at {other}: stream B's request {i}");
            }
        }
    }
}
