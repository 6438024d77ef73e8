//! The instant engine: no time; a miss at one level is at once a request to the next, and every fetched
//! block (demand or prefetch) is present as soon as it is decided.

use super::replay::{Reader, RunTotals};
use super::{Hierarchy, Progress, RequestSource, SourceError};
use crate::config::EngineConfig;
use crate::metrics::RunResult;
use crate::request::{Fetch, Request};
/// Progress is reported about every this many requests.
const TICK: u64 = 1 << 16;

/// Serve one request through the chain of levels. `scratch[k]` receives level k's fetches (all of the
/// request's, in the order the level made them).
///
/// Depth first: each fetch of a level is served at the level below, and at the levels below that, before
/// the level takes its next access (a miss is at once a request to the next level; the timed engine with
/// zero latencies runs the same order). So when a later access of the level evicts a block an earlier
/// fetch brought, the level has its data and DEMOTE sends it down at once; served level by level, it
/// went down before the level below had served that fetch, which then hit data the level above never had.
///
/// DEMOTE: a level's evictions go down after its access, except the blocks the access evicted while
/// reading them: those land only after the level below has served the access's fetches (the timed
/// engine sends them when their read arrives), so the level below misses them first.
#[inline]
pub fn serve(h: &mut Hierarchy, scratch: &mut [Vec<Fetch>], req: &Request) {
    for s in scratch.iter_mut() {
        s.clear();
    }
    serve_at(h, scratch, 0, req, req, req.len);
}

/// Serve `at` (its first `demand_len` blocks demanded; a fetch of the level above, or the application
/// request `req` at level 0) at level `k`, then each of the access's fetches below it ([`serve`]).
fn serve_at(h: &mut Hierarchy, scratch: &mut [Vec<Fetch>], k: usize, req: &Request, at: &Request, demand_len: u32) {
    let from = scratch[k].len();
    h.levels[k].access(at, demand_len, &mut scratch[k]);
    if k + 1 == h.levels.len() {
        return;
    }
    // Blocks of this access held until the level below served their fetch: (index in `scratch[k]`, block).
    let mut held = Vec::new();
    h.pass_demotions(k, at.client, &scratch[k], from, &mut held);
    for i in from..scratch[k].len() {
        let f = scratch[k][i];
        serve_at(h, scratch, k + 1, req, &f.as_request(req), f.demand_len);
    }
    if !held.is_empty() {
        h.land_held(k, &scratch[k], &mut held);
    }
}

/// [`serve`] for a hierarchy of one level and no event log, over a run of requests: the same calls
/// without the per-request walk over the levels (there is no level below to pass fetches or demotions
/// to).
#[inline]
fn serve_one_level(h: &mut Hierarchy, out: &mut Vec<Fetch>, reqs: &[Request]) {
    let level = &mut h.levels[0];
    for req in reqs {
        out.clear();
        level.access(req, req.len, out);
    }
}

/// Replay `src` through `h` with no notion of time.
///
/// The run stops early (with `stopped_early` set) when `progress` returns false or the configured
/// limit is reached. Source errors abort the run and are returned as they are.
pub fn run_instant(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    cfg: &EngineConfig,
    progress: &mut dyn Progress,
) -> Result<RunResult, SourceError> {
    super::future::check_ready(h)?;
    let mut scratch: Vec<Vec<Fetch>> = (0..h.levels.len()).map(|_| Vec::with_capacity(64)).collect();
    let mut rd = Reader::new(src, cfg.limit);
    let mut totals = RunTotals::default();
    let mut next_tick = TICK;
    let mut warm = cfg.warmup_requests == 0;
    let logging = h.logging();
    loop {
        let batch = rd.next_batch()?;
        if batch.is_empty() {
            break;
        }
        let mut rest = batch;
        while !rest.is_empty() {
            // Up to the end of the warm-up, if it ends inside the batch.
            let upto = if warm {
                rest.len()
            } else {
                usize::try_from(cfg.warmup_requests - totals.requests).map_or(rest.len(), |n| n.min(rest.len()))
            };
            let (part, tail) = rest.split_at(upto);
            rest = tail;
            if h.levels.len() == 1 && !logging {
                serve_one_level(h, &mut scratch[0], part);
                totals.count_all(part);
            } else {
                for req in part {
                    serve(h, &mut scratch, req);
                    if logging {
                        // Time of the instant engine's events: the request's index.
                        h.log_all(totals.requests);
                    }
                    totals.count(req);
                }
            }
            if !warm && totals.requests == cfg.warmup_requests {
                warm = true;
                for l in &mut h.levels {
                    l.reset_counters();
                }
                h.log_counters_reset(totals.requests - 1);
            }
        }
        if totals.requests >= next_tick {
            next_tick = totals.requests + TICK;
            if !progress.tick(totals.requests) {
                totals.stopped_early = true;
                break;
            }
        }
    }
    totals.stopped_early |= rd.limited;
    for l in &mut h.levels {
        l.finish();
    }
    super::future::finish(h, totals.stopped_early)?;
    Ok(totals.result(cfg.warmup_requests, h, None))
}
