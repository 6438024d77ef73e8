//! Sequential-stream detection for interleaved streams with bounded memory, and a bounded LRU table of
//! per-stream contexts.
//!
//! The detection rule is the one `shared/docs/algorithms/sequential.md` fixes for the Split paper's
//! techniques (Varki, Hubbe & Merchant §2; ambiguity 6): a request for block `b` continues the stream that
//! holds `b-1`, requested or prefetched; otherwise it starts a new stream. [`StreamDetector`] remembers
//! which stream claimed each block of about the last `memory` claims (two generations, \[ours\]), so the state
//! is bounded whatever the trace. RA uses it for its stream ids and for `seq_gate = "held"`; Linux
//! read-ahead uses it to key its per-stream state when a request has no stream id (`key = "detect"`),
//! in a [`StreamTable`](super::stream_table::StreamTable).

use super::flat_map::FlatMap;

/// Block → stream ownership for the most recent claims, in two generations.
///
/// Claims go to the current generation; when it has taken `memory / 2` blocks it becomes the old one and
/// the one before is dropped. A lookup checks the current generation, then the old one. So the detector
/// remembers about the last `memory / 2` to `memory` claimed blocks \[ours\]. Within that memory the
/// rule is exact: a block belongs to the stream that claimed it last, whatever other streams claim
/// around it.
///
/// Blocks are kept in aligned granules of 32, each with up to `OWNERS` (3) streams holding disjoint bit
/// masks: claiming a run costs one hash update per granule, not per block (a read-ahead window of 32
/// blocks touches one or two granules), and a lookup reads one slot. Interleaved streams less than 32
/// blocks apart (files laid out next to each other) share granules; when more streams hold blocks of
/// one granule than it has owners, the blocks of the owner with the fewest are moved to a per-block
/// spill of that granule (exact; probed only for a granule that has spilled). Formerly a
/// granule held one owner and a rival's claim erased the earlier stream's blocks there, so the next
/// request of that stream started a fresh context (a user study, `studies/policies2.md`, finding 1;
/// the rule is `sequential.md` ambiguity 6). No allocation once both generations have reached their size.
///
/// An owner is a stream id (`T = u32`, the default) or any small tag a prefetcher wants back with the
/// stream, such as where it keeps the stream's context (Linux read-ahead: the id and its table slot).
#[derive(Debug)]
pub struct StreamDetector<T = u32> {
    cur: Generation<T>,
    old: Generation<T>,
    /// Blocks claimed into `cur` since it became current.
    cur_blocks: usize,
    half: usize,
    /// The last stream id handed out (ids start at 1 and skip 0, which means "no stream").
    last_id: u32,
}

/// Streams a granule holds inline. Random requests each start a stream of their own, so granules with
/// several owners are common; three (a slot of 48 bytes with Linux's 64-bit tags) keep spills rare
/// on the ARC traces.
const OWNERS: usize = 3;

const GRANULE_BITS: u32 = 5;

/// The claims of one generation: granules, and the per-block spill of the granules that overflowed.
#[derive(Debug)]
struct Generation<T> {
    granules: FlatMap<Granule<T>>,
    /// Blocks of granules whose streams outnumbered [`OWNERS`]: only granules present in `granules`.
    spill: FlatMap<Spill<T>>,
}

/// The claimed blocks of one aligned 32-block granule, by stream: the masks are disjoint, and a zero
/// mask is a free owner.
#[derive(Clone, Copy, Debug, Default)]
struct Granule<T> {
    masks: [u32; OWNERS],
    /// Some of the granule's blocks are in the generation's spill (they fit in the padding).
    spilled: bool,
    owners: [T; OWNERS],
}

/// Blocks of a granule that did not fit in its owners, each with its stream.
#[derive(Clone, Copy, Debug, Default)]
struct Spill<T> {
    mask: u32,
    owners: [T; 32],
}

/// The bit of `block` in its granule.
#[inline(always)]
fn bit(block: u64) -> u32 {
    1 << (block & 31)
}

impl<T: Copy + Eq + Default> Granule<T> {
    /// The inline owner of the block at `bit`.
    #[inline(always)]
    fn owner(&self, bit: u32) -> Option<T> {
        (0..OWNERS).find(|&k| self.masks[k] & bit != 0).map(|k| self.owners[k])
    }

    /// `stream` claims the blocks of `bits`; the other owners lose them. Returns the owner that did not
    /// fit (its blocks, its stream), which the caller spills.
    #[inline]
    fn claim(&mut self, bits: u32, stream: T) -> Option<(u32, T)> {
        let mut mine = None;
        for k in 0..OWNERS {
            if self.masks[k] != 0 && self.owners[k] == stream {
                mine = Some(k);
            } else {
                self.masks[k] &= !bits;
            }
        }
        if let Some(k) = mine {
            self.masks[k] |= bits;
            return None;
        }
        if let Some(k) = (0..OWNERS).find(|&k| self.masks[k] == 0) {
            (self.masks[k], self.owners[k]) = (bits, stream);
            return None;
        }
        // Full: the owner with the fewest blocks makes room.
        let k = (0..OWNERS).min_by_key(|&k| self.masks[k].count_ones()).unwrap_or(0);
        let out = (self.masks[k], self.owners[k]);
        (self.masks[k], self.owners[k]) = (bits, stream);
        Some(out)
    }
}

impl<T: Copy + Eq + Default> Spill<T> {
    fn owner(&self, bit: u32) -> Option<T> {
        (self.mask & bit != 0).then(|| self.owners[bit.trailing_zeros() as usize])
    }
}

impl<T: Copy + Eq + Default> Generation<T> {
    fn new() -> Self {
        Self { granules: FlatMap::new(), spill: FlatMap::new() }
    }

    /// The owner of the block at `bit` of granule `g`, when this generation knows it.
    #[inline]
    fn owner(&self, g: u64, bit: u32) -> Option<T> {
        self.owner_in(self.granules.get(g), g, bit)
    }

    /// [`Generation::owner`] with the granule `gr` already looked up.
    #[inline(always)]
    fn owner_in(&self, gr: Option<&Granule<T>>, g: u64, bit: u32) -> Option<T> {
        let gr = gr?;
        let owner = gr.owner(bit);
        if owner.is_some() || !gr.spilled {
            return owner;
        }
        self.spilled(g, bit)
    }

    /// The spilled owner of the block at `bit` of granule `g`.
    #[cold]
    #[inline(never)]
    fn spilled(&self, g: u64, bit: u32) -> Option<T> {
        self.spill.get(g).and_then(|s| s.owner(bit))
    }

    /// `stream` claims the blocks of `bits` in granule `g`.
    #[inline]
    fn claim(&mut self, g: u64, bits: u32, stream: T) {
        match self.granules.entry(g) {
            Ok(i) => {
                let e = self.granules.at_mut(i);
                let out = e.claim(bits, stream);
                if e.spilled || out.is_some() {
                    let left = self.spill_claim(g, bits, out);
                    self.granules.at_mut(i).spilled = left;
                }
            }
            Err(vacant) => {
                let mut masks = [0; OWNERS];
                let mut owners = [T::default(); OWNERS];
                (masks[0], owners[0]) = (bits, stream);
                self.granules.insert_at(vacant, g, Granule { masks, spilled: false, owners });
            }
        }
    }

    /// The spill's part of a claim in granule `g`: the claimed blocks leave it, and the owner that did
    /// not fit (`out`) moves into it. Returns whether the granule still has spilled blocks.
    #[cold]
    #[inline(never)]
    fn spill_claim(&mut self, g: u64, bits: u32, out: Option<(u32, T)>) -> bool {
        match self.spill.entry(g) {
            Ok(i) => {
                let s = self.spill.at_mut(i);
                s.mask &= !bits;
                if let Some((mask, stream)) = out {
                    s.put(mask, stream);
                }
                if s.mask == 0 {
                    self.spill.remove_at(i);
                    return false;
                }
                true
            }
            Err(vacant) => {
                let Some((mask, stream)) = out else { return false };
                let mut s = Spill::default();
                s.put(mask, stream);
                self.spill.insert_at(vacant, g, s);
                true
            }
        }
    }

    /// The blocks of `bits` in granule `g` are no longer this generation's.
    #[inline]
    fn release(&mut self, g: u64, bits: u32) {
        if let Some(i) = self.granules.find(g) {
            let e = self.granules.at_mut(i);
            for m in &mut e.masks {
                *m &= !bits;
            }
            if e.spilled {
                let left = self.spill_claim(g, bits, None);
                self.granules.at_mut(i).spilled = left;
            }
        }
    }

    fn clear(&mut self) {
        self.granules.clear();
        self.spill.clear();
    }

    fn len(&self) -> usize {
        let inline: usize =
            self.granules.iter().map(|(_, g)| g.masks.iter().map(|m| m.count_ones() as usize).sum::<usize>()).sum();
        inline + self.spill.iter().map(|(_, s)| s.mask.count_ones() as usize).sum::<usize>()
    }

    fn bytes(&self) -> usize {
        self.granules.slot_count() * std::mem::size_of::<(u64, Granule<T>)>()
            + self.spill.slot_count() * std::mem::size_of::<(u64, Spill<T>)>()
    }
}

impl<T: Copy> Spill<T> {
    /// The blocks of `mask` belong to `stream`.
    fn put(&mut self, mut mask: u32, stream: T) {
        self.mask |= mask;
        while mask != 0 {
            self.owners[mask.trailing_zeros() as usize] = stream;
            mask &= mask - 1;
        }
    }
}

impl<T: Copy + Eq + Default> StreamDetector<T> {
    /// A detector remembering about the last `memory` block claims (at least 2).
    #[must_use]
    pub fn new(memory: usize) -> Self {
        // Grown on demand: a detector that is never consulted costs nothing.
        Self { cur: Generation::new(), old: Generation::new(), cur_blocks: 0, half: (memory / 2).max(1), last_id: 0 }
    }

    /// The stream holding `block`, if it is remembered. The old generation is probed only when the
    /// current one does not know the block: this runs on every request of a detecting prefetcher.
    #[inline]
    #[must_use]
    pub fn owner(&self, block: u64) -> Option<T> {
        let g = block >> GRANULE_BITS;
        self.cur.owner(g, bit(block)).or_else(|| self.old.owner(g, bit(block)))
    }

    /// The stream a request starting at `first` continues: the holder of `first - 1`.
    #[inline]
    #[must_use]
    pub fn continues(&self, first: u64) -> Option<T> {
        first.checked_sub(1).and_then(|p| self.owner(p))
    }

    /// `continues(first)`, else `owner(first)`, with one probe per generation when `first - 1` and
    /// `first` share a granule (the common case): a random request, which continues nothing, costs two
    /// probes instead of four.
    #[inline]
    #[must_use]
    pub fn continues_or_owner(&self, first: u64) -> Option<T> {
        if first & ((1 << GRANULE_BITS) - 1) == 0 {
            return self.continues(first).or_else(|| self.owner(first));
        }
        let g = first >> GRANULE_BITS;
        let (prev, this) = (bit(first - 1), bit(first));
        let cur = self.cur.granules.get(g);
        if let Some(owner) = self.cur.owner_in(cur, g, prev) {
            return Some(owner);
        }
        let old = self.old.granules.get(g);
        self.old
            .owner_in(old, g, prev)
            .or_else(|| self.cur.owner_in(cur, g, this))
            .or_else(|| self.old.owner_in(old, g, this))
    }

    /// A fresh stream id (never 0).
    pub fn new_stream(&mut self) -> u32 {
        self.last_id = self.last_id.wrapping_add(1).max(1);
        self.last_id
    }

    /// `stream` now holds blocks `first .. first + len` (the latest claim of a block wins).
    pub fn claim(&mut self, first: u64, len: u64, stream: T) {
        let end = first.saturating_add(len);
        let mut b = first;
        while b < end {
            if self.cur_blocks >= self.half {
                std::mem::swap(&mut self.cur, &mut self.old);
                self.cur.clear();
                self.cur_blocks = 0;
            }
            let g = b >> GRANULE_BITS;
            // The blocks of this claim inside granule g, bounded by what the generation may still take.
            let lo = (b & 31) as u32;
            let room = (self.half - self.cur_blocks) as u64;
            // The granule's end saturates: the last granule ends at u64::MAX, which no claim reaches
            // (`end` is exclusive), where `(g + 1) << GRANULE_BITS` wrapped to 0 and sent `b` back.
            let base = g << GRANULE_BITS;
            let hi = (base.saturating_add(1 << GRANULE_BITS).min(end).min(b.saturating_add(room)) - base) as u32;
            let bits = if hi - lo == 32 { u32::MAX } else { ((1u32 << (hi - lo)) - 1) << lo };
            self.cur.claim(g, bits, stream);
            // A block claimed now is no longer the old generation's.
            self.old.release(g, bits);
            self.cur_blocks += (hi - lo) as usize;
            b = base + u64::from(hi);
        }
    }

    /// Blocks currently remembered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }

    /// Nothing remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate memory held, in bytes.
    #[must_use]
    pub fn metadata_bytes(&self) -> u64 {
        (self.cur.bytes() + self.old.bytes()) as u64
    }
}

impl StreamDetector<u32> {
    /// The stream a request starting at `first` belongs to: the holder of `first - 1`, else a new one.
    pub fn assign(&mut self, first: u64) -> u32 {
        match self.continues(first) {
            Some(s) => s,
            None => self.new_stream(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_continues_the_stream_holding_the_previous_block() {
        let mut d = StreamDetector::new(100);
        let a = d.assign(1001);
        d.claim(1001, 1, a);
        d.claim(1002, 2, a); // prefetched 1002, 1003
        let b = d.assign(64);
        assert_ne!(a, b);
        d.claim(64, 1, b);
        assert_eq!(d.assign(1002), a, "1001 was requested by a");
        assert_eq!(d.assign(1004), a, "1003 was prefetched by a");
        assert_eq!(d.assign(65), b);
        assert_ne!(d.assign(500), a);
        assert_eq!(d.continues(0), None);
    }

    #[test]
    fn the_detector_forgets_the_oldest_claims_beyond_its_memory() {
        let mut d = StreamDetector::new(8); // generations of 4 blocks
        d.claim(10, 4, 1); // 10..13: the current generation is full
        d.claim(40, 2, 2); // 10..13 become the old generation
        assert_eq!((d.owner(10), d.owner(13), d.owner(41)), (Some(1), Some(1), Some(2)));
        d.claim(12, 1, 3); // the latest claim wins
        assert_eq!((d.owner(12), d.owner(13)), (Some(3), Some(1)));
        d.claim(70, 2, 4); // 40, 41, 12, 70 fill the current generation; 71 starts a new one
        assert_eq!(
            (d.owner(10), d.owner(13), d.owner(12), d.owner(40), d.owner(71)),
            (None, None, Some(3), Some(2), Some(4))
        );
        for b in 0..1000 {
            d.claim(b, 1, 9);
            assert!(d.len() <= 8);
        }
        assert_eq!(d.owner(999), Some(9));
        assert_eq!(d.owner(996), Some(9), "at least memory/2 claims are remembered");
    }

    #[test]
    fn long_claims_span_granules_and_a_rival_claim_takes_only_the_blocks_it_claims() {
        let mut d = StreamDetector::new(1 << 16);
        d.claim(30, 70, 1); // 30..99 across four granules
        assert_eq!(
            (d.owner(29), d.owner(30), d.owner(64), d.owner(99), d.owner(100)),
            (None, Some(1), Some(1), Some(1), None)
        );
        d.claim(70, 1, 2); // granule 64..95 now has two streams
        assert_eq!((d.owner(70), d.owner(71), d.owner(96), d.owner(63)), (Some(2), Some(1), Some(1), Some(1)));
        assert_eq!(d.continues(100), Some(1));
        assert_eq!(d.continues(71), Some(2));
        assert_eq!(d.len(), 70);
    }

    #[test]
    fn more_streams_in_a_granule_than_it_holds_spill_exactly() {
        let mut d = StreamDetector::new(1 << 16);
        // Five streams take turns on the blocks of granule 0..31, one block at a time.
        for b in 0..32u64 {
            d.claim(b, 1, (b % 5) as u32 + 1);
        }
        for b in 0..32u64 {
            assert_eq!(d.owner(b), Some((b % 5) as u32 + 1), "block {b}");
            assert_eq!(d.continues_or_owner(b + 1), Some((b % 5) as u32 + 1), "after block {b}");
        }
        assert_eq!(d.len(), 32);
        // Stream 9 claims the whole granule: the spill empties.
        d.claim(0, 32, 9);
        assert!((0..32).all(|b| d.owner(b) == Some(9)));
        assert_eq!(d.len(), 32);
        assert!(d.cur.spill.is_empty());
    }

    #[test]
    fn tags_other_than_stream_ids_are_kept_with_the_blocks() {
        let mut d: StreamDetector<u64> = StreamDetector::new(1 << 10);
        d.claim(40, 3, (9 << 32) | 5);
        assert_eq!(d.continues_or_owner(43), Some((9 << 32) | 5));
        assert_eq!(d.continues_or_owner(41), Some((9 << 32) | 5));
        assert_eq!(d.continues_or_owner(64), None);
    }
}
