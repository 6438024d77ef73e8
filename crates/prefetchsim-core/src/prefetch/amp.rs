//! AMP: adaptive multi-stream prefetching, an adaptive asynchronous sequential prefetcher whose degree
//! `p` and trigger distance `g` live on the last page of each stream's newest read set. Follows
//! B. S. Gill and L. A. D. Bathen, "AMP: Adaptive Multi-stream Prefetching in a Shared Cache", FAST 2007
//! ("AMP Algorithm", Figures 3-4; "Replacement Policy for Prefetched data"), as restated in
//! `shared/docs/algorithms/amp.md`.
//!
//! # Where each part lives
//!
//! - Stream state: per-block metadata maps owned by the prefetcher, cleaned on eviction notices. Every
//!   cached page has `last(x)`, the trigger tag and `old` (one word per page, kept by groups of 8 aligned
//!   pages: a read set's pages arrive and leave together, so they share one map entry); a set's last page
//!   has `p`, `g` and the late mark in a second map keyed by that page. A page with no word is its own
//!   one-page read set with `p = 0` and `g` unset, exactly what a non-sequential one-block miss creates,
//!   so random traffic costs no entries.
//! - `p` grows by the request length on a hit of a set's last page (not after its second chance), up to
//!   `p_max`; it shrinks by one, with `g` following, when an unused prefetched page reaches the LRU end:
//!   the prefetcher asks for one second chance ([`Capabilities::second_chances`](crate::prefetch::Capabilities::second_chances)) and adapts in
//!   [`Prefetcher::on_second_chance`]. `g` grows when a demand read waits for a prefetch
//!   ([`Prefetcher::on_late`]), at most once per read set. The instant engine never calls `on_late`, so
//!   there `g` only moves down: results of instant runs say so.
//! - AMP's cache side (a prefetched page moves to MRU only on its second access) is the level option
//!   `first_hit = "stay"`. The prefetcher asks for it through [`Capabilities::first_hit`](crate::prefetch::Capabilities::first_hit), and
//!   [`crate::build::build_level`] hands it to the policy, so a config naming `prefetcher = "amp"` gets
//!   AMP's replacement over LRU without a second key. `first_hit_stay = false` leaves the level option in
//!   charge (an ablation). The one second chance is the level's, as for any prefetcher.
//!
//! # Metadata set over a page's old copy
//!
//! The access that forms a read set makes room for it afterwards, so it can evict the old copy of one
//! of the set's pages (an already-cached page inside the range) and then fetch that page again with the
//! set (a level reads again an old copy the same access evicted). amp.md's `set_meta` puts `p` and `g`
//! on the set's last page and the tag on page `l - g` unconditionally, and already-cached pages "still
//! join the new set"; nothing lets the access's own evictions undo that. So the pages of the sets an
//! access forms keep their word and stream values through that access's evictions, and once the access
//! is done ([`Prefetcher::after_access`], or the next access's start) the pages that are not resident
//! lose them: the copy fetched again has the set's `last`, `p`, `g` and tag, and starts without `old`
//! (it is a new page that has not had its second chance). The bookkeeping is
//! [`OldCopies`], shared with the trigger marks of RA and SARC. Found by a
//! user study (`studies/policies2.md`, finding 2): the new copy came back as a page alone, so the
//! stream's `p` started over or, without its tag, the stream stalled until its next miss.
//!
//! The same holds for the access's second chances. amp.md's order is "read the missing blocks, then
//! `set_meta`", so a second chance the read gives acts on the state before `set_meta`, which then
//! overwrites it. Here the decisions come first, so a second chance given to a page that had just
//! joined a new set (an already-cached page of its range) found the new set's last page as its stream
//! head and lowered the `p` and `g` just written, and cleared the new tag (a user study of AMP, seed 5:
//! `p` 4 -> 1, and the next sequential miss read 1 page instead of 4). So, during the access that
//! formed a set, a second chance given to a page that joined it before the access's read reaches that
//! page (the level inserts the demand misses, then each set's prefetches in order; the pages of the
//! set within the request are reached once the demand misses are in, the others once the blocks
//! fetched before them are, among them the set's pages that the access evicted before its read reached
//! them and that the level fetches again) only marks the page `old`: its new set's `p`, `g` and tag
//! stay, and the stream head lowered is the one the page had before `set_meta` when that lies outside
//! the new set (noted when the set is formed; one inside it loses its values to the new set anyway).
//! (The pages fetched again were once left out: the read counted as past them, and the second chances
//! given while the level fetched them again lowered the new set's `p` or cleared its tag; an AMP study's
//! model disagreed on seeds 620, 664, 718, 1025, 1396, 1397 and 1444 of its random workloads.) A second
//! chance to any other page whose stream head, as amp.md would find it, is a page not reached yet
//! lowers nothing (`set_meta` overwrites it), and one whose stream head runs through a page that
//! joined a set not reached yet (the later-set step of `stream_head`) uses that page's old set.
//! Pages the access fetches into a set follow the metadata written at decision time (their second
//! chance within the same access clears a tag on them), as a read that writes each page as it passes.
//! Approximations: the old head is noted only for the old set holding the new set's last page and the
//! set just before it, found backwards from that page (a hole in that old set, an evicted page, ends the
//! search), a run of pages that joined a set has its old set noted for the later-set step once, from
//! its first page, so a later page of the run whose old set was another one (a run spanning two old
//! sets, or a page after one the level fetches again) has none and its second chance lowers nothing
//! (an AMP study's model disagreed on seed 2506 of its random workloads: a second chance to page 6,
//! whose head runs through 11, should have lowered the old set ending at 15), a level that never inserts a demand miss
//! (`cache_demand_miss = false`) leaves the pages it waits for unreached until the access ends, and
//! evictions reported without the cache ([`Prefetcher::on_evicted`] instead of
//! [`Prefetcher::on_evicted_in`], as the levels call it) do not note the pages fetched again.
//!
//! # Decisions where the reference is silent (all \[ours\])
//!
//! - A request is handled as amp.md writes it: hits first, in block order (triggers, then last-page
//!   hits), then one read set for its missing blocks. In-flight blocks count as cached.
//! - A page that joins a newer read set loses its trigger tag (a tag belongs to its set) and, if it was a
//!   last page, its `p` and `g`; accessed and `old` stay.
//! - A miss's read set holds every page of `[x, last]`, `x` its first missing block: the request's hit
//!   pages after `x` join it too (amp.md's join rule names prefetch ranges only; with a non-sequential
//!   miss, "last = e" needs page `e` in the set when `e` was a hit).
//! - A block that a trigger set issued earlier in the same request covers still counts as missing
//!   for the miss (amp.md's "if some block of R is missing" comes after the hit loop and could read it
//!   as cached): the miss forms its set from that block, the trigger set's pages in its range join it
//!   (losing that set's tag and `p`, as above), and the level reads the block once, as a demand miss.
//!   The miss's set is the newer of the two whatever order the level inserts the blocks in: amp.md's
//!   hit loop issues the trigger set with its `set_meta` before the MISS step forms its set. So the
//!   demand blocks the trigger set covers end in the miss's set too (a sequential miss whose first
//!   missing block is the trigger set's first page takes over the whole trigger set when its range
//!   reaches that set's last page, and the `p` grown on it is lost), and only the trigger set's pages
//!   after the miss set's last page stay in it, with its `p` and `g`; a trigger-set tag inside the miss
//!   set's range is lost. amp.md is silent here too (it has no request whose blocks two sets cover).
//!   An AMP study's model that wrote the trigger set's metadata after the miss's demand pages disagreed
//!   on seeds 106 and 124 of its random workloads.
//! - Second chances given while the access that formed a read set makes room act as in amp.md's order,
//!   before the set's `set_meta` (see "Metadata set over a page's old copy").
//! - Read sets longer than 2^29 blocks (2 TiB of 4 KiB blocks): pages farther than that from the set's
//!   last page are sets of their own (a representation limit).
//! - "Cached" for the stream-head lookup and for the trigger's last page includes the pages of read sets
//!   planned earlier in the same request (not inserted yet), so a request that hits a trigger and the
//!   old last page credits the new set.
//! - A trigger whose set's last page has `p = 0` reads one page. A sequential miss reads at most `p_max`
//!   pages ahead (`p_init` is the request length when not set).

use serde::{Deserialize, Serialize};

use super::flat_map::FlatMap;
use super::old_copies::OldCopies;
use super::{CacheView, Outcome, PrefetchCtx, Prefetcher};
use crate::component::ConfigError;
use crate::policy::{Entry, FirstHit};

/// Parameters of AMP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AmpParams {
    /// `APT`: asynchronous prefetching starts once `p` exceeds it (default 4, the paper's "empirically
    /// reasonable value"); a new stream's first trigger distance is `APT/2`.
    pub apt: u32,
    /// `p_max`: the largest degree (default 256 \[ours\]; the paper caps `p` without a value we could read).
    pub p_max: u32,
    /// `K`: previous pages that must be cached for a miss to be sequential (default 1).
    pub k: u32,
    /// `p` of a new stream whose previous page has none; default: the request length \[ours\].
    pub p_init: Option<u32>,
    /// Ask the level for AMP's replacement rule, `first_hit = "stay"` (default true).
    pub first_hit_stay: bool,
}

impl Default for AmpParams {
    fn default() -> Self {
        Self { apt: 4, p_max: 256, k: 1, p_init: None, first_hit_stay: true }
    }
}

impl AmpParams {
    /// Reject impossible values, naming the key under `path`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if let Some(msg) = super::degree_too_large(self.p_max) {
            return Err(ConfigError::new(format!("{path}.p_max"), msg));
        }
        if self.p_max == 0 {
            return Err(ConfigError::new(format!("{path}.p_max"), "must be at least 1"));
        }
        if self.k == 0 {
            return Err(ConfigError::new(format!("{path}.k"), "must be at least 1"));
        }
        if self.p_init == Some(0) {
            return Err(ConfigError::new(format!("{path}.p_init"), "must be at least 1"));
        }
        if let Some(msg) = self.p_init.and_then(super::degree_too_large) {
            return Err(ConfigError::new(format!("{path}.p_init"), msg));
        }
        Ok(())
    }
}

/// AMP's metadata of one cached page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMeta {
    /// Last page of the read set the page belongs to.
    pub last: u64,
    /// Degree of prefetch (meaningful on a set's last page).
    pub p: u32,
    /// Trigger distance (on a set's last page); `None` until asynchronous prefetching first turns on.
    pub g: Option<u32>,
    /// The page is its set's trigger.
    pub tag: bool,
    /// A demand read already waited for this set (on its last page; `g` grows once per set).
    pub late: bool,
    /// The page had its second chance (AMP's `old`); kept when the page joins a newer set.
    pub old: bool,
}

impl PageMeta {
    /// The metadata of a page that is a read set of its own with no stream.
    #[must_use]
    pub fn alone(block: u64) -> Self {
        Self { last: block, p: 0, g: None, tag: false, late: false, old: false }
    }
}

/// The AMP prefetcher.
#[derive(Debug)]
pub struct Amp {
    params: AmpParams,
    /// Per-page words of cached pages, by group of [`GROUP`] aligned pages (key: `block >> 3`). A word is
    /// `last - block` (bits 0..29) with the [`TAG`], [`OLD`] and [`HEAD`] flags; 0 is a page alone.
    pages: FlatMap<[u32; GROUP]>,
    /// `p`, `g` and the late mark of the last pages that have any (their word carries [`HEAD`]).
    heads: FlatMap<Head>,
    /// Read sets formed during the current request (not inserted yet): they count as cached.
    planned: Vec<(u64, u64)>,
    /// The pages of the read sets formed by the current access: the access's evictions of their old
    /// copies keep the metadata for the copies it fetches again (see the module documentation).
    copies: OldCopies,
    /// The read sets formed by the current access, in order: second chances the access gives before a
    /// set's read is done act on the state before its `set_meta` (see the module documentation).
    formed: Vec<Formed>,
    /// Runs of pages that joined those sets (present when the set was formed), by [`Formed::joined`].
    joined: Vec<Joined>,
    /// Pages of those runs that the access evicted before its read reached them and fetches again: the
    /// read reaches the pages after one in its run only once it is back.
    refetch: Vec<u64>,
    /// While deciding: the request's last block and last missing block, and the last block fetched so
    /// far in the order the level inserts (demand misses, then the sets' prefetches in order).
    req_last: u64,
    last_miss: Option<u64>,
    cursor: Option<u64>,
    /// Slot of the group of the last evicted page: a read set's pages leave one after another, so the
    /// next eviction usually finds its group there without hashing.
    evicted_slot: usize,
    /// Size above which words of pages a level never inserted are swept out.
    sweep_at: usize,
}

/// Pages per group of the metadata map: a read set's pages arrive and leave together, so they share
/// buckets, and a one-page set of its own costs no entry at all.
const GROUP: usize = 8;
const DELTA: u32 = (1 << 29) - 1;
const TAG: u32 = 1 << 29;
const OLD: u32 = 1 << 30;
const HEAD: u32 = 1 << 31;

/// A read set formed by the current access, as its second chances need it.
#[derive(Clone, Copy, Debug)]
struct Formed {
    first: u64,
    last: u64,
    /// Its runs of pages present when it was formed: `Amp::joined[from..to]`.
    joined: (usize, usize),
    /// Runs `(from, to, head)` of the set's pages whose stream head before `set_meta` was `head`, a
    /// page outside the set (at most two runs, at the set's end).
    outer: [Option<(u64, u64, u64)>; 2],
}

/// A run `[from, to]` of pages that joined a read set of the current access. The access's read reaches
/// them (amp.md writes the set's metadata on them) once `until`, the block the level inserts just
/// before, is in (`None`: reached).
#[derive(Clone, Copy, Debug)]
struct Joined {
    from: u64,
    to: u64,
    until: Option<u64>,
    /// The last page of `from`'s set before this set's `set_meta` (the later-set step of
    /// `stream_head` from the page before `from`).
    from_last: u64,
    /// The run lies in a prefetch range of the access (not in the request part of the miss's set): the
    /// level fetches again a page of it that the access evicts before its read reaches the page.
    again: bool,
}

/// The stream values kept on a read set's last page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Head {
    p: u32,
    g: Option<u32>,
    late: bool,
}

impl Amp {
    /// A new AMP prefetcher.
    #[must_use]
    pub fn new(params: AmpParams) -> Self {
        Self {
            params,
            pages: FlatMap::new(),
            heads: FlatMap::new(),
            planned: Vec::new(),
            copies: OldCopies::default(),
            formed: Vec::new(),
            joined: Vec::new(),
            refetch: Vec::new(),
            req_last: 0,
            last_miss: None,
            cursor: None,
            evicted_slot: 0,
            sweep_at: 64,
        }
    }

    /// The metadata AMP holds for `block` (meaningful while it is cached).
    #[must_use]
    pub fn meta(&self, block: u64) -> PageMeta {
        let w = self.word(block);
        let h = self.head(block);
        PageMeta { last: last_from(block, w), p: h.p, g: h.g, tag: w & TAG != 0, late: h.late, old: w & OLD != 0 }
    }

    /// Pages with metadata of their own, sorted (tests: they must all be cached).
    #[must_use]
    pub fn tracked_pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .pages
            .iter()
            .flat_map(|(k, ws)| (0..GROUP).filter(|&i| ws[i] != 0).map(move |i| (k << 3) + i as u64))
            .collect();
        v.sort_unstable();
        v
    }

    /// The tagged pages, sorted (tests).
    #[must_use]
    pub fn tags(&self) -> Vec<u64> {
        self.tracked_pages().into_iter().filter(|&b| self.word(b) & TAG != 0).collect()
    }

    #[inline]
    fn word(&self, block: u64) -> u32 {
        self.pages.get(block >> 3).map_or(0, |ws| ws[(block & 7) as usize])
    }

    /// Replace `block`'s word by `f(word)`, with one probe when the group exists; returns the old word.
    #[inline]
    fn update_word(&mut self, block: u64, f: impl FnOnce(u32) -> u32) -> u32 {
        let (key, i) = (block >> 3, (block & 7) as usize);
        match self.pages.entry(key) {
            Ok(s) => {
                let ws = self.pages.at_mut(s);
                let old = ws[i];
                ws[i] = f(old);
                if ws[i] == 0 && *ws == [0; GROUP] {
                    self.pages.remove_at(s);
                }
                old
            }
            Err(vacant) => {
                let w = f(0);
                if w != 0 {
                    let mut ws = [0; GROUP];
                    ws[i] = w;
                    self.pages.insert_at(vacant, key, ws);
                }
                0
            }
        }
    }

    fn head(&self, last: u64) -> Head {
        if self.heads.is_empty() {
            return Head::default();
        }
        self.heads.get(last).copied().unwrap_or_default()
    }

    /// Change a last page's stream values in place. Its word's [`HEAD`] bit says whether it has any
    /// (the bit is set exactly when `heads` holds the page), so the word changes only when the values
    /// appear or vanish.
    fn update_head(&mut self, last: u64, f: impl FnOnce(&mut Head)) {
        match self.heads.entry(last) {
            Ok(s) => {
                let h = self.heads.at_mut(s);
                f(h);
                if *h == Head::default() {
                    self.heads.remove_at(s);
                    self.update_word(last, |w| w & !HEAD);
                }
            }
            Err(vacant) => {
                let mut h = Head::default();
                f(&mut h);
                if h != Head::default() {
                    self.heads.insert_at(vacant, last, h);
                    self.update_word(last, |w| w | HEAD);
                }
            }
        }
    }

    /// Cached, or in a read set planned earlier in the current request.
    fn present(&self, cache: CacheView<'_>, block: u64) -> bool {
        self.planned.iter().any(|&(a, l)| (a..=l).contains(&block)) || cache.contains(block)
    }

    /// The last page of the newest set of `x`'s stream (libMimircache's `lastInSequence`), if present.
    /// `x` itself is known to be present; `l` is the last page of its set.
    fn stream_head(&self, cache: CacheView<'_>, x: u64, l: u64) -> Option<u64> {
        if let Some(next) = l.checked_add(1) {
            if self.present(cache, next) {
                let ln = last_from(next, self.word(next));
                if ln > l {
                    return (ln == next || self.present(cache, ln)).then_some(ln);
                }
            }
        }
        (l == x || self.present(cache, l)).then_some(l)
    }

    /// Make `[first, last]` one read set: every page gets `last`, the last page `p` and `g`, and with
    /// `p > APT` the trigger tag goes on page `last - g`. Pages keep `old`; older tags are dropped.
    /// `fresh_last`: the last page is neither cached nor planned (it has no metadata to clear).
    #[allow(clippy::too_many_arguments)]
    fn form_set(
        &mut self,
        cache: CacheView<'_>,
        first: u64,
        last: u64,
        p: u32,
        g: Option<u32>,
        fresh_last: bool,
        miss_set: bool,
    ) {
        self.record_formed(cache, first, last, fresh_last, miss_set);
        // Pages before the last one, a group at a time; a former last page among them loses its stream
        // values (they live on last pages only).
        let mut b = first;
        while b < last {
            let key = b >> 3;
            // Saturating: the last group's end, `(key + 1) << 3`, wrapped to 0 and sent `b` back to 0.
            let end = last.min((key << 3).saturating_add(GROUP as u64));
            let s = self.pages.slot_or_insert(key, [0; GROUP]);
            let ws = self.pages.at_mut(s);
            if end - b == GROUP as u64 && last - b <= u64::from(DELTA) && ws.iter().fold(0, |a, &w| a | w) & HEAD == 0 {
                // A whole group within reach of `last` and without a former last page, the common case
                // inside a long set: a fixed-length loop that vectorises. Its words `d, d-1, ...` are
                // non-zero, so the group stays.
                let d = (last - b) as u32;
                for (j, w) in (0..).zip(ws.iter_mut()) {
                    *w = (*w & OLD) | (d - j);
                }
                b = end;
                continue;
            }
            for x in b..end {
                let i = (x & 7) as usize;
                // A page that far from its set's end stays a set of its own (2^29 blocks: 2 TiB of 4 KiB).
                let delta = u32::try_from(last - x).ok().filter(|&d| d <= DELTA).unwrap_or(0);
                if ws[i] & HEAD != 0 {
                    self.heads.remove(x);
                }
                ws[i] = (ws[i] & OLD) | delta;
            }
            if *ws == [0; GROUP] {
                self.pages.remove_at(s);
            }
            b = end;
        }
        let mut head = Head { p, g, late: false };
        let mut tag_last = false;
        if p > self.params.apt {
            let g = g.unwrap_or(self.params.apt / 2).min(p - 1);
            head.g = Some(g);
            if g == 0 {
                tag_last = true;
            } else {
                self.update_word(last - u64::from(g), |w| w | TAG);
            }
        }
        let has_head = head != Head::default();
        // A new last page with no tag and no stream values needs no word.
        if !(fresh_last && !tag_last && !has_head) {
            // The last page keeps `old`; its tag and stream values are the new set's.
            let flags = if tag_last { TAG } else { 0 } | if has_head { HEAD } else { 0 };
            let w = self.update_word(last, |w| (w & OLD) | flags);
            if has_head {
                self.heads.insert(last, head);
            } else if w & HEAD != 0 {
                self.heads.remove(last);
            }
        }
        self.planned.push((first, last));
        self.copies.cover(first, last);
    }

    /// Before `[first, last]` becomes a read set (its words still the old ones): note the set, the pages
    /// that join it (present now; the others this access fetches into it), when the access's read
    /// reaches each of them, and the joining pages whose stream head lies outside the set, so that a
    /// second chance given to a joining page before the read reaches it acts as in amp.md's order,
    /// before the set's `set_meta` ([`Prefetcher::on_second_chance`]). The level inserts the demand
    /// misses first, then each set's prefetches in order; the read passes a joining page of the demand
    /// part of the miss's set once the demand misses are in, and any other once the blocks fetched
    /// before it are. Sets are runs of pages, so the joining pages with a head outside are at most two
    /// runs at the end of the range: those of the old set holding page `last` (its head, or a later
    /// set's), and those of the set just before it (whose head is the former's last page, by
    /// `stream_head`'s later-set step).
    fn record_formed(&mut self, cache: CacheView<'_>, first: u64, last: u64, fresh_last: bool, miss_set: bool) {
        let from = self.joined.len();
        let e = self.req_last;
        let mut run: Option<u64> = None;
        for b in first..=last {
            if self.present(cache, b) {
                run.get_or_insert(b);
                continue;
            }
            if let Some(a) = run.take() {
                self.push_joined(a, b - 1, miss_set);
            }
            if b > e {
                self.cursor = Some(b);
            }
        }
        if let Some(a) = run {
            self.push_joined(a, last, miss_set);
        }
        let mut set = Formed { first, last, joined: (from, self.joined.len()), outer: [None; 2] };
        if !fresh_last {
            let l1 = last_from(last, self.word(last));
            let a1 = self.run_start(first, last, l1);
            set.outer[0] = self.stream_head(cache, last, l1).filter(|&h| h > last).map(|h| (a1, last, h));
            if l1 > last && a1 > first && self.present(cache, a1 - 1) && self.present(cache, l1) {
                set.outer[1] = Some((self.run_start(first, a1 - 1, a1 - 1), a1 - 1, l1));
            }
        }
        self.formed.push(set);
    }

    /// Note the joining run `[a, l]`: the part within the request of the miss's set is reached once the
    /// demand misses are in, the rest once the block fetched last so far is.
    fn push_joined(&mut self, a: u64, l: u64, miss_set: bool) {
        let e = self.req_last;
        let run = |amp: &Self, from: u64, to: u64, until| Joined {
            from,
            to,
            until,
            from_last: last_from(from, amp.word(from)),
            again: true,
        };
        if miss_set && a <= e {
            let first = Joined { again: false, ..run(self, a, l.min(e), self.last_miss) };
            self.joined.push(first);
            if l > e {
                let rest = run(self, e + 1, l, self.cursor);
                self.joined.push(rest);
            }
        } else {
            let all = run(self, a, l, self.cursor);
            self.joined.push(all);
        }
    }

    /// The first page, not before `first`, of the run ending at `end` whose pages' sets end at `l`.
    fn run_start(&self, first: u64, end: u64, l: u64) -> u64 {
        let mut b = end;
        while b > first && last_from(b - 1, self.word(b - 1)) == l {
            b -= 1;
        }
        b
    }

    /// The index in `formed` of the newest set of the current access holding `v`, if `v` joined it and
    /// the access's read has not reached it yet.
    fn unreached(&mut self, v: u64, cache: CacheView<'_>) -> Option<usize> {
        self.unreached_run(v, cache).map(|(i, _)| i)
    }

    /// [`Amp::unreached`], with the index of `v`'s run in `joined`.
    fn unreached_run(&mut self, v: u64, cache: CacheView<'_>) -> Option<(usize, usize)> {
        let i = self.formed.iter().rposition(|f| f.first <= v && v <= f.last)?;
        let (a, b) = self.formed[i].joined;
        let j = (a..b).find(|&j| self.joined[j].from <= v && v <= self.joined[j].to)?;
        if let Some(until) = self.joined[j].until {
            if !cache.contains(until) {
                return Some((i, j));
            }
            self.joined[j].until = None;
        }
        // A page of the run before `v` that the read fetches again and has not yet.
        let from = self.joined[j].from;
        self.refetch.iter().any(|&p| from <= p && p < v && !cache.contains(p)).then_some((i, j))
    }

    /// When `b` begins a run that joined a set of the current access the read has not reached: the last
    /// page of its set before that set's `set_meta`.
    fn unreached_from_last(&mut self, b: u64, cache: CacheView<'_>) -> Option<u64> {
        let (_, j) = self.unreached_run(b, cache)?;
        (self.joined[j].from == b).then_some(self.joined[j].from_last)
    }

    /// A second chance's adaptation of the stream head `h`: `p` down by one (at least 1), `g` following.
    fn lower(&mut self, h: u64) {
        self.update_head(h, |m| {
            m.p = m.p.saturating_sub(1).max(1);
            m.g = m.g.map(|g| g.saturating_sub(1).min(m.p - 1));
        });
    }

    /// Asynchronous prefetch of `q` pages from `first`, inheriting `p` and `g` from the set ending at
    /// `from`.
    fn issue_set(&mut self, ctx: &mut PrefetchCtx<'_>, first: u64, q: u32, from: Head) {
        let q = q.max(1);
        let Some(last) = first.checked_add(u64::from(q) - 1) else { return };
        ctx.prefetch(first, q);
        let fresh = !self.present(ctx.cache, last);
        self.form_set(ctx.cache, first, last, from.p.max(1), from.g, fresh, false);
    }

    /// A hit on `x`, the last page of its read set, which has not had its second chance: the stream
    /// head's `p` grows by the read size `n`, up to `p_max`.
    fn last_page_hit(&mut self, cache: CacheView<'_>, x: u64, n: u32) {
        if let Some(h) = self.stream_head(cache, x, x) {
            let p_max = self.params.p_max;
            self.update_head(h, |m| m.p = m.p.saturating_add(n).min(p_max));
        }
    }

    /// The rarer half of an eviction, kept out of line so that the common one stays a leaf: the group
    /// in slot `s` leaves when `empty`, and the evicted page `b` loses its stream values when its word
    /// `w` had any.
    #[inline(never)]
    fn forget(&mut self, b: u64, s: usize, empty: bool, w: u32) {
        if w & HEAD != 0 {
            self.heads.remove(b);
        }
        if empty {
            self.pages.remove_at(s);
        }
    }

    /// `b` left the cache: its word goes, and its stream values with it.
    #[inline(always)]
    fn drop_page(&mut self, b: u64) {
        let (key, i) = (b >> 3, (b & 7) as usize);
        let Some(s) = self.pages.find_from(key, self.evicted_slot) else { return };
        self.evicted_slot = s;
        let ws = self.pages.at_mut(s);
        let w = std::mem::take(&mut ws[i]);
        let empty = *ws == [0; GROUP];
        if empty || w & HEAD != 0 {
            self.forget(b, s, empty, w);
        }
    }

    /// The access is done (or the next one starts): pages of its sets whose old copy it evicted keep
    /// their metadata if it fetched them again, and lose it otherwise.
    #[inline(always)]
    fn settle(&mut self, cache: CacheView<'_>) {
        self.formed.clear();
        self.joined.clear();
        self.refetch.clear();
        let kept = self.copies.settle();
        if !kept.is_empty() {
            self.settle_kept(&kept, cache);
        }
    }

    /// [`Amp::settle`] when the access evicted pages of its sets.
    #[cold]
    #[inline(never)]
    fn settle_kept(&mut self, kept: &[u64], cache: CacheView<'_>) {
        for &b in kept {
            if !cache.contains(b) {
                self.drop_page(b);
            }
        }
    }

    fn sweep(&mut self, cache: CacheView<'_>) {
        if self.pages.len() + self.heads.len() > self.sweep_at.max(2 * cache.capacity() + 64) {
            let resident = |b: u64| cache.contains(b);
            self.pages.retain(|k, ws| {
                for (i, w) in ws.iter_mut().enumerate() {
                    if *w != 0 && !resident((k << 3) + i as u64) {
                        *w = 0;
                    }
                }
                ws.iter().any(|&w| w != 0)
            });
            self.heads.retain(|b, _| resident(b));
            self.sweep_at = 2 * (self.pages.len() + self.heads.len());
        }
    }
}

/// The last page of `block`'s set from its word.
#[inline]
fn last_from(block: u64, w: u32) -> u64 {
    block + u64::from(w & DELTA)
}

impl Prefetcher for Amp {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        // Normally done by `after_access` already; a level that does not call it settles here.
        self.settle(ctx.cache);
        self.decide(ctx);
        // Planned sets count as cached only while deciding: the hooks the level calls while it fills the
        // plan (second chances, evictions) see the cache as it is.
        self.planned.clear();
    }

    /// An unused prefetched page reached the LRU end: it loses its tag, and its stream's `p` shrinks by
    /// one (at least 1) with `g = max(min(g-1, p-1), 0)`. While the access that formed read sets makes
    /// room, amp.md's order (read, then `set_meta`) holds: a page of such a set has its second chance
    /// before the set's `set_meta`, which then writes the set's `p`, `g` and tag over what the second
    /// chance changed, so only `old` and a stream head outside the set move; and a stream head that is a
    /// page of such a set is not lowered either.
    fn on_second_chance(&mut self, entry: &Entry, cache: CacheView<'_>) {
        let v = entry.block;
        if !self.formed.is_empty() {
            if let Some(i) = self.unreached(v, cache) {
                let outer = self.formed[i].outer;
                let before = outer.iter().flatten().find(|&&(a, l, _)| a <= v && v <= l).map(|&(_, _, h)| h);
                self.update_word(v, |w| w | OLD);
                if let Some(h) = before.filter(|&h| cache.contains(h)) {
                    if self.unreached(h, cache).is_none() {
                        self.lower(h);
                    }
                }
                return;
            }
        }
        let w = self.update_word(v, |w| (w & !TAG) | OLD);
        let l = last_from(v, w);
        if !self.formed.is_empty() {
            // The page after `l` joined a set the read has not reached: the stream head is the one before
            // that set's `set_meta`.
            if let Some(ln) = l.checked_add(1).and_then(|next| self.unreached_from_last(next, cache)) {
                // As `stream_head` over the old words.
                let h = if ln > l {
                    Some(ln).filter(|&h| h == l + 1 || cache.contains(h))
                } else {
                    Some(l).filter(|&h| h == v || cache.contains(h))
                };
                if let Some(h) = h.filter(|&h| self.unreached(h, cache).is_none()) {
                    self.lower(h);
                }
                return;
            }
        }
        if let Some(h) = self.stream_head(cache, v, l) {
            if self.formed.is_empty() || self.unreached(h, cache).is_none() {
                self.lower(h);
            }
        }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        self.evicted(entry, None);
    }

    fn on_evicted_in(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.evicted(entry, Some(cache));
    }

    fn after_access(&mut self, cache: CacheView<'_>) {
        self.settle(cache);
    }

    /// A page of a read set the level had no room for is never read: like an evicted page it keeps no
    /// metadata (AMP keeps it in the page's cache entry).
    fn on_dropped(&mut self, block: u64) {
        self.drop_page(block);
    }

    /// A demand read waited for `block`: the first time for its read set, `g = min(g+1, p-1)` on the
    /// set's last page.
    fn on_late(&mut self, block: u64) {
        let l = last_from(block, self.word(block));
        let Some(s) = self.heads.find(l) else { return };
        let h = self.heads.at_mut(s);
        if h.late {
            return;
        }
        h.late = true;
        if let Some(g) = h.g {
            h.g = Some((g + 1).min(h.p.saturating_sub(1)));
        }
    }

    /// One second chance for an unused prefetched page; every eviction heard; with `first_hit_stay`, a
    /// prefetched page moves to MRU only on its second access.
    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities {
            second_chances: 1,
            wants_evictions: true,
            first_hit: self.params.first_hit_stay.then_some(FirstHit::Stay),
            ..super::Capabilities::default()
        }
    }

    fn metadata_bytes(&self) -> u64 {
        let pages = self.pages.len() * std::mem::size_of::<(u64, [u32; GROUP])>();
        let heads = self.heads.len() * std::mem::size_of::<(u64, Head)>();
        (pages + heads) as u64
    }
}

impl Amp {
    /// `entry` left the cache (`cache`: as the eviction leaves it, when the level gives it).
    #[inline(always)]
    fn evicted(&mut self, entry: &Entry, cache: Option<CacheView<'_>>) {
        let b = entry.block;
        if self.copies.evicted(b) {
            // Inserted by this access, if a joining run waits for it: the read has passed it.
            for j in &mut self.joined {
                if j.until == Some(b) {
                    j.until = None;
                }
            }
            if let Some(k) = self.refetch.iter().position(|&p| p == b) {
                // Fetched again, and evicted again: the read has passed it.
                self.refetch.swap_remove(k);
            } else if let Some(cache) = cache.filter(|_| !self.formed.is_empty()) {
                // A joining page the read has not reached: the level fetches it again when the run lies
                // in a prefetch range, and the read reaches the run's later pages after that.
                if let Some((_, j)) = self.unreached_run(b, cache) {
                    if self.joined[j].again {
                        self.refetch.push(b);
                    }
                }
            }
            // A page of a set this access formed: its word waits for `settle`. The copy the access
            // fetches again is a new page, which has not had its second chance.
            self.update_word(b, |w| w & !OLD);
            return;
        }
        self.drop_page(b);
    }

    /// The decisions for one request: hits in block order, then one read set for the missing blocks.
    fn decide(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.sweep(ctx.cache);
        let first = ctx.req.first;
        let n = ctx.req.len;
        self.req_last = ctx.req.last();
        self.last_miss = ctx.outcomes.iter().rposition(|o| *o == Outcome::Miss).map(|i| first + i as u64);
        self.cursor = self.last_miss;
        // Hits, in block order.
        for i in 0..ctx.outcomes.len() {
            if ctx.outcomes[i] == Outcome::Miss {
                continue;
            }
            let x = first + i as u64;
            let w = self.word(x);
            if w & TAG != 0 {
                self.update_word(x, |w| w & !TAG);
                let l = last_from(x, w);
                if self.present(ctx.cache, l) {
                    let h = self.head(l);
                    if let Some(next) = l.checked_add(1) {
                        self.issue_set(ctx, next, h.p, h);
                    }
                }
            }
            if w & (DELTA | OLD) == 0 {
                // The last page of its set (a page alone included), never had a second chance.
                self.last_page_hit(ctx.cache, x, n);
            }
        }
        // The miss: one read set for the missing blocks.
        let Some(i) = ctx.outcomes.iter().position(|o| *o == Outcome::Miss) else { return };
        let x = first + i as u64;
        let e = ctx.req.last();
        let sequential =
            (1..=u64::from(self.params.k)).all(|j| x.checked_sub(j).is_some_and(|b| ctx.cache.contains(b)));
        if sequential {
            let pl = last_from(x - 1, self.word(x - 1));
            // `x - 1` itself is cached (checked just above).
            let from = if pl == x - 1 || self.present(ctx.cache, pl) { self.head(pl) } else { Head::default() };
            let q = if from.p > 0 { from.p } else { self.params.p_init.unwrap_or(n) }.clamp(1, self.params.p_max);
            let Some(last) = e.checked_add(u64::from(q)) else { return };
            ctx.prefetch(e + 1, q);
            let fresh = !self.present(ctx.cache, last);
            self.form_set(ctx.cache, x, last, q, from.g, fresh, true);
        } else {
            let fresh =
                ctx.outcomes.last() == Some(&Outcome::Miss) && !self.planned.iter().any(|&(a, l)| (a..=l).contains(&e));
            if x == e && fresh {
                // A random one-block miss: a page alone, which has no word; and no later decision of
                // this request needs it planned.
                return;
            }
            self.form_set(ctx.cache, x, e, 0, None, fresh, true);
        }
    }
}

impl super::NamedPrefetcher for Amp {
    const NAME: &'static str = "amp";
    const SUMMARY: &'static str = "Adaptive Multi-stream Prefetching (Gill & Bathen, FAST'07)";
    type Params = AmpParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        params.validate(path)?;
        Ok(Box::new(Amp::new(params)))
    }
}
