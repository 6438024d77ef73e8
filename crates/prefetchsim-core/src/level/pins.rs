//! Pinning: the timed engine's in-flight state inside a level (`shared/docs/models/event-engine.md` §5).
//!
//! In timed mode ([`Pinning::set_timed`]) the blocks a request brings in are reserved but not ready: right
//! after the access, every block it inserted that is still resident is pinned ([`Pinning::set_fetch_tags`];
//! Linux allocates page-cache pages before it issues the read). Pinning after the access, not at each
//! insertion, keeps every decision inside one access exactly as in the instant engine, so a timed run with
//! zero latencies counts what an instant run counts. [`Pinning::complete`] makes blocks ready when their
//! read arrives. A demand access to a pinned block is an [`Outcome::Pending`](crate::prefetch::Outcome::Pending) miss that waits for the read
//! in flight: a late prefetch when the block was prefetched and not yet used (the prefetcher hears
//! [`crate::prefetch::Prefetcher::on_late`]), otherwise a join of an in-flight demand read. The engine tags
//! pinned blocks with the fetch that carries them, so that a request finding a block pinned knows which read
//! to wait for and only that read's arrival unpins the block.
//!
//! `Pins` is the component a [`super::Level`] keeps for this; the instant engine never turns it on.

use super::Level;
use crate::device::DeviceBelow;
use crate::eventlog::{EventKind as K, LevelEvent, Origin};
use crate::policy::table::BlockMap;
use crate::policy::{flags, BlockTable, Entry, Insert, Policy, Slot};
use crate::prefetch::CacheView;

/// The timed engine's view of a level: pinning blocks in flight and unpinning them when their read arrives.
/// The instant engine does not use it.
pub trait Pinning {
    /// Whether the level supports [`Pinning::set_timed`] (the timed engine refuses a level that does not).
    fn supports_timed(&self) -> bool;
    /// Timed mode on or off: blocks brought in by an access are pinned (in flight) until
    /// [`Pinning::complete`]. Off is the instant engine's behaviour.
    fn set_timed(&mut self, on: bool);
    /// Timed mode, `engine.prefetch_io = "apart"` (the last level only): the level's fetches never mix
    /// the blocks that answer the request with blocks it reads for itself (its prefetch, PFC's
    /// readmore), so that the engine can read the latter as I/Os of their own after the former. Returns
    /// whether the level can do this (the engine refuses it otherwise).
    fn set_prefetch_apart(&mut self, on: bool) -> bool;
    /// Timed mode: the device under the hierarchy. A prefetch run is clipped at its end (`device.blocks`
    /// of each volume), as Linux clips a window at the end of the file or device; a demand block past the
    /// end is still the trace's error, reported by the engine. The level's prefetcher is told too
    /// ([`Prefetcher::use_device`](crate::prefetch::Prefetcher::use_device)).
    fn set_device(&mut self, device: &DeviceBelow);
    /// Timed mode, right after every access: pin the blocks that access brought in and kept, tagging each
    /// with the fetch carrying it, `ids[i]` for the access's `i`-th fetch. Tags are small integers (the
    /// engine's job indices). Returns how many blocks were pinned; fewer than the fetched blocks means some
    /// were not kept (no room, or evicted again within the access), so their reads have no resident block
    /// to wait on.
    fn set_fetch_tags(&mut self, ids: &[u32]) -> u64;
    /// For each [`Outcome::Pending`](crate::prefetch::Outcome::Pending) of the last access, in block order, the tag of the fetch that carries
    /// the block.
    fn pending_tags(&self) -> &[u32];
    /// The fetch tag of `block` if it is resident and pinned.
    fn pinned_tag(&self, block: u64) -> Option<u32>;
    /// Timed mode: the fetch tag of the read in flight that carries `block`, which an access of this
    /// level inserted and evicted again before it ended (an orphan, not resident). None when there is
    /// none, or when the level would read the block again (prefetch apart, above a DEMOTE level).
    /// PFC's bypass waits for that read instead of reading the block a second time.
    fn orphan_tag(&self, block: u64) -> Option<u32>;
    /// Fetch `tag` (blocks `first .. first + len`) arrived: those of its blocks that are still pinned
    /// under its tag become ready. A block pinned under another tag waits for that fetch: it was evicted
    /// and fetched again while this fetch was in flight.
    fn complete(&mut self, first: u64, len: u32, tag: u32);
    /// Whether `block` is resident and pinned (in flight).
    fn is_pinned(&self, block: u64) -> bool;
    /// Resident pinned blocks (tests: zero after a drained run).
    fn pinned_count(&self) -> usize;
}

/// "No tag" / end of a tag chain.
pub(super) const NO_TAG: u32 = u32::MAX;
/// Tags below this are chained (a table indexed by tag); larger ones are found by block lookups.
const MAX_CHAINED_TAG: usize = 1 << 24;

/// The fetch tag of a slot's pinned block.
#[derive(Clone, Copy, Debug)]
struct SlotTag {
    /// The fetch carrying the block.
    tag: u32,
    /// Next slot pinned under the same tag.
    next: u32,
    /// The tagging pass that last tagged it (a block inserted twice in one access is kept by its last
    /// insertion only).
    pass: u32,
}

/// A level's in-flight state in timed mode (all empty and off in the instant engine).
#[derive(Debug, Default)]
pub(super) struct Pins {
    /// Timed mode: inserted blocks are pinned at the end of the access.
    pub(super) on: bool,
    /// `prefetch_io = "apart"`: fetches do not mix answered blocks with prefetched ones.
    pub(super) apart: bool,
    /// (slot, block, index in `out` of its fetch) inserted by the current access (`Slot::MAX`: read but
    /// not kept, for want of room).
    inserted: Vec<(Slot, u64, u32)>,
    /// Index in `out` of the fetch the block being admitted goes to.
    pub(super) cur_fetch: u32,
    /// `out.len()` when the current access began.
    fetch_base: u32,
    /// Per slot, the tag of the fetch carrying the (pinned) block and its chain link.
    slot_tags: Vec<SlotTag>,
    /// Tags of the pending blocks of the last access.
    pending: Vec<u32>,
    /// Tagging passes so far.
    pass: u32,
    /// Per tag, the first slot of the chain of blocks pinned under it (`NO_TAG`: none).
    tag_heads: Vec<u32>,
    /// DEMOTE: blocks sent up while still in flight, dropped when their read arrives.
    pub(super) drop_on_arrival: Vec<u64>,
    /// Blocks an access inserted and evicted again before it ended, whose read it still sent: block to the
    /// tag of that read, until it arrives. A demand access that misses one waits for that read (a join,
    /// [`Level::rejoin`]) instead of reading the block a second time.
    orphans: BlockMap<u32>,
    /// (block, tag, demand) of the orphans the current access's look-ups missed, in block order: cached
    /// again after all its look-ups ([`Level::rejoin_deferred`]), as every insertion of an access is.
    /// `demand` is false for a block an upper level prefetches.
    pub(super) rejoins: Vec<(u64, u32, bool)>,
    /// Blocks the device holds per volume ([`crate::request::device_block`]), when a timed run has a
    /// device: a prefetch run stops at its end ([`Pinning::set_device`]).
    pub(super) device_blocks: Option<u64>,
}

/// The cache view a level gives its prefetcher: its table, and in timed mode its orphan reads (blocks
/// being read that an access evicted before their read arrived), which are "being read" and so cached.
#[inline]
pub(super) fn cache_view<'a>(table: &'a BlockTable, capacity: usize, pins: &'a Pins) -> CacheView<'a> {
    let view = CacheView::new(table, capacity);
    if pins.on {
        view.with_reads(&pins.orphans)
    } else {
        view
    }
}

impl Pins {
    /// An access begins; its fetches start at `out_len` in the engine's buffer.
    #[inline]
    pub(super) fn begin_access(&mut self, out_len: usize) {
        self.inserted.clear();
        self.pending.clear();
        self.rejoins.clear();
        self.fetch_base = out_len as u32;
    }

    /// The access inserted `block` in `slot`, carried by the fetch being built.
    #[inline]
    pub(super) fn inserted(&mut self, slot: Slot, block: u64) {
        self.inserted.push((slot, block, self.cur_fetch));
    }

    /// The access reads `block`, carried by the fetch being built, but found no room for it.
    #[inline]
    pub(super) fn not_kept(&mut self, block: u64) {
        self.inserted.push((Slot::MAX, block, self.cur_fetch));
    }

    /// The access missed an orphan whose read `tag` is in flight (`demand`: a demand block, else one an
    /// upper level prefetches): remember the tag it waits for.
    #[inline]
    pub(super) fn pending_orphan(&mut self, block: u64, tag: u32, demand: bool) {
        self.pending.push(tag);
        self.rejoins.push((block, tag, demand));
    }

    /// The access found the block in `slot` pinned: remember the tag it waits for.
    #[inline]
    pub(super) fn pending(&mut self, slot: Slot) {
        self.pending.push(self.slot_tags.get(slot as usize).map_or(NO_TAG, |t| t.tag));
    }

    fn set_fetch_tags(&mut self, table: &mut BlockTable, ids: &[u32]) -> u64 {
        let bound = table.slot_bound();
        if self.slot_tags.len() < bound {
            self.slot_tags.resize(bound, SlotTag { tag: NO_TAG, next: NO_TAG, pass: 0 });
        }
        let max_id = ids.iter().copied().max().unwrap_or(0) as usize;
        if max_id < MAX_CHAINED_TAG && self.tag_heads.len() <= max_id {
            self.tag_heads.resize(max_id + 1, NO_TAG);
        }
        self.pass = self.pass.wrapping_add(1);
        if self.pass == 0 {
            self.slot_tags.iter_mut().for_each(|t| t.pass = 0);
            self.pass = 1;
        }
        let Self { inserted, slot_tags, tag_heads, pass, fetch_base, orphans, .. } = self;
        let mut kept = 0;
        // Newest first: a block inserted, evicted and inserted again belongs to its last fetch.
        for &(slot, block, fetch) in inserted.iter().rev() {
            if !(table.is_occupied(slot) && table.entry(slot).block == block) {
                // Evicted by its own access: its read goes out all the same.
                if table.get(block).is_none() {
                    if let Some(&id) = ids.get((fetch - *fetch_base) as usize) {
                        orphans.insert(block, id);
                    }
                }
                continue;
            }
            let st = &mut slot_tags[slot as usize];
            if st.pass == *pass {
                continue;
            }
            let Some(&id) = ids.get((fetch - *fetch_base) as usize) else { continue };
            table.set_pinned(slot, true);
            st.tag = id;
            st.pass = *pass;
            kept += 1;
            // Chain the slot under its tag, so that the fetch's arrival finds its blocks without lookups.
            if let Some(h) = tag_heads.get_mut(id as usize) {
                st.next = *h;
                *h = slot;
            }
        }
        inserted.clear();
        kept
    }

    /// Pin `slot` under `tag`, the read already in flight that brings its block (a rejoined orphan).
    fn pin_under(&mut self, table: &mut BlockTable, slot: Slot, tag: u32) {
        if self.slot_tags.len() < table.slot_bound() {
            self.slot_tags.resize(table.slot_bound(), SlotTag { tag: NO_TAG, next: NO_TAG, pass: 0 });
        }
        table.set_pinned(slot, true);
        let st = &mut self.slot_tags[slot as usize];
        st.tag = tag;
        st.next = NO_TAG;
        if (tag as usize) < MAX_CHAINED_TAG {
            if self.tag_heads.len() <= tag as usize {
                self.tag_heads.resize(tag as usize + 1, NO_TAG);
            }
            st.next = self.tag_heads[tag as usize];
            self.tag_heads[tag as usize] = slot;
        }
    }

    /// The read `tag` of blocks `first .. first + len` arrived: its orphans are no longer in flight.
    fn forget_orphans(&mut self, first: u64, len: u32, tag: u32) {
        if self.orphans.is_empty() {
            return;
        }
        for block in first..first + u64::from(len) {
            if self.orphans.get(&block) == Some(&tag) {
                self.orphans.remove(&block);
            }
        }
    }

    fn pinned_tag(&self, table: &BlockTable, block: u64) -> Option<u32> {
        let slot = table.get(block)?;
        table.entry(slot).pinned().then(|| self.slot_tags.get(slot as usize).map(|t| t.tag)).flatten()
    }

    /// Unpin the blocks of fetch `tag` still pinned under it, calling `arrived` for each.
    fn complete(
        &mut self,
        table: &mut BlockTable,
        first: u64,
        len: u32,
        tag: u32,
        mut arrived: impl FnMut(&BlockTable, Slot),
    ) {
        let t = tag as usize;
        if t < MAX_CHAINED_TAG {
            // Every slot chained under the tag is still pinned under it: pinned blocks are not evicted and
            // only this call unpins them.
            let mut slot = self.tag_heads.get(t).copied().unwrap_or(NO_TAG);
            while slot != NO_TAG {
                table.set_pinned(slot, false);
                arrived(table, slot);
                slot = self.slot_tags[slot as usize].next;
            }
            if let Some(h) = self.tag_heads.get_mut(t) {
                *h = NO_TAG;
            }
            return;
        }
        for block in first..first + u64::from(len) {
            if let Some(slot) = table.get(block) {
                if self.slot_tags.get(slot as usize).is_some_and(|t| t.tag == tag) {
                    table.set_pinned(slot, false);
                    arrived(table, slot);
                }
            }
        }
    }
}

impl<P: Policy> Level<P> {
    /// The read in flight that carries `block`, which an earlier access inserted and evicted again before
    /// it ended ([`Pins::orphans`]). None when there is none, and always with prefetch apart (a held read
    /// may skip the block) and above a DEMOTE level (the block goes down to the level below when that
    /// read arrives; a request for it meanwhile reads it again, and the level below or the device's
    /// scheduler joins the two reads).
    #[inline]
    pub(super) fn orphan_read(&self, block: u64) -> Option<u32> {
        if self.pins.orphans.is_empty() || self.pins.apart || self.evicted.is_some() {
            return None;
        }
        self.pins.orphans.get(&block).copied()
    }

    /// Timed mode, after the look-ups of an access: cache again the orphans it missed
    /// ([`Pins::rejoins`]), logging each demand block's `join` (cached again) or `join_uncached`, and each
    /// block an upper level prefetches as `upper_pending` or `upper_join_uncached`. Not done in the
    /// look-up loop:
    /// making room there could evict a resident, ready block that a later block of the same request is
    /// about to look up, which then counts as a miss and is read again (SARC, timed, found by a user
    /// study: `oltp-like`, 96 blocks, block 91779).
    pub(super) fn rejoin_deferred(&mut self, stream: u32) {
        let rejoins = std::mem::take(&mut self.pins.rejoins);
        for &(block, tag, demand) in &rejoins {
            let cached = self.rejoin(block, tag, stream);
            if self.log.is_some() {
                let kind = match (demand, cached) {
                    (true, true) => K::Join,
                    (true, false) => K::JoinUncached,
                    (false, true) => K::UpperPending,
                    (false, false) => K::UpperJoinUncached,
                };
                self.push_event(LevelEvent::block(kind, Origin::None, block));
            }
        }
        // Keep the buffer's allocation for the next access.
        self.pins.rejoins = rejoins;
        self.pins.rejoins.clear();
    }

    /// Timed mode: a demand access missed `block`, whose read `tag` is in flight (what
    /// [`Level::orphan_read`] gave). The access waits for that read, as for any block in flight, and does
    /// not read the block a second time. The block is cached again, pinned under that read, when there is
    /// room: returns whether it was (else it is served without being cached, as a demand block that finds
    /// no room is). Called after the access's look-ups ([`Level::rejoin_deferred`]); the look-up loop has
    /// already recorded the tag the access waits for.
    fn rejoin(&mut self, block: u64, tag: u32, stream: u32) -> bool {
        if !self.opts.cache_demand_miss || self.capacity == 0 || self.opts.drops_sent_up() {
            return false;
        }
        // Not one of this access's insertions: pinned under the older read, not tagged with a new one.
        let timed = std::mem::replace(&mut self.pins.on, false);
        let slot = self.admit(block, stream, flags::ACCESSED, &Insert::demand());
        self.pins.on = timed;
        let Some(slot) = slot else { return false };
        self.note(K::Insert, Origin::Demand, block);
        self.pins.orphans.remove(&block);
        self.pins.pin_under(&mut self.table, slot, tag);
        true
    }
}

impl<P: Policy> Pinning for Level<P> {
    fn supports_timed(&self) -> bool {
        true
    }

    fn set_timed(&mut self, on: bool) {
        self.pins.on = on;
        self.pins.begin_access(0);
        self.refresh_in_place();
    }

    fn set_prefetch_apart(&mut self, on: bool) -> bool {
        self.pins.apart = on;
        true
    }

    fn set_device(&mut self, device: &DeviceBelow) {
        self.pins.device_blocks = Some(device.blocks);
        self.prefetcher.use_device(device);
    }

    fn set_fetch_tags(&mut self, ids: &[u32]) -> u64 {
        self.pins.set_fetch_tags(&mut self.table, ids)
    }

    fn pending_tags(&self) -> &[u32] {
        &self.pins.pending
    }

    fn pinned_tag(&self, block: u64) -> Option<u32> {
        self.pins.pinned_tag(&self.table, block)
    }

    fn orphan_tag(&self, block: u64) -> Option<u32> {
        if self.pins.on && self.table.get(block).is_none() {
            self.orphan_read(block)
        } else {
            None
        }
    }

    fn complete(&mut self, first: u64, len: u32, tag: u32) {
        let Self { pins, table, log, .. } = self;
        if let Some(log) = log {
            log.push(LevelEvent { kind: K::FetchDone, origin: Origin::None, block: first, len });
        }
        pins.forget_orphans(first, len, tag);
        pins.complete(table, first, len, tag, |table, slot| {
            // The block in `slot` is ready (its read arrived).
            if let Some(log) = log {
                let e = table.entry(slot);
                let origin = if e.counts_unused() { super::events::origin_of(*e) } else { Origin::Demand };
                log.push(LevelEvent::block(K::Arrived, origin, e.block));
            }
        });
        self.drop_arrived();
    }

    fn is_pinned(&self, block: u64) -> bool {
        self.table.lookup(block).is_some_and(Entry::pinned)
    }

    /// Counted over the entries, not read from the table's count (which `check_invariants` compares with it).
    fn pinned_count(&self) -> usize {
        self.table.iter().filter(|(_, e)| e.pinned()).count()
    }
}
