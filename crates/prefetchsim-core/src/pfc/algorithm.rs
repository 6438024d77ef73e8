//! PFC's decisions: Algorithm 1 (*PFC_Process_Req*) and Algorithm 2 (*PFC_Set_Param*) of Z. Zhang,
//! K. Lee, X. Ma, Y. Zhou, "PFC: Transparent Optimization of Existing Prefetching Strategies for
//! Multi-level Storage Systems", ICDCS 2008, §3.2, in both printed versions (`pfc.md`, texts A = `000`
//! and B = `001`).
//!
//! Kept apart from the level wrapper so that each branch can be tested on its own: the state sees the
//! lower cache only through two questions (is a block there, resident or in flight; is the cache full).

use super::queue::BlockQueue;
use super::{PfcMode, PfcParams, PfcVersion};

/// What PFC does with one request `[s, e]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// `start_pfc`: blocks `s .. start_pfc` are bypassed (`start_pfc` may be `e + 1`: all of them).
    pub start_pfc: u64,
    /// `end_pfc`: the native path gets `[start_pfc, end_pfc]` (empty when `start_pfc > end_pfc`).
    pub end_pfc: u64,
    /// `bypass_length` after Algorithm 2 (the state, before the ablation mask).
    pub bypass_length: u64,
    /// `readmore_length` after Algorithm 2 (the state, before the ablation mask).
    pub readmore_length: u64,
    /// `rm_size` of this request.
    pub rm_size: u64,
    /// The whole request was bypassed by the first check (`return` of Algorithm 2).
    pub whole: bool,
}

/// One PFC context: the persistent lengths, the average request size and the two queues.
#[derive(Debug, Clone)]
pub struct PfcState {
    p: PfcParams,
    /// `bypass_length`, kept in `[0, req_size]` (pfc.md `bypass_cap`).
    pub bypass_length: u64,
    /// `readmore_length`.
    pub readmore_length: u64,
    sum: f64,
    count: u64,
    /// The bypass queue.
    pub bq: BlockQueue,
    /// The readmore queue.
    pub rq: BlockQueue,
}

impl PfcState {
    /// A fresh context whose queues hold `queue_cap` blocks each.
    #[must_use]
    pub fn new(p: PfcParams, queue_cap: usize) -> Self {
        let touch = p.touch_refreshes;
        Self {
            p,
            bypass_length: 0,
            readmore_length: 0,
            sum: 0.0,
            count: 0,
            bq: BlockQueue::new(queue_cap, touch),
            rq: BlockQueue::new(queue_cap, touch),
        }
    }

    /// The average request size so far (0 before the first request).
    #[must_use]
    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Algorithm 1's average update, the current request included (pfc.md `avg_includes_current`): with
    /// an outlier factor `f > 0`, a request larger than `f` times the average before it is not counted.
    fn update_avg(&mut self, n: u64) {
        let f = self.p.outlier();
        if self.count > 0 && f > 0.0 && n as f64 > f * self.avg() {
            return;
        }
        self.sum += n as f64;
        self.count += 1;
    }

    /// Decide on request `[s, e]` (Algorithm 1 up to the queue inserts, with Algorithm 2). `in_l2` says
    /// whether a block is in the lower cache (resident or in flight); `l2_full` whether it is full.
    /// Call [`PfcState::record`] with the result after serving it.
    pub fn decide(&mut self, s: u64, e: u64, in_l2: &dyn Fn(u64) -> bool, l2_full: bool) -> Decision {
        let n = e - s + 1;
        self.update_avg(n);
        let avg = self.avg();
        // rm_size = MAX(req_size, avg_req_size); the average rounded to whole blocks.
        let rm_size = n.max(avg.round() as u64);
        let whole = self.set_param(s, e, n, avg, rm_size, in_l2, l2_full);
        self.bypass_length = self.bypass_length.min(n);
        let bypass = if self.p.mode == PfcMode::ReadmoreOnly { 0 } else { self.bypass_length };
        let readmore = if self.p.mode == PfcMode::BypassOnly { 0 } else { self.readmore_length };
        Decision {
            start_pfc: s + bypass,
            end_pfc: e + readmore,
            bypass_length: self.bypass_length,
            readmore_length: self.readmore_length,
            rm_size,
            whole,
        }
    }

    /// Algorithm 2. Returns whether the first check bypassed the whole request.
    #[allow(clippy::too_many_arguments)]
    fn set_param(
        &mut self,
        s: u64,
        e: u64,
        n: u64,
        avg: f64,
        rm_size: u64,
        in_l2: &dyn Fn(u64) -> bool,
        l2_full: bool,
    ) -> bool {
        // "[end_u, end_u + req_size] in cache": the req_size blocks right after the request (pfc.md §1).
        let next_cached = || (1..=n).all(|i| e.checked_add(i).is_some_and(in_l2));
        let mut zeroed = false;
        match self.p.version {
            PfcVersion::A => {
                if n as f64 > avg && l2_full {
                    self.readmore_length = 0;
                    zeroed = true;
                }
                if next_cached() {
                    self.bypass_length = n;
                    self.readmore_length = 0;
                    return true;
                }
            }
            PfcVersion::B => {
                if n as f64 > avg / 2.0 || next_cached() {
                    self.bypass_length = n;
                    self.readmore_length = 0;
                    return true;
                }
            }
        }
        let (mut hit_cache, mut hit_bypass, mut hit_readmore) = (false, false, false);
        for x in s..=e {
            hit_cache |= in_l2(x);
            hit_bypass |= self.bq.lookup(x);
            hit_readmore |= self.rq.lookup(x);
        }
        if !hit_bypass {
            self.bypass_length += 1;
        }
        if !hit_cache {
            if hit_bypass {
                self.bypass_length = self.bypass_length.saturating_sub(1);
            }
            self.readmore_length = if hit_readmore && !(zeroed && self.p.a_sticky_zero) { rm_size } else { 0 };
        }
        false
    }

    /// Algorithm 1's queue inserts for request `[s, e]` served as `d`: the bypassed blocks go to the
    /// bypass queue, the readmore window after `end_pfc` to the readmore queue.
    pub fn record(&mut self, s: u64, d: &Decision) {
        if d.start_pfc > s {
            self.bq.insert_range(s, d.start_pfc - 1);
        }
        let first = if self.p.window_incl_end { d.end_pfc } else { d.end_pfc.saturating_add(1) };
        if d.rm_size > 0 {
            self.rq.insert_range(first, d.end_pfc.saturating_add(d.rm_size));
        }
    }
}
