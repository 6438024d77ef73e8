//! StreamLRU and SplitLRU against plain models in the paper's setting.

use super::*;

// ---------------------------------------------------------------------------------------------------
// 3. Against plain models, in the paper's setting

/// A workload in the style of the paper's generators: interleaved sequential runs and random blocks,
/// no block requested twice. Each choice `(slot, len, random)` either requests a lone block in a fresh
/// region or the next block of run `slot`, which starts a fresh run of `len` blocks when exhausted.
fn paper_workload(choices: &[(u8, u8, bool)]) -> Vec<u64> {
    let mut region = 0u64;
    let mut fresh = || {
        region += 1;
        region * 1_000
    };
    let mut runs: [(u64, u8); 5] = [(0, 0); 5];
    choices
        .iter()
        .map(|&(slot, len, random)| {
            if random {
                return fresh();
            }
            let run = &mut runs[slot as usize % 5];
            if run.1 == 0 {
                *run = (fresh(), len.max(1));
            }
            let b = run.0;
            *run = (b + 1, run.1 - 1);
            b
        })
        .collect()
}

/// The streams of sequential.md ambiguity 6 and the technique's decision, as the level's prefetcher
/// makes them; shared by the models.
struct ModelTechnique {
    technique: Technique,
    stream_of: HashMap<u64, u32>,
    streams: u32,
}

impl ModelTechnique {
    fn new(technique: Technique) -> Self {
        Self { technique, stream_of: HashMap::new(), streams: 0 }
    }
    fn stream(&mut self, b: u64) -> u32 {
        let s = match self.stream_of.get(&(b - 1)) {
            Some(&s) => s,
            None => {
                self.streams += 1;
                self.streams
            }
        };
        self.stream_of.insert(b, s);
        s
    }
    /// Blocks to prefetch after the request for `b` (with `b` already gone from the cache).
    fn prefetch(&mut self, b: u64, stream: u32, hit: bool, cached: impl Fn(u64) -> bool) -> Vec<u64> {
        let n = match self.technique {
            Technique::T1 => 2,
            Technique::T2 if !hit || !cached(b + 1) => 2,
            Technique::T2 => 0,
            Technique::Pm1 => u64::from(!hit),
        };
        let blocks: Vec<u64> = (1..=n).map(|i| b + i).collect();
        for &x in &blocks {
            self.stream_of.insert(x, stream);
        }
        blocks
    }
}

/// replacement.md §6 as written: queues front = MRU; blocks are inserted first and the cache is
/// trimmed from LRU(Down) afterwards.
struct SplitModel {
    cap: usize,
    c_up: usize,
    up: VecDeque<u64>,
    down: VecDeque<u64>,
    stream: HashMap<u64, u32>,
    tech: ModelTechnique,
}

impl SplitModel {
    fn unlink(&mut self, b: u64) {
        self.up.retain(|&x| x != b);
        self.down.retain(|&x| x != b);
    }
    fn promote(&mut self, b: u64) {
        self.unlink(b);
        self.up.push_front(b);
        while self.up.len() > self.c_up {
            let x = self.up.pop_back().unwrap();
            self.down.push_front(x);
        }
    }
    /// Serve one request; returns (hit, evicted).
    fn request(&mut self, b: u64) -> (bool, BTreeSet<u64>) {
        let s = self.tech.stream(b);
        let hit = self.stream.contains_key(&b);
        if hit {
            let sb = self.stream.remove(&b).unwrap();
            self.unlink(b);
            // Every cached block is an unused prefetched block here: nothing is requested twice.
            if self.stream.get(&(b + 1)) == Some(&sb) {
                self.promote(b + 1);
            }
        }
        let cached = self.stream.clone();
        let wanted = self.tech.prefetch(b, s, hit, |x| cached.contains_key(&x));
        // b1 to MRU(Up) (moved there if cached), overflow to MRU(Down), b2 to MRU(Down).
        for (rank, &x) in wanted.iter().enumerate() {
            let cached = self.stream.contains_key(&x);
            if !cached {
                self.stream.insert(x, s);
            }
            if rank == 0 {
                self.promote(x);
            } else if !cached {
                self.down.push_front(x);
            }
        }
        let mut evicted = BTreeSet::new();
        while self.up.len() + self.down.len() > self.cap {
            let v = self.down.pop_back().or_else(|| self.up.pop_back()).unwrap();
            self.stream.remove(&v);
            evicted.insert(v);
        }
        (hit, evicted)
    }
}

/// replacement.md §5: a list of stream groups, front = MRU, each group nearest block first.
struct StreamModel {
    cap: usize,
    groups: VecDeque<(u32, VecDeque<u64>)>,
    stream: HashMap<u64, u32>,
    tech: ModelTechnique,
}

impl StreamModel {
    fn group(&self, stream: u32) -> Option<usize> {
        self.groups.iter().position(|(s, _)| *s == stream)
    }
    fn request(&mut self, b: u64) -> (bool, BTreeSet<u64>) {
        let s = self.tech.stream(b);
        let hit = self.stream.contains_key(&b);
        if hit {
            let sb = self.stream.remove(&b).unwrap();
            let g = self.group(sb).unwrap();
            let mut group = self.groups.remove(g).unwrap();
            group.1.retain(|&x| x != b);
            if !group.1.is_empty() {
                self.groups.push_front(group);
            }
        }
        let cached = self.stream.clone();
        let wanted = self.tech.prefetch(b, s, hit, |x| cached.contains_key(&x));
        let mut evicted = BTreeSet::new();
        for x in wanted {
            if let Some(&sx) = self.stream.get(&x) {
                // A run names a cached block: it goes behind its group's other blocks (sequence order).
                let g = self.group(sx).unwrap();
                let members = &mut self.groups[g].1;
                members.retain(|&y| y != x);
                members.push_back(x);
                continue;
            }
            if self.stream.len() >= self.cap {
                let last = self.groups.len() - 1;
                let v = self.groups[last].1.pop_back().unwrap();
                if self.groups[last].1.is_empty() {
                    self.groups.pop_back();
                }
                self.stream.remove(&v);
                evicted.insert(v);
            }
            self.stream.insert(x, s);
            let mut group = match self.group(s) {
                Some(g) => self.groups.remove(g).unwrap(),
                None => (s, VecDeque::new()),
            };
            group.1.push_back(x);
            self.groups.push_front(group);
        }
        (hit, evicted)
    }
}

fn technique(t: bool) -> Technique {
    if t {
        Technique::T1
    } else {
        Technique::T2
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// With Down non-empty whenever the cache is full (c_up < c), evicting before each insertion (the
    /// level) and trimming after all of them (the pseudocode) choose the same blocks.
    #[test]
    fn split_lru_matches_the_pseudocode(
        cap in 2usize..20, r in 0.0f64..1.0, t1: bool,
        choices in prop::collection::vec((0u8..5, 1u8..10, prop::bool::weighted(0.2)), 1..200)
    ) {
        let params = SplitLruParams::with_up_ratio(r);
        let c_up = params.c_up(cap);
        prop_assume!(c_up < cap);
        let mut l = Level::new(cap, SplitLru::new(&env(cap, false), params), Technic::new(technique(t1)), paper_options());
        l.record_evictions(true);
        let mut m = SplitModel {
            cap, c_up, up: VecDeque::new(), down: VecDeque::new(), stream: HashMap::new(),
            tech: ModelTechnique::new(technique(t1)),
        };
        let mut out = Vec::new();
        for b in paper_workload(&choices) {
            let hits = l.counters().hits;
            l.access(&Request::read(b, 1), 1, &mut out);
            let (hit, evicted) = m.request(b);
            prop_assert_eq!(l.counters().hits > hits, hit, "hit of {}", b);
            let (up, down) = l.policy().up_down(l.table());
            prop_assert_eq!(&up, &Vec::from(m.up.clone()), "Up after {}", b);
            prop_assert_eq!(&down, &Vec::from(m.down.clone()), "Down after {}", b);
            prop_assert_eq!(l.take_evicted().into_iter().collect::<BTreeSet<_>>(), evicted, "evicted at {}", b);
        }
    }

    #[test]
    fn stream_lru_matches_the_group_model(
        cap in 1usize..20, t1: bool,
        choices in prop::collection::vec((0u8..5, 1u8..10, prop::bool::weighted(0.2)), 1..200)
    ) {
        let policy = StreamLru::new(&env(cap, false), StreamLruParams::default());
        let mut l = Level::new(cap, policy, Technic::new(technique(t1)), paper_options());
        l.record_evictions(true);
        let mut m = StreamModel { cap, groups: VecDeque::new(), stream: HashMap::new(), tech: ModelTechnique::new(technique(t1)) };
        let mut out = Vec::new();
        for b in paper_workload(&choices) {
            let hits = l.counters().hits;
            l.access(&Request::read(b, 1), 1, &mut out);
            let (hit, evicted) = m.request(b);
            prop_assert_eq!(l.counters().hits > hits, hit, "hit of {}", b);
            let groups: Vec<Vec<u64>> = m.groups.iter().map(|(_, g)| Vec::from(g.clone())).collect();
            prop_assert_eq!(l.policy().groups(l.table()), groups, "groups after {}", b);
            prop_assert_eq!(l.take_evicted().into_iter().collect::<BTreeSet<_>>(), evicted, "evicted at {}", b);
        }
    }
}
