//! Where a request's client id comes from, for hierarchies with one cache per client
//! (`[[level]] per_client = true`): several traces merged as clients 0..n-1 ([`Merged`], the trace key
//! `merge = [...]`), or one trace whose stream field (ASU, volume, LUN, file) becomes the client
//! ([`ClientFrom::Stream`], the trace key `client_from = "stream"`).
//!
//! **Merge order.** When every member trace has timestamps, requests are merged by time (ties go to the
//! lower member index), so each client keeps its own arrival times. Otherwise (a member without times, as
//! in the ARC `.lis`, LIRS or bare-id formats), the members take turns, one request each (round-robin; an
//! exhausted member drops out). A member "has timestamps" when one of its first 4096 requests has a
//! time other than 0; an empty member does not count.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_core::request::{device_block, volume_of};
use prefetchsim_core::{Request, TraceFacts};
use serde::{Deserialize, Serialize};

use crate::volumes::VolumeSpace;

/// Which field of the trace becomes the request's client id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientFrom {
    /// The format's own client field (MSR host, multi_real process; 0 when the format has none).
    #[default]
    Trace,
    /// The stream field: SPC ASU, Tencent volume, SYSTOR LUN, MSR disk, multi_real file id.
    #[serde(alias = "asu", alias = "volume", alias = "lun")]
    Stream,
}

impl ClientFrom {
    /// Whether this is the default (kept out of serialised specs, so their keys stay as they were).
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::Trace
    }
}

/// A source whose client id is set from its stream field.
pub struct StreamAsClient {
    /// The source.
    pub src: Box<dyn RequestSource + Send>,
}

impl RequestSource for StreamAsClient {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let start = buf.len();
        let n = self.src.fill(buf, max)?;
        for r in &mut buf[start..] {
            r.client = r.stream;
        }
        Ok(n)
    }

    fn report(&self) -> SourceReport {
        self.src.report()
    }

    /// The stream field is unchanged (it is copied to the client, not moved).
    fn facts(&self) -> TraceFacts {
        self.src.facts()
    }
}

/// Requests looked at to decide whether a member has timestamps.
const PEEK: usize = 4096;
/// Requests read at a time while looking for a timestamp (most traces show one in their first two).
const PEEK_STEP: usize = 64;
/// Requests buffered over all members at most, about (32 MiB): each member refills this share of it,
/// between 64 and [`PEEK`] requests.
const BUFFER_BUDGET: usize = 1 << 20;

struct Member {
    src: Box<dyn RequestSource + Send>,
    buf: VecDeque<Request>,
    done: bool,
}

impl Member {
    /// Read up to `want` more requests into the buffer (marking the member done at its end).
    fn read_more(&mut self, scratch: &mut Vec<Request>, want: usize) -> Result<(), SourceError> {
        scratch.clear();
        if self.src.fill(scratch, want)? == 0 {
            self.done = true;
        }
        self.buf.extend(scratch.drain(..));
        Ok(())
    }

    /// The head request, reading `refill` more when the buffer is empty; `None` when exhausted.
    fn head(&mut self, scratch: &mut Vec<Request>, refill: usize) -> Result<Option<&Request>, SourceError> {
        if self.buf.is_empty() && !self.done {
            self.read_more(scratch, refill)?;
        }
        Ok(self.buf.front())
    }

    /// Whether one of the first [`PEEK`] requests has a time other than 0 (`None`: the member is empty).
    /// Reads in steps of [`PEEK_STEP`] and stops at the first timestamp, so that thousands of members do
    /// not each buffer [`PEEK`] requests.
    fn has_times(&mut self, scratch: &mut Vec<Request>) -> Result<Option<bool>, SourceError> {
        let mut checked = 0;
        loop {
            if self.buf.iter().skip(checked).any(|r| r.time_ns != 0) {
                return Ok(Some(true));
            }
            checked = self.buf.len();
            if self.done || checked >= PEEK {
                return Ok((checked > 0).then_some(false));
            }
            self.read_more(scratch, PEEK_STEP.min(PEEK - checked))?;
        }
    }
}

/// The order members take their turns in, decided from their first requests.
enum Order {
    /// Not decided yet (before the first fill).
    Undecided,
    /// By time: the members with a buffered request, keyed by (head time, index): the earliest first,
    /// ties to the lower index.
    ByTime(BinaryHeap<Reverse<(u64, usize)>>),
    /// Round-robin: the members not exhausted, the one whose turn it is first.
    Turns(VecDeque<usize>),
}

impl Order {
    /// Queue member `i`, whose next request is `head`, for its next turn.
    fn queue(&mut self, i: usize, head: &Request) {
        match self {
            Order::ByTime(heap) => heap.push(Reverse((head.time_ns, i))),
            Order::Turns(turns) => turns.push_back(i),
            Order::Undecided => unreachable!("members are queued once the order is decided"),
        }
    }

    /// The member whose turn it is, taken off the queue.
    fn pop(&mut self) -> Option<usize> {
        match self {
            Order::ByTime(heap) => heap.pop().map(|Reverse((_, i))| i),
            Order::Turns(turns) => turns.pop_front(),
            Order::Undecided => None,
        }
    }
}

/// Whether the members of a merge address one set of blocks (the spec's `member_space`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberSpace {
    /// One address space (default): the same block in two members is one block, as for clients that
    /// share data (the members of one workload, the PFC and STEP generators' clients).
    #[default]
    Shared,
    /// Each member its own address space, as separate volumes: traces of different disks or hosts merged
    /// as clients, whose block numbers would otherwise alias.
    Separate,
}

impl MemberSpace {
    /// Whether this is the default (kept out of serialised specs, so their keys stay as they were).
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The volumes of a merge with separate member spaces: each (member, volume of the member) pair is one
/// volume of the merge, numbered in order of first appearance ([`crate::volumes`]).
#[derive(Default)]
struct MemberVolumes {
    index: hashbrown::HashMap<(usize, u64), u64, foldhash::fast::FixedState>,
}

impl MemberVolumes {
    /// Request `r` of member `i` renumbered into its own volume of the merge.
    fn place(&mut self, i: usize, r: &mut Request) -> Result<(), SourceError> {
        let next = self.index.len() as u64;
        let volume = *self.index.entry((i, volume_of(r.first))).or_insert(next);
        r.first = VolumeSpace::place(volume, device_block(r.first), r.len, false)
            .map_err(|e| format!("trace.merge[{i}]: member_space = \"separate\": {e}"))?;
        Ok(())
    }
}

/// Several traces as one, member `i`'s requests as client `i`. Each request costs O(log n) in the
/// number of members (a heap by time, or a queue of turns): a scan over all members for each request
/// made a merge of 1,000 traces 7.5 us a request.
pub struct Merged {
    members: Vec<Member>,
    order: Order,
    /// Requests a member reads when its buffer runs dry.
    refill: usize,
    scratch: Vec<Request>,
    /// With separate member spaces, the merge's volumes.
    volumes: Option<MemberVolumes>,
}

impl Merged {
    /// Merge `sources` as clients 0..n-1, in one address space.
    #[must_use]
    pub fn new(sources: Vec<Box<dyn RequestSource + Send>>) -> Self {
        Self::with_space(sources, MemberSpace::Shared)
    }

    /// Merge `sources` as clients 0..n-1, their blocks in one space or each member in its own.
    #[must_use]
    pub fn with_space(sources: Vec<Box<dyn RequestSource + Send>>, space: MemberSpace) -> Self {
        let members: Vec<Member> =
            sources.into_iter().map(|src| Member { src, buf: VecDeque::new(), done: false }).collect();
        let refill = (BUFFER_BUDGET / members.len().max(1)).clamp(PEEK_STEP, PEEK);
        let volumes = (space == MemberSpace::Separate).then(MemberVolumes::default);
        Self { members, order: Order::Undecided, refill, scratch: Vec::new(), volumes }
    }

    /// Decide the merge order from the members' first requests (by time when every non-empty member has
    /// timestamps) and queue every non-empty member.
    fn decide(&mut self) -> Result<(), SourceError> {
        let mut timed = true;
        for m in &mut self.members {
            // An empty member has no say.
            timed &= m.has_times(&mut self.scratch)?.unwrap_or(true);
        }
        self.order = if timed { Order::ByTime(BinaryHeap::new()) } else { Order::Turns(VecDeque::new()) };
        for (i, m) in self.members.iter_mut().enumerate() {
            if let Some(head) = m.head(&mut self.scratch, self.refill)? {
                self.order.queue(i, head);
            }
        }
        Ok(())
    }

    /// The next request, with its client set; `None` at the end of every member.
    fn next(&mut self) -> Result<Option<Request>, SourceError> {
        let Some(i) = self.order.pop() else { return Ok(None) };
        let m = &mut self.members[i];
        let mut r = m.buf.pop_front().expect("a queued member has a buffered request");
        r.client = i as u32;
        if let Some(v) = &mut self.volumes {
            v.place(i, &mut r)?;
        }
        if let Some(head) = m.head(&mut self.scratch, self.refill)? {
            self.order.queue(i, head);
        }
        Ok(Some(r))
    }
}

impl RequestSource for Merged {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        if matches!(self.order, Order::Undecided) {
            self.decide()?;
        }
        let start = buf.len();
        while buf.len() - start < max {
            match self.next()? {
                Some(r) => buf.push(r),
                None => break,
            }
        }
        Ok(buf.len() - start)
    }

    /// The members' reports added up (their first skipped-record messages, in member order).
    fn report(&self) -> SourceReport {
        let mut rep = SourceReport { request_bytes: Some(0), ..SourceReport::default() };
        for m in &self.members {
            let r = m.src.report();
            rep.request_bytes = rep.request_bytes.zip(r.request_bytes).map(|(a, b)| a.saturating_add(b));
            rep.skipped += r.skipped;
            rep.time_backwards += r.time_backwards;
            rep.skipped_messages.extend(r.skipped_messages);
        }
        rep.skipped_messages.truncate(crate::spec::SKIPPED_MESSAGES);
        rep
    }

    /// Stream ids when every member carries them ([`TraceFacts::merged`]: the stream field passes
    /// unchanged, and a request cannot say whether its member's stream 0 is an id).
    fn facts(&self) -> TraceFacts {
        TraceFacts::merged(self.members.iter().map(|m| m.src.facts()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prefetchsim_core::engine::VecSource;

    fn src(reqs: &[(u64, u64)]) -> Box<dyn RequestSource + Send> {
        Box::new(VecSource::new(
            reqs.iter().map(|&(t, b)| Request { time_ns: t, client: 9, ..Request::read(b, 1) }).collect(),
        ))
    }

    fn all(mut m: impl RequestSource) -> Vec<(u32, u64)> {
        let mut buf = Vec::new();
        while m.fill(&mut buf, 2).unwrap() > 0 {}
        buf.iter().map(|r| (r.client, r.first)).collect()
    }

    #[test]
    fn members_with_times_merge_by_time_and_become_clients() {
        let m = Merged::new(vec![src(&[(5, 1), (20, 2), (30, 3)]), src(&[(1, 10), (20, 11)]), src(&[])]);
        assert_eq!(all(m), vec![(1, 10), (0, 1), (0, 2), (1, 11), (0, 3)]);
    }

    #[test]
    fn separate_member_spaces_keep_the_same_block_of_two_members_apart() {
        let members = || vec![src(&[(5, 1), (20, 2)]), src(&[(1, 1), (30, 2)])];
        assert_eq!(all(Merged::new(members())), vec![(1, 1), (0, 1), (0, 2), (1, 2)]);
        let one = 1 << prefetchsim_core::request::VOLUME_SHIFT;
        let apart = all(Merged::with_space(members(), MemberSpace::Separate));
        // Member 1 is seen first, so its space is the merge's first: it keeps its block numbers.
        assert_eq!(apart, vec![(1, 1), (0, one + 1), (0, one + 2), (1, 2)]);
    }

    #[test]
    fn separate_member_spaces_number_each_members_volumes_apart_and_refuse_what_does_not_fit() {
        let one = 1u64 << prefetchsim_core::request::VOLUME_SHIFT;
        // Member 0 has two volumes (0 and 1), member 1 the same two numbers: four volumes of the merge.
        let m = Merged::with_space(
            vec![src(&[(1, 7), (2, one + 7)]), src(&[(3, one + 7), (4, 7), (5, 8)])],
            MemberSpace::Separate,
        );
        assert_eq!(all(m), vec![(0, 7), (0, one + 7), (1, 2 * one + 7), (1, 3 * one + 7), (1, 3 * one + 8)]);
        // A request across a member's volume boundary cannot keep its blocks together in one volume.
        let cross = vec![Request { time_ns: 1, ..Request::read(one - 1, 2) }];
        let mut m = Merged::with_space(vec![Box::new(VecSource::new(cross))], MemberSpace::Separate);
        let e = m.fill(&mut Vec::new(), 4).unwrap_err().to_string();
        assert!(e.starts_with("trace.merge[0]: member_space = \"separate\": block"), "{e}");
    }

    #[test]
    fn member_space_is_a_merges_key_only() {
        let gen = serde_json::json!({"path": "zipf", "format": "synthetic", "params": {"requests": 10}});
        let s = spec(serde_json::json!({"merge": [gen, gen], "member_space": "separate"})).unwrap();
        assert_eq!(s.member_space, MemberSpace::Separate);
        let e = spec(serde_json::json!({"path": "zipf", "format": "synthetic", "member_space": "separate"}))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("trace.member_space"), "{e}");
        assert!(spec(serde_json::json!({"merge": [gen], "member_space": "apart"})).is_err());
    }

    #[test]
    fn a_member_without_times_makes_the_merge_round_robin() {
        let m = Merged::new(vec![src(&[(5, 1), (6, 2), (7, 3)]), src(&[(0, 10), (0, 11)])]);
        assert_eq!(all(m), vec![(0, 1), (1, 10), (0, 2), (1, 11), (0, 3)]);
    }

    fn spec(v: serde_json::Value) -> Result<crate::TraceSpec, String> {
        crate::TraceSpec::from_json(v).map_err(|e| e.to_string())
    }

    fn read(s: &crate::TraceSpec) -> Vec<Request> {
        let mut src = s.open().unwrap();
        let mut buf = Vec::new();
        while src.fill(&mut buf, 100).unwrap() > 0 {}
        buf
    }

    #[test]
    fn a_merge_spec_reads_each_member_as_its_client() {
        let gen = |seed: u64| serde_json::json!({"path": "zipf", "format": "synthetic", "params": {"requests": 50, "seed": seed}});
        let one = |seed| read(&spec(gen(seed)).unwrap());
        let m = spec(serde_json::json!({"merge": [gen(1), gen(2)]})).unwrap();
        let all = read(&m);
        assert_eq!(all.len(), 100);
        for (c, seed) in [(0u32, 1u64), (1, 2)] {
            let mine: Vec<u64> = all.iter().filter(|r| r.client == c).map(|r| r.first).collect();
            assert_eq!(mine, one(seed).iter().map(|r| r.first).collect::<Vec<_>>(), "client {c}");
        }
        // The spec round-trips, and a member inherits the block size.
        assert_eq!(spec(serde_json::to_value(&m).unwrap()).unwrap(), m);
        assert_eq!(m.member(1).unwrap().block_size, 4096);
    }

    #[test]
    fn a_member_inherits_every_inherited_key_it_leaves_out() {
        let gen = serde_json::json!({"path": "zipf", "format": "synthetic"});
        let m = spec(serde_json::json!({"merge": [gen], "block_size": 512, "sector_size": 4096,
                                         "mode": "objects", "ops": "writes", "skip_bad": 3}))
        .unwrap();
        let one = m.member(0).unwrap();
        assert_eq!(
            (one.block_size, one.sector_size, one.mode, one.ops, one.skip_bad),
            (512, 4096, crate::Mode::Objects, crate::OpsFilter::Writes, 3)
        );
    }

    #[test]
    fn a_members_open_errors_name_the_member() {
        let gen = serde_json::json!({"path": "zipf", "format": "synthetic"});
        let bad = serde_json::json!({"path": "zipf", "format": "synthetic", "params": {"bogus": 1}});
        let e = spec(serde_json::json!({"merge": [gen, bad]})).unwrap().open().err().unwrap().to_string();
        assert!(e.starts_with("trace.merge[1].params.bogus"), "{e}");
    }

    #[test]
    fn client_from_stream_sets_the_client() {
        let s = spec(serde_json::json!({"path": "multi-like", "format": "synthetic", "client_from": "volume",
                                         "params": {"requests": 200}}))
        .unwrap();
        assert_eq!(s.client_from, ClientFrom::Stream);
        let reqs = read(&s);
        assert!(reqs.iter().all(|r| r.client == r.stream));
        assert!(reqs.iter().any(|r| r.client != 0));
    }

    #[test]
    fn bad_client_keys_are_errors_naming_the_key() {
        let gen = serde_json::json!({"path": "zipf", "format": "synthetic"});
        let e = spec(serde_json::json!({"path": "x", "client_from": "host"})).unwrap_err();
        assert!(e.starts_with("trace.client_from"), "{e}");
        let e = spec(serde_json::json!({"merge": [gen, {"path": "zipf", "format": "synthetic", "block_size": 512}]}))
            .unwrap_err();
        assert!(e.starts_with("trace.merge[1].block_size"), "{e}");
        let e = spec(serde_json::json!({"merge": [gen, {"path": "zipf", "colour": 1}]})).unwrap_err();
        assert!(e.starts_with("trace.merge[1]"), "{e}");
        let e = spec(serde_json::json!({"merge": [gen, {"format": "spc"}]})).unwrap_err();
        assert!(e.starts_with("trace.merge[1].path"), "{e}");
        let e = spec(serde_json::json!({"merge": [gen], "client_from": "stream"})).unwrap_err();
        assert!(e.starts_with("trace.client_from"), "{e}");
        let e = spec(serde_json::json!({"block_size": 4096})).unwrap_err();
        assert!(e.starts_with("trace.path"), "{e}");
    }

    #[test]
    fn the_stream_can_become_the_client() {
        let reqs = vec![Request { stream: 4, ..Request::read(1, 1) }, Request { stream: 2, ..Request::read(2, 1) }];
        let s = StreamAsClient { src: Box::new(VecSource::new(reqs)) };
        assert_eq!(all(s), vec![(4, 1), (2, 2)]);
    }

    /// The merge as its doc states it, by a scan of every member per request (what `Merged` did before
    /// its heap): by time, ties to the lower member, when every non-empty member has a time other than 0
    /// among its first `PEEK` requests; otherwise turns, one request each, exhausted members dropping out.
    fn scan_merge(members: &[Vec<(u64, u64)>]) -> Vec<(u32, u64)> {
        let timed = members.iter().all(|m| m.is_empty() || m.iter().take(PEEK).any(|&(t, _)| t != 0));
        let mut pos = vec![0usize; members.len()];
        let (mut out, mut turn) = (Vec::new(), 0usize);
        loop {
            let n = members.len();
            let mut pick: Option<(usize, u64)> = None;
            for k in 0..n {
                let i = if timed { k } else { (turn + k) % n };
                let Some(&(t, _)) = members[i].get(pos[i]) else { continue };
                if !timed {
                    pick = Some((i, 0));
                    break;
                }
                if pick.is_none_or(|(_, best)| t < best) {
                    pick = Some((i, t));
                }
            }
            let Some((i, _)) = pick else { return out };
            turn = i + 1;
            out.push((i as u32, members[i][pos[i]].1));
            pos[i] += 1;
        }
    }

    proptest::proptest! {
        /// The heap and the queue of turns give the scan's order exactly: timed members (with ties and
        /// times going backwards), members without times, empty members, and small fills.
        #[test]
        fn the_merge_keeps_the_order_of_a_scan_over_every_member(
            members in proptest::collection::vec(
                proptest::collection::vec((0u64..6, 0u64..1000), 0..40), 1..12),
            untimed in proptest::bool::ANY,
            step in 1usize..7,
        ) {
            let members: Vec<Vec<(u64, u64)>> = if untimed {
                members
                    .iter()
                    .enumerate()
                    .map(|(i, m)| m.iter().map(|&(t, b)| (if i == 0 { 0 } else { t }, b)).collect())
                    .collect()
            } else {
                members
            };
            let mut m = Merged::new(members.iter().map(|reqs| src(reqs)).collect());
            let mut buf = Vec::new();
            while m.fill(&mut buf, step).unwrap() > 0 {}
            let got: Vec<(u32, u64)> = buf.iter().map(|r| (r.client, r.first)).collect();
            proptest::prop_assert_eq!(got, scan_merge(&members));
        }
    }

    #[test]
    fn a_thousand_members_merge_as_clients_in_time_order() {
        let members: Vec<Vec<(u64, u64)>> = (0..1000u64)
            .map(|i| (0..20u64).map(|k| (1 + k * 1000 + (i * 7919) % 997, i * 100 + k)).collect())
            .collect();
        let mut m = Merged::new(members.iter().map(|reqs| src(reqs)).collect());
        let mut buf = Vec::new();
        while m.fill(&mut buf, 512).unwrap() > 0 {}
        let got: Vec<(u32, u64)> = buf.iter().map(|r| (r.client, r.first)).collect();
        assert_eq!(got.len(), 20_000);
        assert_eq!(got, scan_merge(&members));
    }
}
