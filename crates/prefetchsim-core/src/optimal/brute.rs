//! Brute-force optima of tiny instances (about 20 requests, a cache of 3 or 4 blocks): exhaustive search
//! over every decision, the test oracle of Belady's MIN and of the integrated strategies. Exponential: for
//! tests only.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::integrated::DiskModel;

/// Instances larger than this are refused (the search would not end in a test's time).
pub const MAX_REQUESTS: usize = 32;

/// The fewest misses of any demand-paging replacement on `blocks` with a cache of `k` blocks: every
/// eviction choice tried (memoised on position and cache contents). A missed block is always cached
/// (no bypass), as Belady's model and the simulator's levels do.
pub fn min_misses(blocks: &[u64], k: usize) -> Result<u64, String> {
    if blocks.len() > MAX_REQUESTS {
        return Err(format!("{} requests: brute force takes at most {MAX_REQUESTS}", blocks.len()));
    }
    fn go(blocks: &[u64], k: usize, i: usize, cache: Vec<u64>, memo: &mut HashMap<(usize, Vec<u64>), u64>) -> u64 {
        if i == blocks.len() {
            return 0;
        }
        if let Some(&v) = memo.get(&(i, cache.clone())) {
            return v;
        }
        let b = blocks[i];
        let best = if cache.contains(&b) {
            go(blocks, k, i + 1, cache.clone(), memo)
        } else if k == 0 {
            1 + go(blocks, k, i + 1, cache.clone(), memo)
        } else if cache.len() < k {
            let mut c = cache.clone();
            c.push(b);
            c.sort_unstable();
            1 + go(blocks, k, i + 1, c, memo)
        } else {
            (0..cache.len())
                .map(|v| {
                    let mut c = cache.clone();
                    c[v] = b;
                    c.sort_unstable();
                    1 + go(blocks, k, i + 1, c, memo)
                })
                .min()
                .unwrap_or(u64::MAX)
        };
        memo.insert((i, cache), best);
        best
    }
    Ok(go(blocks, k, 0, Vec::new(), &mut HashMap::new()))
}

/// A state of the integrated problem at a decision time: next request, cached blocks (sorted), and the
/// block in flight with the time left until it arrives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    i: usize,
    cache: Vec<u64>,
    inflight: Option<(u64, u64)>,
}

/// The least elapsed time of any schedule of the single-disk model ([`super::integrated`]) on `blocks`:
/// a shortest-path search over (position, cache, fetch in flight), trying at every integer time the disk
/// is idle every choice: no fetch, or a fetch of any block still to be referenced, into a free slot or
/// evicting any cached block. The state holds no clock (what can follow a state does not depend on when
/// it is reached), so the first time a state is reached is its best.
pub fn min_elapsed(blocks: &[u64], model: DiskModel) -> Result<u64, String> {
    model.validate()?;
    if blocks.len() > MAX_REQUESTS {
        return Err(format!("{} requests: brute force takes at most {MAX_REQUESTS}", blocks.len()));
    }
    let n = blocks.len();
    let f = model.fetch_time;
    let mut best: HashMap<State, u64> = HashMap::new();
    let mut heap = BinaryHeap::new();
    let start = State { i: 0, cache: Vec::new(), inflight: None };
    best.insert(start.clone(), 0);
    heap.push(Reverse((0u64, 0usize)));
    let mut states = vec![start];
    while let Some(Reverse((t, id))) = heap.pop() {
        let s = states[id].clone();
        if best.get(&s).is_some_and(|&b| b < t) {
            continue;
        }
        if s.i == n {
            return Ok(t);
        }
        // Choices at this time: keep the disk as it is, or (idle disk) start one fetch.
        let mut choices = vec![(s.cache.clone(), s.inflight)];
        if s.inflight.is_none() {
            let mut wanted: Vec<u64> = blocks[s.i..].iter().copied().filter(|b| !s.cache.contains(b)).collect();
            wanted.sort_unstable();
            wanted.dedup();
            for &b in &wanted {
                if s.cache.len() < model.cache {
                    choices.push((s.cache.clone(), Some((b, f))));
                } else {
                    for v in 0..s.cache.len() {
                        let mut c = s.cache.clone();
                        c.remove(v);
                        choices.push((c, Some((b, f))));
                    }
                }
            }
        }
        for (cache, inflight) in choices {
            // The processor serves the request if its block is cached, else waits for the fetch in flight.
            let (dt, i) = if cache.contains(&blocks[s.i]) {
                (1, s.i + 1)
            } else if let Some((_, left)) = inflight {
                (left, s.i)
            } else {
                continue;
            };
            let (mut cache, mut inflight) = (cache, inflight);
            if let Some((b, left)) = inflight {
                if left <= dt {
                    cache.push(b);
                    cache.sort_unstable();
                    inflight = None;
                } else {
                    inflight = Some((b, left - dt));
                }
            }
            let next = State { i, cache, inflight };
            let nt = t + dt;
            if best.get(&next).is_none_or(|&b| nt < b) {
                best.insert(next.clone(), nt);
                states.push(next);
                heap.push(Reverse((nt, states.len() - 1)));
            }
        }
    }
    Err("internal: no schedule serves every request".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_cases_by_hand() {
        assert_eq!(min_misses(&[1, 2, 3, 1, 2, 3], 2).unwrap(), 4);
        assert_eq!(min_misses(&[1, 2, 1, 2], 2).unwrap(), 2);
        // One block, F = 3: fetch (3) then serve (1).
        assert_eq!(min_elapsed(&[1], DiskModel { cache: 1, fetch_time: 3 }).unwrap(), 4);
        // 1 2 1 with one slot and F = 1: fetch 1, serve, fetch 2 (evicting 1), serve, fetch 1, serve.
        assert_eq!(min_elapsed(&[1, 2, 1], DiskModel { cache: 1, fetch_time: 1 }).unwrap(), 6);
        // Two slots: the fetch of 2 overlaps the service of 1.
        assert_eq!(min_elapsed(&[1, 2, 1], DiskModel { cache: 2, fetch_time: 1 }).unwrap(), 4);
        assert!(min_elapsed(&[0; 40], DiskModel { cache: 1, fetch_time: 1 }).is_err());
    }
}
