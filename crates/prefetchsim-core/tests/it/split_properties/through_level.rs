//! StreamLRU and SplitLRU through a level: invariants, capacity and prefetch accounting.

use super::*;

// ---------------------------------------------------------------------------------------------------
// 1. Through a level

/// Read-ahead of `p` blocks after every request (T1 generalised), in the request's stream.
struct ReadAhead(u32);

impl Prefetcher for ReadAhead {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        ctx.prefetch(next, self.0);
    }
}

/// One scripted prefetch decision: a run `offset` blocks past the request, of `len` blocks, in stream
/// `stream` (0: the request's), at placement number `placement`.
#[derive(Clone, Copy, Debug)]
struct RunSpec {
    offset: u8,
    len: u8,
    stream: u8,
    placement: u8,
    demand_stream: bool,
}

/// Plays a script of prefetch decisions, one or two runs per request, cyclically.
struct Scripted {
    script: Vec<RunSpec>,
    pos: usize,
}

impl Prefetcher for Scripted {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        for _ in 0..2 {
            let spec = self.script[self.pos % self.script.len()];
            self.pos += 1;
            let stream = if spec.stream == 0 { ctx.req.stream } else { u32::from(spec.stream) };
            if spec.demand_stream {
                ctx.plan.demand_stream = Some(stream);
            }
            ctx.prefetch_run(PrefetchRun {
                first: ctx.req.last() + 1 + u64::from(spec.offset),
                len: u32::from(spec.len),
                stream,
                placement: placement(spec.placement),
            });
            if spec.offset % 2 == 0 {
                break;
            }
        }
    }
}

fn run_spec() -> impl Strategy<Value = RunSpec> {
    (0u8..4, 0u8..5, 0u8..4, 0u8..5, any::<bool>()).prop_map(|(offset, len, stream, placement, demand_stream)| {
        RunSpec { offset, len, stream, placement, demand_stream }
    })
}

fn prefetcher(kind: u8, p: u32, script: Vec<RunSpec>) -> Box<dyn Prefetcher> {
    match kind % 4 {
        0 => Box::new(Obl::new(OblParams { variant: OblVariant::Tagged, ..OblParams::default() })),
        1 => Box::new(Obl::new(OblParams { variant: OblVariant::Always, ..OblParams::default() })),
        2 => Box::new(ReadAhead(p)),
        _ => Box::new(Scripted { script, pos: 0 }),
    }
}

/// Requests: `(kind, block, len, demand)`; kinds 0-2 continue sequential stream 1-3, kind 3 is a random
/// block of stream 0, kind 4 a random block of a random stream. `demand` of `len` blocks are demand.
fn requests(raw: &[(u8, u64, u32, u32)]) -> Vec<(Request, u32)> {
    let mut cursor = [0u64, 1_000, 2_000];
    raw.iter()
        .map(|&(kind, block, len, demand)| {
            let (first, stream) = match kind {
                k @ 0..=2 => {
                    let at = cursor[k as usize];
                    // Now and then a stream jumps back over blocks it has read: re-references.
                    cursor[k as usize] = if block % 17 == 0 { at.saturating_sub(8) } else { at + u64::from(len) };
                    (at, u32::from(k) + 1)
                }
                3 => (block, 0),
                _ => (block, (block % 5) as u32),
            };
            let mut r = Request::read(first, len);
            r.stream = stream;
            (r, demand.clamp(1, len))
        })
        .collect()
}

fn options(consume: bool, keep_miss: bool, stay: bool, chances: u8, pf_lru: bool) -> LevelOptions {
    LevelOptions {
        pf_second_chance: chances,
        first_hit: if stay { FirstHit::Stay } else { FirstHit::Promote },
        pf_insert: if pf_lru { Placement::Lru } else { Placement::Default },
        consume_on_hit: consume,
        cache_demand_miss: keep_miss,
        ..LevelOptions::default()
    }
}

fn drive_level<P: Policy>(
    policy: P,
    capacity: usize,
    opts: LevelOptions,
    pf: Box<dyn Prefetcher>,
    reqs: &[(Request, u32)],
) -> Result<(), TestCaseError> {
    let mut l = Level::new(capacity, policy, pf, opts);
    let mut out: Vec<Fetch> = Vec::new();
    for (i, (r, demand)) in reqs.iter().enumerate() {
        out.clear();
        l.access(r, *demand, &mut out);
        l.check_invariants().map_err(|e| TestCaseError::fail(format!("request {i} {r:?}: {e}")))?;
        prop_assert!(l.len() <= capacity, "request {}: {} blocks in {}", i, l.len(), capacity);
        let c = l.counters();
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    }
    l.finish();
    prop_assert!(l.counters().prefetch_conserved(), "{:?}", l.counters());
    Ok(())
}

type LevelCase = (usize, (bool, bool, bool, u8, bool), (u8, u32, Vec<RunSpec>), Vec<(u8, u64, u32, u32)>, f64, bool);

fn level_case() -> impl Strategy<Value = LevelCase> {
    (
        0usize..=24,
        (any::<bool>(), any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()),
        (0u8..4, 1u32..5, prop::collection::vec(run_spec(), 1..8)),
        prop::collection::vec((0u8..5, 0u64..120, 1u32..4, 0u32..4), 1..160),
        0.0f64..=1.0,
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn stream_lru_level_invariants(
        (cap, (consume, keep, stay, chances, pf_lru), (kind, p, script), raw, _r, zero_random) in level_case()
    ) {
        let policy = StreamLru::new(&env(cap, stay), StreamLruParams { stream_zero_is_random: Some(zero_random) });
        let opts = options(consume, keep, stay, chances, pf_lru);
        drive_level(policy, cap, opts, prefetcher(kind, p, script), &requests(&raw))?;
    }

    #[test]
    fn split_lru_level_invariants(
        (cap, (consume, keep, stay, chances, pf_lru), (kind, p, script), raw, r, _z) in level_case()
    ) {
        let policy = SplitLru::new(&env(cap, stay), SplitLruParams::with_up_ratio(r));
        let opts = options(consume, keep, stay, chances, pf_lru);
        drive_level(policy, cap, opts, prefetcher(kind, p, script), &requests(&raw))?;
    }
}
