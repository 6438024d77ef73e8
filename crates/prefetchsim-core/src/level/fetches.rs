//! Turning an access into fetches for the level below: the missing demand blocks are admitted and read in
//! runs of consecutive blocks, then the prefetcher's plan is executed, a prefetched block directly after
//! the previous fetch of the request extending it (a demand read and its synchronous prefetch are one I/O).
//!
//! Each block is read at most once per access: a prefetch run passes over a block that this access
//! already reads (a demand miss, or a block of an earlier run) even when the access has since evicted it
//! to make room, as it passes over a block an earlier access reads ([`read_by`]).

use super::Level;
use crate::eventlog::{EventKind as K, Origin};
use crate::policy::{flags, Insert, Placement, Policy, Slot};
use crate::prefetch::Outcome;
use crate::request::{device_block, Fetch, Request};

/// Whether one of `fetches` (the current access's, so far) reads `block`. A block not resident that an
/// access already reads was evicted by that same access to make room for its later blocks (a prefetch run
/// longer than the room, or runs that overlap, as SARC's groups and AMP's can). Issuing it again would
/// count it twice in `prefetch_issued`, `unused_evicted`, `fetches` and `fetched_blocks` and send
/// overlapping reads, while the schema says in-flight blocks are not re-issued and the timed engine reads
/// no block twice (docs/guide/engines.md); its one read goes out, and the timed engine remembers it as an
/// orphan that later demands join. Called only for blocks about to be admitted; an access has few fetches.
#[inline]
fn read_by(fetches: &[Fetch], block: u64) -> bool {
    fetches.iter().any(|f| block >= f.first && block - f.first < u64::from(f.len))
}

impl<P: Policy> Level<P> {
    /// Insert the missing demand blocks and append their fetches.
    #[inline(always)]
    pub(super) fn fill_demand(&mut self, req: &Request, demand_len: u32, out: &mut Vec<Fetch>) {
        let how = Insert { placement: self.plan.demand_placement, ..Insert::demand() };
        let stream = self.plan.demand_stream.unwrap_or(req.stream);
        // DU `evict_now`, DEMOTE `none`: a missed block goes up without being cached here.
        let cache_it = self.opts.cache_demand_miss && self.capacity > 0 && !self.opts.drops_sent_up();
        // A fetch is a run of consecutive missing blocks; its demand blocks are a prefix of it, since
        // the demand blocks are a prefix of the request.
        let push = |out: &mut Vec<Fetch>, from: u32, to: u32| {
            out.push(Fetch {
                first: req.first + u64::from(from),
                len: to - from,
                demand_len: demand_len.clamp(from, to) - from,
                stream: req.stream,
                client: req.client,
            });
        };
        // Prefetch apart: a run of missing blocks is cut where the answered blocks end (PFC's readmore
        // blocks past it are read as a prefetch of their own).
        let cut = match self.answer_end {
            Some(end) if self.pins.apart && end > req.first => (end - req.first).min(u64::from(req.len)) as u32,
            _ => req.len,
        };
        let mut run_from: Option<u32> = None;
        for i in 0..req.len {
            if i == cut {
                if let Some(from) = run_from.take() {
                    push(out, from, i);
                }
            }
            if self.outcomes[i as usize] != Outcome::Miss {
                if let Some(from) = run_from.take() {
                    push(out, from, i);
                }
                continue;
            }
            if cache_it {
                // A demand block that finds no evictable room is served without being cached.
                self.pins.cur_fetch = out.len() as u32;
                let block = req.first + u64::from(i);
                if self.admit(block, stream, flags::ACCESSED, &how).is_some() {
                    self.note(K::Insert, Origin::Demand, block);
                } else if self.pins.on {
                    // Read without a frame to wait in: an orphan, as a block its own access evicted.
                    self.pins.not_kept(block);
                }
            }
            run_from.get_or_insert(i);
        }
        if let Some(from) = run_from {
            push(out, from, req.len);
        }
    }

    /// Execute the prefetch runs of the plan and append their fetches. A prefetched block directly
    /// following the previous fetch of this request extends it: a demand read and its synchronous
    /// prefetch form one I/O. With prefetch apart, only a fetch of blocks past the answered ones
    /// (prefetched or read ahead) is extended.
    pub(super) fn fill_prefetch(&mut self, req: &Request, out: &mut Vec<Fetch>, from: usize) {
        let answer_end = self.answer_end.unwrap_or(req.first + u64::from(req.len));
        let apart = self.pins.apart;
        // A fetch that a prefetched block may join.
        let joinable =
            move |f: &Fetch, block: u64| f.first + u64::from(f.len) == block && (!apart || f.first >= answer_end);
        let runs = std::mem::take(&mut self.plan.runs);
        let second_from = self.plan.second_from.unwrap_or(usize::MAX);
        for (index, run) in runs.iter().enumerate() {
            let (label, second) = if index >= second_from { (flags::SECOND, 1) } else { (0, 0) };
            let placement = match run.placement {
                Placement::Default => self.opts.pf_insert,
                p => p,
            };
            let mut prev: Option<(Slot, u64)> = None;
            for rank in 0..run.len {
                let Some(block) = run.first.checked_add(u64::from(rank)) else { break };
                // Timed: the run ends at the device's end (as a read-ahead window is clipped there); the
                // prefetcher hears the blocks it named there as not read.
                if self.pins.device_blocks.is_some_and(|n| device_block(block) >= n) {
                    self.tell_dropped(block);
                    continue;
                }
                if let Some(slot) = self.table.get(block) {
                    self.policy.on_prefetch_cached(slot, &self.table, rank);
                    continue;
                }
                // Timed: an earlier access's read of it is still in flight; a demand for it joins that read.
                if self.pins.on && self.orphan_read(block).is_some() {
                    continue;
                }
                if self.capacity == 0 {
                    self.drop_prefetch(block);
                    continue;
                }
                // This access reads it already and evicted it since.
                if read_by(&out[from..], block) {
                    continue;
                }
                // The previous newly inserted block of this run may have been evicted meanwhile.
                let after =
                    prev.and_then(|(s, b)| (self.table.is_occupied(s) && self.table.entry(s).block == b).then_some(s));
                let how = Insert::prefetch(rank, after, placement);
                if self.pins.on {
                    let extends = matches!(out[from..].last(), Some(f) if joinable(f, block));
                    self.pins.cur_fetch = (out.len() - usize::from(extends)) as u32;
                }
                let Some(slot) = self.admit(block, run.stream, flags::PREFETCHED | label, &how) else {
                    self.drop_prefetch(block);
                    continue;
                };
                self.note(K::PrefetchIssued, if second == 1 { Origin::Second } else { Origin::Native }, block);
                prev = Some((slot, block));
                self.protect.prefetched(slot);
                self.counters.prefetch_issued += 1;
                self.counters.second_issued += second;
                match out[from..].last_mut() {
                    Some(f) if joinable(f, block) => f.len += 1,
                    _ => {
                        out.push(Fetch { first: block, len: 1, demand_len: 0, stream: run.stream, client: req.client })
                    }
                }
            }
        }
        self.plan.runs = runs;
    }

    /// [`Level::fill_prefetch`] without timed pins or event log (the instant engine's common case): the
    /// same policy calls, admissions, counters and fetches in the same order, without the per-block work
    /// for pins and events, with the run's fetch kept in hand instead of found again in `out` per block,
    /// and the counters added once per run.
    pub(super) fn fill_prefetch_lean(&mut self, req: &Request, out: &mut Vec<Fetch>, from: usize) {
        debug_assert!(!self.pins.on && !self.pins.apart && self.log.is_none());
        let runs = std::mem::take(&mut self.plan.runs);
        let second_from = self.plan.second_from.unwrap_or(usize::MAX);
        for (index, run) in runs.iter().enumerate() {
            let (label, second) = if index >= second_from { (flags::SECOND, 1) } else { (0, 0) };
            let placement = match run.placement {
                Placement::Default => self.opts.pf_insert,
                p => p,
            };
            let mut issued = 0u64;
            let mut dropped = 0u64;
            let mut prev: Option<(Slot, u64)> = None;
            for rank in 0..run.len {
                let Some(block) = run.first.checked_add(u64::from(rank)) else { break };
                if let Some(slot) = self.table.get(block) {
                    self.policy.on_prefetch_cached(slot, &self.table, rank);
                    continue;
                }
                if self.capacity == 0 {
                    dropped += 1;
                    self.tell_dropped(block);
                    continue;
                }
                // This access reads it already and evicted it since.
                if read_by(&out[from..], block) {
                    continue;
                }
                // The previous newly inserted block of this run may have been evicted meanwhile.
                let after =
                    prev.and_then(|(s, b)| (self.table.is_occupied(s) && self.table.entry(s).block == b).then_some(s));
                let how = Insert::prefetch(rank, after, placement);
                let Some(slot) = self.admit(block, run.stream, flags::PREFETCHED | label, &how) else {
                    dropped += 1;
                    self.tell_dropped(block);
                    continue;
                };
                prev = Some((slot, block));
                self.protect.prefetched(slot);
                issued += 1;
                match out[from..].last_mut() {
                    Some(f) if f.first + u64::from(f.len) == block => f.len += 1,
                    _ => {
                        out.push(Fetch { first: block, len: 1, demand_len: 0, stream: run.stream, client: req.client })
                    }
                }
            }
            self.counters.prefetch_issued += issued;
            self.counters.second_issued += second * issued;
            self.counters.prefetch_dropped += dropped;
        }
        self.plan.runs = runs;
    }

    /// A prefetched block found no room: counted, logged, and told to the prefetcher.
    fn drop_prefetch(&mut self, block: u64) {
        self.counters.prefetch_dropped += 1;
        self.note(K::PrefetchDropped, Origin::None, block);
        self.tell_dropped(block);
    }

    /// Tell a prefetcher that hears evictions that a block it named was not read
    /// ([`crate::prefetch::Prefetcher::on_dropped`]).
    #[inline]
    fn tell_dropped(&mut self, block: u64) {
        if self.wants_evictions {
            self.prefetcher.on_dropped(block);
        }
    }
}
