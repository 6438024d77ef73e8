//! The network between consecutive levels (`shared/docs/models/network.md`): every message goes over the
//! link of the level that sends it; fetches go down as `ReadReq`, their blocks come back as `ReadResp`,
//! and with DEMOTE the blocks a level evicted go down in one message per access (those it evicted while
//! reading them in one message per read, when that read arrives). Pure-delay links
//! (`link = "none"`) take their delays from tables instead of the link model.

use super::{Engine, Ev, TimedObserver, DONE};
use crate::device::ms_to_ns;
use crate::engine::inflight::{Slab, NIL};
use crate::link::{Link, LinkParams, MsgKind};

/// The links of a timed run and what travels on them.
pub(super) struct Net {
    links: Vec<Link>,
    /// The links are pure delays (`link = "none"`): delays come from these tables, counted here.
    fast: bool,
    req_delay_ns: u64,
    /// ReadResp delay by pages (computed on first use).
    resp_delay_ns: Vec<u64>,
    /// Messages and pages sent over fast links.
    sent: (u64, u64),
    /// CPU time of a level below the first to take a request, ns.
    l2_cpu_ns: u64,
    page_bytes: u64,
    block_size: u64,
    /// DEMOTE batches on a link: (evicting level, client, blocks).
    demotions: Slab<(usize, u32, Vec<u64>)>,
}

impl Net {
    /// The network over `links` (pure delays when `fast`), blocks of `block_size` bytes.
    pub(super) fn new(links: Vec<Link>, fast: bool, req_delay_ns: u64, lp: &LinkParams, block_size: u64) -> Self {
        Self {
            links,
            fast,
            req_delay_ns,
            resp_delay_ns: Vec::new(),
            sent: (0, 0),
            l2_cpu_ns: ms_to_ns(lp.t_l2_cpu_ms),
            page_bytes: u64::from(lp.page_bytes.max(1)),
            block_size,
            demotions: Slab::default(),
        }
    }

    /// Pages that carry `blocks` blocks.
    fn pages(&self, blocks: u64) -> u32 {
        u32::try_from((blocks * self.block_size).div_ceil(self.page_bytes)).unwrap_or(u32::MAX)
    }

    /// Send a message over link `k` at `now`; returns its arrival time. Pure-delay links use cached
    /// delays, computed as [`Link::send`] computes them.
    #[inline]
    pub(super) fn send(&mut self, k: usize, kind: MsgKind, pages: u32, now: u64) -> u64 {
        if !self.fast {
            return self.links[k].send(kind, pages, now);
        }
        self.sent.0 += 1;
        self.sent.1 += u64::from(pages);
        let d = match kind {
            MsgKind::ReadReq if pages == 0 => self.req_delay_ns,
            MsgKind::ReadResp if (pages as usize) < 4096 => {
                let p = pages as usize;
                if self.resp_delay_ns.len() <= p {
                    let l = &self.links[k];
                    let from = self.resp_delay_ns.len();
                    self.resp_delay_ns.extend((from..=p).map(|q| ms_to_ns(l.delay_ms(MsgKind::ReadResp, q as u32))));
                }
                self.resp_delay_ns[p]
            }
            _ => ms_to_ns(self.links[k].delay_ms(kind, pages)),
        };
        now + d
    }

    /// Messages and pages sent so far over every link.
    pub(super) fn totals(&self) -> (u64, u64) {
        self.links.iter().fold(self.sent, |(m, p), l| (m + l.stats().messages, p + l.stats().pages))
    }
}

impl<O: TimedObserver + ?Sized> Engine<'_, O> {
    /// Fetch `g` of level `k` goes down to level `k + 1`.
    pub(super) fn forward(&mut self, k: usize, g: u32, now: u64) {
        let t = self.net.send(k, MsgKind::ReadReq, 0, now) + self.net.l2_cpu_ns;
        let c = self.class_req(k + 1);
        self.q.schedule(t, c, Ev::ReqArrive(g));
    }

    /// The blocks of fetch `j` (`len` blocks) go back up from level `k + 1` to level `k`.
    pub(super) fn reply(&mut self, k: usize, j: u32, len: u32, now: u64) {
        let pages = self.net.pages(u64::from(len));
        let t = self.net.send(k, MsgKind::ReadResp, pages, now);
        self.q.schedule(t, DONE, Ev::RespArrive(j));
    }

    /// DEMOTE: the blocks the last access of level `k` (for `client`) evicted go down as one message,
    /// except those it evicted while reading them: the level has no data for them yet, so each fetch of
    /// the access (`out`, `new_ids`) keeps its own as a batch sent when it arrives
    /// ([`Engine::send_held_demotions`]).
    pub(super) fn send_demotions(&mut self, k: usize, client: u32, now: u64) {
        let mut held = std::mem::take(&mut self.held_scratch);
        held.clear();
        let demoted = self.h.take_demotions(k, &self.out, 0, &mut held);
        if !demoted.is_empty() {
            let pages = self.net.pages(demoted.len() as u64);
            let t = self.net.send(k, MsgKind::Demote, pages, now);
            let id = self.net.demotions.alloc((k, client, demoted));
            self.q.schedule(t, DONE, Ev::DemoteArrive(id));
        }
        // One batch per fetch, its blocks in eviction order; an access has few fetches.
        while let Some(&(c, _)) = held.first() {
            let blocks: Vec<u64> = held.iter().filter(|&&(f, _)| f == c).map(|&(_, b)| b).collect();
            held.retain(|&(f, _)| f != c);
            let id = self.net.demotions.alloc((k, client, blocks));
            let g = self.new_ids[c];
            self.fl.jobs[g].held_demotions = id;
        }
        self.held_scratch = held;
    }

    /// DEMOTE: fetch `g` of level `k` arrived, carrying blocks the level evicted while reading them: now
    /// that the level has their data, they go down as one message.
    pub(super) fn send_held_demotions(&mut self, k: usize, g: u32, now: u64) {
        let id = std::mem::replace(&mut self.fl.jobs[g].held_demotions, NIL);
        if id == NIL {
            return;
        }
        let pages = self.net.pages(self.net.demotions[id].2.len() as u64);
        let t = self.net.send(k, MsgKind::Demote, pages, now);
        // With the requests arriving at the level below, after them: with zero latencies the level below
        // has then served every fetch of the evicting access and its own reads have arrived, as when the
        // instant engine lands these blocks.
        let c = self.class_req(k + 1);
        self.q.schedule(t, c, Ev::DemoteArrive(id));
    }

    /// DEMOTE batch `id` arrives at the level below the one that evicted it.
    pub(super) fn land_demotions(&mut self, id: u32, now: u64) {
        let (k, client, blocks) = std::mem::take(&mut self.net.demotions[id]);
        self.net.demotions.release(id);
        self.h.land_demotions(k, client, &blocks);
        self.h.log_level(k + 1, now);
    }
}
