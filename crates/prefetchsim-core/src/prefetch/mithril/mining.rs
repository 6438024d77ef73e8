//! Mithril's association rules and mining pass (Yang et al., SoCC 2017 §4.1, Algorithm 2 and
//! Figure 2), with libCacheSim's variant of the rule (`shared/docs/algorithms/history.md`, "Paper versus
//! libCacheSim").
//!
//! Paper rule (`associate`): two blocks whose timestamp lists are aligned in order are *weakly
//! associated* when their counts are equal and every aligned pair is at most `lookahead` apart;
//! *strongly associated* when, in addition, some aligned pair is exactly 1 apart. `confidence` relaxes
//! both tests (counts may differ by that much, that many pairs may lie beyond `lookahead`; the paper's
//! rule is `confidence = 0`). Mining sorts the rows by first timestamp and, for each row, scans the
//! following rows until their first timestamp is more than `lookahead` later; it keeps every strong
//! pair and the first (closest) weak one. The earlier row is the source of the association.
//!
//! libCacheSim rule (`compat`): the first count-compatible candidate after a row is accepted unless more
//! than `confidence` of its checked pairs lie beyond `lookahead` (later candidates need an adjacent
//! pair); the last aligned pair is never checked; a single-timestamp pair counts as adjacent when its
//! first timestamps are 1 apart. libCacheSim also decodes the 4th and 8th timestamps of a row wrongly
//! (history.md: it reads the count field of the word instead); both rows then read the same value, so
//! those pairs are neither misaligned nor adjacent, which is how they are treated here. (Of the readings
//! the reference numbers allow, this one reproduces libCacheSim's miss ratios on the CloudPhysics blk4k
//! configuration at 0.1% and 0.5% of the footprint to the printed digit; comparing the true values, or
//! the two rows' counts, misses one of them by 1e-4.)

/// How two timestamp rows are associated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Association {
    /// Not associated.
    None,
    /// Every aligned pair within the lookahead range.
    Weak,
    /// Weak, and some aligned pair exactly 1 apart.
    Strong,
}

/// The thresholds of an association test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Largest timestamp gap of an associated pair.
    pub lookahead: u32,
    /// Allowed difference in timestamp counts, and allowed number of pairs beyond `lookahead`.
    pub confidence: u32,
    /// libCacheSim's variant of the rule instead of the paper's.
    pub compat: bool,
}

/// The paper's association test of two rows (timestamps ascending), all aligned pairs checked.
#[must_use]
pub fn associate(a: &[u32], b: &[u32], lookahead: u32, confidence: u32) -> Association {
    if a.len().abs_diff(b.len()) > confidence as usize || a.is_empty() || b.is_empty() {
        return Association::None;
    }
    let mut errors = 0u32;
    let mut strong = false;
    for (x, y) in a.iter().zip(b) {
        let d = x.abs_diff(*y);
        if d > lookahead {
            errors += 1;
            if errors > confidence {
                return Association::None;
            }
        } else if d == 1 {
            strong = true;
        }
    }
    if strong {
        Association::Strong
    } else {
        Association::Weak
    }
}

/// libCacheSim's test of one count-compatible candidate: `first` says whether it is the first
/// count-compatible candidate after the row (accepted by default). The last aligned pair is not checked.
#[must_use]
pub fn associate_libcachesim(a: &[u32], b: &[u32], lookahead: u32, confidence: u32, first: bool) -> bool {
    let m = a.len().min(b.len());
    let mut assoc = first;
    if m == 1 && a[0].abs_diff(b[0]) == 1 {
        assoc = true;
    }
    let mut errors = 0u32;
    for k in 0..m.saturating_sub(1) {
        if k % 4 == 3 && k < 8 {
            continue;
        }
        let d = a[k].abs_diff(b[k]);
        if d > lookahead {
            errors += 1;
            if errors > confidence {
                return false;
            }
        }
        if d == 1 {
            assoc = true;
        }
    }
    assoc
}

/// Reusable buffers of a mining pass: the rows in mining order, laid out contiguously so that the scan
/// reads memory sequentially. Allocated once for the largest table; a pass allocates nothing.
#[derive(Debug, Default)]
pub struct Scratch {
    keys: Vec<u64>,
    order: Vec<u32>,
    first: Vec<u32>,
    /// Second timestamps (0 for a row of one), beside `first` for the loop over rows of two.
    second: Vec<u32>,
    count: Vec<u32>,
    cells: Vec<u32>,
}

impl Scratch {
    /// Buffers for up to `rows` rows of up to `width` timestamps.
    #[must_use]
    pub fn with_capacity(rows: usize, width: usize) -> Self {
        Self {
            keys: Vec::with_capacity(rows),
            order: Vec::with_capacity(rows),
            first: Vec::with_capacity(rows),
            second: Vec::with_capacity(rows),
            count: Vec::with_capacity(rows),
            cells: Vec::with_capacity(rows * width),
        }
    }
}

/// The row bits of a packed sort key (rows below 2^24 are sorted by packed keys).
const ROW_MASK: u64 = (1 << 24) - 1;

/// One mining pass over `n` rows whose timestamps `ts(row)` gives (non-empty, ascending, at most `width`
/// of them). Calls `emit(source_row, target_row)` for every association found; a source's associations
/// come in mining order.
///
/// With `confidence = 0` only rows with equal counts can be associated, so the rows are scanned per count
/// (each group sorted by first timestamp, stored contiguously): the same associations, reported source by
/// source in the same order, with a tight loop over fixed-length rows.
pub fn mine<'a>(
    n: usize,
    width: usize,
    ts: impl Fn(u32) -> &'a [u32],
    rules: Rules,
    buf: &mut Scratch,
    mut emit: impl FnMut(u32, u32),
) {
    let Scratch { keys, order, first, second, count, cells } = buf;
    let grouped = rules.confidence == 0;
    order.clear();
    // Ties (equal first timestamps: wrapped 15-bit values, or blocks of one request with a request
    // clock) keep row order.
    if n <= ROW_MASK as usize + 1 && width <= 255 {
        // The sort key `(count, first timestamp, row)` (count only when grouped) packed in one `u64`:
        // the same order, without reading the rows at every comparison (measured: the sort by a key read
        // through the table was a fifth of mining's instructions on ARC P6).
        keys.clear();
        keys.extend((0..n as u32).map(|r| {
            let t = ts(r);
            let c = if grouped { t.len() as u64 } else { 0 };
            c << 56 | u64::from(t[0]) << 24 | u64::from(r)
        }));
        keys.sort_unstable();
        order.extend(keys.iter().map(|&k| (k & ROW_MASK) as u32));
    } else {
        order.extend(0..n as u32);
        if grouped {
            order.sort_unstable_by_key(|&r| (ts(r).len(), ts(r)[0], r));
        } else {
            order.sort_unstable_by_key(|&r| (ts(r)[0], r));
        }
    }
    first.clear();
    second.clear();
    count.clear();
    cells.clear();
    cells.resize(n * width, 0);
    for (k, &r) in order.iter().enumerate() {
        let t = ts(r);
        first.push(t[0]);
        second.push(t.get(1).copied().unwrap_or(0));
        count.push(t.len() as u32);
        cells[k * width..k * width + t.len()].copy_from_slice(t);
    }
    let row = |k: usize| &cells[k * width..k * width + count[k] as usize];
    // The paper's rule on rows of exactly two timestamps (min_support 2: most rows) is a loop of its own;
    // grouped rows are sorted by count, so those rows are one contiguous range.
    let (two_from, two_to) = if grouped && !rules.compat {
        (count.partition_point(|&c| c < 2), count.partition_point(|&c| c <= 2))
    } else {
        (0, 0)
    };
    // The timestamps come from the dense `first` and `second` arrays (8 bytes a candidate rather than a
    // row's stride): most candidates fail on the second pair and cost only these two loads.
    let (first2, second2) = (&first[..two_to], &second[..two_to]);
    for a in two_from..two_to {
        let (f, s) = (first2[a], second2[a]);
        let mut weak_taken = false;
        for b in a + 1..two_to {
            let d0 = first2[b] - f;
            if d0 > rules.lookahead {
                break;
            }
            let d1 = second2[b].abs_diff(s);
            if d1 <= rules.lookahead && (d0 == 1 || d1 == 1 || !std::mem::replace(&mut weak_taken, true)) {
                emit(order[a], order[b]);
            }
        }
    }
    for a in (0..two_from).chain(two_to..n) {
        let ti = row(a);
        let mut first_candidate = true;
        let mut weak_taken = false;
        for b in a + 1..n {
            if (grouped && count[b] != count[a]) || first[b] - first[a] > rules.lookahead {
                break;
            }
            if count[a].abs_diff(count[b]) > rules.confidence {
                continue;
            }
            let tj = row(b);
            let take = if rules.compat {
                let ok = associate_libcachesim(ti, tj, rules.lookahead, rules.confidence, first_candidate);
                first_candidate = false;
                ok
            } else {
                match associate(ti, tj, rules.lookahead, rules.confidence) {
                    Association::Strong => true,
                    Association::Weak if !weak_taken => {
                        weak_taken = true;
                        true
                    }
                    _ => false,
                }
            };
            if take {
                emit(order[a], order[b]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAPER: Rules = Rules { lookahead: 5, confidence: 0, compat: false };

    fn mined(rows: &[&[u32]], rules: Rules) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        mine(rows.len(), width, |r| rows[r as usize], rules, &mut Scratch::default(), |i, j| out.push((i, j)));
        out
    }

    #[test]
    fn equal_counts_within_lookahead_are_weak_and_an_exact_plus_one_makes_them_strong() {
        assert_eq!(associate(&[10, 40, 70], &[13, 44, 72], 5, 0), Association::Weak);
        assert_eq!(associate(&[10, 40, 70], &[13, 41, 72], 5, 0), Association::Strong);
        // Direction does not matter to the test itself: a gap of -1 is adjacent too.
        assert_eq!(associate(&[10, 40], &[9, 44], 5, 0), Association::Strong);
        // A gap of exactly the lookahead still counts; 0 is not adjacent.
        assert_eq!(associate(&[10, 40], &[15, 40], 5, 0), Association::Weak);
    }

    #[test]
    fn different_counts_or_one_pair_beyond_the_lookahead_mean_no_association() {
        assert_eq!(associate(&[10, 40], &[11, 41, 90], 5, 0), Association::None);
        assert_eq!(associate(&[10, 40, 70], &[11, 41, 77], 5, 0), Association::None);
        // Confidence 1 tolerates one of each.
        assert_eq!(associate(&[10, 40], &[11, 41, 90], 5, 1), Association::Strong);
        assert_eq!(associate(&[10, 40, 70], &[11, 41, 77], 5, 1), Association::Strong);
        assert_eq!(associate(&[10, 40, 70], &[11, 49, 77], 5, 1), Association::None);
    }

    #[test]
    fn the_earlier_first_timestamp_is_the_source() {
        // Row 0 starts later than row 1: the association is 1 -> 0, never 0 -> 1.
        let rows: [&[u32]; 2] = [&[21, 51], &[20, 50]];
        assert_eq!(mined(&rows, PAPER), vec![(1, 0)]);
    }

    #[test]
    fn mining_keeps_every_strong_pair_and_the_closest_weak_one() {
        let rows: [&[u32]; 6] = [
            &[100, 200], // 0: the source
            &[102, 203], // 1: weak, the closest
            &[103, 204], // 2: weak, not kept
            &[101, 199], // 3: strong (100 -> 101)
            &[104, 201], // 4: strong (200 -> 201)
            &[106, 201], // 5: first timestamp beyond the lookahead of row 0
        ];
        let pairs: Vec<(u32, u32)> = mined(&rows, PAPER).into_iter().filter(|p| p.0 == 0).collect();
        assert_eq!(pairs, vec![(0, 3), (0, 1), (0, 4)]);
    }

    #[test]
    fn mining_skips_unassociated_candidates_when_looking_for_the_closest_weak_pair() {
        let rows: [&[u32]; 3] = [&[100, 200], &[101, 290], &[103, 204]];
        // Row 1 fails (second pair 90 apart); row 2 is the closest *weakly associated* one.
        assert_eq!(mined(&rows, PAPER).into_iter().filter(|p| p.0 == 0).collect::<Vec<_>>(), vec![(0, 2)]);
    }

    #[test]
    fn libcachesim_accepts_the_first_candidate_and_never_checks_the_last_pair() {
        let rules = Rules { lookahead: 5, confidence: 0, compat: true };
        // The first candidate's second (last) pair is 90 apart: unchecked, so accepted; the second
        // candidate is weak and not first: rejected.
        let rows: [&[u32]; 3] = [&[100, 200], &[102, 290], &[103, 204]];
        assert_eq!(mined(&rows, rules).into_iter().filter(|p| p.0 == 0).collect::<Vec<_>>(), vec![(0, 1)]);
        assert!(associate_libcachesim(&[7], &[8], 5, 0, false));
        assert!(!associate_libcachesim(&[7], &[9], 5, 0, false));
        // Beyond-lookahead pairs among the checked ones reject even the first candidate.
        assert!(!associate_libcachesim(&[10, 40, 70], &[11, 49, 70], 5, 0, true));
        assert!(associate_libcachesim(&[10, 40, 70], &[11, 49, 70], 5, 1, false));
        // The 4th pair is misread as equal values: 90 apart, yet no error.
        assert!(associate_libcachesim(&[10, 20, 30, 40, 50], &[12, 22, 32, 130, 52], 5, 0, true));
        assert!(!associate_libcachesim(&[10, 20, 30, 40, 50], &[12, 22, 32, 42, 52], 5, 0, false));
    }

    /// The mining rule written plainly: every row against every later row in first-timestamp order.
    fn naive(rows: &[Vec<u32>], rules: Rules) -> Vec<(u32, u32)> {
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_by_key(|&r| (rows[r as usize][0], r));
        let mut out = Vec::new();
        for (a, &i) in order.iter().enumerate() {
            let (mut first, mut weak_taken) = (true, false);
            for &j in &order[a + 1..] {
                let (ti, tj) = (&rows[i as usize], &rows[j as usize]);
                if tj[0] - ti[0] > rules.lookahead {
                    break;
                }
                if ti.len().abs_diff(tj.len()) > rules.confidence as usize {
                    continue;
                }
                let take = if rules.compat {
                    let ok = associate_libcachesim(ti, tj, rules.lookahead, rules.confidence, first);
                    first = false;
                    ok
                } else {
                    match associate(ti, tj, rules.lookahead, rules.confidence) {
                        Association::Strong => true,
                        Association::Weak => !std::mem::replace(&mut weak_taken, true),
                        Association::None => false,
                    }
                };
                if take {
                    out.push((i, j));
                }
            }
        }
        out
    }

    #[test]
    fn per_count_scanning_finds_what_the_plain_rule_finds_source_by_source() {
        let mut x = 99u64;
        let mut rand = |m: u32| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) % u64::from(m)) as u32
        };
        for round in 0..200 {
            let n = 1 + rand(60) as usize;
            let rows: Vec<Vec<u32>> = (0..n)
                .map(|_| {
                    let c = 1 + rand(4);
                    let mut t = rand(80);
                    (0..c)
                        .map(|_| {
                            t += 1 + rand(12);
                            t
                        })
                        .collect()
                })
                .collect();
            let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
            for rules in [
                Rules { lookahead: 6, confidence: 0, compat: false },
                Rules { lookahead: 6, confidence: 0, compat: true },
                Rules { lookahead: 9, confidence: 1, compat: false },
                Rules { lookahead: 9, confidence: 1, compat: true },
            ] {
                let (mut got, mut want) = (mined(&refs, rules), naive(&rows, rules));
                // Same pairs, and each source's pairs in the same order.
                got.sort_by_key(|p| p.0);
                want.sort_by_key(|p| p.0);
                assert_eq!(got, want, "round {round}, {rules:?}");
            }
        }
    }
}
